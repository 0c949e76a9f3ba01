"""Per-engine options, validated strictly: an option an engine does not accept is an error naming it.

``ENGINE_OPTIONS`` maps an engine name to its pydantic options model (STYLE rule 2: a registry, not
conditionals). A model config's ``options:`` block is validated against the model of its ``engine``.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field

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
    timeout_s: float = Field(120.0, gt=0, description="Per-request timeout in seconds.")
    max_retries: int = Field(3, ge=0, description="The OpenAI client's own retries (429/5xx/timeouts, exponential backoff).")
    image_detail: Literal["auto", "low", "high"] | None = Field(None, description="image_url detail hint; None omits it.")
    extra_body: dict = Field(default_factory=dict, description="Extra JSON fields sent with every request (server-specific).")
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = Field(
        "max_tokens", description="Request field for the token budget: OpenAI's reasoning models take only max_completion_tokens.")


class VLLMOptions(StrictModel):
    """Options of the ``vllm`` engine (offline ``vllm.LLM`` in a GPU actor; ``gpu`` extra)."""

    tensor_parallel_size: int = Field(1, ge=1, description="GPUs per replica for tensor parallelism.")
    pipeline_parallel_size: int = Field(1, ge=1, description="Pipeline stages per replica.")
    max_model_len: int | None = Field(None, ge=256, description="Context length cap; None = the model's own.")
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1, description="Fraction of GPU memory vLLM may take.")
    dtype: str = Field("auto", description="vLLM dtype ('auto', 'bfloat16', 'float16', 'float32').")
    enforce_eager: bool = Field(False, description="Disable CUDA graphs (faster start, slower decode).")
    limit_mm_per_prompt: dict[str, int] = Field(default_factory=lambda: {"image": 4}, description="Max items per modality per prompt.")
    trust_remote_code: bool = Field(False, description="Allow model code from the checkpoint folder.")
    enable_expert_parallel: bool = Field(False, description="Expert parallelism for MoE models.")
    max_num_seqs: int | None = Field(None, ge=1, description="Max concurrent sequences in the scheduler.")


class ReplayOptions(StrictModel):
    """Options of the ``replay`` engine (recorded responses, no model)."""

    path: str = Field(..., description="JSONL of recorded responses (local path or fsspec URL).")
    delay_s: float = Field(0.0, ge=0, description="Sleep per request (simulates a slow engine in tests and demos).")


ENGINE_OPTIONS: dict[str, type[StrictModel]] = {"hf": HFOptions, "openai": OpenAIOptions, "vllm": VLLMOptions,
                                             "replay": ReplayOptions}
"""Engine name -> its options model. Test doubles register here too (see ``howeval.engines.registry``)."""
