"""The reward server's LLM fallback for answers the verifier's rules cannot decide (SPEC section 2:
"unresolved cases go to an LLM judge"; issue 21: without it about a fifth of real answers got reward 0).

:class:`LLMFallback` grades unresolved items through an OpenAI-compatible ``POST {base_url}/chat/completions``
endpoint, with the sweep's grading prompt and verdict parser (``howeval.judges.verify.LLMVerifier``), so a
trainer's reward and a sweep's verdict read the same question the same way. Async (the ingress awaits it
beside PatternRM and the step scorer); per process:

- a cache of verdicts by a SHA-256 of (question, response, answer, answer_type, options): a rollout scored
  twice (GRPO re-scores, retries) costs one call; failures are never cached;
- at most ``max_concurrency`` calls in flight (an ``asyncio.Semaphore``), the rest wait their turn;
- each item bounded by ``timeout_s`` from the moment it is asked, the wait for a free slot and the whole
  answer included; a failure (connection, status, timeout, unparseable reply) is a verdict
  ``correct=None, method="llm_error"`` with its reason, never a default;
- a failover window like the ingress's for PatternRM and the step scorer (issue 35: one hung verifier
  turned half the requests into 504s): when a call the verifier took a slot for times out or cannot
  connect, every call waiting on it or in flight is answered at once ``llm verifier: failing over: ...``,
  and for ``failover_s`` seconds new items are answered so without a call; after the window the first
  item asked starts one background call (it is answered failing over itself: no request waits on a verifier
  known to be down), whose answer closes the failover. A status error (4xx/5xx answered at once) fails only
  its own item.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from howeval.config.base import StrictModel

log = logging.getLogger(__name__)

__all__ = ["LLMFallbackConfig", "LLMFallback", "verdict_key"]


class _FailingOver(Exception):
    """A call that got its slot after the verifier was found down: answered without a call."""


class LLMFallbackConfig(StrictModel):
    """Where and how the reward server asks an LLM about unresolved answers (``on_unresolved: llm``)."""

    base_url: str = Field(..., description="OpenAI-compatible API root ending in /v1, e.g. http://verifier:8000/v1 (a vLLM server).")
    model: str = Field(..., description="Model name sent in each request.")
    api_key_env: str | None = Field(None, description="Env var holding the API key (sent as a bearer token); None = no key.")
    max_concurrency: int = Field(8, ge=1, description="Calls in flight at once per ingress replica; more wait.")
    timeout_s: float = Field(20.0, gt=0, description="Budget of one call, whole answer included; past it the row degrades.")
    max_tokens: int = Field(256, ge=16, description="Judge completion budget.")
    cache_size: int = Field(50_000, ge=0, description="Verdicts kept (LRU, by a hash of question/response/answer); 0 disables.")


def verdict_key(item: Mapping[str, Any]) -> str:
    """Cache key of one item: SHA-256 hex of its question, response, answer, answer_type and options.

    >>> verdict_key({"prompt": "q", "response": "r", "answer": "1", "answer_type": "free_form"})[:12]
    '710258a90da0'
    """
    blob = json.dumps([item.get("prompt") or item.get("question") or "", item["response"], str(item["answer"]),
                       item["answer_type"], list(item.get("options") or [])], ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


class LLMFallback:
    """Async LLM grading of unresolved items; see the module docstring.

    Args:
        cfg: :class:`LLMFallbackConfig`.
        transport: an ``httpx.AsyncBaseTransport`` for tests; None = the network.
        failover_s: the failover window in seconds (the reward server passes its ``FAILOVER_S``, 5 s, the
            window of PatternRM and the step scorer).

    ``await verify(items)`` -> one ``{"correct": bool | None, "method": "llm" | "llm_error", "reason": str}``
    per item (``prompt``/``question``, ``response``, ``answer``, ``answer_type``, ``options?``), in order.
    Counters: ``n_calls`` (HTTP calls made), ``n_cached`` (answers served from the cache).
    """

    def __init__(self, cfg: LLMFallbackConfig, transport: Any = None, failover_s: float = 5.0):
        import httpx

        from howeval.judges.verify import LLMVerifier

        self.cfg = cfg
        key = os.environ.get(cfg.api_key_env) if cfg.api_key_env else None
        if cfg.api_key_env and not key:
            raise ValueError(f"llm_verifier.api_key_env={cfg.api_key_env!r} is not set")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.AsyncClient(timeout=cfg.timeout_s, headers=headers, transport=transport)
        self._prompt = LLMVerifier.__new__(LLMVerifier)  # its prompt builder and parser only (no engine)
        self._prompt.max_tokens, self._prompt.max_response_chars = cfg.max_tokens, 6000
        self._sem: asyncio.Semaphore | None = None
        self._cache: OrderedDict[str, dict] = OrderedDict()
        self.n_calls = self.n_cached = 0
        self.failover_s = float(failover_s)
        self._down_until = 0.0  # loop time the failover window ends
        self._down_reason = ""
        self._inflight: set[asyncio.Task] = set()  # calls (slot wait + HTTP) to answer at once when the verifier goes down
        self._probing: asyncio.Task | None = None  # the one background call that tries a failed-over verifier again

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _post(self, body: dict, state: dict, probe: bool = False) -> Any:
        """Wait for a slot, then make the call; the parsed choice as a ``Completion``. Raises on any failure
        (:class:`_FailingOver` when the verifier was found down while this call waited, unless ``probe``)."""
        from howeval.engines.base import Completion

        if self._sem is None:
            self._sem = asyncio.Semaphore(self.cfg.max_concurrency)
        async with self._sem:
            if self._down_reason and not probe:
                raise _FailingOver()
            state["posting"] = True
            self.n_calls += 1
            r = await self._http.post(self.cfg.base_url.rstrip("/") + "/chat/completions", json=body)
            if r.status_code >= 300:
                raise RuntimeError(f"HTTP {r.status_code}: {r.text[:200]}")
            choice = r.json()["choices"][0]
            return Completion(text=choice["message"].get("content") or "", finish_reason=choice.get("finish_reason") or "stop")

    def _went_down(self, why: str) -> dict:
        """The verifier failed for unavailability: open the failover window and answer every waiting call now."""
        self._down_until = asyncio.get_running_loop().time() + self.failover_s
        self._down_reason = why
        log.warning("llm verifier unavailable (%s): failing over for %.1f s, %d waiting calls answered now",
                    why, self.failover_s, len(self._inflight))
        for t in list(self._inflight):
            t.cancel()
        return {"correct": None, "method": "llm_error", "reason": f"llm verifier: {why}"}

    def _failing_over(self) -> dict:
        left = max(0.0, self._down_until - asyncio.get_running_loop().time())
        return {"correct": None, "method": "llm_error",
                "reason": f"llm verifier: failing over: {self._down_reason} (next try in {left:.1f} s)"}

    async def _probe(self, body: dict, key: str) -> None:
        """One call in the background after the window: success closes the failover (and caches the verdict),
        failure opens a new window. No request waits on it."""
        try:
            comp = await asyncio.wait_for(self._post(body, {}, probe=True), self.cfg.timeout_s)
        except asyncio.TimeoutError:
            self._went_down(f"no answer within {self.cfg.timeout_s} s")
            return
        except Exception as e:  # noqa: BLE001 - any failure of the probe keeps the verifier failed over, with its reason
            self._went_down(f"{type(e).__name__}: {str(e)[:200]}")
            return
        finally:
            self._probing = None
        log.warning("llm verifier answers again: failover closed")
        self._down_reason, self._down_until = "", 0.0
        self._keep(key, self._verdict(comp))

    def _verdict(self, comp: Any) -> dict:
        v = self._prompt.parse_verdict(comp)
        return {"correct": v.correct, "method": v.method, "reason": f"llm verifier: {v.reason}" if v.correct is None else v.reason}

    def _keep(self, key: str, out: dict) -> None:
        if out["correct"] is not None and self.cfg.cache_size:
            self._cache[key] = dict(out)
            while len(self._cache) > self.cfg.cache_size:
                self._cache.popitem(last=False)

    async def verify(self, items: Sequence[Mapping[str, Any]]) -> list[dict]:
        return list(await asyncio.gather(*(self._one(it) for it in items)))

    async def _one(self, item: Mapping[str, Any]) -> dict:
        key = verdict_key(item)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            self.n_cached += 1
            return dict(hit)
        req = self._prompt.build_request({"question": item.get("prompt") or item.get("question") or "",
                                          "response": item["response"], "answer": item["answer"],
                                          "answer_type": item["answer_type"], "options": item.get("options")})
        body = {"model": self.cfg.model, "messages": req.messages, "max_tokens": req.max_tokens, "temperature": 0.0}
        if self._down_reason:  # failed over: answered now; past the window one background call tries again
            if self._probing is None and asyncio.get_running_loop().time() >= self._down_until:
                self._probing = asyncio.ensure_future(self._probe(body, key))
            return self._failing_over()
        state = {"posting": False}
        task = asyncio.ensure_future(self._post(body, state))
        self._inflight.add(task)
        try:
            done, _ = await asyncio.wait({task}, timeout=self.cfg.timeout_s)
        except asyncio.CancelledError:  # the request was abandoned: its call goes too
            task.cancel()
            raise
        finally:
            self._inflight.discard(task)
        if not done:
            task.cancel()
            if not state["posting"]:  # every slot taken by slower calls: this item only, the verifier is not judged down
                return {"correct": None, "method": "llm_error",
                        "reason": f"llm verifier: no free slot of {self.cfg.max_concurrency} within {self.cfg.timeout_s} s"}
            return self._went_down(f"no answer within {self.cfg.timeout_s} s")
        if task.cancelled() or isinstance(task.exception(), _FailingOver):  # another call found the verifier down
            return self._failing_over()
        e = task.exception()
        if e is not None:
            import httpx

            if isinstance(e, httpx.TransportError):  # cannot connect, connection dropped, httpx's timeout: down
                return self._went_down(f"{type(e).__name__}: {str(e)[:200]}")
            return {"correct": None, "method": "llm_error", "reason": f"llm verifier: {type(e).__name__}: {str(e)[:200]}"}
        out = self._verdict(task.result())
        self._keep(key, out)
        return out
