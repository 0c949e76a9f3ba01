"""Tests for howeval.benchmarks.adapt.items: manifests in both field forms, fsspec, errors naming line and field."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

from howeval.benchmarks.adapt.items import load_adapt_items


@pytest.fixture
def arr() -> np.ndarray:
    return np.random.default_rng(1).integers(0, 256, size=(30, 40, 3), dtype=np.uint8)


def _write_png(path, arr):
    Image.fromarray(arr, "RGB").save(path, format="PNG")


def test_load_adapt_items_both_forms(tmp_path, arr):
    (tmp_path / "img").mkdir()
    _write_png(tmp_path / "img" / "a.png", arr)
    rows = [
        {"uid": "demo:1", "image": "img/a.png", "question": "Q1?", "answer": "B", "answer_type": "multiple_choice",
         "options": ["x", "y"], "evidence_boxes": [[0, 0, 10, 10]], "key_steps": ["s1"], "domain": "gui"},
        {"I": "img/a.png", "Q": "Q2?", "A": 3, "E": [], "K": ["k1", "k2"], "category": "math", "extra": 1},
    ]
    p = tmp_path / "manifest.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    items = load_adapt_items(str(p))
    assert [it.uid for it in items] == ["demo:1", "manifest:2"]
    assert items[0].options == ["x", "y"] and items[0].domain == "gui" and items[0].evidence_boxes == [[0, 0, 10, 10]]
    assert items[1].answer == "3" and items[1].domain == "math" and items[1].key_steps == ["k1", "k2"]
    assert items[1].meta["extra"] == 1
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(items[0].image))), arr)


def test_load_adapt_items_through_fsspec_memory(arr):
    import fsspec

    fs = fsspec.filesystem("memory")
    buf = io.BytesIO()
    Image.fromarray(arr, "RGB").save(buf, format="PNG")
    fs.pipe("/adapt/images/a.png", buf.getvalue())
    fs.pipe("/adapt/m.jsonl", json.dumps({"image": "images/a.png", "question": "q", "answer": "a", "domain": "ocr"}).encode())
    (it,) = load_adapt_items("memory://adapt/m.jsonl")
    assert it.image == buf.getvalue() and it.uid == "m:1"


@pytest.mark.parametrize(
    "row,fragment",
    [
        ({"image": "a.png", "answer": "x", "domain": "d"}, "missing required field(s) ['question']"),
        ({"image": "a.png", "question": "q", "answer": "x"}, "'domain' (or 'category')"),
        ({"image": "a.png", "question": "q", "answer": "x", "domain": "d", "options": "AB"}, "field 'options'"),
        ({"image": "a.png", "question": "q", "answer": "x", "domain": "d", "evidence_boxes": [[0, 0, 5]]}, "field 'evidence_boxes'[0]"),
        ({"image": "a.png", "question": "q", "answer": "x", "domain": "d", "evidence_boxes": [[5, 0, 1, 3]]}, "inverted"),
        ({"image": "a.png", "question": "q", "answer": "x", "domain": "d", "evidence_boxes": [[0, 0, 99, 3]]}, "outside"),
        ({"image": "a.png", "question": "q", "answer": "x", "domain": "d", "key_steps": [1]}, "field 'key_steps'"),
        ({"image": "missing.png", "question": "q", "answer": "x", "domain": "d"}, "field 'image': file not found"),
    ],
)
def test_load_adapt_items_errors_name_line_and_field(tmp_path, arr, row, fragment):
    _write_png(tmp_path / "a.png", arr)
    good = {"image": "a.png", "question": "q", "answer": "x", "domain": "d"}
    p = tmp_path / "m.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps(row) + "\n")
    with pytest.raises((ValueError, FileNotFoundError)) as ei:
        load_adapt_items(str(p))
    msg = str(ei.value)
    assert f"{p}:2" in msg and fragment in msg, msg


def test_load_adapt_items_bad_json_and_duplicates(tmp_path, arr):
    _write_png(tmp_path / "a.png", arr)
    p = tmp_path / "m.jsonl"
    p.write_text('{"image": "a.png", "question": "q", "answer": "x", "domain": "d"}\n{oops\n')
    with pytest.raises(ValueError, match=r"m\.jsonl:2: invalid JSON"):
        load_adapt_items(str(p))
    row = json.dumps({"uid": "u", "image": "a.png", "question": "q", "answer": "x", "domain": "d"})
    p.write_text(row + "\n" + row + "\n")
    with pytest.raises(ValueError, match="duplicate 'u' \\(first on line 1\\)"):
        load_adapt_items(str(p))


def test_load_shared_manifest(shared_data):
    """The real shared manifest (uid, category, no boxes) loads: domain falls back to category."""
    with pytest.raises(ValueError, match=r"manifest\.jsonl:\d+: missing required field\(s\) \[\], null \['answer'\]"):
        load_adapt_items(str(shared_data / "manifest.jsonl"))
    items = load_adapt_items(str(shared_data / "manifest.jsonl"), require_answer=False)
    assert len(items) == 134 and sum(it.answer is None for it in items) == 2 and all(it.image for it in items)
    assert {it.domain for it in items} >= {"stem_math", "ocr_table_reasoning"}
