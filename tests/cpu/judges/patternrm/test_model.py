"""PatternRM (howeval.judges.patternrm.model): backends, row errors, and the embedded trained head."""
from __future__ import annotations

import pytest

from howeval.judges.patternrm.model import BACKENDS, PatternRM, _CheckpointBackend

L = lambda *b: dict(zip(("cot", "rep", "con", "pr"), b))  # noqa: E731


def test_actor_rules_and_registry():
    rm = PatternRM("rules")
    res = rm.label_batch([{"question": "q", "response": "Hmm, wait. The answer is 3."}, {"question": "q", "response": "3"}])
    assert res[0]["labels"]["cot"] and res[1]["labels"] == L(False, False, False, False)
    with pytest.raises(ValueError, match="registered"):
        PatternRM("nope")
    with pytest.raises(KeyError, match="response"):
        rm.label_batch([{"question": "q"}])
    assert set(BACKENDS) == {"trained", "rules", "checkpoint"}


def test_checkpoint_unparseable_is_row_error():
    be = _CheckpointBackend.__new__(_CheckpointBackend)  # no model: generation is stubbed
    be.generate = lambda items: ["LABELS: cot=0 rep=0 con=0 pr=0", "I think it is fine", "LABELS: cot=1"]
    res = be.label([{"question": "q", "response": "r"}] * 3)
    assert res[0] == {"labels": L(False, False, False, False), "error": None, "raw": "LABELS: cot=0 rep=0 con=0 pr=0"}
    assert res[1]["labels"] is None and res[1]["error"].startswith("patternrm_parse_error")
    assert res[2]["labels"] is None and "missing" in res[2]["error"]




class FakeEncoder:
    """Deterministic 8-dim 'embeddings' from character counts (no model): equal texts, equal vectors."""

    def __init__(self):
        self.n_calls = 0

    def encode(self, texts):
        import numpy as np

        self.n_calls += 1
        v = np.array([[t.count(c) + 0.01 for c in "aeiou st"] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_featurize_one_encoder_call_and_repetition_features():
    from howeval.judges.patternrm.head import featurize

    enc = FakeEncoder()
    x = featurize(enc, ["The sum is five.\nThe sum is five.", "Four.", ""])
    assert x.shape == (3, 2 * 8 + 6) and enc.n_calls == 1
    max_sim, share_09, share_08, log_sents = x[0, 16:20]
    assert max_sim == pytest.approx(1.0) and share_09 == 1.0 and share_08 == 1.0
    assert log_sents == pytest.approx(__import__("math").log1p(2))
    assert x[1, 16] == 0.0  # one sentence: no pair
    with pytest.raises(TypeError, match=r"responses\[0\]"):
        featurize(enc, [None])


def test_train_head_learns_a_separable_label_and_masks_unknowns():
    import numpy as np

    from howeval.judges.patternrm.head import train_head

    rng = np.random.default_rng(0)
    n = 200
    X = rng.normal(size=(n, 6)).astype(np.float32)
    recs = []
    for i in range(n):
        lab = {"cot": int(X[i, 0] > 0), "rep": int(X[i, 1] > 0), "con": int(X[i, 2] > 0), "pr": int(X[i, 3] > 0)}
        if i % 3 == 0:
            lab["pr"] = None  # unknown: masked out of the loss
        recs.append({"uid": f"u{i}", "labels": lab})
    head, meta = train_head(X, recs, epochs=60, seed=0)
    assert set(meta["thresholds"]) == {"cot", "rep", "con", "pr"} and meta["n_train"] + meta["n_val"] == n
    assert all(f is not None and f > 0.8 for f in meta["val_f1"].values())
    with pytest.raises(ValueError, match="label 'cot' has no positive"):
        train_head(X, [{"uid": r["uid"], "labels": {**r["labels"], "cot": 0}} for r in recs], epochs=1)


@pytest.mark.slow
def test_embedded_trained_patternrm_batch_equals_singles():
    """The cached trained head (trained on first use): a batch gives the same labels as one-by-one calls."""
    rm = PatternRM()
    items = [{"question": "q", "response": r} for r in (
        "Wait, let me re-check that. Actually no, recount. The answer is 4.",
        "The total is 12. The total is 12. The total is 12. So the answer is 12.",
        "There are 3 red and 2 blue, so 3 + 2 = 5. The answer is 5.",
    )]
    batch = rm.label_batch(items)
    singles = [rm.label_batch([it])[0] for it in items]
    assert [b["labels"] for b in batch] == [s["labels"] for s in singles]
    assert all(b["error"] is None and set(b["probs"]) == {"cot", "rep", "con", "pr"} for b in batch)
    assert rm.version.startswith("patternrm@minilm-head-1")
