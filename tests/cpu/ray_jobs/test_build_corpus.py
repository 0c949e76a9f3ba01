"""build_corpus on a small Parquet run with three judges: consensus filter, join, oversampling, records."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from howeval.rewards.patternrm import parse_label_output
from howeval.records import JUDGMENT_SCHEMA, RESPONSE_SCHEMA, conform, response_hash
from ray_jobs.build_corpus import build_corpus, main

JUDGES = ("rules@rules-1.0", "llm-a@v1", "llm-b@v1")
CLEAN = (False, False, False, False)


def _resp(i: int, text: str, **kw) -> dict:
    return {"sample_id": f"s{i}", "config": "m", "mode": "NT", "question": f"What is {i}+{i}?", "response": text,
            "answer": str(2 * i), "answer_type": "free_form", "truncated": False, "error": None,
            "response_hash": response_hash(text), **kw}


def make_run(root: Path) -> Path:
    """A run folder: 12 responses judged by 3 judges.

    s0-s5: clean, unanimous. s6, s7: cot (+rep on s7), unanimous. s8: judges disagree on rep.
    s9: one judge failed. s10: only two judges. s11: unanimous but truncated (no y_m to label).
    """
    texts = {i: f"{i} plus {i} is {2 * i}, so the answer is \\boxed{{{2 * i}}}." for i in range(12)}
    texts[6] = "Wait, let me re-check. The answer is \\boxed{12}."
    texts[7] = "Hmm, let me think. The answer is 14. The answer is 14. The answer is 14."
    responses = [_resp(i, texts[i], truncated=(i == 11)) for i in range(12)]
    vec = {i: CLEAN for i in range(12)}
    vec[6], vec[7] = (True, False, False, False), (True, True, False, False)
    judg = []
    for r in responses:
        i = int(r["sample_id"][1:])
        for j in JUDGES:
            if i == 10 and j == JUDGES[2]:
                continue
            v = list(vec[i])
            if i == 8 and j == JUDGES[1]:
                v[1] = True
            err = "judge_error: timeout" if (i == 9 and j == JUDGES[2]) else None
            labels = dict(zip(("cot", "rep", "con", "pr"), [None] * 4 if err else v))
            judg.append({"sample_id": r["sample_id"], "config": "m", "mode": "NT", "judge": j, "response_hash": r["response_hash"],
                         "correct": True, **labels, "judge_error": err,
                         "evidence": json.dumps({"cot": "Wait," if v[0] else None})})
    run = root / "run"
    (run / "responses" / "m").mkdir(parents=True)
    (run / "judgments" / "x").mkdir(parents=True)
    pq.write_table(conform(responses, RESPONSE_SCHEMA), run / "responses" / "m" / "part-0.parquet")
    pq.write_table(conform(judg, JUDGMENT_SCHEMA), run / "judgments" / "x" / "part-0.parquet")
    return run


def test_counts_and_records(tmp_path, capsys):
    run = make_run(tmp_path)
    c = build_corpus(str(run), None, str(tmp_path / "corpus"), min_rate=0.25, max_copies=2, seed=0)
    assert c["consensus"] == {"responses": 12, "missing_judge": 1, "judge_error": 1, "disagree": 1, "unanimous": 9}
    assert c["joined"]["truncated"] == 1 and c["joined"]["kept"] == 8
    assert c["labels_before"] == {"n": 8, "clean": 6, "cot": 2, "rep": 1, "con": 0, "pr": 0}
    after = c["labels_after"]
    assert after["rep"] / after["n"] >= 0.25 or after["rep"] == 3  # rep: 1 row, at most 2 extra copies
    assert after["cot"] >= 2 and after["n"] > 8
    out = capsys.readouterr().out
    for step in ("read", "consensus", "joined", "labels before", "labels after", "written"):
        assert f"[build_corpus] {step}" in out
    direct = [json.loads(x) for x in (tmp_path / "corpus" / "sft_direct.jsonl").read_text().splitlines()]
    thinking = [json.loads(x) for x in (tmp_path / "corpus" / "sft_thinking.jsonl").read_text().splitlines()]
    assert len(direct) == len(thinking) == after["n"]
    for d, t in zip(direct, thinking):
        assert [m["role"] for m in d["messages"]] == ["system", "user", "assistant"]
        assert parse_label_output(d["messages"][-1]["content"]) == d["labels"]
        assert parse_label_output(t["messages"][-1]["content"]) == t["labels"]
        assert t["messages"][-1]["content"].startswith("<analysis>")
    s6 = next(t for t in thinking if t["sample_id"] == "s6")
    assert 'cot: present, e.g. "Wait,"' in s6["messages"][-1]["content"]
    assert {d["sample_id"] for d in direct} == {f"s{i}" for i in (0, 1, 2, 3, 4, 5, 6, 7)}


def test_holdout_and_cli_errors(tmp_path):
    run = make_run(tmp_path)
    c = build_corpus(str(run), list(JUDGES), str(tmp_path / "c2"), holdout=0.5, seed=1)
    assert c["split"]["train"] + c["split"]["heldout"] == 8 and c["split"]["heldout"] > 0
    held = [json.loads(x) for x in (tmp_path / "c2" / "heldout.jsonl").read_text().splitlines()]
    assert len(held) == c["split"]["heldout"] and set(held[0]["labels"]) == {"cot", "rep", "con", "pr"}
    assert main(["--run", str(run), "--out", str(tmp_path / "c3"), "--judges", "a@1", "b@1", "c@1"]) == 2
    with pytest.raises(ValueError, match="exactly 3"):
        build_corpus(str(run), list(JUDGES[:2]), str(tmp_path / "c4"))
