"""The ``free_form`` (MATH-Vision, Bingo) and ``free_form_or_mc`` (CRYSTAL) verifiers: a value compared with the gold.

SPEC section 2: "normalized matching and symbolic equivalence; unresolved cases go to an LLM judge".
free_form: numbers within ``rel_tol``, else math-verify equivalence; a short text gold by normalized
equality; a descriptive gold (Bingo) is unresolved. free_form_or_mc: gold like "A", "B (60°)",
"A) Yes", "3", "Africa": letter match when the gold has a letter, else its value as in free_form.
"""
from __future__ import annotations

import re

from howeval.judges.verify.answer import find_candidate, missing_answer, norm_text
from howeval.judges.verify.choice import PROSE_SOURCES, as_options, verify_options
from howeval.judges.verify.mathexpr import looks_math, math_equal
from howeval.judges.verify.numbers import fmt_number, lenient_number, numbers_close, parse_number, several_values
from howeval.judges.verify.result import METHOD_RULE, VerifyResult, register_verifier
from howeval.parsing.answers import SOURCE_BOXED, extract_option_letter
from howeval.parsing.text import strip_latex

__all__ = ["DESCRIPTIVE_MIN_WORDS", "verify_free_form", "verify_free_form_or_mc"]

DESCRIPTIVE_MIN_WORDS = 5  # a non-numeric gold this long is a description rules cannot check


def _compare_value(cand: str, src: str, gold: str, rel_tol: float) -> VerifyResult:
    """Free-form comparison of an extracted answer with a gold value (number, math, short text)."""
    pg = parse_number(gold)
    if pg:
        pc = parse_number(cand) or (lenient_number(cand) if src != SOURCE_BOXED else None)
        if pc:
            ok = numbers_close(pc[0], pg[0], rel_tol)
            return VerifyResult(ok, cand, METHOD_RULE, f"number {fmt_number(pc[0])} vs gold {fmt_number(pg[0])} ({src})")
    if src in PROSE_SOURCES and not looks_math(gold):
        # a value read from a sentence ("Africa has 54 countries." -> 54) against a text gold: the sentence
        # may name the answer in words the rules cannot pick out; math-verify would read "Africa" as a product
        return VerifyResult(None, cand, METHOD_RULE, f"unresolved: the value a sentence states ({cand!r}, {src}) "
                            f"against a text gold {gold!r}")
    if looks_math(gold) or looks_math(cand):
        eq = math_equal(gold, cand)
        if eq is not None:
            return VerifyResult(eq, cand, METHOD_RULE, f"math-verify {'equal' if eq else 'not equal'} to gold {gold!r} ({src})")
        if several_values(strip_latex(cand)):
            return VerifyResult(None, cand, METHOD_RULE, f"unresolved: answer {cand!r} states several values (a range or a list)")
        return VerifyResult(None, cand, METHOD_RULE, f"unresolved: math-verify could not parse {cand!r} or gold {gold!r}")
    ng, nc = norm_text(gold), norm_text(cand)
    if ng == nc:
        return VerifyResult(True, cand, METHOD_RULE, f"text equals gold ({src})")
    yes_no = {"yes", "no", "true", "false"}
    if ng in yes_no and nc.split()[:1] and nc.split()[0] in yes_no:
        ok = (ng in {"yes", "true"}) == (nc.split()[0] in {"yes", "true"})
        return VerifyResult(ok, cand, METHOD_RULE, f"yes/no {nc.split()[0]!r} vs gold {ng!r} ({src})")
    return VerifyResult(None, cand, METHOD_RULE, f"unresolved: text {cand!r} differs from gold {gold!r}; may be a paraphrase")


@register_verifier("free_form")
def verify_free_form(response: str, answer: str | None, options: list | None, *, rel_tol: float) -> VerifyResult:
    """MATH-Vision numbers/expressions and Bingo descriptions.

    Numbers: within ``rel_tol`` (units and ``$`` ignored, number words read: "Two" = 2). Expressions:
    math-verify. Short text: normalized equality (yes/no compared as such). A missing gold or a
    descriptive gold (>= 5 words, not math) is unresolved: rules cannot check a description.
    """
    if answer is None or not str(answer).strip():
        cand, _ = find_candidate(response)
        return VerifyResult(None, cand, METHOD_RULE, "unresolved: no reference answer")
    gold = str(answer)
    if parse_number(gold) is None and len(gold.split()) >= DESCRIPTIVE_MIN_WORDS:
        cand, _ = find_candidate(response)
        return VerifyResult(None, cand, METHOD_RULE, "unresolved: descriptive reference; rules cannot judge it")
    cand, src = find_candidate(response)
    if cand is None:
        return missing_answer(response, src)
    return _compare_value(cand, src, gold, rel_tol)


_GOLD_LETTER_RE = re.compile(r"^\(?([A-Z])\)?(?:\s*[).:,]\s*|\s+(?=\()|$)(.*)$")


@register_verifier("free_form_or_mc")
def verify_free_form_or_mc(response: str, answer: str, options: list | None, *, rel_tol: float) -> VerifyResult:
    """CRYSTAL: gold "A", "B (60°)", "A) Yes" (letter, optional option text) or a value ("3", "Africa").

    Gold with a letter: the answer's letter decides; without a letter, the answer is compared with the
    gold's option text (numbers: a different number is wrong; text: unresolved unless equal). Gold
    without a letter: as free_form. Options, when given, are used as in multiple_choice.
    """
    opts = as_options(options)
    if opts:
        return verify_options(response, answer, opts, rel_tol)
    gold = str(answer).strip()
    gm = _GOLD_LETTER_RE.match(gold)
    cand, src = find_candidate(response)
    if cand is None:
        return missing_answer(response, src)
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
