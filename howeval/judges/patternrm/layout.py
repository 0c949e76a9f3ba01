"""Text layout for PatternRM: strip a response to its plain content, or render content in another layout.

Issue 21: the v1 PatternRM learned "written ``Step N:``" as ``pr`` (MR-GSM8K's wrong chains, the corpus's
only real ``pr`` positives, are all numbered). The v2 head reads :func:`plain_text` of a response, so the
layouts below cannot change its labels, and the corpus renders every record in a layout drawn
independently of its labels (:func:`render`), so no label is predictable from layout.

Layouts (:data:`LAYOUTS`): ``prose`` (sentences on lines), ``numbered`` (``Step 1: ...``), ``markdown``
(``- `` bullets, a ``### Solution`` header, the answer in ``**bold**``), ``code`` (lines holding ``=``
inside a fenced code block). ``plain_text(render(t, L)) == plain_text(t)`` for every layout (tested).

Pure functions, no I/O.
"""
from __future__ import annotations

import re

__all__ = ["LAYOUTS", "plain_text", "render", "layout_of"]

LAYOUTS = ("prose", "numbered", "markdown", "code")

_STEP = re.compile(r"^\s*(?:step\s*\d+\s*[:.)-]|\d+\s*[.)]\s|[-*+\u2022]\s+|#{1,6}\s+)", re.IGNORECASE)
_FENCE = re.compile(r"^\s*```[\w+-]*\s*$")
_HEADER_ONLY = re.compile(r"^\s*#{1,6}\s*(solution|answer|reasoning|steps?|explanation)\s*:?\s*$", re.IGNORECASE)
_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")
_WS = re.compile(r"[ \t]+")


def plain_text(text: str) -> str:
    """The content of ``text`` without layout: no step numbers, list bullets, markdown headers or bold,
    no code fences (their lines kept), one sentence per line, inner spaces collapsed.

    Args:
        text: a response (any length; ``TypeError`` if not a str).

    Returns:
        the plain text (``str``, never longer than ``text``).

    >>> plain_text("### Solution\\nStep 1: Add **2** and 2.\\n```\\n2 + 2 = 4\\n```\\n- The answer is 4.")
    'Add 2 and 2.\\n2 + 2 = 4\\nThe answer is 4.'
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    out = []
    for line in text.splitlines():
        if _FENCE.match(line) or _HEADER_ONLY.match(line):
            continue
        s = line
        for _ in range(2):  # "- Step 1: ..." carries two prefixes
            s = _STEP.sub("", s, count=1)
        s = _BOLD.sub(lambda m: m.group(1) or m.group(2), s)
        s = _WS.sub(" ", s).strip()
        if s:
            out.extend(x.strip() for x in _SENT.split(s) if x and x.strip())
    return "\n".join(out)


_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9$\\(])")


def _lines(text: str) -> list[str]:
    return plain_text(text).split("\n") if text.strip() else []


def render(text: str, layout: str) -> str:
    """``text``'s content in ``layout`` (one of :data:`LAYOUTS`); the content's words are unchanged.

    Raises:
        ValueError: an unknown layout (the message lists the known ones).

    >>> render("Add 2 and 2. 2 + 2 = 4. The answer is 4.", "numbered")
    'Step 1: Add 2 and 2.\\nStep 2: 2 + 2 = 4.\\nStep 3: The answer is 4.'
    >>> plain_text(render("Add 2 and 2. 2 + 2 = 4. The answer is 4.", "code")) == plain_text("Add 2 and 2.\\n2 + 2 = 4.\\nThe answer is 4.")
    True
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r} is not one of {LAYOUTS}")
    lines = _lines(text)
    if layout == "prose":
        return "\n".join(lines)
    if layout == "numbered":
        return "\n".join(f"Step {i}: {s}" for i, s in enumerate(lines, 1))
    if layout == "markdown":
        body = [f"- {s}" for s in lines[:-1]] + ([f"**{lines[-1]}**"] if lines else [])
        return "\n".join(["### Solution", *body])
    # code: runs of lines holding "=" go inside a fenced block
    out: list[str] = []
    in_code = False
    for s in lines:
        eq = "=" in s
        if eq and not in_code:
            out.append("```")
            in_code = True
        elif not eq and in_code:
            out.append("```")
            in_code = False
        out.append(s)
    if in_code:
        out.append("```")
    return "\n".join(out)


def layout_of(text: str) -> str:
    """The layout a text is written in (a surface feature, for the corpus's shortcut check): ``numbered``
    when a line starts ``Step N``, ``code`` with a fence, ``markdown`` with bullets / headers / bold, else ``prose``."""
    if re.search(r"^\s*step\s*\d+", text, re.IGNORECASE | re.MULTILINE):
        return "numbered"
    if "```" in text:
        return "code"
    if re.search(r"^\s*(?:[-*+]\s|#{1,6}\s)|\*\*", text, re.MULTILINE):
        return "markdown"
    return "prose"
