"""PatternEval metrics (SPEC section 1): Acc, Trigger, per-label rates, by family and category, Δacc, Δpat.

Input rows are Response rows joined with one pattern judge's Judgment (columns ``correct`` and the four
labels). Null values are excluded from the mean they would enter, and counted:
- ``correct`` null: engine error (``no_response``) or an unresolved verifier case;
- labels null: engine error, judge error, or a truncated response (no y_m to judge).
A truncated thinking response counts as wrong (it gave no answer), never as judged text.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from howeval.records import LABELS, MODES


def mean_or_none(values: Iterable) -> float | None:
    """Mean of the non-null values as floats (bools count 0/1); None when there are none.

    >>> mean_or_none([True, False, None, True])
    0.6666666666666666
    >>> mean_or_none([None]) is None
    True
    """
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def trigger_of(row: dict) -> bool | None:
    """t = 1[b_CoT + b_Rep + b_Con + b_PR > 0] (SPEC 1, reconstructed: any label); None when unlabelled."""
    labels = [row.get(k) for k in LABELS]
    if any(v is None for v in labels):
        return None
    return any(labels)


def group_metrics(rows: list[dict]) -> dict:
    """Acc, Trigger and label rates over ``rows``, in two forms.

    - ``acc`` / ``trigger``: over the rows with a verdict / with labels (denominators ``n_scored`` /
      ``n_labeled``): unresolved answers, engine errors, truncated and judge-error rows are left out.
    - ``acc_all_n`` / ``trigger_all_n``: the paper's form, over all N prompts (SPEC section 1, "over N
      prompts: Acc = mean(c), Trigger = mean(t)"): a row without a verdict (unresolved, engine error)
      counts as wrong, and a row without labels (truncated, judge or engine error) as not triggered.
      It is None (not measured) when no row has a verdict (``acc_all_n``) / labels (``trigger_all_n``):
      a run whose every call failed measured nothing, and 0.0 there would read as a measurement.

    Returns a dict: ``n`` (rows), ``n_scored`` (correct known), ``n_labeled`` (labels known), ``acc``,
    ``trigger``, ``acc_all_n``, ``trigger_all_n`` in [0, 1] or None (no rows / no denominator),
    ``labels`` {cot, rep, con, pr} rates in [0, 1] or None (over the labelled rows).

    >>> g = group_metrics([{"correct": True, "cot": True, "rep": False, "con": False, "pr": False},
    ...                    {"correct": None, "cot": None, "rep": None, "con": None, "pr": None}])
    >>> g["acc"], g["n_scored"], g["acc_all_n"], g["trigger"], g["trigger_all_n"]
    (1.0, 1, 0.5, 1.0, 0.5)
    """
    n = len(rows)
    return {
        "n": n,
        "n_scored": sum(r.get("correct") is not None for r in rows),
        "n_labeled": sum(trigger_of(r) is not None for r in rows),
        "acc": mean_or_none(r.get("correct") for r in rows),
        "trigger": mean_or_none(trigger_of(r) for r in rows),
        "acc_all_n": _all_n([r.get("correct") for r in rows]),
        "trigger_all_n": _all_n([trigger_of(r) for r in rows]),
        "labels": {k: mean_or_none(r.get(k) for r in rows) for k in LABELS},
    }


def _all_n(values: list[bool | None]) -> float | None:
    """Share of True over all values (None counts as not True); None when no value is known.

    >>> _all_n([True, None, False, None]), _all_n([None, None])
    (0.25, None)
    """
    if not any(v is not None for v in values):
        return None
    return sum(v is True for v in values) / len(values)


def _by(rows: list[dict], key: str) -> dict:
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[str(r.get(key))].append(r)
    return {k: group_metrics(v) for k, v in sorted(groups.items())}


def mode_metrics(rows: list[dict]) -> dict:
    """Metrics for one config in one mode: :func:`group_metrics` plus failure counts and breakdowns.

    Also ``n_reasoning`` (rows with a non-empty reasoning channel r_m: in T mode, the evidence that the
    model thought) and ``n_length_cut`` (rows whose generation stopped at the length limit,
    ``finish_reason == "length"``: cut answers, whether or not a reasoning block was left open), both
    over the rows without an engine error.
    """
    m = group_metrics(rows)
    m.update({
        "n_errors": sum(bool(r.get("error")) for r in rows),
        "n_truncated": sum(bool(r.get("truncated")) for r in rows),
        "n_unresolved": sum(r.get("correct") is None and not r.get("error") for r in rows),
        "n_judge_errors": sum(bool(r.get("judge_error")) and not r.get("error") for r in rows),
        # did the mode think? rows with a reasoning channel r_m, and answers the length limit cut
        "n_reasoning": sum(bool((r.get("reasoning") or "").strip()) for r in rows if not r.get("error")),
        "n_length_cut": sum(r.get("finish_reason") == "length" for r in rows if not r.get("error")),
        "mean_completion_tokens": mean_or_none(r.get("completion_tokens") for r in rows if not r.get("error")),
        "mean_response_chars": mean_or_none(len(r.get("response") or "") for r in rows if not r.get("error")),
        "by_family": _by(rows, "family"),
        "by_category": _by(rows, "category"),
    })
    return m


def paired_outcomes(nt: list[dict], t: list[dict]) -> tuple[list[tuple], list[tuple]]:
    """``(acc_pairs, trigger_pairs)``: (NT, T) outcomes on the prompts both modes have, paired by
    ``sample_id``; a pair enters only when both sides are known (correct / labels not null)."""
    a, b = {r["sample_id"]: r for r in nt}, {r["sample_id"]: r for r in t}
    both = sorted(set(a) & set(b))
    acc = [(a[s]["correct"], b[s]["correct"]) for s in both
           if a[s].get("correct") is not None and b[s].get("correct") is not None]
    pat = [(trigger_of(a[s]), trigger_of(b[s])) for s in both
           if trigger_of(a[s]) is not None and trigger_of(b[s]) is not None]
    return acc, pat


def paired_deltas(nt: list[dict], t: list[dict]) -> dict:
    """Δacc = Acc_T − Acc_NT and Δpat = Trigger_NT − Trigger_T on the prompts both modes have (SPEC 1).

    Pairs by ``sample_id``; a prompt enters Δacc when both modes have ``correct`` known, and Δpat when
    both have labels. Returns ``delta_acc``, ``delta_pat`` (None when no pair) and the pair counts.

    >>> nt = [{"sample_id": "a", "correct": False, "cot": True, "rep": False, "con": False, "pr": False}]
    >>> t = [{"sample_id": "a", "correct": True, "cot": False, "rep": False, "con": False, "pr": False}]
    >>> d = paired_deltas(nt, t); (d["delta_acc"], d["delta_pat"], d["n_paired_acc"])
    (1.0, 1.0, 1)
    """
    acc_pairs, pat_pairs = paired_outcomes(nt, t)
    d_acc = (sum(float(y) - float(x) for x, y in acc_pairs) / len(acc_pairs)) if acc_pairs else None
    d_pat = (sum(float(x) - float(y) for x, y in pat_pairs) / len(pat_pairs)) if pat_pairs else None
    return {"delta_acc": d_acc, "delta_pat": d_pat, "n_paired_acc": len(acc_pairs), "n_paired_pat": len(pat_pairs)}


def sweep_metrics(rows: list[dict]) -> dict:
    """``{"configs": {name: {"NT": {...}, "T": {...}, "delta_acc", "delta_pat", ...}}}`` over joined rows.

    Raises:
        ValueError: a row has a mode other than NT/T.
    """
    by_cfg: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r["mode"] not in MODES:
            raise ValueError(f"row {r.get('sample_id')!r}: mode {r['mode']!r} not in {MODES}")
        by_cfg[r["config"]][r["mode"]].append(r)
    out = {}
    for cfg, modes in sorted(by_cfg.items()):
        entry: dict = {m: mode_metrics(modes[m]) for m in MODES if m in modes}
        if "NT" in modes and "T" in modes:
            entry.update(paired_deltas(modes["NT"], modes["T"]))
        else:
            entry.update({"delta_acc": None, "delta_pat": None, "n_paired_acc": 0, "n_paired_pat": 0})
        entry["warnings"] = thinking_warnings(cfg, entry)
        out[cfg] = entry
    return {"configs": out}


def thinking_warnings(config: str, entry: dict) -> list[str]:
    """Warnings about what a config measured (one line each; [] when none).

    - A mode whose every row has an engine error, or whose every judge call failed: not measured
      (its all-N figures are None, never 0.0).
    - T rows with no reasoning channel at all: the model did not think (its template has no thinking
      mode, or the switch was not passed), so T vs NT compares two prompts or settings, not thinking
      vs non-thinking (SPEC section 1: ỹ_m = (r_m, y_m)).
    - Answers cut by the length limit, per mode: a cut answer is scored as given (or, cut inside the
      reasoning, as truncated), so Acc depends on max_tokens.

    >>> thinking_warnings("c", {"T": {"n": 4, "n_errors": 0, "n_reasoning": 0, "n_length_cut": 1}})[0][:47]
    "config 'c': none of its 4 T rows has a reasonin"
    """
    out = []
    for m in MODES:
        x = entry.get(m)
        if x and x["n"] and x.get("n_errors", 0) == x["n"]:
            out.append(f"config {config!r} {m}: not measured: all {x['n']} rows failed (engine errors: see the "
                       "error column of responses/); its Acc and Trigger are not figures")
        elif x and x["n"] - x.get("n_errors", 0) > 0 and x.get("n_labeled", 0) == 0 and x.get("n_judge_errors"):
            out.append(f"config {config!r} {m}: Trigger not measured: every judge call failed "
                       f"({x['n_judge_errors']} judge errors: see the judge_error column of judgments/)")
    t = entry.get("T")
    if t and t["n"] - t.get("n_errors", 0) > 0 and t.get("n_reasoning", 0) == 0:
        out.append(f"config {config!r}: none of its {t['n'] - t.get('n_errors', 0)} T rows has a reasoning channel: "
                   "the model did not think, so its T vs NT compares two prompts or settings, not thinking vs "
                   "non-thinking (switch the model's own thinking mode: chat_template_kwargs / reasoning_effort)")
    for m in MODES:
        x = entry.get(m)
        if x and x.get("n_length_cut"):
            out.append(f"config {config!r} {m}: {x['n_length_cut']} of {x['n']} answers stopped at the length limit "
                       f"(finish_reason 'length'; {x.get('n_truncated', 0)} of them inside the reasoning, no answer)")
    return out
