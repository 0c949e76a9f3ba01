"""The ``replay`` engine: answers from recorded responses (a JSONL file), no model at all.

Use it to score responses generated elsewhere (another harness, a provider's batch API) with this
system's judges and metrics, or to test the pipeline without a model. Each line of ``path`` holds
``sample_id`` (or ``uid``/``id``), optional ``mode`` (NT/T; absent = both), ``response`` and optional
``reasoning``. A request with no recorded response gets a Completion with ``error`` set.
"""
from __future__ import annotations

import time

from howeval.config.engines import ReplayOptions
from howeval.engines.base import ChatRequest, Completion
from howeval.parsing.reasoning import split_reasoning
from howeval.store import iter_jsonl


class ReplayEngine:
    """Looks up ``(sample_id, mode)`` from the request id ``"<sample_id>|<config>|<mode>"``."""

    name = "replay"
    supports_images = True

    def __init__(self, model: str | None, options: ReplayOptions):
        self.options = options
        self.model_name = model or f"replay:{options.path}"
        self.table: dict[tuple[str, str | None], dict] = {}
        for i, row in iter_jsonl(options.path):
            sid = row.get("sample_id") or row.get("uid") or row.get("id")
            if sid is None or "response" not in row:
                raise ValueError(f"{options.path}:{i}: each line needs sample_id (or uid/id) and response")
            self.table[(str(sid), row.get("mode"))] = row

    def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        out = []
        for r in requests:
            sid, _, mode = (r.request_id or "").split("|") if (r.request_id or "").count("|") == 2 else (r.request_id, "", None)
            rec = self.table.get((sid, mode)) or self.table.get((sid, None))
            if self.options.delay_s:
                time.sleep(self.options.delay_s)
            if rec is None:
                out.append(Completion(text="", finish_reason="error", error=f"replay: no recorded response for {sid!r} mode {mode!r}",
                                      request_id=r.request_id))
                continue
            raw = rec["response"] or ""
            sp = split_reasoning(raw, finish_reason=rec.get("finish_reason", "stop"), server_reasoning=rec.get("reasoning"))
            out.append(Completion(text=sp.response, reasoning=sp.reasoning, finish_reason=rec.get("finish_reason", "stop"),
                                  truncated=sp.truncated, completion_tokens=len(raw.split()), latency_s=self.options.delay_s,
                                  raw=raw, request_id=r.request_id))
        return out
