"""PatternEval benchmark construction (issue 31): pattern-oriented order, down-sampling of format-checked
categories, source caps, and the Table 1 composition report, on synthetic candidate rows and on the real
shared manifest (skipped when ../shared/data is absent)."""
from __future__ import annotations

import json

import pytest

from howeval.benchmarks.construction import build, composition, main, render_composition, triggers_from_judgments


def _rows():
    rows = []
    for i in range(10):  # ocr: free-form answers, two sources (8 from "big", 2 from "small")
        rows.append({"uid": f"o{i}", "category": "ocr", "source": "big" if i < 8 else "small",
                     "answer_type": "extractive_text", "question": "q", "answer": "a"})
    for i in range(6):  # stem: every answer a multiple choice letter -> format-dominated
        rows.append({"uid": f"s{i}", "category": "stem", "source": "mathv", "answer_type": "multiple_choice",
                     "question": "q", "answer": "A"})
    return rows


def test_build_caps_sources_downsamples_format_checked_and_prefers_failures():
    triggers = {"o5": 1.0, "o9": 0.5, "s4": 0.25}
    res = build(_rows(), per_category=5, source_cap=2, triggers=triggers, seed=1)
    kept = {r["uid"] for r in res.rows}
    ocr = [r for r in res.rows if r["category"] == "ocr"]
    stem = [r for r in res.rows if r["category"] == "stem"]
    assert [r["uid"] for r in ocr][:2] == ["o5", "o9"]  # failed rollouts first, higher Trigger first
    # cap 2 per source: 2 of the 8 "big" items and both "small" ones; the quota of 5 cannot be met
    assert len(ocr) == 4 and sum(r["source"] == "big" for r in ocr) == 2
    assert res.decisions["ocr"] == {"available": 10, "format_checked": 0.0, "variation": 0.5, "rolled_out": 2,
                                    "retention": "full quota", "quota": 5, "kept": 4, "capped": 6, "with_failures": 2}
    assert len(stem) == 2 and "s4" in kept  # quota 5 halved and rounded (100% format-checked); the failed item kept
    assert res.decisions["stem"] == {"available": 6, "format_checked": 1.0, "variation": 1.0, "rolled_out": 1,
                                     "retention": "format-checked (100%): 0.5 of quota", "quota": 2, "kept": 2,
                                     "capped": 0, "with_failures": 1}
    assert build(_rows(), per_category=4, source_cap=3, seed=1).rows == build(_rows(), per_category=4, source_cap=3,
                                                                               seed=1).rows  # seeded
    with pytest.raises(ValueError, match="duplicate uid"):
        build(_rows() + _rows()[:1])


def test_composition_table_and_cli(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    rows = _rows()
    for r in rows:
        r["image"] = f"images/{r['uid']}.png"
    (src / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["--manifest", str(src / "manifest.jsonl"), "--out", str(tmp_path / "out"), "--per-category", "4",
                 "--source-cap", "3"]) == 0
    out = [json.loads(x) for x in (tmp_path / "out" / "manifest.jsonl").read_text().splitlines()]
    assert len(out) == 6 and out[0]["image"].startswith("../src/images/")
    md = (tmp_path / "out" / "composition.md").read_text()
    assert "| **OS** | all | **4** | **66.7** |" in md and "| KR | stem | 2 | 33.3 |" in md
    assert "| stem | 6 | 100 | - | format-checked (100%): 0.5 of quota | 2 | 2 | 0 | 0 |" in md


def test_categories_with_response_variation_are_retained():
    """Rule 4 (issue 41): stem is format-checked (rule 2 halves it) but its rollouts vary: with variation_min it keeps
    its full quota; ocr's rolled-out items never vary: low_variation_keep applies."""
    trig = {"s0": 0.5, "s1": 0.25, "s2": 0.0, "o0": 0.0, "o1": 1.0, "o2": 0.0}
    off = build(_rows(), per_category=4, triggers=trig, seed=0)
    assert off.decisions["stem"]["quota"] == 2 and off.decisions["stem"]["variation"] == 2 / 3
    on = build(_rows(), per_category=4, triggers=trig, seed=0, variation_min=0.5, low_variation_keep=0.5)
    assert on.decisions["stem"]["quota"] == 4 and on.decisions["stem"]["retention"] == "varied (67% >= 50%): full quota"
    assert on.decisions["ocr"]["variation"] == 0.0 and on.decisions["ocr"]["quota"] == 2
    assert on.decisions["ocr"]["retention"] == "full quota; low variation (0% < 50%): 0.5 of quota"
    # a category with no rolled-out item has no variation: rules 2-3 only
    none = build(_rows(), per_category=4, triggers={"o1": 0.5}, seed=0, variation_min=0.5, low_variation_keep=0.5)
    assert none.decisions["stem"]["variation"] is None and none.decisions["stem"]["quota"] == 2
    with pytest.raises(ValueError, match="variation_min must be in"):
        build(_rows(), variation_min=1.5)


def test_triggers_from_a_sweeps_judgments():
    labels = {"cot": False, "rep": False, "con": False, "pr": False}
    js = [{"sample_id": "s0", "config": c, "mode": m, "judge": "rules@1", "correct": c == "a", **labels,
           "cot": c == "a" and m == "NT"} for c in ("a", "b") for m in ("NT", "T")]
    js += [{"sample_id": "s1", "config": "a", "mode": "NT", "judge": "rules@1", "judge_error": "timeout",
            **{k: None for k in labels}},
           {"sample_id": "s1", "config": "a", "mode": "NT", "judge": "llm@1", "correct": True, **labels}]
    t = triggers_from_judgments(js, "rules@1")
    assert t["rates"] == {"s0": 0.25} and t["skipped"] == {"judge_error": 1}
    assert t["detail"]["s0"] == {"n": 4, "triggered": 1, "trigger": 0.25, "n_scored": 4, "correct": 0.5, "varies": True}
    with pytest.raises(ValueError, match=r"hold judges \['llm@1', 'rules@1'\]"):
        triggers_from_judgments(js)


def test_composition_of_the_real_shared_manifest(shared_data):
    rows = [json.loads(x) for x in (shared_data / "manifest.jsonl").read_text().splitlines()]
    c = composition(rows)
    # the shared README: stem_math 50, ocr_table_reasoning 40, perception_abstract_pattern 20,
    # perception_hallucination 20, perception_natural 2, ocr_chart 1, stem_science 1
    assert c["n"] == 134 and c["families"] == {"VG": 42, "OS": 41, "KR": 51}
    assert c["categories"]["stem_math"] == {"family": "KR", "n": 50}
    assert "| **VG** | all | **42** | **31.3** |" in render_composition(c)
    res = build(rows, per_category=20, source_cap=15, seed=0)
    # stem_math: 48 MATH-Vision items (capped at 15) + 2 from the CRYSTAL page; the quota of 20 cannot be met
    assert res.decisions["stem_math"] == {"available": 50, "format_checked": pytest.approx(21 / 50), "variation": None,
                                          "rolled_out": 0, "retention": "full quota", "quota": 20,
                                          "kept": 17, "capped": 33, "with_failures": 0}
    assert len(res.rows) == sum(d["kept"] for d in res.decisions.values())
