"""GRPO rewards: the one TRL reward function of the project (:class:`GRPOReward`) and its in-process scorer.

- :class:`GRPOReward`: the TRL reward callable over either scorer, the reward server's HTTP client
  (``howeval.rewards.client.RewardClient.score``) or :class:`InProcessScorer`; it picks the reward kind by
  the trainer's global step (curriculum), logs the reward parts through TRL's ``log_metric`` and can
  append every scored rollout to a JSONL file.
- :func:`score_items`: the in-process scorer: ``howeval.rewards.pipeline.score_batch``, the pipeline the
  reward server's ingress runs too, returning the server's result dicts; :class:`InProcessScorer` gives
  it its PatternRM and step embedder.
- :func:`reward_parts`: batch means of the reward's parts, for logging.

Pure of Ray (``howeval/ray_jobs/train_grpo.py`` holds all Ray Train wiring, STYLE rule 6).
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from howeval.config.rewards import CPRConfig, PatternConfig
from howeval.records import LABELS
from howeval.rewards.pipeline import KINDS, rollout_items
from howeval.training.config import CurriculumSpec, RewardSpec

log = logging.getLogger(__name__)


def score_items(items: Sequence[Mapping[str, Any]], pattern: PatternConfig, cpr: CPRConfig,
                label_batch: Callable[[list[dict]], list[dict]] | None = None,
                step_f1: Callable[[list[dict]], list[float]] | None = None, on_unresolved: str = "zero",
                llm_verify: Callable[[list[Mapping[str, Any]]], list[dict]] | None = None) -> list[dict]:
    """In-process rewards: ``howeval.rewards.pipeline.score_batch`` (the reward server's own pipeline).

    Args:
        label_batch: PatternRM ``[{question, response}] -> [{labels, error}]`` (needed for kind pattern).
        step_f1: ``[{pred, ref}] -> [F1]`` (needed for kind cpr).
        on_unresolved, llm_verify: as ``score_batch`` (``llm``: the unresolved items go to ``llm_verify``).
    """
    from howeval.rewards.pipeline import score_batch

    return score_batch(items, pattern, cpr, label_batch, step_f1, on_unresolved=on_unresolved, llm_verify=llm_verify)


def reward_parts(results: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Batch means of the reward's parts, for logging (keys absent when no row has that part).

    ``accuracy`` = mean s_ver; ``trigger`` = share of PatternRM-labelled rollouts with any pattern
    (Trigger, SPEC section 1); ``pattern/<label>`` = that label's rate; ``s_pat``, ``z``, ``step_f1``,
    ``degraded`` = their means (the share of rows answered without a part: issue 21, visible per step in
    the training log); ``verify_llm`` = share of rows the LLM verifier decided.

    >>> reward_parts([{"reward": 1.0, "s_ver": 1.0, "labels": {"cot": True, "rep": False, "con": False, "pr": False},
    ...                "s_pat": 0.75, "z": 1}, {"reward": 0.0, "s_ver": 0.0, "z": 0}])["trigger"]
    1.0
    """
    if not results:
        return {}
    n = len(results)
    out = {"reward": sum(float(r["reward"]) for r in results) / n, "accuracy": sum(float(r["s_ver"]) for r in results) / n}
    for key in ("s_pat", "z", "step_f1"):
        vals = [float(r[key]) for r in results if r.get(key) is not None]
        if vals:
            out[key] = sum(vals) / len(vals)
    out["degraded"] = sum(bool(r.get("degraded")) for r in results) / n
    out["verify_llm"] = sum(r.get("verify_method") == "llm" for r in results) / n
    labelled = [r["labels"] for r in results if r.get("labels")]
    if labelled:
        out["trigger"] = sum(any(bool(lab[k]) for k in LABELS) for lab in labelled) / len(labelled)
        for k in LABELS:
            out[f"pattern/{k}"] = sum(bool(lab[k]) for lab in labelled) / len(labelled)
    return out


class GRPOReward:
    """TRL reward function ``(prompts, completions, answer, answer_type, ..., **kwargs) -> list[float]``.

    Builds one scoring item per completion (prompt text = the last user message, response = the last
    assistant message: ``howeval.rewards.pipeline.rollout_items``) and hands them to ``scorer`` (the HTTP
    client's ``score`` or :func:`score_items`), so the reward a rollout receives is the scorer's
    ``reward`` for that text, unchanged. With a curriculum the kind is ``phase1_kind`` before
    ``switch_step`` (TRL passes ``trainer_state``) and ``kind`` from then on. Never returns None.

    Args:
        scorer: ``list[item] -> list[result dict]`` (``reward, s_ver, labels, s_pat, z, step_f1, degraded``).
        kind: the reward kind (phase 2 kind under a curriculum).
        curriculum: the phase switch, or None.
        rollout_log: a JSONL path to append every scored rollout to, or None.
    """

    def __init__(self, scorer: Callable[[list[dict]], list[Mapping[str, Any]]], kind: str,
                 curriculum: CurriculumSpec | None = None, rollout_log: str | None = None):
        if kind not in KINDS:
            raise ValueError(f"kind={kind!r} is not one of {list(KINDS)}")
        self.scorer, self.kind, self.curriculum, self.rollout_log = scorer, kind, curriculum, rollout_log
        self.__name__ = f"{kind}_curriculum" if curriculum else kind  # TRL logs rewards/<__name__>/mean

    def kind_at(self, step: int) -> str:
        """The reward kind at global step ``step`` (phase 1 before ``switch_step``)."""
        if self.curriculum is not None and step < self.curriculum.switch_step:
            return self.curriculum.phase1_kind
        return self.kind

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], answer: Sequence[str],
                 answer_type: Sequence[str], reference_steps: Sequence[Sequence[str]] | None = None,
                 options: Sequence[Sequence[str]] | None = None, trainer_state: Any = None,
                 log_metric: Callable[[str, float], None] | None = None, **_: Any) -> list[float]:
        n = len(completions)
        step = int(getattr(trainer_state, "global_step", 0) or 0)
        kind = self.kind_at(step)
        items = rollout_items(prompts, completions, answer, answer_type, kind, reference_steps, options)
        results = list(self.scorer(items))
        if len(results) != n:
            raise ValueError(f"scorer returned {len(results)} results for {n} items")
        self.last = (completions, kind, results)  # read by ComponentRewards (PCGrad's per-component rewards)
        rewards = [float(r["reward"]) for r in results]
        bad = [r for r in results if r.get("degraded")]
        if bad:  # issue 21: never silent; reward_parts/degraded below is the per-step share in the training log
            log.warning("%d/%d %s rewards degraded (e.g. %s)", len(bad), n, kind, bad[0].get("error"))
        if log_metric is not None:
            for k, v in reward_parts(results).items():
                log_metric(f"reward_parts/{k}", v)
            log_metric("reward_parts/phase", 1.0 if kind != self.kind else 2.0)
        if self.rollout_log:
            Path(self.rollout_log).parent.mkdir(parents=True, exist_ok=True)
            with open(self.rollout_log, "a", encoding="utf-8") as f:
                for it, r in zip(items, results):
                    f.write(json.dumps({"step": step, **it, "result": dict(r)}) + "\n")
        return rewards


class ComponentRewards:
    """One TRL reward function per component of a reward (PCGrad's tasks; ``howeval.training.pcgrad``).

    ``functions[0]`` scores the batch through ``reward`` (a :class:`GRPOReward`: its logging, rollout log and
    curriculum unchanged) and returns each row's first component; the others return their component of the
    same rows (TRL calls a trainer's reward functions in order on the same completions). The components sum
    to the reward (``howeval.rewards.functions.reward_components``), so TRL's summed ``reward`` is the
    reward of a run without PCGrad. A component the current kind has not (phase 1 ``base`` of a
    curriculum has no ``reasoning``) is 0.0.

    Raises (when called):
        ValueError: a row without ``components`` (a reward server older than the composite kind: update it),
            or a later function called before the first on these completions.
    """

    def __init__(self, reward: GRPOReward):
        from howeval.rewards.functions import COMPONENTS

        self.reward = reward
        self.names = COMPONENTS[reward.kind]
        self.functions = [self._function(k, name) for k, name in enumerate(self.names)]

    def _function(self, k: int, name: str) -> Callable[..., list[float]]:
        def component(prompts: Sequence[Any], completions: Sequence[Any], **kw: Any) -> list[float]:
            if k == 0:
                self.reward(prompts, completions, **kw)
            last = getattr(self.reward, "last", None)
            if last is None or last[0] is not completions:
                raise ValueError(f"reward component {name!r} asked before the batch was scored (the first "
                                 f"component, {self.names[0]!r}, must be the first reward function)")
            out = []
            for i, r in enumerate(last[2]):
                comps = r.get("components")
                if comps is None:
                    raise ValueError(f"reward row {i} has no 'components' (pcgrad needs them): the reward server "
                                     "predates them; update it or use reward.source=inprocess")
                out.append(float(comps.get(name, 0.0)))
            return out

        component.__name__ = f"{self.reward.__name__}_{name}"  # TRL logs rewards/<name>/mean
        return component


class InProcessScorer:
    """``score_items`` with its PatternRM (``howeval.judges.patternrm.model.PatternRM``) and step embedder made lazily."""

    def __init__(self, spec: RewardSpec, engine_builder: Callable[[str, dict], Any] | None = None):
        self.spec = spec
        self._rm = None
        self._emb = None
        self._llm = None
        self._engine_builder = engine_builder  # tests; None = the openai engine (howeval.judges.registry)

    def _llm_verify(self, items: list[Mapping[str, Any]]) -> list[dict]:
        """PatternRL's verifier fallback in-process: the sweep's ``LLMVerifier`` on the unresolved items."""
        if self._llm is None:
            from howeval.judges.registry import default_engine_builder
            from howeval.judges.verify import LLMVerifier

            lv = self.spec.llm_verifier
            self._llm = LLMVerifier((self._engine_builder or default_engine_builder)(lv.model, lv.options),
                                    max_tokens=lv.max_tokens)
        res = self._llm.verify_batch([{"question": it["prompt"], "response": it["response"], "answer": it["answer"],
                                       "answer_type": it["answer_type"], "options": it.get("options")} for it in items])
        return [{"correct": r.correct, "method": r.method, "reason": r.reason} for r in res]

    def _label_batch(self, items: list[dict]) -> list[dict]:
        if self._rm is None:
            from howeval.judges.patternrm.model import PatternRM

            self._rm = PatternRM.from_config(self.spec.patternrm)
        return self._rm.label_batch(items)

    def _step_f1(self, pairs: list[dict]) -> list[float]:
        from howeval.rewards.pipeline import step_f1_batch

        if self._emb is None:
            from howeval.embed import StepEmbedder

            self._emb = StepEmbedder(self.spec.cpr.embedder_path)
        return step_f1_batch(self._emb, pairs, self.spec.cpr)

    def __call__(self, items: list[dict]) -> list[dict]:
        llm = self._llm_verify if self.spec.on_unresolved == "llm" else None
        return score_items(items, self.spec.pattern, self.spec.cpr, self._label_batch, self._step_f1,
                           on_unresolved=self.spec.on_unresolved, llm_verify=llm)
