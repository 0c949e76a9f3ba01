"""A verifier's verdict (:class:`VerifyResult`), its methods, and the registry of rule verifiers by answer type."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from howeval.judges.registry import Registry

__all__ = [
    "DEFAULT_REL_TOL",
    "METHOD_BUDGET",
    "METHOD_LLM",
    "METHOD_LLM_ERROR",
    "METHOD_RULE",
    "VERIFIERS",
    "VerifierFn",
    "VerifyResult",
    "register_verifier",
]

METHOD_RULE = "rule"
METHOD_LLM = "llm"
METHOD_LLM_ERROR = "llm_error"
METHOD_BUDGET = "budget"  # the item broke a size limit or its time budget: correct is None, the reason says which
DEFAULT_REL_TOL = 1e-4  # our choice: free-form numbers equal within 0.01% (|a-b| <= 1e-4 * max(|a|,|b|))


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
"""A rule verifier: ``fn(response, answer, options, *, rel_tol) -> VerifyResult``."""
VERIFIERS: Registry[VerifierFn] = Registry("answer_type")
"""Answer type -> rule verifier (filled by the answer-type modules of this package when it is imported)."""


def register_verifier(answer_type: str) -> Callable[[VerifierFn], VerifierFn]:
    """Decorator: register ``fn(response, answer, options, *, rel_tol) -> VerifyResult`` for a type.

    Raises:
        ValueError: ``answer_type`` is already registered (the message lists the registered types).
    """
    return VERIFIERS.register(answer_type)
