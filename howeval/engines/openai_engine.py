"""The ``openai`` engine: any OpenAI-compatible chat server (vLLM's OpenAI server, hosted APIs).

Images go as data-URL ``image_url`` parts; ``chat_template_kwargs`` travel in ``extra_body`` (vLLM's
convention); ``reasoning_effort`` as the API parameter.

Flow control (issue 11), all per engine instance and shared by every ``generate`` call on it:

- **In-flight window.** One long-lived pool of ``max_concurrency`` workers serves every batch: calls of
  ``generate`` from several threads (an actor running several batches at once) share the window, so a
  long answer holds one slot, not a whole batch's slots. :meth:`OpenAIEngine.submit` returns a future.
- **Retries at the I/O boundary** (the client's own retries are off: this loop does what the SDK's cannot,
  one ``Retry-After`` pause for the whole endpoint, the breaker and the per-request deadline):
  408/409/429/5xx, connection failures and timeouts are retried up to ``max_retries`` times, each attempt
  logged. A ``Retry-After`` (or ``retry-after-ms``) header on 429/503 pauses *every* request to the
  endpoint until that time; without one, exponential backoff (``backoff_s x 2^attempt``, capped at 8 s)
  with the SDK's own jitter (up to 25% shorter, at random per retry), so the threads of a window that
  failed together do not retry in lockstep.
- **Per-request deadline** ``deadline_s``: attempts, backoff and Retry-After waits together; a wait that
  would pass it ends the request at once with the reason.
- **Circuit breaker.** ``breaker_failures`` consecutive connection failures or timeouts (any HTTP answer
  resets the count) mark the endpoint down: every request still queued or retrying, and every later one,
  is recorded at once as ``endpoint unavailable (...)``. Those rows are errors, retried by the next run.

A request that fails is a Completion with ``error`` set; it is never dropped and never turned into an
answer.
"""
from __future__ import annotations

import email.utils
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from howeval.config.engines import OpenAIOptions
from howeval.engines.base import ChatRequest, Completion
from howeval.engines.generation import request_overrides
from howeval.parsing.reasoning import closes_unopened_reasoning, split_reasoning

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
"""HTTP statuses worth another attempt; any other status fails the request at once."""
RETRY_AFTER_STATUS = frozenset({429, 503})
"""Statuses whose ``Retry-After`` header pauses the whole endpoint."""
MAX_BACKOFF_S = 8.0
UNAVAILABLE = "endpoint unavailable"
"""Prefix of the error recorded on rows once the breaker is open (``error: endpoint unavailable (...)``)."""


class RateLimiter:
    """Spaces request starts at least ``1/qps`` seconds apart across threads (qps=None: no limit).

    Args:
        qps: requests per second (> 0), or None for no limit.
        clock, sleep: the time source and the sleep (seconds); tests inject fakes.
    """

    def __init__(self, qps: float | None, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        if qps is not None and not qps > 0:
            raise ValueError(f"qps must be > 0 or None, got {qps!r}")
        self.interval = 1.0 / qps if qps else 0.0
        self._next = 0.0
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep

    def wait(self) -> None:
        """Block until this request's start slot (the previous slot + ``1/qps``, or now if that passed)."""
        if not self.interval:
            return
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            self._sleep(start - now)


def retry_after_s(headers, now_wall: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` / ``retry-after-ms`` header asks to wait, or None when absent/unreadable.

    Accepts delta-seconds (``"7"``, ``"1.5"``), an HTTP date (RFC 9110 section 10.2.3) and the
    ``retry-after-ms`` extension. Negative values read as 0.

    >>> retry_after_s({"retry-after": "7"})
    7.0
    >>> retry_after_s({"retry-after-ms": "250"})
    0.25
    """
    if headers is None:
        return None
    get = headers.get
    ms = get("retry-after-ms") or get("Retry-After-Ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    ra = get("retry-after") or get("Retry-After")
    if ra is None:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(ra).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when - (time.time() if now_wall is None else now_wall))


class EndpointState:
    """Shared state of one endpoint: the Retry-After pause and the circuit breaker (thread-safe).

    Args:
        breaker_failures: consecutive connection failures/timeouts that mark the endpoint down (0: never).
        clock: monotonic seconds (injected in tests).
    """

    def __init__(self, breaker_failures: int, clock: Callable[[], float] = time.monotonic):
        self.breaker_failures = breaker_failures
        self.clock = clock
        self.paused_until = 0.0
        self.consecutive = 0
        self.down_reason: str | None = None
        self.down = threading.Event()
        self._lock = threading.Lock()

    def pause(self, seconds: float) -> None:
        """Hold every request start until ``now + seconds`` (a Retry-After)."""
        with self._lock:
            self.paused_until = max(self.paused_until, self.clock() + seconds)

    def answered(self) -> None:
        """The endpoint sent an HTTP answer (any status): it is reachable."""
        with self._lock:
            self.consecutive = 0

    def unreachable(self, reason: str) -> bool:
        """Count a connection failure or timeout; True when this one opens the breaker."""
        with self._lock:
            self.consecutive += 1
            if self.down_reason is None and self.breaker_failures and self.consecutive >= self.breaker_failures:
                self.down_reason = f"{self.consecutive} consecutive connection failures or timeouts; last: {reason}"
                self.down.set()
                return True
        return False


class OpenAIEngine:
    """OpenAI-compatible chat engine; see the module docstring for the flow control.

    Args:
        model: the served model name.
        options: validated :class:`OpenAIOptions`.
        clock / sleep: monotonic clock and sleep function (tests inject them to check waits without
            waiting). The default sleep wakes early when the breaker opens.
        jitter: ``() -> float`` in [0, 1): the random draw of each backoff's jitter (default
            ``random.random``; tests inject a fixed one).

    Raises:
        ValueError: empty ``model`` or an unset ``base_url_env`` variable.
    """

    name = "openai"
    supports_images = True

    def __init__(self, model: str, options: OpenAIOptions | None = None, *,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] | None = None,
                 jitter: Callable[[], float] | None = None):
        import random

        from openai import OpenAI

        self.options = o = options or OpenAIOptions()
        if not model:
            raise ValueError("openai engine: 'model' (the served model name) is required")
        self.model_name = model
        base_url = o.base_url or (os.environ.get(o.base_url_env) if o.base_url_env else None)
        if o.base_url_env and not base_url:
            raise ValueError(f"openai engine: environment variable {o.base_url_env} (options.base_url_env) is not set")
        # a remote endpoint without its key would answer every call 401: fail here, naming the variable
        # (the same check as the jobs' preflight, so a judge or LLM verifier built in an actor fails at start)
        from howeval.config.preflight import check_endpoint

        problems = [p for p in check_endpoint(o.model_dump(), "options", f"openai engine for {model!r}", os.environ)
                    if ".api_key_env:" in p]
        if problems:
            raise ValueError(problems[0])
        self.base_url = base_url
        api_key = os.environ.get(o.api_key_env) or "EMPTY"  # local servers accept any key
        self.client = OpenAI(base_url=base_url, api_key=api_key, timeout=o.timeout_s, max_retries=0)
        self.clock = clock
        self._jitter = jitter or random.random
        self.endpoint = EndpointState(o.breaker_failures, clock)
        self._sleep = sleep or (lambda s: self.endpoint.down.wait(s))
        self.limiter = RateLimiter(o.qps, clock=clock, sleep=self._sleep)
        self._pool = ThreadPoolExecutor(max_workers=o.max_concurrency, thread_name_prefix="openai-engine")
        # chat_template_kwargs (JSON) -> True once an answer closed a reasoning block it never opened: the
        # server's template pre-fills <think>, so a later answer cut by the length limit with no tag at all
        # is truncated inside its reasoning (no answer), never taken as the answer
        self.opener_in_template: dict[str, bool] = {}

    # -- public ---------------------------------------------------------------------------------------
    def submit(self, req: ChatRequest) -> Future:
        """Queue one request in the shared in-flight window; the future's result is its Completion."""
        return self._pool.submit(self._run, req)

    def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        """One Completion per request, in order (safe to call from several threads at once)."""
        futures = [self.submit(r) for r in requests]
        return [f.result() for f in futures]

    def close(self) -> None:
        """Stop the worker pool (queued requests still finish)."""
        self._pool.shutdown(wait=False)

    # -- one request ----------------------------------------------------------------------------------
    def _body(self, req: ChatRequest) -> dict:
        kw: dict = {"model": self.model_name, "messages": req.messages, self.options.max_tokens_param: req.max_tokens}
        # sampling fields the request sets; the others are left out so the server applies the model's defaults
        sampling = request_overrides(req)
        kw.update({k: sampling.pop(k) for k in ("temperature", "top_p", "presence_penalty") if k in sampling})
        if req.seed is not None:
            kw["seed"] = req.seed
        if req.reasoning_effort:
            kw["reasoning_effort"] = req.reasoning_effort
        if req.tools:
            kw["tools"] = req.tools
        if req.response_format:
            kw["response_format"] = req.response_format
        extra = {**sampling, **self.options.extra_body, **req.extra_body}  # top_k, min_p, repetition_penalty: vLLM's extras
        if req.chat_template_kwargs:
            extra["chat_template_kwargs"] = req.chat_template_kwargs
        if extra:
            kw["extra_body"] = extra
        return kw

    def _error(self, req: ChatRequest, t0: float, reason: str) -> Completion:
        return Completion(text="", finish_reason="error", error=reason[:500], latency_s=self.clock() - t0,
                          request_id=req.request_id)

    def _unavailable(self, req: ChatRequest, t0: float) -> Completion:
        return self._error(req, t0, f"{UNAVAILABLE} ({self.base_url or 'default base URL'}: "
                                    f"{self.endpoint.down_reason}); retried by the next run")

    def _run(self, req: ChatRequest) -> Completion:
        import openai

        o, ep = self.options, self.endpoint
        t0 = self.clock()
        deadline = t0 + o.request_deadline_s
        kw = self._body(req)
        last = "no attempt made"
        for attempt in range(o.max_retries + 1):
            if ep.down.is_set():
                return self._unavailable(req, t0)
            wait = ep.paused_until - self.clock()
            if wait > 0:
                if self.clock() + wait >= deadline:
                    return self._error(req, t0, f"deadline: the endpoint asked to wait {wait:.1f} s, past this request's "
                                                f"deadline_s={o.request_deadline_s:g}; last: {last}")
                self._sleep(wait)
                if ep.down.is_set():
                    return self._unavailable(req, t0)
            self.limiter.wait()
            remaining = deadline - self.clock()
            if remaining <= 0:
                return self._error(req, t0, f"deadline: no answer within deadline_s={o.request_deadline_s:g}; last: {last}")
            try:
                resp = self.client.chat.completions.create(**kw, timeout=min(o.timeout_s, remaining),
                                                           extra_headers={"x-stainless-retry-count": str(attempt)})
            except openai.APIConnectionError as e:  # includes APITimeoutError: no HTTP answer
                last = f"{type(e).__name__}: {str(e)[:200]}"
                if ep.unreachable(last):
                    log.warning("openai engine: %s marked down: %s", self.base_url, ep.down_reason)
                delay = self._backoff(attempt)
            except openai.APIStatusError as e:
                ep.answered()
                last = f"{type(e).__name__}: {str(e)[:300]}"
                if e.status_code not in RETRY_STATUS:
                    return self._error(req, t0, last)
                ra = retry_after_s(e.response.headers) if e.status_code in RETRY_AFTER_STATUS else None
                if ra is not None:
                    ep.pause(ra)
                    delay = 0.0  # the endpoint pause covers it
                else:
                    delay = self._backoff(attempt)
            except Exception as e:  # noqa: BLE001 - a malformed answer, a client-side bug: on the row, not retried
                ep.answered()
                return self._error(req, t0, f"{type(e).__name__}: {str(e)[:300]}")
            else:
                ep.answered()
                return self._completion(req, resp, t0)
            log.info("openai engine: attempt %d/%d of %s failed: %s", attempt + 1, o.max_retries + 1,
                     req.request_id, last)
            if attempt < o.max_retries and delay:
                if self.clock() + delay >= deadline:
                    return self._error(req, t0, f"deadline: no answer within deadline_s={o.request_deadline_s:g}; last: {last}")
                self._sleep(delay)
        if ep.down.is_set():
            return self._unavailable(req, t0)
        return self._error(req, t0, last)

    def _backoff(self, attempt: int) -> float:
        """``backoff_s x 2^attempt`` capped at :data:`MAX_BACKOFF_S`, then up to 25% shorter at random (the
        openai SDK's own jitter: ``x (1 - 0.25 x U[0, 1))``)."""
        return min(MAX_BACKOFF_S, self.options.backoff_s * 2 ** attempt) * (1 - 0.25 * self._jitter())

    def _completion(self, req: ChatRequest, resp, t0: float) -> Completion:
        try:
            choice = resp.choices[0]
            msg = choice.message
        except (AttributeError, IndexError, TypeError) as e:
            return self._error(req, t0, f"malformed answer (no choices): {type(e).__name__}: {e}")
        content = msg.content or ""
        server_r = getattr(msg, "reasoning_content", None) or getattr(msg, "reasoning", None)
        finish = choice.finish_reason or "stop"
        switch = json.dumps(req.chat_template_kwargs or {}, sort_keys=True, default=str)
        if server_r is None and closes_unopened_reasoning(content):
            self.opener_in_template[switch] = True  # the server's template pre-fills <think> for this switch
        sp = split_reasoning(content, finish_reason=finish, server_reasoning=server_r,
                             opener_in_template=req.reasoning_opener_in_template or self.opener_in_template.get(switch, False))
        calls = None
        if getattr(msg, "tool_calls", None):
            calls = [{"id": c.id, "type": "function",
                      "function": {"name": c.function.name, "arguments": c.function.arguments}} for c in msg.tool_calls]
        usage = resp.usage
        return Completion(
            text=sp.response, reasoning=sp.reasoning, finish_reason=finish, truncated=sp.truncated,
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0, completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            latency_s=self.clock() - t0, tool_calls=calls, raw=content, request_id=req.request_id,
        )
