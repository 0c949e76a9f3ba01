"""The ``extractive_text``, ``boolean_text`` and ``other_text`` verifiers (TabMWP).

SPEC section 1: "following each source task's own criteria". With options, the option the answer
picks (by letter or normalized text) must be the gold option (:func:`verify_options`); without options,
the normalized answer text must equal the gold (yes/no for boolean).
"""
from __future__ import annotations

from howeval.judges.verify.answer import find_candidate, leading_yes_no, missing_answer, norm_text
from howeval.judges.verify.choice import MARKED_SOURCES, PROSE_SOURCES, as_options, verify_options
from howeval.judges.verify.numbers import parse_number
from howeval.judges.verify.result import METHOD_RULE, VerifyResult, register_verifier

__all__ = ["verify_boolean_text", "verify_extractive_text", "verify_other_text"]


def _verify_text(response: str, answer: str, options: list | None, rel_tol: float) -> VerifyResult:
    opts = as_options(options)
    if opts:
        return verify_options(response, answer, opts, rel_tol)
    cand, src = find_candidate(response)
    if norm_text(answer) in ("yes", "no") and src not in MARKED_SOURCES and src not in ("empty", "refusal", "artefact"):
        lead = leading_yes_no(response)  # "No. The table shows a shortage." (issue 33, class 6)
        if lead is not None:
            cand, src = lead, "leading yes/no"
    if cand is None:
        return missing_answer(response, src)
    ok = norm_text(cand) == norm_text(answer)
    if not ok and src in PROSE_SOURCES and parse_number(answer) is None:  # "Katie has 5 apples." -> 5, against gold "Katie": not a verdict
        return VerifyResult(None, cand, METHOD_RULE, f"unresolved: the value a sentence states ({cand!r}, {src}) "
                            f"differs from the text gold {answer!r}")
    return VerifyResult(ok, cand, METHOD_RULE, f"normalized text {'equals' if ok else 'differs from'} gold ({src})")


@register_verifier("extractive_text")
def verify_extractive_text(response: str, answer: str, options: list | None, *, rel_tol: float) -> VerifyResult:
    """TabMWP text picked from the table: the option named (letter or text) is the gold; no options: normalized equality.

    Raises:
        ValueError: options are given and the gold is none of them.
    """
    return _verify_text(response, answer, options, rel_tol)


@register_verifier("boolean_text")
def verify_boolean_text(response: str, answer: str, options: list | None, *, rel_tol: float) -> VerifyResult:
    """TabMWP yes/no-like answers ("yes"/"no", "surplus"/"shortage"): as extractive_text."""
    return _verify_text(response, answer, options, rel_tol)


@register_verifier("other_text")
def verify_other_text(response: str, answer: str, options: list | None, *, rel_tol: float) -> VerifyResult:
    """TabMWP other text ("1 hour", a pattern rule): as extractive_text."""
    return _verify_text(response, answer, options, rel_tol)
