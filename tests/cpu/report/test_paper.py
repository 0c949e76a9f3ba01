"""howeval.report.paper: main and per-category tables from a hand-written metrics dict."""
from __future__ import annotations

from howeval.report.paper import categories_of, category_table, main_markdown, main_table, main_tex, tex_escape


def _mode(acc, trig, cats):
    lab = {"cot": trig, "rep": 0.0, "con": None, "pr": 0.0}
    return {"n": 4, "n_scored": 4, "acc": acc, "trigger": trig, "labels": lab, "acc_ci": [0.1, 0.9], "trigger_ci": None,
            "by_family": {"VG": {"n": 4, "acc": acc, "trigger": trig, "labels": lab}},
            "by_category": {c: {"n": 2, "acc": acc, "trigger": trig, "labels": lab} for c in cats}}


M = {"configs": {"m_1": {"NT": _mode(0.5, 0.25, ["stem", "ocr", "zeta"]), "T": _mode(0.75, 0.0, ["stem"]),
                         "delta_acc": 0.25, "delta_pat": 0.25, "delta_acc_ci": [-0.5, 0.75], "delta_pat_ci": None}}}


def test_main_table_values_and_missing():
    (r,) = main_table(M, {"m_1": "none"})
    assert (r["acc_NT"], r["acc_T"], r["trigger_NT"], r["cot_NT"], r["con_NT"]) == (50.0, 75.0, 25.0, 25.0, None)
    assert (r["acc_NT_lo"], r["acc_NT_hi"], r["trigger_NT_lo"]) == (10.0, 90.0, None)
    assert r["trigger_VG_NT"] == 25.0 and r["trigger_OS_NT"] is None  # no OS rows: missing, not 0
    assert (r["delta_acc"], r["delta_acc_lo"], r["delta_pat_lo"]) == (25.0, -50.0, None)
    md = main_markdown(M, {"m_1": "none"})
    # Acc with its denominator (over scored of n); Trigger's is unknown in this older metrics dict: the value alone
    assert md.splitlines()[2].startswith("| m_1 | none | 4 | 50.0 (over 4 of 4 with a verdict) | 75.0 (over 4 of 4 "
                                         "with a verdict) | 25.0 | 0.0 | – | – | – | – | 25.0 | 0.0 |")
    assert md.splitlines()[2].endswith("| +25.0 | +25.0 |")
    assert r"m\_1 & none & 4" in main_tex(M, {"m_1": "none"})


def test_categories_in_paper_order_then_others():
    assert categories_of(M) == ["ocr", "stem", "zeta"]
    cats, rows = category_table(M)
    assert rows[1]["mode"] == "T" and rows[1]["ocr_trigger"] is None and rows[1]["ocr_n"] == 0
    assert rows[0]["zeta_acc"] == 50.0


def test_tex_escape():
    assert tex_escape("a_b & 5%") == r"a\_b \& 5\%"


def test_every_table_shows_acc_and_trigger_denominators_and_the_all_n_form():
    from howeval.metrics.patterneval import sweep_metrics
    from howeval.report.paper import category_csv, category_markdown, category_tex, main_csv

    def row(s, mode, correct, trig, cat="ocr"):
        return {"sample_id": s, "config": "c", "mode": mode, "correct": correct, "cot": trig, "rep": False if trig is not None else None,
                "con": False if trig is not None else None, "pr": False if trig is not None else None,
                "family": "OS", "category": cat}
    rows = [row("a", "NT", True, True), row("b", "NT", None, False), row("c", "NT", False, None),
            row("a", "T", True, False), row("b", "T", True, False), row("c", "T", True, False, cat="stem")]
    m = sweep_metrics(rows)
    md = main_markdown(m)
    assert ("| c | – | 3 | 50.0 (over 2 of 3 with a verdict) | 100.0 (over 3 of 3 with a verdict) | 50.0 (over 2 of 3 "
            "labelled) | 0.0 (over 3 of 3 labelled) | 33.3 | 100.0 | 33.3 | 0.0 |") in md
    assert "counted as wrong" in md
    tex = main_tex(m)
    assert r"50.0\,{\scriptsize (over 2 of 3 with a verdict)}" in tex and "% Acc is over the responses with a verdict" in tex
    csv_head = main_csv(m).splitlines()[0].split(",")
    assert {"scored_NT", "labelled_NT", "acc_all_n_NT", "trigger_all_n_T"} <= set(csv_head)
    cmd = category_markdown(m)
    assert "| c | NT | 50.0 (2) | – |" in cmd and "| c | T | 0.0 (2) | 0.0 (1) |" in cmd  # Trigger block, n per cell
    assert r"{\scriptsize (2)}" in category_tex(m)
    assert {"ocr_acc_n", "ocr_trigger_n"} <= set(category_csv(m).splitlines()[0].split(","))
