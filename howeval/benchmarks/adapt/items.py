"""AdaptMMBench items (I, Q, A, E, K) and their JSONL loader (SPEC section 4).

One JSON object per line. Fields (aliases in brackets):

- ``image`` [``I``]: image path, relative to the JSONL file unless absolute or a URL (any fsspec
  protocol, e.g. ``s3://``, ``memory://``).
- ``question`` [``Q``], ``answer`` [``A``]: required.
- ``evidence_boxes`` [``E``]: list of ``[x0, y0, x1, y1]`` pixel boxes of the image (default ``[]``).
- ``key_steps`` [``K``]: list of strings (default ``[]``).
- ``uid`` [``sample_id``, ``id``]: default ``"<file stem>:<line number>"``; must be unique.
- ``answer_type`` (default ``"free_form"``), ``options`` (list of strings; numbers become strings; default ``[]``),
  ``domain`` (falls back to ``category``; one of them is required: accuracy is reported per domain).

Anything else is kept in ``meta``. This reads both the paper's (I, Q, A, E, K) form and the project's
manifests (``datasets/demo/manifest.jsonl``, ``../shared/data/manifest.jsonl``). Errors name the file,
the line and the field.
"""
from __future__ import annotations

import io
import posixpath
from dataclasses import dataclass, field
from typing import Any

import fsspec
from PIL import Image

from howeval.benchmarks.adapt.tools import check_box
from howeval.store import iter_jsonl

ALIASES = {"I": "image", "Q": "question", "A": "answer", "E": "evidence_boxes", "K": "key_steps", "sample_id": "uid", "id": "uid"}
"""Alternative field names -> canonical ones."""

REQUIRED = ("image", "question", "answer")


@dataclass
class AdaptItem:
    """One benchmark item. ``image`` holds the encoded image bytes (or a PIL image when built in code)."""

    uid: str
    image: Any
    question: str
    answer: str | None
    answer_type: str = "free_form"
    options: list[str] = field(default_factory=list)
    evidence_boxes: list[list[int]] = field(default_factory=list)
    key_steps: list[str] = field(default_factory=list)
    domain: str = "unknown"
    image_path: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def load_adapt_items(
    path: str, *, check_boxes: bool = True, require_answer: bool = True, storage_options: dict | None = None
) -> list[AdaptItem]:
    """Read a JSONL of items through ``fsspec.open``; read each image's bytes.

    Args:
        path: local path or fsspec URL of the JSONL file.
        check_boxes: decode each image's header and check every evidence box lies inside it.
        require_answer: a null ``answer`` is an error (default); False keeps it as None (probe sets
            without references, e.g. two Bingo items of the shared manifest).
        storage_options: passed to ``fsspec.open`` (credentials etc.).

    Raises:
        ValueError: invalid JSON, a missing or ill-typed field, a bad box, a duplicate uid
            (message: ``"<path>:<line>: field '<name>': <what is wrong>"``).
        FileNotFoundError: the JSONL file or an image is missing (naming the line for an image).
    """
    opts = storage_options or {}
    base = posixpath.dirname(path)
    stem = posixpath.splitext(posixpath.basename(path))[0]
    items: list[AdaptItem] = []
    seen: dict[str, int] = {}
    for lineno, row in iter_jsonl(path, storage_options=opts):
        where = f"{path}:{lineno}"
        if not isinstance(row, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
        item = parse_item(row, where=where, default_uid=f"{stem}:{lineno}", require_answer=require_answer)
        if item.uid in seen:
            raise ValueError(f"{where}: field 'uid': duplicate {item.uid!r} (first on line {seen[item.uid]})")
        seen[item.uid] = lineno
        img_path = item.image
        if "://" not in img_path and not posixpath.isabs(img_path):
            img_path = posixpath.join(base, img_path) if base else img_path
        try:
            with fsspec.open(img_path, "rb", **opts) as fi:
                data = fi.read()
        except FileNotFoundError as e:
            raise FileNotFoundError(f"{where}: field 'image': file not found: {img_path}") from e
        item.image, item.image_path = data, img_path
        if check_boxes and item.evidence_boxes:
            try:
                size = Image.open(io.BytesIO(data)).size
            except OSError as e:
                raise ValueError(f"{where}: field 'image': not a readable image ({img_path}): {e}") from e
            for k, box in enumerate(item.evidence_boxes):
                try:
                    check_box(box, size)
                except (TypeError, ValueError) as e:
                    raise ValueError(f"{where}: field 'evidence_boxes'[{k}]: {e}") from e
        items.append(item)
    return items


def parse_item(
    row: dict[str, Any], *, where: str = "item", default_uid: str | None = None, require_answer: bool = True
) -> AdaptItem:
    """Validate one row (canonical names or aliases) into an :class:`AdaptItem`; ``image`` stays as given.

    Each field has its own checker below (``_image``, ``_uid``, ``_options``, ``_boxes``, ``_key_steps``,
    ``_domain``); what no checker takes is kept in ``meta``.

    Raises:
        ValueError: ``"<where>: field '<name>': <what is wrong>"`` (or a missing / null required field).

    >>> parse_item({"I": "a.png", "Q": "What?", "A": "B", "category": "ocr"}, default_uid="x").domain
    'ocr'
    """
    row = _canonical(row, where, require_answer)
    image = _image(row.pop("image"), where)
    question = _str(where, "question", row.pop("question"))
    answer = row.pop("answer")
    answer = None if answer is None else _str(where, "answer", answer)
    uid = _uid(row.pop("uid", None), default_uid, where)
    answer_type = _str(where, "answer_type", row.pop("answer_type", None) or "free_form")
    options = _options(row.pop("options", None) or [], where)
    boxes = _boxes(row.pop("evidence_boxes", None) or [], where)
    steps = _key_steps(row.pop("key_steps", None) or [], where)
    domain = _domain(row, where)
    return AdaptItem(uid=uid, image=image, question=question, answer=answer, answer_type=answer_type,
                     options=options, evidence_boxes=[list(b) for b in boxes], key_steps=list(steps),
                     domain=domain, meta=row)


def _canonical(row: dict[str, Any], where: str, require_answer: bool) -> dict[str, Any]:
    """A copy of ``row`` with aliases renamed to canonical names; the required fields present and not null."""
    row = dict(row)
    for alias, name in ALIASES.items():
        if alias in row:
            if name in row:
                raise ValueError(f"{where}: both field {alias!r} and its canonical name {name!r} are present")
            row[name] = row.pop(alias)
    missing = [k for k in REQUIRED if k not in row]
    nulls = [k for k in REQUIRED if row.get(k, "") is None and (k != "answer" or require_answer)]
    if missing or nulls:
        raise ValueError(f"{where}: missing required field(s) {missing}, null {nulls}; present: {sorted(row)}")
    return row


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _str(where: str, name: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"{where}: field {name!r}: expected a string, got {type(value).__name__} {value!r}")
    return str(value)


def _image(image: Any, where: str) -> str:
    if not isinstance(image, str) or not image:
        raise ValueError(f"{where}: field 'image': expected a non-empty path string, got {image!r}")
    return image


def _uid(uid: Any, default_uid: str | None, where: str) -> str:
    uid = _str(where, "uid", uid) if uid is not None else default_uid
    if uid is None:
        raise ValueError(f"{where}: field 'uid' missing and no default given")
    return uid


def _options(options: Any, where: str) -> list[str]:
    if not isinstance(options, list) or not all(isinstance(o, str) or _is_number(o) for o in options):
        raise ValueError(f"{where}: field 'options': expected a list of strings (or numbers), got {options!r}")
    return [str(o) for o in options]


def _boxes(boxes: Any, where: str) -> list[list[float]]:
    if not isinstance(boxes, list):
        raise ValueError(f"{where}: field 'evidence_boxes': expected a list of [x0, y0, x1, y1], got {boxes!r}")
    for k, box in enumerate(boxes):
        if not (isinstance(box, list) and len(box) == 4 and all(_is_number(v) for v in box)):
            raise ValueError(f"{where}: field 'evidence_boxes'[{k}]: expected 4 numbers [x0, y0, x1, y1], got {box!r}")
        if not (box[0] < box[2] and box[1] < box[3]):
            raise ValueError(f"{where}: field 'evidence_boxes'[{k}]: empty or inverted box {box!r} (need x0 < x1, y0 < y1)")
    return boxes


def _key_steps(steps: Any, where: str) -> list[str]:
    if not isinstance(steps, list) or not all(isinstance(s, str) for s in steps):
        raise ValueError(f"{where}: field 'key_steps': expected a list of strings, got {steps!r}")
    return steps


def _domain(row: dict[str, Any], where: str) -> str:
    """``domain`` (popped from ``row``), else ``category`` (left in ``row``, so it stays in ``meta``)."""
    domain = row.pop("domain", None)
    if domain is None:
        domain = row.get("category")
    if domain is None:
        raise ValueError(f"{where}: missing field 'domain' (or 'category'); present: {sorted(row)}")
    return _str(where, "domain", domain)
