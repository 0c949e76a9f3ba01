"""The answer verifier J_ver(x, y_m, g): rules per answer type, then an LLM judge for what rules leave open.

SPEC section 1 ("Verifier: c = J_ver(x, y_m, g) in {0, 1}, following each source task's own criteria")
and section 2 ("extract the final answer from the last ``\\boxed{}``, normalized matching and symbolic
equivalence; unresolved cases go to an LLM judge").

- :func:`verify` (``entry.py``) runs the rule verifier registered for ``answer_type`` (:data:`VERIFIERS`,
  ``result.py``) and returns a :class:`VerifyResult`. ``correct=None`` means the rules could not decide
  (descriptive reference, no final answer in a long response, symbolic forms math-verify cannot
  parse): it is never a guess, and callers send it to :class:`LLMVerifier`.
- :class:`LLMVerifier` (``llm.py``) wraps an Engine and grades only the unresolved items, in one batched call.

After the answer-type rules, ``official.py`` applies the source's own published scorer where there is one
(MathVista, MATH-Vision, TabMWP; issue 41), as that code does, and names the method on the row:
``"nearest_option"`` (the extraction mapped to its nearest option) or ``"source_rule"``; the departures that
remain are listed in ``docs/metrics.md``.

One module per answer type, on shared readers: ``answer.py`` (the candidate answer of a response, text
normalization, refusals), ``numbers.py`` (numbers read from answers), ``mathexpr.py`` (guarded
math-verify equivalence), ``choice.py`` (which option an answer names).

Criteria per answer type (the types of ``../shared/data/manifest.jsonl``):

==================  ==========================================================================
multiple_choice     ``choice.py``: option picked by letter, by option text, by number (units
                    ignored) or by math-verify equivalence; gold is a letter (MATH-Vision) or an
                    option value (PuzzleVQA). An answer naming no option is wrong.
integer_number      ``numbers.py``: TabMWP: numeric equality after removing ``$``, thousands
                    separators, units.
decimal_number      ``numbers.py``: TabMWP: prediction rounded to the gold answer's decimal places
                    equals gold; a fraction gold ("7/18") equals an equal fraction, or a decimal
                    that agrees with it to 3 places (PromptPG ``normalize_answer`` rounds to 3).
extractive_text,    ``text.py``: TabMWP: the option picked (letter or normalized text) equals the
boolean_text,       gold option; without options, normalized text equality (yes/no for boolean).
other_text
free_form           ``free_form.py``: MATH-Vision: numbers within ``rel_tol``, else math-verify
                    equivalence; a short text gold by normalized equality; a descriptive gold
                    (Bingo) is unresolved.
free_form_or_mc     ``free_form.py``: CRYSTAL: gold like "A", "B (60°)", "A) Yes", "3", "Africa":
                    letter match when the gold has a letter, else its value as in free_form.
==================  ==========================================================================
"""
from __future__ import annotations

# The answer-type modules register their verifiers in VERIFIERS when imported: all of them, here.
from howeval.judges.verify import choice, free_form, numbers, text  # noqa: F401
from howeval.judges.verify.entry import verify
from howeval.judges.verify.llm import LLMVerifier
from howeval.judges.verify.result import (
    DEFAULT_REL_TOL,
    METHOD_BUDGET,
    METHOD_LLM,
    METHOD_LLM_ERROR,
    METHOD_RULE,
    VERIFIERS,
    VerifyResult,
    register_verifier,
)

__all__ = [
    "DEFAULT_REL_TOL",
    "METHOD_BUDGET",
    "METHOD_LLM",
    "METHOD_LLM_ERROR",
    "METHOD_RULE",
    "VERIFIERS",
    "LLMVerifier",
    "VerifyResult",
    "register_verifier",
    "verify",
]
