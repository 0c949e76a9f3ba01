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


def test_featurize_one_encoder_call_layout_blind_and_repetition_features():
    from howeval.judges.patternrm.head import LEX_FEATURES, featurize
    from howeval.judges.patternrm.layout import LAYOUTS, render

    enc = FakeEncoder()
    x = featurize(enc, ["The sum is five.\nThe sum is five.", "Four.", ""])
    assert x.shape == (3, 8 + len(LEX_FEATURES)) and enc.n_calls == 1
    f = dict(zip(LEX_FEATURES, x[0, 8:]))
    assert f["rep_max_jaccard"] == pytest.approx(1.0) and f["dup_sentences"] == 1.0
    assert f["log_sentences"] == pytest.approx(__import__("math").log1p(2))
    assert dict(zip(LEX_FEATURES, x[1, 8:]))["rep_max_jaccard"] == 0.0  # one sentence: no pair
    # issue 21: the same content in any layout has the same features (numbered steps, markdown, code)
    text = "There are 3 red and 2 blue. 3 + 2 = 5. Wait, let me re-check. So the answer is 5."
    xs = featurize(enc, [render(text, lay) for lay in LAYOUTS])
    assert all((xs[i] == xs[0]).all() for i in range(len(LAYOUTS)))
    with pytest.raises(TypeError, match=r"responses\[0\]"):
        featurize(enc, [None])


def test_train_head_learns_a_separable_label_masks_unknowns_and_picks_thresholds_on_training_folds():
    import numpy as np

    from howeval.judges.patternrm.head import predict_proba, train_head

    rng = np.random.default_rng(0)
    n = 200
    X = rng.normal(size=(n, 6)).astype(np.float32)
    recs = []
    for i in range(n):
        lab = {"cot": int(X[i, 0] > 0), "rep": int(X[i, 1] > 0), "con": int(X[i, 2] > 0), "pr": int(X[i, 3] > 0)}
        if i % 3 == 0:
            lab["pr"] = None  # unknown: masked out of the loss
        recs.append({"uid": f"u{i}", "labels": lab})
    head, meta = train_head(X, recs, C=1.0, seed=0)
    assert set(meta["thresholds"]) == {"cot", "rep", "con", "pr"} and meta["n_train"] == n
    assert all(f is not None and f > 0.8 for f in meta["oof_f1"].values())
    p = predict_proba(head, X)
    assert p.shape == (n, 4) and ((p >= 0) & (p <= 1)).all()
    assert ((p[:, 0] >= meta["thresholds"]["cot"]) == (X[:, 0] > 0)).mean() > 0.9
    with pytest.raises(ValueError, match="label 'cot' has no positive"):
        train_head(X, [{"uid": r["uid"], "labels": {**r["labels"], "cot": 0}} for r in recs])
    with pytest.raises(ValueError, match="thresholds='eval'"):
        train_head(X, recs, thresholds="eval")


def test_best_threshold_criteria_f1_drifts_to_firing_mcc_separates_prevalence_matches_the_rate():
    """Issue 21: the F1-best threshold on a weak scorer of a common label fires on nearly everything; MCC
    scores all-positive 0 and picks the separating cut; "prevalence" fires on the label's share."""
    import numpy as np

    from howeval.judges.patternrm.head import _best_threshold

    y = np.array([1] * 7 + [0] * 3)
    p = np.array([0.9, 0.8, 0.12, 0.11, 0.13, 0.14, 0.16, 0.3, 0.2, 0.12])
    t_f1, f1 = _best_threshold(p, y, criterion="f1")
    assert t_f1 == pytest.approx(0.05) and f1 == pytest.approx(14 / 17)  # fires on all 10 (F1 0.82)
    t_mcc, f1_mcc = _best_threshold(p, y, criterion="mcc")
    assert t_mcc == pytest.approx(0.35) and f1_mcc == pytest.approx(4 / 9)  # the 2 top scores only
    t_prev, _ = _best_threshold(p, y, criterion="prevalence")
    assert ((p >= t_prev).sum(), t_prev) == (5, pytest.approx(0.15))  # the grid's nearest to 7 of 10
    assert _best_threshold(p, y, criterion="always") == (0.0, pytest.approx(14 / 17))
    with pytest.raises(ValueError, match="criterion='auc'"):
        _best_threshold(p, y, criterion="auc")


def test_train_head_takes_per_label_weights_and_criteria():
    import numpy as np

    from howeval.judges.patternrm.head import train_head

    rng = np.random.default_rng(1)
    n = 120
    X = rng.normal(size=(n, 4)).astype(np.float32)
    recs = [{"uid": f"u{i}", "labels": {k: int(X[i, j] > 0) for j, k in enumerate(("cot", "rep", "con", "pr"))}} for i in range(n)]
    W = np.ones((n, 4))
    W[:10, 1] = 50.0
    head, meta = train_head(X, recs, weights=W, C=1.0, criterion={"rep": "mcc"})
    assert meta["threshold_criterion"] == {"cot": "f1", "rep": "mcc", "con": "f1", "pr": "f1"}
    same, _ = train_head(X, recs, weights=np.ones(n), C=1.0)
    assert not np.allclose(head["coef"][1], same["coef"][1]) and np.allclose(head["coef"][0], same["coef"][0])
    rep3, meta3 = train_head(X, recs, C=1.0, repeats=3)
    assert meta3["oof_repeats"] == 3 and np.allclose(rep3["coef"], same["coef"])  # repeats move thresholds only
    with pytest.raises(ValueError, match="weights of shape"):
        train_head(X, recs, weights=np.ones((n, 3)))
    with pytest.raises(ValueError, match="criterion="):
        train_head(X, recs, criterion={"rep": "auc"})


def test_choose_head_recipe_picks_per_label_on_the_given_responses_only():
    """The inner CV sees only the responses it is given: a label the corpus teaches wrongly (rep: inverted
    there) is fixed by weighting the hand-labelled responses up, one it teaches rightly keeps the low weight."""
    import numpy as np

    from howeval.judges.patternrm.head import choose_head_recipe, stratified_folds

    rng = np.random.default_rng(2)
    labels = ("cot", "rep", "con", "pr")

    def make(n, prefix, flip_rep):
        X = rng.normal(size=(n, 4)).astype(np.float32)
        recs = []
        for i in range(n):
            lab = {k: int(X[i, j] > 0) for j, k in enumerate(labels)}
            if flip_rep:
                lab["rep"] = 1 - lab["rep"]
            recs.append({"uid": f"{prefix}{i}", "key": f"{prefix}{i}", "labels": lab})
        return X, recs

    Xc, corpus = make(300, "c", flip_rep=True)
    Hh, human = make(60, "h", flip_rep=False)
    for h in human:
        h["labels"]["cot"] = 0  # no cot positive among the responses (as among the 47): takes the macro winner
    W, crit, info = choose_head_recipe(Xc, corpus, Hh, human, candidates=((1.0, "f1"), (300.0, "f1")), folds=3)
    assert info["human_weight"]["rep"] == 300.0 and info["human_weight"]["con"] == 1.0
    assert info["inner_f1"]["300/f1"]["rep"] > 0.8 > info["inner_f1"]["1/f1"]["rep"]
    assert info["inner_f1"]["1/f1"]["cot"] is None and set(crit) == set(labels)
    assert W.shape == (360, 4) and (W[:300] == 1.0).all() and (W[300:, 1] == 300.0).all()
    f = stratified_folds(human, 3)
    assert sorted(np.bincount(f)) == [20, 20, 20]


def test_checkpoint_prompt_keeps_the_chat_header_and_cuts_the_response():
    """Issue 21: a 4,000-character response made a ~1,600-token prompt, and right-truncation to 1,024 cut the
    assistant header; fit_prompt keeps the whole template and cuts the response (head and tail kept)."""
    from transformers import AutoTokenizer

    from howeval.engines.checkpoints import embedded_checkpoint
    from howeval.judges.patternrm.format import SYSTEM_PROMPT, patternrm_messages
    from howeval.judges.patternrm.model import fit_prompt

    tok = AutoTokenizer.from_pretrained(embedded_checkpoint())
    response = "".join(f"Step {i}: the row {i} holds {3 * i + 7} blocks, so far {i * (i + 1)} in all. " for i in range(90))
    response = response[:3990] + " FINAL-42."
    assert len(response) == 4000
    full = tok.apply_chat_template(patternrm_messages("How many blocks?", response, 4000), tokenize=False, add_generation_prompt=True)
    n_full = len(tok(full, add_special_tokens=False)["input_ids"])
    assert n_full > 1024  # the old right-truncation would have cut the end of this prompt
    header = tok.apply_chat_template(patternrm_messages("", ""), tokenize=False, add_generation_prompt=True)
    tail = header[header.rindex(patternrm_messages("", "")[1]["content"]) + len(patternrm_messages("", "")[1]["content"]):]
    prompt = fit_prompt(tok, "How many blocks?", response, 1024, 4000)
    ids = tok(prompt, add_special_tokens=False)["input_ids"]
    assert len(ids) <= 1024
    assert prompt.endswith(tail) and tail.strip()  # the end of the user turn and the assistant header
    assert SYSTEM_PROMPT[:60] in prompt and "How many blocks?" in prompt
    assert "Step 0: the row 0" in prompt and "FINAL-42" in prompt and "[...]" in prompt  # head and tail kept
    assert fit_prompt(tok, "q", "Short answer: 4.", 1024) == tok.apply_chat_template(
        patternrm_messages("q", "Short answer: 4."), tokenize=False, add_generation_prompt=True)
    with pytest.raises(ValueError, match="template alone"):
        fit_prompt(tok, "q", response, 64)


@pytest.mark.slow
def test_embedded_trained_patternrm_batch_equals_singles():
    """The shipped head v6: a batch gives the same labels as one-by-one calls; cot is the rule's."""
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
    assert rm.version.startswith("patternrm@minilm-head-7")
    meta = rm.backend.model.meta  # what the shipped meta records: the per-label choice made by the inner CV
    assert set(meta["choice"]) == {"rep", "con", "pr"} and set(meta["thresholds"]) == {"cot", "rep", "con", "pr"}
    assert meta["cot"] == "rule" and batch[0]["labels"]["cot"] and not batch[2]["labels"]["cot"]
