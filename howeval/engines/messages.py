"""Helpers on OpenAI-format chat messages shared by the local engines."""
from __future__ import annotations


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
