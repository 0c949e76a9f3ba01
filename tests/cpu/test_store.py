"""Tests for howeval.store: reading records, quarantining unparseable Parquet, never an I/O error's file."""
from __future__ import annotations

import io

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from howeval import store
from howeval.store import StoreReadError, existing_keys, join, read_table

SCHEMA = pa.schema([("k", pa.string()), ("v", pa.int64())])


def _parquet(rows: list[dict]) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), buf)
    return buf.getvalue()


@pytest.fixture
def run(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.parquet").write_bytes(_parquet([{"k": "a", "v": 1}, {"k": "b", "v": 2}]))
    return tmp_path


def test_reads_every_file_and_fills_missing_columns(run):
    (run / "t" / "b.parquet").write_bytes(_parquet([{"k": "c", "v": 3}]))
    (run / "t" / "notes.txt").write_text("not a record file")
    table, bad = read_table(str(run / "t"), SCHEMA.append(pa.field("extra", pa.string())))
    assert bad == [] and table.column("k").to_pylist() == ["a", "b", "c"]
    assert table.column("extra").to_pylist() == [None, None, None]
    assert existing_keys(table, ("k",)) == {("a",), ("b",), ("c",)}
    assert read_table(str(run / "missing"), SCHEMA) == (SCHEMA.empty_table(), [])


@pytest.mark.parametrize("how", ["truncated", "empty", "garbage", "bad footer"])
def test_unparseable_file_is_marked_corrupt(run, how):
    good = _parquet([{"k": "z", "v": 9}])
    data = {"truncated": good[: len(good) // 2], "empty": b"", "garbage": b"PAR1 not really",
            # the footer length and magic kept, the footer itself zeroed: pyarrow raises OSError (thrift)
            "bad footer": good[:-12] + b"\x00" * 8 + good[-4:]}[how]
    bad_file = run / "t" / "b.parquet"
    bad_file.write_bytes(data)
    table, bad = read_table(str(run / "t"), SCHEMA)
    assert table.column("k").to_pylist() == ["a", "b"]  # the good file is still read
    assert bad == [str(bad_file)]
    assert not bad_file.exists() and (run / "t" / "b.parquet.corrupt").read_bytes() == data
    assert read_table(str(run / "t"), SCHEMA)[1] == []  # once aside, it is not read again


def test_io_error_raises_with_the_path_and_keeps_the_file(run, monkeypatch):
    """A network / I/O error while reading bytes is not corruption: raise, naming the file; rename nothing."""
    fs = fsspec.filesystem("file")
    real_open = type(fs).open

    def flaky_open(self, path, mode="rb", *a, **kw):
        if str(path).endswith("a.parquet"):
            raise ConnectionResetError("connection reset by peer")
        return real_open(self, path, mode, *a, **kw)

    monkeypatch.setattr(type(fs), "open", flaky_open)
    with pytest.raises(StoreReadError, match=r"cannot read .*a\.parquet \(ConnectionResetError: connection reset by peer\)") as e:
        read_table(str(run / "t"), SCHEMA)
    assert isinstance(e.value, OSError) and isinstance(e.value.__cause__, ConnectionResetError)
    assert (run / "t" / "a.parquet").exists() and not list((run / "t").glob("*.corrupt"))


def test_parse_errors_are_only_caught_around_in_memory_bytes(monkeypatch, run):
    """An OSError from the parser (bytes already in memory) is corruption; the same type from I/O is not."""
    monkeypatch.setattr(store, "_parse_parquet", lambda data: (_ for _ in ()).throw(OSError("Couldn't deserialize thrift")))
    _, bad = read_table(str(run / "t"), SCHEMA)
    assert bad == [join(str(run / "t"), "a.parquet")]


def test_jsonl_reader_counts_lines_skips_blanks_and_names_bad_lines(tmp_path):
    from howeval.store import JSONLinesError, iter_jsonl, read_jsonl

    p = tmp_path / "x.jsonl"
    p.write_text('{"a": 1}\n\n[2]\n{"a": \n3\n', encoding="utf-8")
    with pytest.raises(JSONLinesError, match=r"x\.jsonl:4: invalid JSON"):
        read_jsonl(p)
    bad: list[JSONLinesError] = []
    assert list(iter_jsonl(str(p), on_error=bad.append)) == [(1, {"a": 1}), (3, [2]), (5, 3)]
    assert [e.line for e in bad] == [4] and isinstance(bad[0], ValueError)
    assert read_jsonl(p, limit=2) == [{"a": 1}, [2]]  # stops before the bad line
    assert read_jsonl(p, limit=0) == []


def test_jsonl_reader_reads_fsspec_urls():
    from howeval.store import read_jsonl

    with fsspec.open("memory://jsonl-test/m.jsonl", "wt") as f:
        f.write('{"uid": "a"}\n{"uid": "b"}\n')
    assert [r["uid"] for r in read_jsonl("memory://jsonl-test/m.jsonl")] == ["a", "b"]


def test_iter_jsonl_names_a_line_that_is_not_utf8_and_can_skip_it(tmp_path):
    from howeval.store import JSONLinesError, iter_jsonl

    p = tmp_path / "m.jsonl"
    p.write_bytes(b'{"a": 1}\n{"q": "caf\xe9"}\n{"a": 3}\n')  # line 2 is Latin-1
    with pytest.raises(JSONLinesError) as e:
        list(iter_jsonl(str(p)))
    assert str(e.value).startswith(f"{p}:2: not UTF-8 (byte 0xe9 at column 11")  # not a buffer offset
    bad: list = []
    assert list(iter_jsonl(str(p), on_error=bad.append)) == [(1, {"a": 1}), (3, {"a": 3})]
    assert [(b.line, b.what) for b in bad] == [(2, "not UTF-8")]


def test_write_text_and_write_json_write_their_text_and_make_the_folder(tmp_path):
    md, js = tmp_path / "a" / "report.md", tmp_path / "b" / "metrics.json"
    store.write_text(str(md), "# Run\n\nä | 1\n")
    store.write_json(str(js), '{"n": 1}')
    assert md.read_text(encoding="utf-8") == "# Run\n\nä | 1\n"
    assert js.read_text() == '{"n": 1}'
    store.write_text(str(md), "x")  # replaced, not appended
    assert md.read_text() == "x"


def test_undefined_figures_become_null_and_json_stays_valid():
    import json
    import math

    from howeval.store import undefined_as_null

    m = {"acc": float("nan"), "ratio": math.inf, "ci": (0.1, -math.inf), "n": 3, "nested": [{"r": float("nan")}]}
    assert undefined_as_null(m) == {"acc": None, "ratio": None, "ci": [0.1, None], "n": 3, "nested": [{"r": None}]}
    assert json.loads(json.dumps(undefined_as_null(m), allow_nan=False))["acc"] is None
