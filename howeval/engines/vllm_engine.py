"""The ``vllm`` engine: offline ``vllm.LLM`` inside a GPU actor (install with the ``gpu`` extra).

``vllm`` is imported lazily in ``__init__``: this module imports on any machine, and the request
mapping (:func:`sampling_kwargs`, :func:`group_by_template_kwargs`) is unit-tested without a GPU.
"""
from __future__ import annotations

import time
from collections import defaultdict

from howeval.engines.base import ChatRequest, Completion
from howeval.engines.options import VLLMOptions
from howeval.parsing.reasoning import split_reasoning


def sampling_kwargs(req: ChatRequest) -> dict:
    """``vllm.SamplingParams`` keyword arguments for a request (vLLM's own names)."""
    kw = {"max_tokens": req.max_tokens, "temperature": req.temperature, "top_p": req.top_p}
    if req.seed is not None:
        kw["seed"] = req.seed
    return kw


def llm_kwargs(model: str, options: VLLMOptions) -> dict:
    """``vllm.LLM`` constructor arguments from the engine options."""
    kw = options.model_dump(exclude_none=True)
    return {"model": model, **kw}


def group_by_template_kwargs(requests: list[ChatRequest]) -> dict[str, list[int]]:
    """Indices of requests grouped by their chat_template_kwargs (``LLM.chat`` takes one set per call)."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(requests):
        groups[repr(sorted(r.chat_template_kwargs.items()))].append(i)
    return dict(groups)


class VLLMEngine:
    """Offline vLLM. Raises ImportError with the install hint when vllm is missing."""

    name = "vllm"
    supports_images = True

    def __init__(self, model: str, options: VLLMOptions | None = None):
        try:
            import vllm  # noqa: F401
        except ImportError as e:
            raise ImportError("the vllm engine needs the gpu extra: pip install -e '.[gpu]' (CUDA machine)") from e
        from vllm import LLM

        if not model:
            raise ValueError("vllm engine: 'model' (a path or model folder) is required")
        self.options = options or VLLMOptions()
        self.model_name = model
        self.llm = LLM(**llm_kwargs(model, self.options))

    def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        from vllm import SamplingParams

        out: list[Completion | None] = [None] * len(requests)
        for _, idx in group_by_template_kwargs(requests).items():
            reqs = [requests[i] for i in idx]
            t0 = time.perf_counter()
            try:
                results = self.llm.chat([r.messages for r in reqs], [SamplingParams(**sampling_kwargs(r)) for r in reqs],
                                        chat_template_kwargs=reqs[0].chat_template_kwargs or None, use_tqdm=False)
            except Exception as e:
                for i in idx:
                    out[i] = Completion(text="", finish_reason="error", error=f"vllm: {type(e).__name__}: {e}",
                                        request_id=requests[i].request_id)
                continue
            dt = (time.perf_counter() - t0) / max(1, len(reqs))
            for i, r, res in zip(idx, reqs, results):
                o = res.outputs[0]
                finish = o.finish_reason or "stop"
                sp = split_reasoning(o.text, finish_reason=finish, opener_in_template=r.reasoning_opener_in_template)
                out[i] = Completion(text=sp.response, reasoning=sp.reasoning, finish_reason=finish, truncated=sp.truncated,
                                    prompt_tokens=len(res.prompt_token_ids or []), completion_tokens=len(o.token_ids),
                                    latency_s=dt, raw=o.text, request_id=r.request_id)
        return out  # type: ignore[return-value]
