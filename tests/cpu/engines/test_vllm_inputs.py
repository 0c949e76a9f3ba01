"""Tests for howeval.engines.vllm_inputs: data-URL images decoded to RGB PIL parts before the engine loop."""
from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from howeval.engines.base import ChatRequest
from howeval.engines.vllm_inputs import ImagePrepError, decode_image, has_images, prepare_images


def _url(im: Image.Image, fmt: str = "PNG") -> str:
    buf = io.BytesIO()
    im.save(buf, format=fmt)
    return f"data:image/{fmt.lower()};base64," + base64.b64encode(buf.getvalue()).decode()


def test_images_become_decoded_rgb_pil_parts_in_place_and_the_rest_is_kept():
    rgba = Image.new("RGBA", (5, 3), (10, 20, 30, 128))
    pal = Image.new("RGB", (4, 4), (200, 0, 0)).convert("P", palette=Image.Palette.ADAPTIVE)
    system = {"role": "system", "content": "be brief"}
    user = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": _url(rgba)}},
                                        {"type": "text", "text": "compare"},
                                        {"type": "image_url", "image_url": _url(pal, "GIF")}]}  # bare-string form
    req = ChatRequest(messages=[system, user], max_tokens=4, request_id="r", chat_template_kwargs={"enable_thinking": False})
    out = prepare_images(req)
    assert out is not req and req.messages[1] is user and user["content"][0]["type"] == "image_url"  # input untouched
    assert out.messages[0] is system  # a message without images is the same object
    parts = out.messages[1]["content"]
    assert [p["type"] for p in parts] == ["image_pil", "text", "image_pil"] and parts[1] == {"type": "text", "text": "compare"}
    a, b = parts[0]["image_pil"], parts[2]["image_pil"]
    # transparency is composited onto white, as vLLM's loader does: 128/255 of (10, 20, 30) over 255
    assert (a.mode, a.size, a.getpixel((0, 0))) == ("RGB", (5, 3), (132, 137, 142))
    assert (b.mode, b.size, b.getpixel((3, 3))) == ("RGB", (4, 4), (200, 0, 0))
    assert (out.request_id, out.max_tokens, out.chat_template_kwargs) == ("r", 4, {"enable_thinking": False})
    assert has_images(req) and not has_images(out)


def test_exif_orientation_is_applied_and_opaque_images_keep_their_pixels():
    im = Image.new("RGB", (6, 2), (0, 0, 255))
    im.putpixel((0, 0), (255, 0, 0))
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotate 90 degrees clockwise to display
    buf = io.BytesIO()
    im.save(buf, format="PNG", exif=exif)
    out = decode_image("data:image/png;base64," + base64.b64encode(buf.getvalue()).decode())
    assert out.size == (2, 6) and out.getpixel((1, 0)) == (255, 0, 0)  # the red corner is now top right
    grey = decode_image(_url(Image.new("L", (3, 3), 77)))
    assert (grey.mode, grey.getpixel((2, 2))) == ("RGB", (77, 77, 77))


def test_a_text_only_request_is_returned_as_is():
    req = ChatRequest(messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    assert prepare_images(req) is req and not has_images(req)


def test_bad_images_name_the_part_and_the_cause():
    req = ChatRequest(messages=[{"role": "user", "content": "x"}, {"role": "user", "content": [
        {"type": "text", "text": "q"}, {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}])
    with pytest.raises(ImagePrepError, match=r"^messages\[1\]\.content\[1\] \(image_url\): image_url must be a base64 "
                                             r"data URL \(data:<mime>;base64,\.\.\.\), got 'https://example.com/a.png'$"):
        prepare_images(req)
    png = _url(Image.new("RGB", (8, 8)))
    cut = png[: len(png) // 2]  # a truncated PNG: the header reads, the pixels do not
    cut += "=" * (-len(cut.split(",", 1)[1]) % 4)
    with pytest.raises(ValueError, match=r"^not a readable image \(\d+ bytes; OSError: "):
        decode_image(cut)
