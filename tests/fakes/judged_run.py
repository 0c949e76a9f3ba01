"""A small judged run folder on disk (12 responses, 3 judges) shared by the corpus and PatternRM tests."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from howeval.records import JUDGMENT_SCHEMA, RESPONSE_SCHEMA, conform, response_hash

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
