"""howeval.report.tables: the Markdown sections for intervals and the length analysis."""
from __future__ import annotations

from howeval.report.tables import intervals_section, length_section


def test_length_section_names_unresolved_and_excluded():
    la = {"unit": "words", "n_bins": 6, "n_used": 3, "excluded": {"error": 2, "truncated": 0, "unlabelled": 1},
          "edges": [1, 3, 5], "too_small": {"T/wrong": 2}, "min_rows_per_bin": 2,
          "bins": {"NT/unresolved": [{"bin": 1, "n": 3, "lo": 1, "hi": 3, "min_len": 1, "max_len": 2, "mean_len": 1.5,
                                      "trigger": 2 / 3},
                                     {"bin": 2, "n": 0, "lo": 3, "hi": 5, "min_len": None, "max_len": None,
                                      "mean_len": None, "trigger": None}]},
          "correlation": {"n_unresolved_points": 1,
                          "by_mode": {"NT": {"r": 0.5, "p_value": 0.25, "n_points": 4},
                                      "T": {"r": None, "p_value": None, "n_points": 2}}}}
    s = length_section(la)
    assert "NT: **+0.500 (p = 0.25, 4 aggregates)**; T: **n/a (2 aggregates; r needs 3)**" in s
    assert "pooled:" not in s and "(1 unresolved aggregates)" in s
    assert "left out: 2 error, 1 unlabelled." in s
    assert "| group | n | 1–3 | 3–5 |" in s and "| NT/unresolved | 3 | 67 (3) | – |" in s
    assert "Groups too small to cut (fewer than 12 rows): T/wrong (n=2)." in s


def test_intervals_section():
    m = {"intervals": {"alpha": 0.05, "n_boot": 10, "seed": 0},
         "configs": {"c": {"NT": {"acc": 0.5, "acc_ci": [0.25, 0.75], "trigger": None, "trigger_ci": None}}}}
    s = intervals_section(m)
    assert s.startswith("## Uncertainty (95% bootstrap intervals, 10 resamples, seed 0)")
    assert "| c | NT | 50.0 | [25.0, 75.0] | – | – |" in s


def test_overview_puts_the_three_benchmarks_side_by_side():
    from howeval.report.tables import overview_table

    m = {"configs": {"c": {"NT": {"acc": 0.5, "trigger": 0.25, "n": 4, "n_scored": 4, "n_labeled": 4},
                           "T": {"acc": 0.75, "trigger": 0.0, "n": 4, "n_scored": 4, "n_labeled": 3, "n_errors": 0,
                                 "n_reasoning": 0}}}}
    assert overview_table(m) is None  # PatternEval only
    m["crystal"] = {"c": {"NT": {"ordered_f1": 0.125}}}
    m["adapt"] = {"c": {"accuracy": {"text": {"all": 0.5}, "oracle": {"all": 1.0}}, "mcc": 0.2}}
    t = overview_table(m)
    assert t.splitlines()[0] == ("| config | Acc NT | Acc T | Trigger NT | Trigger T | T thought? | CRYSTAL OMF1 NT | "
                                 "CRYSTAL OMF1 T | Adapt Acc text | Adapt Acc adaptive | Adapt Acc oracle | Adapt MCC |")
    assert t.splitlines()[2] == ("| c | 50.0 (over 4 of 4 with a verdict) | 75.0 (over 4 of 4 with a verdict) | 25.0 (over 4 "
                                 "of 4 labelled) | 0.0 (over 3 of 4 labelled) | NO (0 of 4 with reasoning) | 12.5 | – | "
                                 "50.0 | – | 100.0 | 0.200 |")


def test_thinking_section_counts_and_warns():
    from howeval.metrics.patterneval import sweep_metrics
    from howeval.report.tables import mode_table, thinking_section

    rows = [{"sample_id": s, "config": "c", "mode": m, "correct": True, "cot": False, "rep": False, "con": False,
             "pr": False, "finish_reason": "length" if (m, s) == ("T", "b") else "stop",
             "reasoning": None, "family": "VG", "category": "ocr"} for s in "ab" for m in ("NT", "T")]
    metrics = sweep_metrics(rows)
    sec = thinking_section(metrics)
    assert "| c | T | 2 | 0/2 | 1/2 | 0 |" in sec and "| c | NT | 2 | 0/2 | 0/2 | 0 |" in sec
    assert "- **Warning**: config 'c': none of its 2 T rows has a reasoning channel" in sec
    assert ("| c | NT | 2 | 2/2 | 100.0 (over 2 of 2 with a verdict) | 0.0 (over 2 of 2 labelled) | 100.0 | 0.0 |"
            in mode_table(metrics))


def test_gaps_table_shows_no_interval_below_the_minimum_of_pairs():
    from howeval.report.tables import gaps_table

    m = {"configs": {"few": {"delta_acc": 1.0, "delta_acc_ci": [1.0, 1.0], "n_paired_acc": 2, "n_paired_pat": 0},
                     "many": {"delta_acc": 0.1, "delta_acc_ci": [-0.05, 0.25], "n_paired_acc": 40, "n_paired_pat": 40}}}
    t = gaps_table(m)
    assert "| few | +100.0 | too few pairs (2 < 10) | – |" in t
    assert "| many | +10.0 | [-5.0, +25.0] | – |" in t
