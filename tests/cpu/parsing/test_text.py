"""Tests for howeval.parsing.text: JSON objects in free text, boxed spans, LaTeX stripping, number words."""
from __future__ import annotations

import doctest

import pytest

from howeval.parsing import text
from howeval.parsing.text import (
    NUMBER_WORDS,
    boxed_contents,
    boxed_spans,
    find_json_object,
    json_candidates,
    json_objects,
    strip_latex,
)


def test_doctests():
    res = doctest.testmod(text)
    assert res.failed == 0 and res.attempted >= 10


# ------------------------------------------------------------------ JSON objects


def test_candidates_fences_first_then_spans_in_text_order():
    reply = 'Here: {"a": 1}\n```json\n{"b": {"c": 2}}\n```'
    assert json_candidates(reply) == ['{"b": {"c": 2}}', '{"a": 1}', '{"b": {"c": 2}}', '{"c": 2}']
    assert json_candidates(reply, nested=False) == ['{"b": {"c": 2}}', '{"a": 1}', '{"b": {"c": 2}}']


def test_braces_inside_strings_and_stray_quotes_in_prose():
    # a "}" inside a JSON string does not close the object; an odd quote in the prose does not hide it
    assert json_objects('It is 5" tall. {"reason": "a } b", "ok": true}') == [{"reason": "a } b", "ok": True}]


@pytest.mark.parametrize("bad", ['{"a": 1', "no object at all", "{not json}", "[1, 2]"])
def test_no_object(bad):
    assert json_objects(bad) == []
    assert find_json_object(bad) is None


def test_find_first_and_last_accepted():
    reply = '{"correct": false, "reason": "x"} Actually: {"correct": true, "reason": "y"}'
    has_correct = lambda o: "correct" in o  # noqa: E731
    assert find_json_object(reply, has_correct) == {"correct": False, "reason": "x"}
    assert find_json_object(reply, has_correct, last=True) == {"correct": True, "reason": "y"}
    assert find_json_object(reply, lambda o: "missing" in o) is None


def test_nested_object_is_found_inside_a_wrapper():
    assert find_json_object('{"verdict": {"consistent": true}}', lambda o: "consistent" in o) == {"consistent": True}


def test_type_error():
    with pytest.raises(TypeError, match="text must be str"):
        json_candidates(None)  # type: ignore[arg-type]


# ------------------------------------------------------------------ boxed spans


def test_boxed_contents_order_and_nesting():
    assert boxed_contents(r"\boxed{a} x \fbox{b{c}} \boxed{}") == ["a", "b{c}", ""]


def test_boxed_spans_offsets():
    s = r"so \boxed{\frac{1}{2}} and \boxed{open"
    ((a, b, content),) = boxed_spans(s)
    assert s[a:b] == r"\boxed{\frac{1}{2}}" and content == r"\frac{1}{2}"


# ------------------------------------------------------------------ LaTeX stripping


@pytest.mark.parametrize(
    "raw, expected",
    [
        (r"$15^{\circ}$", "15"),
        ("36°", "36"),
        (r"45\degree", "45"),
        (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}"),  # balanced: the box around a nested brace is removed
        (r"\boxed{\text{(B)}}", "(B)"),
        (r"\text{\textbf{5} cm}", "5 cm"),
        (r"\left(3, 4\right)", "(3, 4)"),
        (r"\$1,250", "1,250"),
        ("€20", "20"),
        (r"50\%", "50%"),
        ("−7", "-7"),
        (r"\(x+1\)", "x+1"),
        (r"1\,000", "1 000"),
        (r"\dfrac{3}{4}", r"\frac{3}{4}"),
        ("**B**", "B"),
        ("  plain   text ", "plain text"),
    ],
)
def test_strip_latex(raw, expected):
    assert strip_latex(raw) == expected


# ------------------------------------------------------------------ number words


def test_number_words():
    assert NUMBER_WORDS["zero"] == 0 and NUMBER_WORDS["seventeen"] == 17 and NUMBER_WORDS["twenty"] == 20
    assert len(NUMBER_WORDS) == 21 and "half" not in NUMBER_WORDS
