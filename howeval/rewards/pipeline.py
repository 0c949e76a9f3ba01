"""The reward pipeline: rewards for a batch of rollouts, given a labeller (PatternRM) and a step scorer.

One implementation for every caller (SPEC sections 2 and 3): the reward server's ingress
(``howeval.reward_server.app.RewardIngress``, async, through Serve handles), the in-process GRPO scorer and the
TRL reward function (``howeval.training.rewards``). Three stages, so an async caller can fetch the model
parts concurrently and still share every decision:

1. :func:`prepare` (pure): verify each answer (``howeval.judges.verify.verify``), draw the gate
   ``z = bernoulli_gate(rollout_key(prompt, response), p, seed)`` for ``pattern`` items, segment the
   predicted steps of ``cpr`` items (``howeval.parsing.steps.response_steps``); it lists the PatternRM
   requests (z = 1) and the step-F1 requests (cpr with predicted steps).
2. the caller gets PatternRM labels and step F1s for those requests (or an error for the whole call);
3. :func:`assemble` (pure): the formulas of ``howeval.rewards.functions``.

:func:`score_batch` runs the three stages with synchronous callables.

Result row (one per item, in order): ``{reward, s_ver, verify_method, labels, s_pat, z, step_f1,
degraded, error, components}`` (``components``: the reward split into its accuracy part and the rest,
``howeval.rewards.functions.reward_components``, the tasks of PCGrad). ``degraded = true`` when a model part was needed but missing (PatternRM or step
scorer down, late, or unparseable): pattern rows then get the verifier-only reward (a = 1, as z = 0:
R = s_ver); cpr / composite rows get the answer part only (F1 = 0) with ``step_f1 = None``.
A degraded row is never a made-up model answer: it carries the reason in ``error``.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from howeval.config.rewards import CPRConfig, PatternConfig
from howeval.engines.messages import message_text
from howeval.judges.patternrm.format import rollout_key
from howeval.rewards.functions import (
    bernoulli_gate,
    composite_reward,
    cpr_reward,
    pattern_reward,
    pattern_score,
    reward_components,
)

__all__ = ["KINDS", "STEP_KINDS", "RewardItemError", "RequestAbandoned", "PatternRMUnavailable", "RewardPlan", "prepare", "assemble", "score_batch"]

KINDS = ("base", "pattern", "cpr", "composite")
"""Reward kinds: base (verifier), pattern (PatternRL), cpr (CRYSTAL CPR), composite (CRYSTAL's additive ablation)."""
STEP_KINDS = ("cpr", "composite")
"""Kinds scored on reasoning steps: they need ``reference_steps`` and the step scorer."""


class RewardItemError(ValueError):
    """An item the pipeline refuses (the verifier rejects it, an unknown kind, cpr without reference
    steps, or an unresolved answer under ``on_unresolved='error'``); ``index`` names the item."""

    def __init__(self, index: int, message: str):
        super().__init__(f"items.{index}: {message}")
        self.index = index


class RequestAbandoned(RuntimeError):
    """:func:`prepare` stopped because its caller no longer needs the answer (timeout, client gone)."""


class PatternRMUnavailable(RuntimeError):
    """A model part was needed and missing under ``on_failure='error'`` (the server answers 503)."""


@dataclass
class RewardPlan:
    """What :func:`prepare` decided: per item s_ver / method / gate / steps, and the model requests."""

    items: list[Mapping[str, Any]]
    verdicts: list[tuple[bool, str]]
    z: dict[int, int] = field(default_factory=dict)
    rm_index: list[int] = field(default_factory=list)
    step_index: list[int] = field(default_factory=list)
    steps: dict[int, list[str]] = field(default_factory=dict)
    unresolved_index: list[int] = field(default_factory=list)
    n_pred: dict[int, int] = field(default_factory=dict)
    truncated: dict[int, str] = field(default_factory=dict)

    def llm_requests(self) -> list[Mapping[str, Any]]:
        """The items the rules left unresolved (``on_unresolved='llm'``), for the LLM fallback."""
        return [self.items[i] for i in self.unresolved_index]

    def rm_requests(self) -> list[dict[str, str]]:
        """PatternRM inputs ``[{question, response}]`` for the items with z = 1."""
        return [{"question": self.items[i]["prompt"], "response": self.items[i]["response"]} for i in self.rm_index]

    def step_requests(self) -> list[dict[str, Any]]:
        """Step-F1 inputs ``[{pred, ref, n_pred}]`` for cpr items with predicted steps (``pred`` capped at
        ``max_pred_steps``; ``n_pred``: how many the response had, the rest count as unmatched)."""
        return [{"pred": self.steps[i], "ref": list(self.items[i]["reference_steps"]),
                 "n_pred": self.n_pred.get(i, len(self.steps[i]))} for i in self.step_index]


def prepare(items: Sequence[Mapping[str, Any]], pattern: PatternConfig, on_unresolved: str = "zero",
            stop: Any = None, cpr: CPRConfig | None = None) -> RewardPlan:
    """Stage 1: verify, gate and segment (no model call).

    Args:
        items: ``{prompt, response, answer, answer_type, kind, reference_steps?, options?}`` dicts.
        pattern: gate and s_pat parameters.
        on_unresolved: ``zero`` (s_ver 0, ``verify_method='unresolved'``), ``error`` (raise) or ``llm``
            (listed in ``plan.unresolved_index`` for the LLM fallback; :func:`assemble` takes its verdicts).
        stop: a ``threading.Event`` (or None): when set, stop before the next item's verifier and raise
            :class:`RequestAbandoned` (the server sets it when the request's answer can no longer be used).
        cpr: its ``max_pred_steps`` caps the predicted steps a cpr item sends to the step scorer (the rest
            count as unmatched; ``plan.truncated`` records why for the row); None = the default CPRConfig.

    Raises:
        RewardItemError: see the class.
        RequestAbandoned: ``stop`` was set.
    """
    from howeval.judges.verify import verify
    from howeval.parsing.steps import response_steps

    if on_unresolved not in ("zero", "error", "llm"):
        raise ValueError(f"on_unresolved={on_unresolved!r} must be 'zero', 'error' or 'llm'")
    plan = RewardPlan(items=list(items), verdicts=[])
    cap = (cpr or CPRConfig()).max_pred_steps
    for i, it in enumerate(plan.items):
        if stop is not None and stop.is_set():
            raise RequestAbandoned(f"stopped before items.{i} of {len(plan.items)}: the request was abandoned")
        kind = it.get("kind", "pattern")
        if kind not in KINDS:
            raise RewardItemError(i, f"kind={kind!r} is not one of {list(KINDS)}")
        try:
            v = verify(it["response"], it["answer"], it["answer_type"], options=it.get("options") or None)
        except (ValueError, TypeError, KeyError) as e:
            raise RewardItemError(i, f"the verifier refused this item: {e}") from None
        if v.correct is None:
            if on_unresolved == "error":
                raise RewardItemError(i, f"verifier could not decide ({v.reason}) and on_unresolved=error")
            plan.verdicts.append((False, "unresolved"))
            if on_unresolved == "llm":
                plan.unresolved_index.append(i)
        else:
            plan.verdicts.append((bool(v.correct), "rule"))
        if kind == "pattern":
            plan.z[i] = bernoulli_gate(rollout_key(it["prompt"], it["response"]), pattern.p, pattern.seed)
            if plan.z[i] == 1:
                plan.rm_index.append(i)
        elif kind in STEP_KINDS:
            if not it.get("reference_steps"):
                raise RewardItemError(i, f"kind {kind!r} needs non-empty reference_steps")
            steps = response_steps(it["response"])
            if len(steps) > cap:
                plan.truncated[i] = (f"{kind}: {len(steps):,} predicted steps, over max_pred_steps={cap}: the first {cap} "
                                     f"were embedded, the other {len(steps) - cap:,} count as unmatched")
            plan.n_pred[i] = len(steps)
            plan.steps[i] = steps[:cap]
            if plan.steps[i]:
                plan.step_index.append(i)
    return plan


def assemble(plan: RewardPlan, rm_results: Sequence[Mapping[str, Any]] | str, f1_results: Sequence[float] | str,
             pattern: PatternConfig, cpr: CPRConfig, on_failure: str = "degrade",
             llm_results: Sequence[Mapping[str, Any]] | str | None = None) -> list[dict[str, Any]]:
    """Stage 3: the rewards, from the plan and the model answers.

    Args:
        llm_results: the LLM fallback's verdicts, one ``{correct: bool | None, method, reason}`` per
            ``plan.unresolved_index`` item, or a string (the whole call failed), or None (not asked).
            A verdict sets s_ver (``verify_method='llm'``); a failed one (``correct`` None) leaves s_ver 0
            with ``verify_method='llm_error'``, ``degraded: true`` and the reason in ``error`` (or raises
            :class:`PatternRMUnavailable` under ``on_failure='error'``): never a silent 0.
        rm_results: one ``{labels, error}`` per ``plan.rm_index`` item, or a string: the reason the
            whole PatternRM call failed.
        f1_results: one F1 in [0, 1] per ``plan.step_index`` item, or a string: the reason the step
            scorer failed.
        on_failure: ``degrade`` (rows flagged ``degraded``) or ``error`` (raise :class:`PatternRMUnavailable`).
    """
    if on_failure not in ("degrade", "error"):
        raise ValueError(f"on_failure={on_failure!r} must be 'degrade' or 'error'")
    for name, res, idx in (("patternrm", rm_results, plan.rm_index), ("step scorer", f1_results, plan.step_index)):
        if isinstance(res, str):
            if on_failure == "error" and idx:
                raise PatternRMUnavailable(f"{name} unavailable: {res}")
        elif len(res) != len(idx):
            raise ValueError(f"{name} returned {len(res)} results for {len(idx)} requests")
    llm_fail: dict[int, str] = {}
    verdicts = list(plan.verdicts)
    if plan.unresolved_index:
        if llm_results is None:
            llm_results = "not asked (no LLM fallback configured)"
        if not isinstance(llm_results, str) and len(llm_results) != len(plan.unresolved_index):
            raise ValueError(f"llm verifier returned {len(llm_results)} results for {len(plan.unresolved_index)} requests")
        for n, i in enumerate(plan.unresolved_index):
            v = llm_results if isinstance(llm_results, str) else llm_results[n]
            if isinstance(v, Mapping) and v.get("correct") is not None:
                verdicts[i] = (bool(v["correct"]), "llm")
            else:
                reason = v if isinstance(v, str) else str(v.get("reason") or "no verdict")
                if on_failure == "error":
                    raise PatternRMUnavailable(f"llm verifier gave no verdict for items.{i}: {reason}")
                verdicts[i] = (False, "llm_error")
                llm_fail[i] = reason if reason.startswith("llm verifier") else f"llm verifier: {reason}"
    rm_by = {} if isinstance(rm_results, str) else dict(zip(plan.rm_index, rm_results))
    f1_by = {} if isinstance(f1_results, str) else dict(zip(plan.step_index, f1_results))
    out = []
    for i, it in enumerate(plan.items):
        correct, method = verdicts[i]
        s_ver = 1.0 if correct else 0.0
        row: dict[str, Any] = {"s_ver": s_ver, "verify_method": method, "labels": None, "s_pat": None, "z": None,
                               "step_f1": None, "degraded": i in llm_fail, "error": llm_fail.get(i)}
        if i in plan.truncated:
            row["truncated"] = plan.truncated[i]
        kind = it.get("kind", "pattern")
        if kind == "base":
            row["reward"] = s_ver
        elif kind == "pattern":
            row["z"] = z = plan.z[i]
            if z == 0:
                row["reward"] = pattern_reward(s_ver, None, 0)
            else:
                r = rm_by.get(i)
                labels = r.get("labels") if r else None
                err = rm_results if isinstance(rm_results, str) else (r.get("error") if r else "no result")
                if labels is not None and not err:
                    s_pat = pattern_score(labels, pattern.mode)
                    row.update(labels=dict(labels), s_pat=s_pat, reward=pattern_reward(s_ver, s_pat, 1))
                else:
                    if on_failure == "error":
                        raise PatternRMUnavailable(f"patternrm gave no labels for items.{i}: {err}")
                    why = f"patternrm: {err or 'returned no labels'}"
                    row.update(degraded=True, error=f"{row['error']}; {why}" if row["error"] else why,
                               reward=pattern_reward(s_ver, None, 0))
        else:
            if i in plan.step_index and isinstance(f1_results, str):
                why = f"step scorer: {f1_results}"
                row.update(degraded=True, error=f"{row['error']}; {why}" if row["error"] else why,
                           reward=_step_reward(kind, correct, 0.0, cpr))
            else:
                f1 = float(f1_by.get(i, 0.0))  # no predicted steps: F1 = 0 (SPEC section 3)
                row.update(step_f1=f1, reward=_step_reward(kind, correct, f1, cpr))
        row["components"] = reward_components(kind, row["reward"], s_ver, cpr.a_w)
        out.append(row)
    return out


def _step_reward(kind: str, correct: bool, f1: float, cpr: CPRConfig) -> float:
    """The reward of a step kind: ``composite`` (additive) or ``cpr`` (multiplicative)."""
    if kind == "composite":
        return composite_reward(correct, f1, cpr.a_w, cpr.s_w)
    return cpr_reward(correct, f1, cpr.a_w, cpr.s_w, cpr.lam)


def score_batch(items: Sequence[Mapping[str, Any]], pattern: PatternConfig, cpr: CPRConfig,
                label_batch: Callable[[list[dict]], list[dict]] | None = None,
                step_f1: Callable[[list[dict]], list[float]] | None = None,
                on_unresolved: str = "zero", on_failure: str = "degrade",
                llm_verify: Callable[[list[Mapping[str, Any]]], list[dict]] | None = None) -> list[dict[str, Any]]:
    """Rewards for ``items`` with synchronous model parts (the in-process GRPO scorer, tests, benchmarks).

    Args:
        label_batch: PatternRM ``[{question, response}] -> [{labels, error}]``; an exception it raises
            degrades the rows that needed it (or raises under ``on_failure='error'``).
        step_f1: ``[{pred, ref}] -> [F1]``; exceptions handled the same way.
        llm_verify: with ``on_unresolved='llm'``, the unresolved items -> ``[{correct, method, reason}]``
            (e.g. a sync wrapper of ``howeval.rewards.llm_fallback.LLMFallback``); exceptions degrade those rows.

    Raises:
        RewardItemError, PatternRMUnavailable; ValueError when a needed part is None (a caller bug).
    """
    plan = prepare(items, pattern, on_unresolved, cpr=cpr)
    if plan.rm_index and label_batch is None:
        raise ValueError("kind 'pattern' needs a PatternRM (label_batch)")
    if plan.step_index and step_f1 is None:
        raise ValueError("kind 'cpr' needs a step scorer (step_f1)")
    rm: list | str = []
    f1: list | str = []
    if plan.rm_index:
        try:
            rm = list(label_batch(plan.rm_requests()))  # type: ignore[misc]
        except Exception as e:  # noqa: BLE001 - a dead model (any failure) is a degraded row, with its reason
            rm = f"{type(e).__name__}: {str(e)[:200]}"
    if plan.step_index:
        try:
            f1 = [float(x) for x in step_f1(plan.step_requests())]  # type: ignore[misc]
        except Exception as e:  # noqa: BLE001 - a dead step scorer (any failure) is a degraded row, with its reason
            f1 = f"{type(e).__name__}: {str(e)[:200]}"
    llm: list | str | None = None
    if plan.unresolved_index:
        if llm_verify is None:
            raise ValueError("on_unresolved='llm' needs an LLM verifier (llm_verify)")
        try:
            llm = list(llm_verify(plan.llm_requests()))
        except Exception as e:  # noqa: BLE001 - a failed LLM verifier (any failure) is a degraded row, with its reason
            llm = f"{type(e).__name__}: {str(e)[:200]}"
    return assemble(plan, rm, f1, pattern, cpr, on_failure, llm)


def step_f1_batch(embedder: Any, pairs: Sequence[Mapping[str, Sequence[str]]], cpr: CPRConfig) -> list[float]:
    """Step F1 per ``{pred, ref}`` pair (SPEC section 3), one encoder pass for every new step of the batch.

    Args:
        embedder: a ``howeval.embed.StepEmbedder`` (caches step embeddings by text).
        cpr: ``tau``, ``alpha``, ``order`` and ``f1`` (``match`` = Match F1, ``ordered`` = Ordered Match F1).

    Returns:
        one F1 in [0, 1] per pair.
    """
    import numpy as np

    from howeval.metrics.steps import step_scores

    cut = cpr.max_step_chars
    cap = cpr.max_pred_steps
    pairs = [{"pred": [s[:cut] for s in list(p["pred"])[:cap]], "ref": [s[:cut] for s in p["ref"]],
              "n_pred": max(len(p["pred"]), int(p.get("n_pred") or 0))} for p in pairs]
    embedder.add(s for p in pairs for s in (*p["pred"], *p["ref"]))
    out = []
    for p in pairs:
        sim = embedder.similarity(p["pred"], p["ref"])
        extra = p["n_pred"] - len(p["pred"])
        if extra > 0:  # steps past max_pred_steps: not embedded, unmatched (below any tau)
            sim = np.vstack([sim, np.full((extra, sim.shape[1]), -1.0)])
        s = step_scores(sim, tau=cpr.tau, alpha=cpr.alpha, order=cpr.order)
        out.append(float(s.f1 if cpr.f1 == "match" else s.ordered_f1))
    return out


def rollout_items(prompts: Sequence[Any], completions: Sequence[Any], answer: Sequence[Any], answer_type: Sequence[str],
                  kind: str, reference_steps: Sequence[Sequence[str]] | None = None,
                  options: Sequence[Sequence[str] | None] | None = None) -> list[dict[str, Any]]:
    """Pipeline items from TRL reward-function columns (one per completion), for every TRL adapter.

    Prompt text = the prompt string or its last user message; response = the completion string or its last
    assistant message (``howeval.engines.messages.message_text``).

    Raises:
        ValueError: a column's length differs from the completions', an unknown kind, or cpr without
            reference steps for a completion.
    """
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is not one of {list(KINDS)}")
    n = len(completions)
    for name, col in (("prompts", prompts), ("answer", answer), ("answer_type", answer_type)):
        if len(col) != n:
            raise ValueError(f"{name} has {len(col)} values for {n} completions")
    items = []
    for i in range(n):
        it: dict[str, Any] = {
            "prompt": message_text(prompts[i], None if isinstance(prompts[i], str) else "user"),
            "response": message_text(completions[i], None if isinstance(completions[i], str) else "assistant"),
            "answer": str(answer[i]), "answer_type": answer_type[i], "kind": kind,
        }
        if options is not None and options[i]:
            it["options"] = list(options[i])
        if kind in STEP_KINDS:
            if reference_steps is None or len(reference_steps) != n or not reference_steps[i]:
                raise ValueError(f"kind {kind!r} needs a reference_steps column with a non-empty list per completion (completion {i})")
            it["reference_steps"] = list(reference_steps[i])
        items.append(it)
    return items
