"""Size and nesting limits, and the parsing functions on the degenerate corpus (issue 12)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from howeval.parsing.answers import extract_option_letter, find_final_answer
from howeval.parsing.limits import InputTooLarge, check_text, longest_digit_run, nesting_depth
from howeval.parsing.reasoning import split_reasoning
from howeval.parsing.steps import response_steps
from howeval.parsing.text import boxed_spans, json_objects, strip_latex

from degenerate import CORPUS, ITEM_BOUND_S, run_in_thread


def test_nesting_depth_and_digits():
    assert nesting_depth('{"a": [1, (2)]}') == 3
    assert nesting_depth("))((") == 2
    assert nesting_depth("(" * 5000, stop_at=101) == 101
    assert longest_digit_run("12 and 34567, 8") == 5
    assert longest_digit_run("1,000,000") == 3


def test_check_text_messages():
    check_text("fine {[()]}")
    with pytest.raises(InputTooLarge, match=r"^input too large: response has 200,001 characters \(limit 200,000\)$"):
        check_text("a" * 200_001)
    with pytest.raises(InputTooLarge, match=r"^input too large: answer nests brackets 101\+ deep \(limit 100\)$"):
        check_text("{" * 2000, "answer")


def test_issue_inputs_in_parsing():
    deep = '{"a":' * 2000 + "1" + "}" * 2000
    assert json_objects(deep) == []  # no RecursionError
    assert response_steps(deep) == [deep]  # one non-trivial line; no RecursionError
    assert find_final_answer(deep) is None
    assert boxed_spans(r"\boxed{" * 4000) == []


def test_boxed_spans_nested_and_unclosed():
    text = r"a \boxed{x{1}} b \boxed{\boxed{2}} \boxed{open"
    assert boxed_spans(text) == [(2, 14, "x{1}"), (17, 34, r"\boxed{2}"), (24, 33, "2")]
    assert strip_latex(r"\boxed{\boxed{2}} and \fbox{3}") == "2 and 3"


@pytest.mark.parametrize("name,text", CORPUS, ids=[c[0] for c in CORPUS])
def test_corpus_parsing(name, text):
    def run():
        response_steps(text, reasoning=text[:1000])
        find_final_answer(text)
        extract_option_letter(text[:5000], 5)
        split_reasoning(text, finish_reason="length", opener_in_template=True)
        json_objects(text)
        return True

    res, cpu, err = run_in_thread(run)
    assert err is None, repr(err)
    assert cpu < ITEM_BOUND_S, f"{cpu:.2f} s CPU"


@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from(list('{}[]()"\\:,01 ab\n') + ['{"reasoning_steps": [', '"answer": ', r"\boxed{",
                                                                  "Step 1: ", "1. ", "- ", "```json\n", "```"]),
                     max_size=200).map("".join))
def test_hypothesis_steps_and_answers_never_raise(text):
    steps = response_steps(text)
    assert all(isinstance(s, str) and s for s in steps)
    found = find_final_answer(text)
    assert found is None or isinstance(found[0], str)
