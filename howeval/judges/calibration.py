"""Judge calibration against human labels, and the sampler that builds a calibration set (SPEC section 1).

**Scores.** Each candidate judge labels the same fixed responses; against the human 4-label vectors
:func:`calibration_scores` reports, per label, TP/FP/FN/TN, precision = TP/(TP+FP), recall = TP/(TP+FN),
F1 = 2PR/(P+R), and their macro averages over the four labels. Conventions (named, since sources differ):
precision is None when the judge predicts no positive, recall is None when the humans marked none, F1 is
None when either is None (and 0 when P + R = 0); a macro average is the mean over the labels where the
value is defined (``macro_n`` says over how many). Items a judge failed on (``judge_error``) or never
labelled are counted in ``n_missing`` and left out of that judge's scores: never filled with a default.
Trigger (any label) gets the same scores as a fifth row.

**Items.** A human-label row names its response either by the run key ``sample_id``/``config``/``mode``
or by a recorded-response reference ``source`` (file name) / ``id`` / ``model``; :func:`item_key` turns
either into one string. Labels are ``{"cot", "rep", "con", "pr"}`` booleans.

**Sampler.** :func:`sample_calibration_set` draws ``n`` items from responses labelled by several judges:
consensus items (every judge gave the same whole vector, none failed) and disputed items at
``consensus_ratio`` (default 0.7, i.e. 7:3), and inside each stratum triggering vs non-triggering items
so that the predicted trigger rate is near ``target_trigger`` (default 0.7). An item's predicted trigger is
the majority of the labelling judges' trigger indicators (ties count as triggering: at least one
competent judge saw a pattern). Seeded and order-independent (items are sorted by key before shuffling).
"""
from __future__ import annotations

import random
from collections.abc import Mapping

from howeval.judges.consensus import consensus
from howeval.judges.verdict import PatternVerdict
from howeval.records import LABELS
from howeval.store import iter_jsonl

TRIGGER = "trigger"
"""Name of the fifth score row: the any-label trigger indicator."""


def item_key(row: Mapping) -> str:
    """The item a label or prediction row refers to.

    ``sample_id|config|mode`` when the row has all three (a run's responses), else
    ``source|id|model`` from a recorded-response reference (missing parts empty).

    >>> item_key({"sample_id": "s1", "config": "m", "mode": "T", "labels": {}})
    's1|m|T'
    >>> item_key({"source": "mathv_model_responses.jsonl", "id": 4, "model": "qwen-vl-max"})
    'mathv_model_responses.jsonl|4|qwen-vl-max'
    """
    if all(row.get(k) is not None for k in ("sample_id", "config", "mode")):
        return f"{row['sample_id']}|{row['config']}|{row['mode']}"
    if row.get("id") is None:
        raise ValueError(f"row names no item: give sample_id/config/mode or source/id/model; keys: {sorted(row)}")
    return f"{row.get('source') or ''}|{row['id']}|{row.get('model') or ''}"


def labels_of(row: Mapping) -> dict[str, bool] | None:
    """The four labels of a row: a ``labels`` dict or flat ``cot``/``rep``/``con``/``pr`` columns.

    Returns None when the row carries a ``judge_error`` or any label is null. Raises on non-bool values.
    """
    if row.get("judge_error"):
        return None
    src = row.get("labels") if isinstance(row.get("labels"), Mapping) else row
    vals = {k: src.get(k) for k in LABELS}
    if any(v is None for v in vals.values()):
        return None
    bad = {k: v for k, v in vals.items() if not isinstance(v, bool)}
    if bad:
        raise TypeError(f"labels must be JSON booleans, got {bad} in row {item_key(row) if 'id' in row or 'sample_id' in row else row}")
    return vals


def _prf(tp: int, fp: int, fn: int, tn: int) -> dict:
    p = tp / (tp + fp) if tp + fp else None
    r = tp / (tp + fn) if tp + fn else None
    f1 = None if p is None or r is None else (2 * p * r / (p + r) if p + r else 0.0)
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn, "support": tp + fn, "predicted": tp + fp,
            "precision": p, "recall": r, "f1": f1}


def _mean_defined(vals: list[float | None]) -> tuple[float | None, int]:
    d = [v for v in vals if v is not None]
    return (sum(d) / len(d) if d else None), len(d)


def score_judge(human: Mapping[str, Mapping[str, bool]], predicted: Mapping[str, Mapping[str, bool] | None]) -> dict:
    """Scores of one judge: ``{"n", "n_missing", "missing", "labels": {label: prf}, "trigger": prf, "macro"}``.

    Args:
        human: item key -> human labels.
        predicted: item key -> the judge's labels, or None where it failed.
    """
    keys = sorted(human)
    have = [k for k in keys if predicted.get(k) is not None]
    missing = [k for k in keys if predicted.get(k) is None]
    per = {}
    for lab in (*LABELS, TRIGGER):
        tp = fp = fn = tn = 0
        for k in have:
            h = any(human[k].values()) if lab == TRIGGER else human[k][lab]
            p = any(predicted[k].values()) if lab == TRIGGER else predicted[k][lab]  # type: ignore[union-attr]
            tp += h and p
            fp += p and not h
            fn += h and not p
            tn += not h and not p
        per[lab] = _prf(tp, fp, fn, tn)
    macro = {}
    for m in ("precision", "recall", "f1"):
        macro[m], macro[f"{m}_n"] = _mean_defined([per[lab][m] for lab in LABELS])
    return {"n": len(have), "n_missing": len(missing), "missing": missing,
            "labels": {k: per[k] for k in LABELS}, "trigger": per[TRIGGER], "macro": macro}


def calibration_scores(human: Mapping[str, Mapping[str, bool]],
                       predictions: Mapping[str, Mapping[str, Mapping[str, bool] | None]]) -> dict:
    """Per judge scores (:func:`score_judge`) over the human-labelled items.

    Args:
        human: item key -> human labels (``{"cot", "rep", "con", "pr"}``).
        predictions: judge name -> item key -> labels (None: judge error).

    Returns:
        ``{"n_items", "human_rates": {label: rate, "trigger": rate}, "judges": {name: scores}}``.

    Raises:
        ValueError: no human labels.
    """
    if not human:
        raise ValueError("no human-labelled items")
    n = len(human)
    rates = {k: sum(h[k] for h in human.values()) / n for k in LABELS}
    rates[TRIGGER] = sum(any(h.values()) for h in human.values()) / n
    return {"n_items": n, "human_rates": rates,
            "judges": {name: score_judge(human, preds) for name, preds in sorted(predictions.items())}}


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def calibration_table(scores: dict) -> str:
    """Markdown: one row per judge x label (P, R, F1, support, TP/FP/FN) and a macro row per judge."""
    lines = [f"Human-labelled items: {scores['n_items']}; human positive rates: "
             + ", ".join(f"{k} {100 * v:.0f}%" for k, v in scores["human_rates"].items()), "",
             "| judge | label | precision | recall | F1 | human + | judge + | TP | FP | FN | scored / missing |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, s in scores["judges"].items():
        for lab in (*LABELS, TRIGGER):
            x = s["labels"][lab] if lab in LABELS else s["trigger"]
            lines.append(f"| {name} | {lab} | {_f(x['precision'])} | {_f(x['recall'])} | {_f(x['f1'])} | "
                         f"{x['support']} | {x['predicted']} | {x['tp']} | {x['fp']} | {x['fn']} | "
                         f"{s['n']} / {s['n_missing']} |")
        m = s["macro"]
        lines.append(f"| {name} | **macro (4 labels)** | {_f(m['precision'])} ({m['precision_n']}) | "
                     f"{_f(m['recall'])} ({m['recall_n']}) | {_f(m['f1'])} ({m['f1_n']}) | | | | | | |")
    lines += ["", "Macro = mean over the labels where the value is defined (count in brackets): precision is "
              "undefined when the judge predicts no positive, recall when the humans marked none."]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# The calibration-set sampler
# ------------------------------------------------------------------------------------------------


def predicted_trigger(verdicts: Mapping[str, PatternVerdict]) -> bool | None:
    """Majority trigger of the judges that produced labels (a tie counts as True); None when none did."""
    trig = [v.trigger for v in verdicts.values() if v.error is None]
    if not trig:
        return None
    return 2 * sum(trig) >= len(trig)


def _take(pos: list, neg: list, k: int, want_pos: int) -> tuple[list, list]:
    """``k`` items with ``want_pos`` from ``pos`` when possible, the shortfall filled from the other side."""
    want_pos = max(0, min(k, want_pos))
    a = min(want_pos, len(pos))
    b = min(k - a, len(neg))
    a = min(k - b, len(pos))  # refill from pos when neg is short
    return pos[:a], neg[:b]


def sample_calibration_set(verdicts_by_judge_by_item: Mapping[str, Mapping[str, PatternVerdict]], n: int,
                           consensus_ratio: float = 0.7, target_trigger: float = 0.7, seed: int = 0) -> dict:
    """Draw ``n`` items: consensus vs disputed at ``consensus_ratio``, predicted trigger near ``target_trigger``.

    Args:
        verdicts_by_judge_by_item: item key -> judge name -> verdict (every item should have every judge).
        n: items to draw.
        consensus_ratio: share of consensus items (default 0.7 = the paper's 7:3).
        target_trigger: wanted share of items whose predicted trigger is True (default 0.7).
        seed: shuffling seed.

    Returns:
        ``{"items": [{"key", "stratum", "predicted_trigger", "vector"}], "n", "n_consensus", "n_disputed",
        "achieved_ratio", "predicted_trigger_rate", "targets", "available", "shortfall"}``; ``shortfall``
        lists in words where the pool could not meet a target. Items where every judge failed are skipped
        (``available["no_labels"]``).

    Raises:
        ValueError: a bad ``n``, ratio or target.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    for name, v in (("consensus_ratio", consensus_ratio), ("target_trigger", target_trigger)):
        if not 0 <= v <= 1:
            raise ValueError(f"{name} must be in [0, 1], got {v}")
    pools: dict[tuple[str, bool], list[dict]] = {(s, t): [] for s in ("consensus", "disputed") for t in (True, False)}
    no_labels = 0
    for key in sorted(verdicts_by_judge_by_item):
        vs = verdicts_by_judge_by_item[key]
        t = predicted_trigger(vs)
        if t is None:
            no_labels += 1
            continue
        c = consensus(vs)
        stratum = "consensus" if c.is_consensus_sample else "disputed"
        pools[(stratum, t)].append({"key": key, "stratum": stratum, "predicted_trigger": t,
                                    "vector": list(c.as_vector())})
    rng = random.Random(seed)
    for p in pools.values():
        rng.shuffle(p)
    n_cons_avail = len(pools[("consensus", True)]) + len(pools[("consensus", False)])
    n_disp_avail = len(pools[("disputed", True)]) + len(pools[("disputed", False)])
    shortfall = []
    if n > n_cons_avail + n_disp_avail:
        shortfall.append(f"asked for {n} items, only {n_cons_avail + n_disp_avail} have labels")
        n = n_cons_avail + n_disp_avail
    want_cons = round(n * consensus_ratio)
    k_cons = min(want_cons, n_cons_avail)
    k_disp = min(n - k_cons, n_disp_avail)
    k_cons = min(n - k_disp, n_cons_avail)
    if k_cons != want_cons:
        shortfall.append(f"wanted {want_cons} consensus items, took {k_cons} "
                         f"({n_cons_avail} consensus and {n_disp_avail} disputed available)")
    want_pos = round(n * target_trigger)
    want_cons_pos = round(k_cons * target_trigger)
    cons = _take(pools[("consensus", True)], pools[("consensus", False)], k_cons, want_cons_pos)
    disp = _take(pools[("disputed", True)], pools[("disputed", False)], k_disp, want_pos - len(cons[0]))
    if len(cons[0]) + len(disp[0]) != want_pos:
        # the disputed stratum could not absorb the remainder: rebalance the consensus stratum
        cons = _take(pools[("consensus", True)], pools[("consensus", False)], k_cons, want_pos - len(disp[0]))
    items = [*cons[0], *cons[1], *disp[0], *disp[1]]
    n_pos = sum(it["predicted_trigger"] for it in items)
    if n_pos != want_pos:
        shortfall.append(f"wanted {want_pos} predicted-triggering items, took {n_pos}")
    k = len(items)
    return {
        "items": items, "n": k, "n_consensus": len(cons[0]) + len(cons[1]), "n_disputed": len(disp[0]) + len(disp[1]),
        "achieved_ratio": (len(cons[0]) + len(cons[1])) / k if k else None,
        "predicted_trigger_rate": n_pos / k if k else None,
        "targets": {"n": n, "consensus_ratio": consensus_ratio, "target_trigger": target_trigger, "seed": seed},
        "available": {f"{s}_{'trigger' if t else 'clean'}": len(p) for (s, t), p in pools.items()} | {"no_labels": no_labels},
        "shortfall": shortfall,
    }


def load_human(path: str) -> tuple[dict[str, dict[str, bool]], dict[str, dict]]:
    """``(labels by item key, label rows by item key)``. Raises on a duplicate item or a row without labels."""
    human, rows = {}, {}
    for i, r in iter_jsonl(path):
        k = item_key(r)
        if k in human:
            raise ValueError(f"{path}:{i}: item {k!r} labelled twice")
        labs = labels_of(r)
        if labs is None:
            raise ValueError(f"{path}:{i}: item {k!r} needs all four labels {list(LABELS)} as booleans")
        human[k], rows[k] = labs, r
    return human, rows


def predictions_from_jsonl(path: str) -> dict[str, dict[str, dict | None]]:
    """judge -> item key -> labels (None on judge_error) from rows ``{item key..., judge, labels | cot.., judge_error?}``."""
    out: dict[str, dict[str, dict | None]] = {}
    for i, r in iter_jsonl(path):
        if not r.get("judge"):
            raise ValueError(f"{path}:{i}: prediction row needs a 'judge' name")
        preds = out.setdefault(str(r["judge"]), {})
        k, labs = item_key(r), labels_of(r)
        if labs is not None or k not in preds:
            preds[k] = labs
    return out
