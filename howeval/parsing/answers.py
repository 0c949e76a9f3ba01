"""Final-answer extraction from a response y_m (SPEC section 2, "Verifier reward"; section 1, "Verifier").

Pure string functions, no I/O. The verifier (:mod:`howeval.judges.verify`) judges only what these return:

- :func:`extract_answer`: the final answer of a response: the content of the LAST ``\\boxed{...}``
  (balanced braces, nested ok), else the ``"answer"`` field of a JSON response (CRYSTAL asks for
  ``{"reasoning_steps": [...], "answer": ...}``), else the last final-answer line ("The answer is X",
  "Answer: X", "Final answer: X", "**Answer:** X"), else None.
- :func:`find_final_answer`: the same, also saying where the answer came from.
- :func:`extract_option_letter`: a standalone option letter ("(B)", "B.", "Answer: B", "option B").
"""
from __future__ import annotations

import json
import re

from howeval.parsing.limits import MAX_NESTING, nesting_depth
from howeval.parsing.text import boxed_contents, strip_latex

__all__ = ["extract_answer", "find_final_answer", "extract_option_letter"]

# Where an extracted answer came from (the second item of find_final_answer's result).
SOURCE_BOXED = "boxed"
SOURCE_JSON = "json"
SOURCE_ANSWER_LINE = "answer_line"

# "The answer is X", "the correct answer is: X", "Answer: X", "Final answer: X", "ANSWER = X".
_ANSWER_LINE_RE = re.compile(
    r"(?<![A-Za-z])(?:final\s+|correct\s+)?answer\s*(?:is\s*:?|:|=)[ \t]*(?P<ans>[^\n]*)", re.IGNORECASE
)
# A sentence break after the answer: ". " followed by a capital or "(" ("7. This is because ...").
# "P.M." and "1.35" have no space after the dot, so they survive.
_SENTENCE_BREAK_RE = re.compile(r"(?<=[^\s.])\.\s+(?=[A-Z(])")
_FENCE_RE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def _json_answer(text: str) -> str | None:
    """The "answer" field when the whole text is a JSON object (optionally in a ```json fence)."""
    s = text.strip()
    fence = _FENCE_RE.match(s)
    if fence:
        s = fence.group(1)
    if not (s.startswith("{") and s.endswith("}")):
        return None
    if nesting_depth(s, stop_at=MAX_NESTING + 1) > MAX_NESTING:
        return None  # the JSON decoder recurses once per level
    try:
        obj = json.loads(s)
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(obj, dict) or obj.get("answer") is None:
        return None
    return str(obj["answer"]).strip()


def _clean_line_answer(ans: str) -> str:
    ans = _SENTENCE_BREAK_RE.split(ans, maxsplit=1)[0]
    ans = ans.strip().strip("*").strip()
    while ans and ans[-1] in ".;。":
        ans = ans[:-1].rstrip()
    return ans


def find_final_answer(text: str) -> tuple[str, str] | None:
    """The final answer of ``text`` and where it came from, or None.

    Returns:
        ``(answer, source)`` with source ``"boxed"`` (last non-empty ``\\boxed{}``), ``"json"`` (the
        "answer" field of a JSON response; a box inside it is unwrapped) or ``"answer_line"`` (last
        final-answer phrase, cut at the end of its sentence); None when nothing matches.

    >>> find_final_answer("x = 2, so \\\\boxed{2}. The answer is: 2")
    ('2', 'boxed')
    >>> find_final_answer('{"reasoning_steps": ["a"], "answer": "B"}')
    ('B', 'json')
    >>> find_final_answer("Erin has $39.00. The answer is A, yes.")
    ('A, yes', 'answer_line')
    >>> find_final_answer("no marker here") is None
    True
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}: {text!r}")
    boxes = [b for b in boxed_contents(text) if b]
    if boxes:
        return boxes[-1], SOURCE_BOXED
    js = _json_answer(text)
    if js:
        inner = [b for b in boxed_contents(js) if b]
        return (inner[-1] if inner else js), SOURCE_JSON
    plain = text.replace("**", "").replace("__", "")
    for m in reversed(list(_ANSWER_LINE_RE.finditer(plain))):
        ans = _clean_line_answer(m.group("ans"))
        if ans:
            return ans, SOURCE_ANSWER_LINE
    return None


def extract_answer(text: str) -> str | None:
    """The final answer of a response, or None when it has none.

    Order: the content of the LAST non-empty ``\\boxed{...}`` (balanced, nested braces ok); else the
    "answer" field of a JSON response; else the last final-answer line ("The answer is X",
    "Answer: X", "Final answer: X", "**Answer:** X"), cut at the end of its sentence, trailing
    period removed. (SPEC section 2: "extract the final answer from the last ``\\boxed{}``".)

    Args:
        text: the user-facing response y_m.

    Returns:
        The answer string (never empty), or None.

    Raises:
        TypeError: ``text`` is not a str.

    >>> extract_answer(r"first \\boxed{4}, then \\boxed{\\frac{a}{b^{2}}}")
    '\\\\frac{a}{b^{2}}'
    >>> extract_answer("Therefore, the correct answer is (C).")
    '(C)'
    >>> extract_answer("**Answer:** 5:45 P.M.")
    '5:45 P.M'
    >>> extract_answer("Final answer: 12. Done.")
    '12'
    >>> extract_answer("I think it is 7") is None
    True
    """
    found = find_final_answer(text)
    return found[0] if found else None


def extract_option_letter(text: str, n_options: int = 5) -> str | None:
    """A standalone option letter in ``text`` (an extracted answer or a short response), or None.

    Accepted forms, first that matches wins: the whole text is a letter (``"B"``, ``"(B)"``, ``"B."``,
    ``"B)"``, ``"\\text{(B)}"``); a leading letter with a separator and the option text (``"(B) no"``,
    ``"A, yes"``, ``"C. Web Page Design class"``, ``"A) Yes"``, ``"B (60°)"``); the last explicit
    marker (``"Answer: B"``, ``"answer is (B)"``, ``"option B"``, ``"choice B"``); the last
    parenthesised letter ``"(B)"``. A letter outside ``A..`` the ``n_options``-th letter gives None.
    A bare capital inside prose ("A cat", "region A") is not a letter answer.

    Args:
        text: the answer or response text.
        n_options: number of options (1..26); letters beyond it are rejected.

    Returns:
        An upper-case letter, or None.

    Raises:
        ValueError: ``n_options`` outside 1..26.

    >>> [extract_option_letter(t) for t in ["(B)", "b.", "A, yes", r"\\text{(A)}", "option D", "Answer: E"]]
    ['B', 'B', 'A', 'A', 'D', 'E']
    >>> extract_option_letter("S", 5) is None, extract_option_letter("A cat sat") is None
    (True, True)
    """
    if not 1 <= n_options <= 26:
        raise ValueError(f"n_options must be in 1..26, got {n_options!r}")
    valid = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:n_options]
    s = strip_latex(text).replace("**", "")

    def ok(letter: str) -> str | None:
        up = letter.upper()
        return up if up in valid else None

    m = re.fullmatch(r"\(?\s*([A-Za-z])\s*\)?\s*[.:)]?", s)
    if m:
        return ok(m.group(1))
    m = re.match(r"\(([A-Z])\)\s*\S|([A-Z])(?:[.:,)]\s+|\s+\()", s)
    if m:
        return ok(m.group(1) or m.group(2))
    marks = re.findall(
        r"(?<![A-Za-z])(?i:answer|option|choice)\s*(?:is\s*)?:?\s*\(?([A-Z])\)?(?![A-Za-z])", s
    )
    if marks:
        return ok(marks[-1])
    parens = re.findall(r"\(([A-Z])\)", s)
    if parens:
        return ok(parens[-1])
    return None
