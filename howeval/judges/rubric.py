"""The LLM pattern-judge rubric: prompt, message builder, strict output parser and repair prompt.

The paper's own judge prompt (its Appendix E) is not in the stored text; this rubric is written from the
operational definitions of SPEC section 1 (four labels, CoT-priority attribution, multimodal support for
PR). ``RUBRIC_VERSION`` names this wording; change it whenever the text changes.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from howeval.judges.verdict import LABELS, JudgeParseError
from howeval.parsing.text import json_candidates

RUBRIC_VERSION = "pattern-rubric-1.0"

PATTERN_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        k: {
            "type": "object",
            "properties": {"label": {"type": "boolean"}, "evidence": {"type": ["string", "null"]}},
            "required": ["label", "evidence"],
            "additionalProperties": False,
        }
        for k in LABELS
    },
    "required": list(LABELS),
    "additionalProperties": False,
}
"""JSON schema of the judge's answer (the four labels with evidence), for structured output."""

RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {"name": "pattern_labels", "schema": PATTERN_JSON_SCHEMA, "strict": True},
}
"""OpenAI ``response_format`` asking for :data:`PATTERN_JSON_SCHEMA` (vLLM's server maps it to guided JSON)."""

SYSTEM_PROMPT = """\
You are a strict annotator of response patterns in answers produced by multimodal AI assistants.
You judge ONLY the form and internal consistency of the assistant's user-facing RESPONSE to the user's
QUESTION (and image, when one is given). You do NOT judge whether the final answer is correct.

Assign four independent binary labels.

1. cot (chain-of-thought leakage): internal-process traces, draft analysis, self-correction, or explicit
   thinking markers appear in the final user-visible answer (e.g. "wait,", "hmm", "let me re-check",
   "actually, no", "I made a mistake", "<think>", narration such as "okay, so the user wants ...",
   exploratory dead ends, redundant intermediate analysis). A concise, polished explanation is NOT cot.
2. rep (repetition): the response unnecessarily repeats the same sentence, semantic content, structure,
   or conclusion in a way that harms efficiency or readability. Necessary restatement and limited
   emphasis (e.g. stating the final answer once more at the end) are NOT rep.
3. con (contradiction): the response retains mutually incompatible claims about the same object, value,
   or conclusion under the same conditions without resolving the conflict (e.g. two different final
   answers, a computed value that disagrees with the stated answer, "X is possible" and "X is not
   possible").
4. pr (performative reasoning): the response presents an unsupported reasoning wrapper ("based on
   careful analysis, ..."), cites evidence that does not entail its conclusion, or stages analysis
   without information gain. In multimodal tasks, relevant support must refer to observable objects,
   text, quantities, positions, relations, chart values, or paths in the image; generic statements
   about "the image" or "the pattern" are not support. A bare answer with no reasoning is NOT pr.

CoT-priority attribution: evidence already attributed to cot is not counted again as con or pr (a
contradiction or unsupported claim that lies inside a leaked reasoning trace counts only as cot). An
independent contradiction or unsupported justification outside the leaked trace still triggers con or
pr. rep may co-occur with cot when it is a distinct repetitive pattern.

Output ONLY one JSON object, with no other text, exactly of this form:
{"cot": {"label": true|false, "evidence": "<short quote from the response>" | null},
 "rep": {"label": true|false, "evidence": ... | null},
 "con": {"label": true|false, "evidence": ... | null},
 "pr":  {"label": true|false, "evidence": ... | null}}
"label" must be a JSON boolean. When a label is true, "evidence" quotes the shortest span of the
response that shows it; when false, "evidence" is null.
"""

USER_TEMPLATE = """\
QUESTION:
{question}

RESPONSE (the assistant's user-facing answer, to be labelled):
<<<RESPONSE
{response}
RESPONSE>>>

Return the JSON object with the four labels cot, rep, con, pr."""

_NO_IMAGE_NOTE = "(No image is provided to you; judge pr support by whether the response cites concrete, checkable content.)"


def build_pattern_messages(
    question: str, response: str, image_data_url: str | Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """OpenAI chat messages asking a judge for the four labels of ``response``.

    Args:
        question: the prompt q the model answered.
        response: the user-facing response y_m (never the reasoning channel r_m).
        image_data_url: ``data:image/...;base64,...`` for a judge with image access, or a list of them
            (every image of the sample, in order, before the text), else None (text-only, as PatternRM
            is served).

    Returns:
        ``[system, user]``; the user content is a list ``[image_url part, text part]`` with an image, and a
        plain string without one.

    >>> m = build_pattern_messages("How many?", "3")
    >>> [x["role"] for x in m], isinstance(m[1]["content"], str)
    (['system', 'user'], True)
    """
    if not isinstance(question, str) or not isinstance(response, str):
        raise TypeError(
            f"question and response must be str, got {type(question).__name__} and {type(response).__name__}"
        )
    text = USER_TEMPLATE.format(question=question.strip(), response=response)
    images = [image_data_url] if isinstance(image_data_url, str) else list(image_data_url or [])
    if not images:
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": text + "\n" + _NO_IMAGE_NOTE},
        ]
    for i, url in enumerate(images):
        if not isinstance(url, str) or not url.startswith(("data:image/", "http://", "https://")):
            raise ValueError(f"image_data_url {i + 1} must be a data:image/... or http(s) URL, got {str(url)[:40]!r}")
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": url}} for url in images]
            + [{"type": "text", "text": text}],
        },
    ]


def parse_pattern_output(text: str) -> tuple[dict[str, bool], dict[str, str | None]]:
    """Read a judge's output into ``(labels, evidence)``.

    Tolerates ```json fences and prose around the object; also accepts a bare boolean per label
    (``{"cot": true, ...}``). Requires all four keys and JSON booleans.

    Raises:
        JudgeParseError: with the specific reason (no JSON object, invalid JSON, missing keys, non-boolean
            label, ...).

    >>> parse_pattern_output('```json\\n{"cot": {"label": true, "evidence": "wait"}, "rep": {"label": false, '
    ...     '"evidence": null}, "con": {"label": false, "evidence": null}, "pr": {"label": false, "evidence": null}}\\n```')
    ({'cot': True, 'rep': False, 'con': False, 'pr': False}, {'cot': 'wait', 'rep': None, 'con': None, 'pr': None})
    """
    if not isinstance(text, str) or not text.strip():
        raise JudgeParseError("empty output")
    cands = json_candidates(text, nested=False)
    if not cands and "{" in text:
        raise JudgeParseError(f"no complete JSON object (unbalanced braces; truncated output?), ends {text.strip()[-60:]!r}")
    if not cands:
        raise JudgeParseError(f"no JSON object in output (starts {text.strip()[:60]!r})")
    lowered = {str(k).strip().lower(): v for k, v in _labelled_object(cands).items()}
    missing = [k for k in LABELS if k not in lowered]
    if missing:
        raise JudgeParseError(f"missing keys {missing}; present keys {sorted(lowered)}")
    labels: dict[str, bool] = {}
    evidence: dict[str, str | None] = {}
    for k in LABELS:
        labels[k], evidence[k] = _label_entry(k, lowered[k])
    return labels, evidence


def _labelled_object(cands: list[str]) -> dict:
    """The first candidate that parses as a JSON object holding at least one label key.

    Raises:
        JudgeParseError: the last candidate's reason (invalid JSON, or none of the label keys).
    """
    last_err: str | None = None
    for c in cands:
        try:
            val = json.loads(c)
        except json.JSONDecodeError as e:
            last_err = f"invalid JSON: {e.msg} at char {e.pos}"
            continue
        if isinstance(val, dict) and any(k in val for k in LABELS):
            return val
        last_err = f"JSON object has none of the keys {list(LABELS)} (keys: {sorted(val)[:8] if isinstance(val, dict) else type(val).__name__})"
    raise JudgeParseError(last_err or "no JSON object with the label keys")


def _label_entry(k: str, entry: object) -> tuple[bool, str | None]:
    """``(label, evidence)`` of one label's entry: a bare boolean (no evidence) or ``{label, evidence}``
    (evidence kept only when the label is true; a non-string evidence as its JSON text).

    Raises:
        JudgeParseError: the entry is neither, has no ``label``, or its label is not a JSON boolean.
    """
    if isinstance(entry, bool):
        return entry, None
    if not isinstance(entry, dict):
        raise JudgeParseError(f"{k!r} must be an object {{label, evidence}} or a boolean, got {type(entry).__name__}")
    if "label" not in entry:
        raise JudgeParseError(f"{k!r} has no 'label' field (fields: {sorted(entry)})")
    lab = entry["label"]
    if not isinstance(lab, bool):
        raise JudgeParseError(f"{k}.label must be a JSON boolean, got {lab!r}")
    ev = entry.get("evidence")
    if ev is not None and not isinstance(ev, str):
        ev = json.dumps(ev, ensure_ascii=False)
    return lab, ev if lab else None


REPAIR_TEMPLATE = """\
Your previous output could not be used: {error}.
Reply again with ONLY the JSON object, no other text:
{{"cot": {{"label": true|false, "evidence": str|null}}, "rep": {{...}}, "con": {{...}}, "pr": {{...}}}}
All four keys are required and every "label" must be a JSON boolean (true or false)."""


def build_repair_messages(
    original_messages: list[dict[str, Any]], bad_output: str, error: str
) -> list[dict[str, Any]]:
    """The original conversation, the judge's unusable output as an assistant turn, and a user turn that
    names the problem and restates the required format (one repair attempt)."""
    return [
        *original_messages,
        {"role": "assistant", "content": bad_output if bad_output else "(empty)"},
        {"role": "user", "content": REPAIR_TEMPLATE.format(error=error)},
    ]


__all__ = [
    "PATTERN_JSON_SCHEMA",
    "RESPONSE_FORMAT",
    "RUBRIC_VERSION",
    "SYSTEM_PROMPT",
    "USER_TEMPLATE",
    "build_pattern_messages",
    "build_repair_messages",
    "parse_pattern_output",
]
