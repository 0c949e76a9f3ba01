"""Low-level text toolkit shared by the verifier, judges, step parser, Delphi and the adapt loop.

Pure string functions, no I/O. One place for each of:

- :func:`json_candidates`, :func:`json_objects`, :func:`find_json_object`: JSON objects inside free
  text (code fences, prose around the object, nested objects);
- :func:`boxed_spans`, :func:`boxed_contents`: ``\\boxed{...}`` / ``\\fbox{...}`` with balanced braces;
- :func:`strip_latex`: LaTeX and typography removed from a short answer or option text;
- :data:`NUMBER_WORDS`: the English number words zero..twenty.

Final-answer extraction builds on these in :mod:`howeval.parsing.answers`; step segmentation in
:mod:`howeval.parsing.steps`.
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any

from howeval.parsing.limits import MAX_NESTING, nesting_depth

__all__ = [
    "NUMBER_WORDS",
    "boxed_contents",
    "boxed_spans",
    "find_json_object",
    "json_candidates",
    "json_objects",
    "strip_latex",
]

# ---------------------------------------------------------------------------------- JSON objects

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def _balanced_spans(text: str, nested: bool) -> list[str]:
    """Every balanced ``{...}`` span, in order of its opening brace; only the outermost unless ``nested``.

    Braces inside JSON strings (``"a}"``) do not count; quotes are tracked only inside a span, so a stray
    quote in the prose around an object does not hide it.
    """
    spans: list[tuple[int, str]] = []
    opens: list[int] = []
    in_str = esc = False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"' and opens:
            in_str = True
        elif ch == "{":
            opens.append(i)
        elif ch == "}" and opens:
            start = opens.pop()
            # spans nested deeper than MAX_NESTING are never kept: the decoder would recurse past its
            # limit, and keeping every level of a 2,000-deep nesting costs O(n^2) memory
            if (nested and len(opens) < MAX_NESTING) or not opens:
                spans.append((start, text[start : i + 1]))
    spans.sort()
    return [span for _, span in spans]


def json_candidates(text: str, *, nested: bool = True) -> list[str]:
    """Strings that may hold a JSON object: fenced blocks first (```` ```json ... ``` ````, stripped),
    then every balanced ``{...}`` span of ``text`` in order of its opening brace (with ``nested=False``
    only the outermost ones).

    An unclosed ``{`` gives no span (a truncated object is not a candidate).

    >>> json_candidates('see {"a": {"b": 1}} and {"c": "}"}')
    ['{"a": {"b": 1}}', '{"b": 1}', '{"c": "}"}']
    >>> json_candidates('```json\\n{"a": 1}\\n```', nested=False)
    ['{"a": 1}', '{"a": 1}']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}: {text!r}")
    return [m.group(1).strip() for m in _FENCE.finditer(text)] + _balanced_spans(text, nested)


def json_objects(text: str, *, nested: bool = True) -> list[dict[str, Any]]:
    """The JSON objects (dicts) decoded from :func:`json_candidates`, in that order; invalid JSON skipped.

    >>> json_objects('reply: {"correct": true, "reason": "same"} {bad}')
    [{'correct': True, 'reason': 'same'}]
    """
    out: list[dict[str, Any]] = []
    for cand in json_candidates(text, nested=nested):
        if nesting_depth(cand, stop_at=MAX_NESTING + 1) > MAX_NESTING:
            continue  # not a reply's object; and whether json.loads would recurse that deep depends on sys's limit
        try:
            obj = json.loads(cand)
        except (json.JSONDecodeError, RecursionError):  # RecursionError: nested deeper than the decoder goes
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def find_json_object(
    text: str, accept: Callable[[dict[str, Any]], bool] | None = None, *, last: bool = False
) -> dict[str, Any] | None:
    """The first (or, with ``last``, the last) JSON object in ``text`` for which ``accept`` is true.

    Args:
        text: free text: a model reply with prose, code fences, several objects.
        accept: predicate on a decoded dict; None accepts any dict.
        last: return the last accepted object instead of the first (a reply that corrects itself).

    Returns:
        The decoded dict, or None when no candidate is accepted.

    >>> find_json_object('{"x": 1} then {"consistent": false}', lambda o: "consistent" in o)
    {'consistent': False}
    >>> find_json_object('{"correct": false} no, {"correct": true}', lambda o: "correct" in o, last=True)
    {'correct': True}
    """
    found = None
    for obj in json_objects(text):
        if accept is None or accept(obj):
            if not last:
                return obj
            found = obj
    return found


# ---------------------------------------------------------------------------------- boxed spans

_BOX_OR_BRACE_RE = re.compile(r"\\(?:boxed|fbox)\s*\{|[{}]")


def boxed_spans(text: str) -> list[tuple[int, int, str]]:
    """Every ``\\boxed{...}`` / ``\\fbox{...}`` with balanced braces as ``(start, end, content)``:
    ``text[start:end]`` is the whole box, ``content`` its unstripped inside. Unclosed boxes are skipped.

    >>> boxed_spans(r"a \\boxed{x{1}} b")
    [(2, 14, 'x{1}')]
    """
    # One left-to-right pass over box openers and braces (a stack of open groups): repeated unclosed
    # ``\boxed{`` openers cost O(n), not O(n^2).
    out: list[tuple[int, int, str]] = []
    stack: list[tuple[int, int] | None] = []  # (box start, content start) for a box opener, None for "{"
    for m in _BOX_OR_BRACE_RE.finditer(text):
        tok = m.group(0)
        if tok == "}":
            if stack:
                top = stack.pop()
                if top is not None:
                    out.append((top[0], m.end(), text[top[1] : m.start()]))
        elif tok == "{":
            stack.append(None)
        else:
            stack.append((m.start(), m.end()))
    out.sort()
    return out


def boxed_contents(text: str) -> list[str]:
    """Contents of every ``\\boxed{...}`` / ``\\fbox{...}`` in ``text``, in order (balanced braces).

    An unclosed box is ignored. Empty boxes are returned as "" (callers skip them).

    >>> boxed_contents(r"so $\\boxed{\\frac{1}{2}}$ or \\boxed{3}")
    ['\\\\frac{1}{2}', '3']
    >>> boxed_contents(r"\\boxed{unclosed")
    []
    """
    return [content.strip() for _, _, content in boxed_spans(text)]


# ---------------------------------------------------------------------------------- LaTeX stripping

_WRAPPER_RE = re.compile(r"\\(?:text|textbf|mathrm|mathbf|operatorname|mbox)\s*\{([^{}]*)\}")


def _unbox(s: str) -> str:
    """Every ``\\boxed{...}`` / ``\\fbox{...}`` replaced by its content (balanced braces, nested boxes too).

    Each round unwraps every outermost box in one pass (rounds = box nesting depth, not box count).
    """
    while True:
        spans = boxed_spans(s)
        if not spans:
            return s
        parts, pos = [], 0
        for start, end, content in spans:
            if start < pos:
                continue  # inside a box unwrapped this round; the next round gets it
            parts += [s[pos:start], content]
            pos = end
        s = "".join(parts) + s[pos:]


_STRIP_CACHE_MAX_CHARS = 2_000  # short strings (answers, options, golds) recur across rows: cache those only


def strip_latex(s: str) -> str:
    """A short answer or option text without LaTeX markup and typography (see :func:`_strip_latex`).

    Strings of at most 2,000 characters are cached (LRU, 8,192 entries): the same gold answers and
    option texts are stripped once per response otherwise.
    """
    s = str(s)
    return _strip_latex_cached(s) if len(s) <= _STRIP_CACHE_MAX_CHARS else _strip_latex(s)


def _strip_latex(s: str) -> str:
    """A short answer or option text without LaTeX markup and typography.

    Unwraps ``\\boxed{}``, ``\\fbox{}`` (balanced braces) and ``\\text{}``, ``\\textbf{}``,
    ``\\mathrm{}``, ``\\mathbf{}``, ``\\operatorname{}``, ``\\mbox{}`` (three levels deep); drops
    ``\\left``/``\\right``, degree marks (``^\\circ``, ``\\circ``, ``\\degree``, ``°``), math delimiters (``$``, ``\\(``, ``\\)``,
    ``\\[``, ``\\]``) and currency signs (``\\$``, ``€``, ``£``); turns ``\\%`` into ``%``, LaTeX spacing
    (``\\,`` ``\\;`` ``\\!`` ``\\:`` ``~``) into a space, Unicode minus and en dash into ``-``,
    ``\\dfrac``/``\\tfrac`` into ``\\frac``; collapses whitespace and strips surrounding ``*``.

    >>> strip_latex(r"$15^{\\circ}$")
    '15'
    >>> strip_latex(r"\\boxed{\\text{(B)}}")
    '(B)'
    >>> strip_latex(r"\\$1,250 \\text{ dollars}")
    '1,250 dollars'
    >>> strip_latex(r"\\dfrac{3}{4}\\,\\%")
    '\\\\frac{3}{4} %'
    """
    s = _unbox(str(s).strip())
    for _ in range(3):
        s = _WRAPPER_RE.sub(r" \1 ", s)
    s = s.replace("\\left", "").replace("\\right", "")
    s = re.sub(r"\^\s*\{?\s*\\circ\s*\}?", "", s)
    s = s.replace("\\circ", "").replace("\\degree", "").replace("°", "").replace("\\%", "%").replace("\\$", "$")
    s = s.replace("\\(", "").replace("\\)", "").replace("\\[", "").replace("\\]", "")
    s = re.sub(r"\\[,;!: ]|~", " ", s)
    s = s.replace("−", "-").replace("–", "-").replace("$", "").replace("€", "").replace("£", "")
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = re.sub(r"\s+", " ", s).strip()
    return s.strip("*").strip()


_strip_latex_cached = functools.lru_cache(maxsize=8192)(_strip_latex)


# ---------------------------------------------------------------------------------- number words

NUMBER_WORDS: dict[str, int] = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}
"""English number words (lower case) -> value, zero..twenty: answers like "Two" and quantities in prose."""
