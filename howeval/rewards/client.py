"""HTTP client of the reward server.

``RewardClient.score(items)`` posts ``{"items": [...]}`` to ``/v1/rewards`` and returns the ``rewards``
list. Connection errors, timeouts, 429 and 5xx answers are retried, waiting the server's ``Retry-After``
on 429/503 and exponential backoff otherwise (each attempt logged), all within one total deadline; then
it raises :class:`RewardServiceError`. It never returns None or a default
reward: a training step that cannot be scored fails loudly instead of learning from made-up rewards.
Other 4xx answers (bad token, bad item) raise :class:`RewardRequestError` at once: retrying cannot fix them.

The project's one TRL reward function, ``howeval.training.rewards.GRPOReward``, takes ``score`` as its scorer::

    client = RewardClient("http://127.0.0.1:8000")
    trainer = GRPOTrainer(..., reward_funcs=[GRPOReward(client.score, "pattern")])
"""
from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

log = logging.getLogger(__name__)

__all__ = ["RewardClient", "RewardServiceError", "RewardRequestError"]

KINDS = ("base", "pattern", "cpr", "composite")


class RewardServiceError(RuntimeError):
    """The reward server could not be reached or kept failing (5xx, timeouts) through every retry."""


class RewardRequestError(ValueError):
    """The server refused the request (4xx): bad token, invalid item, body too large."""


RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
"""Answers retried (with the server's ``Retry-After`` when it sends one); other 4xx are raised at once."""


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (RFC 9110: delay-seconds or an HTTP-date), or None.

    >>> retry_after_s("2"), retry_after_s("abc"), retry_after_s(None)
    (2.0, None, None)
    """
    if not value:
        return None
    v = value.strip()
    if v.isdigit():
        return float(v)
    try:
        from email.utils import parsedate_to_datetime

        when = parsedate_to_datetime(v).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


class RewardClient:
    """Client of ``POST /v1/rewards``.

    Args:
        url: server root, e.g. ``http://127.0.0.1:10601``.
        token_env: env var with the bearer token, read when the client is made (unset: no header; a
            server with auth then answers 401, raised as :class:`RewardRequestError` naming the variable).
        timeout_s: per-attempt timeout (cut to what is left of the deadline), enforced on the whole attempt:
            connecting, sending, the headers and the body (issue 21: httpx's own timeouts are per socket
            operation, so a server that trickles a byte every few seconds held a call for ever).
        max_retries: retries after the first attempt (so at most ``max_retries + 1`` attempts).
        backoff_s: first retry delay; doubles each retry (capped at 10 s). A 429/503 with ``Retry-After``
            waits what the server asks instead.
        deadline_s: total budget of one ``score`` call, attempts and waits included (default
            ``2 * timeout_s``): a hung server costs one deadline, not ``(max_retries + 1) * timeout_s``.
            A ``Retry-After`` past the deadline fails at once.
        clock, sleep: injectable for tests (``time.monotonic``, ``time.sleep``).
        transport: an ``httpx`` transport (tests: ``httpx.MockTransport``); None = the network.

    The HTTP calls run on a private event loop thread (an ``httpx.AsyncClient`` under
    ``asyncio.wait_for``): a late attempt is cancelled and its connection closed at its budget, so
    ``score`` returns or raises within ``deadline_s`` (plus scheduling slack) whatever the server sends.
    """

    def __init__(self, url: str = "http://127.0.0.1:8000", token_env: str = "HOWEVAL_REWARD_TOKEN",
                 timeout_s: float = 30.0, max_retries: int = 3, backoff_s: float = 0.5,
                 deadline_s: float | None = None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, transport: httpx.BaseTransport | None = None):
        if max_retries < 0:
            raise ValueError(f"max_retries={max_retries!r} must be >= 0")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s={timeout_s!r} must be > 0")
        self.url = url.rstrip("/")
        self.token_env = token_env
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.deadline_s = float(deadline_s) if deadline_s is not None else 2.0 * timeout_s
        if self.deadline_s <= 0:
            raise ValueError(f"deadline_s={deadline_s!r} must be > 0")
        self._clock, self._sleep = clock, sleep
        token = os.environ.get(token_env) if token_env else None
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="reward-client-loop", daemon=True)
        self._thread.start()
        self._http = httpx.AsyncClient(timeout=timeout_s, headers=self._headers, transport=transport)
        self.n_degraded = 0  # rows answered verifier-only since the client was made
        self.n_rows = 0  # rows answered since the client was made

    def close(self) -> None:
        if self._loop.is_closed():
            return
        asyncio.run_coroutine_threadsafe(self._http.aclose(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def _attempt(self, path: str, body: dict, budget: float) -> httpx.Response:
        """One POST, all of it (connect, send, headers, body) within ``budget`` seconds, else
        ``httpx.TimeoutException``."""
        async def go() -> httpx.Response:
            return await asyncio.wait_for(self._http.post(self.url + path, json=body, timeout=budget), budget)

        fut = asyncio.run_coroutine_threadsafe(go(), self._loop)
        try:
            return fut.result(budget + 5.0)
        except (asyncio.TimeoutError, TimeoutError):
            fut.cancel()
            raise httpx.TimeoutException(f"no complete answer within {budget:.1f} s") from None

    def __enter__(self) -> RewardClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _post(self, path: str, body: dict) -> dict:
        attempts = self.max_retries + 1
        end = self._clock() + self.deadline_s
        last: str = ""
        for attempt in range(1, attempts + 1):
            left = end - self._clock()
            if left <= 0:
                break
            wait: float | None = None
            try:
                r = self._attempt(path, body, min(self.timeout_s, left))
            except (httpx.TransportError, httpx.TimeoutException) as e:
                last = f"{type(e).__name__}: {e}"
            else:
                if r.status_code < 300:
                    return r.json()
                if r.status_code not in RETRY_STATUS:
                    hint = f" (is ${self.token_env} set to the server's token?)" if r.status_code == 401 else ""
                    raise RewardRequestError(f"POST {path} -> {r.status_code}{hint}: {r.text[:500]}")
                last = f"HTTP {r.status_code}: {r.text[:300]}"
                if r.status_code in (429, 503):
                    wait = retry_after_s(r.headers.get("retry-after"))
            log.warning("reward server %s%s attempt %d/%d failed: %s", self.url, path, attempt, attempts, last)
            if attempt == attempts:
                break
            delay = wait if wait is not None else min(self.backoff_s * 2 ** (attempt - 1), 10.0)
            left = end - self._clock()
            if delay >= left:
                last += f" (the next attempt would start after {delay:.1f} s, past the {self.deadline_s:.1f} s deadline)"
                break
            self._sleep(delay)
        raise RewardServiceError(f"POST {self.url}{path} failed within the {self.deadline_s:.1f} s deadline "
                                 f"({attempts} attempts at most); last error: {last}")

    def score(self, items: list[dict]) -> list[dict]:
        """Rewards for ``items`` (``prompt, response, answer, answer_type, kind, reference_steps``), in order.

        Raises:
            RewardServiceError: unreachable / 429 / 5xx / timeouts through every retry or the deadline.
            RewardRequestError: any other 4xx answer (bad token, invalid item, body too large).
        """
        if not items:
            return []
        out = self._post("/v1/rewards", {"items": items})
        rewards = out.get("rewards")
        if not isinstance(rewards, list) or len(rewards) != len(items):
            raise RewardServiceError(f"server answered {str(out)[:200]} for {len(items)} items")
        self.n_degraded += sum(bool(r.get("degraded")) for r in rewards)
        self.n_rows += len(rewards)
        return rewards
