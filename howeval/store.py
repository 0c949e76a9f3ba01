"""Parquet record store under an output URI (local folder or any fsspec URL).

Layout::

    <output_uri>/responses/<config>/*.parquet    Response rows (records.RESPONSE_SCHEMA)
    <output_uri>/judgments/<judge>/*.parquet     Judgment rows (records.JUDGMENT_SCHEMA)
    <output_uri>/metrics.json, report.md, ...

Every stage reads the keys already written and only computes the rest: that is resume and re-judging.
A file that does not parse as Parquet (a writer killed mid-file) is moved aside to ``*.parquet.corrupt``
and reported, so its rows are recomputed and no key is counted twice; a file that cannot be read (an I/O
or network error) raises :class:`StoreReadError` naming it and is left alone.

The project's one JSON Lines reader lives here too (:func:`iter_jsonl`, :func:`read_jsonl`): manifests,
corpora, replay files, caches and logs are all read through it, local or fsspec, with ``file:line`` errors.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import posixpath
from collections.abc import Callable, Iterator
from typing import Any

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


class JSONLinesError(ValueError):
    """A line of a JSON Lines file that is not JSON, or not UTF-8: ``path``, ``line`` (1-based),
    ``reason`` and ``what`` (``"invalid JSON"`` or ``"not UTF-8"``) name it.

    The message reads ``<path>:<line>: invalid JSON (<reason>)`` or ``<path>:<line>: not UTF-8 (byte 0xe9
    at column 12: ...)``.
    """

    def __init__(self, path: str, line: int, reason: str, what: str = "invalid JSON") -> None:
        super().__init__(f"{path}:{line}: {what} ({reason})")
        self.path, self.line, self.reason, self.what = path, line, reason, what


def iter_jsonl(path: str | os.PathLike, *, storage_options: dict[str, Any] | None = None,
               on_error: Callable[[JSONLinesError], None] | None = None) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line of a JSON Lines file (local path or fsspec URL).

    Line numbers are 1-based and count blank lines, so they point into the file.

    Args:
        storage_options: fsspec options for ``path`` (e.g. credentials).
        on_error: called with the :class:`JSONLinesError` of a line that is not JSON or not UTF-8, and the
            line is skipped (e.g. a manifest keeping bad rows, a cache tolerating a torn last line); None raises.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        JSONLinesError (a ValueError): a line is not JSON and ``on_error`` is None.
    """
    path = os.fspath(path)
    # bytes, decoded line by line: a line that is not UTF-8 is named by its line (decoding the file as text
    # failed at a buffer offset, with no line number) and, with on_error, skipped like a line that is not JSON
    with fsspec.open(path, "rb", **(storage_options or {})) as f:
        for i, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                err = JSONLinesError(path, i, f"byte 0x{e.object[e.start:e.start + 1].hex()} at column {e.start + 1}: "
                                              f"{e.reason}; re-save the file as UTF-8", what="not UTF-8")
                if on_error is None:
                    raise err from None
                on_error(err)
                continue
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as e:
                err = JSONLinesError(path, i, f"{e.msg} at column {e.colno}")
                if on_error is None:
                    raise err from None
                on_error(err)
                continue
            yield i, value


def iter_rows(path: str, *, json_array: bool = False) -> Iterator[tuple[int, Any]]:
    """``(row number, row)`` of each row of a benchmark file, in file order, read lazily (stop early for a prefix).

    JSON Lines (the number is the 1-based line, a line that is not JSON or UTF-8 comes as its
    :class:`JSONLinesError` *value*, in its place), Parquet (row number from 1), or with ``json_array`` a JSON
    array of objects, ``{"data": [...]}`` or ``{id: object}`` (the released formats' files; ``id`` is put on
    each row of the last form).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: a ``json_array`` file that is none of the three shapes.
    """
    if json_array:
        with fsspec.open(path, "rt", encoding="utf-8") as f:
            data = json.load(f)
        if isinstance(data, dict) and isinstance(data.get("data"), list):
            data = data["data"]
        elif isinstance(data, dict) and all(isinstance(v, dict) for v in data.values()):
            data = [{"id": k, **v} for k, v in data.items()]
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON array of items (or {{'data': [...]}}), got {type(data).__name__}")
        yield from enumerate(data, 1)
        return
    if path.endswith(".parquet"):
        with fsspec.open(path, "rb") as f:
            pf = pq.ParquetFile(f)
            i = 0
            for batch in pf.iter_batches(batch_size=256):
                for row in batch.to_pylist():
                    i += 1
                    yield i, row
        return
    pending: list[JSONLinesError] = []
    for i, row in iter_jsonl(path, on_error=pending.append):  # on_error runs in file order, before row i
        yield from ((e.line, e) for e in pending)
        pending.clear()
        yield i, row
    yield from ((e.line, e) for e in pending)


def _canonical(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray, memoryview)):  # an embedded image: its digest stands for it
        return {"<bytes sha256>": hashlib.sha256(bytes(v)).hexdigest()}
    return str(v)  # dates, decimals from Parquet: their text


class RowsDigest:
    """SHA-256 of a sequence of benchmark rows by content, not by bytes: each row as canonical JSON (keys sorted,
    top-level null fields dropped, so a JSON Lines file and its Parquet export with the same rows agree; embedded
    bytes by their own SHA-256), one row after another; a row that could not be read (a :class:`JSONLinesError`)
    counts as a marker naming what was wrong with it. Re-indenting a line, moving or re-uploading the file
    changes nothing; changing, adding, removing or reordering a row changes the digest.

    >>> d = RowsDigest(); d.update({"uid": "a", "answer": "4", "note": None}); d.rows
    1
    >>> e = RowsDigest(); e.update({"answer": "4", "uid": "a"}); d.hexdigest() == e.hexdigest()
    True
    """

    def __init__(self) -> None:
        self._h = hashlib.sha256()
        self.rows = 0

    def update(self, row: Any) -> None:
        if isinstance(row, JSONLinesError):
            row = {"<unreadable row>": row.what}
        elif isinstance(row, dict):
            row = {k: v for k, v in row.items() if v is not None}
        self._h.update(json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                                  default=_canonical).encode("utf-8") + b"\n")
        self.rows += 1

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def undefined_as_null(value: Any) -> Any:
    """``value`` with every float that is not finite (NaN, ±inf: a mean of nothing, a ratio over 0) replaced by
    None, through dicts, lists and tuples, so a JSON output says ``null`` for an undefined figure (JSON has no
    NaN; Python would write the invalid token ``NaN``).

    >>> undefined_as_null({"a": float("nan"), "b": [1.0, float("inf")], "c": (0.0,)})
    {'a': None, 'b': [1.0, None], 'c': [0.0]}
    """
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {k: undefined_as_null(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [undefined_as_null(v) for v in value]
    return value


def read_jsonl(path: str | os.PathLike, *, limit: int | None = None,
               storage_options: dict[str, Any] | None = None) -> list[Any]:
    """The values of a JSON Lines file's non-blank lines, in order (at most ``limit`` of them).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        JSONLinesError (a ValueError): a line is not JSON; the message names ``path:line``.
    """
    rows: list[Any] = []
    if limit is not None and limit <= 0:
        return rows
    for _, value in iter_jsonl(path, storage_options=storage_options):
        rows.append(value)
        if limit is not None and len(rows) >= limit:
            break
    return rows


class StoreReadError(OSError):
    """A Parquet file could not be read (an I/O or network error): the file is left in place, not marked corrupt."""


PARSE_ERRORS = (pa.ArrowException, OSError)
"""What pyarrow raises for bytes that are not a valid Parquet file: ``ArrowInvalid`` (no magic bytes, empty
file, truncated) or ``OSError`` (a footer that cannot be deserialized). Caught only around parsing bytes
already in memory, so here it never means an I/O error."""


def _parse_parquet(data: bytes) -> pa.Table:
    return pq.read_table(pa.BufferReader(data))


def read_table(uri: str, schema: pa.Schema) -> tuple[pa.Table, list[str]]:
    """Read every ``*.parquet`` below ``uri`` into one table with ``schema``.

    Each file is read in two steps: its bytes (I/O), then the Parquet inside them (parsing, in memory).
    A file whose bytes do not parse as Parquet (a writer killed mid-file) is renamed to
    ``<file>.corrupt``, logged and listed, so its rows are recomputed and no key is counted twice.

    Returns:
        ``(table, quarantined)``: the rows (columns of ``schema``; missing columns null) and the paths
        renamed to ``*.corrupt``. A missing folder gives an empty table.

    Raises:
        StoreReadError: a file's bytes could not be read (I/O or network error); the message names the
            file, which is left as it is (a passing error must not discard good records).
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
                data = fh.read()
        except Exception as e:  # an I/O boundary: name the file, keep it
            raise StoreReadError(f"cannot read {f} ({type(e).__name__}: {e}); the file is kept as it is") from e
        try:
            t = _parse_parquet(data)
        except PARSE_ERRORS as e:
            log.warning("quarantining unparseable parquet %s (%d bytes): %s", f, len(data), e)
            fs.mv(f, f + ".corrupt")
            bad.append(f)
            continue
        tables.append(t.select([n for n in schema.names if n in t.column_names]))
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


def write_text(uri: str, text: str) -> None:
    """Write ``text`` at ``uri`` (any fsspec URI), creating its folder; an existing file is replaced.

    For every text artifact of a run: Markdown, HTML, CSV, LaTeX, JSON Lines. Not atomic (see ``write_table``).
    """
    fs, path = fs_and_path(uri)
    fs.makedirs(posixpath.dirname(path), exist_ok=True)
    with fs.open(path, "w") as f:
        f.write(text)


def write_json(uri: str, text: str) -> None:
    """Write one JSON document, already serialized (``json.dumps``, ``model_dump_json``), at ``uri``.

    The same bytes as ``write_text``; the name says what the file holds. Other text goes through ``write_text``.
    """
    write_text(uri, text)


def write_bytes(uri: str, data: bytes) -> None:
    fs, path = fs_and_path(uri)
    fs.makedirs(posixpath.dirname(path), exist_ok=True)
    with fs.open(path, "wb") as f:
        f.write(data)


def write_table(table: pa.Table, uri: str) -> None:
    """Write ``table`` as one Parquet file at ``uri`` atomically: a hidden temp file beside it, then a rename.

    A reader (``read_table``, ``pyarrow.parquet.read_table`` of the folder) sees the whole file or none:
    the temp name starts with ``.`` (ignored by pyarrow's dataset discovery) and does not end in
    ``.parquet``. Writing the same ``uri`` twice replaces the file (a retried batch never duplicates rows).
    """
    import uuid

    fs, path = fs_and_path(uri)
    folder, name = posixpath.split(path)
    fs.makedirs(folder, exist_ok=True)
    tmp = posixpath.join(folder, f".{name}.{uuid.uuid4().hex[:8]}.tmp")
    with fs.open(tmp, "wb") as f:
        pq.write_table(table, f)
    fs.mv(tmp, path)


def remove_temp_files(uri: str) -> int:
    """Delete the hidden ``.*.tmp`` files a killed writer left under ``uri``; returns how many."""
    fs, root = fs_and_path(uri)
    if not fs.exists(root):
        return 0
    stale = [f for f in fs.find(root) if posixpath.basename(f).startswith(".") and f.endswith(".tmp")]
    for f in stale:
        fs.rm(f)
    return len(stale)


def compact(uri: str, key: tuple[str, ...], rank=None) -> int:
    """Keep one row per ``key`` under ``uri``: the row of highest ``rank(row)`` (ties: the newest file).

    Files holding a superseded row are rewritten without it (atomically, see :func:`write_table`) or
    deleted when nothing is left. Use after a retried row (a new attempt, a re-judged error) was written
    beside the old one, so that every key is stored exactly once. Returns the number of rows dropped.

    Args:
        uri: folder of Parquet files (searched recursively).
        key: the key columns, e.g. ``("sample_id", "config", "mode")``.
        rank: ``row -> comparable``; default ranks every row the same (the newest file wins).
    """
    fs, root = fs_and_path(uri)
    if not fs.exists(root):
        return 0
    files = sorted((f for f in fs.find(root) if f.endswith(".parquet")), key=lambda f: (_mtime(fs, f), f))
    best: dict[tuple, tuple] = {}  # key -> (rank, file order, file, row index)
    tables = {}
    for order, f in enumerate(files):
        try:
            with fs.open(f, "rb") as fh:
                t = pq.read_table(fh)
        except PARSE_ERRORS:  # unreadable or not Parquet: read_table quarantines it; leave it alone here
            continue
        tables[f] = t
        cols = [t.column(c).to_pylist() for c in key]
        rows = t.to_pylist() if rank is not None else None
        for i, k in enumerate(zip(*cols)):
            cand = (rank(rows[i]) if rank is not None else 0, order, f, i)
            if k not in best or cand[:2] >= best[k][:2]:
                best[k] = cand
    keep: dict[str, set[int]] = {f: set() for f in tables}
    for _, _, f, i in best.values():
        keep[f].add(i)
    dropped = 0
    for f, t in tables.items():
        if len(keep[f]) == t.num_rows:
            continue
        dropped += t.num_rows - len(keep[f])
        if keep[f]:
            write_table(t.take(sorted(keep[f])), fs.unstrip_protocol(f) if hasattr(fs, "unstrip_protocol") else f)
        else:
            fs.rm(f)
    return dropped


def _mtime(fs, path: str) -> float:
    try:
        m = fs.modified(path)
        return m.timestamp()
    except (NotImplementedError, AttributeError, KeyError, OSError):  # no modification times here: name order decides
        return 0.0
