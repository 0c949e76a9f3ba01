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

    >>> parse_item({"I": "a.png", "Q": "What?", "A": "B", "category": "ocr"}, default_uid="x").domain
    'ocr'
    """
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

    def _str(name: str, value: Any) -> str:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError(f"{where}: field {name!r}: expected a string, got {type(value).__name__} {value!r}")
        return str(value)

    image = row.pop("image")
    if not isinstance(image, str) or not image:
        raise ValueError(f"{where}: field 'image': expected a non-empty path string, got {image!r}")
    question = _str("question", row.pop("question"))
    answer = row.pop("answer")
    answer = None if answer is None else _str("answer", answer)
    uid = row.pop("uid", None)
    uid = _str("uid", uid) if uid is not None else default_uid
    if uid is None:
        raise ValueError(f"{where}: field 'uid' missing and no default given")
    answer_type = _str("answer_type", row.pop("answer_type", None) or "free_form")

    options = row.pop("options", None) or []
    ok_opt = lambda o: isinstance(o, str) or (isinstance(o, (int, float)) and not isinstance(o, bool))  # noqa: E731
    if not isinstance(options, list) or not all(ok_opt(o) for o in options):
        raise ValueError(f"{where}: field 'options': expected a list of strings (or numbers), got {options!r}")
    options = [str(o) for o in options]

    boxes = row.pop("evidence_boxes", None) or []
    if not isinstance(boxes, list):
        raise ValueError(f"{where}: field 'evidence_boxes': expected a list of [x0, y0, x1, y1], got {boxes!r}")
    for k, box in enumerate(boxes):
        ok = isinstance(box, list) and len(box) == 4 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in box)
        if not ok:
            raise ValueError(f"{where}: field 'evidence_boxes'[{k}]: expected 4 numbers [x0, y0, x1, y1], got {box!r}")
        if not (box[0] < box[2] and box[1] < box[3]):
            raise ValueError(f"{where}: field 'evidence_boxes'[{k}]: empty or inverted box {box!r} (need x0 < x1, y0 < y1)")

    steps = row.pop("key_steps", None) or []
    if not isinstance(steps, list) or not all(isinstance(s, str) for s in steps):
        raise ValueError(f"{where}: field 'key_steps': expected a list of strings, got {steps!r}")

    domain = row.pop("domain", None)
    if domain is None:
        domain = row.get("category")
    if domain is None:
        raise ValueError(f"{where}: missing field 'domain' (or 'category'); present: {sorted(row)}")
    domain = _str("domain", domain)

    return AdaptItem(
        uid=uid,
        image=image,
        question=question,
        answer=answer,
        answer_type=answer_type,
        options=list(options),
        evidence_boxes=[list(b) for b in boxes],
        key_steps=list(steps),
        domain=domain,
        meta=row,
    )
