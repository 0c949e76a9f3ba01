"""build_triggers (issue 41): a sweep's judgments -> triggers.json for the benchmark builder, end to end with the
builder's rule 4 (categories whose rollouts vary are retained)."""
from __future__ import annotations

import json

import pyarrow.parquet as pq

from howeval.benchmarks.construction import main as construct
from howeval.ray_jobs.build_triggers import main
from howeval.records import JUDGMENT_SCHEMA, conform


def _run(root):
    """Two configs x two modes over six items: s0-s2 (stem) vary, o0-o2 (ocr) never trigger; one judge error."""
    rows = []
    for i, uid in enumerate(["s0", "s1", "s2", "o0", "o1", "o2"]):
        for c in ("a", "b"):
            for m in ("NT", "T"):
                err = "timeout" if (uid == "o2" and c == "b" and m == "T") else None
                cot = None if err else (uid.startswith("s") and m == "NT" and (c == "a" or i == 0))
                rows.append({"sample_id": uid, "config": c, "mode": m, "judge": "rules@1", "correct": c == "a",
                             "cot": cot, "rep": None if err else False, "con": None if err else False,
                             "pr": None if err else False, "judge_error": err})
    (root / "run" / "judgments" / "a").mkdir(parents=True)
    pq.write_table(conform(rows, JUDGMENT_SCHEMA), root / "run" / "judgments" / "a" / "part-0.parquet")
    return root / "run"


def test_triggers_from_a_run_feed_the_builder(tmp_path, capsys):
    run = _run(tmp_path)
    assert main(["--run", str(run), "--output", str(tmp_path / "t")]) == 0
    trig = json.loads((tmp_path / "t" / "triggers.json").read_text())
    assert trig == {"o0": 0.0, "o1": 0.0, "o2": 0.0, "s0": 0.5, "s1": 0.25, "s2": 0.25}
    detail = json.loads((tmp_path / "t" / "triggers_detail.json").read_text())
    assert detail["skipped"] == {"judge_error": 1} and detail["items"]["o2"]["n"] == 3
    prov = json.loads((tmp_path / "t" / "provenance.json").read_text())
    assert prov["judge"] == "rules@1" and prov["counts"]["varying"] == 3 and "commit" in prov["git"]
    assert json.loads(capsys.readouterr().out)["with_failures"] == 3
    man = tmp_path / "m.jsonl"
    man.write_text("".join(json.dumps({"uid": u, "category": "stem" if u[0] == "s" else "ocr", "source": "x",
                                       "answer_type": "multiple_choice", "question": "q", "answer": "A"}) + "\n"
                           for u in trig))
    assert construct(["--manifest", str(man), "--out", str(tmp_path / "b"), "--triggers", str(tmp_path / "t" / "triggers.json"),
                      "--variation-min", "0.5"]) == 0
    md = (tmp_path / "b" / "composition.md").read_text()
    assert "| stem | 3 | 100 | 100 | varied (100% >= 50%): full quota | 3 | 3 | 0 | 3 |" in md
    assert "| ocr | 3 | 100 | 0 | format-checked (100%): 0.5 of quota | 2 | 2 | 0 | 0 |" in md


def test_several_judges_need_one_named(tmp_path, capsys):
    run = _run(tmp_path)
    t = pq.read_table(run / "judgments" / "a" / "part-0.parquet").to_pylist()
    pq.write_table(conform([{**r, "judge": "llm@1"} for r in t], JUDGMENT_SCHEMA), run / "judgments" / "a" / "part-1.parquet")
    assert main(["--run", str(run), "--output", str(tmp_path / "t")]) == 2
    assert "hold judges ['llm@1', 'rules@1']" in capsys.readouterr().err
    assert main(["--run", str(run), "--output", str(tmp_path / "t"), "--judge", "llm@1"]) == 0
    assert main(["--run", str(tmp_path / "nothing"), "--output", str(tmp_path / "u")]) == 2
