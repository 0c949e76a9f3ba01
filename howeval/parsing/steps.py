"""Step segmentation: predicted reasoning steps from a response, for CRYSTAL's step metrics.

SPEC.md section 3 ("CRYSTAL (step-level reasoning)"): CRYSTAL asks the policy for a JSON object
``{"reasoning_steps": [str, ...], "answer": str}``; a response that is not valid JSON falls back to step
heuristics on its reasoning ("Step k:", numbered lines, bullets, non-trivial lines). SPEC section 1
keeps the reasoning channel r_m apart from the answer y_m: ``response_steps`` takes both and never
mixes them.

Heuristics, first that applies wins (``segment_steps``):

1. "Step k:" markers (also inline: "Step 1: ... Step 2: ..."), at least two of them;
2. numbered lines "1." / "1)" / "(1)", at least two;
3. bullet lines ("-", "*", "•", "+"), at least two;
4. non-trivial lines, at least two;
5. sentences (after ``.!?`` and a space before a capital, digit, quote or math; after ``。！？``).

Continuation lines of a numbered or bulleted item join that item. Step markers are stripped, and
trivial pieces are dropped: fewer than two letters or digits (``"---"``, ``"```"``, ``"$$"``) or a bare
heading such as ``"Solution:"`` (at most three words ending with a colon).
"""
from __future__ import annotations

import json
import re

from howeval.parsing.text import json_objects

_STEP_MARK = re.compile(r"(?i)\bstep\s*\d+\s*[:.)\-–]\s*")
_NUM_LINE = re.compile(r"^\s*(?:\(\d+\)|\d+[.)])\s+")
_BULLET_LINE = re.compile(r"^\s*[-*•+]\s+")
_LEAD_MARK = re.compile(r"^\s*(?:(?i:step)\s*\d+\s*[:.)\-–]|\(\d+\)|\d+[.)](?=\s)|[-*•+](?=\s))\s*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[$\\A-Z0-9])|(?<=[。！？])\s*(?=\S)")


def _is_trivial(piece: str) -> bool:
    """True for pieces that carry no step: < 2 alphanumerics, or a bare heading like ``"Solution:"``."""
    if sum(ch.isalnum() for ch in piece) < 2:
        return True
    return piece.endswith(":") and len(piece.split()) <= 3


def strip_marker(step: str) -> str:
    """Remove one leading step marker ("Step 3:", "3.", "(3)", "-", "•") and surrounding blanks.

    >>> strip_marker("Step 2: add 3 and 4")
    'add 3 and 4'
    >>> strip_marker("2) add 3 and 4")
    'add 3 and 4'
    >>> strip_marker("3.5 is the answer")  # a decimal is not a marker
    '3.5 is the answer'
    """
    return _LEAD_MARK.sub("", step, count=1).strip()


def _clean(pieces: list[str]) -> list[str]:
    out = []
    for p in pieces:
        p = " ".join(strip_marker(p).split())  # collapse inner whitespace and newlines
        if not _is_trivial(p):
            out.append(p)
    return out


def _group_lines(lines: list[str], starts: re.Pattern[str]) -> list[str]:
    """Items that begin at lines matching ``starts``; other lines continue the current item.

    Lines before the first item form their own piece (a preamble, kept if non-trivial).
    """
    items: list[str] = []
    current: list[str] = []
    for line in lines:
        if _is_trivial(line.strip()) and not starts.match(line):
            continue  # a rule, a fence or a heading never continues an item
        if starts.match(line) and current:
            items.append(" ".join(current))
            current = []
        current.append(line.strip())
    if current:
        items.append(" ".join(current))
    return items


def segment_steps(text: str) -> list[str]:
    """Split free text into reasoning steps with the heuristics in the module docstring.

    Args:
        text: a reasoning channel or a response.

    Returns:
        Non-trivial steps in order, markers stripped; ``[]`` for empty text.

    >>> segment_steps("Step 1: The grid is 2x3. Step 2: Place eggs. Answer: 3.")
    ['The grid is 2x3.', 'Place eggs. Answer: 3.']
    >>> segment_steps("Solution:\\n1. Add 2 and 3.\\n2. Multiply by 4.\\n---")
    ['Add 2 and 3.', 'Multiply by 4.']
    >>> segment_steps("The sum is 5. So the answer is 20.")
    ['The sum is 5.', 'So the answer is 20.']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}: {text!r}")
    text = text.strip()
    if not text:
        return []
    marks = list(_STEP_MARK.finditer(text))
    if len(marks) >= 2:
        cuts = [m.start() for m in marks]
        pieces = [text[: cuts[0]]] + [text[a:b] for a, b in zip(cuts, cuts[1:] + [len(text)])]
        return _clean(pieces)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for pattern in (_NUM_LINE, _BULLET_LINE):
        if sum(bool(pattern.match(ln)) for ln in lines) >= 2:
            return _clean(_group_lines(lines, pattern))
    if len(_clean(lines)) >= 2:
        return _clean(lines)
    return _clean(_SENTENCE_END.split(text))


def parse_crystal_json(text: str) -> tuple[list[str], str] | None:
    """Read CRYSTAL's ``{"reasoning_steps": [str, ...], "answer": ...}`` from a response.

    Tolerates code fences (```` ```json ... ``` ````) and prose around the object. Steps are stripped of
    markers and trivial ones dropped (as in ``segment_steps``); a non-string answer (a number) becomes
    its string form.

    Returns:
        ``(steps, answer)``, or None when no such object is present (then callers fall back to the step
        heuristics, SPEC section 3). A JSON object whose ``reasoning_steps`` is not a list of strings is
        not a CRYSTAL answer: None.

    >>> parse_crystal_json('```json\\n{"reasoning_steps": ["Step 1: 2+3=5", "5*4=20"], "answer": 20}\\n```')
    (['2+3=5', '5*4=20'], '20')
    >>> parse_crystal_json("The answer is 20.") is None
    True
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}: {text!r}")
    for obj in json_objects(text):
        parsed = _as_crystal(obj)
        if parsed is not None:
            return parsed
    return None


def _as_crystal(obj: object) -> tuple[list[str], str] | None:
    if not isinstance(obj, dict) or "reasoning_steps" not in obj or "answer" not in obj:
        return None
    steps = obj["reasoning_steps"]
    if not isinstance(steps, list) or not all(isinstance(s, str) for s in steps):
        return None
    answer = obj["answer"]
    if isinstance(answer, (dict, list)) or answer is None:
        return None
    return _clean(steps), answer if isinstance(answer, str) else json.dumps(answer)


def response_steps(response: str, reasoning: str | None = None) -> list[str]:
    """Predicted steps of one model output (SPEC section 3, with section 1's two channels).

    Order of preference:

    1. the CRYSTAL JSON object in the response y_m (its ``reasoning_steps``);
    2. the step heuristics on the reasoning channel r_m, when the model produced one (non-blank);
    3. the step heuristics on the response y_m.

    A truncated thinking response has ``response == ""``: its steps come from the reasoning channel, and
    the caller must still score the answer as missing (SPEC section 1).

    >>> response_steps('{"reasoning_steps": ["a b", "c d"], "answer": "C"}', reasoning="x y. z w.")
    ['a b', 'c d']
    >>> response_steps("The answer is C.", reasoning="- Look at it\\n- Compare sizes")
    ['Look at it', 'Compare sizes']
    >>> response_steps("First, look. Then compare.")
    ['First, look.', 'Then compare.']
    """
    if not isinstance(response, str):
        raise TypeError(f"response must be str, got {type(response).__name__}: {response!r}")
    if reasoning is not None and not isinstance(reasoning, str):
        raise TypeError(f"reasoning must be str or None, got {type(reasoning).__name__}: {reasoning!r}")
    parsed = parse_crystal_json(response)
    if parsed is not None:
        return parsed[0]
    if reasoning is not None and reasoning.strip():
        return segment_steps(reasoning)
    return segment_steps(response)
