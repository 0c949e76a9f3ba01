"""Readers for the nine sources of PatternRL's RL data mixture in their released layouts (issue 31).

PatternRL paper (000, section 5, "Training setup"): "Most samples are drawn from OpenMMReasoner-RL-74K,
excluding its virl39k subset, and are supplemented with data from WeMath, MMK12, ThinkLite-VL-Hard-11K,
PuzzleVQA, AlgoPuzzleVQA, TextbookQA, ChartQA, and InfographicVQA." Each reader turns one source's released
files, from a path the user gives (a file, or a folder read recursively; nothing is downloaded), into
manifest rows for :mod:`howeval.training.mixture`: ``uid`` (``<source>:<id>``), ``source``, ``question``,
``answer`` (a string; an option letter for multiple choice), ``answer_type`` (a verifier type of
:data:`howeval.benchmarks.loaders.ANSWER_TYPES`), ``options`` (a list or None), ``image`` (an absolute path,
a list of them, or an embedded image struct ``{"bytes", "path"}`` that :func:`materialize_images` writes out
for the rows a mixture keeps) and, where the source has one, ``subset``.

Files are JSON Lines, JSON (an array, ``{"data": [...]}``) or Parquet (a Hugging Face export, images as
``{"bytes", "path"}`` structs). Relative image paths resolve against ``image_root`` when given, else
against the folder of the file that names them.

What is known of each layout, and what is not:

- ``PuzzleVQA`` / ``AlgoPuzzleVQA`` (declare-lab/LLM-PuzzleTest @ 9b3a074c, README "Dataset"; the rows of
  ``../shared/data/vqa/puzzlevqa_subset.jsonl`` come from it): one JSON object per line,
  ``image``, ``question``, ``options`` (option texts), ``answer`` (the correct option's text), plus
  ``caption`` / ``explanation`` / ``solution``. The answer becomes its option letter; the file stem (the
  puzzle) is the ``subset``.
- ``ChartQA`` (vis-nlp/ChartQA, ``train/train_human.json`` and ``train_augmented.json``): a JSON array of
  ``imgname``, ``query``, ``label``; images in ``png/`` beside the JSON file (or ``image_root``).
- ``InfographicVQA`` (DocVQA task 3, ``infographicsVQA_train_v1.0.json``): ``{"data": [...]}`` of
  ``questionId``, ``question``, ``image_local_name``, ``answers`` (a list: the first is the answer, all of
  them are kept as ``answers``); images in ``image_root`` (the released ``infographicsvqa_images/``), else
  ``infographicsvqa_images/`` beside the JSON file, else the JSON file's folder.
- ``TextbookQA`` (TQA, ``tqa_v1_train.json``): a JSON array of lessons; each lesson's
  ``questions.diagramQuestions`` maps a question id to ``beingAsked.processedText``, ``answerChoices``
  (``{"a": {"processedText"}, ...}``), ``correctAnswer.processedText`` (a letter) and ``imagePath``
  (relative to the JSON file's folder). Only diagram questions are read (the non-diagram ones have no
  image, and the mixture is multimodal).
- ``OpenMMReasoner-RL-74K`` (issue 41; :func:`read_openmmreasoner`): the release is verl's RL Parquet layout,
  one Hugging Face config per subset: ``algopuzzle``, ``mmk12``, ``thinklite_vl_hard``, ``tqa_train``,
  ``virl39k``, ``wemath_pro``, ``wemath_standard`` (train, 72,971 rows) and ``validation`` (1,724 rows); the
  training script of its repository reads the same files as ``<subset>_train.parquet`` /
  ``wemath_standard.parquet`` with ``data.prompt_key=prompt`` (github.com/EvolvingLMMs-Lab/OpenMMReasoner @
  8d8babd2, ``examples/openmmreasoner/gspo_n16.sh``). Columns, as verl writes them
  (github.com/volcengine/verl, ``examples/data_preprocess/geo3k.py``): ``data_source``, ``prompt`` (chat
  messages ``[{"role", "content"}]``; the user turn is the question, ``<image>`` placeholders dropped),
  ``images`` (a list of ``{"bytes", "path"}``), ``ability``, ``reward_model`` (``{"style": "rule",
  "ground_truth"}``: the answer), ``extra_info`` (``index``...). The subset is the config named by the file's
  path (its folder or file stem), else ``data_source``; it gives each row its domain
  (:data:`OPENMMR_SUBSET_DOMAIN`: algopuzzle logic, tqa document, the others math), so OpenMMReasoner rows
  count in all three domains.
- ``MMK12`` (FanqingM/MMK12, ``data/*.parquet``): ``id``, ``subject``, ``question`` (options written inline
  as ``A. ...`` lines), ``answer`` (the letter for multiple choice), ``image`` (``{"bytes", "path"}``);
  ``subject`` is the subset.
- ``WeMath`` (We-Math/We-Math, its README's row: ``ID``, ``split``, ``knowledge concept``, ``question``,
  ``option`` as one string ``"A. 200.96;B. 3215.36;...; E. No correct answer"``, ``answer`` (a letter),
  ``image_path``, ``key``, ``question number``, ``knowledge concept description``): checked.
- ``ThinkLite-VL-Hard-11K`` (russwang/ThinkLite-VL-hard-11k): its card was not readable offline. Its users'
  public conversion scripts (to verl's layout) read ``pd.read_parquet(path, columns=['id', 'problem', 'answer',
  'image'])`` from ``ThinkLite-VL-Hard-11k.parquet`` and open ``row['image']`` as encoded bytes, so those four
  columns are the first alternatives of :data:`FIELDS`, and an image given as raw bytes is read as well as a
  ``{"bytes", "path"}`` struct or a path (a missing field is named with the fix). An answer wrapped as
  ``<answer>...</answer>`` or ``\\boxed{...}`` is unwrapped.

A row the reader cannot use raises :class:`SourceFieldError`, which names the source, the file, the row and
the field; converting such a set by hand into the project's manifest (``format: manifest``) is always possible.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["FIELDS", "OPENMMR_SUBSETS", "OPENMMR_SUBSET_DOMAIN", "READERS", "SourceFieldError", "materialize_images",
           "openmmr_subset", "read_openmmreasoner", "read_released"]

OPENMMR_SUBSETS = ("algopuzzle", "mmk12", "thinklite_vl_hard", "tqa", "virl39k", "wemath_pro", "wemath_standard")
"""OpenMMReasoner-RL-74K's train configs (``tqa_train`` is read as ``tqa``; ``validation`` is not a subset)."""

OPENMMR_SUBSET_DOMAIN: dict[str, str] = {
    "algopuzzle": "logic", "puzzlevqa": "logic", "tqa": "document", "mmk12": "math", "thinklite_vl_hard": "math",
    "wemath_pro": "math", "wemath_standard": "math", "virl39k": "math",
}
"""OpenMMReasoner subset -> PatternRL domain: AlgoPuzzleVQA/PuzzleVQA puzzles are "multimodal logic", TextbookQA
diagram questions "document understanding", MMK12 / ThinkLite / WeMath (and ViRL39K, left out by default)
"multimodal math". A subset not listed gets no domain: the mixture then asks for one (``subset_domains``)."""

FIELDS: dict[str, dict[str, tuple[str, ...]]] = {
    "WeMath": {"id": ("ID", "id", "question number", "index"), "question": ("question", "problem"),
               "answer": ("answer", "solution"), "image": ("image_path", "image", "images"),
               "options": ("option", "options", "choices")},
    "MMK12": {"id": ("id", "uid", "index"), "question": ("question", "problem"), "answer": ("answer", "solution"),
              "image": ("image", "images", "image_path"), "subset": ("subject",)},
    "ThinkLite-VL-Hard-11K": {"id": ("id", "uid", "problem_id", "index"), "question": ("problem", "question"),
                              "answer": ("answer", "solution", "ground_truth"),
                              "image": ("image", "images", "image_path")},
}
"""The documented alternatives per field of the four Hugging Face sources, first match wins (the released
column names could not be checked offline; see the module docstring)."""

_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
_LETTERED = re.compile(r"(?:^|;\s*|\n)\s*([A-Z])[.:)]\s*")
_DATA_EXT = (".parquet", ".jsonl", ".json")


class SourceFieldError(ValueError):
    """A released row without a field the reader needs: names the source, file, row, field and the fix."""

    def __init__(self, source: str, file: str, row: int, field: str, names: tuple[str, ...] | str, fix: str = ""):
        want = names if isinstance(names, str) else f"none of {list(names)}"
        fix = fix or ("rename that column, or convert the set to the project's manifest and give it with "
                      "format: manifest (datasets/README.md)")
        super().__init__(f"{source}: {file} row {row}: {field}: {want} present; {fix}")
        self.source, self.file, self.row, self.field = source, file, row, field


def _files(path: str) -> list[Path]:
    """The data files of ``path``: the file itself, or every JSON / JSONL / Parquet file under the folder (sorted)."""
    p = Path(path)
    if p.is_file():
        return [p]
    if not p.is_dir():
        raise FileNotFoundError(f"{path!r} does not exist (give the released file or its folder)")
    found = sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(_DATA_EXT) and "composition" not in f.name)
    if not found:
        raise FileNotFoundError(f"{path!r} holds no .parquet / .jsonl / .json file")
    return found


def _records(file: Path) -> Iterator[tuple[int, Any]]:
    """``(row number, record)`` of one file: Parquet rows, JSON Lines, or a JSON array / ``{"data": [...]}``
    (a JSON object of objects yields its values with their key as ``id``)."""
    if file.suffix == ".parquet":
        import pyarrow.parquet as pq

        yield from enumerate(pq.read_table(file).to_pylist(), 1)
        return
    text = file.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:  # JSON Lines, whatever the suffix (PuzzleVQA's .json files are)
        if not text.lstrip().startswith("{"):
            raise ValueError(f"{file}: neither JSON nor JSON Lines: {e}") from e
        data = [json.loads(line) for line in text.splitlines() if line.strip()]
        yield from enumerate(data, 1)
        return
    if isinstance(data, dict) and not isinstance(data.get("data"), list) and not all(
            isinstance(v, dict) for v in data.values()):
        data = [data]  # a JSON Lines file of one line
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        data = data["data"]
    elif isinstance(data, dict) and all(isinstance(v, dict) for v in data.values()):
        data = [{"id": k, **v} for k, v in data.items()]
    if not isinstance(data, list):
        raise ValueError(f"{file}: expected a JSON array of records (or {{'data': [...]}}), got {type(data).__name__}")
    yield from enumerate(data, 1)


def _first(row: dict, names: tuple[str, ...]) -> Any:
    return next((row[n] for n in names if row.get(n) not in (None, "", [])), None)


def _need(row: dict, names: tuple[str, ...], source: str, file: Path, n: int, field: str) -> Any:
    v = _first(row, names)
    if v is None:
        raise SourceFieldError(source, str(file), n, field, names)
    return v


def _resolve(v: Any, base: Path) -> Any:
    """An image value with relative paths made absolute against ``base``; a struct with bytes kept as is; raw
    encoded bytes (a Parquet ``binary`` column, as ThinkLite-VL-Hard-11K's users read it) become that struct."""
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"bytes": bytes(v), "path": None} if len(v) else None
    if isinstance(v, str):
        return v if "://" in v or os.path.isabs(v) else str(base / v)
    if isinstance(v, dict):
        if v.get("bytes") is not None:
            return {"bytes": v["bytes"], "path": v.get("path")}
        return _resolve(v["path"], base) if v.get("path") else None
    if isinstance(v, (list, tuple)):
        out = [_resolve(x, base) for x in v]
        return out[0] if len(out) == 1 else out
    return None


def _unwrap(answer: Any) -> str:
    """The answer as a string: ``<answer>x</answer>`` / ``\\boxed{x}`` unwrapped, a one-element list opened."""
    if isinstance(answer, (list, tuple)) and len(answer) == 1:
        answer = answer[0]
    a = str(answer).strip()
    m = re.search(r"<answer>(.*?)</answer>", a, re.S)
    if m:
        a = m.group(1).strip()
    m = re.fullmatch(r"\\boxed\{(.*)\}", a, re.S)
    return m.group(1).strip() if m else a


def _answer_type(answer: str, options: list | None) -> str:
    """``multiple_choice`` with options, a number type for a bare number, a lone capital letter ``free_form_or_mc``
    (an option letter whose options sit in the question text), else ``free_form`` (numbers, math-verify, text)."""
    if options:
        return "multiple_choice"
    if _NUMBER.match(answer):
        return "decimal_number" if "." in answer else "integer_number"
    return "free_form_or_mc" if re.fullmatch(r"[A-H]", answer) else "free_form"


def _letter_of(answer: str, options: list[str], source: str, file: Path, n: int) -> str:
    """The option letter of ``answer``: a letter as given, else the letter of the option equal to it."""
    if re.fullmatch(r"[A-Z]", answer.strip()) and ord(answer.strip()) - 65 < len(options):
        return answer.strip()
    norm = [str(o).strip().lower() for o in options]
    if answer.strip().lower() not in norm:
        raise SourceFieldError(source, str(file), n, "answer", f"{answer!r} is not one of the options {options}",
                               "give the answer as one of the option texts or as its letter")
    return chr(65 + norm.index(answer.strip().lower()))


def _options(v: Any) -> list[str] | None:
    """Options as a list: a list as given, or one string ``"A. x; B. y"`` / ``"A: x\\nB: y"`` split at its letters."""
    if v is None:
        return None
    if isinstance(v, (list, tuple)):
        return [str(x) for x in v]
    parts = _LETTERED.split(str(v))
    if len(parts) < 3:
        return None
    return [parts[i + 1].strip().rstrip(";").strip() for i in range(1, len(parts) - 1, 2)]


def _row(source: str, rid: Any, question: Any, answer: str, options: list | None, image: Any, **extra) -> dict:
    return {"uid": f"{source}:{rid}", "source": source, "question": str(question), "answer": answer,
            "answer_type": _answer_type(answer, options), "options": options, "image": image,
            **{k: v for k, v in extra.items() if v is not None}}


def _hub_reader(source: str) -> Callable[[str, str | None], list[dict]]:
    f = FIELDS[source]

    def read(path: str, image_root: str | None = None) -> list[dict]:
        out = []
        for file in _files(path):
            base = Path(image_root) if image_root else file.parent
            for n, r in _records(file):
                rid = _first(r, f["id"])
                rid = rid if rid is not None else f"{file.stem}:{n}"
                image = _resolve(_need(r, f["image"], source, file, n, "image"), base)
                if image is None:
                    raise SourceFieldError(source, str(file), n, "image", "an image struct with neither bytes nor path")
                options = _options(_first(r, f["options"])) if "options" in f else None
                answer = _unwrap(_need(r, f["answer"], source, file, n, "answer"))
                if options:
                    answer = _letter_of(answer, options, source, file, n)
                sub = _first(r, f["subset"]) if "subset" in f else None
                out.append(_row(source, rid, _need(r, f["question"], source, file, n, "question"), answer, options,
                                image, subset=None if sub is None else str(sub)))
        return out

    read.__doc__ = f"{source} rows (module docstring; fields: FIELDS[{source!r}])."
    return read


def _puzzle_reader(source: str) -> Callable[[str, str | None], list[dict]]:
    def read(path: str, image_root: str | None = None) -> list[dict]:
        out = []
        for file in _files(path):
            base = Path(image_root) if image_root else file.parent
            for n, r in _records(file):
                names = {k: (k,) for k in ("image", "question", "options", "answer")}
                options = [str(o) for o in _need(r, names["options"], source, file, n, "options")]
                answer = _letter_of(str(_need(r, names["answer"], source, file, n, "answer")), options, source, file, n)
                out.append(_row(source, f"{file.stem}:{n}", _need(r, names["question"], source, file, n, "question"),
                                answer, options, _resolve(_need(r, names["image"], source, file, n, "image"), base),
                                subset=file.stem))
        return out

    read.__doc__ = f"{source} rows: JSON Lines of image, question, options, answer (an option text); subset = file stem."
    return read


def read_chartqa(path: str, image_root: str | None = None) -> list[dict]:
    """ChartQA rows: ``imgname`` / ``query`` / ``label``; images in ``image_root`` or ``png/`` beside the file.
    The file stem (``train_human`` / ``train_augmented``) is the ``subset`` and part of the uid."""
    out = []
    for file in _files(path):
        base = Path(image_root) if image_root else file.parent / "png"
        for n, r in _records(file):
            img = _need(r, ("imgname", "image"), "ChartQA", file, n, "imgname")
            label = _unwrap(_need(r, ("label", "answer"), "ChartQA", file, n, "label"))
            out.append(_row("ChartQA", f"{file.stem}:{n}", _need(r, ("query", "question"), "ChartQA", file, n, "query"),
                            label, None, _resolve(img, base), subset=file.stem))
    return out


def read_infographicvqa(path: str, image_root: str | None = None) -> list[dict]:
    """InfographicVQA rows: ``questionId`` / ``question`` / ``image_local_name`` / ``answers`` (first = answer,
    all kept as ``answers``). Images in ``image_root``, else ``infographicsvqa_images/`` beside the file if it
    exists, else the file's folder."""
    out = []
    for file in _files(path):
        base = Path(image_root) if image_root else (file.parent / "infographicsvqa_images"
                                                     if (file.parent / "infographicsvqa_images").is_dir() else file.parent)
        for n, r in _records(file):
            answers = _need(r, ("answers", "answer"), "InfographicVQA", file, n, "answers")
            answers = [str(a) for a in answers] if isinstance(answers, list) else [str(answers)]
            img = _need(r, ("image_local_name", "image"), "InfographicVQA", file, n, "image_local_name")
            rid = _first(r, ("questionId", "question_id", "id"))
            out.append(_row("InfographicVQA", rid if rid is not None else f"{file.stem}:{n}",
                            _need(r, ("question",), "InfographicVQA", file, n, "question"), answers[0].strip(), None,
                            _resolve(img, base), answers=answers))
    return out


def read_textbookqa(path: str, image_root: str | None = None) -> list[dict]:
    """TextbookQA diagram questions: per lesson, ``questions.diagramQuestions[qid]`` with ``beingAsked``,
    ``answerChoices`` (ordered by key a, b, ...), ``correctAnswer`` (a letter) and ``imagePath``; the lesson's
    ``lessonName`` is the ``subset``. A file with no diagram question raises (it is not TQA's layout)."""
    out = []
    for file in _files(path):
        base, before = (Path(image_root) if image_root else file.parent), len(out)
        for n, lesson in _records(file):
            qs = ((lesson.get("questions") or {}).get("diagramQuestions") or {}) if isinstance(lesson, dict) else {}
            for qid, q in sorted(qs.items()):
                asked = _need(q, ("beingAsked",), "TextbookQA", file, n, f"diagramQuestions.{qid}.beingAsked")
                choices = _need(q, ("answerChoices",), "TextbookQA", file, n, f"diagramQuestions.{qid}.answerChoices")
                keys = sorted(choices)
                options = [str(choices[k].get("processedText") or choices[k].get("rawText") or "") for k in keys]
                correct = _need(q, ("correctAnswer",), "TextbookQA", file, n, f"diagramQuestions.{qid}.correctAnswer")
                letter = str(correct.get("processedText") or "").strip().lower()
                if letter not in keys:
                    raise SourceFieldError("TextbookQA", str(file), n, f"diagramQuestions.{qid}.correctAnswer",
                                           f"{letter!r} is not one of the choice keys {keys}", "fix the row or drop it")
                img = _need(q, ("imagePath", "imageName"), "TextbookQA", file, n, f"diagramQuestions.{qid}.imagePath")
                text = asked.get("processedText") or asked.get("rawText") if isinstance(asked, dict) else asked
                out.append(_row("TextbookQA", qid, text, chr(65 + keys.index(letter)), options, _resolve(img, base),
                                subset=lesson.get("lessonName")))
        if len(out) == before:
            raise SourceFieldError("TextbookQA", str(file), 0, "questions.diagramQuestions", "no lesson with diagram questions",
                                   "give TQA's tqa_v1_train.json (a list of lessons)")
    return out


def openmmr_subset(file: Path, data_source: Any = None) -> str | None:
    """The OpenMMReasoner subset of a row: the config its file's path names (a folder ``algopuzzle/`` or a stem
    ``tqa_train`` / ``wemath_standard``), else its ``data_source`` (lower case, a ``_train`` suffix dropped).

    >>> openmmr_subset(Path("rl74k/tqa_train/train-00000-of-00001.parquet")), openmmr_subset(Path("x/mmk12_train.parquet"))
    ('tqa', 'mmk12')
    >>> openmmr_subset(Path("data/train-0.parquet"), "ThinkLite_VL_Hard"), openmmr_subset(Path("d/x.parquet"))
    ('thinklite_vl_hard', None)
    """
    def norm(x: str) -> str:
        x = re.sub(r"[^a-z0-9]+", "_", x.lower()).strip("_")
        return re.sub(r"_train$", "", x)

    for part in [file.stem, *reversed(file.parent.parts)]:
        p = norm(part)
        for sub in OPENMMR_SUBSETS:
            if p == sub or p.startswith(sub + "_") or p.startswith(sub + "-"):
                return sub
    return norm(str(data_source)) if data_source not in (None, "") else None


def _chat_question(prompt: Any) -> str | None:
    """The user turn's text of a verl chat ``prompt`` (a list of ``{"role", "content"}``; content a string or a
    list of ``{"type", "text"}`` parts), ``<image>`` placeholders dropped; None when there is no user text."""
    if isinstance(prompt, str):
        return prompt.replace("<image>", "").strip() or None
    parts = []
    for m in prompt if isinstance(prompt, (list, tuple)) else []:
        if not isinstance(m, dict) or m.get("role") != "user":
            continue
        c = m.get("content")
        if isinstance(c, str):
            parts.append(c)
        elif isinstance(c, (list, tuple)):
            parts.extend(str(x.get("text")) for x in c if isinstance(x, dict) and x.get("text"))
    text = "\n".join(parts).replace("<image>", "").strip()
    return text or None


def read_openmmreasoner(path: str, image_root: str | None = None) -> list[dict]:
    """OpenMMReasoner-RL-74K rows from its released verl Parquet files (module docstring): ``question`` from the
    ``prompt``'s user turn, ``answer`` from ``reward_model.ground_truth``, ``image`` from ``images``, ``subset``
    from the file's config (:func:`openmmr_subset`), ``domain`` from the subset (:data:`OPENMMR_SUBSET_DOMAIN`;
    absent for an unknown subset), ``data_source`` and ``ability`` kept. A file of the ``validation`` config is
    skipped (it is not training data). uid: ``OpenMMReasoner-RL-74K:<subset>:<extra_info.index or row>``.

    Raises:
        SourceFieldError: a row without ``prompt`` user text, ``reward_model.ground_truth`` or an image (names
            the file, row and field).
    """
    src = "OpenMMReasoner-RL-74K"
    out = []
    for file in _files(path):
        if any(x == "validation" or x == "val" or x.startswith(("validation-", "validation_", "val-", "val_"))
               for x in (file.stem.lower(), file.parent.name.lower())):
            continue  # the release's validation config: not training data
        base = Path(image_root) if image_root else file.parent
        for n, r in _records(file):
            q = _chat_question(r.get("prompt"))
            if q is None:
                raise SourceFieldError(src, str(file), n, "prompt", "no user turn with text in 'prompt'",
                                       "give the release's verl Parquet files (prompt = chat messages)")
            rm = r.get("reward_model")
            gt = rm.get("ground_truth") if isinstance(rm, dict) else None
            if gt in (None, ""):
                raise SourceFieldError(src, str(file), n, "reward_model.ground_truth", "no ground_truth in 'reward_model'",
                                       "give the release's verl Parquet files (reward_model = {style, ground_truth})")
            image = _resolve(_need(r, ("images", "image"), src, file, n, "images"), base)
            if image is None:
                raise SourceFieldError(src, str(file), n, "images", "an image struct with neither bytes nor path")
            sub = openmmr_subset(file, r.get("data_source"))
            info = r.get("extra_info") if isinstance(r.get("extra_info"), dict) else {}
            idx = info.get("index")
            rid = f"{sub or file.stem}:{idx if idx is not None else n}"
            out.append(_row(src, rid, q, _unwrap(gt), None, image, subset=sub,
                            domain=OPENMMR_SUBSET_DOMAIN.get(sub or ""),
                            data_source=None if r.get("data_source") is None else str(r["data_source"]),
                            ability=None if r.get("ability") is None else str(r["ability"])))
    return out


READERS: dict[str, Callable[[str, str | None], list[dict]]] = {
    "OpenMMReasoner-RL-74K": read_openmmreasoner, "WeMath": _hub_reader("WeMath"),
    "MMK12": _hub_reader("MMK12"), "ThinkLite-VL-Hard-11K": _hub_reader("ThinkLite-VL-Hard-11K"),
    "PuzzleVQA": _puzzle_reader("PuzzleVQA"), "AlgoPuzzleVQA": _puzzle_reader("AlgoPuzzleVQA"),
    "TextbookQA": read_textbookqa, "ChartQA": read_chartqa, "InfographicVQA": read_infographicvqa,
}
"""Source name (:data:`howeval.training.mixture.PAPER_SOURCES`) -> reader ``(path, image_root) -> rows``."""


def read_released(source: str, path: str, image_root: str | None = None) -> list[dict]:
    """The rows of one source's released files (module docstring for each layout).

    Args:
        source: one of :data:`READERS` (the paper's nine names, spelled as in ``PAPER_SOURCES``).
        path: a released file or a folder of them (read recursively, sorted).
        image_root: the folder relative image paths resolve against; None = each file's own folder
            (``png/`` beside it for ChartQA, ``infographicsvqa_images/`` for InfographicVQA).

    Returns:
        Manifest rows (module docstring), in file order; uids are unique within a file.

    Raises:
        KeyError: ``source`` has no reader (names the known ones).
        FileNotFoundError: ``path`` does not exist or holds no data file.
        SourceFieldError: a row lacks a field (names source, file, row, field and the fix).
    """
    if source not in READERS:
        raise KeyError(f"no released-format reader for {source!r}; known: {sorted(READERS)} "
                       "(give other sets as a manifest: format: manifest)")
    return READERS[source](path, image_root)


def materialize_images(rows: list[dict], image_dir: str | None, source: str) -> None:
    """Write each embedded image struct of ``rows`` (in place) to ``image_dir/<uid>.<ext>`` and put its path in
    ``image``: only the rows a mixture keeps pay the write.

    Raises:
        ValueError: a row has an embedded image and ``image_dir`` is None (names the source and the fix).
    """
    for r in rows:
        imgs = r.get("image")
        many = isinstance(imgs, list)
        out = []
        for i, v in enumerate(imgs if many else [imgs]):
            if not isinstance(v, dict):
                out.append(v)
                continue
            if image_dir is None:
                raise ValueError(f"sources.{source}: row {r['uid']} embeds its image (bytes); give image_dir, "
                                 "a folder to write the kept rows' images to")
            ext = os.path.splitext(v.get("path") or "")[1] or ".png"
            name = re.sub(r"[^A-Za-z0-9._-]", "_", r["uid"]) + (f"-{i}" if many else "") + ext
            Path(image_dir).mkdir(parents=True, exist_ok=True)
            (Path(image_dir) / name).write_bytes(v["bytes"])
            out.append(str(Path(image_dir).resolve() / name))
        r["image"] = out if many else out[0]
