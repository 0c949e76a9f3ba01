"""Released benchmark formats -> manifest rows (issue 31): CRYSTAL's items and AdaptMMBench's items, read from
a path the user gives (neither set ships with the project: both are hub-only, gated or not yet public).

- ``crystal``: CRYSTAL (arXiv 2603.13099; docs/metrics.md §3): 6,372 items from MathVista, MMMU and RealWorldQA
  (and the other sources its project page shows), each with reference steps. The release's fields, as its
  inference script and project page use them: ``question``, ``image`` (a path, or the Hugging Face image struct
  ``{"bytes", "path"}`` of a Parquet export), ``choices`` or ``options`` (unlabelled option texts, lettered
  A, B, ... in order), ``answer``, ``reference_steps``; the source in ``source_dataset`` / ``source`` /
  ``dataset``; the id in ``id`` / ``sample_id`` / ``uid`` / ``index`` / ``crystal_sample``.
- ``adaptmmbench``: AdaptMMBench (docs/metrics.md §4): 1,420 items (I, Q, A, E, K) over the domains real world,
  OCR, GUI, knowledge and math. The paper's names ``I, Q, A, E, K`` or ``image, question, answer``,
  ``evidence_boxes`` / ``bbox`` / ``bboxes``, ``key_steps`` / ``keysteps``, ``domain`` / ``category``. The
  released dataset card lists no schema yet, so these names are the paper's and the common ones: a field
  that is missing is named in the error.

Task-accuracy benchmarks (Table 6 of the PatternEval/PatternRL paper, :mod:`howeval.benchmarks.taskacc`; the
paper does not name them, so these are the released formats of the common ones, for whichever the user lists):

- ``chartqa``: ChartQA (Masry et al. 2022; github.com/vis-nlp/ChartQA): ``<split>_human.json`` /
  ``<split>_augmented.json``, a JSON array of ``{"imgname", "query", "label"}`` with the images in ``<split>/png/``
  (the default image folder; else give ``image_root``); the Hugging Face export's ``image`` struct and a list ``label`` are read too. No ids in
  the release: a row's id is ``chartqa:<file stem>:<row number>``.
- ``docvqa``: DocVQA (Mathew et al. 2021; the RRC release ``val_v1.0.json``): ``{"data": [{"questionId",
  "question", "image": "documents/<name>.png", "answers": [...]}]}``; ``infographicvqa``: InfographicVQA (the RRC
  release ``infographicsVQA_val_v1.0_withQT.json``): the same with ``image_local_name``. Every gold answer is kept
  (``answers``: ANLS takes the best); ``answer`` is the first.
- ``mathvista``: MathVista (Lu et al. 2024; ``testmini.json``): ``{pid: {"question", "image", "choices",
  "answer", "question_type", "answer_type", "precision"}}``; ``multi_choice`` items are multiple choice over
  ``choices`` (the gold is the choice text), ``integer`` / ``float`` answers numbers, other answers free form.

A file is JSON Lines, a JSON array (or an object ``{"data": [...]}`` / ``{id: row}``), or Parquet. The
converted rows go through the manifest loader's own checks (:mod:`howeval.benchmarks.loaders`).
"""
from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

import fsspec

from howeval.store import iter_rows

RELEASED_FORMATS = ("manifest", "crystal", "adaptmmbench", "chartqa", "docvqa", "infographicvqa", "mathvista")
"""Values of a benchmark's ``format``: the project's manifest, or a released format converted here."""

RELEASED_IMAGE_FOLDER = {"chartqa": "png"}
"""Where a release keeps its images relative to the question file when no ``image_root`` is given (ChartQA:
``<split>/png/`` beside ``<split>/<split>_human.json``, as ``howeval.training.sources.read_chartqa`` reads it)."""

CRYSTAL_SOURCE_CATEGORY = {
    "mathvista": "stem", "mathvision": "stem", "mmmu": "stem", "scienceqa": "knowledge",
    "realworldqa": "ood_perception", "mmvp": "content_recognition", "plotqa": "chart_understanding",
    "chartqa": "chart_understanding",
}
"""CRYSTAL source set (lower case, no punctuation) -> PatternEval category, for rows without a ``category``
(which gives the family VG / OS / KR); an unknown source is ``general_reasoning`` (KR)."""

ADAPT_DOMAIN_CATEGORY = {"real_world": "ood_perception", "realworld": "ood_perception", "ocr": "ocr",
                         "gui": "grounding", "knowledge": "knowledge", "math": "stem"}
"""AdaptMMBench domain -> PatternEval category (family) for rows without a ``category``."""

_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


def read_rows(path: str) -> list[tuple[int, dict]]:
    """``(row number, row)`` of a JSON array / object file (:func:`howeval.store.iter_rows` with ``json_array``).

    Raises:
        ValueError: a ``.json`` file that is neither an array of objects nor an object of objects.
    """
    return list(iter_rows(path, json_array=True))


def _first(row: dict, *names: str):
    return next((row[n] for n in names if row.get(n) not in (None, "", [])), None)


def _key(s: str) -> str:
    return re.sub(r"[^a-z0-9_]", "", str(s).lower().replace(" ", "_").replace("-", "_"))


def _image(value, uid: str, image_dir: str | None) -> tuple[str | None, tuple[str, str] | None]:
    """``(image path, error)``: a path as given, or the bytes of an image struct written to ``image_dir``."""
    if isinstance(value, dict):
        data, name = value.get("bytes"), value.get("path")
        if data is None:
            return (name, None) if name else (None, ("image", "image struct with neither bytes nor path"))
        if image_dir is None:
            return None, ("image", "the image is embedded (bytes); give image_dir, a folder to write it to")
        ext = posixpath.splitext(name or "")[1] or ".png"
        out = posixpath.join(image_dir, re.sub(r"[^A-Za-z0-9._-]", "_", uid) + ext)
        fs, p = fsspec.core.url_to_fs(out)
        fs.makedirs(posixpath.dirname(p), exist_ok=True)
        with fs.open(p, "wb") as f:
            f.write(data)
        return out, None
    return (value, None) if isinstance(value, (str, list)) else (None, ("image", f"unsupported value {type(value).__name__}; give a path"))


def _answer_type(answer, options) -> str:
    a = str(answer).strip()
    if options:
        return "multiple_choice"
    if _NUMBER.match(a):
        return "integer_number" if "." not in a else "decimal_number"
    return "free_form"


def crystal_row(row: dict, n: int, stem: str, image_dir: str | None = None) -> tuple[dict, tuple[str, str] | None]:
    """One CRYSTAL item (module docstring) as a manifest row, and why it is unusable, ``(field, reason)`` (None when usable).

    The answer of a lettered option list is kept as released (a letter or the option text); ``answer_type`` is
    ``multiple_choice`` when options are given, a number type for a bare number, else ``free_form``.

    >>> r, why = crystal_row({"question": "Q?", "image": "a.png", "answer": "3", "reference_steps": ["s"],
    ...                       "source_dataset": "RealWorldQA", "crystal_sample": "Sample 714"}, 1, "crystal")
    >>> r["uid"], r["category"], r["answer_type"], why
    ('crystal:Sample 714', 'ood_perception', 'integer_number', None)
    """
    rid = _first(row, "uid", "sample_id", "id", "index", "crystal_sample")
    uid = f"crystal:{rid if rid is not None else f'{stem}:{n}'}"
    source = str(_first(row, "source_dataset", "source", "dataset") or "CRYSTAL")
    options = _first(row, "choices", "options")
    image, err = _image(_first(row, "image", "image_path", "images"), uid, image_dir)
    steps = row.get("reference_steps")
    if err is None and not steps:
        err = ("reference_steps", "missing or empty (every CRYSTAL item has reference steps)")
    out = {"uid": uid, "source": source, "question": row.get("question"), "answer": row.get("answer"),
           "options": options, "image": image, "reference_steps": steps,
           "category": row.get("category") or CRYSTAL_SOURCE_CATEGORY.get(_key(source), "general_reasoning"),
           "answer_type": row.get("answer_type") or _answer_type(row.get("answer", ""), options)}
    return out, err


def adaptmmbench_row(row: dict, n: int, stem: str, image_dir: str | None = None) -> tuple[dict, tuple[str, str] | None]:
    """One AdaptMMBench item (module docstring) as a manifest row (with ``evidence_boxes``, ``key_steps``,
    ``domain``), and why it is unusable, ``(field, reason)`` (None when usable).

    >>> r, why = adaptmmbench_row({"I": "x.png", "Q": "Q?", "A": "B", "E": [[0, 0, 4, 4]], "K": ["k"],
    ...                            "domain": "GUI", "options": ["a", "b"]}, 7, "adapt")
    >>> r["uid"], r["domain"], r["category"], r["answer_type"], r["evidence_boxes"], why
    ('adaptmmbench:adapt:7', 'gui', 'grounding', 'multiple_choice', [[0, 0, 4, 4]], None)
    """
    rid = _first(row, "uid", "sample_id", "id", "index", "qid")
    uid = f"adaptmmbench:{rid if rid is not None else f'{stem}:{n}'}"
    domain = _key(_first(row, "domain", "category") or "")
    image, err = _image(_first(row, "I", "image", "image_path"), uid, image_dir)
    options = _first(row, "options", "choices")
    answer = _first(row, "A", "answer")
    boxes = _first(row, "E", "evidence_boxes", "bbox", "bboxes")
    if boxes and isinstance(boxes, (list, tuple)) and len(boxes) == 4 and all(isinstance(x, (int, float)) for x in boxes):
        boxes = [boxes]  # one box given flat
    if err is None and not domain:
        err = ("domain", "missing (one of real_world, ocr, gui, knowledge, math; accuracy is per domain)")
    out = {"uid": uid, "source": "AdaptMMBench", "question": _first(row, "Q", "question"), "answer": answer,
           "options": options, "image": image, "evidence_boxes": boxes,
           "key_steps": _first(row, "K", "key_steps", "keysteps"), "domain": domain,
           "category": ADAPT_DOMAIN_CATEGORY.get(domain, "general_reasoning"),
           "answer_type": row.get("answer_type") or _answer_type(answer or "", options)}
    return out, err


def _golds(value) -> list[str]:
    vals = value if isinstance(value, (list, tuple)) else [value]
    return [str(v) for v in vals if v is not None and str(v).strip()]


def chartqa_row(row: dict, n: int, stem: str, image_dir: str | None = None) -> tuple[dict, tuple[str, str] | None]:
    """One ChartQA question (module docstring) as a manifest row, and why it is unusable (None when usable).

    >>> r, why = chartqa_row({"imgname": "41699051005347.png", "query": "How many bars?", "label": "3"}, 2, "test_human")
    >>> r["uid"], r["image"], r["answers"], r["answer_type"], r["category"], why
    ('chartqa:test_human:2', '41699051005347.png', ['3'], 'integer_number', 'chart_understanding', None)
    """
    uid = f"chartqa:{stem}:{n}"
    golds = _golds(row.get("label", row.get("answer")))
    image, err = _image(_first(row, "imgname", "image"), uid, image_dir)
    if err is None and not golds:
        err = ("label", "missing or empty (the ChartQA answer)")
    out = {"uid": uid, "source": "ChartQA", "question": _first(row, "query", "question"), "answer": golds[0] if golds else None,
           "answers": golds, "image": image, "category": "chart_understanding",
           "answer_type": _answer_type(golds[0], None) if golds else "other_text"}
    if out["answer_type"] == "free_form":
        out["answer_type"] = "other_text"  # a short text label: the verifier's normalized equality
    return out, err


def _docvqa_like(row: dict, n: int, stem: str, image_dir: str | None, fmt: str, source: str,
                 image_fields: tuple[str, ...]) -> tuple[dict, tuple[str, str] | None]:
    rid = _first(row, "questionId", "question_id", "uid", "id")
    uid = f"{fmt}:{rid if rid is not None else f'{stem}:{n}'}"
    golds = _golds(_first(row, "answers", "answer"))
    image, err = _image(_first(row, *image_fields), uid, image_dir)
    if err is None and not golds:
        err = ("answers", f"missing or empty (every {source} question lists its accepted answers)")
    return {"uid": uid, "source": source, "question": row.get("question"), "answer": golds[0] if golds else None,
            "answers": golds, "image": image, "category": "ocr", "answer_type": "extractive_text"}, err


def docvqa_row(row: dict, n: int, stem: str, image_dir: str | None = None) -> tuple[dict, tuple[str, str] | None]:
    """One DocVQA question (module docstring) as a manifest row (every gold answer in ``answers``).

    >>> r, why = docvqa_row({"questionId": 49153, "question": "What is the ratio?", "image": "documents/pybv0228_81.png",
    ...                      "answers": ["0.28", "0.28 ratio"]}, 1, "val_v1.0")
    >>> r["uid"], r["image"], r["answer"], r["answers"], why
    ('docvqa:49153', 'documents/pybv0228_81.png', '0.28', ['0.28', '0.28 ratio'], None)
    """
    return _docvqa_like(row, n, stem, image_dir, "docvqa", "DocVQA", ("image", "image_path"))


def infographicvqa_row(row: dict, n: int, stem: str, image_dir: str | None = None) -> tuple[dict, tuple[str, str] | None]:
    """One InfographicVQA question (module docstring) as a manifest row (every gold answer in ``answers``).

    >>> r, why = infographicvqa_row({"questionId": 98313, "question": "Which year?", "image_local_name": "37313.jpeg",
    ...                              "answers": ["2015"]}, 1, "infographicsVQA_val_v1.0_withQT")
    >>> r["uid"], r["image"], r["answers"], why
    ('infographicvqa:98313', '37313.jpeg', ['2015'], None)
    """
    return _docvqa_like(row, n, stem, image_dir, "infographicvqa", "InfographicVQA", ("image_local_name", "image"))


_MATHVISTA_TYPES = {"integer": "integer_number", "float": "decimal_number"}


def mathvista_row(row: dict, n: int, stem: str, image_dir: str | None = None) -> tuple[dict, tuple[str, str] | None]:
    """One MathVista item (module docstring) as a manifest row.

    >>> r, why = mathvista_row({"pid": "1", "question": "d?", "image": "images/1.jpg", "choices": None,
    ...                         "answer": "1.2", "question_type": "free_form", "answer_type": "float"}, 1, "testmini")
    >>> r["uid"], r["answer_type"], r["category"], why
    ('mathvista:1', 'decimal_number', 'stem', None)
    >>> mathvista_row({"pid": "2", "question": "Which?", "image": "images/2.jpg", "choices": ["3", "4"],
    ...                "answer": "4", "question_type": "multi_choice", "answer_type": "text"}, 2, "t")[0]["answer_type"]
    'multiple_choice'
    """
    rid = _first(row, "pid", "uid", "id")
    uid = f"mathvista:{rid if rid is not None else f'{stem}:{n}'}"
    image, err = _image(_first(row, "image", "decoded_image"), uid, image_dir)
    choices = row.get("choices") or None
    if row.get("question_type") == "multi_choice":
        atype = "multiple_choice"
        if err is None and not choices:
            err = ("choices", "missing for a multi_choice item")
    else:
        atype = _MATHVISTA_TYPES.get(row.get("answer_type"), "free_form")
    return {"uid": uid, "source": "MathVista", "question": row.get("question"), "answer": row.get("answer"),
            "options": choices if atype == "multiple_choice" else None, "image": image, "category": "stem",
            "answer_type": atype}, err


CONVERTERS: dict[str, Callable[..., tuple[dict, tuple[str, str] | None]]] = {
    "crystal": crystal_row, "adaptmmbench": adaptmmbench_row, "chartqa": chartqa_row, "docvqa": docvqa_row,
    "infographicvqa": infographicvqa_row, "mathvista": mathvista_row}
"""Released format -> row converter ``(row, row number, file stem, image_dir) -> (manifest row, (field, reason) or None)``."""
