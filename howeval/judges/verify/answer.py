"""The answer a response gives, read for the rule verifiers: the candidate to judge, refusals, text normalization.

SPEC section 2: "extract the final answer from the last ``\\boxed{}``". :func:`find_candidate` takes it from
:func:`howeval.parsing.answers.find_final_answer` (boxed / json / answer line / final sentence), else a
short bare response; a response without one is a refusal (wrong), empty (wrong) or unresolved
(:func:`missing_answer`).
"""
from __future__ import annotations

import re

from howeval.judges.verify.result import METHOD_RULE, VerifyResult
from howeval.parsing.answers import find_final_answer
from howeval.parsing.text import strip_latex

__all__ = [
    "BARE_MAX_CHARS",
    "BARE_MAX_WORDS",
    "REFUSAL_MAX_WORDS",
    "find_candidate",
    "is_artefact",
    "is_refusal",
    "leading_yes_no",
    "missing_answer",
    "norm_text",
    "strip_trailing",
]

BARE_MAX_WORDS = 4  # a response this short, on one line, with no answer marker, is its own answer
BARE_MAX_CHARS = 60
REFUSAL_MAX_WORDS = 80  # a longer text with no answer is an unfinished answer, not a refusal


def strip_trailing(s: str) -> str:
    """``s`` without surrounding spaces and trailing sentence punctuation (``.,;:!``).

    >>> strip_trailing(" 13.00. ")
    '13.00'
    """
    return s.strip().rstrip(".,;:!").strip()


def norm_text(s: str) -> str:
    """Lower case, LaTeX/typography and sentence punctuation removed, articles dropped ("5:45 P.M." -> "545 pm").

    Math symbols (``()+-=/^``) are kept, so "f(x)=-g(x)+2" and "f(x)=-g(x+2)" stay different.

    >>> norm_text("5:45 P.M."), norm_text("The answer"), norm_text("1,250 and 2.5")
    ('545 pm', 'answer', '1,250 and 2.5')
    """
    t = strip_latex(s).lower()
    t = re.sub(r"(?<!\d)[.,]|[.,](?!\d)", "", t)  # keep "2.5" and "1,250" apart from "25" and "1250"
    t = re.sub(r"[;:!?'\"`*]", "", t)
    t = re.sub(r"\b(the|a|an)\b", " ", t)
    return re.sub(r"\s+", " ", t).strip()


def find_candidate(response: str) -> tuple[str | None, str]:
    """The answer to judge and where it came from, or ``(None, why)``.

    Returns:
        ``(answer, source)`` with source ``"boxed"``, ``"json"``, ``"answer_line"``, ``"final_sentence"``,
        ``"one_sentence"`` (:mod:`howeval.parsing.answers`) or ``"bare"`` (a one-line response of at most
        :data:`BARE_MAX_WORDS` words and :data:`BARE_MAX_CHARS` characters); else ``(None, why)`` with why
        ``"artefact"`` (:func:`is_artefact`), ``"refusal"``, ``"empty"`` or ``"no final-answer marker"``.

    >>> find_candidate("Katie"), find_candidate("   ")
    (('Katie', 'bare'), (None, 'empty'))
    """
    if is_artefact(response):
        return None, "artefact"
    found = find_final_answer(response)
    if found:
        return found
    if is_refusal(response):
        return None, "refusal"
    bare = re.sub(r"\\boxed\s*\{\s*\}", "", response).strip()
    bare = strip_trailing(bare.replace("$", "").strip())
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


_ARTEFACT_RE = re.compile(
    r"^(?:<[\w.:' -]{1,80}\bat\s+0x[0-9a-fA-F]+>|<[\w.:]+(?:\s+object)?>|None|null|nil|undefined|NaN|\[object\s+\w+\]"
    r"|Traceback\s+\(most\s+recent\s+call\s+last\).*|<!DOCTYPE\b.*|<html\b.*|(?:[\w.]+(?:Error|Exception)):.*"
    r"|(?:HTTP/\d(?:\.\d)?\s+)?[45]\d\d\s+(?:Bad\s+Request|Unauthorized|Forbidden|Not\s+Found|Internal\s+Server\s+Error"
    r"|Bad\s+Gateway|Service\s+Unavailable|Gateway\s+Time-?out|Too\s+Many\s+Requests)\b.*)$",
    re.DOTALL,
)


def is_artefact(response: str) -> bool:
    """True when the response is a program artefact, not model text: an object's repr
    (``<Client.Response object at 0x7f00>``), ``None`` / ``null`` / ``undefined`` / ``NaN``, a Python
    traceback or exception line, an HTML page, an HTTP error status. Its digits ("0x7f00") are no answer:
    the verdict is unresolved with the reason, for the caller to see the failure.

    >>> is_artefact("<Client.Response object at 0x7f00>"), is_artefact("None"), is_artefact("0")
    (True, True, False)
    """
    return _ARTEFACT_RE.fullmatch(response.strip()) is not None


def is_refusal(response: str) -> bool:
    """A short response (<= :data:`REFUSAL_MAX_WORDS` words) that declines ("Sorry, I can't help with that image.").

    >>> is_refusal("Sorry, I can't help with that image."), is_refusal("The answer is 4.")
    (True, False)
    """
    return len(response.split()) <= REFUSAL_MAX_WORDS and _REFUSAL_RE.search(response.strip()) is not None


_LEADING_YES_NO_RE = re.compile(r"^\W*(yes|no)\b(?=\s*(?:[,.!:;—–-]|$))", re.IGNORECASE)


def leading_yes_no(response: str) -> str | None:
    """"Yes" or "No" when the response opens with it as a word of its own ("No, the blue bar is shorter
    than the red bar.", "Yes. Both ..."), else None ("Not all ...", "No two bars ..." are not answers).

    >>> leading_yes_no("No, the blue bar is shorter."), leading_yes_no("No two bars match."), leading_yes_no("yes")
    ('No', None, 'Yes')
    """
    m = _LEADING_YES_NO_RE.match(response.strip())
    return m.group(1).capitalize() if m else None


def missing_answer(response: str, why: str) -> VerifyResult:
    """The verdict on a response with no answer to judge (``why`` from :func:`find_candidate`).

    Returns:
        ``correct=False`` for ``"empty"`` and ``"refusal"`` (the reason quotes the refusal's first line),
        ``correct=None`` for ``"artefact"`` (the reason quotes it: a failed call upstream, not a wrong
        answer), else ``correct=None`` ("unresolved: ..."); always ``extracted=None, method="rule"``.
    """
    if why == "artefact":
        first = response.strip().splitlines()[0][:80]
        return VerifyResult(None, None, METHOD_RULE,
                            f"unresolved: the response is a program artefact, not an answer ({first!r})")
    if why == "empty":
        return VerifyResult(False, None, METHOD_RULE, "no answer found (empty response)")
    if why == "refusal":
        first = response.strip().splitlines()[0][:80]
        return VerifyResult(False, None, METHOD_RULE, f"refusal: the response declines to answer ({first!r})")
    return VerifyResult(None, None, METHOD_RULE, f"unresolved: {why} in a {len(response.split())}-word response")
