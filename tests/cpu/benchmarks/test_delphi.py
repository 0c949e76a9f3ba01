"""Tests for howeval.benchmarks.delphi: clustering by hand and checker parsing (the job: tests/cpu/ray_jobs/test_build_refs.py)."""
from __future__ import annotations

import numpy as np
import pytest

from howeval.benchmarks.delphi import build_reference, connected_components, parse_checker


def _unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_components_are_transitive_and_strict():
    sim = np.array([[1, .8, 0, 0], [.8, 1, .8, 0], [0, .8, 1, 0], [0, 0, 0, 1]])
    assert connected_components(sim, 0.75) == [[0, 1, 2], [3]]
    assert connected_components(sim, 0.8) == [[0], [1], [2], [3]]  # strictly above


def test_build_reference_by_hand():
    # writer 0: A, B ; writer 1: A', C ; writer 2: B'   (A~A', B~B' ; C alone)
    chains = [["read the table", "add the two values"], ["read the table values", "answer is 5"], ["sum both numbers"]]
    emb = _unit([[1, 0, 0], [0, 1, 0], [0.99, 0.14, 0], [0, 0, 1], [0.1, 0.99, 0]])
    ref = build_reference(chains, emb, threshold=0.9)
    # clusters: {A, A'} at positions 0, 0 -> 0.0 ; {B, B'} at 1, 0 -> 0.5 ; {C} at 1 -> 1.0
    assert ref.n_clusters == 3 and ref.support == [2, 2, 1]
    assert ref.steps[2] == "answer is 5"
    assert ref.steps[0] in ("read the table", "read the table values")
    assert build_reference(chains, emb, threshold=0.9, min_support=2).steps == ref.steps[:2]
    with pytest.raises(ValueError, match="embeddings"):
        build_reference(chains, emb[:2])


def test_checker_parse_never_defaults():
    assert parse_checker('ok {"consistent": false, "reason": "step 2 skips"}') == (False, "step 2 skips")
    with pytest.raises(ValueError, match="consistent"):
        parse_checker("They look consistent to me.")
