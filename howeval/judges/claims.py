"""Final-answer claims and option tables for the rule judge: the statements a response makes about its answer,
resolved against the options, and the first pair that disagrees (Con; also the conclusion count of Rep).

Linear in the response: one pass finds every claim (``docs/rule_judge.md``)."""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from howeval.parsing.text import boxed_spans, strip_latex

# ----------------------------------------------------------------------------------------------------
# Final-answer claims (for Con and for the conclusion count of Rep)
# ----------------------------------------------------------------------------------------------------


_ANSWER_STMT = re.compile(
    r"\b(?:the\s+)?(?:final\s+|correct\s+)?answer\b\s*(?:is|would be|will be|should be)?\s*:?\s*"
    r"(?P<val>.+?)(?=(?:\.\s|\.$|\n|$))",
    re.IGNORECASE,
)
_OPTION_HEAD = re.compile(r"^\(?\s*([A-Ea-e])\s*\)?(?:[\s.,:)]|$)(?P<rest>.*)$")


@dataclass(frozen=True)
class Claim:
    """A final-answer claim: an option letter and/or a value, where it stood, and its source text."""

    letter: str | None
    value: str | None
    pos: int
    source: str


def _parse_claim(raw: str, pos: int) -> Claim | None:
    v = strip_latex(raw)
    v = v.strip().strip(" .;:*")
    if not v:
        return None
    m = _OPTION_HEAD.match(v)
    if m and (v[0] == "(" or len(v) == 1 or v[1] in " .,:)"):
        rest = m.group("rest").strip(" .,:;")
        return Claim(m.group(1).upper(), _norm_value(rest) or None, pos, raw.strip())
    return Claim(None, _norm_value(v), pos, raw.strip())


def _norm_value(v: str) -> str:
    v = v.lower().strip()
    v = re.sub(r"\s+", "", v)
    v = v.strip(".;:,")
    v = re.sub(r"^\((.*)\)$", r"\1", v)
    return v


def as_number(v: str | None) -> float | None:
    """A claim value read as a number: plain ("1,250", "$3", "25%", "12cm^2", trailing units dropped) or a
    fraction ("7/18", "\\frac{7}{18}"); None for anything else, a zero denominator or None.
    Used by Con (SPEC section 1, "PatternEval": Contradiction) and the PR check of a conclusion.

    >>> as_number("$1,250"), as_number("frac{3}{4}"), as_number("April"), as_number("1/0")
    (1250.0, 0.75, None, None)
    """
    if v is None:
        return None
    s = v.replace(",", "").replace("$", "").replace("%", "").replace("\\", "")
    s = re.sub(r"(?:units?|cm\^?2?|m\^?2?|degrees?|grams?|litres?|liters?)$", "", s)
    m = re.fullmatch(r"-?\d+(?:\.\d+)?", s)
    if m:
        return float(s)
    m = re.fullmatch(r"(-?\d+)/(\d+)|frac\{(-?\d+)\}\{(\d+)\}", s)
    if m:
        a, b = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        return float(a) / float(b) if float(b) else None
    return None


def _same_value(a: str, b: str) -> bool:
    na, nb = as_number(a), as_number(b)
    if na is not None and nb is not None:
        return abs(na - nb) <= 1e-6 * max(1.0, abs(na), abs(nb))
    return a == b


def _resolve(c: Claim, options: dict[str, str]) -> str | None:
    """The claim's comparable value: the option text for a bare letter when options are known."""
    if c.letter is not None:
        if c.letter in options:
            return options[c.letter]
        return None if c.value is None else c.value
    return c.value


def _claims_disagree(a: Claim, b: Claim, options: dict[str, str]) -> bool:
    """True only when the two claims are definitely different answers (unknown mappings never disagree)."""
    if a.letter is not None and b.letter is not None:
        return a.letter != b.letter
    va, vb = _resolve(a, options), _resolve(b, options)
    if va is None or vb is None:
        return False
    return not _same_value(va, vb)


MAX_PAIRWISE_CLAIMS = 64
"""Up to this many distinct claims are compared pair by pair (the first disagreeing pair in text order is
the evidence); more (a text built to stall the judge: 10,000 forms of one value) go through the linear
scan of :func:`disagreeing_pair`."""


def _canon(v: str | None) -> str | None:
    """A claim value's comparison key: a number to 9 significant digits, else the normalized text."""
    if v is None:
        return None
    n = as_number(v)
    return f"#{n:.9g}" if n is not None else v


def disagreeing_pair(claims: list[Claim], options: dict[str, str]) -> tuple[Claim, Claim] | None:
    """Two claims that are definitely different answers (:func:`_claims_disagree`), or None: the evidence of
    Con (SPEC section 1, "PatternEval": Contradiction). ``options`` maps option letters to their texts.

    Pairwise for up to :data:`MAX_PAIRWISE_CLAIMS` claims; beyond that in one linear pass: two different
    letters; else two letter-free claims with different values; else a letter claim whose value differs
    from the (single) value of the letter-free claims. Values compare by :func:`_canon` (9 significant
    digits) there instead of the 1e-6 relative tolerance.
    """
    if len(claims) <= MAX_PAIRWISE_CLAIMS:
        for a, b in combinations(claims, 2):
            if _claims_disagree(a, b, options):
                return a, b
        return None
    lettered = [c for c in claims if c.letter is not None]
    first_letter = lettered[0] if lettered else None
    for c in lettered:
        if c.letter != first_letter.letter:
            return first_letter, c
    first_value: tuple[str, Claim] | None = None
    for c in claims:
        if c.letter is None and c.value is not None:
            k = _canon(c.value)
            if first_value is None:
                first_value = (k, c)
            elif k != first_value[0]:
                return first_value[1], c
    if first_value is not None:
        for c in lettered:
            k = _canon(_resolve(c, options))
            if k is not None and k != first_value[0]:
                return (c, first_value[1]) if c.pos < first_value[1].pos else (first_value[1], c)
    return None


_OPTION_LINE = re.compile(r"^\s*\(([A-E])\)\s*(.+?)\s*$|^\s*([A-E])[.:)]\s+(.+?)\s*$")


def parse_options(text: str | None, *, strict: bool = False) -> dict[str, str]:
    """Option letter -> normalized option text, from lines like ``(A) 36°`` or ``A. 36°``.

    With ``strict`` (used on the response itself) only short value-like options (<= 6 words, no colon)
    are kept, and only when they run A, B, C, ... in order.
    """
    if not text:
        return {}
    found: dict[str, str] = {}
    for line in text.split("\n"):
        m = _OPTION_LINE.match(line)
        if not m:
            continue
        letter = m.group(1) or m.group(3)
        val = m.group(2) or m.group(4)
        if strict and (":" in val or len(val.split()) > 6):
            continue
        found.setdefault(letter, _norm_value(strip_latex(val)))
    letters = sorted(found)
    if len(letters) < 2 or letters != [chr(ord("A") + i) for i in range(len(letters))]:
        return {}
    return found


def options_from_list(options: Sequence[str] | None) -> dict[str, str]:
    """Option letter -> normalized option text from a list (A for the first). A list of bare letters
    (``["A", "B", ...]``, as some benchmarks store) carries no values and gives ``{}``."""
    if not options:
        return {}
    if all(re.fullmatch(r"\(?[A-Ea-e]\)?", o.strip()) for o in options):
        return {}
    return {chr(ord("A") + i): _norm_value(strip_latex(o)) for i, o in enumerate(options[:26])}


_ANSWER_WORD = re.compile(r"\banswer\b", re.IGNORECASE)


def extract_claims(text: str) -> list[Claim]:
    """Final-answer claims in ``text``: the last ``\\boxed{}``, every other ``\\boxed{}`` whose sentence
    mentions the answer, and every "the answer is X" / "answer: X" statement, in text order.

    Time is linear in ``len(text)`` (up to a log factor): sentence starts, "answer" words and box
    ranges are found in one pass each and looked up by bisection, never by scanning the prefix of
    every box (which was quadratic on a run of boxes with no sentence break: 40,000 characters took
    8 s of CPU).

    >>> [(c.letter, c.value) for c in extract_claims(r"So \\boxed{3}. The answer is (B).")]
    [(None, '3'), ('B', None)]
    """
    boxes = [b for b in boxed_spans(text) if b[2].strip() not in ("", "?")]
    claims = _box_claims(text, boxes) + _statement_claims(text, boxes)
    claims.sort(key=lambda c: c.pos)
    return claims


def _box_claims(text: str, boxes: list[tuple[int, int, str]]) -> list[Claim]:
    """The claims of ``boxes`` (``(start, end, content)``, in text order): the last box, and every other box
    whose sentence (after the last ". " or newline before it) has the word "answer" before the box."""
    claims: list[Claim] = []
    dots = [m.start() for m in re.finditer(r"\. ", text)]
    newlines = [m.start() for m in re.finditer("\n", text)]
    answer_words = [(m.start(), m.end()) for m in _ANSWER_WORD.finditer(text)]
    answer_starts = [a for a, _ in answer_words]
    for i, (a, _end, content) in enumerate(boxes):
        # the box's sentence: after the last ". " ending by ``a`` or the last newline before ``a``
        d = dots[bisect_right(dots, a - 2) - 1] if dots and dots[0] <= a - 2 else -1
        n = newlines[bisect_right(newlines, a - 1) - 1] if newlines and newlines[0] <= a - 1 else -1
        sent_from = max(d, n) + 1
        j = bisect_left(answer_starts, sent_from)
        mentions = j < len(answer_words) and answer_words[j][1] <= a
        if i == len(boxes) - 1 or mentions:
            c = _parse_claim(content, a)
            if c:
                claims.append(c)
    return claims


def _statement_claims(text: str, boxes: list[tuple[int, int, str]]) -> list[Claim]:
    """The claims of "the answer is X" / "answer: X" statements outside every box of ``boxes``; not "the
    answer to ..." (and the like), a boxed value, or a value of more than 12 words."""
    claims: list[Claim] = []
    box_starts = [a for a, _, _ in boxes]
    reach: list[int] = []  # reach[i]: the furthest end of boxes[0..i] (boxes may nest)
    for _, b, _ in boxes:
        reach.append(max(b, reach[-1]) if reach else b)
    for m in _ANSWER_STMT.finditer(text):
        val = m.group("val")
        vpos = m.start("val")
        k = bisect_right(box_starts, vpos) - 1
        if (k >= 0 and reach[k] > vpos) or "\\boxed" in val:
            continue  # "the answer is \\boxed{X}": already counted as a box
        if re.match(r"^(?:to|of|for|in|that|we|this|option|choice|the\s+(?:question|problem))\b", val.strip(), re.I):
            continue  # "the answer to ...", "the answer that ..." are not statements of a value
        if len(val.split()) > 12:
            continue
        c = _parse_claim(val, vpos)
        if c:
            claims.append(c)
    return claims
