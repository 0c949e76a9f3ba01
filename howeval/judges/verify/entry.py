"""The verifier's entry point: :func:`verify` runs the rule verifier registered for an answer type, within limits.

SPEC section 1 ("Verifier: c = J_ver(x, y_m, g) in {0, 1}"). The rule verifiers register themselves
when :mod:`howeval.judges.verify` is imported (``numbers``, ``choice``, ``text``, ``free_form``), which
importing this module always does first.
"""
from __future__ import annotations

from typing import Any

from howeval.judges import budget
from howeval.judges.verify.official import apply_source_criterion
from howeval.judges.verify.result import DEFAULT_REL_TOL, METHOD_BUDGET, VERIFIERS, VerifyResult
from howeval.parsing.limits import InputTooLarge, check_text

__all__ = ["verify"]


def verify(
    response: str,
    answer: Any,
    answer_type: str,
    options: list | None = None,
    source: str | None = None,
    *,
    rel_tol: float = DEFAULT_REL_TOL,
    time_budget_s: float = budget.DEFAULT_ITEM_BUDGET_S,
    precision: int | str | None = None,
    source_criteria: bool = True,
) -> VerifyResult:
    r"""Judge one response y_m against the reference answer g by the rules of its answer type.

    Args:
        response: the user-facing response y_m (never the reasoning channel r_m).
        answer: the reference answer (str; an int/float is converted; None only for free_form
            items without a reference, which are unresolved).
        answer_type: a key of :data:`VERIFIERS`.
        options: the item's options (multiple choice, TabMWP text types), or None.
        source: the item's source benchmark, recorded in the reason. The answer-type rules decide first;
            a source with a published scorer (MathVista, MATH-Vision: :mod:`howeval.judges.verify.official`)
            then applies its own criterion as that code does, and the row says so (``method``
            ``"nearest_option"`` or ``"source_rule"``).
        rel_tol: relative tolerance for free-form numbers (> 0, default 1e-4).
        time_budget_s: seconds this item may spend in math-verify (enforced in a child process that
            is killed when over time, so it holds in threads, actors and Serve replicas).
        precision: MathVista's ``precision`` of a ``float`` answer (decimal places its scorer rounds to), or None.
        source_criteria: False to stop at the answer-type rules (the verdicts before issue 41).

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
            if source_criteria and source:
                result = apply_source_criterion(response, gold, answer_type, options, source, result,
                                                {"precision": precision})
    except InputTooLarge as e:
        result = VerifyResult(None, None, METHOD_BUDGET, str(e))
    except budget.BudgetExceeded as e:
        result = VerifyResult(None, None, METHOD_BUDGET, str(e))
    except RecursionError:
        result = VerifyResult(None, None, METHOD_BUDGET, "input too large: nesting too deep to parse")
    if source:
        result.reason = f"{result.reason} [{source}]"
    return result
