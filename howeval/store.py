"""Parquet record store under an output URI (local folder or any fsspec URL).

Layout::

    <output_uri>/responses/<config>/*.parquet    Response rows (records.RESPONSE_SCHEMA)
    <output_uri>/judgments/<judge>/*.parquet     Judgment rows (records.JUDGMENT_SCHEMA)
    <output_uri>/metrics.json, report.md, ...

Every stage reads the keys already written and only computes the rest: that is resume and re-judging.
A file that cannot be read (a writer killed mid-file) is moved aside to ``*.parquet.corrupt`` and
reported, so its rows are recomputed and no key is counted twice.
"""
from __future__ import annotations

import logging
import posixpath

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

log = logging.getLogger(__name__)


def fs_and_path(uri: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """The fsspec filesystem and the path inside it for ``uri``."""
    fs, path = fsspec.core.url_to_fs(uri)
    return fs, path


def join(uri: str, *parts: str) -> str:
    return posixpath.join(uri.rstrip("/"), *parts)


def read_table(uri: str, schema: pa.Schema) -> tuple[pa.Table, list[str]]:
    """Read every ``*.parquet`` below ``uri`` into one table with ``schema``.

    Returns ``(table, quarantined)``: unreadable files are renamed to ``*.corrupt`` and listed.
    A missing folder gives an empty table.
    """
    fs, root = fs_and_path(uri)
    if not fs.exists(root):
        return schema.empty_table(), []
    tables, bad = [], []
    for f in sorted(fs.find(root)):
        if not f.endswith(".parquet"):
            continue
        try:
            with fs.open(f, "rb") as fh:
                t = pq.read_table(fh)
            tables.append(t.select([n for n in schema.names if n in t.column_names]))
        except Exception as e:  # a partial file from a killed writer
            log.warning("quarantining unreadable parquet %s: %s", f, e)
            fs.mv(f, f + ".corrupt")
            bad.append(f)
    if not tables:
        return schema.empty_table(), bad
    from howeval.records import conform

    rows = [r for t in tables for r in t.to_pylist()]
    return conform(rows, schema), bad


def existing_keys(table: pa.Table, columns: tuple[str, ...]) -> set[tuple]:
    """Set of key tuples present in ``table`` for ``columns``."""
    if table.num_rows == 0:
        return set()
    cols = [table.column(c).to_pylist() for c in columns]
    return set(zip(*cols))


def write_json(uri: str, text: str) -> None:
    fs, path = fs_and_path(uri)
    fs.makedirs(posixpath.dirname(path), exist_ok=True)
    with fs.open(path, "w") as f:
        f.write(text)


def write_bytes(uri: str, data: bytes) -> None:
    fs, path = fs_and_path(uri)
    fs.makedirs(posixpath.dirname(path), exist_ok=True)
    with fs.open(path, "wb") as f:
        f.write(data)
