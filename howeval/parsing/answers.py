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

__all__ = [
    "CONCLUDES_RE",
    "extract_answer",
    "extract_option_letter",
    "find_final_answer",
    "last_sentence",
    "main_clause",
    "strip_closing",
]

# Where an extracted answer came from (the second item of find_final_answer's result).
SOURCE_BOXED = "boxed"
SOURCE_JSON = "json"
SOURCE_ANSWER_LINE = "answer_line"
SOURCE_GSM8K = "gsm8k_marker"
SOURCE_BOLD = "bold"
SOURCE_FINAL_SENTENCE = "final_sentence"
SOURCE_ONE_SENTENCE = "one_sentence"

# "The answer is X", "the correct answer is: X", "Answer: X", "Final answer: X", "ANSWER = X",
# "The answer to the puzzle is X", "The final result is X".
# The phrase alone (its answer is the rest of the line), so that every phrase of a line is found, not only
# its first: "The answer is (B). Wait, no, the answer is (C)." has two, and the last one is the final answer.
_ANSWER_PHRASE_RE = re.compile(
    r"(?<![A-Za-z])(?:final\s+|correct\s+)?(?:answer|result)(?:\s+(?:to|for|of)\s+[^\n.:=]{1,60}?)?"
    r"\s*(?:is\s*:?|:|=)[ \t]*",
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


# A premise clause: its value is given, not concluded. Leading ("Given that the radius is 7 cm, ...",
# "Since each side is 4, ...", "If the price is $3, then ...") up to the first comma; trailing (", because
# two sides are 5", ", since ...", ", given that ..."), from the connective to the end of the sentence.
_LEADING_PREMISE_RE = re.compile(
    r"^\W*(?:(?:so|thus|hence|therefore|and)\s*,?\s+)?(?:given(?:\s+that)?|since|because|as|if|assuming(?:\s+that)?|when|whenever"
    r"|considering(?:\s+that)?|provided(?:\s+that)?|knowing(?:\s+that)?|we\s+know\s+that|note\s+that)\b",
    re.IGNORECASE,
)
_TRAILING_PREMISE_RE = re.compile(
    r"(?:,\s*(?:since|as|if|when|given)\b|\s(?:because|given\s+that|provided\s+that|assuming(?:\s+that)?)\b"
    r"|\ssince\s+(?:the|a|an|it|its|this|that|these|those|there|we|they|he|she|each|every|all|both)\b).*$",
    re.IGNORECASE | re.DOTALL,
)
# A statement that says what something is not, or that it cannot be told: no value of it is an answer.
_NEGATION_RE = re.compile(
    r"\b(?:not|no|never|cannot|neither|nor|unclear|unknown|impossible|unsure|unable)\b|n['’]t\b",
    re.IGNORECASE,
)
# A number word read as a value where the sentence has no digits ("There are four apples."); "one" is left
# out: it is a pronoun far more often than a count ("The one on the left is bigger.").
_NUMBER_WORD_RE = re.compile(
    r"\b(zero|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen"
    r"|seventeen|eighteen|nineteen|twenty)\b",
    re.IGNORECASE,
)
# A year in a time phrase ("In 2019 it was 1,200 euros.", "by 2010"): dropped when another value remains.
_YEAR_PHRASE_RE = re.compile(r"\b(?:in|since|during|by|until|of|from)\s+(?:the\s+year\s+)?((?:1[89]|20)\d\d)\b(?!\s*%)",
                             re.IGNORECASE)
# An arithmetic chain that ends in its value: "4 + 3 = 7", "6 * 5 = 30", "12 / 4 = 3 cm".
_ARITH_CHAIN_RE = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:\s*[-+*/×÷x]\s*\(?\d[\d,]*(?:\.\d+)?\)?)+\s*=\s*"
    r"(?P<v>[-+]?\d[\d,]*(?:\.\d+)?(?:\s*/\s*\d+)?%?)(?![\w.]*\d)"
)
# A closing line after the answer ("Let me know if you need anything else!", "I hope this helps.").
_CLOSING_RE = re.compile(
    r"(?:^|(?<=[.!?:)])\s+)(?:let\s+me\s+know|(?:i\s+)?hope\s+(?:this|that|it|my)|feel\s+free"
    r"|if\s+you\s+have\s+any\s+(?:other\s+|more\s+|further\s+|additional\s+)?(?:questions?|doubts?|queries)"
    r"|if\s+you\s+(?:need|want|would\s+like)\s+(?:any(?:thing)?|more|further|help|clarification)\b"
    r"|happy\s+to\s+help|is\s+there\s+anything|good\s+luck|thanks?(?:\s+you)?(?:\s+for\b|\s*[!.]|\s*$)"
    r"|please\s+let\s+me|don['’]?t\s+hesitate|do\s+not\s+hesitate)[^\n]*$",
    re.IGNORECASE,
)
_SO_RE = re.compile(r"[,;]\s*(?:and\s+)?(?:so|thus|hence|therefore)\b,?\s*", re.IGNORECASE)
# A sentence that says the value cannot be told ("I cannot tell which one is the tallest."): a bold value
# before it is a detail, not the answer.
_DISCLAIMER_RE = re.compile(
    r"\b(?:cannot|can['’]?t|unable|not\s+(?:sure|possible|clear|certain|enough)|unclear|impossible|uncertain"
    r"|(?:don['’]?t|do\s+not|does\s+not|doesn['’]?t)\s+(?:know|show)|hard\s+to\s+(?:tell|say)"
    r"|difficult\s+to\s+(?:tell|say|determine))\b",
    re.IGNORECASE,
)
# An option named by word: "Option C is correct.", "the correct choice is (B)".
_OPTION_WORD_RE = re.compile(r"(?<![A-Za-z])(?i:option|choice)\s*(?:(?i:is)\s*)?:?\s*\(?([A-Z])\)?(?![A-Za-z])")
_ORDINAL_RE = re.compile(r"\d(?:st|nd|rd|th)\b", re.IGNORECASE)
ONE_SENTENCE_MAX_WORDS = 25
"""A response of one sentence at most this long is read for its single value without an answer verb."""


def strip_closing(text: str) -> str:
    """``text`` without the closing lines or sentences after its answer ("Let me know if you need anything
    else!", "I hope this helps.", "Feel free to ask ..."), on its last line or as lines of their own.

    >>> strip_closing("The sum is 4 + 3 = 7. Let me know if you need anything else!")
    'The sum is 4 + 3 = 7.'
    >>> strip_closing("So the total is 12.\\n\\nI hope this helps!")
    'So the total is 12.'
    """
    out = text.rstrip()
    while out:
        m = _CLOSING_RE.search(out.rsplit("\n", 1)[-1])
        if not m:
            break
        head = out[: len(out) - len(out.rsplit("\n", 1)[-1])] + out.rsplit("\n", 1)[-1][: m.start()]
        out = head.rstrip()
    return out


def main_clause(sentence: str) -> str | None:
    """``sentence`` without its premise clause: what comes before its last ", so" / ", therefore" ("Each
    bag holds 6 marbles, so 6 * 5 = 30."), a leading premise up to its comma ("Given that the radius is
    7 cm, we can conclude that ..."), a trailing one from its connective (", because two sides are 5").
    None when the sentence opens with a premise that no comma closes ("Since x is 4 the shape is a square"):
    where its conclusion starts cannot be told.

    >>> main_clause("Given that the radius is 7 cm, we can conclude that the figure is a circle.")
    'we can conclude that the figure is a circle.'
    >>> main_clause("The triangle is isosceles, because two of its sides are 5.")
    'The triangle is isosceles'
    """
    s = sentence.strip()
    so = list(_SO_RE.finditer(s))
    if so:  # "Each bag holds 6 marbles, so 6 * 5 = 30.": the conclusion follows the last ", so"
        s = s[so[-1].end():].strip()
    if _LEADING_PREMISE_RE.match(s):
        if "," not in s:
            return None
        s = s.split(",", 1)[1].strip()
        s = re.sub(r"^then\b\s*", "", s, flags=re.IGNORECASE)
    return _TRAILING_PREMISE_RE.sub("", s).strip().rstrip(",;").strip()


def _sentence_value(sent: str) -> str | None:
    """The single value (number, ``\\frac``, or parenthesised option letter) a sentence's main clause states.

    Premise clauses are dropped (:func:`main_clause`); a clause that states a bound ("under 5"), or denies
    ("not", "cannot") names none; an arithmetic chain gives the value after its ``=`` ("4 + 3 = 7" -> 7);
    a year in a time phrase beside another value is dropped ("In 2019 it was 1,200 euros." -> 1,200); a
    clause without digits gives its number word ("There are four apples." -> four). Else None: a range or
    a list ("0 to 10", "3 and 4") holds two values.
    """
    main = main_clause(sent)
    if not main or len(main) > 300:
        return None
    plain_main = strip_latex(main)
    if _BOUND_RE.search(plain_main) or _NEGATION_RE.search(plain_main):
        return None
    if _ORDINAL_RE.search(plain_main):
        return None  # "The 3rd bar is the tallest.": an ordinal names a position, not the value
    plain = _UNIT_POWER_RE.sub("", plain_main) if "\\frac" not in main else main.replace("$", "")
    chain = list(_ARITH_CHAIN_RE.finditer(plain))
    if chain:
        return _chain_value(plain, chain[-1])
    named = {m.upper() for m in _OPTION_WORD_RE.findall(plain)}
    if named:  # "Option C is correct.": the option it names, whatever numbers stand beside it; two: None
        return f"({named.pop()})" if len(named) == 1 else None
    return _lone_value(plain)


def _chain_value(plain: str, last: re.Match) -> str | None:
    """The value after the ``=`` of the arithmetic chain ``last`` ("4 + 3 = 7" -> "7") when no other value or
    option letter stands beside the chain in ``plain``; else None."""
    rest = plain[: last.start()] + " " + plain[last.end():]
    if not _VALUE_RE.search(rest) and not _PAREN_LETTER_RE.search(rest):
        return last.group("v").strip()
    return None


def _lone_value(plain: str) -> str | None:
    """The one value of a clause with no arithmetic chain and no "option X": a parenthesised letter alone, a
    number alone (a year in a time phrase beside it dropped), or, with no digit at all, one number word."""
    letters = set(_PAREN_LETTER_RE.findall(plain))
    no_letters = _PAREN_LETTER_RE.sub(" ", plain)
    values = [m.group(0) for m in _VALUE_RE.finditer(no_letters)]
    if len(values) > 1 and not letters:
        years = {m.group(1) for m in _YEAR_PHRASE_RE.finditer(no_letters)}
        rest = [v for v in values if v.strip() not in years]
        if len(rest) == 1 and len(values) - len(rest) == len(years):
            values = rest
    if len(letters) == 1 and not values:
        return f"({letters.pop()})"
    if len(values) == 1 and not letters:
        return values[0].strip()
    if not values and not letters and not re.search(r"\d", plain):
        words = {m.group(1).lower() for m in _NUMBER_WORD_RE.finditer(plain)}
        if len(words) == 1:
            return words.pop()
    return None


def _final_sentence_value(text: str) -> str | None:
    """The single value of a concluding last sentence ("The length of segment AB is 12." -> "12"), or None.

    The sentence must state something (is / are / equals / comes to / totals / gives / = ...) in its main
    clause and that clause must hold exactly one value (:func:`_sentence_value`): a premise's value is
    not the answer ("Given that the radius is 7 cm, the figure is a circle." -> None); a range or a list
    ("0 to 10", "3 and 4") holds two and gives None. A sentence that states a number as a bound ("No
    other year in the chart is under 5.", "All others are more than 10.") restates a threshold after the
    answer was given: None, never the bound.

    >>> _final_sentence_value("It fell below 5 in 2003. No other year in the chart is under 5.") is None
    True
    >>> _final_sentence_value("Given that the radius is 7 cm, we can conclude that the figure is a circle.") is None
    True
    """
    sent = last_sentence(text)
    if not sent or len(sent) > 300:
        return None
    main = main_clause(sent)
    if not main or not CONCLUDES_RE.search(main):
        return None
    return _sentence_value(sent)


def _one_sentence_value(text: str) -> str | None:
    """The single value of a response that is one short sentence with no answer verb ("Sales peaked in
    2012.", "Stick 4 lays exactly in the middle."): at most :data:`ONE_SENTENCE_MAX_WORDS` words on one
    line, not a question; the value as :func:`_sentence_value` reads it.

    >>> _one_sentence_value("Sales peaked in 2012."), _one_sentence_value("In 2019 it was 1,200 euros.")
    ('2012', '1,200')
    """
    s = text.strip()
    if not s or len(s) > 300 or "\n" in s or s.endswith("?") or len(s.split()) > ONE_SENTENCE_MAX_WORDS:
        return None
    if last_sentence(s) != s or "\\boxed" in s or len(strip_latex(s).split()) < 3:
        return None  # more than one sentence, an (empty) box, or a bare value ("8\\boxed{}")
    return _sentence_value(s)


def _after_bold(text: str) -> list[str]:
    """The sentences after the sentence holding the last bold span of ``text``."""
    spans = list(_BOLD_RE.finditer(text))
    if not spans:
        return []
    after = text[spans[-1].end():]
    cut = _SENTENCE_BREAK_RE.search(after)
    nl = after.find("\n")
    ends = [x for x in (cut.end() if cut else -1, nl) if x >= 0]
    if not ends:
        return []  # the bold span is in the last sentence
    tail = after[min(ends):]
    return [p.strip() for ln in tail.splitlines() for p in _SENTENCE_BREAK_RE.split(ln) if p.strip()]


def _bold_stands(text: str, whole_text: bool) -> bool:
    """Whether the last bold span of ``text`` stands as the answer, given the sentences after it.

    ``whole_text`` (the fallback to a bold value before the final paragraph): only when everything after
    it states bounds ("It fell below 5 in **2003**.\\n\\nNo other year in the chart is under 5.").
    Else (the final paragraph's bold): unless a sentence after it says the value cannot be told ("The
    chart has **5** bars. I cannot tell which one is the tallest.").
    """
    after = _after_bold(text)
    if whole_text:
        return all(_BOUND_RE.search(strip_latex(p)) for p in after)
    return not any(_DISCLAIMER_RE.search(strip_latex(p)) for p in after)


def find_final_answer(text: str) -> tuple[str, str] | None:
    """The final answer of ``text`` and where it came from, or None.

    Closing lines after the answer ("Let me know if you need anything else!") are set aside first
    (:func:`strip_closing`; a box or a JSON answer is read from the whole text).

    Returns:
        ``(answer, source)``, the first that applies: ``"boxed"`` (last non-empty ``\\boxed{}``),
        ``"json"`` (the "answer" field of a JSON response; a box inside it is unwrapped),
        ``"gsm8k_marker"`` (the last ``#### X`` line, also "Step 5: #### X"), ``"answer_line"`` (the last
        final-answer phrase, also of several on one line: "the answer is", "answer:", "the answer to the
        puzzle is"; "the final result is" only where no "answer" phrase is; cut at the end of its sentence), ``"bold"`` (the one bold value
        of the final paragraph, "so AB is **7**"), ``"final_sentence"`` (the single value of a concluding
        last sentence's main clause, "The length of AB is 12."; a premise's value is not it, and a
        sentence stating a bound, "No other year is under 5.", has none), ``"one_sentence"`` (the single
        value of a response that is one short sentence, "Sales peaked in 2012."), ``"bold"`` again (the one
        bold number or option letter of the whole text, when all after it states bounds); None when
        nothing matches.

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
    >>> find_final_answer("The answer is (B). Wait, no, the answer is (C).")
    ('(C)', 'answer_line')
    >>> find_final_answer("The sides match, so AB is **7**.")
    ('7', 'bold')
    >>> find_final_answer("So the total comes to 45 apples.")
    ('45', 'final_sentence')
    >>> find_final_answer("The sum is 4 + 3 = 7. Let me know if you need anything else!")
    ('7', 'final_sentence')
    >>> find_final_answer("Sales peaked in 2012.")
    ('2012', 'one_sentence')
    >>> find_final_answer("The values range from 0 to 10.") is None
    True
    >>> find_final_answer("It fell below 5 in **2003**.\\n\\nNo other year in the chart is under 5.")
    ('2003', 'bold')
    >>> find_final_answer("The chart has **5** bars. I cannot tell which one is the tallest.") is None
    True
    >>> find_final_answer("no marker here") is None
    True
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}: {text!r}")
    marked = _marked_answer(text)
    if marked:
        return marked
    body = strip_closing(text)
    plain = body.replace("**", "").replace("__", "")
    line = _answer_line(plain)
    if line:
        return line, SOURCE_ANSWER_LINE
    bold = _bold_answer(body)
    if bold and _bold_stands(re.split(r"\n\s*\n", body.strip())[-1], whole_text=False):
        return bold, SOURCE_BOLD
    value = _final_sentence_value(plain)
    if value:
        return value, SOURCE_FINAL_SENTENCE
    value = _one_sentence_value(plain)
    if value:
        return value, SOURCE_ONE_SENTENCE
    earlier = _bold_answer(body, whole_text=True)
    if earlier and _BARE_VALUE_RE.fullmatch(earlier) and _bold_stands(body, whole_text=True):
        return earlier, SOURCE_BOLD  # "It fell below 5 in **2003**.\n\nNo other year is under 5."
    return None


def _marked_answer(text: str) -> tuple[str, str] | None:
    """The answer a marker states, read from the whole text: the last non-empty ``\\boxed{}``, else the
    "answer" field of a JSON response (a box inside it unwrapped), else the last ``#### X`` line; with its
    source, or None."""
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
    return None


def _answer_line(plain: str) -> str | None:
    """The answer after the final-answer phrase of ``plain`` (bold marks removed), cut at its line's end and
    cleaned (:func:`_clean_line_answer`), or None. An "answer" phrase outranks a "result" phrase ("The answer
    is (B). The result is that the left pan sinks."); among each kind the last one wins, on one line as on
    several; a phrase followed by nothing usable gives way to the one before it."""
    phrases = list(_ANSWER_PHRASE_RE.finditer(plain))
    is_answer = ["answer" in m.group(0).lower() for m in phrases]
    ranked = [m for m, a in zip(phrases, is_answer, strict=True) if a][::-1]
    ranked += [m for m, a in zip(phrases, is_answer, strict=True) if not a][::-1]
    for m in ranked:
        eol = plain.find("\n", m.end())
        ans = _clean_line_answer(plain[m.end(): eol if eol >= 0 else len(plain)])
        if ans:
            return ans
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
