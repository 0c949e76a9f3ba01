"""Released-format loaders (issue 31): CRYSTAL's items and AdaptMMBench's items from a path the user gives.

The real test reads the CRYSTAL project-page items in ``../shared/data/steps/crystal_examples.json`` (real
released items with their reference steps; skipped when the folder is absent). The others use a few
SYNTHETIC rows written here in the released formats (field names as in CRYSTAL's inference script and the
AdaptMMBench paper's (I, Q, A, E, K)); neither full set ships with the project.
"""
from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from howeval.benchmarks.loaders import BadRowError, load_benchmark, load_samples
from howeval.config import BenchmarkConfig


def _png(w=32, h=24) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (w, h), (200, 10, 10)).save(buf, format="PNG")
    return buf.getvalue()


def test_real_crystal_examples_load_with_their_reference_steps(shared_data):
    path = shared_data / "steps" / "crystal_examples.json"
    res = load_benchmark(str(path), fmt="crystal", skip_bad_rows=True)
    # 6 reference-step items + 1 worked match example have reference steps; the 3 graded predictions and 2
    # model-response records have none and are recorded as bad rows, naming the field
    assert len(res.samples) == 7 and len(res.bad_rows) == 5
    assert {b["field"] for b in res.bad_rows} == {"reference_steps"}
    s = {x["sample_id"]: x for x in res.samples}["crystal:Sample 714"]
    assert s["source"] == "RealWorldQA" and s["family"] == "VG" and s["answer"] == "Yes"
    assert s["reference_steps"][0].startswith("Scene: a nighttime residential street")
    assert len(s["reference_steps"]) == 9 and s["images"][0][:4] == b"\xff\xd8\xff\xe0"  # the JPEG itself
    math = {x["sample_id"]: x for x in res.samples}["crystal:Sample 1265"]
    assert math["family"] == "KR" and math["category"] == "stem"
    with pytest.raises(BadRowError, match="reference_steps"):
        load_benchmark(str(path), fmt="crystal")


def test_crystal_parquet_with_embedded_images_needs_an_image_dir(tmp_path):
    """Synthetic rows in the Hugging Face Parquet export's shape: ``image`` is a ``{bytes, path}`` struct."""
    rows = [{"id": 0, "question": "How many bars?", "choices": None, "answer": "3", "source": "MathVista",
             "image": {"bytes": _png(), "path": "0.png"}, "reference_steps": ["Count the bars.", "There are 3."]},
            {"id": 1, "question": "Which is larger?", "choices": ["left", "right"], "answer": "A",
             "source": "RealWorldQA", "image": {"bytes": _png(), "path": "1.png"}, "reference_steps": ["Compare."]}]
    path = tmp_path / "test-00000.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    with pytest.raises(BadRowError, match="give image_dir"):
        load_benchmark(str(path), fmt="crystal")
    res = load_benchmark(str(path), fmt="crystal", image_dir=str(tmp_path / "img"), read_images=False)
    a, b = res.samples
    assert a["sample_id"] == "crystal:0" and a["answer_type"] == "integer_number" and a["family"] == "KR"
    assert b["answer_type"] == "multiple_choice" and b["options"] == ["left", "right"] and b["family"] == "VG"
    assert a["image_paths"] == [str(tmp_path / "img" / "crystal_0.png")]
    assert (tmp_path / "img" / "crystal_0.png").read_bytes() == rows[0]["image"]["bytes"]


def test_adaptmmbench_items_in_the_papers_fields(tmp_path):
    """Synthetic rows in AdaptMMBench's (I, Q, A, E, K) form, through a sweep config's ``format`` key."""
    (tmp_path / "a.png").write_bytes(_png(64, 48))
    rows = [{"id": "gui_01", "I": "a.png", "Q": "What does the button say?", "A": "OK", "E": [[2, 2, 30, 20]],
             "K": ["Find the button.", "Read its label."], "domain": "GUI"},
            {"id": "math_02", "image": "a.png", "question": "2+2?", "answer": "4", "bbox": [0, 0, 10, 10],
             "key_steps": ["Add."], "domain": "math"},
            {"id": "x_03", "I": "a.png", "Q": "?", "A": "1", "K": ["k"]}]  # no domain: a bad row, named
    path = tmp_path / "adaptmmbench.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    b = BenchmarkConfig(path=str(path), name="adapt", format="adaptmmbench")
    samples, bad = load_samples([b], skip_bad_rows=True)
    assert [s["sample_id"] for s in samples] == ["adaptmmbench:gui_01", "adaptmmbench:math_02"]
    gui, math = samples
    assert gui["domain"] == "gui" and gui["evidence_boxes"] == [[2, 2, 30, 20]] and gui["family"] == "VG"
    assert gui["key_steps"] == ["Find the button.", "Read its label."]
    assert math["evidence_boxes"] == [[0, 0, 10, 10]] and math["family"] == "KR" and math["answer_type"] == "integer_number"
    assert bad == [{"path": str(path), "line": 3, "uid": "adaptmmbench:x_03", "field": "domain",
                    "reason": "missing (one of real_world, ocr, gui, knowledge, math; accuracy is per domain)"}]


def test_unknown_format_is_refused():
    with pytest.raises(ValueError, match="unknown benchmark format 'vqa'"):
        load_benchmark("x.jsonl", fmt="vqa")
    with pytest.raises(Exception, match="format"):
        BenchmarkConfig(path="x.jsonl", format="vqa")
