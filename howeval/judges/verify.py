"""The answer verifier J_ver(x, y_m, g): rules per answer type, then an LLM judge for what rules leave open.

SPEC section 1 ("Verifier: c = J_ver(x, y_m, g) in {0, 1}, following each source task's own criteria")
and section 2 ("extract the final answer from the last ``\\boxed{}``, normalized matching and symbolic
equivalence; unresolved cases go to an LLM judge").

- :func:`verify` runs the rule verifier registered for ``answer_type`` (:data:`VERIFIERS`) and
  returns a :class:`VerifyResult`. ``correct=None`` means the rules could not decide (descriptive
  reference, no final answer in a long response, symbolic forms math-verify cannot parse): it is
  never a guess, and callers send it to :class:`LLMVerifier`.
- :class:`LLMVerifier` wraps an Engine and grades only the unresolved items, in one batched call.

Criteria per answer type (the types of ``../shared/data/manifest.jsonl``):

==================  ==========================================================================
multiple_choice     option picked by letter, by option text, by number (units ignored) or by
                    math-verify equivalence; gold is a letter (MATH-Vision) or an option value
                    (PuzzleVQA). An answer naming no option is wrong.
integer_number      TabMWP: numeric equality after removing ``$``, thousands separators, units.
decimal_number      TabMWP: prediction rounded to the gold answer's decimal places equals gold;
                    a fraction gold ("7/18") equals an equal fraction, or a decimal that agrees
                    with it to 3 places (PromptPG ``normalize_answer`` rounds to 3).
extractive_text,    TabMWP: the option picked (letter or normalized text) equals the gold option;
boolean_text,       without options, normalized text equality (yes/no for boolean).
other_text
free_form           MATH-Vision: numbers within ``rel_tol``, else math-verify equivalence; a short
                    text gold by normalized equality; a descriptive gold (Bingo) is unresolved.
free_form_or_mc     CRYSTAL: gold like "A", "B (60°)", "A) Yes", "3", "Africa": letter match when
                    the gold has a letter, else its value as in free_form.
==================  ==========================================================================
"""
from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Sequence

from howeval.parsing.text import NUMBER_WORDS, find_json_object, strip_latex
from howeval.engines.base import ChatRequest, Completion, Engine
from howeval.judges.registry import Registry
from howeval.records import check_columns
from howeval.judges import budget
from howeval.parsing.answers import (
    _CONCLUDES_RE,
    SOURCE_BOXED,
    SOURCE_FINAL_SENTENCE,
    _last_sentence,
    extract_option_letter,
    find_final_answer,
)
from howeval.parsing.limits import MAX_NUMBER_DIGITS, InputTooLarge, check_text, longest_digit_run

__all__ = [
    "VerifyResult",
    "VERIFIERS",
    "register_verifier",
    "verify",
    "LLMVerifier",
    "METHOD_RULE",
    "METHOD_LLM",
    "METHOD_LLM_ERROR",
    "METHOD_BUDGET",
    "DEFAULT_REL_TOL",
]

log = logging.getLogger(__name__)

METHOD_RULE = "rule"
METHOD_LLM = "llm"
METHOD_LLM_ERROR = "llm_error"
METHOD_BUDGET = "budget"  # the item broke a size limit or its time budget: correct is None, the reason says which
DEFAULT_REL_TOL = 1e-4  # our choice: free-form numbers equal within 0.01% (|a-b| <= 1e-4 * max(|a|,|b|))
FRACTION_DECIMALS = 3  # PromptPG normalize_answer rounds fractions and decimals to 3 places
BARE_MAX_WORDS = 4  # a response this short, on one line, with no answer marker, is its own answer
BARE_MAX_CHARS = 60
MAX_MATH_CHARS = 1_000  # longer strings are never sent to math-verify (not an expression: unresolved)
DESCRIPTIVE_MIN_WORDS = 5  # a non-numeric gold this long is a description rules cannot check


@dataclass
class VerifyResult:
    """The verdict on one response.

    Attributes:
        correct: True / False, or None when unresolved (rules could not decide; never a guess).
        extracted: the final answer taken from the response, or None when none was found.
        method: ``"rule"``, ``"llm"`` (LLM judge verdict), ``"llm_error"`` (judge failed; correct is None)
            or ``"budget"`` (``"input too large: ..."`` or ``"timeout after 2 s"``; correct is None).
        reason: one line saying why, e.g. ``"picked B ($15^{\\circ}$); gold B"``.
    """

    correct: bool | None
    extracted: str | None
    method: str
    reason: str


VerifierFn = Callable[..., VerifyResult]
VERIFIERS: Registry[VerifierFn] = Registry("answer_type")
"""Answer type -> rule verifier."""


def register_verifier(answer_type: str) -> Callable[[VerifierFn], VerifierFn]:
    """Decorator: register ``fn(response, answer, options, *, rel_tol) -> VerifyResult`` for a type.

    Raises:
        ValueError: ``answer_type`` is already registered (the message lists the registered types).
    """
    return VERIFIERS.register(answer_type)


# ---------------------------------------------------------------- normalization helpers

_NUM = r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+]?\.\d+"
_NUMBER_RE = re.compile(
    rf"(?P<num>{_NUM})(?:\s*/\s*(?P<den>{_NUM}))?\s*(?P<unit>%|[A-Za-z][A-Za-z .]*?)?"
)
_FRAC_RE = re.compile(r"^(?P<sign>-?)\\[dt]?frac\s*\{\s*(?P<num>[^{}]+?)\s*\}\s*\{\s*(?P<den>[^{}]+?)\s*\}(?P<rest>.*)$")
_UNIT_WORD_RE = re.compile(r"^[A-Za-z][A-Za-z .]*$")


def _strip_trailing(s: str) -> str:
    return s.strip().rstrip(".,;:!").strip()


def _parse_number(s: str) -> tuple[Fraction, str, int] | None:
    """A whole string read as one number: ``(value, unit, decimals)`` or None.

    Accepts ``$1,250``, ``-3``, ``0.20``, ``7/18``, ``\\frac{3}{4}``, ``15 minutes``, ``25%``, ``two``.
    ``decimals`` is the count of digits after the point (fractions: -1). The unit is lower-cased text
    after the number ("" if none), ``%`` for percent.
    """
    t = _strip_trailing(strip_latex(s))
    if not t:
        return None
    low = t.lower()
    if low in NUMBER_WORDS:
        return Fraction(NUMBER_WORDS[low]), "", 0
    fm = _FRAC_RE.match(t)
    if fm:
        num, den = _parse_number(fm.group("num")), _parse_number(fm.group("den"))
        rest = fm.group("rest").strip()
        if num and den and not num[1] and not den[1] and den[0] != 0 and (not rest or _UNIT_WORD_RE.match(rest)):
            val = num[0] / den[0]
            return (-val if fm.group("sign") else val), rest.lower(), -1
        return None
    m = _NUMBER_RE.fullmatch(t)
    if not m:
        return None
    num_s = m.group("num").replace(",", "")
    if len(num_s) > MAX_NUMBER_DIGITS:  # not an answer; Fraction/float of it would raise or overflow
        return None
    try:
        val = Fraction(num_s)
    except ValueError:
        return None
    decimals = len(num_s.split(".")[1]) if "." in num_s else 0
    if m.group("den"):
        den = Fraction(m.group("den").replace(",", ""))
        if den == 0:
            return None
        val, decimals = val / den, -1
    unit = (m.group("unit") or "").strip().lower().rstrip(".")
    return val, unit, decimals


def _numbers_in(s: str) -> list[str]:
    return re.findall(rf"(?<![\w.])(?:{_NUM})(?:\s*/\s*\d+)?", strip_latex(s))


_POWER_RE = re.compile(r"\^|\*\*")


def _lenient_number(s: str) -> tuple[Fraction, str, int] | None:
    """A number from an answer phrase: the whole phrase, else its leading number, else its only number.

    ``"0.538, or 53.8%"`` -> 0.538 (leading); ``"Donald spent $1"`` -> 1 (only number); two different
    numbers with no leading one -> None; a power (``^`` or ``**``: ``"2^{3}"``, ``"10^{10^{10}}"``) ->
    None, never its base.

    >>> _lenient_number("0.538, or 53.8%")[0], _lenient_number("2^{3}"), _lenient_number(r"10^{10^{10}}")
    (Fraction(269, 500), None, None)
    """
    whole = _parse_number(s)
    if whole:
        return whole
    c = strip_latex(s)
    if longest_digit_run(c) > MAX_NUMBER_DIGITS:
        return None  # not an answer (see _parse_number); the range regexes below would be quadratic on it
    if _POWER_RE.search(c):
        return None  # "10^{10^{10}}", "2^{3}": a power, not its base (nor its exponent)
    if _several_values(c):
        return None  # "0 to 10", "3 and 4", "between 2 and 5": not its first number
    lead = re.match(rf"\s*(?:{_NUM})(?:\s*/\s*\d+)?", c)
    if lead:
        return _parse_number(lead.group(0))
    nums = _numbers_in(c)
    if len(nums) == 1:
        return _parse_number(nums[0])
    return None


_RANGE_RE = re.compile(
    rf"(?:{_NUM})\s*%?\s*(?:–|—|to|and|or|&|through|until|,)\s*(?:[a-z]+\s+)?\$?\s*(?:{_NUM})\s*%?", re.IGNORECASE
)


def _several_values(s: str) -> bool:
    """True when ``s`` states a range or several different values ("0 to 10", "3 & 4", "2, 5", "4–6"); a
    value restated in another form ("0.538, or 53.8%", "$1,250") is one value, and "8 - 6" is an
    expression (a hyphen between spaced numbers is subtraction; a range uses "to" or a dash "–").

    >>> _several_values("0 to 10"), _several_values("between 2 and 5"), _several_values("0.538, or 53.8%")
    (True, True, False)
    """
    if re.search(r"\d\s?[–—]\s?\d|\d-\d", s.replace(",", "")):  # "4–6", "2007-2010": a dash range
        return True
    for m in _RANGE_RE.finditer(s):
        nums = re.findall(rf"(?:{_NUM})\s*%?", m.group(0))
        vals = set()
        for n in nums:
            p = _parse_number(n)
            if p is None:
                continue
            vals.add(p[0] / 100 if p[1] == "%" else p[0])
        if len(vals) > 1:
            return True
    return False


def _norm_text(s: str) -> str:
    """Lower case, LaTeX/typography and sentence punctuation removed, articles dropped ("5:45 P.M." -> "545 pm").

    Math symbols (``()+-=/^``) are kept, so "f(x)=-g(x)+2" and "f(x)=-g(x+2)" stay different.
    """
    t = strip_latex(s).lower()
    t = re.sub(r"(?<!\d)[.,]|[.,](?!\d)", "", t)  # keep "2.5" and "1,250" apart from "25" and "1250"
    t = re.sub(r"[;:!?'\"`*]", "", t)
    t = re.sub(r"\b(the|a|an)\b", " ", t)
    return re.sub(r"\s+", " ", t).strip()


def _close(a: Fraction, b: Fraction, rel_tol: float) -> bool:
    if a == b:
        return True
    if abs(a - b) <= Fraction(1, 10**12):
        return True
    return abs(a - b) <= Fraction(rel_tol) * max(abs(a), abs(b))


def _fmt(x: Fraction) -> str:
    """A number for a reason line (``%g`` style; never raises on huge values)."""
    try:
        return f"{float(x):g}"
    except OverflowError:
        return "<huge number>"


def _units_compatible(u1: str, u2: str) -> bool:
    return not u1 or not u2 or u1 == u2 or u1.rstrip("s") == u2.rstrip("s")


def _round(x: Fraction, places: int) -> Fraction:
    """``x`` rounded half away from zero to ``places`` decimals, exactly (no 28-digit Decimal context).

    >>> _round(Fraction(7, 18), 3), _round(Fraction(-5, 2), 0)
    (Fraction(389, 1000), Fraction(-3, 1))
    """
    scale = 10**places
    n = math.floor(abs(x) * scale + Fraction(1, 2))
    return Fraction(n if x >= 0 else -n, scale)


def _looks_math(s: str) -> bool:
    return bool(re.search(r"[\\^_{}=+*/()]|\d", s))


_NESTED_POWER_RE = re.compile(r"\^\s*\{[^{}]*\^|\^\s*\(?\s*\d+\s*\^")
_GROUP_TOKEN_RE = re.compile(r"\\left\s*[({]|\\right\s*[)}]|\\[{}]|[{}()^]")


def _has_power_in_exponent(s: str) -> bool:
    """True when a ``^`` stands inside the exponent group of another ``^`` at any brace/paren depth:
    ``9^{9^{9}}``, ``{9}^{{9}^{{9}^{9}}}``, ``2^{(3^{4})}``, ``2^(3^(4^5))``. One left-to-right pass.

    >>> _has_power_in_exponent("{9}^{{9}^{{9}^{9}}}"), _has_power_in_exponent("{2}^{3} + x^{2}")
    (True, False)
    """
    stack: list[bool] = []  # per open group: is it an exponent group?
    in_exponent = 0  # open exponent groups
    after_caret, prev_end = False, 0
    for m in _GROUP_TOKEN_RE.finditer(s):
        tok = m.group(0)
        # a group opens an exponent when only spaces lie between the ^ and it
        opens_exponent = after_caret and not s[prev_end:m.start()].strip()
        after_caret = False
        if tok == "^":
            if in_exponent:
                return True
            after_caret, prev_end = True, m.end()
        elif tok[-1] in "({" and tok != "\\{":
            stack.append(opens_exponent)
            in_exponent += opens_exponent
        elif tok[-1] in ")}" and tok != "\\}":
            if stack:
                in_exponent -= stack.pop()
    return False
_BIG_EXPONENT_RE = re.compile(r"\^\s*\{?\s*\(?\s*(\d{6,})")
_BIG_FACTORIAL_RE = re.compile(r"\d{4,}\s*!")


def _math_risk(s: str) -> str | None:
    """Why ``s`` is refused before math-verify (sympy would evaluate an astronomically large number), or None.

    >>> _math_risk("10^{10^{10}}"), _math_risk("2^{10}")
    ('a power in an exponent', None)
    """
    if longest_digit_run(s) > MAX_NUMBER_DIGITS:  # first: the regexes below are quadratic on long digit runs
        return f"a number of more than {MAX_NUMBER_DIGITS} digits"
    if _NESTED_POWER_RE.search(s) or _has_power_in_exponent(s):
        return "a power in an exponent"
    if _BIG_EXPONENT_RE.search(s):
        return "an exponent of 6+ digits"
    if _BIG_FACTORIAL_RE.search(s):
        return "a factorial of a 4+ digit number"
    return None


def _math_equal(gold: str, pred: str) -> bool | None:
    """math-verify equivalence of two LaTeX strings: True/False, or None when either side does not parse.

    Runs in a child process under the item's time budget (:mod:`howeval.judges.budget`), so it holds
    off the main thread too (math-verify's own signal timeouts do not).

    Raises:
        InputTooLarge: either side would make sympy build an astronomically large number (power towers,
            6+ digit exponents, factorials of 4+ digit numbers).
        budget.BudgetExceeded: the item's time budget ran out.
    """
    for side, name in ((gold, "answer"), (pred, "response answer")):
        why = _math_risk(side)
        if why:
            raise InputTooLarge(f"input too large: {name} {side[:40]!r} has {why}")
    if max(len(gold), len(pred)) > MAX_MATH_CHARS:
        return None  # no answer is this long: not an expression to compare
    if not (_math_safe(gold) and _math_safe(pred)):
        return None  # prose or a list: math-verify would read "3 & 4" as 4 and "0 to 10" as 0*t*o*10
    return budget.math_equal(gold, pred)


_CONNECTIVE_RE = re.compile(r"(?<![A-Za-z])(?:to|and|or|through|until|between|from|then)(?![A-Za-z])", re.IGNORECASE)


def _math_safe(s: str) -> bool:
    """True when ``s`` is an expression math-verify reads without loss: no ``&`` and no connective
    words ("to", "and", "or", "through", "between", ...) that turn a range or a list into a product.

    >>> _math_safe(r"6(\\sqrt{2}-1)"), _math_safe("3 & 4"), _math_safe("0 to 10"), _math_safe("x^2+1")
    (True, False, False, True)
    """
    if "&" in s or "–" in s or "—" in s:  # a list, or a dash range ("4–6")
        return False
    return _CONNECTIVE_RE.search(re.sub(r"\\[A-Za-z]+", " ", s)) is None


def _letter(i: int) -> str:
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i]


# ---------------------------------------------------------------- candidate extraction


def _candidate(response: str) -> tuple[str | None, str]:
    """The answer to judge and where it came from: boxed / json / answer_line / bare, or (None, why)."""
    found = find_final_answer(response)
    if found:
        return found
    if _is_refusal(response):
        return None, "refusal"
    bare = re.sub(r"\\boxed\s*\{\s*\}", "", response).strip()
    bare = _strip_trailing(bare.replace("$", "").strip())
    if not bare:
        return None, "empty"
    if "\n" not in bare and len(bare) <= BARE_MAX_CHARS and len(bare.split()) <= BARE_MAX_WORDS:
        return bare, "bare"
    return None, "no final-answer marker"


_REFUSAL_RE = re.compile(
    r"^\W*(?:(?:I'?m|I\s+am)\s+(?:sorry|afraid|unable|not able)|sorry\b|(?:I\s+)?apologi[sz]e|unfortunately,?\s+I\b"
    r"|as\s+an\s+ai\b|I\s+(?:can(?:no|['’])?t|am\s+(?:not\s+)?(?:able|unable)\s+to|won['’]?t|do\s+not|don['’]?t)\s+"
    r"(?:help|assist|answer|provide|determine|identify|see|view|access|tell|make\s+out|read|comply|process))",
    re.IGNORECASE,
)
REFUSAL_MAX_WORDS = 80  # a longer text with no answer is an unfinished answer, not a refusal


def _is_refusal(response: str) -> bool:
    """A short response that declines ("Sorry, I can't help with that image.", "I cannot determine ...").

    >>> _is_refusal("Sorry, I can't help with that image."), _is_refusal("The answer is 4.")
    (True, False)
    """
    return len(response.split()) <= REFUSAL_MAX_WORDS and _REFUSAL_RE.search(response.strip()) is not None


def _missing(response: str, why: str) -> VerifyResult:
    if why == "empty":
        return VerifyResult(False, None, METHOD_RULE, "no answer found (empty response)")
    if why == "refusal":
        first = response.strip().splitlines()[0][:80]
        return VerifyResult(False, None, METHOD_RULE, f"refusal: the response declines to answer ({first!r})")
    return VerifyResult(None, None, METHOD_RULE, f"unresolved: {why} in a {len(response.split())}-word response")


# ---------------------------------------------------------------- option matching


def _option_index_by_value(value: str, options: Sequence[str], rel_tol: float) -> tuple[int | None, str]:
    """Index of the option equal to ``value`` (text, number, or math-verify); (None, "ambiguous"|"none")."""
    nv = _norm_text(value)
    hits = [i for i, o in enumerate(options) if nv and _norm_text(o) == nv]
    if len(set(_norm_text(options[i]) for i in hits)) == 1:
        return hits[0], "option text"
    pv = _parse_number(value)
    if pv:
        hits = []
        for i, o in enumerate(options):
            po = _parse_number(o)
            if po and _close(pv[0], po[0], rel_tol) and _units_compatible(pv[1], po[1]):
                hits.append(i)
        if len(hits) == 1:
            return hits[0], "option number"
        if len(hits) > 1:
            return None, "ambiguous"
    if _looks_math(value):
        hits = [i for i, o in enumerate(options) if _looks_math(o) and _math_equal(o, value)]
        if len(hits) == 1:
            return hits[0], "option math-equivalent"
        if len(hits) > 1:
            return None, "ambiguous"
    # an option's text inside a longer answer ("The answer is April"): exactly one, not a part of another
    inside = [i for i, o in enumerate(options) if _norm_text(o) and re.search(rf"\b{re.escape(_norm_text(o))}\b", nv)]
    inside = [i for i in inside if not any(j != i and _norm_text(options[i]) in _norm_text(options[j]) for j in inside)]
    if len(inside) == 1:
        return inside[0], "option text in answer"
    if len(inside) > 1:
        return None, "ambiguous"
    return None, "none"


def _pick_option(cand: str, options: Sequence[str], rel_tol: float) -> tuple[int | None, str]:
    """The option a candidate answer names: by letter first, then by value. (None, why) if none.

    A candidate naming two or more different option letters ("(A) Yes (B) No", an echoed option list)
    names none: ``(None, "ambiguous: ...")``.
    """
    named = sorted({m for m in re.findall(r"\(([A-Z])\)", cand) if ord(m) - ord("A") < len(options)})
    if len(named) > 1:
        return None, f"ambiguous: names options {', '.join(named)} (an echoed option list?)"
    letter = extract_option_letter(cand, len(options))
    if letter is not None:
        idx = ord(letter) - ord("A")
        rest = re.sub(r"^\W*[A-Z]\W+", "", strip_latex(cand)) if len(strip_latex(cand)) > 3 else ""
        if rest:
            j, _ = _option_index_by_value(rest, options, rel_tol)
            if j is not None and j != idx and _norm_text(options[j]) != _norm_text(options[idx]):
                return None, f"ambiguous: letter {letter} but text names {_letter(j)}"
        return idx, "letter"
    return _option_index_by_value(cand, options, rel_tol)


def _gold_option_index(answer: str, options: Sequence[str], rel_tol: float) -> int:
    a = answer.strip()
    if re.fullmatch(r"[A-Z]", a) and ord(a) - ord("A") < len(options):
        return ord(a) - ord("A")
    idx, how = _option_index_by_value(a, options, rel_tol)
    if idx is None or how == "option text in answer":
        raise ValueError(f"gold answer {answer!r} is neither an option letter nor one of the options {list(options)}")
    return idx


def _verify_options(response: str, answer: str, options: Sequence[str], rel_tol: float) -> VerifyResult:
    gold = _gold_option_index(answer, options, rel_tol)
    cand, src = _candidate(response)
    if cand is None and src != "empty":
        # a whole response that is one option, with or without its letter: "(B) Each term in pattern B ..."
        whole = _strip_trailing(response)
        starts_with_letter = re.match(r"\(?[A-Z][).:]\s", whole) is not None
        if starts_with_letter or any(_norm_text(whole) == _norm_text(o) for o in options):
            cand, src = whole, "whole response"
    if cand is None and src not in ("empty", "refusal"):
        # a concluding last sentence that names exactly one option by its text ("... the wettest was April.")
        last = _last_sentence(response)
        if _CONCLUDES_RE.search(last):
            j, how_j = _option_index_by_value(last, options, rel_tol)
            if j is not None and how_j == "option text in answer":
                cand, src = _strip_trailing(last), SOURCE_FINAL_SENTENCE
    if cand is None:
        return _missing(response, src)
    idx, how = _pick_option(cand, options, rel_tol)
    gold_desc = f"gold {_letter(gold)} ({options[gold]})"
    if idx is None:
        if how.startswith("ambiguous"):
            return VerifyResult(None, cand, METHOD_RULE, f"unresolved: {how}; {gold_desc}")
        if len(cand.split()) <= 8 or _parse_number(cand) or _looks_math(cand):
            return VerifyResult(False, cand, METHOD_RULE, f"answer ({src}) names no option; {gold_desc}")
        return VerifyResult(None, cand, METHOD_RULE, f"unresolved: long answer ({src}) names no option; {gold_desc}")
    ok = idx == gold or _norm_text(options[idx]) == _norm_text(options[gold])
    return VerifyResult(ok, cand, METHOD_RULE, f"picked {_letter(idx)} ({options[idx]}) by {how} ({src}); {gold_desc}")


def _as_options(options: list | None) -> list[str]:
    return [str(o) for o in options] if options else []


# ---------------------------------------------------------------- value comparison (free form)


def _compare_value(cand: str, src: str, gold: str, rel_tol: float) -> VerifyResult:
    """Free-form comparison of an extracted answer with a gold value (number, math, short text)."""
    pg = _parse_number(gold)
    if pg:
        pc = _parse_number(cand) or (_lenient_number(cand) if src != SOURCE_BOXED else None)
        if pc:
            ok = _close(pc[0], pg[0], rel_tol)
            return VerifyResult(ok, cand, METHOD_RULE, f"number {_fmt(pc[0])} vs gold {_fmt(pg[0])} ({src})")
    if _looks_math(gold) or _looks_math(cand):
        eq = _math_equal(gold, cand)
        if eq is not None:
            return VerifyResult(eq, cand, METHOD_RULE, f"math-verify {'equal' if eq else 'not equal'} to gold {gold!r} ({src})")
        if _several_values(strip_latex(cand)):
            return VerifyResult(None, cand, METHOD_RULE, f"unresolved: answer {cand!r} states several values (a range or a list)")
        return VerifyResult(None, cand, METHOD_RULE, f"unresolved: math-verify could not parse {cand!r} or gold {gold!r}")
    ng, nc = _norm_text(gold), _norm_text(cand)
    if ng == nc:
        return VerifyResult(True, cand, METHOD_RULE, f"text equals gold ({src})")
    yes_no = {"yes", "no", "true", "false"}
    if ng in yes_no and nc.split()[:1] and nc.split()[0] in yes_no:
        ok = (ng in {"yes", "true"}) == (nc.split()[0] in {"yes", "true"})
        return VerifyResult(ok, cand, METHOD_RULE, f"yes/no {nc.split()[0]!r} vs gold {ng!r} ({src})")
    return VerifyResult(None, cand, METHOD_RULE, f"unresolved: text {cand!r} differs from gold {gold!r}; may be a paraphrase")


# ---------------------------------------------------------------- registered verifiers


@register_verifier("multiple_choice")
def verify_multiple_choice(response: str, answer: str, options: list | None, *, rel_tol: float) -> VerifyResult:
    """Options A.. ; gold is a letter ("A", MATH-Vision) or an option value ("1", PuzzleVQA).

    The response's answer (boxed / answer line / bare) names an option by letter, by normalized
    text, by number with units ignored ("9" = "9 litres"), or by math-verify equivalence
    ("6(\\sqrt{2}-1)" = "$6(\\sqrt{2}-1)$"). Names no option: False. Letter and text disagree:
    unresolved.

    Raises:
        ValueError: no options, or the gold is neither a letter nor an option.
    """
    opts = _as_options(options)
    if not opts:
        raise ValueError(f"multiple_choice needs options; got {options!r} for gold {answer!r}")
    return _verify_options(response, answer, opts, rel_tol)


def _verify_tabmwp_number(response: str, answer: str, integer: bool) -> VerifyResult:
    cand, src = _candidate(response)
    if cand is None:
        return _missing(response, src)
    pg = _parse_number(answer)
    if pg is None:
        raise ValueError(f"numeric gold answer {answer!r} is not a number")
    pc = _lenient_number(cand)
    if pc is None:
        what = "a power, not a plain number," if _POWER_RE.search(cand) else "no single number"
        return VerifyResult(None, cand, METHOD_RULE, f"unresolved: {what} in answer {cand!r} ({src})")
    gv, pv = pg[0], pc[0]
    if integer or pg[2] == 0:
        ok, rule = pv == gv, "exact"
    elif pg[2] < 0:  # fraction gold
        ok = pv == gv or _round(pv, FRACTION_DECIMALS) == _round(gv, FRACTION_DECIMALS)
        rule = f"fraction, or {FRACTION_DECIMALS} decimals"
    else:
        ok, rule = _round(pv, pg[2]) == _round(gv, pg[2]), f"rounded to {pg[2]} decimals"
    return VerifyResult(ok, cand, METHOD_RULE, f"number {_fmt(pv)} vs gold {answer} ({rule}; {src})")


@register_verifier("integer_number")
def verify_integer_number(response: str, answer: str, options: list | None, *, rel_tol: float) -> VerifyResult:
    """TabMWP integers: the answer's number (``$``, ``,``, units removed) equals the gold exactly ("$13.00" = "13")."""
    return _verify_tabmwp_number(response, answer, integer=True)


@register_verifier("decimal_number")
def verify_decimal_number(response: str, answer: str, options: list | None, *, rel_tol: float) -> VerifyResult:
    """TabMWP decimals: the prediction rounded to the gold's decimal places equals it ("$0.20" = "0.20").

    A fraction gold ("7/18") equals an equal fraction ("14/36") or a decimal agreeing to 3 places
    ("0.389"); 3 places follows PromptPG's ``normalize_answer``, which rounds both sides to 3 decimals.
    """
    return _verify_tabmwp_number(response, answer, integer=False)


def _verify_text(response: str, answer: str, options: list | None, rel_tol: float) -> VerifyResult:
    opts = _as_options(options)
    if opts:
        return _verify_options(response, answer, opts, rel_tol)
    cand, src = _candidate(response)
    if cand is None:
        return _missing(response, src)
    ok = _norm_text(cand) == _norm_text(answer)
    return VerifyResult(ok, cand, METHOD_RULE, f"normalized text {'equals' if ok else 'differs from'} gold ({src})")


@register_verifier("extractive_text")
def verify_extractive_text(response: str, answer: str, options: list | None, *, rel_tol: float) -> VerifyResult:
    """TabMWP text picked from the table: the option named (letter or text) is the gold; no options: normalized equality."""
    return _verify_text(response, answer, options, rel_tol)


@register_verifier("boolean_text")
def verify_boolean_text(response: str, answer: str, options: list | None, *, rel_tol: float) -> VerifyResult:
    """TabMWP yes/no-like answers ("yes"/"no", "surplus"/"shortage"): as extractive_text."""
    return _verify_text(response, answer, options, rel_tol)


@register_verifier("other_text")
def verify_other_text(response: str, answer: str, options: list | None, *, rel_tol: float) -> VerifyResult:
    """TabMWP other text ("1 hour", a pattern rule): as extractive_text."""
    return _verify_text(response, answer, options, rel_tol)


@register_verifier("free_form")
def verify_free_form(response: str, answer: str | None, options: list | None, *, rel_tol: float) -> VerifyResult:
    """MATH-Vision numbers/expressions and Bingo descriptions.

    Numbers: within ``rel_tol`` (units and ``$`` ignored, number words read: "Two" = 2). Expressions:
    math-verify. Short text: normalized equality (yes/no compared as such). A missing gold or a
    descriptive gold (>= 5 words, not math) is unresolved: rules cannot check a description.
    """
    if answer is None or not str(answer).strip():
        cand, _ = _candidate(response)
        return VerifyResult(None, cand, METHOD_RULE, "unresolved: no reference answer")
    gold = str(answer)
    if _parse_number(gold) is None and len(gold.split()) >= DESCRIPTIVE_MIN_WORDS:
        cand, _ = _candidate(response)
        return VerifyResult(None, cand, METHOD_RULE, "unresolved: descriptive reference; rules cannot judge it")
    cand, src = _candidate(response)
    if cand is None:
        return _missing(response, src)
    return _compare_value(cand, src, gold, rel_tol)


_GOLD_LETTER_RE = re.compile(r"^\(?([A-Z])\)?(?:\s*[).:,]\s*|\s+(?=\()|$)(.*)$")


@register_verifier("free_form_or_mc")
def verify_free_form_or_mc(response: str, answer: str, options: list | None, *, rel_tol: float) -> VerifyResult:
    """CRYSTAL: gold "A", "B (60°)", "A) Yes" (letter, optional option text) or a value ("3", "Africa").

    Gold with a letter: the answer's letter decides; without a letter, the answer is compared with the
    gold's option text (numbers: a different number is wrong; text: unresolved unless equal). Gold
    without a letter: as free_form. Options, when given, are used as in multiple_choice.
    """
    opts = _as_options(options)
    if opts:
        return _verify_options(response, answer, opts, rel_tol)
    gold = str(answer).strip()
    gm = _GOLD_LETTER_RE.match(gold)
    cand, src = _candidate(response)
    if cand is None:
        return _missing(response, src)
    if not gm:
        return _compare_value(cand, src, gold, rel_tol)
    g_letter, g_text = gm.group(1), gm.group(2).strip().strip("()").strip()
    c_letter = extract_option_letter(cand, 26)
    if c_letter is not None:
        ok = c_letter == g_letter
        return VerifyResult(ok, cand, METHOD_RULE, f"letter {c_letter} vs gold {g_letter} ({src})")
    if not g_text:
        return VerifyResult(None, cand, METHOD_RULE, f"unresolved: gold is letter {g_letter} but the answer names no letter")
    return _compare_value(cand, src, g_text, rel_tol)


# ---------------------------------------------------------------- entry point


def verify(
    response: str,
    answer: Any,
    answer_type: str,
    options: list | None = None,
    source: str | None = None,
    *,
    rel_tol: float = DEFAULT_REL_TOL,
    time_budget_s: float = budget.DEFAULT_ITEM_BUDGET_S,
) -> VerifyResult:
    r"""Judge one response y_m against the reference answer g by the rules of its answer type.

    Args:
        response: the user-facing response y_m (never the reasoning channel r_m).
        answer: the reference answer (str; an int/float is converted; None only for free_form
            items without a reference, which are unresolved).
        answer_type: a key of :data:`VERIFIERS`.
        options: the item's options (multiple choice, TabMWP text types), or None.
        source: the item's source benchmark, recorded in the reason; criteria follow answer_type,
            which the manifest sets per source.
        rel_tol: relative tolerance for free-form numbers (> 0, default 1e-4).
        time_budget_s: seconds this item may spend in math-verify (enforced in a child process that
            is killed when over time, so it holds in threads, actors and Serve replicas).

    Returns:
        VerifyResult with correct True/False, or None when the rules cannot decide. A response over
        the size limits of :mod:`howeval.parsing.limits` (200,000 characters, brackets nested 100
        deep) or over its time budget is ``correct=None, method="budget"`` with the reason
        (``"input too large: ..."``, ``"timeout after 2 s"``): never an exception, never a guess.

    Raises:
        ValueError: unknown answer_type (the message lists the registered ones), rel_tol <= 0, or an
            inconsistent item (multiple choice without options, gold not among the options).
        TypeError: response is not a str.

    >>> verify(r"so \boxed{15^{\circ}}", "B", "multiple_choice", [r"$10^{\circ}$", r"$15^{\circ}$"]).correct
    True
    >>> verify("The answer is $13.00.", "13", "integer_number").correct
    True
    >>> verify("It is a bottle of Sprite.", "This is a bottle of Sprite, a soda.", "free_form").correct is None
    True
    """
    if not isinstance(response, str):
        raise TypeError(f"response must be str, got {type(response).__name__}: {response!r}")
    if answer_type not in VERIFIERS:
        raise ValueError(f"unknown answer_type {answer_type!r}; registered: {sorted(VERIFIERS)}")
    if not rel_tol > 0:
        raise ValueError(f"rel_tol must be > 0, got {rel_tol!r}")
    if answer is None and answer_type != "free_form":
        raise ValueError(f"answer is None for answer_type {answer_type!r}; only free_form items may lack a reference")
    gold = None if answer is None else str(answer)
    try:
        check_text(response, "response")
        with budget.item_budget(time_budget_s):
            result = VERIFIERS[answer_type](response, gold, options, rel_tol=rel_tol)
    except InputTooLarge as e:
        result = VerifyResult(None, None, METHOD_BUDGET, str(e))
    except budget.BudgetExceeded as e:
        result = VerifyResult(None, None, METHOD_BUDGET, str(e))
    except RecursionError:
        result = VerifyResult(None, None, METHOD_BUDGET, "input too large: nesting too deep to parse")
    if source:
        result.reason = f"{result.reason} [{source}]"
    return result


# ---------------------------------------------------------------- LLM judge for unresolved cases

_REQUIRED_ITEM_KEYS = ("question", "response", "answer", "answer_type")

GRADING_PROMPT = """You grade one answer to a question. Decide whether the RESPONSE's final answer matches the REFERENCE answer.
Judge only the final answer, not the reasoning. Equivalent forms (units, rounding to the reference's precision, paraphrases with the same meaning, the option letter of the reference option) count as correct. A response with no final answer, or with several conflicting final answers, is incorrect.

QUESTION:
{question}
{options_block}
REFERENCE ANSWER ({answer_type}):
{answer}

RESPONSE:
{response}

Reply with JSON only: {{"correct": true or false, "reason": "<one sentence>"}}"""


class LLMVerifier:
    """Rules first, then one batched LLM-judge call for the items the rules leave unresolved.

    SPEC section 2: "unresolved cases go to an LLM judge". A judge verdict is recorded with
    ``method="llm"``; a failed request (``Completion.error``, truncation, an exception from the engine)
    or an unparseable reply gives ``correct=None, method="llm_error"`` with the reason: never a default.

    Args:
        engine: any :class:`howeval.engines.base.Engine` (``generate(list[ChatRequest]) -> list[Completion]``).
        max_tokens: judge completion budget (>= 16).
        max_response_chars: longer responses are cut to their last this-many characters (the final
            answer sits at the end) before prompting (>= 200).
        rel_tol: passed to :func:`verify`.

    Raises:
        ValueError: a bad argument (the message names it).

    Example::

        judge = LLMVerifier(engine)
        results = judge.verify_batch([{"question": q, "response": r, "answer": g, "answer_type": "free_form",
                                       "options": None, "source": "Bingo"}])
    """

    def __init__(self, engine: Engine, *, max_tokens: int = 256, max_response_chars: int = 6000,
                 rel_tol: float = DEFAULT_REL_TOL) -> None:
        if not hasattr(engine, "generate"):
            raise ValueError(f"engine must implement generate(list[ChatRequest]); got {type(engine).__name__}")
        if max_tokens < 16:
            raise ValueError(f"max_tokens must be >= 16, got {max_tokens}")
        if max_response_chars < 200:
            raise ValueError(f"max_response_chars must be >= 200, got {max_response_chars}")
        self.engine = engine
        self.max_tokens = max_tokens
        self.max_response_chars = max_response_chars
        self.rel_tol = rel_tol

    @staticmethod
    def check_item(item: dict) -> None:
        """Raise ValueError naming the missing keys and the keys present."""
        check_columns(item, _REQUIRED_ITEM_KEYS, "verify item", "keys")

    def build_request(self, item: dict, request_id: str | None = None) -> ChatRequest:
        """The grading request for one item (greedy, JSON-only reply)."""
        self.check_item(item)
        opts = _as_options(item.get("options"))
        options_block = ("OPTIONS:\n" + "\n".join(f"({_letter(i)}) {o}" for i, o in enumerate(opts)) + "\n") if opts else ""
        response = item["response"]
        if len(response) > self.max_response_chars:
            response = "[...] " + response[-self.max_response_chars :]
        text = GRADING_PROMPT.format(
            question=item["question"], options_block=options_block, answer_type=item["answer_type"],
            answer=item["answer"] if item["answer"] is not None else "(none given: judge whether the response is accurate)",
            response=response,
        )
        return ChatRequest(messages=[{"role": "user", "content": text}], max_tokens=self.max_tokens,
                           temperature=0.0, request_id=request_id)

    @staticmethod
    def parse_verdict(completion: Completion, extracted: str | None = None) -> VerifyResult:
        """A judge completion -> VerifyResult (``llm`` when it holds ``{"correct": bool, ...}``, else ``llm_error``).

        >>> LLMVerifier.parse_verdict(Completion(text='{"correct": true, "reason": "same value"}')).correct
        True
        >>> LLMVerifier.parse_verdict(Completion(text="maybe")).method
        'llm_error'
        """
        if completion.error:
            return VerifyResult(None, extracted, METHOD_LLM_ERROR, f"judge request failed: {completion.error}")
        if completion.truncated:
            return VerifyResult(None, extracted, METHOD_LLM_ERROR, "judge reply truncated inside its reasoning")
        text = completion.text or ""
        obj = find_json_object(text, lambda o: "correct" in o, last=True)
        if obj is None:
            return VerifyResult(None, extracted, METHOD_LLM_ERROR, f"no JSON verdict in judge reply: {text[:200]!r}")
        if not isinstance(obj["correct"], bool):
            return VerifyResult(None, extracted, METHOD_LLM_ERROR, f"judge 'correct' is not a boolean: {obj['correct']!r}")
        return VerifyResult(obj["correct"], extracted, METHOD_LLM, str(obj.get("reason", "")).strip() or "(no reason given)")

    def judge(self, items: list[dict], extracted: list[str | None] | None = None) -> list[VerifyResult]:
        """LLM verdicts for ``items`` in one ``engine.generate`` call (one result per item, in order)."""
        if not items:
            return []
        extracted = extracted if extracted is not None else [None] * len(items)
        requests = [self.build_request(it, request_id=str(i)) for i, it in enumerate(items)]
        try:
            completions = self.engine.generate(requests)
        except Exception as exc:  # an I/O boundary: record the failure on every item, never a default verdict
            log.warning("LLM judge call failed for %d items: %r", len(items), exc)
            return [VerifyResult(None, e, METHOD_LLM_ERROR, f"judge call raised {type(exc).__name__}: {exc}")
                    for e in extracted]
        if len(completions) != len(requests):
            raise ValueError(f"engine {getattr(self.engine, 'name', '?')!r} returned {len(completions)} completions "
                             f"for {len(requests)} requests")
        return [self.parse_verdict(c, e) for c, e in zip(completions, extracted)]

    def verify_batch(self, items: list[dict]) -> list[VerifyResult]:
        """Rules for every item, then one batched judge call for the unresolved ones.

        Each item needs ``question, response, answer, answer_type``; ``options`` and ``source`` are
        optional. Returns one VerifyResult per item, in order.

        Raises:
            ValueError: an item lacks a required key (missing and present keys are listed), or a rule
                verifier rejects it (unknown answer_type, inconsistent options).
        """
        for it in items:
            self.check_item(it)
        results = [
            verify(it["response"], it["answer"], it["answer_type"], it.get("options"), it.get("source"), rel_tol=self.rel_tol)
            for it in items
        ]
        open_idx = [i for i, r in enumerate(results) if r.correct is None]
        if open_idx:
            judged = self.judge([items[i] for i in open_idx], [results[i].extracted for i in open_idx])
            for i, r in zip(open_idx, judged):
                r.reason = f"{r.reason} (rules: {results[i].reason})"
                results[i] = r
        return results
