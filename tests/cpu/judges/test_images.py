"""Image-aware LLM judges see every image of the sample as PNG/JPEG data URLs (issue 12)."""
from __future__ import annotations

import base64
import io
import json
import re

import pytest
from PIL import Image

from howeval.benchmarks.loaders import BadRowError, load_benchmark
from howeval.engines.registry import build_engine
from howeval.judges.base import JudgeItem
from howeval.judges.images import BadImage, check_image, judge_image_url, judge_image_urls
from howeval.judges.llm import LLMPatternJudge
from howeval.judges.rubric import RESPONSE_FORMAT

from fakes.judge_server import FakeJudgeServer, expected_labels


def image_bytes(fmt: str, size=(4, 3), color=(200, 10, 10)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format=fmt)
    return buf.getvalue()


def decode(url: str) -> tuple[str, Image.Image]:
    head, b64 = url.split(",", 1)
    im = Image.open(io.BytesIO(base64.b64decode(b64)))
    im.load()
    return head, im


@pytest.mark.parametrize("fmt,mime", [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("BMP", "image/png"),
                                      ("TIFF", "image/png"), ("GIF", "image/gif"), ("WEBP", "image/webp")])
def test_each_format_goes_out_as_an_accepted_data_url(fmt, mime):
    head, im = decode(judge_image_url(image_bytes(fmt)))
    assert head == f"data:{mime};base64"
    assert im.size == (4, 3)


def test_converted_pixels_are_kept():
    _, im = decode(judge_image_url(image_bytes("BMP", color=(1, 2, 3))))
    assert im.convert("RGB").getpixel((0, 0)) == (1, 2, 3)


@pytest.mark.parametrize("data,why", [(b"", "empty (0 bytes)"), (b"not an image at all", "not a readable image"),
                                      (b"\x89PNG\r\n\x1a\n" + b"\x00" * 20, "not a readable image")])
def test_unreadable_images_are_named(data, why):
    with pytest.raises(BadImage, match="^" + re.escape(f"sample s1 image 2: {why}")):
        judge_image_urls([image_bytes("PNG"), data], "sample s1")
    with pytest.raises(BadImage):
        check_image(data)


def test_unreadable_image_is_a_bad_row_at_load(tmp_path):
    (tmp_path / "ok.png").write_bytes(image_bytes("PNG"))
    (tmp_path / "empty.png").write_bytes(b"")
    rows = [{"uid": "a", "question": "q", "answer": "1", "answer_type": "integer_number", "category": "stem_math",
             "image": "ok.png"},
            {"uid": "b", "question": "q", "answer": "1", "answer_type": "integer_number", "category": "stem_math",
             "images": ["ok.png", "empty.png"]}]
    (tmp_path / "m.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(BadRowError, match=r"m\.jsonl:2 \(uid='b'\): field 'image': .*empty\.png: empty \(0 bytes\)"):
        load_benchmark(str(tmp_path / "m.jsonl"))
    res = load_benchmark(str(tmp_path / "m.jsonl"), skip_bad_rows=True)
    assert [s["sample_id"] for s in res.samples] == ["a"] and res.bad_rows[0]["uid"] == "b"


def test_two_images_and_a_bmp_reach_the_judge_as_png_or_jpeg():
    two = judge_image_urls([image_bytes("PNG"), image_bytes("JPEG", size=(8, 8))], "s2")
    bmp = judge_image_urls([image_bytes("BMP")], "s3")
    items = [JudgeItem("How many?", "There are 3 apples.", image_data_urls=tuple(two)),
             JudgeItem("What color?", "It is red.", image_data_urls=tuple(bmp))]
    with FakeJudgeServer(fault_rate=0.0) as srv:
        engine = build_engine("openai", "fake-judge", {"base_url": srv.base_url, "max_retries": 0})
        judge = LLMPatternJudge(engine, "fake", "1", with_image=True, max_tokens=64)
        verdicts = judge.judge_batch(items)
    assert [v.labels for v in verdicts] == [expected_labels(it.response) for it in items]
    calls = sorted(srv.calls, key=lambda c: c.text)
    sent = {c.text: c.images for c in calls}
    assert [u.split(";")[0] for u in sent["There are 3 apples."]] == ["data:image/png", "data:image/jpeg"]
    assert [u.split(";")[0] for u in sent["It is red."]] == ["data:image/png"]  # the BMP, converted
    assert sent["There are 3 apples."] == list(two) and sent["It is red."] == list(bmp)
    assert all(c.response_format == RESPONSE_FORMAT for c in calls)  # structured output asked for


def test_structured_output_refused_falls_back_without_it():
    items = [JudgeItem("q", f"response {i}") for i in range(3)]
    with FakeJudgeServer(fault_rate=0.0, reject_response_format=True) as srv:
        engine = build_engine("openai", "fake-judge", {"base_url": srv.base_url, "max_retries": 0})
        judge = LLMPatternJudge(engine, "fake", "1", with_image=False, max_tokens=64)
        verdicts = judge.judge_batch(items)
        assert [v.labels for v in verdicts] == [expected_labels(it.response) for it in items]
        assert sum(c.response_format is not None for c in srv.calls) == 3  # refused once each
        assert judge.structured_output is False
        srv.reset_calls()
        judge.judge_batch(items[:1])  # later batches do not ask again
        assert [c.response_format for c in srv.calls] == [None]
