"""Reward functions: PatternRL's pattern-gated verifier reward and CRYSTAL's CPR reward.

Pure functions (STYLE rule 5): no I/O, no global state, no randomness; the Bernoulli gate is a hash of
the rollout's key, so the reward server and the GRPO trainer compute the same z for the same rollout.
Scalar functions score one rollout; ``howeval.rewards.pipeline`` applies them to a batch, and the one TRL
reward function over that pipeline is ``howeval.training.rewards.GRPOReward``.

Sources: SPEC.md section 2 ("PatternRM and PatternRL", s_pat and the gate reconstructed) and section 3
("CRYSTAL", CPR reward; CRYSTAL arXiv 2603.13099).
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping

from howeval.records import LABELS  # CoT leakage, Repetition, Contradiction, Performative

_PATTERN_AGGREGATES: dict[str, Callable[[list[int]], float]] = {
    "mean": lambda b: sum(b) / len(b),
    "max": lambda b: float(max(b)),
}


def pattern_score(labels: Mapping[str, bool], mode: str = "mean") -> float:
    """Pattern score s_pat from PatternRM's four labels (SPEC section 2, **reconstructed**).

    ``mode="mean"``: s_pat = 1 − (1/4)·Σ_p b̂_p;  ``mode="max"``: s_pat = 1 − max_p b̂_p.
    Range [0, 1]; 1 means no pattern. The mean form is the default the SPEC writes first.

    Args:
        labels: exactly the keys ``cot, rep, con, pr`` with bool (or 0/1) values.
        mode: ``"mean"`` or ``"max"``.

    >>> pattern_score({"cot": True, "rep": False, "con": False, "pr": False})
    0.75
    >>> pattern_score({"cot": True, "rep": False, "con": False, "pr": False}, mode="max")
    0.0
    """
    if mode not in _PATTERN_AGGREGATES:
        raise ValueError(f"mode={mode!r} is not registered; registered: {sorted(_PATTERN_AGGREGATES)}")
    keys = set(labels)
    if keys != set(LABELS):
        raise ValueError(
            f"labels must have exactly {list(LABELS)}; missing {sorted(set(LABELS) - keys)}, "
            f"unexpected {sorted(keys - set(LABELS))}"
        )
    bits = []
    for k in LABELS:
        v = labels[k]
        if v not in (0, 1) or isinstance(v, float):  # True/False/0/1 only
            raise ValueError(f"label {k!r}={v!r} must be a bool (or 0/1)")
        bits.append(int(v))
    return 1.0 - _PATTERN_AGGREGATES[mode](bits)


def pattern_reward(s_ver: float, s_pat: float | None, z: int) -> float:
    """PatternRL reward R = s_ver · (0.9 + 0.1·a), a = z·s_pat + (1 − z)·1 (SPEC section 2).

    A wrong answer (s_ver = 0) always gets 0; a correct one gets a value in [0.9, 1]. When z = 0 the
    PatternRM was not called for this rollout and s_pat is ignored (it may be None).

    Args:
        s_ver: verifier reward in [0, 1] (in {0, 1} for the paper's verifier).
        s_pat: pattern score in [0, 1], or None when PatternRM was not called.
        z: the gate, 0 or 1 (see ``bernoulli_gate``).

    Raises:
        ValueError: z = 1 with s_pat None, or any value out of range.

    >>> round(pattern_reward(1.0, 0.75, 1), 6)
    0.975
    >>> pattern_reward(1.0, None, 0)
    1.0
    >>> pattern_reward(0.0, 1.0, 1)
    0.0
    """
    if z not in (0, 1) or isinstance(z, float):
        raise ValueError(f"z={z!r} must be 0 or 1")
    if not 0.0 <= s_ver <= 1.0:
        raise ValueError(f"s_ver={s_ver!r} must lie in [0, 1]")
    if z == 1:
        if s_pat is None:
            raise ValueError("z=1 (PatternRM called) but s_pat is None: the pattern score is missing")
        if not 0.0 <= s_pat <= 1.0:
            raise ValueError(f"s_pat={s_pat!r} must lie in [0, 1]")
        a = s_pat
    else:
        a = 1.0
    return s_ver * (0.9 + 0.1 * a)


def bernoulli_gate(key: str, p: float = 0.6, seed: int = 0) -> int:
    """z ~ Bernoulli(p), drawn deterministically from SHA-256 of ``f"{seed}:{key}"`` (SPEC section 2).

    The first 8 bytes of the digest, read as an unsigned integer and divided by 2**64, give u in [0, 1);
    z = 1 when u < p. Same key and seed give the same z on every machine and Python version (no
    ``hash()``, which is salted per process). Over many keys the mean of z tends to p.

    Args:
        key: a stable rollout id, e.g. ``f"{prompt_id}:{generation_index}:{step}"``.
        p: probability of calling PatternRM, in [0, 1] (paper: 0.6).
        seed: run-level seed.

    >>> bernoulli_gate("prompt-1:0", p=1.0), bernoulli_gate("prompt-1:0", p=0.0)
    (1, 0)
    >>> bernoulli_gate("prompt-1:0") == bernoulli_gate("prompt-1:0")
    True
    """
    if not isinstance(key, str):
        raise TypeError(f"key must be str, got {type(key).__name__}: {key!r}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p={p!r} must lie in [0, 1]")
    # "surrogatepass": a key with a lone surrogate (any str a JSON body can carry) still hashes; other
    # keys encode exactly as plain UTF-8, so their gates are unchanged
    digest = hashlib.sha256(f"{seed}:{key}".encode("utf-8", "surrogatepass")).digest()
    u = int.from_bytes(digest[:8], "big") / 2.0**64
    return int(u < p)


def cpr_reward(correct: bool, step_f1: float, a_w: float = 0.65, s_w: float = 0.35, lam: float = 0.3) -> float:
    """CRYSTAL's CPR reward (SPEC section 3): multiplicative in answer correctness.

    correct: R = a_w + s_w · F1_step;  wrong: R = s_w · F1_step · λ.
    Range [0, a_w + s_w] (= [0, 1] with the defaults). Defaults a_w = 0.65, s_w = 0.35 are the paper's
    ablation winner (the reference code uses 0.6 / 0.4); λ = 0.3.

    Args:
        correct: verifier verdict on the final answer.
        step_f1: Match F1 of the predicted steps, in [0, 1] (``howeval.metrics.steps.step_scores``).

    >>> cpr_reward(True, 0.5)
    0.825
    >>> round(cpr_reward(False, 0.5), 6)
    0.0525
    """
    if not isinstance(correct, (bool, int)) or correct not in (0, 1):
        raise ValueError(f"correct={correct!r} must be a bool")
    if not 0.0 <= step_f1 <= 1.0:
        raise ValueError(f"step_f1={step_f1!r} must lie in [0, 1]")
    for name, v in (("a_w", a_w), ("s_w", s_w), ("lam", lam)):
        if v < 0:
            raise ValueError(f"{name}={v!r} must be >= 0")
    return a_w + s_w * step_f1 if correct else s_w * step_f1 * lam


def composite_reward(correct: bool, step_f1: float, a_w: float = 0.65, s_w: float = 0.35) -> float:
    """CRYSTAL's additive "Composite" reward, the ablation CPR replaces (CRYSTAL arXiv 2603.13099, GRPO
    ablation table, row "Composite (加法式)": accuracy 44.92 %, Match F1 0.426, "reasoning degrades, NaN after
    1,500 steps"; section "Causal Process Reward": "an additive reward lets the model score by guessing the
    answer and ignore the reasoning").

    R = a_w · 1[correct] + s_w · F1_step  (**reconstructed**: the paper names the reward additive and gives
    no formula; this is CPR's two terms added instead of coupled, with CPR's weights). Range [0, a_w + s_w].
    Unlike :func:`cpr_reward`, a wrong answer keeps the full step credit s_w · F1 (no λ).

    >>> composite_reward(True, 0.5)
    0.825
    >>> composite_reward(False, 0.5)
    0.175
    """
    if not isinstance(correct, (bool, int)) or correct not in (0, 1):
        raise ValueError(f"correct={correct!r} must be a bool")
    if not 0.0 <= step_f1 <= 1.0:
        raise ValueError(f"step_f1={step_f1!r} must lie in [0, 1]")
    for name, v in (("a_w", a_w), ("s_w", s_w)):
        if v < 0:
            raise ValueError(f"{name}={v!r} must be >= 0")
    return a_w * float(bool(correct)) + s_w * step_f1


COMPONENTS: dict[str, tuple[str, ...]] = {
    "base": ("accuracy",),
    "pattern": ("accuracy", "pattern"),
    "cpr": ("accuracy", "reasoning"),
    "composite": ("accuracy", "reasoning"),
}
"""The named parts of each reward kind (:func:`reward_components`); PCGrad treats each as one task."""


def reward_components(kind: str, reward: float, s_ver: float, a_w: float = 0.65) -> dict[str, float]:
    """A reward split into its accuracy part and the rest, the parts summing to ``reward`` exactly.

    The tasks of PCGrad (CRYSTAL: "PCGrad detects and projects conflicting gradients" between the accuracy
    objective and the reasoning objective; ``howeval.training.pcgrad``):

    - base: ``accuracy`` = R = s_ver;
    - pattern: ``accuracy`` = 0.9 · s_ver, ``pattern`` = R − 0.9 · s_ver (= 0.1 · a · s_ver, SPEC section 2);
    - cpr: ``accuracy`` = a_w · s_ver, ``reasoning`` = R − a_w · s_ver (= s_w · F1, or s_w · F1 · λ when wrong);
    - composite: ``accuracy`` = a_w · s_ver, ``reasoning`` = R − a_w · s_ver (= s_w · F1).

    Args:
        kind: one of :data:`COMPONENTS`.
        reward: the row's reward; s_ver: its verifier reward in {0, 1}; a_w: the answer weight it was made with.

    >>> reward_components("cpr", 0.0525, 0.0)
    {'accuracy': 0.0, 'reasoning': 0.0525}
    >>> {k: round(v, 6) for k, v in reward_components("pattern", 0.975, 1.0).items()}
    {'accuracy': 0.9, 'pattern': 0.075}
    """
    if kind not in COMPONENTS:
        raise ValueError(f"kind={kind!r} is not one of {list(COMPONENTS)}")
    if kind == "base":
        return {"accuracy": float(reward)}
    acc = (0.9 if kind == "pattern" else a_w) * float(s_ver)
    return {"accuracy": acc, COMPONENTS[kind][1]: float(reward) - acc}
