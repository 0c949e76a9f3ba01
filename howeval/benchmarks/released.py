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

A file is JSON Lines, a JSON array (or an object ``{"data": [...]}`` / ``{id: row}``), or Parquet. The
converted rows go through the manifest loader's own checks (:mod:`howeval.benchmarks.loaders`).
"""
from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable

import fsspec

RELEASED_FORMATS = ("manifest", "crystal", "adaptmmbench")
"""Values of a benchmark's ``format``: the project's manifest, or a released format converted here."""

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
    """``(row number, row)`` of a JSON array / object file; other files go to the manifest reader.

    Raises:
        ValueError: a ``.json`` file that is neither an array of objects nor an object of objects.
    """
    with fsspec.open(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        data = data["data"]
    elif isinstance(data, dict) and all(isinstance(v, dict) for v in data.values()):
        data = [{"id": k, **v} for k, v in data.items()]
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON array of items (or {{'data': [...]}}), got {type(data).__name__}")
    return list(enumerate(data, 1))


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


CONVERTERS: dict[str, Callable[..., tuple[dict, tuple[str, str] | None]]] = {"crystal": crystal_row, "adaptmmbench": adaptmmbench_row}
"""Released format -> row converter ``(row, row number, file stem, image_dir) -> (manifest row, (field, reason) or None)``."""
