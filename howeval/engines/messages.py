"""Helpers on OpenAI-format chat messages shared by the local engines."""
from __future__ import annotations

from typing import Any


def flatten_text(messages: list[dict]) -> tuple[list[dict], int]:
    """Messages with list content collapsed to plain text, for text-only chat templates.

    Returns ``(messages, n_images_dropped)``; image parts are removed (the caller records that the
    model did not see them). Tool messages keep their text content.
    """
    out, dropped = [], 0
    for m in messages:
        c = m.get("content")
        if isinstance(c, list):
            texts = [p.get("text", "") for p in c if p.get("type") == "text"]
            dropped += sum(1 for p in c if p.get("type") in ("image_url", "image"))
            c = "\n".join(t for t in texts if t)
        out.append({"role": m["role"], "content": c or ""})
    return out, dropped


def count_images(messages: list[dict]) -> int:
    """Number of image parts in the messages."""
    return sum(1 for m in messages if isinstance(m.get("content"), list)
               for p in m["content"] if p.get("type") in ("image_url", "image"))


def redact_images(messages: list[dict], image_ids: list[str] | None = None) -> list[dict]:
    """The messages with every image part replaced by ``{"type": "image", "image_id": ...}`` (no bytes).

    ``image_ids`` name the images in the order they appear (a sample's ``image_names``); images beyond
    them are named ``image-<k>`` (k from 0). Text parts, roles and other fields are kept as sent.

    >>> redact_images([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:..."}},
    ...                {"type": "text", "text": "Q"}]}], ["a.png"])
    [{'role': 'user', 'content': [{'type': 'image', 'image_id': 'a.png'}, {'type': 'text', 'text': 'Q'}]}]
    """
    ids = list(image_ids or [])
    k = 0
    out = []
    for m in messages:
        c = m.get("content")
        if isinstance(c, list):
            parts = []
            for p in c:
                if p.get("type") in ("image_url", "image"):
                    parts.append({"type": "image", "image_id": ids[k] if k < len(ids) else f"image-{k}"})
                    k += 1
                else:
                    parts.append(p)
            m = {**m, "content": parts}
        out.append(m)
    return out


def prompt_record(request, image_ids: list[str] | None = None) -> str:
    """The prompt as sent, as a JSON string for the response row's ``prompt`` column.

    ``request`` is a ``howeval.engines.base.ChatRequest``. The record holds the messages (system prompt
    included, images replaced by their ids: :func:`redact_images`) and the request settings
    (``max_tokens``, ``temperature``, ``top_p`` (None: the model's own default), ``top_k`` / ``min_p`` /
    ``presence_penalty`` / ``repetition_penalty`` when set, ``seed``, ``chat_template_kwargs``,
    ``reasoning_effort``, ``extra_body``, ``tools``). The answer instruction is the last line of the user
    text. The chat template itself is the engine's; its kwargs are recorded.
    """
    import json

    extra = {k: getattr(request, k) for k in ("top_k", "min_p", "presence_penalty", "repetition_penalty")
             if getattr(request, k, None) is not None}
    return json.dumps({"messages": redact_images(request.messages, image_ids), "max_tokens": request.max_tokens,
                       "temperature": request.temperature, "top_p": request.top_p, **extra, "seed": request.seed,
                       "chat_template_kwargs": request.chat_template_kwargs or None,
                       "reasoning_effort": request.reasoning_effort, "extra_body": request.extra_body or None,
                       "tools": request.tools}, ensure_ascii=False, default=str)


def decode_data_url(url: str) -> bytes:
    """The bytes of a ``data:<mime>;base64,...`` URL.

    Raises:
        ValueError: not a base64 data URL (local engines cannot fetch http(s) images offline).
    """
    import base64

    head, sep, payload = url.partition(",")
    if not sep or not head.startswith("data:") or not head.endswith(";base64"):
        raise ValueError(f"image_url must be a base64 data URL (data:<mime>;base64,...), got {url[:48]!r}")
    return base64.b64decode(payload)


def to_template_parts(messages: list[dict]) -> tuple[list[dict], list[bytes]]:
    """Messages for a multimodal chat template, plus the image bytes in order of appearance.

    Each OpenAI ``image_url`` part (a data URL) becomes ``{"type": "image"}`` in place, and its bytes are
    collected, so a processor gets one image per placeholder. Text parts stay; ``None`` content
    (an assistant turn with only tool calls) becomes ``""``. Works on any role, so tool-result images
    sent back in a user message reach the model too.

    Raises:
        ValueError: an image part that is not a base64 data URL.
    """
    out, images = [], []
    for m in messages:
        c = m.get("content")
        if isinstance(c, list):
            parts = []
            for p in c:
                t = p.get("type")
                if t == "image_url":
                    url = p["image_url"]["url"] if isinstance(p.get("image_url"), dict) else p.get("image_url")
                    images.append(decode_data_url(url))
                    parts.append({"type": "image"})
                elif t == "text":
                    parts.append({"type": "text", "text": p.get("text", "")})
            c = parts
        out.append({"role": m["role"], "content": c if c is not None else ""})
    return out, images


def message_text(x: Any, role: str | None = None) -> str:
    """Text of a prompt or completion: a plain string, or the last message's content in a chat list.

    ``role`` picks the last message with that role (``"assistant"`` for completions, ``"user"`` for
    prompts); content given as parts keeps the text parts, joined by newlines.

    >>> message_text([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "A"}], "assistant")
    'A'
    >>> message_text([{"role": "assistant", "content": [{"type": "text", "text": "B"}]}], "assistant")
    'B'
    """
    if isinstance(x, str):
        return x
    if isinstance(x, dict):
        x = [x]
    if not isinstance(x, (list, tuple)) or not x:
        raise TypeError(f"expected a string or a non-empty list of chat messages, got {type(x).__name__}: {str(x)[:80]!r}")
    msgs = [m for m in x if isinstance(m, dict) and (role is None or m.get("role") == role)]
    if not msgs:
        raise ValueError(f"no message with role={role!r} in {str(x)[:120]!r}")
    content = msgs[-1].get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    raise TypeError(f"message content must be str or a list of parts, got {type(content).__name__}")
