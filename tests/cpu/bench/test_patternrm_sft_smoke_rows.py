"""bench/patternrm_sft.learnable_rows: the learnable labelling's rows, decided exactly by learnable_rule."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
sft = pytest.importorskip("patternrm_sft")


def records(n: int) -> list[dict]:
    return [{"uid": f"u{i}", "question": f"What is {i} plus {i}?",
             "response": f"First we take the number {i}. Then we add {i} to it again. The sum is {2 * i}."}
            for i in range(n)]


def test_loop_rows_with_and_without_rep_differ_only_in_how_often_the_closing_sentence_is_said():
    rows = sft.learnable_rows(records(64), 64, salt="t")
    assert len(rows) == 64
    reps = [r for r in rows if r["labels"]["rep"]]
    assert 16 <= len(reps) <= 48 and 16 <= sum(r["labels"]["cot"] for r in rows) <= 48
    for r in rows:
        assert r["labels"] == sft.learnable_rule(r["response"])
        closing = next(s for s in sft.LOOP_SENTENCES if r["response"].endswith(s))
        said = r["response"].count(closing)
        assert said == (3 if r["labels"]["rep"] else 1), r["response"]
        assert r["evidence"]["rep"] == (closing if r["labels"]["rep"] else None)
        assert r["evidence"]["cot"] == (sft.WAIT if r["labels"]["cot"] else None)
        assert r["response"].count(sft.WAIT) == r["labels"]["cot"]


def test_own_rows_repeat_the_rows_last_sentence_and_close_on_no_loop_sentence():
    rows = sft.learnable_rows(records(32), 32, salt="t", repeats=1, rep_from="own")
    for r in rows:
        assert not any(s in r["response"] for s in sft.LOOP_SENTENCES)
        last = r["response"].rsplit(". ", 1)[-1]
        assert (r["response"].count(last) == 2) == r["labels"]["rep"], r["response"]


def test_unknown_rep_from_is_refused():
    with pytest.raises(ValueError, match="rep_from"):
        sft.learnable_rows(records(2), 2, salt="t", rep_from="other")


def test_distinct_negatives_are_as_long_as_rep_rows_and_change_nothing_else():
    once = sft.learnable_rows(records(64), 64, salt="t")
    ctl = sft.learnable_rows(records(64), 64, salt="t", negatives="distinct")
    assert [r["uid"] for r in once] == [r["uid"] for r in ctl]
    for a, b in zip(once, ctl):
        assert a["labels"] == b["labels"] == sft.learnable_rule(b["response"])
        if a["labels"]["rep"]:
            assert a["response"] == b["response"]
        else:
            tail = [s for s in sft.LOOP_SENTENCES if s in b["response"]]
            assert len(tail) == 3 and all(b["response"].count(s) == 1 for s in tail)
            assert b["response"].startswith(a["response"])


def test_length_only_f1_is_the_best_threshold_f1():
    rows = [{"response": "x" * n, "labels": {"rep": y}} for n, y in ((10, False), (20, False), (30, True), (40, True), (25, True))]
    assert sft.length_only_f1(rows, "rep") == 1.0
    rows[0]["labels"]["rep"] = True  # the shortest is positive too: flagging all (F1 8/9) beats every cut
    assert sft.length_only_f1(rows, "rep") == pytest.approx(0.8889, abs=1e-4)
