"""Split a raw generation into the reasoning channel r_m and the user-facing response y_m (SPEC 1).

Only y_m is judged. A thinking response cut off before its reasoning closed has no y_m: it is marked
truncated and y_m is "" (never the partial reasoning).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

OPEN_TAGS = ("<think>", "<thinking>", "<reasoning>")
CLOSE_TAGS = ("</think>", "</thinking>", "</reasoning>")


@dataclass(frozen=True)
class Split:
    """Result of :func:`split_reasoning`: ``reasoning`` (r_m or None), ``response`` (y_m), ``truncated``."""

    reasoning: str | None
    response: str
    truncated: bool


def split_reasoning(raw: str, *, finish_reason: str = "stop", server_reasoning: str | None = None) -> Split:
    """Separate ``<think>...</think>`` (or ``<thinking>``, ``<reasoning>``) from the answer.

    Args:
        raw: generated text (for servers with a reasoning parser: the ``content`` field).
        finish_reason: the engine's finish reason; ``"length"`` with an unclosed tag means truncated.
        server_reasoning: the server's ``reasoning_content``/``reasoning`` field when it has one; it wins.

    Returns:
        Split. Rules: a closing tag with no opening one (templates that pre-fill ``<think>``) treats
        everything before it as reasoning; an opening tag never closed gives ``truncated=True`` and
        ``response=""`` whatever the finish reason, since the answer never started.

    >>> split_reasoning("<think>2+2=4</think> The answer is 4.")
    Split(reasoning='2+2=4', response='The answer is 4.', truncated=False)
    >>> split_reasoning("<think>let me see", finish_reason="length")
    Split(reasoning='let me see', response='', truncated=True)
    """
    text = raw or ""
    if server_reasoning is not None and server_reasoning.strip():
        # Server split already; content may still be empty when cut off in the reasoning phase.
        truncated = finish_reason == "length" and not text.strip()
        return Split(server_reasoning.strip(), "" if truncated else _strip_tags(text).strip(), truncated)
    lower = text.lower()
    for o, c in zip(OPEN_TAGS, CLOSE_TAGS):
        oi, ci = lower.find(o), lower.rfind(c)
        if ci != -1 and (oi == -1 or oi < ci):
            start = oi + len(o) if oi != -1 else 0
            return Split(text[start:ci].strip() or None, _strip_tags(text[ci + len(c):]).strip(), False)
        if oi != -1 and ci == -1:
            return Split(text[oi + len(o):].strip() or None, "", True)
    return Split(None, text.strip(), False)


_TAG_RE = re.compile(r"</?(think|thinking|reasoning)>", re.IGNORECASE)


def _strip_tags(s: str) -> str:
    return _TAG_RE.sub("", s)
