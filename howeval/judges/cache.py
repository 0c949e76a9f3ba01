"""A write-ahead cache of judge calls, so a killed (re-)judge pays no call twice.

Every finished call of an LLM judge (pattern judge, repair, the verifier's LLM fallback) is appended to a
JSON-lines segment file and flushed the moment its completion arrives, before the row it belongs to is
written anywhere. A rerun after a kill (SIGKILL, a preempted node, Ctrl-C) finds those lines and answers
the same requests from the file. Any stage can use it: wrap an engine in :class:`CachingEngine`.

- **Key**: SHA-256 of the judge id (``name@version``: bumping a judge's version misses the cache on
  purpose) and the whole request (messages, so the response text and every image; model parameters;
  ``response_format``). Two identical requests of the same judge are one call.
- **What is stored**: completions without ``error`` that the judge could read (``accept``, e.g. the
  pattern-label parser); a failed call or an unparseable answer is retried on the next run, and a stored
  answer the judge cannot read (written before this check, or by a judge whose parser changed) is not
  replayed: it is asked again.
- **Files**: ``<directory>/<host>-<pid>-<random>.jsonl``, one per process (actors never share a file),
  so appends need no lock across processes. All segments are read at start. A line torn by a kill in the
  middle of a write is skipped.
- Local directories only (appending to object storage is not atomic); the Judger puts the cache in the
  run folder when that is local, else in ``~/.cache/howeval/judge_cache``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from howeval.engines.base import ChatRequest, Completion
from howeval.store import JSONLinesError, iter_jsonl

__all__ = ["JudgeCache", "CachingEngine", "request_key", "judge_cache_dir", "run_judge_cache_dir"]

log = logging.getLogger(__name__)

_COMPLETION_FIELDS = {f.name for f in dataclasses.fields(Completion)}


def request_key(namespace: str, req: ChatRequest) -> str:
    """The cache key of ``req`` for the judge ``namespace`` (its ``name@version``): a hex SHA-256.

    The request id is not part of the key (it names the row, not the question asked).
    """
    body = {k: v for k, v in dataclasses.asdict(req).items() if k != "request_id"}
    blob = json.dumps({"judge": namespace, "request": body}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


class JudgeCache:
    """Completions by key, read from and appended to JSON-lines segments under ``directory``.

    Args:
        directory: a local folder (created if missing).

    Raises:
        ValueError: ``directory`` is a URL (``s3://...``): appends there are not atomic.
    """

    def __init__(self, directory: str | os.PathLike) -> None:
        d = str(directory)
        if "://" in d and not d.startswith("file://"):
            raise ValueError(f"judge cache directory must be local, got {d!r}")
        self.directory = Path(d.removeprefix("file://")).expanduser()
        self.directory.mkdir(parents=True, exist_ok=True)
        self._data: dict[str, dict[str, Any]] = {}
        self._older: dict[str, list[dict[str, Any]]] = {}  # earlier answers of a re-asked key
        self._lock = threading.Lock()
        self._fh = None
        self.path = self.directory / f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"
        not_json: list[JSONLinesError] = []  # lines cut by a kill mid-write
        torn = 0
        for seg in sorted(self.directory.glob("*.jsonl")):
            for _, rec in iter_jsonl(seg, on_error=not_json.append):
                try:
                    self._add(rec["key"], rec["completion"])
                except (KeyError, TypeError):
                    torn += 1  # a line cut by a kill mid-write
        torn += len(not_json)
        if torn:
            log.warning("judge cache %s: skipped %d unreadable line(s)", self.directory, torn)

    def _add(self, key: str, rec: dict[str, Any]) -> None:
        if key in self._data:  # a key answered again (its earlier answer was not readable): keep both
            self._older.setdefault(key, []).append(self._data[key])
        self._data[key] = rec

    def __len__(self) -> int:
        return len(self._data)

    @staticmethod
    def _completion(rec: dict[str, Any]) -> Completion:
        return Completion(**{k: v for k, v in rec.items() if k in _COMPLETION_FIELDS})

    def get(self, key: str) -> Completion | None:
        """The stored completion for ``key`` (the latest stored), or None."""
        rec = self._data.get(key)
        return None if rec is None else self._completion(rec)

    def get_all(self, key: str) -> list[Completion]:
        """Every completion stored for ``key``, latest first (several only when an answer was re-asked)."""
        recs = ([self._data[key]] if key in self._data else []) + self._older.get(key, [])[::-1]
        return [self._completion(r) for r in recs]

    def put(self, key: str, completion: Completion, replace: bool = False) -> None:
        """Append ``completion`` under ``key`` and flush (failed completions are not stored; a key already
        stored is not written again unless ``replace``: a re-asked answer after an unreadable one)."""
        if completion.error is not None:
            return
        rec = dataclasses.asdict(completion)
        line = json.dumps({"key": key, "completion": rec}, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            if key in self._data and not replace:
                return
            if self._fh is None:
                self._fh = open(self.path, "a", encoding="utf-8")
            self._fh.write(line)
            self._fh.flush()  # in the OS before the caller goes on: a killed process loses nothing written
            self._add(key, rec)

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None


class CachingEngine:
    """An engine whose calls go through a :class:`JudgeCache` (same ``generate`` contract as the engine).

    Cached requests are answered from the cache (with the caller's ``request_id``); the others go to the
    wrapped engine, and each completion is written to the cache as soon as it arrives (per request when
    the engine offers ``submit(req) -> Future``, as the openai engine does; after the batch otherwise).

    Args:
        engine: any engine with ``generate(list[ChatRequest]) -> list[Completion]``.
        cache: the cache.
        namespace: the judge id (``name@version``) the calls belong to.
        accept: ``completion -> bool``: True when the judge can read the answer (its parser succeeds).
            Only accepted completions are stored, and a stored one that is not accepted is asked again
            (counted in ``rejected``). None: every completion without ``error`` is accepted.
    """

    def __init__(self, engine: Any, cache: JudgeCache, namespace: str,
                 accept: Callable[[Completion], bool] | None = None) -> None:
        self.engine = engine
        self.cache = cache
        self.namespace = namespace
        self.accept = accept
        self.name = getattr(engine, "name", "engine")
        self.hits = 0
        self.calls = 0
        self.rejected = 0  # stored answers the judge could not read, asked again

    def _ok(self, c: Completion) -> bool:
        if c.error is not None:
            return False
        if self.accept is None:
            return True
        try:
            return bool(self.accept(c))
        except Exception as e:  # noqa: BLE001 - any parser failure reads nothing: not stored, asked again next run
            log.debug("judge cache accept(%s) raised %r", self.namespace, e)
            return False

    def _put(self, key: str, c: Completion) -> None:
        if self._ok(c):
            # written again only when what is stored under the key is not readable (a re-asked answer)
            unreadable = not any(self._ok(x) for x in self.cache.get_all(key))
            self.cache.put(key, c, replace=unreadable)

    def __getattr__(self, item: str) -> Any:  # supports_images, close, model_name, ...
        return getattr(self.engine, item)

    def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        keys = [request_key(self.namespace, r) for r in requests]
        out: list[Completion | None] = []
        for r, k in zip(requests, keys):
            stored = self.cache.get_all(k)
            c = next((x for x in stored if self._ok(x)), None)
            if c is None and stored:
                self.rejected += 1  # stored, but the judge cannot read it: ask again
            out.append(dataclasses.replace(c, request_id=r.request_id) if c is not None else None)
        todo = [i for i, c in enumerate(out) if c is None]
        self.hits += len(requests) - len(todo)
        self.calls += len(todo)
        if not todo:
            return out  # type: ignore[return-value]
        submit = getattr(self.engine, "submit", None)
        if callable(submit):
            futures: dict[int, Future] = {}
            for i in todo:
                f = submit(requests[i])
                f.add_done_callback(lambda fut, k=keys[i]: self._store(k, fut))
                futures[i] = f
            for i, f in futures.items():
                out[i] = f.result()
                self._put(keys[i], out[i])  # done callbacks may still be running: make sure before returning
        else:
            got = self.engine.generate([requests[i] for i in todo])
            if len(got) != len(todo):
                raise RuntimeError(f"engine {self.name!r} returned {len(got)} completions for {len(todo)} requests")
            for i, c in zip(todo, got):
                self._put(keys[i], c)
                out[i] = c
        return out  # type: ignore[return-value]

    def _store(self, key: str, fut: Future) -> None:
        if fut.cancelled() or fut.exception() is not None:
            return
        try:
            self._put(key, fut.result())
        except OSError as e:  # a full disk must not lose the answer in hand; the next run pays again
            log.warning("judge cache write failed: %r", e)


def judge_cache_dir(judges: Any, output_uri: str) -> str | None:
    """Where a run's judge cache lives: ``<run>/judge_cache`` for a local run folder, else a folder under
    ``~/.cache/howeval/judge_cache`` named by the run's URI; None when no judge calls a model
    (``judges`` is a :class:`howeval.config.JudgesConfig`). The cache is per machine: on a cluster
    without a shared local disk a rerun on another node pays again (correct, only slower).
    """
    llm = any(j.kind != "rules" for j in judges.pattern) or judges.verifier.llm_fallback is not None
    if not llm:
        return None
    return run_judge_cache_dir(output_uri)


def run_judge_cache_dir(output_uri: str) -> str:
    """A run's judge cache folder whatever judges it has: ``<run>/judge_cache`` for a local run folder (a
    path or ``file://``), else ``~/.cache/howeval/judge_cache/<sha256(uri)[:16]>`` (an object store cannot
    hold a write-ahead log). Judges keep their own subfolders or namespaces under it.

    >>> run_judge_cache_dir("/runs/r1")
    '/runs/r1/judge_cache'
    """
    if "://" not in output_uri or output_uri.startswith("file://"):
        return str(Path(output_uri.removeprefix("file://")) / "judge_cache")
    digest = hashlib.sha256(output_uri.encode("utf-8")).hexdigest()[:16]
    return str(Path("~/.cache/howeval/judge_cache").expanduser() / digest)
