"""PatternRM head v5 (issue 29): label sources, the features that see a contradiction, training and selection."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from howeval.judges.patternrm.features import (
    BLOCKS,
    CONSIST_FEATURES,
    PAIR_FEATURES,
    block_columns,
    consistency_features,
    featurize_v5,
    pair_features,
    split_steps,
)
from howeval.judges.patternrm.format import mixture_targets, patternrm_messages, sft_record
from howeval.judges.patternrm.recipe import fit_served, outer_folds, select_and_fit, training_rows

DATA = Path(os.environ.get("HOWEVAL_SHARED_DATA") or Path(__file__).resolve().parents[5] / "shared" / "data")


class FakeEncoder:
    """Deterministic bag-of-letters 'embeddings' (no model): equal texts, equal unit vectors."""

    def __init__(self):
        self.n_calls = 0

    def encode(self, texts):
        self.n_calls += 1
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for i, t in enumerate(texts):
            for c in t.lower():
                if c.isalpha():
                    out[i, ord(c) - 97] += 1
            out[i, 383] += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def f(question, steps):
    return dict(zip(CONSIST_FEATURES, consistency_features(question, "\n".join(steps), steps)))


def test_consistency_features_see_wrong_sums_answer_mismatch_two_values_and_negated_twins():
    ok = f("Tom has 3 apples and buys 4.", ["3 + 4 = 7", "So the answer is 7."])
    bad = f("Tom has 3 apples and buys 4.", ["3 + 4 = 8", "So the answer is 7."])
    assert ok["log_wrong_arith"] == 0 and ok["final_vs_derived"] == 0 and ok["final_unsupported"] == 0
    assert bad["log_wrong_arith"] > 0 and bad["share_wrong_arith"] == 1.0 and bad["final_vs_derived"] == 1.0
    assert bad["final_unsupported"] == 1.0  # 7 appears nowhere before the answer line
    two = f("", ["There are 3 bricks per layer.", "Each wall has 9 bricks per layer.", "The answer is 27."])
    assert two["quantity_conflicts"] == 1.0
    flip = f("", ["The triangle is a right triangle.", "The triangle is not a right triangle.", "The answer is B."])
    assert flip["polarity_flip_pairs"] == 1.0
    assert f("", ["The answer is yes.", "The answer is no."])["yes_no_conflict"] == 1.0


def test_split_steps_prefers_given_steps_then_lines_then_sentences():
    assert split_steps("ignored", ["a b.", "", "c d."]) == ["a b.", "c d."]
    assert split_steps("Step 1: 2 + 2 = 4.\nStep 2: so 4.") == ["2 + 2 = 4.", "so 4."]  # layout stripped
    assert split_steps("One sentence. Two sentence.") == ["One sentence.", "Two sentence."]
    assert len(split_steps("\n".join(f"line {i}" for i in range(40)))) == 24


def test_pair_features_and_featurize_v5_one_encoder_call():
    enc = FakeEncoder()
    E = enc.encode(["same step", "same step", "other words entirely"])
    pf = dict(zip(PAIR_FEATURES, pair_features(E, None, ["same step", "same step", "other words entirely"])))
    assert pf["pair_cos_max"] == pytest.approx(1.0, abs=1e-5) and pf["pair_cos_min"] < 0.9 and pf["question_cos_mean"] == 0.0
    items = [{"response": "2 + 2 = 4.\nThe answer is 4.", "question": "2+2?"}, {"response": "x", "steps": ["x"]}]
    X = featurize_v5(enc, items)
    assert enc.n_calls == 2 and X.shape == (2, len(block_columns(BLOCKS)))
    np.testing.assert_allclose(featurize_v5(None, items, ("lex", "consist")), X[:, block_columns(("lex", "consist"))], rtol=1e-6)
    with pytest.raises(ValueError, match="encoder"):
        featurize_v5(None, items, ("pairs",))
    with pytest.raises(ValueError, match="blocks"):
        featurize_v5(None, items, ("nope",))


def rec(uid, source, gold=None, weak=None, permissive=True, subset=None):
    g = {"cot": None, "rep": None, "con": None, "pr": None, **(gold or {})}
    w = {"cot": None, "rep": None, "con": None, "pr": None, **(weak or {})}
    return {"uid": uid, "source": source, "subset": subset or source, "permissive": permissive, "gold": g, "weak": w,
            "weak_name": {}, "response": uid, "question": "", "steps": None, "evidence": {}}


def test_training_rows_weights_sources_equally_keeps_weak_factor_and_drops_non_permissive():
    recs = ([rec(f"a{i}", "human47", {"pr": i % 2}) for i in range(4)] + [rec(f"b{i}", "prm800k", weak={"pr": i % 2}) for i in range(12)]
            + [rec("c0", "roscoe", {"pr": 1}, permissive=False)])
    rows, y, w, gold = training_rows(recs, np.arange(len(recs)), "pr", 0.5, permissive_only=True)
    assert len(rows) == 16 and gold.sum() == 4 and 16 not in rows
    assert w[gold].sum() == pytest.approx(2 * w[~gold].sum())  # equal per-source totals, times the weak weight 0.5
    rows, *_ = training_rows(recs, np.arange(len(recs)), "pr", 0.0, permissive_only=False)
    assert sorted(rows) == [0, 1, 2, 3, 16]  # weak weight 0: weak rows left out


def _toy(n: int, seed: int, blocks: tuple[str, ...]) -> tuple[list[dict], np.ndarray, np.ndarray]:
    """``n`` records of two sources whose con and pr are ``y`` (rep random), and noise features over ``blocks``."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    recs = [rec(f"r{i}", "roscoe" if i % 2 else "human47", {"con": int(y[i]), "rep": int(rng.integers(0, 2)), "pr": int(y[i])})
            for i in range(n)]
    return recs, rng.normal(size=(n, len(block_columns(blocks)))), y


def test_select_and_fit_picks_the_informative_set_inside_the_training_rows_and_served_head_matches():
    n = 240
    recs, X, y = _toy(n, 0, ("lex", "consist", "pairs", "doc"))
    cons = block_columns(("consist",))
    X[:, cons[0]] += 3.0 * y  # only a 'consist' column carries the label
    m = select_and_fit(X, recs, np.arange(n), "con", sets=("lex", "lex+consist"))
    assert m["choice"]["set"] == "lex+consist" and m["choice"]["inner_score"] > 0.9
    head, info = fit_served(X, recs, sets=("lex", "lex+consist"))
    from howeval.judges.patternrm.head import predict_proba
    from howeval.judges.patternrm.recipe import _prob

    cols = block_columns(info["blocks"])
    p = predict_proba(head, X[:, cols])
    np.testing.assert_allclose(p[:, 2], _prob(m, X, np.arange(n)), rtol=1e-4, atol=1e-5)
    assert (p[:, 0] < 1e-6).all()  # cot is the rule's, never the head's


def test_select_and_fit_takes_candidates_per_label_and_names_a_missing_label():
    n = 200
    recs, X, y = _toy(n, 1, BLOCKS)
    X[:, block_columns(("progress",))[0]] += 3.0 * y
    per_label = {"pr": ("counts+progress",), "con": ("lex",)}
    m = select_and_fit(X, recs, np.arange(n), "pr", sets=per_label)
    assert m["choice"]["set"] == "counts+progress" and m["choice"]["inner_score"] > 0.9
    con = select_and_fit(X, recs, np.arange(n), "con", sets=per_label)
    assert con["choice"]["set"] == "lex" and con["choice"]["inner_score"] < 0.7  # its one candidate, no signal in it
    with pytest.raises(ValueError, match="sets: no candidate feature sets for label 'rep'"):
        select_and_fit(X, recs, np.arange(n), "rep", sets={"pr": ("counts+progress",)})


def test_progress_features_count_narrating_steps_not_computing_ones():
    import math

    from howeval.judges.patternrm.features import PROGRESS_FEATURE_DOCS, PROGRESS_FEATURES, progress_features

    narrating = ["This problem involves a sphere and a cube.", "I recall that the volume of a cube is s^3.",
                 "I can use substitution or elimination here.", "Let me check that: 8 * 27 = 216."]
    computing = ["The side is 2 * 3 = 6.", "So V = 6^3 = 216.", "# Answer 216"]
    f = {k: round(math.expm1(v)) for k, v in zip(PROGRESS_FEATURES, progress_features(narrating))}
    assert f == {"n_remark_steps": 2, "n_first_person_steps": 3, "n_recalled_fact_steps": 1, "n_tentative_steps": 1,
                 "n_check_steps": 1}
    assert progress_features(computing) == [0.0] * len(PROGRESS_FEATURES)
    assert set(PROGRESS_FEATURE_DOCS) == set(PROGRESS_FEATURES)
    assert all(d.startswith("pr:") for d in PROGRESS_FEATURE_DOCS.values())


def test_outer_folds_spread_each_source_and_label():
    recs = [rec(f"r{i}", "roscoe", {"con": int(i < 10)}) for i in range(50)]
    fo = outer_folds(recs, 5)
    assert all(((fo == k) & (np.arange(50) < 10)).sum() == 2 for k in range(5))


def test_mixture_targets_follow_the_ratio_and_the_prompt_names_the_form():
    keys = [f"k{i}" for i in range(1000)]
    t = mixture_targets(keys)
    assert t.count("thinking") == round(1000 * 34547 / (34547 + 23031))
    assert mixture_targets(list(reversed(keys)))[::-1] == t  # by key, not by position
    assert mixture_targets(keys, (0, 1)).count("thinking") == 0
    with pytest.raises(ValueError, match="mix"):
        mixture_targets(keys, (0, 0))
    labs = {"cot": False, "rep": True, "con": False, "pr": False}
    th = sft_record("q", "r", labs, target="thinking", evidence={"rep": "again"})
    assert "<analysis>" in th["messages"][0]["content"] and th["messages"][-1]["content"].startswith("<analysis>")
    assert patternrm_messages("q", "r")[0]["content"] != patternrm_messages("q", "r", form="thinking")[0]["content"]
    with pytest.raises(ValueError, match="form"):
        patternrm_messages("q", "r", form="other")


@pytest.mark.skipif(not (DATA / "labels").is_dir(), reason="../shared/data/labels not present (HOWEVAL_SHARED_DATA)")
def test_label_sources_read_in_place_with_their_mapping():
    from howeval.judges.patternrm.labelsets import load_label_sources

    R = load_label_sources(DATA)
    by = {s: [r for r in R if r["source"] == s] for s in ("human47", "roscoe", "prm800k")}
    assert [len(by[s]) for s in by] == [47, 528, 210]
    assert sum(r["gold"]["con"] for r in by["roscoe"]) == 62 and all(r["gold"]["pr"] is None for r in by["roscoe"])
    assert sum(r["weak"]["pr"] for r in by["prm800k"]) == 105 and all(r["gold"]["pr"] is None for r in by["prm800k"])
    assert sum(r["gold"]["pr"] for r in by["human47"]) == 25
    assert {r["subset"] for r in R if not r["permissive"]} == {"tabmwp_gpt3_cot_responses.jsonl", "roscoe-drop", "roscoe-esnli"}


def test_step_features_see_redundancy_negated_twins_planning_and_no_progress():
    from howeval.judges.patternrm.features import STEP_FEATURE_DOCS, STEP_FEATURES, step_features

    assert set(STEP_FEATURE_DOCS) == set(STEP_FEATURES)  # every feature names the pattern it targets
    enc = FakeEncoder()
    q = "Tom has 3 apples and buys 4 more. How many apples does he have?"

    def sf(steps):
        return dict(zip(STEP_FEATURES, step_features(q, steps, enc.encode(steps), enc.encode([q])[0])))

    plain = sf(["3 + 4 = 7 apples in total.", "So the answer is 7."])
    padded = sf(["Let me think about what the problem asks.", "I need to find the number of apples.",
                 "Let me think about what the problem asks.", "3 + 4 = 7 apples in total.", "So the answer is 7."])
    assert padded["step_redundancy_max"] == pytest.approx(1.0, abs=1e-5) and plain["step_redundancy_max"] < 1.0
    assert padded["share_redundant_steps"] >= 0.25 and padded["step_redundancy_mean"] > plain["step_redundancy_mean"] - 0.2
    assert padded["share_planning_steps"] == pytest.approx(3 / 5) and plain["share_planning_steps"] == 0.0
    assert padded["share_no_math_steps"] == pytest.approx(3 / 5) and plain["share_no_math_steps"] == 0.0
    assert padded["share_no_new_number_steps"] == pytest.approx(4 / 5)  # the wordy steps and the restated 7 add no number
    assert plain["share_no_new_number_steps"] == pytest.approx(1 / 2)  # 7 is new in step 1, restated in step 2
    twin = sf(["The triangle is a right triangle.", "The triangle is not a right triangle."])
    assert twin["negation_twin_pairs"] > 0 and twin["share_negation_steps"] == 0.5 and plain["negation_twin_pairs"] == 0
    assert padded["log_step_count"] > plain["log_step_count"]
    from howeval.judges.patternrm.features import COUNT_FEATURE_DOCS, COUNT_FEATURES, count_features

    assert set(COUNT_FEATURE_DOCS) == set(COUNT_FEATURES)
    cnt = dict(zip(COUNT_FEATURES, count_features([padded[k] for k in STEP_FEATURES])))
    assert cnt["n_planning_steps"] == pytest.approx(np.log1p(3)) and cnt["n_no_new_number_steps"] == pytest.approx(np.log1p(4))
    assert cnt["log_step_count"] == padded["log_step_count"]
    none_q = dict(zip(STEP_FEATURES, step_features("", ["a b c"], enc.encode(["a b c"]), None)))
    assert none_q["question_cos_mean"] == 0.0 and none_q["step_redundancy_mean"] == 0.0


def test_within_task_auroc_gives_task_identity_nothing_and_bootstrap_brackets_the_estimate():
    from howeval.judges.patternrm.recipe import auroc, bootstrap_ci, within_task_auroc

    rng = np.random.default_rng(0)
    task = np.array(["a"] * 100 + ["b"] * 100)
    y = np.r_[rng.random(100) < 0.4, rng.random(100) < 0.1].astype(int)
    ident = np.where(task == "a", 0.4, 0.1)  # the task's prevalence: separates the tasks only
    assert auroc(y, ident) > 0.6 and within_task_auroc(y, ident, task) == pytest.approx(0.5)
    good = y + rng.normal(0, 0.5, 200)
    wt = within_task_auroc(y, good, task)
    assert wt > 0.8
    lo, hi = bootstrap_ci(within_task_auroc, y, good, task, n_boot=200)
    assert lo <= wt <= hi and hi - lo < 0.3
    assert bootstrap_ci(within_task_auroc, y, good, task, n_boot=200) == [lo, hi]  # deterministic
    assert within_task_auroc(y, good, task, min_pos=1000) is None  # no task with enough positives
    assert auroc(np.array([0, 0, 1, 1]), np.array([0.1, 0.5, 0.5, 0.9])) == pytest.approx(0.875)  # ties count half


def test_answer_correct_reads_each_source_and_says_none_when_unreadable():
    from howeval.judges.patternrm.labelsets import answer_correct

    assert answer_correct("roscoe-gsm8k", "16 - 7 = 9. 2 * 9 = 18. A: 18", "9 * 2 = 18. A: 18") == 1
    assert answer_correct("roscoe-gsm8k", "A: 1,800", "A: 18") == 0
    assert answer_correct("roscoe-cosmos", "The answer is Yes.", "no") == 0
    assert answer_correct("roscoe-drop", "36-yard", "yes") is None
    assert answer_correct("prm800k", "So 216.\n# Answer\n\n216", "216") == 1
    assert answer_correct("prm800k", "# Answer\n\n$\\frac{1}{2}$", "\\frac{1}{2}") == 1
    assert answer_correct("prm800k", "Steps but no answer line", "216") is None
    assert answer_correct("roscoe-gsm8k", "A: 3", None) is None


def test_head_note_names_the_head_and_its_measured_precision_and_the_report_carries_it(tmp_path):
    import json

    from howeval.config.rewards import PatternRMConfig
    from howeval.judges.patternrm.head import head_note
    from howeval.report.run import _notes

    meta = {"head_version": "minilm-head-7", "measured": {"trigger": {"precision": 0.8512, "base_rate": 0.6809, "recall": 0.9, "n": 47},
                                                           "roscoe_con": {"auroc": 0.75, "within_task_auroc": 0.72},
                                                           "prm800k_pr": {"auroc": 0.66}}}
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    note = head_note(str(tmp_path))
    assert "minilm-head-7" in note and "Trigger precision 0.85 against a base rate of 0.68 on the 47" in note
    assert "within task" in note and "PRM800K pr AUROC 0.66" in note
    (tmp_path / "meta.json").write_text(json.dumps({"head_version": "x"}))
    assert head_note(str(tmp_path)).endswith("precision not measured.")
    assert head_note(str(tmp_path / "missing")) is None

    class J:  # a sweep's pattern judge config of kind patternrm (the embedded head at tmp_path)
        kind = "patternrm"
        patternrm = PatternRMConfig(kind="trained", path=str(tmp_path))

    class Cfg:
        class judges:
            class verifier:
                llm_fallback = False

        models: list = []

    (tmp_path / "meta.json").write_text(json.dumps(meta))
    notes = _notes(Cfg, "patternrm@1", {}, J)
    assert any(n.startswith("Pattern judge is the PatternRM head `minilm-head-7`") and "0.85" in n for n in notes)
    assert not any("PatternRM head" in n for n in _notes(Cfg, "rules@1", {}, None))


def test_calibration_results_report_within_task_figures_with_cis_and_honest_goals():
    """bench/results/patternrm_calibration.json (written by `make patternrm`): every label entry has pooled and
    within-task AUROC for the head and the length floor, the task-identity floor, CIs that bracket the
    estimates, and goals whose verdicts follow from the figures."""
    import json

    res = json.loads((Path(__file__).resolve().parents[4] / "bench" / "results" / "patternrm_calibration.json").read_text())
    con = res["by_source"]["roscoe"]["con"]
    for k in ("auroc", "auroc_length", "auroc_task_identity", "within_task_auroc", "within_task_auroc_length"):
        lo, hi = con[k + "_ci95"]
        assert lo <= con[k] <= hi, k
    assert sorted(t for t, v in con["tasks"].items() if v["counted"]) == ["roscoe-cosmos", "roscoe-drop", "roscoe-gsm8k"]
    assert con["within_task_auroc_task_identity"] == 0.5
    g = con["goals"]
    assert g["within_task_auroc >= within_task_auroc_length + 0.03"]["met"] == (
        con["within_task_auroc"] >= con["within_task_auroc_length"] + 0.03 - 1e-9)
    assert g["auroc >= 0.74"]["met"] == (con["auroc"] >= 0.74)
    pr = res["by_source"]["prm800k"]["pr"]
    assert pr["goals"]["auroc > auroc_length"]["met"] == (pr["auroc"] > pr["auroc_length"])
    t = res["trigger"]
    assert t["goal"]["precision >= base_rate + 0.1"]["met"] == (t["precision"] >= t["base_rate"] + 0.1)
    assert set(res["goals"]["misses"]) == {f"{s}/{k}: {n} by {v['by']}" for s, labs in res["by_source"].items()
                                           for k, e in labs.items() for n, v in e["goals"].items() if not v["met"]}
    assert "by_source" in res["verifier_bit_variant"] and res["verifier_bit_variant"]["reward_spread"]
