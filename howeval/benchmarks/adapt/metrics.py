"""AdaptMMBench metrics (SPEC section 4): tool labels, confusion, MCC, key-step coverage, tool
effectiveness and the per-mode / per-domain summary. Pure functions: no I/O, no randomness.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np

LABELS = ("redundant", "required", "unsolved")
"""Model-specific item labels: Tool-Redundant, Tool-Required, and the Tool-Required items no mode solves
(counted apart in the report; in the paper's MCC they are Tool-Required)."""


def tool_labels(text_mode_correct: Mapping[Hashable, bool], solved_by_any: Mapping[Hashable, bool]) -> dict[Hashable, str]:
    """Label each item for one model: ``"redundant"`` when it is correct in text mode, else
    ``"required"`` when some mode (adaptive or oracle) solves it, else ``"unsolved"``.

    Args:
        text_mode_correct: item id -> correct in text mode.
        solved_by_any: item id -> correct in at least one mode (text included).

    Raises:
        ValueError: the id sets differ, or an item is correct in text mode but not ``solved_by_any``.

    >>> tool_labels({"a": True, "b": False, "c": False}, {"a": True, "b": True, "c": False})
    {'a': 'redundant', 'b': 'required', 'c': 'unsolved'}
    """
    a, b = set(text_mode_correct), set(solved_by_any)
    if a != b:
        raise ValueError(
            f"text_mode_correct and solved_by_any must cover the same ids; only in text: {sorted(map(str, a - b))[:10]}, "
            f"only in solved_by_any: {sorted(map(str, b - a))[:10]}"
        )
    out: dict[Hashable, str] = {}
    for k, ok in text_mode_correct.items():
        if ok and not solved_by_any[k]:
            raise ValueError(f"item {k!r} is correct in text mode but solved_by_any[{k!r}] is False")
        out[k] = "redundant" if ok else ("required" if solved_by_any[k] else "unsolved")
    return out


def confusion(labels: Mapping[Hashable, str], called: Mapping[Hashable, bool],
              unsolved: str = "required") -> tuple[int, int, int, int]:
    """Adaptive-mode confusion ``(TP, FP, TN, FN)``.

    TP = required and called a tool; FP = redundant and called; TN = redundant and not called;
    FN = required and not called. ``unsolved``: how items no mode solves enter: ``"required"`` (the
    AdaptMMBench paper: the label comes from the text-mode answer alone, so an item the model gets
    wrong in text mode is Tool-Required whether or not a tool then helps) or ``"excluded"`` (left out).

    Raises:
        ValueError: an item that enters has no entry in ``called``, an unknown label, or a bad ``unsolved``.

    >>> confusion({"a": "required", "b": "redundant", "c": "unsolved"}, {"a": True, "b": False, "c": False})
    (1, 0, 1, 1)
    >>> confusion({"a": "required", "b": "redundant", "c": "unsolved"}, {"a": True, "b": False}, unsolved="excluded")
    (1, 0, 1, 0)
    """
    if unsolved not in ("required", "excluded"):
        raise ValueError(f"unsolved must be 'required' or 'excluded', got {unsolved!r}")
    tp = fp = tn = fn = 0
    for k, lab in labels.items():
        if lab not in LABELS:
            raise ValueError(f"item {k!r}: unknown label {lab!r}; expected one of {LABELS}")
        if lab == "unsolved":
            if unsolved == "excluded":
                continue
            lab = "required"
        if k not in called:
            raise ValueError(f"item {k!r} (label {lab!r}) has no adaptive-mode 'called' entry")
        c = bool(called[k])
        if lab == "required":
            tp, fn = tp + c, fn + (not c)
        else:
            fp, tn = fp + c, tn + (not c)
    return tp, fp, tn, fn


def mcc(tp: int, fp: int, tn: int, fn: int, eps: float = 1e-8) -> float:
    """Matthews correlation coefficient, exactly SPEC 4 / the AdaptMMBench paper:

        MCC = (TP·TN − FP·FN) / (sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) + ε)

    Range [-1, 1] (slightly inside it because of ε). A degenerate confusion (a row or column empty,
    e.g. every item called a tool) has numerator 0 and gives 0 instead of a division by zero.

    >>> round(mcc(5, 0, 5, 0), 6), round(mcc(0, 5, 0, 5), 6)
    (1.0, -1.0)
    >>> mcc(3, 2, 0, 0)
    0.0
    """
    for name, v in (("tp", tp), ("fp", fp), ("tn", tn), ("fn", fn)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{name} must be a non-negative int, got {v!r}")
    if eps < 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    den = math.sqrt(float(tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)) + eps
    if den == 0:
        raise ValueError("degenerate confusion with eps=0: denominator is 0")
    return (tp * tn - fp * fn) / den


def defined_mcc(tp: int, fp: int, tn: int, fn: int, eps: float = 1e-8) -> float | None:
    """:func:`mcc`, or None where it is undefined: a factor of the denominator is 0 (no tool ever called, a tool
    called on every item, or every item of one label), where the formula's ε gives 0, which would read as "no
    better than chance" (docs/metrics.md §4). What the run's JSON stores (``null``).

    >>> defined_mcc(0, 0, 30, 12), round(defined_mcc(5, 2, 6, 1), 3)
    (None, 0.577)
    """
    if 0 in (tp + fp, tp + fn, tn + fp, tn + fn):
        mcc(tp, fp, tn, fn, eps)  # the same argument checks
        return None
    return mcc(tp, fp, tn, fn, eps)


def key_step_coverage(
    key_steps: Sequence[str],
    pred_steps: Sequence[str],
    sim_fn: Callable[[Sequence[str], Sequence[str]], Any] | None = None,
    *,
    covered: Any = None,
    tau: float = 0.35,
) -> float:
    """Key step coverage = (1/|K|) Σ_j 1[k_j is covered by some predicted step s_i] (SPEC 4).

    Coverage is decided by either
    - ``sim_fn(key_steps, pred_steps) -> (|K|, |S|)`` similarities (an embedder's cosine matrix, or an
      LLM judge's 0/1 matrix): k_j is covered when some entry of its row is strictly above ``tau``
      (default 0.35, CRYSTAL's threshold for sentence embeddings); or
    - ``covered``: a precomputed ``(|K|, |S|)`` boolean matrix or a ``(|K|,)`` vector of judge decisions.

    Many-to-one is allowed (one predicted step may cover several key steps: the paper allows logical
    jumps and compression). No predicted steps: 0.0. Range [0, 1].

    Raises:
        ValueError: ``|K| = 0``, neither or both of ``sim_fn``/``covered``, or a shape mismatch.

    >>> key_step_coverage(["a", "b"], ["x"], covered=[[True], [False]])
    0.5
    >>> key_step_coverage(["a", "b"], ["a"], lambda K, S: [[float(k == s) for s in S] for k in K], tau=0.5)
    0.5
    """
    m, n = len(key_steps), len(pred_steps)
    if m == 0:
        raise ValueError("key_step_coverage needs at least one key step (|K| = 0)")
    if (sim_fn is None) == (covered is None):
        raise ValueError("give exactly one of sim_fn or covered")
    if covered is not None:
        arr = np.asarray(covered)
        if arr.shape == (m,):
            hits = arr.astype(bool)
        elif arr.ndim == 2 and arr.shape == (m, n):
            hits = arr.astype(bool).any(axis=1) if n else np.zeros(m, dtype=bool)
        else:
            raise ValueError(f"covered must have shape ({m},) or ({m}, {n}), got {arr.shape}")
        return float(hits.sum()) / m
    if n == 0:
        return 0.0
    sim = np.asarray(sim_fn(key_steps, pred_steps), dtype=float)
    if sim.shape != (m, n):
        raise ValueError(f"sim_fn returned shape {sim.shape}, expected ({m}, {n})")
    return float((sim > tau).any(axis=1).sum()) / m


def tool_effectiveness(valid: int, total: int) -> float | None:
    """Tool execution effectiveness = valid calls / all calls (SPEC 4); None when there were no calls
    (undefined, not 0).

    >>> tool_effectiveness(3, 4), tool_effectiveness(0, 0)
    (0.75, None)
    """
    if valid < 0 or total < 0 or valid > total:
        raise ValueError(f"need 0 <= valid <= total, got valid={valid}, total={total}")
    return None if total == 0 else valid / total


def mode_consistency(text_correct: Mapping[Hashable, bool], adaptive_correct: Mapping[Hashable, bool],
                     adaptive_called: Mapping[Hashable, bool]) -> dict[str, Any]:
    """Consistency of text mode with the text part of adaptive mode (AdaptMMBench §4, the check behind its
    labels: "only 0.02 of items are inconsistent"; docs/metrics.md §4) **(reconstructed)**.

    The text part of adaptive mode is the adaptive answers given without any tool call: the model reasoned in
    text there, as in text mode. An item is inconsistent when its text-mode and its tool-free adaptive answer
    differ in correctness (the Tool-Redundant / Tool-Required label would flip). Items enter when both
    verdicts exist and the adaptive episode called no tool.

    Returns ``{"n": items compared, "inconsistent": count, "rate": inconsistent / n (None when n = 0),
    "text_only": correct in text mode only, "adaptive_only": correct in the adaptive text part only}``.

    >>> mode_consistency({"a": True, "b": False, "c": True}, {"a": True, "b": True, "c": False},
    ...                  {"a": False, "b": False, "c": True})
    {'n': 2, 'inconsistent': 1, 'rate': 0.5, 'text_only': 0, 'adaptive_only': 1}
    """
    text_only = adaptive_only = n = 0
    for k, ok in text_correct.items():
        if k not in adaptive_correct or adaptive_called.get(k, True):
            continue
        n += 1
        a = bool(adaptive_correct[k])
        text_only += bool(ok) and not a
        adaptive_only += a and not ok
    bad = text_only + adaptive_only
    return {"n": n, "inconsistent": bad, "rate": bad / n if n else None,
            "text_only": text_only, "adaptive_only": adaptive_only}


# ----------------------------------------------------------------------------- summary
def _get(r: Any, key: str, default: Any = None) -> Any:
    return r.get(key, default) if isinstance(r, Mapping) else getattr(r, key, default)


def _mean(xs: list[float]) -> float | None:
    return float(sum(xs) / len(xs)) if xs else None


def summarize(results: Sequence[Any], eps: float = 1e-8) -> dict[str, Any]:
    """Aggregate scored :class:`~howeval.benchmarks.adapt.loop.AdaptiveResult` objects (or their dicts) of ONE model.

    Each result needs ``uid, mode, domain, correct`` (set by a verifier) and the loop's counters.
    Results with ``error`` set are counted under ``errors`` and left out of every other number (an
    engine failure is not an answer). Returns::

        {"n": {mode: scored results}, "errors": {mode: count},
         "accuracy": {mode: {"all": acc, <domain>: acc, ...}},
         "efficiency": {mode: {"tokens", "steps", "tool_calls", "turns"}},   # means per item
         "tool_exec_ok_rate": {mode: executed calls that ran without error / executed calls, or None},
         "labels": {"redundant": n, "required": n, "unsolved": n},
         "confusion": {"tp", "fp", "tn", "fn"}, "mcc": float or None,
         "confusion_solvable": {...}, "mcc_solvable": float or None,
         "consistency": :func:`mode_consistency` of text vs tool-free adaptive answers, or None}

    ``labels``/``confusion``/``mcc`` need text and adaptive results: ``mcc`` is None without both, and None
    (with ``confusion`` set) where it is undefined (:func:`defined_mcc`: a margin of the confusion is empty). An
    item is labelled from its text-mode result (redundant when correct, else required; "unsolved"
    counts the required items no mode solves, for the report); the confusion uses every item that also
    has an adaptive result. ``mcc`` is the paper's: over all those items, unsolved ones as Tool-Required
    (AdaptMMBench §3: labels from the text-mode result; its ~6% unsolvable items are a property of the
    data set found with reference models, not dropped per evaluated model). ``mcc_solvable`` leaves this
    model's unsolved items out (this project's earlier figure), shown beside it. ``tool_exec_ok_rate`` is the execution check
    (the call parsed and ran); the paper's judge-decided effectiveness comes from :func:`tool_effectiveness`.

    Raises:
        ValueError: a non-error result with ``correct`` None, or a duplicate ``(uid, mode)``.
    """
    by_mode: dict[str, dict[str, Any]] = defaultdict(dict)
    errors: dict[str, int] = defaultdict(int)
    for r in results:
        uid, mode = _get(r, "uid"), _get(r, "mode")
        if uid in by_mode[mode]:
            raise ValueError(f"duplicate result for uid {uid!r} in mode {mode!r}")
        if _get(r, "error"):
            errors[mode] += 1
            by_mode[mode][uid] = None
            continue
        if _get(r, "correct") is None:
            raise ValueError(f"result uid={uid!r} mode={mode!r} is not scored (correct is None); run the verifier first")
        by_mode[mode][uid] = r

    out: dict[str, Any] = {"n": {}, "errors": dict(errors), "accuracy": {}, "efficiency": {}, "tool_exec_ok_rate": {}}
    for mode, rows in by_mode.items():
        ok = [r for r in rows.values() if r is not None]
        out["n"][mode] = len(ok)
        per_dom: dict[str, list[bool]] = defaultdict(list)
        for r in ok:
            per_dom[str(_get(r, "domain"))].append(bool(_get(r, "correct")))
        acc = {"all": _mean([bool(_get(r, "correct")) for r in ok])}
        acc.update({d: _mean(v) for d, v in sorted(per_dom.items())})
        out["accuracy"][mode] = acc
        out["efficiency"][mode] = {
            "tokens": _mean([_get(r, "tokens", 0) for r in ok]),
            "steps": _mean([_get(r, "steps", 0) for r in ok]),
            "tool_calls": _mean([_get(r, "n_calls", 0) for r in ok]),
            "turns": _mean([_get(r, "n_turns", 0) for r in ok]),
        }
        executed = bad = 0
        for r in ok:
            for c in _get(r, "calls", []) or []:
                status = _get(c, "status")
                if status in ("ok", "error"):
                    executed += 1
                    bad += status == "error"
        out["tool_exec_ok_rate"][mode] = tool_effectiveness(executed - bad, executed)

    text, adaptive = by_mode.get("text"), by_mode.get("adaptive")
    out["labels"], out["confusion"], out["mcc"], out["consistency"] = None, None, None, None
    if text and adaptive:
        text_ok = {u: bool(_get(r, "correct")) for u, r in text.items() if r is not None}
        solved = {
            u: any(bool(_get(rows.get(u), "correct")) for rows in by_mode.values() if rows.get(u) is not None)
            for u in text_ok
        }
        labels = tool_labels(text_ok, solved)
        out["labels"] = {lab: sum(v == lab for v in labels.values()) for lab in LABELS}
        called = {u: bool(_get(r, "called")) for u, r in adaptive.items() if r is not None}
        usable = {u: lab for u, lab in labels.items() if u in called}
        tp, fp, tn, fn = confusion(usable, called)
        out["confusion"] = {"tp": tp, "fp": fp, "tn": tn, "fn": fn}
        out["mcc"] = defined_mcc(tp, fp, tn, fn, eps)
        tp2, fp2, tn2, fn2 = confusion(usable, called, unsolved="excluded")
        out["confusion_solvable"] = {"tp": tp2, "fp": fp2, "tn": tn2, "fn": fn2}
        out["mcc_solvable"] = defined_mcc(tp2, fp2, tn2, fn2, eps)
        adaptive_ok = {u: bool(_get(r, "correct")) for u, r in adaptive.items() if r is not None}
        out["consistency"] = mode_consistency(text_ok, adaptive_ok, called)
    return out


def summarize_rows(rows: list[dict]) -> dict:
    """``howeval.benchmarks.adapt.metrics.summarize`` over stored rows, plus the mean key-step coverage per mode
    (rows with key steps and no engine error; a process-judge failure has none), how coverage was decided
    (``coverage_method``: ``embedding@<tau>`` and/or ``llm:<judge id>``), the judge failures
    (``coverage_errors``) and ``tool_effectiveness`` per mode (:func:`tool_effectiveness` of the calls the
    LLM process judge found effective over those it judged; absent without one). Unresolved verdicts are
    counted apart."""
    scored = [dict(r, uid=r["sample_id"]) for r in rows if r.get("error") or r.get("correct") is not None]
    out = summarize(scored)
    out["unresolved"] = sum(1 for r in rows if not r.get("error") and r.get("correct") is None)
    cov: dict[str, list[float]] = {}
    for r in rows:
        if r.get("key_step_coverage") is not None:
            cov.setdefault(r["mode"], []).append(r["key_step_coverage"])
    out["key_step_coverage"] = {m: sum(v) / len(v) for m, v in sorted(cov.items())}
    out["coverage_method"] = sorted({r["coverage_method"] for r in rows if r.get("coverage_method")})
    out["coverage_errors"] = sum(1 for r in rows if r.get("coverage_error"))
    # the paper's tool execution effectiveness: calls the process judge found effective / calls it judged
    eff: dict[str, list[int]] = {}
    for r in rows:
        if r.get("n_calls_judged"):
            e = eff.setdefault(r["mode"], [0, 0])
            e[0], e[1] = e[0] + (r.get("n_calls_effective") or 0), e[1] + r["n_calls_judged"]
    out["tool_effectiveness"] = {m: tool_effectiveness(v, t) for m, (v, t) in sorted(eff.items())}
    return out
