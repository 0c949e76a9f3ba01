"""The ``openai`` engine: any OpenAI-compatible chat server (``vllm serve``, hosted APIs).

Images go as data-URL ``image_url`` parts; ``chat_template_kwargs`` travel in ``extra_body`` (vLLM's
convention); ``reasoning_effort`` as the API parameter. Retries and timeouts are the OpenAI client's
own (exponential backoff on 429/5xx/timeouts, ``max_retries``); concurrency is bounded by a thread
pool of ``max_concurrency`` and an optional ``qps`` cap. A request that still fails becomes a
Completion with ``error`` set; it is never dropped and never turned into an answer.
"""
from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from howeval.engines.base import ChatRequest, Completion
from howeval.engines.options import OpenAIOptions
from howeval.parsing.reasoning import split_reasoning


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


class OpenAIEngine:
    """OpenAI-compatible chat engine with bounded concurrency, a qps cap and the client's retries."""

    name = "openai"
    supports_images = True

    def __init__(self, model: str, options: OpenAIOptions | None = None):
        from openai import OpenAI

        self.options = o = options or OpenAIOptions()
        if not model:
            raise ValueError("openai engine: 'model' (the served model name) is required")
        self.model_name = model
        base_url = o.base_url or (os.environ.get(o.base_url_env) if o.base_url_env else None)
        if o.base_url_env and not base_url:
            raise ValueError(f"openai engine: environment variable {o.base_url_env} (options.base_url_env) is not set")
        api_key = os.environ.get(o.api_key_env) or "EMPTY"  # local servers accept any key
        self.client = OpenAI(base_url=base_url, api_key=api_key, timeout=o.timeout_s, max_retries=o.max_retries)
        self.limiter = RateLimiter(o.qps)

    def _one(self, req: ChatRequest) -> Completion:
        self.limiter.wait()
        t0 = time.perf_counter()
        kw: dict = {"model": self.model_name, "messages": req.messages, self.options.max_tokens_param: req.max_tokens,
                    "temperature": req.temperature, "top_p": req.top_p}
        if req.seed is not None:
            kw["seed"] = req.seed
        if req.reasoning_effort:
            kw["reasoning_effort"] = req.reasoning_effort
        if req.tools:
            kw["tools"] = req.tools
        extra = {**self.options.extra_body, **req.extra_body}
        if req.chat_template_kwargs:
            extra["chat_template_kwargs"] = req.chat_template_kwargs
        if extra:
            kw["extra_body"] = extra
        try:
            resp = self.client.chat.completions.create(**kw)
            choice = resp.choices[0]
            msg = choice.message
        except Exception as e:  # after the client's own retries: record on the row
            return Completion(text="", finish_reason="error", error=f"{type(e).__name__}: {str(e)[:300]}",
                              latency_s=time.perf_counter() - t0, request_id=req.request_id)
        content = msg.content or ""
        server_r = getattr(msg, "reasoning_content", None) or getattr(msg, "reasoning", None)
        finish = choice.finish_reason or "stop"
        sp = split_reasoning(content, finish_reason=finish, server_reasoning=server_r,
                             opener_in_template=req.reasoning_opener_in_template)
        calls = None
        if getattr(msg, "tool_calls", None):
            calls = [{"id": c.id, "type": "function",
                      "function": {"name": c.function.name, "arguments": c.function.arguments}} for c in msg.tool_calls]
        usage = resp.usage
        return Completion(
            text=sp.response, reasoning=sp.reasoning, finish_reason=finish, truncated=sp.truncated,
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0, completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            latency_s=time.perf_counter() - t0, tool_calls=calls, raw=content, request_id=req.request_id,
        )

    def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        if not requests:
            return []
        with ThreadPoolExecutor(max_workers=min(self.options.max_concurrency, len(requests))) as pool:
            return list(pool.map(self._one, requests))


def dumps_tool_arguments(args: dict) -> str:
    """Tool-call arguments as the JSON string the OpenAI format carries."""
    return json.dumps(args, separators=(",", ":"))
