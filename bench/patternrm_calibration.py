"""PatternRM calibration (issues 29, 42): the served head scored per human-label source as a reward uses it.

    python bench/patternrm_calibration.py [--out bench/results/patternrm_calibration.json] [--bootstrap 1000]

Reads every human label (``howeval.judges.patternrm.labelsets``: the project's 47, ROSCOE, PRM800K; texts
in place under ``../shared/data``, ``HOWEVAL_SHARED_DATA`` overrides) and the feature matrix
(``howeval.judges.patternrm.recipe.load_features``; MiniLM embeddings cached by text). Every figure is
out-of-fold: 5 outer folds stratified by source and labels; in each, the served recipe
(``recipe.select_and_fit``: feature set, C and weak-proxy weight by an inner 3-fold CV over the training
folds scored inside each source task, threshold on their out-of-fold predictions) is fitted on the other
folds and scores the held-out one. Training rows are the permissive-licence sources only (the shipped
default); the others are scored, never trained on. The same folds score: the length-only floor (one
column: log characters), the task-identity floor (the label's prevalence in the row's source task), each
representation alone, training on every source (licences aside), the verifier-bit variant, and the served
recipe.

A reward compares responses to one task, so the figure that matters is **within-task AUROC**: AUROC inside
each source task (ROSCOE's GSM8K, CosmosQA, DROP, e-SNLI; human47's MATH-Vision and TabMWP), averaged over
the tasks with >= 8 positives. Pooled AUROC also rewards telling tasks apart (``auroc_task_identity``).

Output (``--out``): ``{"by_source": {SOURCE: {LABEL: {"positives", "n", "mapping", "auroc", "auroc_length",
"auroc_task_identity", "within_task_auroc", "within_task_auroc_length", "within_task_auroc_task_identity",
each ``<name>_ci95`` ([low, high], percentile bootstrap over rows resampled inside each task), "tasks" (per
task n, positives, counted, AUROC, length AUROC), "f1", "floor_f1_all_positive", "floor_f1_length",
"goals"}}}, "trigger": {"precision", "base_rate", ...}, "goals": {...}, "verifier_bit_variant": {...},
"licence_cause": {...}, "representations": {...}, "training_sources": {...}, "served": {...}, "reward_spread": {...},
"seconds"}``. ``licence_cause``: ROSCOE ``con`` with its four tasks as training rows (share-alike DROP and e-SNLI
included), what the licence filter costs the pooled figure.
``goals``: issue 42's (ROSCOE ``con`` within task >= length within task + 0.03 and pooled >= 0.74;
PRM800K ``pr`` >= 0.65 and above length; Trigger precision on the 47 >= base rate + 0.1), each met or missed
and by how much.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TRIGGER_MARGIN = 0.1
REPRESENTATIONS = ("lex", "lex+consist+pairs", "steps", "counts", "steps+counts", "lex+steps", "lex+counts", "lex+consist+steps",
                   "counts+progress")
"""Feature sets scored alone on the same folds (``--sets``; the whole-text ``doc`` set costs 5-35x the others
and lost everywhere in head v5's comparison, docs/patternrm.md: ``--sets lex+consist+pairs+doc`` adds it)."""


def entries(records: list[dict]) -> list[tuple[str, str, str, np.ndarray, np.ndarray]]:
    """``(source, key, label, row indices, truth)`` for every (source, label mapping) with a positive: gold
    labels under their own name; a weak proxy under the label's name where the source has no gold for it,
    else under the proxy's name."""
    from howeval.records import LABELS

    out = []
    for s in sorted({r["source"] for r in records}, key=["human47", "roscoe", "prm800k"].index):
        rows = [i for i, r in enumerate(records) if r["source"] == s]
        for k in LABELS:
            g = [i for i in rows if records[i]["gold"][k] is not None]
            if g and any(records[i]["gold"][k] for i in g):
                out.append((s, k, k, np.array(g), np.array([records[i]["gold"][k] for i in g])))
            w = [i for i in rows if records[i]["weak"][k] is not None]
            if w and any(records[i]["weak"][k] for i in w):
                name = records[w[0]]["weak_name"].get(k, k)
                out.append((s, name if g else k, k, np.array(w), np.array([records[i]["weak"][k] for i in w])))
    return out


def f1(pred: np.ndarray, y: np.ndarray) -> float:
    tp, fp, fn = int((pred & (y == 1)).sum()), int((pred & (y == 0)).sum()), int((~pred & (y == 1)).sum())
    return 2 * tp / max(1, 2 * tp + fp + fn)


GOALS = {  # issue 42, per (source, label key): name -> margin function of the entry (>= 0: met)
    ("roscoe", "con"): {
        "within_task_auroc >= within_task_auroc_length + 0.03": lambda e: e["within_task_auroc"] - e["within_task_auroc_length"] - 0.03,
        "auroc >= 0.74": lambda e: e["auroc"] - 0.74},
    ("prm800k", "pr"): {"auroc >= 0.65": lambda e: e["auroc"] - 0.65, "auroc > auroc_length": lambda e: e["auroc"] - e["auroc_length"]},
}


def goal_block(source: str, key: str, e: dict) -> dict:
    """The issue's goals for one label entry: ``{goal: {"met", "by"}}`` (``by`` >= 0: margin; < 0: miss)."""
    out = {}
    for name, margin in GOALS.get((source, key), {}).items():
        try:
            v = margin(e)
        except TypeError:  # a figure is None (no task with enough positives)
            out[name] = {"met": False, "by": None}
            continue
        out[name] = {"met": bool(v >= -1e-12), "by": round(float(v), 4)}
    return out


def task_identity_scores(records: list[dict], idx: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The task-identity floor's scores ``(len(idx),)``: for each row, the label's prevalence in its own task
    (subset) among the *other* outer folds' rows of the same entry (out-of-fold, like every other score). A
    score that only knows the task: its pooled AUROC is what telling the tasks apart is worth, its
    within-task AUROC 0.5."""
    from howeval.judges.patternrm.recipe import outer_folds

    folds = outer_folds(records)[idx]
    task = np.array([records[i]["subset"] for i in idx])
    out = np.zeros(len(idx))
    for f in set(folds.tolist()):
        te = folds == f
        for t in set(task[te].tolist()):
            tr = (folds != f) & (task == t)
            out[te & (task == t)] = y[tr].mean() if tr.any() else y[folds != f].mean()
    return out


def metric_block(y: np.ndarray, p: np.ndarray, pl: np.ndarray, pt: np.ndarray, task: np.ndarray, n_boot: int) -> dict:
    """Pooled and within-task AUROC of the model ``p``, the length floor ``pl`` and the task-identity floor
    ``pt``, each with its bootstrap 95% CI (rows resampled inside each task; ``recipe.bootstrap_ci``)."""
    from howeval.judges.patternrm.recipe import WITHIN_TASK_MIN_POS, auroc, bootstrap_ci, within_task_auroc

    pooled = lambda yy, pp, tt: auroc(yy, pp)  # noqa: E731
    e: dict = {}
    for name, q in (("auroc", p), ("auroc_length", pl), ("auroc_task_identity", pt)):
        e[name] = round(auroc(y, q), 4)
        e[name + "_ci95"] = bootstrap_ci(pooled, y, q, task, n_boot=n_boot)
    for name, q in (("within_task_auroc", p), ("within_task_auroc_length", pl)):
        v = within_task_auroc(y, q, task)
        e[name] = None if v is None else round(v, 4)
        e[name + "_ci95"] = bootstrap_ci(within_task_auroc, y, q, task, n_boot=n_boot) if v is not None else None
    e["within_task_auroc_task_identity"] = 0.5 if e["within_task_auroc"] is not None else None
    tasks = {}
    for t in sorted(set(task.tolist())):
        sel = task == t
        tasks[t] = {"n": int(sel.sum()), "positives": int(y[sel].sum()),
                    "counted": bool(y[sel].sum() >= WITHIN_TASK_MIN_POS and (1 - y[sel]).sum() >= 1),
                    "auroc": None if auroc(y[sel], p[sel]) is None else round(auroc(y[sel], p[sel]), 4),
                    "auroc_length": None if auroc(y[sel], pl[sel]) is None else round(auroc(y[sel], pl[sel]), 4)}
    e["tasks"] = tasks
    return e


def score(records: list[dict], cv: dict, length: dict, n_boot: int = 1000) -> dict:
    by: dict = {}
    for s, key, lab, idx, y in entries(records):
        p, fired = cv["prob"][lab][idx], cv["fired"][lab][idx]
        pl, fl = length["prob"][lab][idx], length["fired"][lab][idx]
        task = np.array([records[i]["subset"] for i in idx])
        prev = float(y.mean())
        e = {"positives": int(y.sum()), "n": len(y),
             "mapping": "gold" if key == lab and records[idx[0]]["gold"][lab] is not None else
             f"weak proxy of {lab}: {records[idx[0]]['weak_name'].get(lab)}",
             **metric_block(y, p, pl, task_identity_scores(records, idx, y), task, n_boot),
             "f1": round(f1(fired, y), 4), "floor_f1_all_positive": round(2 * prev / (1 + prev), 4), "floor_f1_length": round(f1(fl, y), 4),
             "predicted": int(fired.sum()), "trained_on": sorted({records[i]["subset"] for i in idx if records[i]["permissive"]})}
        e["goals"] = goal_block(s, key, e)
        by.setdefault(s, {})[key] = e
    return by


def trigger(records: list[dict], cv: dict, cot: np.ndarray) -> dict:
    from howeval.records import LABELS

    idx = np.array([i for i, r in enumerate(records) if r["source"] == "human47"])
    truth = np.array([any(records[i]["gold"][k] for k in LABELS) for i in idx])
    fired = cot[idx].copy()
    for k in cv["fired"]:
        fired |= cv["fired"][k][idx]
    prec = float(truth[fired].mean()) if fired.any() else 0.0
    base = float(truth.mean())
    return {"source": "human47", "precision": round(prec, 4), "base_rate": round(base, 4), "recall": round(float(fired[truth].mean()), 4),
            "predicted": int(fired.sum()), "n": len(idx), "cot_rule_fired": int(cot[idx].sum()),
            "goal": {"precision >= base_rate + 0.1": {"met": bool(prec >= base + TRIGGER_MARGIN),
                                                      "by": round(prec - base - TRIGGER_MARGIN, 4)}}}


def reward_spread(labels: list[dict], groups: list[str], correct: list[bool]) -> dict:
    """The pattern term of the PatternRL reward, 0.1 * s_pat (z = 1, mean mode), over rollouts: std, distinct
    values, and as GRPO sees it: the share of rollouts (in groups of >= 2 for one prompt) whose term differs
    from its group's mean, over all groups and over the all-correct ones (where it is the whole signal)."""
    from howeval.rewards.functions import pattern_score

    term = np.array([0.1 * pattern_score(lab) for lab in labels])
    g = np.array(groups)
    out = {"n": len(term), "std": round(float(term.std()), 5), "distinct_values": sorted({round(float(t), 4) for t in term}),
           "mean": round(float(term.mean()), 5)}
    for name, keep in (("all_groups", lambda ix: True), ("all_correct_groups", lambda ix: all(correct[i] for i in ix))):
        diff = tot = ng = nz = 0
        for key in sorted(set(g)):
            ix = np.where(g == key)[0]
            if len(ix) < 2 or not keep(ix):
                continue
            ng += 1
            d = np.abs(term[ix] - term[ix].mean()) > 1e-12
            diff += int(d.sum())
            tot += len(ix)
            nz += bool(d.any())
        out[name] = {"groups": ng, "rollouts": tot, "share_rollouts_differing_from_group_mean": round(diff / tot, 4) if tot else None,
                     "share_groups_with_nonzero_spread": round(nz / ng, 4) if ng else None}
    return out


def spread_sets(data_root: Path, head, records: list[dict], X: np.ndarray) -> dict:
    """Reward spread of the served PatternRM on the real responses the project reads: MATH-Vision (3 models
    per item: GRPO-like groups; the served head trained on 38 of the 144), and the label sets' responses
    (one per question: no group, std and distinct values only; their cached features)."""
    from howeval.judges.patternrm.features import block_columns
    from howeval.judges.patternrm.head import CachedEncoder, embedding_cache_path, predict_proba
    from howeval.judges.patternrm.recipe import cot_rule
    from howeval.records import LABELS

    p = predict_proba(head.head, X[:, block_columns(head.blocks)])
    p[:, LABELS.index("cot")] = cot_rule([r["response"] for r in records])
    labs = [{k: bool(row[j] >= head.thresholds[k]) for j, k in enumerate(LABELS)} for row in p]
    out = {"label sets (785 responses, one per question)": {k: v for k, v in reward_spread(
        labs, [r["uid"] for r in records], [True] * len(records)).items() if not k.endswith("groups")}}
    if head.encoder is not None:  # the same encoder, its embeddings cached by text (the bench reruns cheaply)
        head.encoder = CachedEncoder(head.encoder, embedding_cache_path())
    mv = [json.loads(x) for x in (data_root / "responses" / "mathv_model_responses.jsonl").read_text().splitlines() if x.strip()]
    qs = {}
    f = data_root / "vqa" / "mathv_testmini_subset.jsonl"
    if f.is_file():
        qs = {q["id"]: q["question"] for q in (json.loads(x) for x in f.read_text().splitlines() if x.strip())}
    res = head.label([{"question": qs.get(r["id"], ""), "response": r["response"]} for r in mv])
    out["mathv_model_responses (48 items x 3 models)"] = reward_spread([r["labels"] for r in res], [r["id"] for r in mv],
                                                                         [bool(r.get("correct")) for r in mv])
    return out


# The offline corpus's length/layout shortcut check (issue 21; the corpus v3 tests call it; head v5 trains on
# the human labels, not on that corpus)
def shortcut_features(text: str) -> list[float]:
    """Length and layout only: log characters, log lines, the four layouts one-hot, bullets, fences, bold."""
    from howeval.judges.patternrm.layout import LAYOUTS, layout_of

    lay = layout_of(text)
    lines = [x for x in text.splitlines() if x.strip()]
    return [math.log1p(len(text)), math.log1p(len(lines)), *[float(lay == x) for x in LAYOUTS],
            float(len(re.findall(r"^\s*[-*+]\s", text, re.M))), float(text.count("```")), float(text.count("**"))]


def shortcut_check(recs: list[dict], seed: int = 0) -> dict:
    """A classifier on :func:`shortcut_features` alone, trained on the corpus's training split (thresholds on
    its out-of-fold predictions), scored on the held-out split (a hash of ``uid``: one base's variants on one
    side) against the all-positive floor there. Passes when it does not beat the floor (0.02 slack)."""
    from howeval.judges.patternrm.head import _fold_of, _label_matrix, binary_f1, predict_proba, train_head
    from howeval.records import LABELS

    F = np.array([shortcut_features(r["response"]) for r in recs], dtype=np.float32)
    held = np.array([_fold_of(str(r["uid"]), 5, seed + 7) == 0 for r in recs])
    head, _ = train_head(F[~held], [r for r, h in zip(recs, held) if not h], C=1.0, folds=3, seed=seed)
    p = predict_proba(head, F[held]) >= head["thresholds"]
    y, m = _label_matrix([r for r, h in zip(recs, held) if h])
    out = {}
    for j, k in enumerate(LABELS):
        keep = m[:, j] == 1
        yy, pp = y[keep, j] == 1, p[keep, j]
        f1 = binary_f1(pp, yy) or 0.0
        base = yy.mean() if keep.any() else 0.0
        floor = 2 * base / (1 + base) if base else 0.0
        out[k] = {"f1": round(f1, 4), "all_positive_f1": round(floor, 4), "n": int(keep.sum()), "positives": int(yy.sum())}
    f1s = [v["f1"] for v in out.values()]
    floors = [v["all_positive_f1"] for v in out.values()]
    return {"labels": out, "macro_f1": round(float(np.mean(f1s)), 4), "all_positive_macro_f1": round(float(np.mean(floors)), 4),
            "passed": bool(all(v["f1"] <= v["all_positive_f1"] + 0.02 for v in out.values())),
            "rule": "per label, F1 of a length+layout classifier on the held-out split <= all-positive F1 + 0.02"}


def shortcut_other_splits(recs: list[dict], seeds: tuple[int, ...] = (1, 2, 3, 4)) -> dict:
    """:func:`shortcut_check` on other held-out splits (seeds 1-4): whether the pass at seed 0 is luck."""
    runs = {s: shortcut_check(recs, seed=s) for s in seeds}
    return {"passed_splits": sum(r["passed"] for r in runs.values()), "n_splits": len(runs),
            "max_excess_over_floor": {k: round(max(r["labels"][k]["f1"] - r["labels"][k]["all_positive_f1"] for r in runs.values()), 4)
                                      for k in next(iter(runs.values()))["labels"]}}




def verifier_spread(data_root: Path, records: list[dict], X: np.ndarray) -> dict:
    """The verifier-bit variant's effect on PatternRL groups: a head fitted on every record with the
    verifier column (``recipe.VERIFIER_SETS``) labels the MATH-Vision responses (3 models per item, their
    ``correct`` bit) and the pattern term's spread is measured as for the served head."""
    from howeval.judges.patternrm.features import featurize_v5
    from howeval.judges.patternrm.head import CachedEncoder, Encoder, embedding_cache_path, predict_proba
    from howeval.judges.patternrm.recipe import VERIFIER_SETS, cot_rule, fit_served
    from howeval.records import LABELS

    head, info = fit_served(X, records, sets=VERIFIER_SETS)
    cols = head.pop("columns")
    mv = [json.loads(x) for x in (data_root / "responses" / "mathv_model_responses.jsonl").read_text().splitlines() if x.strip()]
    qs = {}
    f = data_root / "vqa" / "mathv_testmini_subset.jsonl"
    if f.is_file():
        qs = {q["id"]: q["question"] for q in (json.loads(x) for x in f.read_text().splitlines() if x.strip())}
    items = [{"question": qs.get(r["id"], ""), "response": r["response"], "correct": r.get("correct")} for r in mv]
    F = featurize_v5(CachedEncoder(Encoder(), embedding_cache_path()), items)
    prob = predict_proba(head, F[:, cols])
    prob[:, LABELS.index("cot")] = cot_rule([r["response"] for r in mv])
    labs = [{k: bool(row[j] >= info["thresholds"][k]) for j, k in enumerate(LABELS)} for row in prob]
    return {"choice": info["choice"], "mathv_model_responses (48 items x 3 models)": reward_spread(
        labs, [r["id"] for r in mv], [bool(r.get("correct")) for r in mv])}


def entry_aurocs(records: list[dict], cv: dict) -> dict:
    """``{"<source>/<key>": {"auroc", "within_task_auroc"}}`` of a :func:`recipe.cross_validate` result for every
    label entry (:func:`entries`) whose label the run scored (rounded to 4 places; None: no task with enough positives)."""
    from howeval.judges.patternrm.recipe import auroc, within_task_auroc

    out = {}
    for s, key, lab, idx, y in entries(records):
        if lab not in cv["prob"]:
            continue
        wt = within_task_auroc(y, cv["prob"][lab][idx], [records[i]["subset"] for i in idx])
        out[f"{s}/{key}"] = {"auroc": round(auroc(y, cv["prob"][lab][idx]), 4), "within_task_auroc": None if wt is None else round(wt, 4)}
    return out


def licence_cause(records: list[dict], cv: dict) -> dict:
    """ROSCOE ``con`` scored as the served head is, but trained on ROSCOE's rows of all four tasks (DROP and
    e-SNLI are CC BY-SA: never trained on for the shipped head): what the licence costs the pooled figure."""
    return {"note": "ROSCOE con trained on ROSCOE only, its four tasks (DROP and e-SNLI share-alike included: licence "
                    "aside), same folds and recipe; the shipped head trains on GSM8K and CosmosQA only",
            "roscoe/con": entry_aurocs(records, cv)["roscoe/con"]}


def main(argv: list[str] | None = None) -> int:
    from howeval.judges.patternrm.recipe import FEATURE_SETS

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="bench/results/patternrm_calibration.json")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples per CI")
    p.add_argument("--sets", nargs="*", choices=sorted(FEATURE_SETS), default=None,
                   help=f"feature sets compared alone on the same folds (default {' '.join(REPRESENTATIONS)})")
    a = p.parse_args(argv)
    from howeval.judges.patternrm.head import HeadPatternRM, default_sources, embedded_patternrm
    from howeval.judges.patternrm.labelsets import LabelSourceMissing
    from howeval.judges.patternrm.recipe import (
        LENGTH_SET,
        SERVED_SETS_BY_LABEL,
        VERIFIER_SETS,
        cot_rule,
        cross_validate,
        load_features,
    )

    t0 = time.perf_counter()
    data_root = Path(default_sources()["data_root"])
    try:
        records, X = load_features(str(data_root))
    except LabelSourceMissing as e:
        print(f"patternrm calibration: {e}", file=sys.stderr)
        return 2
    log = lambda m: print(m, flush=True)  # noqa: E731
    runs, secs = {}, {}
    plan = {"served": dict(sets=SERVED_SETS_BY_LABEL), "length": dict(sets=(LENGTH_SET,)),
            "verifier_bit": dict(sets=VERIFIER_SETS), "all_sources": dict(sets=SERVED_SETS_BY_LABEL, permissive_only=False),
            **{f"set:{s}": dict(sets=(s,)) for s in (a.sets or REPRESENTATIONS)}}
    for name, kw in plan.items():
        t = time.perf_counter()
        runs[name] = cross_validate(X, records, **kw)
        secs[name] = round(time.perf_counter() - t, 1)
        log(f"[calibration] {name}: {secs[name]} s")
    # the pooled ROSCOE con goal's measured cause: con trained on ROSCOE's four tasks, share-alike ones included
    t = time.perf_counter()
    roscoe_all = [{**r, "permissive": r["source"] == "roscoe"} for r in records]
    runs["con_on_roscoe_all_tasks"] = cross_validate(X, roscoe_all, sets=SERVED_SETS_BY_LABEL, labels=("con",))
    secs["con_on_roscoe_all_tasks"] = round(time.perf_counter() - t, 1)
    cot = cot_rule([r["response"] for r in records])
    by = score(records, runs["served"], runs["length"], n_boot=a.bootstrap)
    trig = trigger(records, runs["served"], cot)

    reps = {name.split(":", 1)[1]: {"auroc": entry_aurocs(records, runs[name]), "seconds": secs[name]} for name in runs if name.startswith("set:")}
    reps["served (feature set chosen per label inside training folds)"] = {"auroc": entry_aurocs(records, runs["served"]), "seconds": secs["served"]}
    reps[LENGTH_SET + " (floor)"] = {"auroc": entry_aurocs(records, runs["length"]), "seconds": secs["length"]}
    by_all = score(records, runs["all_sources"], runs["length"], n_boot=200)
    by_ver = score(records, runs["verifier_bit"], runs["length"], n_boot=a.bootstrap)
    head = HeadPatternRM(embedded_patternrm())
    misses = [f"{s}/{k}: {g} by {v['by']}" for s, labs in by.items() for k, e in labs.items() for g, v in e["goals"].items() if not v["met"]]
    misses += [f"trigger: {g} by {v['by']}" for g, v in trig["goal"].items() if not v["met"]]
    out = {
        "by_source": by, "trigger": trig,
        "goals": {"labels_with_goals": [f"{s}/{k}" for s, labs in by.items() for k, e in labs.items() if e["goals"]] + ["human47/trigger"],
                  "all_met": not misses, "misses": misses},
        "method": "5 outer folds stratified by source and labels; per fold, feature set, C, weak-proxy weight and threshold chosen "
                  "by an inner 3-fold CV over the training folds only (scored as AUROC inside each source task); training rows "
                  "from permissive-licence sources (human47 MATH-Vision, ROSCOE GSM8K + CosmosQA, PRM800K); TabMWP (NC-SA), "
                  "ROSCOE DROP + e-SNLI (SA) scored, never trained on; cot by the rule judge (no human cot positive anywhere). "
                  "within_task_auroc: AUROC inside each source task (subset), averaged over tasks with >= 8 positives; "
                  "auroc_task_identity: the label's out-of-fold prevalence in the row's task as its score; *_ci95: "
                  f"percentile bootstrap over rows resampled inside each task ({a.bootstrap} resamples)",
        "verifier_bit_variant": {
            "note": "an option, not the served default: the verifier's correctness bit as one more column "
                    "(recipe.VERIFIER_SETS); ROSCOE's annotators saw the reference, so its con tracks wrong answers",
            "by_source": {s: {k: {m: e[m] for m in ("auroc", "auroc_ci95", "within_task_auroc", "within_task_auroc_ci95", "auroc_length",
                                                      "within_task_auroc_length", "f1")} for k, e in labs.items()} for s, labs in by_ver.items()},
            "trigger": trigger(records, runs["verifier_bit"], cot),
            "correct_bit_known": {s: sum(r["correct"] is not None for r in records if r["source"] == s)
                                  for s in sorted({r["source"] for r in records})},
            "reward_spread": verifier_spread(data_root, records, X)},
        "licence_cause": licence_cause(records, runs["con_on_roscoe_all_tasks"]),
        "representations": reps,
        "training_sources": {"permissive only (served)": {f"{s}/{k}": e["auroc"] for s, labs in by.items() for k, e in labs.items()},
                             "every source": {f"{s}/{k}": e["auroc"] for s, labs in by_all.items() for k, e in labs.items()}},
        "served": {"head_version": head.meta["head_version"], "choice": head.meta.get("choice"), "blocks": head.meta.get("blocks"),
                   "thresholds": head.meta.get("thresholds"), "fold_choices": runs["served"]["choices"]},
        "reward_spread": spread_sets(data_root, head, records, X),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    keys = ("positives", "auroc", "auroc_ci95", "auroc_length", "within_task_auroc", "within_task_auroc_ci95", "within_task_auroc_length",
            "auroc_task_identity", "f1", "floor_f1_all_positive")
    print(json.dumps({"by_source": {s: {k: {m: e[m] for m in keys} for k, e in labs.items()} for s, labs in by.items()},
                      "trigger": {m: trig[m] for m in ("precision", "base_rate")}, "misses": misses}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
