"""Options and the ``multiple_choice`` verifier: which option an answer names, by letter, text, number or math.

SPEC section 1: "following each source task's own criteria". The gold is a letter (MATH-Vision) or an
option value (PuzzleVQA). The answer names an option by letter, by option text, by number (units
ignored) or by math-verify equivalence; an answer naming no option is wrong, one naming two is
unresolved. :func:`verify_options` also serves the TabMWP text types and CRYSTAL when options are given.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from howeval.judges.verify.answer import (
    find_candidate,
    leading_yes_no,
    missing_answer,
    norm_text,
    strip_trailing,
)
from howeval.judges.verify.mathexpr import looks_expression, looks_math, math_equal
from howeval.judges.verify.numbers import numbers_close, parse_number, units_compatible
from howeval.judges.verify.result import METHOD_RULE, VerifyResult, register_verifier
from howeval.parsing.answers import (
    CONCLUDES_RE,
    SOURCE_ANSWER_LINE,
    SOURCE_BOXED,
    SOURCE_FINAL_SENTENCE,
    SOURCE_GSM8K,
    SOURCE_JSON,
    SOURCE_ONE_SENTENCE,
    extract_option_letter,
    last_sentence,
    main_clause,
)
from howeval.parsing.text import strip_latex

__all__ = ["MARKED_SOURCES", "PROSE_SOURCES", "as_options", "echoed_letters", "is_yes_no", "option_letter", "verify_multiple_choice", "verify_options"]


def option_letter(i: int) -> str:
    """The letter of option ``i`` (0 -> "A", ..., 25 -> "Z").

    Raises:
        IndexError: ``i`` is not in 0..25.
    """
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i]


def as_options(options: list | None) -> list[str]:
    """An item's options as strings (PuzzleVQA options may be ints); ``[]`` for None or no options."""
    return [str(o) for o in options] if options else []


MARKED_SOURCES = (SOURCE_BOXED, SOURCE_JSON, SOURCE_ANSWER_LINE, SOURCE_GSM8K, "bare")
"""Where a response marks its answer itself: a leading yes/no does not override it."""
PROSE_SOURCES = (SOURCE_FINAL_SENTENCE, SOURCE_ONE_SENTENCE)
"""A value read from a sentence without an answer marker: naming no option leaves the item open."""


def is_yes_no(options: Sequence[str]) -> bool:
    """True when the options are Yes and No (in any order, any case).

    >>> is_yes_no(["Yes", "No"]), is_yes_no(["yes", "no", "maybe"])
    (True, False)
    """
    return sorted(norm_text(o) for o in options) == ["no", "yes"]


def _option_index_by_value(value: str, options: Sequence[str], rel_tol: float) -> tuple[int | None, str]:
    """Index of the option equal to ``value`` (text, number, or math-verify); (None, "ambiguous"|"none")."""
    nv = norm_text(value)
    hits = [i for i, o in enumerate(options) if nv and norm_text(o) == nv]
    if len(set(norm_text(options[i]) for i in hits)) == 1:
        return hits[0], "option text"
    pv = parse_number(value)
    if pv:
        hits = []
        for i, o in enumerate(options):
            po = parse_number(o)
            if po and numbers_close(pv[0], po[0], rel_tol) and units_compatible(pv[1], po[1]):
                hits.append(i)
        if len(hits) == 1:
            return hits[0], "option number"
        if len(hits) > 1:
            return None, "ambiguous"
    if looks_math(value) and looks_expression(value):  # never a sentence or an option list (issue 33, class 8)
        # a plain number was compared with the number options above: math-verify only for the others
        hits = [i for i, o in enumerate(options)
                if looks_math(o) and not (pv and parse_number(o)) and math_equal(o, value)]
        if len(hits) == 1:
            return hits[0], "option math-equivalent"
        if len(hits) > 1:
            return None, "ambiguous"
    return _option_text_inside(nv, options)


def _option_text_inside(nv: str, options: Sequence[str]) -> tuple[int | None, str]:
    """The one option whose normalized text stands inside the normalized answer ``nv`` ("the answer is
    april"), not as a part of a longer option, and not beside a letter or digit: ``[2, 4]``, ``40%`` and
    ``'21`` are found in a sentence, "40%" is not found in "140%". (None, "ambiguous"|"none") else.
    """
    inside = [i for i, o in enumerate(options)
              if norm_text(o) and re.search(rf"(?<!\w){re.escape(norm_text(o))}(?!\w)", nv)]
    inside = [i for i in inside if not any(j != i and norm_text(options[i]) in norm_text(options[j]) for j in inside)]
    if len(inside) == 1:
        return inside[0], "option text in answer"
    if len(inside) > 1:
        return None, "ambiguous"
    return None, "none"


# Option markers of an echoed option list: "(C) Yes (D) No", "A) 2 cm B) 4 cm", "A. 30 B. 40".
_OPTION_MARK_RE = re.compile(r"\(([A-Z])\)|(?:^|(?<=\s))([A-Z])[).](?=\s)")


def echoed_letters(cand: str) -> list[str]:
    """The option letters an answer marks as list items, in or out of the item's range: two or more
    means an echoed option list ("(C) Yes (D) No", "(C) 30 (D) 40 (E) 50"), which names no option.

    >>> echoed_letters("(C) 30 (D) 40 (E) 50"), echoed_letters("A) 2 cm B) 4 cm"), echoed_letters("(B) Yes")
    (['C', 'D', 'E'], ['A', 'B'], ['B'])
    """
    return sorted({a or b for a, b in _OPTION_MARK_RE.findall(strip_latex(cand).replace("**", ""))})


def _pick_option(cand: str, options: Sequence[str], rel_tol: float) -> tuple[int | None, str]:
    """The option a candidate answer names: by letter first, then by value. (None, why) if none.

    A candidate marking two or more different option letters ("(A) Yes (B) No", "(C) 30 (D) 40", an echoed
    option list, its letters the item's or not) names none: ``(None, "ambiguous: ...")``.
    """
    named = echoed_letters(cand)
    if len(named) > 1:  # one rule whether the letters are the item's or not (issue 33, class 3)
        return None, f"ambiguous: names options {', '.join(named)} (an echoed option list)"
    letter = extract_option_letter(cand, len(options))
    if letter is not None:
        idx = ord(letter) - ord("A")
        rest = re.sub(r"^\W*[A-Z]\W+", "", strip_latex(cand)) if len(strip_latex(cand)) > 3 else ""
        if rest:
            j, _ = _option_index_by_value(rest, options, rel_tol)
            if j is not None and j != idx and norm_text(options[j]) != norm_text(options[idx]):
                return None, f"ambiguous: letter {letter} but text names {option_letter(j)}"
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


def verify_options(response: str, answer: str, options: Sequence[str], rel_tol: float) -> VerifyResult:
    """The verdict on a response to an item with options: the option it names against the gold option.

    Args:
        response: the user-facing response.
        answer: the gold, an option letter ("B") or an option's value ("1", "blue").
        options: the option texts, option A first (non-empty).
        rel_tol: relative tolerance when an answer names an option by number (> 0).

    Returns:
        ``correct=True`` when the named option is the gold one (or has the same normalized text),
        False when another option or no option is named by a short answer, None (unresolved) when
        the answer is ambiguous, a long answer names no option, or no answer is found.

    Raises:
        ValueError: the gold is neither an option letter nor one of the options.
    """
    gold = _gold_option_index(answer, options, rel_tol)
    yes_no = is_yes_no(options)
    cand, src = _option_candidate(response, options, yes_no)
    if cand is None:
        return _no_option_candidate(response, src, yes_no)
    idx, how = _pick_option(cand, options, rel_tol)
    gold_desc = f"gold {option_letter(gold)} ({options[gold]})"
    if idx is None:
        return _names_no_option(cand, src, how, gold_desc)
    ok = idx == gold or norm_text(options[idx]) == norm_text(options[gold])
    return VerifyResult(ok, cand, METHOD_RULE, f"picked {option_letter(idx)} ({options[idx]}) by {how} ({src}); {gold_desc}")


def _option_candidate(response: str, options: Sequence[str], yes_no: bool) -> tuple[str | None, str]:
    """``(candidate answer or None, where it came from)`` of a response to an item with options: the
    final-answer finder's, else a leading yes/no (yes/no items), the whole response when it is one option,
    or a concluding sentence whose main clause names exactly one option by its text."""
    cand, src = find_candidate(response)
    if yes_no and src not in MARKED_SOURCES and src not in ("empty", "refusal", "artefact"):
        lead = leading_yes_no(response)  # "No, the blue bar is shorter ..." (issue 33, class 6)
        if lead is not None:
            cand, src = lead, "leading yes/no"
    if cand is None and src not in ("empty", "artefact"):
        # a whole response that is one option, with or without its letter: "(B) Each term in pattern B ..."
        whole = strip_trailing(response)
        starts_with_letter = re.match(r"\(?[A-Z][).:]\s", whole) is not None
        if starts_with_letter or any(norm_text(whole) == norm_text(o) for o in options):
            cand, src = whole, "whole response"
    if cand is None and src not in ("empty", "refusal", "artefact"):
        # a concluding last sentence, or a one-sentence response, whose main clause names exactly one option
        # by its text ("... the wettest was April.", "The function increases on [2, 4]."): text only, no
        # math-verify on a sentence; a premise's option is not named ("As the angle is 30 degrees, ...")
        last = last_sentence(response)
        main = main_clause(last) if last else None
        one_sentence = "\n" not in response.strip() and strip_trailing(last) == strip_trailing(response)
        if main and (CONCLUDES_RE.search(main) or one_sentence):
            j, _how = _option_text_inside(norm_text(main), options)
            if j is not None:
                cand, src = strip_trailing(last), SOURCE_FINAL_SENTENCE
    return cand, src


def _no_option_candidate(response: str, src: str, yes_no: bool) -> VerifyResult:
    """The verdict when no candidate answer was found (``src``: why): an echoed option list or a yes/no item
    answered by a statement is unresolved (ambiguous); otherwise :func:`missing_answer`."""
    named = echoed_letters(last_sentence(response))
    if src == "no final-answer marker" and len(named) > 1:
        return VerifyResult(None, None, METHOD_RULE, f"unresolved: ambiguous: names options {', '.join(named)} "
                            "(an echoed option list)")
    if yes_no and src == "no final-answer marker":
        return VerifyResult(None, None, METHOD_RULE, "unresolved: a yes/no item answered by a statement with no "
                            "yes or no (deciding it needs the question: LLM fallback)")
    return missing_answer(response, src)


def _names_no_option(cand: str, src: str, how: str, gold_desc: str) -> VerifyResult:
    """The verdict on a candidate ``cand`` that picks no option (``how``: why): unresolved when ambiguous, read
    from prose, or long; False for a short, numeric or math answer."""
    if how.startswith("ambiguous"):
        return VerifyResult(None, cand, METHOD_RULE, f"unresolved: {how}; {gold_desc}")
    if src in PROSE_SOURCES:  # a value read from a sentence may answer another question than the options'
        return VerifyResult(None, cand, METHOD_RULE, f"unresolved: the value a sentence states ({src}) names "
                            f"no option; {gold_desc}")
    if len(cand.split()) <= 8 or parse_number(cand) or looks_math(cand):
        return VerifyResult(False, cand, METHOD_RULE, f"answer ({src}) names no option; {gold_desc}")
    return VerifyResult(None, cand, METHOD_RULE, f"unresolved: long answer ({src}) names no option; {gold_desc}")


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
    opts = as_options(options)
    if not opts:
        raise ValueError(f"multiple_choice needs options; got {options!r} for gold {answer!r}")
    return verify_options(response, answer, opts, rel_tol)
