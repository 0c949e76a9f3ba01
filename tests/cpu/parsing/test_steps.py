"""Tests of howeval.parsing.steps: segmentation heuristics, CRYSTAL JSON parsing, channel preference."""
from __future__ import annotations

import doctest
import json
import re

import pytest

from howeval.parsing import steps
from howeval.parsing.steps import parse_crystal_json, response_steps, segment_steps, strip_marker


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", []),
        ("   \n\n ", []),
        # "Step k:" markers, inline or one a line, any separator
        ("Step 1: Add 2 and 3. Step 2: Multiply by 4.", ["Add 2 and 3.", "Multiply by 4."]),
        ("step 1) look\nSTEP 2 - compare sizes", ["look", "compare sizes"]),
        # preamble before the first marker is kept when non-trivial
        ("Let us solve.\nStep 1: a b\nStep 2: c d", ["Let us solve.", "a b", "c d"]),
        # numbered lines; continuation lines join; a decimal is not a marker; rules/headings dropped
        (
            "Solution:\n1. Compute 3.5 + 2\n   which gives 5.5\n2) Double it: 11\n---",
            ["Compute 3.5 + 2 which gives 5.5", "Double it: 11"],
        ),
        ("(1) first point\n(2) second point", ["first point", "second point"]),
        # bullets
        ("- the sign is red\n* it is octagonal\n• answer yes", ["the sign is red", "it is octagonal", "answer yes"]),
        # plain lines
        ("Look at the chart.\n\nThe bar is 3.\n```", ["Look at the chart.", "The bar is 3."]),
        # sentences
        ("The sum is 5. So 5 times 4 is 20! Is it? Yes.", ["The sum is 5.", "So 5 times 4 is 20!", "Is it?", "Yes."]),
        ("The value 3.14 is pi.", ["The value 3.14 is pi."]),
        # a single marker is not a list
        ("1. Only one item here.", ["Only one item here."]),
    ],
)
def test_segment_steps_table(text, expected):
    assert segment_steps(text) == expected


def test_segment_crystal_readme_response(shared_data):
    data = json.loads((shared_data / "steps/crystal_examples.json").read_text())
    ex = next(x for x in data if x.get("crystal_sample") == "sample818")
    trained = ex["responses"][1]["response"]
    got = segment_steps(trained)
    assert len(got) == 4
    assert got[0] == "The grid is 2 rows x 3 columns."
    assert got[-1].endswith("Answer: 3.")
    assert segment_steps(ex["responses"][0]["response"]) == ["The answer is 3."]


def test_segment_mr_gsm8k_model_steps(shared_data):
    """Joining MR-GSM8K's "Step k:" model steps with newlines (or spaces) and re-segmenting recovers them.

    Expected: the stored steps with markers stripped, less the trivial ones the module docstring names:
    17 rows end with a single-digit "#### 7" line (one alphanumeric) and one has the bare heading
    "Simplifying, we have:".
    """
    rows = [json.loads(x) for x in (shared_data / "steps/mr_gsm8k_labeled_wrong_solutions.jsonl").open()]
    assert len(rows) == 75
    n_dropped = 0
    for row in rows:
        stored = [" ".join(strip_marker(s).split()) for s in row["model_output_steps"]]
        expected = [
            s for s in stored
            if sum(c.isalnum() for c in s) >= 2 and not (s.endswith(":") and len(s.split()) <= 3)
        ]
        n_dropped += len(stored) - len(expected)
        assert segment_steps("\n".join(row["model_output_steps"])) == expected, row["uuid"]
        assert segment_steps(" ".join(row["model_output_steps"])) == expected, row["uuid"]
    assert n_dropped == 18


def test_segment_mr_gsm8k_reference_solutions(shared_data):
    """Line segmentation of each reference solution gives its reference_steps (after GSM8K cleanup)."""
    rows = [json.loads(x) for x in (shared_data / "steps/mr_gsm8k_labeled_wrong_solutions.jsonl").open()]
    for row in rows:
        sol = re.sub(r"<<[^>]*>>", "", row["reference_solution"])  # GSM8K calculator annotations
        sol = "\n".join(ln for ln in sol.splitlines() if not ln.startswith("####"))  # final-answer line
        assert segment_steps(sol) == [" ".join(s.split()) for s in row["reference_steps"]], row["uuid"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"reasoning_steps": ["a b", "c d"], "answer": "C"}', (["a b", "c d"], "C")),
        ('```json\n{"reasoning_steps": ["Step 1: x y"], "answer": 20}\n```', (["x y"], "20")),
        ('```\n{"reasoning_steps": [], "answer": "B"}\n```', ([], "B")),
        ('Here you go: {"reasoning_steps": ["p q"], "answer": 2.5} Done.', (["p q"], "2.5")),
        # a stray brace before the object
        ('Set {a, b}. {"reasoning_steps": ["p q"], "answer": "A"}', (["p q"], "A")),
        # blank steps dropped
        ('{"reasoning_steps": ["p q", "  ", "---"], "answer": "A"}', (["p q"], "A")),
        ("The answer is 20.", None),
        ('{"reasoning_steps": "not a list", "answer": "A"}', None),
        ('{"reasoning_steps": [1, 2], "answer": "A"}', None),
        ('{"steps": ["a b"], "answer": "A"}', None),
        ('{"reasoning_steps": ["a b"]}', None),
        ('{"reasoning_steps": ["a b"], "answer": null}', None),
        ('{"reasoning_steps": ["a b", "answer": "A"', None),
        ("\\frac{1}{2} is the answer", None),
    ],
)
def test_parse_crystal_json_table(text, expected):
    assert parse_crystal_json(text) == expected


@pytest.mark.parametrize(
    "response, reasoning, expected",
    [
        # JSON in the response wins over the reasoning channel
        ('{"reasoning_steps": ["a b", "c d"], "answer": "C"}', "Step 1: x y\nStep 2: z w", ["a b", "c d"]),
        # else the reasoning channel, never the answer text
        ("The answer is C.", "Step 1: x y\nStep 2: z w", ["x y", "z w"]),
        # blank reasoning counts as absent
        ("First look. Then compare.", "  ", ["First look.", "Then compare."]),
        ("First look. Then compare.", None, ["First look.", "Then compare."]),
        # truncated thinking response: no y_m, steps from r_m
        ("", "- look at it\n- compare sizes", ["look at it", "compare sizes"]),
        ("", None, []),
    ],
)
def test_response_steps_table(response, reasoning, expected):
    assert response_steps(response, reasoning) == expected


@pytest.mark.parametrize("bad", [None, 3, ["a"]])
def test_type_errors(bad):
    with pytest.raises(TypeError):
        segment_steps(bad)
    with pytest.raises(TypeError):
        response_steps(bad)


def test_doctests():
    assert doctest.testmod(steps).failed == 0
