"""write_report on a synthetic run: the paper's tables against metrics.json, samples against the records,
figures, index.html and how images reached each config."""
from __future__ import annotations

import csv
import json

import pyarrow.parquet as pq
import pytest

from howeval.config import load_run_config
from howeval.records import LABELS, MODES
from howeval.report.run import write_report

from fakes.runs import make_run, outcome


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = make_run(tmp_path_factory.mktemp("run") / "r")
    write_report(load_run_config(str(root)))
    return root


def _csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def _num(s):
    return None if s == "" else float(s)


def test_main_table_numbers_match_metrics_json(run):
    m = json.loads((run / "metrics.json").read_text())
    rows = {r["config"]: r for r in _csv(run / "tables" / "patterneval.csv")}
    assert sorted(rows) == ["alpha", "beta"]
    for cfg, row in rows.items():
        c = m["configs"][cfg]
        for mode in MODES:
            x = c[mode]
            assert int(row[f"n_{mode}"]) == x["n"]
            assert _num(row[f"acc_{mode}"]) == pytest.approx(100 * x["acc"], abs=1e-4)
            assert _num(row[f"trigger_{mode}"]) == pytest.approx(100 * x["trigger"], abs=1e-4)
            assert _num(row[f"acc_{mode}_lo"]) == pytest.approx(100 * x["acc_ci"][0], abs=1e-4)
            assert _num(row[f"trigger_{mode}_hi"]) == pytest.approx(100 * x["trigger_ci"][1], abs=1e-4)
            for k in LABELS:
                assert _num(row[f"{k}_{mode}"]) == pytest.approx(100 * x["labels"][k], abs=1e-4)
            for fam in ("VG", "OS", "KR"):
                assert _num(row[f"trigger_{fam}_{mode}"]) == pytest.approx(100 * x["by_family"][fam]["trigger"], abs=1e-4)
        assert _num(row["delta_acc"]) == pytest.approx(100 * c["delta_acc"], abs=1e-4)
        assert _num(row["delta_pat"]) == pytest.approx(100 * c["delta_pat"], abs=1e-4)
        assert _num(row["delta_pat_lo"]) == pytest.approx(100 * c["delta_pat_ci"][0], abs=1e-4)
    # hand count for alpha NT: 12 samples; correct None where i % 7 == 0 (i = 0, 7), wrong where i % 3 == 0
    alpha_nt = [outcome("alpha", "NT", i)[0] for i in range(12)]
    scored = [c for c in alpha_nt if c is not None]
    assert _num(rows["alpha"]["acc_NT"]) == pytest.approx(100 * sum(scored) / len(scored), abs=1e-4)
    assert rows["alpha"]["vision"] == "sent" and rows["beta"]["vision"] == "none"
    md = (run / "tables" / "patterneval.md").read_text()
    assert md.splitlines()[0].startswith("| config | images | n | Acc NT | Acc T | Trigger NT | Trigger T | Acc all-N NT | "
                                         "Acc all-N T | Trigger all-N NT | Trigger all-N T | CoT NT")
    # Acc shown with its denominator (10 scored of 12), and the paper's all-N form (unresolved counted wrong)
    a = m["configs"]["alpha"]["NT"]
    assert (a["n_scored"], a["n"]) == (len(scored), 12)
    assert f"| alpha | sent | 12 | {100 * a['acc']:.1f} (over {len(scored)} of 12 with a verdict) |" in md
    assert a["acc_all_n"] == pytest.approx(sum(scored) / 12)
    assert _num(rows["alpha"]["acc_all_n_NT"]) == pytest.approx(100 * sum(scored) / 12, abs=1e-4)
    assert _num(rows["alpha"]["scored_NT"]) == len(scored)
    tex = (run / "tables" / "patterneval.tex").read_text()
    assert r"\multicolumn{2}{c}{Acc}" in tex and r"\begin{tabular}" in tex and "alpha & sent & 12" in tex


def test_category_table_leaves_missing_categories_empty(run):
    m = json.loads((run / "metrics.json").read_text())
    rows = {(r["config"], r["mode"]): r for r in _csv(run / "tables" / "patterneval_categories.csv")}
    assert len(rows) == 4
    header = list(next(iter(rows.values())))
    assert header[:5] == ["config", "mode", "ood_perception_trigger", "ood_perception_acc", "ood_perception_n"]
    assert rows[("beta", "NT")]["factuality_trigger"] == "" and rows[("beta", "NT")]["factuality_n"] == "0"
    x = m["configs"]["alpha"]["T"]["by_category"]["ocr"]
    assert _num(rows[("alpha", "T")]["ocr_trigger"]) == pytest.approx(100 * x["trigger"], abs=1e-4)
    assert int(rows[("alpha", "T")]["ocr_n"]) == x["n"] == 2
    md = (run / "tables" / "patterneval_categories.md").read_text()
    assert "**Trigger (%) by category**" in md and "| beta | NT | " in md


def test_samples_file_matches_the_records(run):
    responses = pq.read_table(run / "responses").to_pylist()
    judgments = pq.read_table(run / "judgments").to_pylist()
    lines = [json.loads(x) for x in (run / "samples.jsonl").read_text().splitlines()]
    assert len(lines) == len(responses) == 46  # 12 + 11 samples, 2 modes
    assert len({(x["sample_id"], x["config"], x["mode"]) for x in lines}) == 46
    keys = {"sample_id", "config", "mode", "prompt", "raw_output", "reasoning", "response", "finish_reason",
            "prompt_tokens", "completion_tokens", "verdict", "judges", "trigger", "primary_judge", "images_seen"}
    assert keys <= set(lines[0])
    by_key = {}
    for j in judgments:
        by_key.setdefault((j["sample_id"], j["config"], j["mode"]), {})[j["judge"]] = j
    for x in lines:
        js = by_key[(x["sample_id"], x["config"], x["mode"])]
        assert [j["judge"] for j in x["judges"]] == ["rules@1", "other@1"]  # primary first
        for j in x["judges"]:
            rec = js[j["judge"]]
            assert j["labels"] == {k: rec[k] for k in LABELS}
            assert j["error"] == rec["judge_error"]
        assert x["verdict"]["correct"] == js["rules@1"]["correct"]
        assert x["verdict"]["method"] == js["rules@1"]["verify_method"]
        assert x["verdict"]["reason"] == js["rules@1"]["verify_reason"]
        assert x["trigger"] == any(js["rules@1"][k] for k in LABELS)
        assert x["prompt"]["messages"][0] == {"role": "system", "content": f"sys {x['mode']}"}
        assert x["prompt"]["messages"][1]["content"][0] == {"type": "image", "image_id": f"{x['sample_id']}.png"}
    failed = [j for x in lines for j in x["judges"] if j["error"]]
    assert failed == [{"judge": "other@1", "labels": {k: None for k in LABELS}, "evidence": None, "rationale": None,
                       "error": "llm: timeout"}]
    t = pq.read_table(run / "samples.parquet")
    assert t.num_rows == 46 and t.column("judges").to_pylist()[0][0]["judge"] == "rules@1"
    assert json.loads(t.column("prompt").to_pylist()[0]) == lines[0]["prompt"]


def test_figures_and_page(run):
    pngs = sorted(p.name for p in (run / "plots").iterdir())
    assert pngs == ["length_scatter.png", "length_sextiles.png", "radar_NT.png", "radar_T.png"]
    page = (run / "index.html").read_text()
    assert page.index("<h1>Sweep report: t</h1>") < page.index("<h2>Run</h2>") < page.index("main table") \
        < page.index("<figure") < page.index("Per-config detail")
    assert page.count("<figure") == 4 and page.count('src="data:image/png;base64,') == 4
    assert "http://" not in page and "https://" not in page  # no external asset
    assert "<figcaption>Figure 1. Non-thinking Trigger" in page
    md = (run / "report.md").read_text()
    assert "![radar_NT.png](plots/radar_NT.png)" in md
    # text-only only for the config that sent no image
    assert "Text-only configs (no image reached the model, so image questions are answered blind): beta." in md
    assert "| alpha | replay | `–` | sent | 20/24 responses |" in md


def test_judge_agreement_over_two_judges():
    from howeval.report.run import judge_agreement

    rows = []
    vectors = {"x": ((1, 0, 0, 0), (1, 0, 0, 0)), "y": ((0, 1, 0, 0), (0, 0, 0, 0)), "z": ((0, 0, 0, 0), None)}
    for sid, (a, b) in vectors.items():
        for name, v in (("rules@1", a), ("llm@1", b)):
            labels = dict(zip(("cot", "rep", "con", "pr"), (None,) * 4 if v is None else map(bool, v)))
            rows.append({"sample_id": sid, "config": "c", "mode": "T", "response_hash": "h", "judge": name,
                         "judge_error": "judge_error: garbage" if v is None else None, **labels})
    a = judge_agreement(rows)
    assert a["judges"] == ["llm@1", "rules@1"] and a["n"] == 3
    assert a["n_unanimous"] == 1 and a["n_consensus_samples"] == 1 and a["n_with_errors"] == 1  # z: one judge failed
    assert a["per_label"]["rep"]["n_disputed"] == 1 and a["disputed"] == [["y", "c", "T"]]
    assert judge_agreement([r for r in rows if r["judge"] == "rules@1"]) is None


def test_a_row_skipped_on_a_resume_is_counted_nowhere(tmp_path):
    """Issue 40: s05's answers were stored by an earlier run; the resume skipped s05 as bad (its image gone).
    It is not in n, in samples.jsonl, in the report's 'N prompts', nor in the judge agreement."""
    root = make_run(tmp_path / "r")
    bad = [{"path": str(tmp_path / "m.jsonl"), "line": 6, "uid": "s05", "field": "image", "reason": "cannot read x.png"},
           {"path": str(tmp_path / "m.jsonl"), "line": 13, "uid": "s00", "field": "uid", "reason": "duplicate uid"}]
    metrics = write_report(load_run_config(str(root)), bad_rows=bad)
    assert metrics["configs"]["alpha"]["NT"]["n"] == 11 and metrics["configs"]["beta"]["NT"]["n"] == 10
    assert metrics["run"]["n_responses"] == 42  # 46 less s05's 4 (the duplicate-uid record names s00, kept)
    lines = [json.loads(x) for x in (root / "samples.jsonl").read_text().splitlines()]
    assert len(lines) == 42 and "s05" not in {x["sample_id"] for x in lines}
    assert "; 11 prompts" in (root / "report.md").read_text()
    assert [b["uid"] for b in metrics["bad_rows"]] == ["s05", "s00"]  # still listed as skipped
