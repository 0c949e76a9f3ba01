"""Key-step generation for new AdaptMMBench items (issue 31): the writer's prompt, the parser, the review file
and reading a reviewed file back into items' key_steps."""
from __future__ import annotations

import doctest
import json

import pytest

from howeval.benchmarks.adapt import keysteps
from howeval.benchmarks.adapt.keysteps import (
    KeyStepParseError,
    apply_review,
    keystep_prompt,
    main,
    parse_key_steps,
    read_review,
    review_record,
)

ITEM = {"uid": "demo:os-chart-003", "question": "Which fruit sold most in March?", "options": ["apples", "pears"],
        "answer": "B", "image": "images/os-chart-003.png"}


def test_doctests():
    res = doctest.testmod(keysteps)
    assert res.attempted >= 4 and res.failed == 0


def test_prompt_shows_question_options_answer_and_the_json_shape():
    text = keystep_prompt(ITEM, max_steps=4)
    lines = text.splitlines()
    assert lines[:4] == ["Which fruit sold most in March?", "A. apples", "B. pears", "The correct answer is: B"]
    assert "at most 4 steps" in text and lines[-1].endswith('{"key_steps": ["step 1", "step 2", ...]}')
    with pytest.raises(ValueError, match=r"max_steps must be in 1..8, got 9"):
        keystep_prompt(ITEM, max_steps=9)


@pytest.mark.parametrize("reply, why", [
    ("", "empty reply"),
    ("The answer is pears.", "no JSON object with \"key_steps\" and no numbered or bulleted lines"),
    ('{"key_steps": "find the bar"}', "key_steps: expected a list of strings, got str"),
    ('{"key_steps": ["a", 3]}', "key_steps: every step must be a string, got int 3"),
    ('{"key_steps": ["  ", ""]}', "key_steps: the list is empty"),
    (json.dumps({"key_steps": [f"s{i}" for i in range(9)]}), "key_steps: 9 steps, more than 8"),
])
def test_parse_failures_name_the_reason(reply, why):
    with pytest.raises(KeyStepParseError, match=why.replace("(", r"\(").replace(")", r"\)")):
        parse_key_steps(reply)


def test_parse_takes_the_last_json_list_or_list_lines():
    reply = ('Draft: {"key_steps": ["wrong"]}\nFinal: ```json\n{"key_steps": ["Find the March bars.", '
             '"The pears bar (30) is taller than apples (20)."]}\n```')
    assert parse_key_steps(reply) == ["Find the March bars.", "The pears bar (30) is taller than apples (20)."]
    assert parse_key_steps("Step 1: Find March.\n- Compare the bars.\n2) Pears win.") == [
        "Find March.", "Compare the bars.", "Pears win."]
    with pytest.raises(KeyStepParseError, match="3 steps, more than 2"):
        parse_key_steps("1. a\n2. b\n3. c", max_steps=2)


def test_review_round_trip_applies_only_accepted_and_edited(tmp_path):
    replies = {"a": '{"key_steps": ["Find the March bars.", "Pears are higher."]}', "b": "no list here",
               "c": '{"key_steps": ["Read the sign."]}', "d": '{"key_steps": ["Zoom on the corner."]}'}
    items = [{**ITEM, "uid": u} for u in replies]
    rows = [review_record(it, replies[it["uid"]], writer="gpt-5") for it in items]
    assert rows[0]["proposed_steps"] == ["Find the March bars.", "Pears are higher."] and rows[0]["error"] is None
    assert rows[1]["proposed_steps"] == [] and rows[1]["error"].startswith("parse: no JSON object")
    assert {r["status"] for r in rows} == {"pending"} and rows[0]["writer_version"] == keysteps.KEYSTEP_VERSION
    # the person's review: a accepted, b edited by hand, c rejected, d left pending
    rows[0]["status"] = "accepted"
    rows[1].update(status="edited", key_steps=["Locate the  March column.", "Pears: 30 > 20."])
    rows[2]["status"] = "rejected"
    path = tmp_path / "key_steps_review.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    back = read_review(path)
    items[2]["key_steps"] = ["old"]
    out, counts = apply_review(items, back)
    assert [o.get("key_steps") for o in out] == [["Find the March bars.", "Pears are higher."],
                                                 ["Locate the March column.", "Pears: 30 > 20."], ["old"], None]
    assert counts == {"applied": 2, "kept": 0, "pending": 1, "rejected": 1, "unknown": 0}
    assert "key_steps" not in items[0]  # the items given are not modified


@pytest.mark.parametrize("row, why", [
    ({"uid": "a", "status": "done"}, r"status 'done' is not one of \['pending', 'accepted', 'edited', 'rejected'\]"),
    ({"uid": "a", "status": "accepted", "proposed_steps": []}, "status accepted but proposed_steps is empty"),
    ({"uid": "a", "status": "edited", "key_steps": ["ok", " "]}, "status edited needs key_steps, a non-empty list"),
    ({"status": "accepted"}, "uid missing"),
])
def test_bad_review_rows_are_named_by_line(tmp_path, row, why):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"uid": "z", "status": "pending"}) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(ValueError, match=f"r.jsonl:2: {why}"):
        read_review(path)


def test_cli_writes_the_manifest_with_reviewed_steps(tmp_path, capsys):
    (tmp_path / "data").mkdir()
    manifest = tmp_path / "data" / "manifest.jsonl"
    manifest.write_text(json.dumps({**ITEM, "uid": "a"}) + "\n" + json.dumps({**ITEM, "uid": "b"}) + "\n")
    review = tmp_path / "review.jsonl"
    review.write_text(json.dumps({**review_record({**ITEM, "uid": "a"}, '{"key_steps": ["x"]}', writer="w"),
                                  "status": "accepted"}) + "\n"
                      + json.dumps({"uid": "zz", "status": "edited", "key_steps": ["y"]}) + "\n")
    out = tmp_path / "out" / "manifest.jsonl"
    assert main(["--review", str(review), "--manifest", str(manifest), "--out", str(out)]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r.get("key_steps") for r in rows] == [["x"], None]
    assert rows[0]["image"] == str(tmp_path / "data" / "images/os-chart-003.png")  # still the same file
    assert json.loads(capsys.readouterr().out) == {"applied": 1, "kept": 0, "pending": 0, "rejected": 0, "unknown": 1}
    assert main(["--review", str(review), "--manifest", str(manifest), "--out", str(manifest)]) == 2
