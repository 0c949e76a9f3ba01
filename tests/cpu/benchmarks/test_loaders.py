"""Tests for howeval.benchmarks.loaders: the real manifest, bad rows named by line and field, Parquet and fsspec."""
from __future__ import annotations

import json

import pytest

from howeval.benchmarks.loaders import BadRowError, load_benchmark


def test_load_real_manifest_stops_on_the_first_bad_row(shared_data):
    with pytest.raises(BadRowError) as e:
        load_benchmark(str(shared_data / "manifest.jsonl"))
    assert e.value.field == "answer" and e.value.uid.startswith("bingo:")
    assert "--skip-bad-rows" in str(e.value)


def test_load_real_manifest_skip_bad_rows_records_them(shared_data):
    res = load_benchmark(str(shared_data / "manifest.jsonl"), skip_bad_rows=True)
    assert len(res.samples) + len(res.bad_rows) == 134
    assert {b["field"] for b in res.bad_rows} == {"answer"} and len(res.bad_rows) == 2
    s = next(x for x in res.samples if x["sample_id"] == "tabmwp:14520")
    assert s["family"] == "OS" and s["answer"] == "9" and s["images"][0][:8] == b"\x89PNG\r\n\x1a\n"
    p = next(x for x in res.samples if x["sample_id"] == "puzzlevqa:circle_size_number_0070")
    assert p["options"] == ["4", "1", "3", "2"] and p["family"] == "VG"


@pytest.mark.parametrize("row, field", [
    ({"uid": "x", "question": "q", "answer": "1", "answer_type": "integer_number", "image": "missing.png",
      "category": "ocr"}, "image"),
    ({"uid": "x", "question": "q", "answer": "1", "answer_type": "numberish", "category": "ocr"}, "answer_type"),
    ({"uid": "x", "question": "q", "answer_type": "integer_number", "category": "ocr"}, "answer"),
])
def test_bad_rows_name_row_and_field(tmp_path, row, field):
    m = tmp_path / "m.jsonl"
    m.write_text(json.dumps({"uid": "ok", "question": "q", "answer": "1", "answer_type": "integer_number",
                             "category": "ocr"}) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(BadRowError) as e:
        load_benchmark(str(m))
    assert (e.value.line, e.value.field) == (2, field)
    res = load_benchmark(str(m), skip_bad_rows=True)
    assert [s["sample_id"] for s in res.samples] == ["ok"] and res.bad_rows[0]["line"] == 2


def test_load_parquet_and_memory_fs(tmp_path):
    import fsspec
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"uid": "a", "question": "2+2?", "answer": "4", "answer_type": "integer_number", "category": "stem"}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "m.parquet")
    assert load_benchmark(str(tmp_path / "m.parquet")).samples[0]["family"] == "KR"
    with fsspec.open("memory://bench/m.jsonl", "w") as f:
        f.write(json.dumps(rows[0]) + "\n")
    assert load_benchmark("memory://bench/m.jsonl").samples[0]["answer"] == "4"


def _ok_row(uid: str) -> bytes:
    return (json.dumps({"uid": uid, "question": "q", "answer": "1", "answer_type": "integer_number",
                        "category": "ocr"}) + "\n").encode()


def test_a_line_that_is_not_utf8_is_named_by_file_and_line_and_skippable(tmp_path):
    m = tmp_path / "m.jsonl"
    latin1 = json.dumps({"uid": "bad", "question": "caf\u00e9?", "answer": "1", "answer_type": "integer_number",
                         "category": "ocr"}, ensure_ascii=False).encode("latin-1") + b"\n"
    m.write_bytes(_ok_row("a") + latin1 + _ok_row("b"))
    with pytest.raises(BadRowError) as e:
        load_benchmark(str(m))
    assert (e.value.path, e.value.line, e.value.field) == (str(m), 2, "<encoding>")
    assert str(e.value).startswith(f"{m}:2 ") and "not UTF-8 (byte 0xe9 at column" in str(e.value)
    res = load_benchmark(str(m), skip_bad_rows=True)
    assert [s["sample_id"] for s in res.samples] == ["a", "b"]  # the lines after it still load
    assert res.bad_rows == [{"path": str(m), "line": 2, "uid": None, "field": "<encoding>",
                             "reason": e.value.why}]


def test_adapt_items_name_the_line_that_is_not_utf8(tmp_path):
    from howeval.benchmarks.adapt.items import load_adapt_items

    m = tmp_path / "items.jsonl"
    m.write_bytes(b'{"uid": "x"\xff}\n')
    with pytest.raises(ValueError, match=rf"^{m}:1: not UTF-8 \(byte 0xff at column 12"):
        load_adapt_items(str(m))
