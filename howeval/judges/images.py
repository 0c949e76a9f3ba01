"""Images for image-aware LLM judges: every image of the sample, as a data URL a chat server accepts.

A judge must see what the policy saw (SPEC section 1: PR support is judged against the image), so every
image of the sample goes to the judge, in order. OpenAI-compatible servers accept PNG, JPEG, WebP and
GIF; other formats (BMP, TIFF, ICO, ...) are converted to PNG with Pillow (JPEG when the image has no
alpha channel and is large, to keep requests small). An image Pillow cannot read (0 bytes, truncated,
not an image) raises :class:`BadImage` naming the image, so the loader reports the row as bad before
the sweep starts instead of a judge crashing in the middle of it.
"""
from __future__ import annotations

import base64
import io
from collections.abc import Sequence

__all__ = ["ACCEPTED_MIME", "BadImage", "check_image", "sniff_mime", "judge_image_url", "judge_image_urls"]

ACCEPTED_MIME = ("image/png", "image/jpeg", "image/webp", "image/gif")
"""Formats sent as they are (what OpenAI-compatible servers and vLLM accept)."""

JPEG_ABOVE_PIXELS = 4_000_000
"""Converted images without alpha and larger than this many pixels go as JPEG (quality 90), others as PNG."""


class BadImage(ValueError):
    """An image no judge can be sent: the message names the image and why (empty, unreadable)."""


def sniff_mime(data: bytes) -> str | None:
    """The MIME type of PNG, JPEG, GIF or WebP bytes from their header, else None.

    >>> sniff_mime(b"\\x89PNG\\r\\n\\x1a\\n...."), sniff_mime(b"BM...")
    ('image/png', None)
    """
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "image/png"
    if data[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _convert(data: bytes, name: str) -> tuple[str, bytes]:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            has_alpha = im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info)
            if not has_alpha and im.width * im.height > JPEG_ABOVE_PIXELS:
                out, mime, kw = im.convert("RGB"), "image/jpeg", {"format": "JPEG", "quality": 90}
            else:
                keep = ("1", "L", "LA", "RGB", "RGBA", "P", "I;16")
                out, mime, kw = (im if im.mode in keep else im.convert("RGBA" if has_alpha else "RGB")), "image/png", {"format": "PNG"}
            buf = io.BytesIO()
            out.save(buf, **kw)
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as e:
        raise BadImage(f"{name}: not a readable image ({type(e).__name__}: {str(e)[:120]})") from None
    return mime, buf.getvalue()


def _check_readable(data: bytes, name: str) -> None:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as im:
            im.verify()
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as e:
        raise BadImage(f"{name}: not a readable image ({type(e).__name__}: {str(e)[:120]})") from None


def check_image(data: bytes, name: str = "image") -> None:
    """Raise :class:`BadImage` naming ``name`` when ``data`` is empty or not an image Pillow can read.

    Used by the benchmark loader, so an unreadable image is a bad row at load, not a judge crash later.
    """
    if not data:
        raise BadImage(f"{name}: empty (0 bytes)")
    _check_readable(bytes(data), name)


def judge_image_url(data: bytes, name: str = "image") -> str:
    """``data:<mime>;base64,...`` of one image, converted to PNG/JPEG when its format is not accepted.

    Args:
        data: the image file's bytes.
        name: how the image is named in errors (``"sample mathv:12 image 2"``).

    Raises:
        BadImage: empty bytes, or bytes Pillow cannot read.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise BadImage(f"{name}: expected image bytes, got {type(data).__name__}")
    data = bytes(data)
    if not data:
        raise BadImage(f"{name}: empty (0 bytes)")
    mime = sniff_mime(data)
    if mime is None:
        mime, data = _convert(data, name)
    else:
        _check_readable(data, name)
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def judge_image_urls(images: Sequence[bytes] | None, name: str = "sample") -> list[str]:
    """Data URLs of every image of a sample, in order (``[]`` for a text-only sample).

    Raises:
        BadImage: an image is empty or unreadable; the message names ``name`` and the image's position.
    """
    return [judge_image_url(b, f"{name} image {i + 1}") for i, b in enumerate(images or [])]
