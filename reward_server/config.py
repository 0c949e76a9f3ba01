"""Reward server configuration: one pydantic model, given as the Serve application's ``args`` (STYLE rule 1).

``configs/serve/reward.yaml`` holds the Serve config (host, port, replicas, autoscaling, batching
``user_config``) and, under ``applications[].args``, the fields below. Unknown keys are errors.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PatternConfig(_Strict):
    """PatternRL reward R = s_ver·(0.9 + 0.1·a), a = z·s_pat + (1 − z) (SPEC section 2)."""

    p: float = Field(0.6, ge=0, le=1, description="P(z = 1): share of rollouts sent to PatternRM (paper 0.6).")
    seed: int = Field(0, description="Gate seed: z = bernoulli_gate(rollout_key(prompt, response), p, seed); a trainer with the same seed gets the same z.")
    mode: Literal["mean", "max"] = Field("mean", description="s_pat = 1 − mean(b) (default) or 1 − max(b).")


class CPRConfig(_Strict):
    """CRYSTAL CPR: correct R = a_w + s_w·F1; wrong R = s_w·F1·λ (SPEC section 3)."""

    a_w: float = Field(0.65, ge=0, description="Answer weight (paper ablation 0.65; reference code 0.6).")
    s_w: float = Field(0.35, ge=0, description="Step weight (paper 0.35; reference code 0.4).")
    lam: float = Field(0.3, ge=0, description="λ: share of step credit a wrong answer keeps.")
    tau: float = Field(0.35, ge=-1, le=1, description="Greedy matching threshold on cosine similarity (strict).")
    alpha: float = Field(0.5, ge=0, le=1, description="Order weight for ordered F1 (only used with f1=ordered).")
    order: Literal["lis", "kendall"] = Field("lis", description="Order score for ordered F1.")
    f1: Literal["match", "ordered"] = Field("match", description="F1_step = Match F1 (SPEC) or Ordered Match F1.")
    embedder_path: str | None = Field(None, description="Local sentence-transformers folder; None = bundled all-MiniLM-L6-v2.")


class PatternRMConfig(_Strict):
    """Which PatternRM the server calls (``actors.patternrm.PatternRM``)."""

    kind: Literal["rules", "checkpoint"] = Field("rules", description="rules = the rule judge as a stand-in (embedded default); checkpoint = a trained PatternRM.")
    path: str | None = Field(None, description="Checkpoint folder (kind=checkpoint); 'embedded' = the untrained SmolLM2 (format smoke only).")
    max_new_tokens: int = Field(24, ge=4, description="Decode budget; the direct format needs ~16 tokens.")
    max_input_tokens: int = Field(1024, ge=64, description="Prompt tokens kept (left-truncated by the tokenizer).")
    max_response_chars: int | None = Field(4000, ge=64, description="Response characters kept (head + tail) before tokenizing.")
    device: str | None = Field(None, description="torch device; None = cuda when available, else cpu.")

    @model_validator(mode="after")
    def _path_for_checkpoint(self) -> "PatternRMConfig":
        if self.kind == "checkpoint" and not self.path:
            raise ValueError("patternrm.path is required when patternrm.kind is 'checkpoint'")
        return self


class AuthConfig(_Strict):
    token_env: str | None = Field("HOWEVAL_REWARD_TOKEN", description="Env var holding the bearer token; requests without it get 401. None disables auth (tests only).")


class LimitsConfig(_Strict):
    max_body_bytes: int = Field(4_000_000, ge=1024, description="Larger request bodies get 413.")
    max_items: int = Field(1024, ge=1, description="Items per request; more is a 422 on body.items.")
    request_timeout_s: float = Field(60.0, gt=0, description="Whole-request budget; past it the answer is 504 (clients retry).")
    patternrm_timeout_s: float = Field(20.0, gt=0, description="Budget for the PatternRM call of one request; past it the rows degrade.")


class OpenRLHFConfig(_Strict):
    """Defaults for ``POST /get_reward``, whose body carries no kind or answer type."""

    kind: Literal["base", "pattern", "cpr"] = Field("pattern", description="Reward kind for /get_reward items.")
    answer_type: str = Field("free_form", description="Verifier answer type when a label is a plain string.")


class RewardServerConfig(_Strict):
    """The reward service (ingress app): formula parameters, failure policy, limits, auth."""

    pattern: PatternConfig = Field(default_factory=PatternConfig)
    cpr: CPRConfig = Field(default_factory=CPRConfig)
    patternrm_app: str = Field("patternrm", description="Serve application name of the PatternRM deployment (deployed apart, so it can be stopped or upgraded alone).")
    on_patternrm_failure: Literal["degrade", "error"] = Field("degrade", description="degrade = verifier-only reward (a = 1) with degraded=true; error = 503 (clients retry).")
    on_unresolved: Literal["zero", "error"] = Field("zero", description="Verifier could not decide (no LLM judge in the server): zero = s_ver 0 flagged verify_method='unresolved'; error = 422.")
    auth: AuthConfig = Field(default_factory=AuthConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    openrlhf: OpenRLHFConfig = Field(default_factory=OpenRLHFConfig)


class PatternRMAppConfig(_Strict):
    """Args of the PatternRM application (deployed as its own Serve app, ``patternrm_app``)."""

    patternrm: PatternRMConfig = Field(default_factory=PatternRMConfig)


def load_server_config(args: dict[str, Any] | None, model: type[_Strict] = RewardServerConfig) -> Any:
    """Validate application ``args`` against ``model``; errors name each key path and value."""
    try:
        return model.model_validate(args or {})
    except ValidationError as e:
        lines = [f"reward server config: {len(e.errors())} error(s):"]
        for err in e.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "<root>"
            lines.append(f"  {loc}: {err['msg']} (got {str(err.get('input'))[:80]})")
        raise ValueError("\n".join(lines)) from None
