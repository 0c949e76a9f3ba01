"""OCR text of an image, for text-only policies (``vision: ocr``): RapidOCR, lines grouped by position.

The engine is ``rapidocr-onnxruntime`` (PyPI, Apache-2.0; PP-OCRv4 detection + recognition ONNX models inside
the package, so it runs offline). It returns one box per text run; :func:`group_lines` puts boxes whose
vertical centres lie within half a median box height of a line's centre on that line, orders each
line left to right and separates runs with a wide gap by `` | `` (table cells) and others by a space.

Results are cached per image (sha256 of its bytes) under ``$HOWEVAL_CACHE/ocr/`` (~1.5-4 s CPU per image
otherwise, DESIGN.md), so a sweep's two modes and later runs read each image once.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from statistics import median

OCR_ENGINE = "rapidocr-onnxruntime"
CACHE_VERSION = "1"  # bump when the line grouping changes: the cache key includes it

_engine = None  # the RapidOCR instance, made on first use (no import-time model load)


def group_lines(items: Sequence[tuple[Sequence[Sequence[float]], str]], gap_factor: float = 2.0) -> list[str]:
    """Text lines from OCR boxes.

    Args:
        items: ``(box, text)`` pairs; ``box`` is four ``(x, y)`` corners in pixels (any order; only the
            min/max are used), as RapidOCR returns them.
        gap_factor: a horizontal gap wider than ``gap_factor`` x the line's median box height separates
            two runs with `` | `` (table columns); a narrower one with a space.

    Returns:
        Lines top to bottom, each with its runs left to right. Empty texts are skipped.

    >>> group_lines([([[60, 10], [90, 10], [90, 20], [60, 20]], "3.20"),
    ...              ([[0, 12], [30, 12], [30, 22], [0, 22]], "Eggs"),
    ...              ([[0, 40], [40, 40], [40, 50], [0, 50]], "TOTAL")])
    ['Eggs | 3.20', 'TOTAL']
    """
    boxes = []
    for box, text in items:
        text = (text or "").strip()
        if not text:
            continue
        xs, ys = [float(p[0]) for p in box], [float(p[1]) for p in box]
        boxes.append((min(xs), max(xs), min(ys), max(ys), text))
    if not boxes:
        return []
    h = median(b[3] - b[2] for b in boxes) or 1.0
    lines: list[list[tuple]] = []
    for b in sorted(boxes, key=lambda b: (b[2] + b[3]) / 2):
        yc = (b[2] + b[3]) / 2
        if lines:
            last = lines[-1]
            line_yc = sum((x[2] + x[3]) / 2 for x in last) / len(last)
            if abs(yc - line_yc) <= h / 2:
                last.append(b)
                continue
        lines.append([b])
    out = []
    for line in lines:
        line.sort(key=lambda b: b[0])
        s = line[0][4]
        for prev, cur in zip(line, line[1:]):
            s += (" | " if cur[0] - prev[1] > gap_factor * h else " ") + cur[4]
        out.append(s)
    return out


def _rapidocr():
    global _engine
    if _engine is None:
        from rapidocr_onnxruntime import RapidOCR

        _engine = RapidOCR()
    return _engine


def _cache_path(data: bytes) -> Path:
    from howeval.engines.checkpoints import cache_dir

    key = hashlib.sha256(data).hexdigest()
    return cache_dir() / "ocr" / f"v{CACHE_VERSION}" / f"{key}.json"


def ocr_lines(data: bytes) -> list[str]:
    """The OCR text lines of one image (PNG/JPEG/... bytes), cached per image.

    Raises:
        ValueError: the bytes are not a readable image.
    """
    path = _cache_path(data)
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))["lines"]
    import io

    import numpy as np
    from PIL import Image, UnidentifiedImageError

    try:
        img = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))[:, :, ::-1]  # RapidOCR takes BGR arrays
    except UnidentifiedImageError as e:
        raise ValueError(f"ocr: not a readable image ({len(data)} bytes): {e}") from e
    result, _ = _rapidocr()(img)
    lines = group_lines([(box, text) for box, text, _score in (result or [])])
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"engine": OCR_ENGINE, "lines": lines}, f)
    os.replace(tmp, path)
    return lines


def ocr_block(images: Sequence[bytes]) -> str:
    """The text that stands in for ``images`` in a text-only prompt (one block per image).

    >>> ocr_block([])
    ''
    """
    blocks = []
    for i, data in enumerate(images):
        lines = ocr_lines(data)
        label = "Text in the image" if len(images) == 1 else f"Text in image {i + 1}"
        body = "\n".join(lines) if lines else "(no text found)"
        blocks.append(f"{label} (OCR):\n{body}")
    return "\n\n".join(blocks)
