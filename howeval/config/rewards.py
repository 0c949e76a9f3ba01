"""Reward parameters shared by the reward server and the GRPO trainer (SPEC sections 2 and 3).

One definition, so a trainer scoring in-process and the server compute the same reward.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from howeval.config.base import StrictModel


class PatternConfig(StrictModel):
    """PatternRL reward R = s_ver·(0.9 + 0.1·a), a = z·s_pat + (1 − z) (SPEC section 2)."""

    p: float = Field(0.6, ge=0, le=1, description="P(z = 1): share of rollouts sent to PatternRM (paper 0.6).")
    seed: int = Field(0, description="Gate seed: z = bernoulli_gate(rollout_key(prompt, response), p, seed); a trainer with the same seed gets the same z.")
    mode: Literal["mean", "max"] = Field("mean", description="s_pat = 1 − mean(b) (default) or 1 − max(b).")


class CPRConfig(StrictModel):
    """CRYSTAL CPR: correct R = a_w + s_w·F1; wrong R = s_w·F1·λ (SPEC section 3)."""

    a_w: float = Field(0.65, ge=0, description="Answer weight (paper ablation 0.65; reference code 0.6).")
    s_w: float = Field(0.35, ge=0, description="Step weight (paper 0.35; reference code 0.4).")
    lam: float = Field(0.3, ge=0, description="λ: share of step credit a wrong answer keeps.")
    tau: float = Field(0.35, ge=-1, le=1, description="Greedy matching threshold on cosine similarity (strict).")
    alpha: float = Field(0.5, ge=0, le=1, description="Order weight for ordered F1 (only used with f1=ordered).")
    order: Literal["lis", "kendall"] = Field("lis", description="Order score for ordered F1.")
    f1: Literal["match", "ordered"] = Field("match", description="F1_step = Match F1 (SPEC) or Ordered Match F1.")
    embedder_path: str | None = Field(None, description="Local sentence-transformers folder; None = bundled all-MiniLM-L6-v2.")
    max_pred_steps: int = Field(128, ge=1, description="Predicted steps embedded per item (bounds a cpr item's cost: a ~180 KB response made 2,500 steps and held the step scorer 20-38 s); steps past it are not embedded and count as unmatched (precision's denominator keeps every step), and the row's `truncated` says so.")
    max_step_chars: int = Field(2000, ge=100, description="Characters of each predicted or reference step given to the encoder (it reads 256 word pieces, about 1,000-1,500 characters, so the cut changes no embedding of ordinary text; it bounds tokenizing).")


class PatternRMConfig(StrictModel):
    """Which PatternRM the server calls (``howeval.judges.patternrm.model.PatternRM``)."""

    kind: Literal["trained", "rules", "checkpoint"] = Field("trained", description="trained = the embedded trained PatternRM (MiniLM + head, `make patternrm`; default); rules = the rule judge; checkpoint = an SFT'd LM PatternRM (howeval.ray_jobs.train_patternrm).")
    path: str | None = Field(None, description="kind=trained: a trained head folder (None = the one shipped in the package, howeval/judges/patternrm/weights/); kind=checkpoint: the LM folder ('embedded' = the untrained SmolLM2, format smoke only).")
    max_new_tokens: int = Field(24, ge=4, description="Decode budget; the direct format needs ~16 tokens, the thinking form ~80.")
    form: Literal["direct", "thinking"] = Field("direct", description="kind=checkpoint: the inference form the prompt asks for (format.patternrm_messages): direct = the LABELS line; thinking = an <analysis> block, then the line.")
    max_input_tokens: int = Field(1024, ge=64, description="Prompt token budget: the chat template is always kept whole; the question (at most a quarter) and then the response (head + tail around [...]) are cut to fit (model.fit_prompt).")
    max_response_chars: int | None = Field(4000, ge=64, description="Response characters kept (head + tail) before tokenizing.")
    device: str | None = Field(None, description="torch device; None = cuda when available, else cpu.")
    engine: Literal["hf", "vllm"] = Field("hf", description="kind=checkpoint: hf = transformers generate in the replica (CPU or GPU, bf16 weights on GPU); vllm = the project's vllm engine (a GPU and the `gpu` extra; continuous batching).")
    engine_options: dict[str, Any] = Field(default_factory=dict, description="engine=vllm: vllm.EngineArgs fields (howeval.config.engines.VLLMOptions), e.g. gpu_memory_utilization, max_model_len.")

    @model_validator(mode="after")
    def _path_for_checkpoint(self) -> PatternRMConfig:
        if self.kind == "checkpoint" and not self.path:
            raise ValueError("patternrm.path is required when patternrm.kind is 'checkpoint'")
        if self.kind != "checkpoint" and (self.engine != "hf" or self.engine_options):
            raise ValueError(f"patternrm.engine={self.engine!r} / engine_options apply to kind 'checkpoint' only (kind is {self.kind!r})")
        return self
