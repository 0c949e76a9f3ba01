"""OCR for text-only policies: line grouping, the per-image cache, and ``vision: ocr`` prompts."""
from __future__ import annotations

import pytest

from howeval.config import ModelConfig
from howeval.engines import ocr
from howeval.engines.ocr import group_lines, ocr_block
from howeval.engines.prompts import build_request


def _box(x0, y0, x1, y1):
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]


def test_group_lines_table_rows_and_columns():
    # a 2x2 table given out of order, one row slightly tilted (centres 130 vs 132), plus a title
    items = [(_box(260, 122, 310, 139), "16mm"), (_box(90, 121, 128, 140), "Lima"),
             (_box(170, 27, 310, 47), "Yearly rainfall"), (_box(89, 161, 145, 182), "Bergen"),
             (_box(260, 163, 328, 179), "2250mm"), (_box(0, 0, 1, 1), "  ")]
    assert group_lines(items) == ["Yearly rainfall", "Lima | 16mm", "Bergen | 2250mm"]


def test_group_lines_near_runs_join_with_space():
    # gap 10 px < 2 x height 20 -> one phrase
    assert group_lines([(_box(50, 0, 90, 20), "Ave"), (_box(0, 0, 40, 20), "Maple")]) == ["Maple Ave"]
    assert group_lines([]) == []


def test_ocr_block_labels_images_and_empty_results(monkeypatch):
    monkeypatch.setattr(ocr, "ocr_lines", lambda data: {b"a": ["TOTAL | 11.50"], b"b": []}[data])
    assert ocr_block([b"a"]) == "Text in the image (OCR):\nTOTAL | 11.50"
    assert ocr_block([b"a", b"b"]) == ("Text in image 1 (OCR):\nTOTAL | 11.50\n\n"
                                       "Text in image 2 (OCR):\n(no text found)")


def test_vision_ocr_request_is_text_only_with_ocr_before_question(monkeypatch):
    monkeypatch.setattr(ocr, "ocr_lines", lambda data: ["Eggs | 3.20"])
    m = ModelConfig(name="t", engine="hf", vision="ocr", modes={"NT": {"system_prompt": "s"}})
    assert m.vision_mode == "ocr"
    req = build_request({"sample_id": "x", "question": "Eggs price?", "images": [b"png"]}, m, "NT")
    parts = req.messages[-1]["content"]
    assert [p["type"] for p in parts] == ["text"]
    assert parts[0]["text"].startswith("Text in the image (OCR):\nEggs | 3.20\n\nEggs price?\n")


def test_vision_modes():
    kw = dict(name="t", engine="hf", modes={"NT": {}})
    assert [ModelConfig(**kw, vision=v).vision_mode for v in (True, False, "ocr")] == ["pixels", "none", "ocr"]
    with pytest.raises(ValueError, match="ocr"):
        ModelConfig(**kw, vision="pixels")


@pytest.mark.slow
def test_ocr_reads_demo_receipt_and_caches(repo_root, tmp_path, monkeypatch):
    monkeypatch.setenv("HOWEVAL_CACHE", str(tmp_path))
    data = (repo_root / "datasets/demo/images/os-ocr-007.png").read_bytes()
    lines = ocr.ocr_lines(data)
    assert "Eggs | 3.20" in lines and "TOTAL | 11.50" in lines
    assert len(list(tmp_path.glob("ocr/v*/*.json"))) == 1

    def boom():
        raise AssertionError("cache miss: OCR ran twice")

    monkeypatch.setattr(ocr, "_rapidocr", boom)
    assert ocr.ocr_lines(data) == lines
