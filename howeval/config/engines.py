"""Per-engine options, validated strictly: an option an engine does not accept is an error naming it.

``ENGINE_OPTIONS`` maps an engine name to its pydantic options model (STYLE rule 2: a registry, not
conditionals). A model config's ``options:`` block is validated against the model of its ``engine``.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib.metadata
import importlib.util
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from howeval.config.base import StrictModel


class HFOptions(StrictModel):
    """Options of the ``hf`` engine (transformers, CPU or GPU, batched with left padding).

    Besides the engine's own fields (``batch_size``, ``torch_threads``, ``device``), every key is passed to
    the model's ``from_pretrained`` (lmms-eval's ``--model_args``): the fields below (``dtype``,
    ``trust_remote_code``, ``attn_implementation``, ``device_map``, ``revision``, ``gguf_file``) and, flat,
    any other ``from_pretrained`` keyword (``quantization_config``, ``max_memory``, ``subfolder``, ...),
    checked against transformers' names (:data:`howeval.config.hf_known_args.FROM_PRETRAINED_ARGS`): an
    unknown key is an error with the closest name. ``trust_remote_code`` and ``revision`` (and the other
    :data:`~howeval.config.hf_known_args.LOADER_SHARED_ARGS`) also go to the processor / tokenizer;
    ``processor_kwargs`` (``min_pixels``, ``max_pixels``, ...) go to ``AutoProcessor.from_pretrained`` only,
    checked when the engine starts against the loaded processor's own arguments. Example::

        options: {trust_remote_code: true, attn_implementation: sdpa, dtype: bfloat16, device_map: auto,
                  processor_kwargs: {min_pixels: 200704, max_pixels: 1003520}}

    ``torch_dtype`` (transformers' older name) is read as ``dtype``. :meth:`model_kwargs` and
    :meth:`processor_load_kwargs` are what the engine passes, as recorded in the run's provenance.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    gguf_file: str | None = Field(None, description="GGUF file inside the model folder; None for a regular checkpoint. "
                                  "The embedded default sets it to SmolLM2-135M-Instruct.Q4_1.gguf.")
    dtype: Literal["float32", "bfloat16", "float16", "auto"] = Field(
        "float32", description="Weights dtype (from_pretrained's dtype; torch_dtype is read as this): float32 is "
        "fastest on CPU, bfloat16 on recent GPUs; auto = the checkpoint's own.")
    device: str = Field("cpu", description="torch device the model is moved to, e.g. 'cpu' or 'cuda'; with "
                        "device_map the model stays where accelerate places it.")
    batch_size: int = Field(16, ge=1, description="Prompts per generate() call; larger is faster until memory runs out.")
    torch_threads: int | None = Field(None, ge=1, description="torch.set_num_threads in the actor; None leaves torch's default.")
    trust_remote_code: bool = Field(False, description="Run the checkpoint's own modelling / processing code (many "
                                    "VLMs need it); passed to the model, processor and tokenizer.")
    attn_implementation: str | None = Field(None, description="Attention kernel: eager, sdpa, flash_attention_2, ...; "
                                            "None = transformers' default for the model.")
    device_map: str | dict[str, Any] | None = Field(None, description="accelerate placement (auto, balanced, "
                                                    "{layer: device}); None = the whole model on `device`.")
    revision: str | None = Field(None, description="Branch, tag or commit of a hub checkpoint (model and processor); "
                                 "None = main.")
    processor_kwargs: dict[str, Any] = Field(default_factory=dict, description="Arguments of the processor "
                                             "(AutoProcessor.from_pretrained), e.g. min_pixels / max_pixels for "
                                             "Qwen2-VL; checked against the loaded processor when the engine starts.")

    @model_validator(mode="before")
    @classmethod
    def _torch_dtype_is_dtype(cls, data: Any) -> Any:
        if isinstance(data, dict) and "torch_dtype" in data:
            if "dtype" in data:
                raise ValueError("give dtype or torch_dtype, not both (torch_dtype is transformers' older name)")
            data = {**data, "dtype": data["torch_dtype"]}
            del data["torch_dtype"]
        return data

    @model_validator(mode="after")
    def _extras_are_from_pretrained_args(self) -> HFOptions:
        from howeval.config.hf_known_args import FROM_PRETRAINED_ARGS, NOT_FROM_YAML, RECORDED_VERSION

        errors = []
        for k, v in sorted((self.model_extra or {}).items()):
            if k in NOT_FROM_YAML:
                msg = ("a from_pretrained argument a config cannot give (a Python object, or it changes what "
                       "from_pretrained returns)")
            elif k not in FROM_PRETRAINED_ARGS:
                accepted = sorted(set(type(self).model_fields) | FROM_PRETRAINED_ARGS - {"torch_dtype"})
                close = difflib.get_close_matches(k, accepted, n=1, cutoff=0.6)
                msg = (f"unknown hf option{f'; did you mean {close[0]!r}?' if close else ':'} Neither an engine option "
                       f"nor a from_pretrained argument (transformers {RECORDED_VERSION}); processor arguments "
                       f"(min_pixels, ...) go under processor_kwargs. Accepted: {', '.join(accepted)}")
            else:
                continue
            errors.append(InitErrorDetails(type=PydanticCustomError("unknown_option", msg), loc=(k,), input=v))
        if errors:  # one error per key, at <path>.options.<key>
            raise ValidationError.from_exception_data(type(self).__name__, errors)
        if self.device_map is not None and "device" in self.model_fields_set:
            raise ValueError(f"give device ({self.device!r}) or device_map ({self.device_map!r}), not both")
        return self

    def model_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of the model's ``from_pretrained``: ``dtype``, the fields set (or not at
        their default) among the from_pretrained ones, and the flat extras."""
        out: dict[str, Any] = {"dtype": self.dtype}
        for k in ("gguf_file", "attn_implementation", "device_map", "revision"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        if self.trust_remote_code:
            out["trust_remote_code"] = True
        return {**out, **(self.model_extra or {})}

    def processor_load_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of the processor's / tokenizer's ``from_pretrained``: the loader arguments the
        model's share (:data:`~howeval.config.hf_known_args.LOADER_SHARED_ARGS`), then ``processor_kwargs``."""
        from howeval.config.hf_known_args import LOADER_SHARED_ARGS

        mk = self.model_kwargs()
        return {**{k: mk[k] for k in LOADER_SHARED_ARGS if k in mk}, **self.processor_kwargs}


class OpenAIOptions(StrictModel):
    """Options of the ``openai`` engine (any OpenAI-compatible server: vllm serve, hosted APIs)."""

    base_url: str | None = Field(None, description="Server URL, e.g. http://127.0.0.1:8001/v1; None = the client's default.")
    base_url_env: str | None = Field(None, description="Environment variable holding the base URL (read at engine start).")
    api_key_env: str = Field("OPENAI_API_KEY", description="Environment variable holding the API key (never the key itself).")
    max_concurrency: int = Field(8, ge=1, description="Requests in flight at once per engine replica.")
    qps: float | None = Field(None, gt=0, description="Request-rate cap per replica (requests/s); None = no cap.")
    timeout_s: float = Field(120.0, gt=0, description="Timeout of one attempt in seconds (no answer by then: a timeout).")
    max_retries: int = Field(3, ge=0, description="Further attempts after 408/409/429/5xx, connection failures and "
                             "timeouts (each logged); Retry-After is honoured, else exponential backoff.")
    backoff_s: float = Field(0.5, ge=0, description="First backoff wait in seconds when the server gives no Retry-After "
                             "(doubles per attempt, at most 8 s).")
    deadline_s: float | None = Field(None, gt=0, description="Wall seconds one request may take in all: attempts, backoff "
                                     "and Retry-After waits; a wait that would pass it ends the request with the reason. "
                                     "None = (max_retries + 1) x (timeout_s + 8 s).")
    breaker_failures: int = Field(4, ge=0, description="Consecutive connection failures or timeouts after which the "
                                  "endpoint is marked down: the remaining rows are recorded at once as 'endpoint "
                                  "unavailable (...)' and retried by the next run. 0 disables the breaker.")
    image_detail: Literal["auto", "low", "high"] | None = Field(None, description="image_url detail hint; None omits it.")
    extra_body: dict = Field(default_factory=dict, description="Extra JSON fields sent with every request (server-specific).")
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = Field(
        "max_tokens", description="Request field for the token budget: OpenAI's reasoning models take only max_completion_tokens.")

    @property
    def request_deadline_s(self) -> float:
        """``deadline_s``, or its default (max_retries + 1) x (timeout_s + 8 s) when unset."""
        return self.deadline_s if self.deadline_s is not None else (self.max_retries + 1) * (self.timeout_s + 8.0)

    @model_validator(mode="after")
    def _deadline_covers_one_attempt(self) -> OpenAIOptions:
        if self.deadline_s is not None and self.deadline_s < self.timeout_s:
            raise ValueError(f"deadline_s={self.deadline_s} is shorter than timeout_s={self.timeout_s}: one attempt could "
                             "never finish; raise deadline_s or lower timeout_s")
        return self


class VLLMOptions(BaseModel):
    """Options of the ``vllm`` engine: vLLM's own engine arguments, passed through unchanged.

    Every key is a ``vllm.EngineArgs`` field (``tensor_parallel_size``, ``max_model_len``,
    ``enable_prefix_caching``, ``kv_cache_dtype``, ``mm_processor_kwargs``, ...), given flat
    (``options: {max_model_len: 4096}``) or under ``engine_kwargs:`` (Ray Data LLM's spelling); not a
    fixed list. When vllm is importable the keys are checked against ``EngineArgs`` (an unknown key is
    an error naming it); elsewhere (a CPU driver of a GPU cluster) they are checked when the engine
    starts. On a CPU platform, keys left unset get :data:`VLLM_CPU_DEFAULTS`.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    engine_kwargs: dict[str, Any] = Field(default_factory=dict, description="vLLM EngineArgs fields (same as giving "
                                          "them flat); a key given both ways is an error.")

    @model_validator(mode="after")
    def _check_engine_args(self) -> VLLMOptions:
        both = sorted(set(self.engine_kwargs) & set(self.model_extra or {}))
        if both:
            raise ValueError(f"vllm options {both} given both flat and under engine_kwargs; give each once")
        keys = set(self.all_engine_kwargs()) - {"model"}
        known = vllm_engine_arg_names() if _needs_vllm_check(keys) else None
        if known is not None:
            unknown = sorted(keys - known)
            if unknown:
                close = {k: difflib.get_close_matches(k, known, n=1, cutoff=0.6) for k in unknown}
                hints = "; ".join(f"{k!r}: did you mean {c[0]!r}?" for k, c in close.items() if c)
                raise ValueError(f"unknown vLLM engine argument(s) {unknown}: not fields of vllm.EngineArgs "
                                 f"(vllm {_vllm_version()}); {hints + '; ' if hints else ''}check the spelling "
                                 "against vLLM's engine arguments")
        else:  # no vllm here: reject only near-misses of the recorded names (newer vLLM may add fields)
            from howeval.config.vllm_known_args import ENGINE_ARG_NAMES, RECORDED_VERSION

            for k in sorted(keys - ENGINE_ARG_NAMES):
                close = difflib.get_close_matches(k, ENGINE_ARG_NAMES, n=1, cutoff=0.85)
                if close:
                    raise ValueError(f"unknown vLLM engine argument {k!r}: did you mean {close[0]!r}? (vllm is not "
                                     f"installed here; checked against vllm {RECORDED_VERSION}'s EngineArgs fields)")
        if "model" in self.all_engine_kwargs():
            raise ValueError("vllm options: give the model as the config's `model:`, not as an engine argument")
        return self

    def all_engine_kwargs(self) -> dict[str, Any]:
        """The engine arguments as one dict (flat keys and ``engine_kwargs`` merged)."""
        return {**(self.model_extra or {}), **self.engine_kwargs}


VLLM_CPU_DEFAULTS: dict[str, Any] = {"dtype": "float32", "enforce_eager": True, "gpu_memory_utilization": 0.1,
                                     "max_model_len": 2048}
"""Engine arguments used on a CPU platform (vllm-cpu) when the config leaves them unset (DESIGN.md,
December 2026): float32 is fastest there; without ``enforce_eager`` start-up compiles for minutes;
``gpu_memory_utilization`` is a share of RAM on CPU; the KV cache size itself comes from the
environment variable ``VLLM_CPU_KVCACHE_SPACE`` (GiB)."""


@functools.lru_cache(maxsize=1)
def vllm_engine_arg_names() -> frozenset[str] | None:
    """Field names of ``vllm.EngineArgs``, or None when vllm is not importable here."""
    if importlib.util.find_spec("vllm") is None:
        return None
    try:
        from vllm.engine.arg_utils import EngineArgs
    except Exception:  # noqa: BLE001 - a broken vllm install fails in many ways: checked again (and reported) when the engine starts
        return None
    return frozenset(f.name for f in dataclasses.fields(EngineArgs))


def _needs_vllm_check(keys: set[str]) -> bool:
    """Whether checking ``keys`` needs vllm's own ``EngineArgs``: not when there is none, nor when every one is
    a field of the recorded version and that version is the one installed (importing vllm costs the driver
    several seconds of start-up, issue 43; the engine checks them again when it starts)."""
    if not keys:
        return False
    from howeval.config.vllm_known_args import ENGINE_ARG_NAMES, RECORDED_VERSION

    return not (keys <= ENGINE_ARG_NAMES and _vllm_version() == RECORDED_VERSION)


def _vllm_version() -> str:
    try:
        return importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        try:
            return importlib.metadata.version("vllm-cpu")
        except importlib.metadata.PackageNotFoundError:
            return "unknown"


class ReplayOptions(StrictModel):
    """Options of the ``replay`` engine (recorded responses, no model)."""

    path: str = Field(..., description="JSONL of recorded responses (local path or fsspec URL).")
    delay_s: float = Field(0.0, ge=0, description="Sleep per request (simulates a slow engine in tests and demos).")


ENGINE_OPTIONS: dict[str, type[BaseModel]] = {"hf": HFOptions, "openai": OpenAIOptions, "vllm": VLLMOptions,
                                             "replay": ReplayOptions}
"""Engine name -> its options model. Test doubles register here too (see ``howeval.engines.registry``)."""
