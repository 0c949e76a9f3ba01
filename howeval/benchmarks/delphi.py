"""Delphi reference-step construction (SPEC section 3, CRYSTAL): several writers' step chains are
embedded, clustered by cosine similarity (connected components above a threshold), and one
representative step per cluster is kept, in chain order. A checker model then judges the result.

Pure numpy: the embeddings come from any encoder (``howeval.embed.StepEmbedder`` by default).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from howeval.parsing.text import find_json_object


@dataclass
class ReferenceChain:
    """Result for one item.

    Attributes:
        steps: the representative steps, ordered by the mean relative position of their cluster's
            members in the writers' chains (0 = first step, 1 = last).
        support: per kept step, how many distinct writers contributed a step to its cluster.
        clusters: per kept step, the (writer, step index) members of its cluster.
        n_clusters: clusters found before the ``min_support`` filter.
    """

    steps: list[str]
    support: list[int]
    clusters: list[list[tuple[int, int]]] = field(default_factory=list)
    n_clusters: int = 0


def connected_components(sim: np.ndarray, threshold: float) -> list[list[int]]:
    """Connected components of the graph with an edge where ``sim[i, j] > threshold`` (strict), i != j.

    Args:
        sim: (N, N) symmetric similarity matrix.
        threshold: edge threshold in [-1, 1].

    Returns:
        Components as sorted index lists, ordered by their smallest index.

    >>> s = np.array([[1, .9, .1], [.9, 1, .2], [.1, .2, 1]])
    >>> connected_components(s, 0.5)
    [[0, 1], [2]]
    """
    n = sim.shape[0]
    if sim.shape != (n, n):
        raise ValueError(f"sim must be square, got shape {sim.shape}")
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    ii, jj = np.nonzero(np.triu(sim > threshold, k=1))
    for i, j in zip(ii.tolist(), jj.tolist()):
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    comps: dict[int, list[int]] = {}
    for i in range(n):
        comps.setdefault(find(i), []).append(i)
    return sorted((sorted(c) for c in comps.values()), key=lambda c: c[0])


def build_reference(chains: list[list[str]], emb: np.ndarray, threshold: float = 0.75,
                    min_support: int = 1) -> ReferenceChain:
    """Merge several writers' step chains into one reference chain.

    Args:
        chains: W chains; chain w has n_w steps. Empty chains are allowed (a writer that failed).
        emb: (sum n_w, d) L2-normalized embeddings of all steps, chain after chain, in order.
        threshold: cosine threshold for clustering (strictly above joins two steps).
        min_support: keep a cluster only if at least this many distinct writers contributed to it.

    Returns:
        :class:`ReferenceChain`. The representative of a cluster is its medoid: the member with the
        highest mean cosine similarity to the other members (the first one on ties).

    Raises:
        ValueError: the embedding count differs from the number of steps, or min_support < 1.
    """
    owners = [(w, k) for w, ch in enumerate(chains) for k in range(len(ch))]
    texts = [s for ch in chains for s in ch]
    if emb.shape[0] != len(texts):
        raise ValueError(f"got {emb.shape[0]} embeddings for {len(texts)} steps")
    if min_support < 1:
        raise ValueError(f"min_support must be >= 1, got {min_support}")
    if not texts:
        return ReferenceChain([], [], [], 0)
    sim = emb @ emb.T  # (N, N)
    comps = connected_components(sim, threshold)
    kept = []
    for comp in comps:
        writers = {owners[i][0] for i in comp}
        if len(writers) < min_support:
            continue
        sub = sim[np.ix_(comp, comp)]
        medoid = comp[int(np.argmax(sub.mean(axis=1)))]
        pos = float(np.mean([owners[i][1] / max(1, len(chains[owners[i][0]]) - 1) for i in comp]))
        kept.append((pos, comp[0], texts[medoid], len(writers), [owners[i] for i in comp]))
    kept.sort(key=lambda x: (x[0], x[1]))
    return ReferenceChain([k[2] for k in kept], [k[3] for k in kept], [k[4] for k in kept], len(comps))


CHECKER_PROMPT = (
    "You check a reference solution for a visual question. Question:\n{question}\n\nGold answer: {answer}\n\n"
    "Reference steps:\n{steps}\n\nAre these steps logically consistent with each other and sufficient to reach "
    "the gold answer? Reply with a JSON object only: {{\"consistent\": true|false, \"reason\": \"...\"}}"
)


def checker_messages(question: str, answer: str, steps: list[str]) -> list[dict]:
    """The checker model's chat messages (text-only)."""
    body = "\n".join(f"{i + 1}. {s}" for i, s in enumerate(steps)) or "(none)"
    return [{"role": "user", "content": CHECKER_PROMPT.format(question=question, answer=answer, steps=body)}]


def parse_checker(text: str) -> tuple[bool, str]:
    """``(consistent, reason)`` from the checker's reply.

    Raises:
        ValueError: no JSON object with a boolean ``consistent`` in the reply (the caller records
            ``checker_error``; never a default verdict).
    """
    obj = find_json_object(text or "", lambda o: isinstance(o.get("consistent"), bool))
    if obj is not None:
        return obj["consistent"], str(obj.get("reason", ""))
    raise ValueError(f"checker reply has no JSON object with a boolean 'consistent': {text[:120]!r}")
