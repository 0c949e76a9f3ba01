"""Reward server configuration: one pydantic model, given as the Serve application's ``args`` (STYLE rule 1).

``configs/serve/reward.yaml`` holds the Serve config (host, port, replicas, autoscaling, batching
``user_config``) and, under ``applications[].args``, the fields below. Unknown keys are errors.
The builders in ``howeval.reward_server.app`` validate those ``args`` once (:func:`load_server_config`); the Serve
deployments receive the typed objects, never a dict to validate again.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from howeval.config import StrictModel, validate

# The reward parameters are shared with the GRPO trainer: they live in the core.
from howeval.config.rewards import CPRConfig, PatternConfig, PatternRMConfig  # noqa: F401
from howeval.config.sweep import JudgeEngineConfig, llm_verifier_block
from howeval.rewards.llm_fallback import LLMFallbackConfig

MIN_URL_TOKEN_CHARS = 32
"""The shortest URL token accepted (``auth.url_token_env``): it travels in a URL, so it must not be guessable."""


class AuthConfig(StrictModel):
    token_env: str | None = Field("HOWEVAL_REWARD_TOKEN", description="Env var holding the bearer token; requests without it get 401. None disables auth (tests only).")
    url_token_env: str | None = Field(None, description="Env var holding a second secret (at least 32 characters, not the bearer token) that authorises one route, POST /openrlhf/<secret>/get_reward, without a header: OpenRLHF's stock remote-RM client sends none (--reward.remote_url carries the URL). None (default): that route is 404. The secret grants that route only, never /v1/rewards or /metrics.")

    def url_token(self) -> str | None:
        """The URL token from ``url_token_env`` (None when that is null).

        Raises:
            ValueError: the variable is unset or empty, shorter than :data:`MIN_URL_TOKEN_CHARS`, holds
                characters other than ``A-Z a-z 0-9 - _ . ~`` (it goes into a URL path as is), or equals the
                bearer token (the bearer token must never travel in a URL).
        """
        import os
        import re

        if self.url_token_env is None:
            return None
        value = os.environ.get(self.url_token_env)
        where = f"auth.url_token_env={self.url_token_env!r}"
        if not value:
            raise ValueError(f"{where} is not set: export {self.url_token_env}=$(openssl rand -hex 32) before `serve run` "
                             "(or set auth.url_token_env: null: no header-less OpenRLHF route)")
        if len(value) < MIN_URL_TOKEN_CHARS or not re.fullmatch(r"[A-Za-z0-9._~-]+", value):
            raise ValueError(f"{where}: the URL token must be at least {MIN_URL_TOKEN_CHARS} characters of A-Z a-z 0-9 . _ ~ -, "
                             f"got {len(value)} characters (e.g. openssl rand -hex 32)")
        if self.token_env is not None and value == os.environ.get(self.token_env):
            raise ValueError(f"{where}: the URL token equals the bearer token ({self.token_env}); use a second secret, "
                             "so the bearer token never travels in a URL")
        return value


class LimitsConfig(StrictModel):
    max_body_bytes: int = Field(4_000_000, ge=1024, description="Larger request bodies get 413.")
    body_timeout_s: float = Field(5.0, gt=0, description="The whole body must arrive within this many seconds of the request reaching the ingress (after the bearer check, which reads headers only); slower is 408, so a trickling client holds its slot for seconds.")
    max_concurrent_requests: int = Field(32, ge=1, description="Requests one ingress replica scores at once (Serve's max_ongoing_requests is higher: it also counts requests still sending their body).")
    max_waiting_requests: int = Field(64, ge=0, description="Requests that may wait for one of those slots; more get 503 with Retry-After.")
    max_items: int = Field(1024, ge=1, description="Items per request; more is a 422 on body.items.")
    max_request_chars: int = Field(2_000_000, ge=1000, description="Characters of every text of one request together: prompts, responses, answers, options and reference steps (bounds a request's cost: items x size); more is a 422.")
    request_timeout_s: float = Field(60.0, gt=0, description="Whole-request budget; past it the answer is 504 (clients retry).")
    patternrm_timeout_s: float = Field(20.0, gt=0, description="Budget for the PatternRM and step-scorer calls of one request; past it the rows degrade.")
    retry_after_s: int = Field(1, ge=0, description="Retry-After (seconds) sent with the 503 of degraded=error. Overload 503s come from Serve's backpressure_config.")


class OpenRLHFConfig(StrictModel):
    """Defaults for ``POST /get_reward``, whose body carries no kind or answer type."""

    kind: Literal["base", "pattern", "cpr", "composite"] = Field("pattern", description="Reward kind for /get_reward items.")
    answer_type: str = Field("free_form", description="Verifier answer type when a label is a plain string.")


class RewardServerConfig(StrictModel):
    """The reward service (ingress app): formula parameters, failure policy, limits, auth."""

    pattern: PatternConfig = Field(default_factory=PatternConfig)
    cpr: CPRConfig = Field(default_factory=CPRConfig)
    patternrm_app: str = Field("patternrm", description="Serve application name of the PatternRM deployment (deployed apart, so it can be stopped or upgraded alone).")
    degraded: Literal["verifier_only", "error"] = Field("verifier_only", description="A part the reward needs is missing (PatternRM or step scorer down or late, the LLM verifier failing): verifier_only (default) = answer with what is known, the row says degraded=true and why (error), and the TRL adapter logs the share; error = 503 with Retry-After (clients retry; a trainer that cannot get the full reward stops). Legacy spelling: on_patternrm_failure: degrade | error.")
    on_unresolved: Literal["zero", "error", "llm"] = Field("zero", description="The verifier's rules could not decide: zero = s_ver 0 flagged verify_method='unresolved'; error = 422; llm = ask llm_verifier (SPEC section 2), its failure a degraded row.")
    llm_verifier: JudgeEngineConfig | None = Field(None, description="OpenAI-compatible LLM verifier for on_unresolved=llm (howeval.rewards.llm_fallback; PatternRL: GPT-oss-120B): the sweep's judges.verifier.llm_fallback shape {model, options: {base_url, api_key_env, max_concurrency, timeout_s}, max_tokens}, or the flat {base_url, model, max_concurrency, timeout_s, max_tokens} (timeout 20 s, 256 tokens when a flat block leaves them out).")
    llm_verifier_cache_size: int = Field(50_000, ge=0, description="Verdicts of the LLM verifier kept per ingress replica (LRU); 0 disables.")
    auth: AuthConfig = Field(default_factory=AuthConfig)
    metrics_public: bool = Field(False, description="Serve GET /metrics without the bearer token (false: it needs the token like the reward routes).")
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    openrlhf: OpenRLHFConfig = Field(default_factory=OpenRLHFConfig)

    @model_validator(mode="before")
    @classmethod
    def _legacy_failure_key(cls, data: Any) -> Any:
        if isinstance(data, dict) and "on_patternrm_failure" in data:
            data = dict(data)
            old = data.pop("on_patternrm_failure")
            if "degraded" in data:
                raise ValueError("give degraded or its legacy spelling on_patternrm_failure, not both")
            if old not in ("degrade", "error"):
                raise ValueError(f"on_patternrm_failure={old!r}: expected degrade | error (now spelt degraded: verifier_only | error)")
            data["degraded"] = "verifier_only" if old == "degrade" else "error"
        return data

    @field_validator("llm_verifier", mode="before")
    @classmethod
    def _one_verifier_shape(cls, v: Any) -> Any:
        return llm_verifier_block(v)

    @model_validator(mode="before")
    @classmethod
    def _flat_cache_size(cls, data: Any) -> Any:
        lv = data.get("llm_verifier") if isinstance(data, dict) else None
        if isinstance(lv, dict) and "cache_size" in lv:  # the flat spelling's cache size: a server setting
            data = {**data, "llm_verifier": {k: v for k, v in lv.items() if k != "cache_size"},
                    "llm_verifier_cache_size": lv["cache_size"]}
        return data

    def llm_fallback_config(self) -> LLMFallbackConfig | None:
        """What ``howeval.rewards.llm_fallback.LLMFallback`` runs with, from :attr:`llm_verifier` (None without one).
        The API key is sent when ``options.api_key_env`` is set in the environment (like the sweep's openai
        engine: a local vLLM takes any key)."""
        import os

        if self.llm_verifier is None:
            return None
        from howeval.config.engines import OpenAIOptions

        o = OpenAIOptions.model_validate(self.llm_verifier.options)
        base_url = o.base_url or (os.environ.get(o.base_url_env) if o.base_url_env else None)
        if not base_url:
            raise ValueError("llm_verifier.options.base_url (or a set base_url_env) is required: the verifier's "
                             "OpenAI-compatible URL ending in /v1")
        return LLMFallbackConfig(base_url=base_url, model=self.llm_verifier.model,
                                 api_key_env=o.api_key_env if os.environ.get(o.api_key_env) else None,
                                 max_concurrency=o.max_concurrency, timeout_s=o.timeout_s,
                                 max_tokens=self.llm_verifier.max_tokens, cache_size=self.llm_verifier_cache_size)

    @model_validator(mode="after")
    def _llm_needs_endpoint(self) -> RewardServerConfig:
        if self.on_unresolved == "llm" and self.llm_verifier is None:
            raise ValueError("on_unresolved='llm' needs llm_verifier: {model, options: {base_url}} (or {base_url, model})")
        o = (self.llm_verifier.options if self.llm_verifier else None) or {}
        if self.llm_verifier is not None and not (o.get("base_url") or o.get("base_url_env")):
            raise ValueError("llm_verifier.options.base_url (or base_url_env) is required: the verifier's "
                             "OpenAI-compatible URL ending in /v1")
        return self

    @property
    def on_failure(self) -> str:
        """The pipeline's spelling of :attr:`degraded` (``degrade`` | ``error``)."""
        return "degrade" if self.degraded == "verifier_only" else "error"


class PatternRMAppConfig(StrictModel):
    """Args of the PatternRM application (deployed as its own Serve app, ``patternrm_app``)."""

    patternrm: PatternRMConfig = Field(default_factory=PatternRMConfig)


def load_server_config(args: dict[str, Any] | None, model: type[StrictModel] = RewardServerConfig) -> Any:
    """Validate application ``args`` against ``model``.

    Raises:
        ConfigError (a ValueError): names each bad key path and value.
    """
    return validate(model, args or {}, "reward server config")
