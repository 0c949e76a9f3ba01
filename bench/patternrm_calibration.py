"""PatternRM calibration (issue 21): the trained PatternRM's recipe scored by cross-validation on the 47
hand-labelled responses, beside the floors, the other recipes tried, and the shortcut controls.

    python bench/patternrm_calibration.py [--path HEAD_DIR] [--out bench/results/patternrm_calibration.json]

Texts come from ``../shared/data/responses`` (``HOWEVAL_SHARED_DATA`` overrides the data root), matched by
``source``/``id``/``model`` to ``tests/fixtures/human_labels.jsonl``. The served head learns from the offline
corpus *and* those 47 responses, so its figures here are cross-validated: 5 folds over the 47 (stratified
by label vector); each fold's head is trained on the corpus and the other 4 folds, its thresholds chosen on
out-of-fold predictions over those training responses, and it labels the held-out fold. No threshold, C
or weight is chosen on an evaluation item. The recipes compared here (feature sets, corpus v1 / v2 / v3, with
or without the hand labels) are all scored on the same 47, so choosing the best of them is a mild
selection on the evaluation set: the figures of every recipe are written, not only the winner's. Scores: ``howeval.judges.calibration.score_judge`` (macro F1 over
the labels the humans marked at least once: rep, con, pr; cot has no positive here).

Output (``--out``): ``{"n_items", "patternrm": {labels, trigger, macro_f1, ...}, "rules": {...},
"baselines": {"all_positive", "patternrm_v1"}, "recipes": {name: {macro_f1, rep, con, pr, trigger_f1, predicted,
length_human}}, "seed_check": {recipe: {seed: figures}}, "controls":
{"format", "length", "surface", "shortcut"}, "passed": {...}}``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPO = Path(__file__).resolve().parents[1]
N_FOLDS = 5
V1_FIGURES = {"macro_f1": 0.3659, "note": "minilm-head-1 (MLP on whole-text + sentence embeddings, recipe v1, thresholds on a "
              "synthetic slice), as committed before issue 21: rep 0.56, con 0.39, pr 0.15 F1"}


def folds_of(human: list[dict], k: int = N_FOLDS) -> np.ndarray:
    """Fold index per hand-labelled record: sorted by (label vector, hash of key), dealt round-robin."""
    from howeval.judges.patternrm.head import stratified_folds

    return stratified_folds(human, k)


def summarize(scores: dict, version: str) -> dict:
    from howeval.records import LABELS

    return {"version": version,
            "labels": {k: {m: scores["labels"][k][m] for m in ("precision", "recall", "f1", "support", "predicted")} for k in LABELS},
            "trigger": {m: scores["trigger"][m] for m in ("precision", "recall", "f1", "support", "predicted")},
            "macro_f1": scores["macro"]["f1"], "macro_n": scores["macro"]["f1_n"]}


def cv_predict(X: np.ndarray, recs: list[dict], H: np.ndarray, human: list[dict], folds: np.ndarray,
               use_corpus: bool = True, use_human: bool = True, cols: slice | np.ndarray | None = None,
               hw: float | None = None, nested: tuple | None = None, per_label: bool = True, choices: list | None = None,
               **train_kw) -> np.ndarray:
    """Cross-validated boolean predictions ``(47, 4)``: per fold, a head trained on the corpus and the other
    folds' responses (weight ``hw``, default :data:`HUMAN_WEIGHT`; or, with ``nested`` candidates, per label
    the weight and threshold criterion :func:`choose_head_recipe` picks by an inner CV over the training
    folds' responses alone, appended to ``choices``), its thresholds from its training records."""
    from howeval.judges.patternrm.head import HUMAN_WEIGHT, choose_head_recipe, predict_proba, train_head

    cols = slice(None) if cols is None else cols
    pred = np.zeros((len(human), 4), dtype=bool)
    for f in range(folds.max() + 1):
        tr = folds != f
        hr = [h for h, t in zip(human, tr) if t]
        if nested:
            W, crit, info = choose_head_recipe(X[:, cols], recs, H[tr][:, cols], hr, candidates=nested, per_label=per_label,
                                               folds=3, **train_kw)
            if choices is not None:
                choices.append({"fold": f, "human_weight": info["human_weight"], "criterion": info["criterion"]})
            head, _ = train_head(np.concatenate([X[:, cols], H[tr][:, cols]]), [*recs, *hr], weights=W, criterion=crit,
                                 folds=3, **train_kw)
            pred[~tr] = predict_proba(head, H[~tr][:, cols]) >= head["thresholds"]
            continue
        feats, rr, w = [], [], []
        if use_corpus:
            feats.append(X[:, cols])
            rr += recs
            w.append(np.ones(len(recs)))
        if use_human:
            feats.append(H[tr][:, cols])
            rr += hr
            w.append(np.full(int(tr.sum()), (HUMAN_WEIGHT if hw is None else hw) if use_corpus else 1.0))
        head, meta = train_head(np.concatenate(feats), rr, weights=np.concatenate(w), folds=3, **train_kw)
        p = predict_proba(head, H[~tr][:, cols])
        pred[~tr] = p >= head["thresholds"]
    return pred


def as_labels(pred: np.ndarray, keys: list[str]) -> dict[str, dict[str, bool]]:
    from howeval.records import LABELS

    return {k: {lab: bool(pred[i, j]) for j, lab in enumerate(LABELS)} for i, k in enumerate(keys)}


# ------------------------------------------------------------------------------------------- controls

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


def surface_counts(recs: list[dict]) -> dict:
    """Per label: positives (and negatives) with and without the cue words the builder tends to give it,
    and per layout; passes when every label has positives both with and without cues and in every layout."""
    from howeval.judges.patternrm.head import _COT, _PR
    from howeval.judges.patternrm.layout import LAYOUTS

    cue = {"cot": _COT, "pr": _PR, "rep": re.compile(r"\b(?:again|as stated|to repeat|in other words|once more)\b", re.I),
           "con": re.compile(r"\b(?:that means there are|this gives|so the value is|hence the result is)\b", re.I)}
    out, ok = {}, True
    for k, rx in cue.items():
        d = {"pos_with_cue": 0, "pos_without_cue": 0, "neg_with_cue": 0, "neg_without_cue": 0,
             "pos_by_layout": {x: 0 for x in LAYOUTS}, "neg_by_layout": {x: 0 for x in LAYOUTS}}
        for r in recs:
            v = r["labels"][k]
            if v is None:
                continue
            side = "pos" if v else "neg"
            d[f"{side}_{'with' if rx.search(r['response']) else 'without'}_cue"] += 1
            d[f"{side}_by_layout"][r.get("layout") or "prose"] += 1
        ok &= d["pos_with_cue"] > 0 and d["pos_without_cue"] > 0 and min(d["pos_by_layout"].values()) > 0
        out[k] = d
    return {"labels": out, "passed": bool(ok)}


def format_control(rm, texts: list[str]) -> dict:
    """The same content in every layout (prose, ``Step N:``, markdown, code block) and as written: the share
    of texts whose four labels are identical across all of them (passes at 1.0)."""
    from howeval.judges.patternrm.layout import LAYOUTS, render

    variants = [[t] + [render(t, lay) for lay in LAYOUTS] for t in texts]
    flat = [v for vs in variants for v in vs]
    res = rm.label([{"question": "", "response": v} for v in flat])
    same, per = 0, len(LAYOUTS) + 1
    for i in range(len(texts)):
        labs = [tuple(sorted(res[i * per + j]["labels"].items())) for j in range(per)]
        same += len(set(labs)) == 1
    return {"n_texts": len(texts), "layouts": ["as written", *LAYOUTS], "identical_share": same / max(1, len(texts)),
            "passed": same == len(texts)}


def length_control(pred: np.ndarray, human: list[dict], twin_rates: dict | None) -> dict:
    """Clean responses matched in length to flawed ones must not fire more than the flawed ones.

    - hand-labelled (cross-validated predictions): for each flawed response, the clean one nearest in length;
      trigger fire rate of those clean matches vs the flawed;
    - corpus held-out split: injected variants vs their same-base clean twins (length-matched by construction).
    """
    flawed = [i for i, h in enumerate(human) if any(h["labels"].values())]
    clean = [i for i, h in enumerate(human) if not any(h["labels"].values())]
    ln = [len(h["response"]) for h in human]
    match = [min(clean, key=lambda c: abs(ln[c] - ln[i])) for i in flawed]
    fire = pred.any(axis=1)
    hf, hc = float(fire[flawed].mean()), float(fire[match].mean())
    ok = hc <= hf and (twin_rates is None or twin_rates["clean_twin_fire_rate"] <= twin_rates["flawed_fire_rate"])
    return {"human": {"flawed_fire_rate": round(hf, 4), "length_matched_clean_fire_rate": round(hc, 4),
                      "n_flawed": len(flawed), "n_clean": len(clean),
                      "median_chars_flawed": float(np.median([ln[i] for i in flawed])),
                      "median_chars_matched_clean": float(np.median([ln[i] for i in match]))},
            "corpus_heldout": twin_rates, "passed": bool(ok)}


def twin_fire_rates(X: np.ndarray, recs: list[dict], seed: int = 0) -> dict:
    """Train on the corpus minus a held-out split of bases; fire rates there of injected variants of clean
    bases vs their clean twins (any label predicted)."""
    from howeval.judges.patternrm.head import _fold_of, predict_proba, train_head

    held = np.array([_fold_of(str(r["uid"]), 5, seed + 7) == 0 for r in recs])
    head, _ = train_head(X[~held], [r for r, h in zip(recs, held) if not h], folds=3, seed=seed)
    fire = (predict_proba(head, X[held]) >= head["thresholds"]).any(axis=1)
    hr = [r for r, h in zip(recs, held) if h]
    tw = [i for i, r in enumerate(hr) if r["recipe"] == "twin"]
    inj = [i for i, r in enumerate(hr) if r["recipe"] not in ("twin", "none") and r["origin"] != "model_response"
           and r["origin"] != "gsm8k_wrong_chain"]
    return {"clean_twin_fire_rate": round(float(fire[tw].mean()), 4), "flawed_fire_rate": round(float(fire[inj].mean()), 4),
            "n_twins": len(tw), "n_flawed": len(inj),
            "median_chars_twins": float(np.median([len(hr[i]["response"]) for i in tw])),
            "median_chars_flawed": float(np.median([len(hr[i]["response"]) for i in inj]))}


# ----------------------------------------------------------------------------------------------- main

def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--path", default=None, help="trained head folder (default: the embedded one, trained if absent)")
    p.add_argument("--out", default="bench/results/patternrm_calibration.json")
    a = p.parse_args()
    from howeval.judges.calibration import score_judge
    from howeval.judges.patternrm.corpus import build_offline_corpus, load_bases
    from howeval.judges.patternrm.head import (
        N_LEX,
        CachedEncoder,
        Encoder,
        HeadPatternRM,
        corpus_fingerprint,
        default_sources,
        embedded_patternrm,
        embedding_cache_path,
        features_cache_path,
        featurize,
        load_human_set,
    )
    from howeval.judges.patternrm.model import PatternRM
    from howeval.records import LABELS

    t_start = time.perf_counter()
    src = default_sources()
    if not (Path(src["data_root"]) / "responses").is_dir():
        print(f"patternrm calibration: the 47 hand-labelled responses are read from {src['data_root']}/responses, not found "
              "here: set HOWEVAL_SHARED_DATA=/path/to/shared/data", file=sys.stderr)
        return 2
    path = a.path or embedded_patternrm()
    rm = HeadPatternRM(path)
    human = load_human_set(src["data_root"], src["human_labels"])
    keys = [h["key"] for h in human]
    truth = {h["key"]: {k: bool(h["labels"][k]) for k in LABELS} for h in human}
    bases = load_bases(src["data_root"], src["human_labels"], src["demo_manifest"])
    recs = build_offline_corpus(bases)
    fp = corpus_fingerprint(recs)
    if fp != rm.meta.get("fingerprint"):
        raise SystemExit(f"{path} was trained on another corpus (fingerprint {rm.meta.get('fingerprint', '?')[:12]} != {fp[:12]}): "
                         "retrain with `make patternrm FORCE=1`")
    with np.load(features_cache_path() / "features.npz") as z:
        X, H = z["X"], z["H"]
    if X.shape[1] == N_LEX:  # the content head trains without the encoder: embed here what the recipes compare
        t0 = time.perf_counter()
        enc = CachedEncoder(Encoder(), embedding_cache_path())
        X, H = featurize(enc, [r["response"] for r in recs]), featurize(enc, [h["response"] for h in human])
        print(f"MiniLM features of {len(recs) + len(human)} texts ({time.perf_counter() - t0:.0f} s)", flush=True)
    recs_v1 = build_offline_corpus(bases, layouts=False, twins=False, carrier_twins=False, balance=False)
    X1 = featurize(None, [r["response"] for r in recs_v1])  # content features need no encoder
    recs_v2 = build_offline_corpus(bases, carrier_twins=False, balance=False)
    X2 = featurize(None, [r["response"] for r in recs_v2])
    folds = folds_of(human)
    lex = np.arange(X.shape[1] - N_LEX, X.shape[1])
    emb = np.arange(0, X.shape[1] - N_LEX)
    served = rm.meta.get("features", "content")
    cols_served = lex if served == "content" else None
    from howeval.judges.patternrm.head import HUMAN_WEIGHTS, RECIPE_CANDIDATES

    grid = lambda ws, cs: tuple((w, c) for w in ws for c in cs)  # noqa: E731
    served_name = (f"served (head v4): {served} features, corpus v3 + hand labels (CV); per label, hand-label weight "
                   "{10,30,100,300} x threshold criterion {F1, MCC, prevalence} chosen by an inner 3-fold CV over the training folds' responses")
    served_choices: list = []
    recipes = {
        served_name: dict(X=X, recs=recs, use_human=True, cols=cols_served, nested=RECIPE_CANDIDATES, choices=served_choices),
        "head v3 (served before): hand-label weight 10, F1-best thresholds on the training responses' OOF":
            dict(X=X, recs=recs, use_human=True, cols=lex),
        "served rule, thresholds on 3 repeated out-of-fold splits of the training records (repeats=3)":
            dict(X=X, recs=recs, cols=lex, nested=RECIPE_CANDIDATES, repeats=3),
        "nested, weights {10,30,100,300} x F1 only": dict(X=X, recs=recs, cols=lex, nested=grid(HUMAN_WEIGHTS, ("f1",))),
        "nested, weights {10,30,100,300} x {F1, MCC}": dict(X=X, recs=recs, cols=lex, nested=grid(HUMAN_WEIGHTS, ("f1", "mcc"))),
        "nested, weights {10,30,100,300} x {F1, MCC} + always-fire": dict(X=X, recs=recs, cols=lex,
                                                                          nested=(*grid(HUMAN_WEIGHTS, ("f1", "mcc")), (10.0, "always"))),
        "nested, weights {3,10,30,100,300,1000} x {F1, MCC}": dict(X=X, recs=recs, cols=lex,
                                                                  nested=grid((3.0, 10.0, 30.0, 100.0, 300.0, 1000.0), ("f1", "mcc"))),
        "nested, weights {10,100} x {F1, MCC}": dict(X=X, recs=recs, cols=lex, nested=grid((10.0, 100.0), ("f1", "mcc"))),
        "nested, served grid, one choice for all labels (inner macro F1)": dict(X=X, recs=recs, cols=lex, nested=RECIPE_CANDIDATES,
                                                                               per_label=False),
        **{f"fixed weight {w:g}, thresholds by {c} on the training responses' OOF": dict(X=X, recs=recs, cols=lex, hw=w, criterion=c)
           for w, c in [(10.0, "mcc"), (10.0, "prevalence"), (3.0, "f1"), (30.0, "f1"), (100.0, "f1"), (300.0, "f1"),
                        (1000.0, "f1"), (3.0, "mcc"), (30.0, "mcc"), (100.0, "mcc"), (300.0, "mcc"), (30.0, "prevalence"),
                        (100.0, "prevalence")]},
        **{f"weight 10, thresholds by {c} on all training records' OOF (corpus + responses)":
           dict(X=X, recs=recs, cols=lex, criterion=c, chooser="all") for c in ("f1", "mcc", "prevalence")},
        **{f"weight 10, no class weights, thresholds by {c}": dict(X=X, recs=recs, cols=lex, criterion=c, balanced=False)
           for c in ("f1", "mcc", "prevalence")},
        "weight 10, threshold 0.5": dict(X=X, recs=recs, cols=lex, thresholds="fixed"),
        "weight 10, no class weights, threshold 0.5": dict(X=X, recs=recs, cols=lex, thresholds="fixed", balanced=False),
        "content+minilm features, corpus v3 + hand labels (CV)" if served == "content" else
        "content features, corpus v3 + hand labels (CV)": dict(X=X, recs=recs, use_human=True, cols=None if served == "content" else lex),
        "MiniLM embedding only, corpus v3 + hand labels (CV)": dict(X=X, recs=recs, use_human=True, cols=emb),
        "content features, corpus v3 only (thresholds on corpus folds)": dict(X=X, recs=recs, use_human=False, cols=lex),
        "content+minilm features, corpus v3 only (thresholds on corpus folds)": dict(X=X, recs=recs, use_human=False),
        "content+minilm features, corpus v3 only, no class weights, threshold 0.5": dict(X=X, recs=recs, use_human=False,
                                                                                         balanced=False, thresholds="fixed"),
        "content features, corpus v2 (no carrier twins, no cell balance) + hand labels (CV)": dict(X=X2, recs=recs_v2, use_human=True),
        "content features, corpus v2 only": dict(X=X2, recs=recs_v2, use_human=False),
        "content features, corpus v1 (no layouts, no twins) + hand labels (CV)": dict(X=X1, recs=recs_v1, use_human=True),
        "content features, corpus v1 only": dict(X=X1, recs=recs_v1, use_human=False),
        "content features, hand labels only (CV), no corpus": dict(X=X, recs=recs, use_corpus=False, use_human=True, cols=lex,
                                                                  allow_unteachable=True),
        "content+minilm features, hand labels only (CV), no corpus": dict(X=X, recs=recs, use_corpus=False, use_human=True,
                                                                          allow_unteachable=True),
    }
    out: dict = {"n_items": len(keys), "source": "tests/fixtures/human_labels.jsonl (47 hand-labelled real responses), "
                 f"{N_FOLDS}-fold cross-validation (training never sees the held-out fold)",
                 "recipes": {}}
    served_pred = None
    for name, kw in recipes.items():
        t0 = time.perf_counter()
        Xr, rr = kw.pop("X"), kw.pop("recs")
        Hr = featurize(None, [h["response"] for h in human]) if Xr is X1 or Xr is X2 else H
        pred = cv_predict(Xr, rr, Hr, human, folds, **kw)
        s = score_judge(truth, as_labels(pred, keys))
        lc = length_control(pred, human, None)["human"]
        out["recipes"][name] = {"macro_f1": s["macro"]["f1"], **{k: s["labels"][k]["f1"] for k in ("rep", "con", "pr")},
                                "trigger_f1": s["trigger"]["f1"],
                                "predicted": {k: s["labels"][k]["predicted"] for k in ("rep", "con", "pr")} | {"trigger": s["trigger"]["predicted"]},
                                "length_human": {"flawed": lc["flawed_fire_rate"], "matched_clean": lc["length_matched_clean_fire_rate"]},
                                "seconds": round(time.perf_counter() - t0, 1)}
        print(f"{s['macro']['f1']:.3f}  {name}  ({time.perf_counter() - t0:.0f} s)", flush=True)
        if served_pred is None:
            served_pred, served_scores = pred, s
    # how much the figures move with the seed of the training folds' inner splits (train_head's out-of-fold
    # folds and the inner choice): the same outer folds, seeds 1 and 2 beside the reported seed 0
    out["seed_check"] = {}
    for name, kw in ((served_name, dict(nested=RECIPE_CANDIDATES)), ("head v3 (weight 10, F1 thresholds)", {})):
        rows = {}
        for seed in (0, 1, 2):
            pred = cv_predict(X, recs, H, human, folds, cols=lex, seed=seed, **kw)
            sc = score_judge(truth, as_labels(pred, keys))
            rows[str(seed)] = {"macro_f1": round(sc["macro"]["f1"], 4), **{k: round(sc["labels"][k]["f1"], 4) for k in ("rep", "con", "pr")},
                               "trigger_f1": round(sc["trigger"]["f1"], 4), "trigger_predicted": sc["trigger"]["predicted"]}
        rows["mean_macro_f1"] = round(float(np.mean([rows[str(x)]["macro_f1"] for x in (0, 1, 2)])), 4)
        out["seed_check"][name] = rows
        print(f"seeds 0-2: {[rows[str(x)]['macro_f1'] for x in (0, 1, 2)]} mean {rows['mean_macro_f1']}  {name}", flush=True)
    out["patternrm"] = summarize(served_scores, rm.version + " (cross-validated recipe)")
    out["patternrm"]["fold_choices"] = served_choices
    out["patternrm"]["served_head_choice"] = {k: rm.meta.get("recipe_choice", {}).get(k) for k in ("human_weight", "criterion")}
    out["patternrm"]["served_head_thresholds"] = rm.meta.get("thresholds")
    rules = PatternRM("rules")
    res = rules.label_batch([{"question": "", "response": h["response"]} for h in human])
    out["rules"] = summarize(score_judge(truth, {k: r["labels"] for k, r in zip(keys, res)}), rules.version)
    out["baselines"] = {"all_positive": summarize(score_judge(truth, {k: {x: True for x in LABELS} for k in keys}), "baseline"),
                        "patternrm_v1": V1_FIGURES}
    # controls
    sample = [r["response"] for r in recs[::25]] + [h["response"] for h in human]
    out["controls"] = {
        "format": format_control(rm, sample),
        "length": length_control(served_pred, human, twin_fire_rates(X if cols_served is None else X[:, lex], recs)),
        "surface": surface_counts(recs),
        "shortcut": {"v3": shortcut_check(recs), "v3_other_splits": shortcut_other_splits(recs),
                     "v2_for_reference": shortcut_check(recs_v2), "v1_for_reference": shortcut_check(recs_v1)},
    }
    floor = out["baselines"]["all_positive"]["macro_f1"]
    out["passed"] = {
        "above_all_positive": out["patternrm"]["macro_f1"] > floor,
        "above_rules": out["patternrm"]["macro_f1"] > out["rules"]["macro_f1"],
        "format": out["controls"]["format"]["passed"], "length": out["controls"]["length"]["passed"],
        "surface": out["controls"]["surface"]["passed"], "shortcut": out["controls"]["shortcut"]["v3"]["passed"],
    }
    out["seconds"] = round(time.perf_counter() - t_start, 1)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(markdown_table(out))
    print(json.dumps(out["passed"]))
    print(f"-> {a.out}")
    return 0


def markdown_table(d: dict) -> str:
    """The README table: PatternRM (cross-validated) beside the rule judge and the all-positive floor."""
    f = lambda x: "–" if x is None else f"{x:.2f}"  # noqa: E731
    rows = ["| label | PatternRM P | R | F1 | rules P | R | F1 | all-positive F1 | human + | PatternRM + |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for k in ("cot", "rep", "con", "pr", "trigger"):
        a, b, c = ((x["trigger"] if k == "trigger" else x["labels"][k]) for x in (d["patternrm"], d["rules"], d["baselines"]["all_positive"]))
        rows.append(f"| {k} | {f(a['precision'])} | {f(a['recall'])} | {f(a['f1'])} | {f(b['precision'])} | "
                    f"{f(b['recall'])} | {f(b['f1'])} | {f(c['f1'])} | {a['support']} | {a['predicted']} |")
    rows.append(f"| **macro F1** (rep, con, pr) | | | **{d['patternrm']['macro_f1']:.3f}** | | | {d['rules']['macro_f1']:.3f} | "
                f"{d['baselines']['all_positive']['macro_f1']:.3f} | | |")
    return "\n".join(rows)


if __name__ == "__main__":
    if os.environ.get("OMP_NUM_THREADS") is None:
        os.environ["OMP_NUM_THREADS"] = "2"
    sys.exit(main())
