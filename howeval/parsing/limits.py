"""Size and nesting limits checked before any recursive or regex work on model text.

Every scorer (verifier, rule judge, step segmentation, reward server) reads untrusted model output. A
response that is too long or too deeply nested is refused *before* parsing with :class:`InputTooLarge`,
whose message starts with ``"input too large"``; callers record it on the row (``correct = null`` /
``judge_error``) and go on. The scans here are single linear passes (no regex backtracking, no
recursion), so checking costs O(n) even on a 1 MB response.

Limits (our choice; real responses are far inside them):

- :data:`MAX_TEXT_CHARS` = 200,000 characters (about 50k tokens; the reward server's per-field limit);
- :data:`MAX_NESTING` = 100 levels of ``{[(`` brackets (Python's JSON decoder recurses once per level,
  sympy once per LaTeX group; no real answer nests deeper than a handful).
"""
from __future__ import annotations

import re

__all__ = [
    "MAX_TEXT_CHARS",
    "MAX_NESTING",
    "MAX_NUMBER_DIGITS",
    "InputTooLarge",
    "nesting_depth",
    "check_text",
    "longest_digit_run",
]

MAX_TEXT_CHARS = 200_000
"""Longest text (characters) any scorer reads; longer is ``input too large``."""

MAX_NESTING = 100
"""Deepest bracket nesting (``{`` ``[`` ``(`` counted together) before ``input too large``."""

MAX_NUMBER_DIGITS = 1_000
"""Longest run of digits read as a number (Python refuses ``int()`` of > 4,300 digits; no answer needs 1,000)."""

_OPEN = frozenset("{[(")
_CLOSE = frozenset("}])")
_BRACKET_RE = re.compile(r"[{}\[\]()]")


class InputTooLarge(ValueError):
    """A text exceeds a size or nesting limit; the message names the field, the size and the limit."""


def nesting_depth(text: str, stop_at: int | None = None) -> int:
    """The deepest nesting of ``{[(`` brackets in ``text`` (one linear pass; closers without an opener
    are ignored, openers never closed still count).

    Args:
        text: any string.
        stop_at: return as soon as the depth reaches this value (a cheap "deeper than" test).

    >>> nesting_depth('{"a": [1, (2)]}')
    3
    >>> nesting_depth("))((")
    2
    """
    depth = best = 0
    for m in _BRACKET_RE.finditer(text):  # the brackets only: prose between them is skipped in C
        if m.group(0) in _OPEN:
            depth += 1
            if depth > best:
                best = depth
                if stop_at is not None and best >= stop_at:
                    return best
        elif depth:
            depth -= 1
    return best


def longest_digit_run(text: str) -> int:
    """Length of the longest run of ASCII digits in ``text`` (thousands separators break a run).

    >>> longest_digit_run("12 and 34567, 8")
    5
    """
    best = run = 0
    for ch in text:
        if "0" <= ch <= "9":
            run += 1
            if run > best:
                best = run
        else:
            run = 0
    return best


def check_text(
    text: str,
    field: str = "response",
    *,
    max_chars: int = MAX_TEXT_CHARS,
    max_nesting: int = MAX_NESTING,
) -> None:
    """Raise :class:`InputTooLarge` when ``text`` is longer than ``max_chars`` or nests deeper than ``max_nesting``.

    Args:
        text: the text to check (a str; other types are the caller's TypeError).
        field: the name used in the message (``"response"``, ``"answer"``, ``"labels.3"``...).
        max_chars: length limit in characters (>= 1).
        max_nesting: bracket nesting limit (>= 1).

    Raises:
        InputTooLarge: ``"input too large: response has 1,000,000 characters (limit 200,000)"`` or
            ``"input too large: response nests brackets 2,000 deep (limit 100)"``.

    >>> check_text("{" * 101)
    Traceback (most recent call last):
    ...
    howeval.parsing.limits.InputTooLarge: input too large: response nests brackets 101+ deep (limit 100)
    """
    if len(text) > max_chars:
        raise InputTooLarge(f"input too large: {field} has {len(text):,} characters (limit {max_chars:,})")
    d = nesting_depth(text, stop_at=max_nesting + 1)
    if d > max_nesting:
        raise InputTooLarge(f"input too large: {field} nests brackets {d:,}+ deep (limit {max_nesting:,})")
