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


def split_reasoning(
    raw: str,
    *,
    finish_reason: str = "stop",
    server_reasoning: str | None = None,
    opener_in_template: bool = False,
) -> Split:
    """Separate ``<think>...</think>`` (or ``<thinking>``, ``<reasoning>``) from the answer.

    Args:
        raw: generated text (for servers with a reasoning parser: the ``content`` field).
        finish_reason: the engine's finish reason; ``"length"`` with an unclosed tag means truncated.
        server_reasoning: the server's ``reasoning_content``/``reasoning`` field when it has one; it wins.
        opener_in_template: the chat template pre-fills the reasoning opener (``<think>``), so the
            generated text starts inside the reasoning and carries no opening tag (the mode's
            ``reasoning_opener_in_template: true``, or detected from the rendered prompt).

    Returns:
        Split. Rules: a closing tag with no opening one (templates that pre-fill ``<think>``) treats
        everything before it as reasoning; an opening tag never closed gives ``truncated=True`` and
        ``response=""`` whatever the finish reason, since the answer never started. With
        ``opener_in_template``, a text cut by the length limit (``finish_reason="length"``) before any
        closing tag is truncated the same way (``response=""``): it never becomes the answer.

    >>> split_reasoning("<think>2+2=4</think> The answer is 4.")
    Split(reasoning='2+2=4', response='The answer is 4.', truncated=False)
    >>> split_reasoning("<think>let me see", finish_reason="length")
    Split(reasoning='let me see', response='', truncated=True)
    >>> split_reasoning("so the answer is 4", finish_reason="length", opener_in_template=True)
    Split(reasoning='so the answer is 4', response='', truncated=True)
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
    if opener_in_template and finish_reason == "length":
        # no tag at all: the template opened the reasoning and the length limit cut it before it closed
        return Split(text.strip() or None, "", True)
    return Split(None, text.strip(), False)


_TAG_RE = re.compile(r"</?(think|thinking|reasoning)>", re.IGNORECASE)


def template_opens_reasoning(prompt: str) -> bool:
    """True when a rendered prompt ends with a reasoning opener (the template pre-fills ``<think>``).

    >>> template_opens_reasoning("<|im_start|>assistant\\n<think>\\n"), template_opens_reasoning("assistant\\n")
    (True, False)
    """
    tail = prompt.rstrip().lower()
    return any(tail.endswith(o) for o in OPEN_TAGS)


def closes_unopened_reasoning(text: str) -> bool:
    """True when ``text`` closes a reasoning block it never opened (``... </think> answer``): the chat
    template pre-filled the opener. Engines that cannot render the template (a server) learn it this way.

    >>> closes_unopened_reasoning("2+2=4 </think> The answer is 4."), closes_unopened_reasoning("<think>x</think> y")
    (True, False)
    """
    low = (text or "").lower()
    return any(c in low and o not in low for o, c in zip(OPEN_TAGS, CLOSE_TAGS))


def template_prefills_reasoning(render, chat_template_kwargs: dict | None = None) -> bool:
    """True when the chat template, rendered for a one-turn chat with ``chat_template_kwargs``, ends with a
    reasoning opener (:func:`template_opens_reasoning`). ``render(messages, **kwargs) -> str`` renders
    a prompt with the generation prompt added (a tokenizer's ``apply_chat_template`` with
    ``tokenize=False, add_generation_prompt=True``). A template that fails to render says False.

    >>> template_prefills_reasoning(lambda msgs, **kw: "<|im_start|>assistant\\n" + ("<think>\\n" if kw.get("enable_thinking") else ""),
    ...                             {"enable_thinking": True})
    True
    """
    try:
        prompt = render([{"role": "user", "content": "Hi"}], **(chat_template_kwargs or {}))
    except Exception:  # noqa: BLE001 - a template that needs other inputs (any error): no evidence of a pre-filled opener
        return False
    return isinstance(prompt, str) and template_opens_reasoning(prompt)


def _strip_tags(s: str) -> str:
    return _TAG_RE.sub("", s)
