"""Reward server configuration: one pydantic model, given as the Serve application's ``args`` (STYLE rule 1).

``configs/serve/reward.yaml`` holds the Serve config (host, port, replicas, autoscaling, batching
``user_config``) and, under ``applications[].args``, the fields below. Unknown keys are errors.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from howeval.config import StrictModel, validate

# The reward parameters are shared with the GRPO trainer: they live in the core.
from howeval.config.rewards import CPRConfig, PatternConfig, PatternRMConfig  # noqa: F401


class AuthConfig(StrictModel):
    token_env: str | None = Field("HOWEVAL_REWARD_TOKEN", description="Env var holding the bearer token; requests without it get 401. None disables auth (tests only).")


class LimitsConfig(StrictModel):
    max_body_bytes: int = Field(4_000_000, ge=1024, description="Larger request bodies get 413.")
    max_items: int = Field(1024, ge=1, description="Items per request; more is a 422 on body.items.")
    request_timeout_s: float = Field(60.0, gt=0, description="Whole-request budget; past it the answer is 504 (clients retry).")
    patternrm_timeout_s: float = Field(20.0, gt=0, description="Budget for the PatternRM and step-scorer calls of one request; past it the rows degrade.")
    retry_after_s: int = Field(1, ge=0, description="Retry-After (seconds) sent with the 503 of on_patternrm_failure=error. Overload 503s come from Serve's backpressure_config.")


class OpenRLHFConfig(StrictModel):
    """Defaults for ``POST /get_reward``, whose body carries no kind or answer type."""

    kind: Literal["base", "pattern", "cpr"] = Field("pattern", description="Reward kind for /get_reward items.")
    answer_type: str = Field("free_form", description="Verifier answer type when a label is a plain string.")


class RewardServerConfig(StrictModel):
    """The reward service (ingress app): formula parameters, failure policy, limits, auth."""

    pattern: PatternConfig = Field(default_factory=PatternConfig)
    cpr: CPRConfig = Field(default_factory=CPRConfig)
    patternrm_app: str = Field("patternrm", description="Serve application name of the PatternRM deployment (deployed apart, so it can be stopped or upgraded alone).")
    on_patternrm_failure: Literal["degrade", "error"] = Field("degrade", description="degrade = verifier-only reward (a = 1) with degraded=true; error = 503 (clients retry).")
    on_unresolved: Literal["zero", "error"] = Field("zero", description="Verifier could not decide (no LLM judge in the server): zero = s_ver 0 flagged verify_method='unresolved'; error = 422.")
    auth: AuthConfig = Field(default_factory=AuthConfig)
    metrics_public: bool = Field(False, description="Serve GET /metrics without the bearer token (false: it needs the token like the reward routes).")
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    openrlhf: OpenRLHFConfig = Field(default_factory=OpenRLHFConfig)


class PatternRMAppConfig(StrictModel):
    """Args of the PatternRM application (deployed as its own Serve app, ``patternrm_app``)."""

    patternrm: PatternRMConfig = Field(default_factory=PatternRMConfig)


def load_server_config(args: dict[str, Any] | None, model: type[StrictModel] = RewardServerConfig) -> Any:
    """Validate application ``args`` against ``model``.

    Raises:
        ConfigError (a ValueError): names each bad key path and value.
    """
    return validate(model, args or {}, "reward server config")
