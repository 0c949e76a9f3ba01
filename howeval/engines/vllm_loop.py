"""The vllm engine's loop: one thread owns the offline ``vllm.LLM`` and keeps it stepping while callers add batches.

vLLM's offline API is single-threaded: ``LLM.enqueue_chat`` adds requests, ``LLM.wait_for_completion``
steps until *every* queued request is done. Called one batch at a time, the engine drains to the batch's
longest answer before the next batch arrives, and its slots stand empty for the long tail (issue 20).

:class:`EngineLoop` removes the drain. Callers (``VLLMEngine.generate``, from as many threads as the
stage actor's ``max_concurrency``) put a batch on an inbox and wait; the loop thread, the only code that
touches the ``LLM``, renders and adds each waiting batch's requests between two engine steps and hands
every finished output back to the batch that asked for it. While several batches are in flight the
engine keeps running sequences of all of them, so a batch's long answers overlap the next batches'
short ones: continuous batching across ``generate`` calls. With one caller it behaves as before.

Failures stay on rows: a request vLLM refuses (too long, images to a text-only model) fails alone; an
engine step that raises (the engine died) ends every in-flight row with the reason, and every later
row gets the same reason at once (a dead engine does not come back; the actor's restart does that).

Images are prepared before a batch reaches the loop (issue 32): ``submit`` runs ``prepare`` (for the
vllm engine :func:`howeval.engines.vllm_inputs.prepare_images`: data URLs decoded to RGB ``PIL`` images)
on a small thread pool of its own, on the caller's side, and only then puts the batch on the inbox, so
decoding a batch of 64-128 images never stops the sequences in flight. A request whose preparation
fails gets the reason on its own row (``image: ...``) and is not sent; the others run. The loop thread
itself only enqueues prepared requests and steps.

Only ``llm.enqueue_chat`` and ``llm.llm_engine.{step, has_unfinished_requests}`` are used, so the loop
is tested on CPU with a fake ``LLM`` (tests/cpu/engines/test_vllm_loop.py).
"""
from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from howeval.engines.base import ChatRequest, Completion
from howeval.parsing.reasoning import split_reasoning
from howeval.timing import mark


def one_line(e: BaseException) -> str:
    """``Type: message`` of ``e`` on one line, at most 400 characters."""
    return " ".join(f"{type(e).__name__}: {e}".split())[:400]


def error_completion(req: ChatRequest, reason: str) -> Completion:
    """The error row for ``req`` (``finish_reason`` "error", ``reason`` kept)."""
    return Completion(text="", finish_reason="error", error=reason, request_id=req.request_id)


class _Batch:
    """One ``generate`` call waiting in the loop: its requests (as the caller gave them), what is sent for
    each (prepared: images decoded), their completions (a row that failed preparation already has its
    error), rows still running."""

    __slots__ = ("requests", "sent", "out", "left", "done", "t0")

    def __init__(self, requests: list[ChatRequest]):
        self.requests = requests
        self.sent: list[ChatRequest] = list(requests)
        self.out: list[Completion | None] = [None] * len(requests)
        self.left = 0
        self.done = threading.Event()
        self.t0 = time.perf_counter()


class EngineLoop:
    """A thread that owns ``llm`` (a ``vllm.LLM``); :meth:`submit` may be called from any number of threads.

    Args:
        llm: the offline engine; only this loop's thread may use it after construction.
        params: ``ChatRequest -> vllm.SamplingParams`` (called on the loop thread, once per request).
        name: the thread's name.
        prepare: ``ChatRequest -> ChatRequest`` run before a request is queued, off the loop thread (the
            vllm engine: :func:`howeval.engines.vllm_inputs.prepare_images`); an exception it raises
            becomes that row's error (``image: <Type>: <message>``). None = requests are sent as given.
        needs_prepare: ``ChatRequest -> bool``: whether ``prepare`` has work for a request (requests
            without are not sent through the pool; a batch with none is queued at once). None = all.
        prepare_workers: threads of the preparation pool (>= 1), shared by every caller of :meth:`submit`.

    Attributes:
        prepare_s: seconds the pool's threads spent in ``prepare`` so far (all batches, summed).

    Raises:
        ValueError: ``prepare_workers`` < 1.
    """

    def __init__(self, llm: Any, params: Callable[[ChatRequest], Any], name: str = "vllm-engine-loop",
                 prepare: Callable[[ChatRequest], ChatRequest] | None = None,
                 needs_prepare: Callable[[ChatRequest], bool] | None = None, prepare_workers: int = 2):
        if prepare_workers < 1:
            raise ValueError(f"prepare_workers must be >= 1, got {prepare_workers}")
        self.llm = llm
        self.params = params
        self.prepare = prepare
        self.needs_prepare = needs_prepare
        self.prepare_s = 0.0
        self._pool = (ThreadPoolExecutor(prepare_workers, thread_name_prefix=f"{name}-prepare")
                      if prepare is not None else None)
        self.failed: str | None = None  # set once the engine died: every later row gets this reason
        self.in_flight = 0  # rows in the engine now (added, not finished)
        self.peak_in_flight = 0  # the most rows ever in the engine at once
        self.batches = 0  # batches taken into the engine so far
        self._inbox: queue.SimpleQueue[_Batch] = queue.SimpleQueue()
        self._owner: dict[str, tuple[_Batch, int, str]] = {}  # vLLM request id -> (batch, row, its other id)
        self._lock = threading.Lock()  # orders `failed` against the inbox: no batch is left waiting
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, requests: list[ChatRequest]) -> list[Completion]:
        """Run ``requests`` in the shared engine; blocks until each has a Completion (in order).

        Thread-safe: concurrent calls share the engine's running batch.
        """
        if not requests:
            return []
        b = _Batch(requests)
        self._prepare(b)
        with self._lock:
            if self.failed is None:
                self._inbox.put(b)
                queued = True
            else:
                queued = False
        if not queued:
            return [error_completion(r, self.failed or "vllm engine: stopped") for r in requests]
        b.done.wait()
        return b.out  # type: ignore[return-value]

    def _prepare(self, b: _Batch) -> None:
        """Run ``prepare`` on ``b``'s requests on the pool (the caller's side, never the loop thread);
        a failure is kept on its row."""
        if self._pool is None:
            return
        todo = [i for i, r in enumerate(b.requests) if self.needs_prepare is None or self.needs_prepare(r)]
        if not todo:
            return

        def one(i: int) -> tuple[int, ChatRequest | None, str | None, float]:
            t0 = time.perf_counter()
            try:
                return i, self.prepare(b.requests[i]), None, time.perf_counter() - t0  # type: ignore[misc]
            except Exception as e:  # noqa: BLE001 - a bad image fails its own row only
                return i, None, f"image: {one_line(e)}", time.perf_counter() - t0

        for i, sent, err, dt in self._pool.map(one, todo):
            with self._lock:
                self.prepare_s += dt
            if err is None:
                b.sent[i] = sent  # type: ignore[assignment]
            else:
                b.out[i] = error_completion(b.requests[i], err)

    # -- the loop thread -----------------------------------------------------------------------------
    def _run(self) -> None:
        engine = self.llm.llm_engine
        try:
            while True:
                b = self._inbox.get() if not self._owner else self._next()
                while b is not None:  # every batch waiting now joins before the next step
                    self._add(b)
                    b = self._next()
                if not self._owner:
                    continue
                if engine.has_unfinished_requests():
                    for res in engine.step():
                        if res.finished:
                            self._finish(res)
                if not engine.has_unfinished_requests() and self._owner:
                    self._orphans("vllm: the engine returned no output for this request")
        except BaseException as e:  # noqa: BLE001 - the engine died (or this loop has a bug): every waiting row gets the reason
            self._die(f"vllm engine: {one_line(e)}")

    def _next(self) -> _Batch | None:
        try:
            return self._inbox.get_nowait()
        except queue.Empty:
            return None

    def _add(self, b: _Batch) -> None:
        if self.batches == 0:
            mark("first_request")
        self.batches += 1
        for i, r in enumerate(b.sent):
            if b.out[i] is not None:  # failed preparation: its error row is already there
                continue
            try:
                (rid,) = self.llm.enqueue_chat([r.messages], self.params(r), use_tqdm=False,
                                               chat_template_kwargs=r.chat_template_kwargs or None)
            except Exception as e:  # noqa: BLE001 - vLLM refused this request: the error is kept on its row only
                b.out[i] = error_completion(r, f"vllm: {one_line(e)}")
                continue
            # vLLM returns its internal id "<external>-<8 random chars>"; outputs carry the external one
            rid = str(rid)
            ext = rid.rsplit("-", 1)[0]
            self._owner[rid] = (b, i, ext)
            self._owner[ext] = (b, i, rid)
            b.left += 1
            self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        if b.left == 0:
            b.done.set()

    def _finish(self, res: Any) -> None:
        hit = self._owner.pop(str(res.request_id), None)
        if hit is None:
            return
        b, i, other = hit
        self._owner.pop(other, None)
        r = b.requests[i]
        o = res.outputs[0]
        finish = o.finish_reason or "stop"
        sp = split_reasoning(o.text, finish_reason=finish, opener_in_template=r.reasoning_opener_in_template)
        b.out[i] = Completion(text=sp.response, reasoning=sp.reasoning, finish_reason=finish, truncated=sp.truncated,
                              prompt_tokens=len(res.prompt_token_ids or []), completion_tokens=len(o.token_ids),
                              latency_s=time.perf_counter() - b.t0, raw=o.text, request_id=r.request_id)
        self._row_done(b)

    def _row_done(self, b: _Batch) -> None:
        self.in_flight -= 1
        b.left -= 1
        if b.left == 0:
            mark("answers", rows=len(b.requests), peak_in_flight=self.peak_in_flight)
            b.done.set()

    def _orphans(self, reason: str) -> None:
        """Every row still owned ends with ``reason`` (its batch is released)."""
        for b, i, _ in list(self._owner.values()):  # each row is there twice (both of its ids)
            if b.out[i] is None:
                b.out[i] = error_completion(b.requests[i], reason)
                self._row_done(b)
        self._owner.clear()

    def _die(self, reason: str) -> None:
        with self._lock:
            self.failed = reason
        self._orphans(reason)
        while (b := self._next()) is not None:
            b.out = [error_completion(r, reason) for r in b.requests]
            b.done.set()
