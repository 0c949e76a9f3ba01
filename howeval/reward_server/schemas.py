"""Request and response bodies of the reward server (pydantic; invalid bodies are 422 naming the field)."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from howeval.judges.verify import VERIFIERS
from howeval.parsing.limits import MAX_NESTING, MAX_NUMBER_DIGITS, longest_digit_run, nesting_depth

MAX_TEXT = 200_000  # characters per text field
MAX_ANSWER = 10_000  # characters of a reference answer, a label or an option (a description fits; a book does not)


def check_reference(value: str, field: str, max_chars: int = MAX_ANSWER) -> str:
    """A caller-given reference text (answer, option, OpenRLHF label): ``ValueError`` naming ``field``
    when it is longer than ``max_chars`` (default :data:`MAX_ANSWER`), nests brackets deeper than ``MAX_NESTING`` or holds a
    number of more than ``MAX_NUMBER_DIGITS`` digits (the request is answered 422; a model *response*
    over the limits is scored ``unresolved`` instead, never refused).
    """
    if len(value) > max_chars:
        raise ValueError(f"{field}: {len(value):,} characters; at most {max_chars:,}")
    depth = nesting_depth(value, stop_at=MAX_NESTING + 1)
    if depth > MAX_NESTING:
        raise ValueError(f"{field}: brackets nested {depth}+ deep; at most {MAX_NESTING}")
    digits = longest_digit_run(value)
    if digits > MAX_NUMBER_DIGITS:
        raise ValueError(f"{field}: a number of {digits:,} digits; at most {MAX_NUMBER_DIGITS:,}")
    return value


class RewardItem(BaseModel):
    """One rollout to score."""

    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(..., max_length=MAX_TEXT, description="The prompt q (text); part of the gate key.")
    response: str = Field(..., max_length=MAX_TEXT, description="The user-facing response y_m.")
    answer: str = Field(..., max_length=MAX_TEXT, description="The reference answer g.")
    answer_type: str = Field(..., description="Verifier answer type (howeval.judges.verify.VERIFIERS).")
    kind: Literal["base", "pattern", "cpr", "composite"] = Field("pattern", description="base = verifier only; pattern = PatternRL; cpr = CRYSTAL CPR; composite = CRYSTAL's additive ablation a_w·1[correct] + s_w·F1.")
    reference_steps: list[str] | None = Field(None, max_length=512, description="Reference steps (cpr only, non-empty).")
    options: list[str] | None = Field(None, max_length=64, description="Option texts in order (multiple choice), optional.")

    @field_validator("answer")
    @classmethod
    def _sane_answer(cls, v: str) -> str:
        return check_reference(v, "answer")

    @field_validator("options")
    @classmethod
    def _sane_options(cls, v: list[str] | None) -> list[str] | None:
        for i, o in enumerate(v or []):
            check_reference(o, f"options.{i}")
        return v

    @field_validator("answer_type")
    @classmethod
    def _known_type(cls, v: str) -> str:
        if v not in VERIFIERS:
            raise ValueError(f"answer_type {v!r} is not registered; registered: {sorted(VERIFIERS)}")
        return v

    @model_validator(mode="after")
    def _cpr_needs_steps(self) -> RewardItem:
        if self.kind in ("cpr", "composite") and not self.reference_steps:
            raise ValueError(f"reference_steps: required and non-empty when kind is {self.kind!r}")
        if self.reference_steps is not None and any(len(s) > MAX_TEXT for s in self.reference_steps):
            raise ValueError(f"reference_steps: each step must be at most {MAX_TEXT} characters")
        return self


class RewardRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    items: list[RewardItem] = Field(..., min_length=1, description="Rollouts to score, answered in the same order.")


class RewardResult(BaseModel):
    """One reward; parts a kind does not use are null."""

    reward: float = Field(..., description="The reward (base: s_ver; pattern: s_ver·(0.9+0.1·a); cpr: CPR; composite: a_w·s_ver + s_w·F1).")
    s_ver: float = Field(..., description="Verifier reward in {0, 1}.")
    labels: dict[str, bool] | None = Field(None, description="PatternRM labels (pattern kind with z = 1 and PatternRM up).")
    s_pat: float | None = Field(None, description="Pattern score from labels.")
    z: int | None = Field(None, description="Bernoulli gate (pattern kind).")
    step_f1: float | None = Field(None, description="Step F1 (cpr and composite kinds).")
    components: dict[str, float] | None = Field(None, description="The reward split into named parts that sum to it: accuracy, and pattern (pattern kind) or reasoning (cpr, composite); a GRPO trainer with pcgrad treats each as one task.")
    degraded: bool = Field(False, description="PatternRM was needed (z = 1) but down, failing, late or unparseable: verifier-only reward (a = 1).")
    verify_method: str = Field(..., description="'rule'; 'unresolved' (rules could not decide; s_ver = 0 under on_unresolved=zero); 'llm' (the LLM verifier decided, on_unresolved=llm); 'llm_error' (it failed: s_ver = 0, degraded = true, error says why); 'refused' (OpenRLHF routes: the response could not be told from the prompt in query, the row is not scored: reward 0, degraded = true, error says why).")
    error: str | None = Field(None, description="Why this row degraded, when it did.")
    truncated: str | None = Field(None, description="What of the item was cut to bound its cost, when anything was (cpr: predicted steps past cpr.max_pred_steps were not embedded and count as unmatched); the reward is still the full formula's.")


class RewardResponse(BaseModel):
    rewards: list[RewardResult]


class OpenRLHFRequest(BaseModel):
    """OpenRLHF remote reward model body: ``query`` = prompt + response decoded together from their tokens
    (not byte-identical to ``prompts`` + response: ``howeval.rewards.query``), ``prompts``, ``labels`` (answers).

    A label may also be a JSON object string ``{"answer", "answer_type"?, "kind"?, "reference_steps"?}``.
    """

    model_config = ConfigDict(extra="ignore")

    query: list[str] = Field(..., min_length=1, max_length=1024)
    prompts: list[str] | None = Field(None)
    labels: list[str] | None = Field(None)

    @model_validator(mode="after")
    def _same_length(self) -> OpenRLHFRequest:
        for name in ("prompts", "labels"):
            v = getattr(self, name)
            if v is None:
                raise ValueError(f"{name}: required (one per query)")
            if len(v) != len(self.query):
                raise ValueError(f"{name}: {len(v)} values for {len(self.query)} queries")
        for i, lab in enumerate(self.labels or []):
            check_reference(lab, f"labels.{i}", MAX_TEXT)  # before any JSON decoding of the label
        return self


class OpenRLHFResponse(BaseModel):
    """OpenRLHF's answer (``rewards``, ``scores``, ``extra_logs`` of floats, one per row) plus ``errors``: why
    each row degraded or was refused (None when neither; ``extra_logs.degraded`` is 1.0 exactly where an
    error is given). ``extra_logs`` keys: ``howeval.reward_server.app.openrlhf_logs``."""

    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]]
    errors: list[str | None] = Field(default_factory=list, description="Per row: why it degraded, or null.")
