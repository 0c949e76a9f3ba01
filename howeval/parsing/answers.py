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

__all__ = ["CONCLUDES_RE", "extract_answer", "extract_option_letter", "find_final_answer", "last_sentence"]

# Where an extracted answer came from (the second item of find_final_answer's result).
SOURCE_BOXED = "boxed"
SOURCE_JSON = "json"
SOURCE_ANSWER_LINE = "answer_line"
SOURCE_GSM8K = "gsm8k_marker"
SOURCE_BOLD = "bold"
SOURCE_FINAL_SENTENCE = "final_sentence"

# "The answer is X", "the correct answer is: X", "Answer: X", "Final answer: X", "ANSWER = X",
# "The answer to the puzzle is X", "The final result is X".
_ANSWER_LINE_RE = re.compile(
    r"(?<![A-Za-z])(?:final\s+|correct\s+)?(?:answer|result)(?:\s+(?:to|for|of)\s+[^\n.:=]{1,60}?)?"
    r"\s*(?:is\s*:?|:|=)[ \t]*(?P<ans>[^\n]*)",
    re.IGNORECASE,
)
# GSM8K's final-answer marker: a line "#### 18".
_GSM8K_RE = re.compile(
    r"^[ \t]*(?:step\s*\d+\s*[:.)]\s*)?####[ \t]*(?P<ans>[^\n#]+?)[ \t]*$", re.MULTILINE | re.IGNORECASE
)  # "#### 18", also as a numbered step ("Step 5: #### 18")
_BOLD_RE = re.compile(r"\*\*(?P<b>[^*\n]{1,80}?)\*\*|__(?P<u>[^_\n]{1,80}?)__")
CONCLUDES_RE = re.compile(
    r"\b(?:is|are|was|were|equals?|comes?\s+to|totals?|gives?|makes?|becomes?|results?\s+in)\b|=", re.IGNORECASE
)
"""A concluding statement: "... is 12.", "... comes to 45 apples.", "... equals 7", "x = 3" (search, not match)."""
_VALUE_RE = re.compile(
    r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*/\s*\d+)?%?(?![\w.]*\d)"
    r"|\\[dt]?frac\s*\{[^{}]+\}\s*\{[^{}]+\}"
)
_PAREN_LETTER_RE = re.compile(r"\(([A-Z])\)")
_BARE_VALUE_RE = re.compile(r"\$?[-+]?\d[\d,]*(?:\.\d+)?\s*%?|\(?[A-Z]\)?")
# A number stated as a bound ("under 5", "below 5", "more than 10", "at least 3", "> 2"): a threshold
# restated from the question, not a value the sentence concludes.
_BOUND_RE = re.compile(
    r"(?:\b(?:under|below|above|over|beyond|exceed(?:s|ed|ing)?|(?:less|more|fewer|greater|higher|lower|other)\s+than"
    r"|at\s+(?:least|most)|up\s+to|no\s+more\s+than)|[<>≤≥]=?)\s*\$?\s*[-+]?\.?\d",
    re.IGNORECASE,
)
_UNIT_POWER_RE = re.compile(r"(?<=[A-Za-z])\s*(?:\^\s*\{?\s*[23]\s*\}?|[²³])")
_MAX_BOLD_WORDS = 8
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


def last_sentence(text: str) -> str:
    """The last sentence of the last non-empty line ("" for a blank text); a sentence ends at ". " before a
    capital or "(" ("P.M." and "1.35" do not end one).

    >>> last_sentence("Step 1: add.\\nSo the total is 12. This is the answer.")
    'This is the answer.'
    """
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    pieces = _SENTENCE_BREAK_RE.split(lines[-1].strip())
    return pieces[-1].strip()


def _bold_answer(text: str, whole_text: bool = False) -> str | None:
    """The emphasized value of the final paragraph (``whole_text``: of the whole text): its only (or
    last, when the others repeat it) bold span of at most eight words that is not a heading ("**Step 2:**")."""
    para = text.strip() if whole_text else re.split(r"\n\s*\n", text.strip())[-1]
    spans = [(m.group("b") or m.group("u")).strip() for m in _BOLD_RE.finditer(para)]
    spans = [b for b in spans if b and not b.endswith(":") and len(b.split()) <= _MAX_BOLD_WORDS]
    if not spans or len(set(spans)) > 1:
        return None
    return _clean_line_answer(spans[-1]) or None


def _final_sentence_value(text: str) -> str | None:
    """The single value of a concluding last sentence ("The length of segment AB is 12." -> "12"), or None.

    The sentence must state something (is / are / equals / comes to / totals / gives / = ...) and hold
    exactly one number (or one ``\\frac``) or exactly one parenthesised option letter; a range or a list
    ("0 to 10", "3 and 4") holds two and gives None. A sentence that states a number as a bound
    ("No other year in the chart is under 5.", "All others are more than 10.") restates a threshold
    after the answer was given: None, never the bound.

    >>> _final_sentence_value("It fell below 5 in 2003. No other year in the chart is under 5.") is None
    True
    """
    sent = last_sentence(text)
    if not sent or len(sent) > 300 or not CONCLUDES_RE.search(sent):
        return None
    if _BOUND_RE.search(strip_latex(sent)):
        return None
    plain = _UNIT_POWER_RE.sub("", strip_latex(sent)) if "\\frac" not in sent else sent.replace("$", "")
    letters = set(_PAREN_LETTER_RE.findall(plain))
    values = [m.group(0) for m in _VALUE_RE.finditer(_PAREN_LETTER_RE.sub(" ", plain))]
    if len(letters) == 1 and not values:
        return f"({letters.pop()})"
    if len(values) == 1 and not letters:
        return values[0].strip()
    return None


def find_final_answer(text: str) -> tuple[str, str] | None:
    """The final answer of ``text`` and where it came from, or None.

    Returns:
        ``(answer, source)``, the first that applies: ``"boxed"`` (last non-empty ``\\boxed{}``),
        ``"json"`` (the "answer" field of a JSON response; a box inside it is unwrapped),
        ``"gsm8k_marker"`` (the last ``#### X`` line, also "Step 5: #### X"), ``"answer_line"`` (last final-answer phrase:
        "the answer is", "answer:", "the answer to the puzzle is", "the final result is", cut at the end
        of its sentence), ``"bold"`` (the one bold value of the final paragraph, "so AB is **7**"),
        ``"final_sentence"`` (the single value of a concluding last sentence, "The length of AB is
        12."; a sentence stating a bound, "No other year is under 5.", has none), ``"bold"`` again (the
        one bold number or option letter of the whole text); None when nothing matches.

    >>> find_final_answer("x = 2, so \\\\boxed{2}. The answer is: 2")
    ('2', 'boxed')
    >>> find_final_answer('{"reasoning_steps": ["a"], "answer": "B"}')
    ('B', 'json')
    >>> find_final_answer("Erin has $39.00. The answer is A, yes.")
    ('A, yes', 'answer_line')
    >>> find_final_answer("Add them.\\n#### 18\\nThe answer is: 18")
    ('18', 'gsm8k_marker')
    >>> find_final_answer("The answer to the puzzle is **(C)**.")
    ('(C)', 'answer_line')
    >>> find_final_answer("The sides match, so AB is **7**.")
    ('7', 'bold')
    >>> find_final_answer("So the total comes to 45 apples.")
    ('45', 'final_sentence')
    >>> find_final_answer("The values range from 0 to 10.") is None
    True
    >>> find_final_answer("It fell below 5 in **2003**.\\n\\nNo other year in the chart is under 5.")
    ('2003', 'bold')
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
    marks = [m.group("ans").strip() for m in _GSM8K_RE.finditer(text)]
    if marks and marks[-1]:
        return marks[-1], SOURCE_GSM8K
    plain = text.replace("**", "").replace("__", "")
    for m in reversed(list(_ANSWER_LINE_RE.finditer(plain))):
        ans = _clean_line_answer(m.group("ans"))
        if ans:
            return ans, SOURCE_ANSWER_LINE
    bold = _bold_answer(text)
    if bold:
        return bold, SOURCE_BOLD
    value = _final_sentence_value(plain)
    if value:
        return value, SOURCE_FINAL_SENTENCE
    earlier = _bold_answer(text, whole_text=True)
    if earlier and _BARE_VALUE_RE.fullmatch(earlier):  # a bare number or option letter, not "**Step 1**"
        return earlier, SOURCE_BOLD  # "It fell below 5 in **2003**.\n\nNo other year is under 5."
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
    >>> extract_answer("I think it is 7 or 8") is None
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
