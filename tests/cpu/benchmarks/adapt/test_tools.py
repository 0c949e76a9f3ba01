"""AdaptMMBench visual tools and tool-call parsing: pixel-exact execution, bad calls as errors."""
from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image, ImageEnhance

from howeval.benchmarks.adapt.toolcalls import parse_openai_tool_calls, parse_text_tool_calls, parse_tool_calls, strip_tool_calls
from howeval.benchmarks.adapt.tools import TOOL_SCHEMAS, TOOLS, make_variant, rotate, run_tool, transform_boxes, zoom_in


@pytest.fixture
def arr() -> np.ndarray:
    """A 12x20 (H x W) RGB image whose every pixel is distinct."""
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, size=(12, 20, 3), dtype=np.uint8)


@pytest.fixture
def img(arr) -> Image.Image:
    return Image.fromarray(arr, "RGB")


@pytest.mark.parametrize("box,scale", [([3, 2, 11, 9], 1), ([3, 2, 11, 9], 2), ([0, 0, 20, 12], 3), ([19, 11, 20, 12], 4)])
def test_zoom_in_is_exact_crop_then_pixel_repeat(img, arr, box, scale):
    x0, y0, x1, y1 = box
    expected = arr[y0:y1, x0:x1].repeat(scale, axis=0).repeat(scale, axis=1)
    res = run_tool(img, "zoom_in", {"box": box, "scale": scale})
    assert res.ok, res.error
    np.testing.assert_array_equal(np.asarray(res.image), expected)


def test_zoom_in_default_scale_is_2(img, arr):
    res = run_tool(img, "zoom_in", {"box": [1, 1, 4, 3]})
    np.testing.assert_array_equal(np.asarray(res.image), arr[1:3, 1:4].repeat(2, 0).repeat(2, 1))


@pytest.mark.parametrize("deg,k", [(90, 1), (180, 2), (270, 3), (-90, 3), (360, 0)])
def test_rotate_matches_np_rot90(img, arr, deg, k):
    res = run_tool(img, "rotate", {"degrees": deg})
    assert res.ok
    np.testing.assert_array_equal(np.asarray(res.image), np.rot90(arr, k))


def test_rotate_non_right_angle_expands_canvas(img):
    out = rotate(img, 45)
    assert out.size[0] > img.size[0] and out.size[1] > img.size[1]


def test_contrast_zero_gives_uniform_gray_at_mean_luminance(img):
    out = np.asarray(TOOLS["contrast"].fn(img, 0.0))
    gray = np.asarray(img.convert("L"), dtype=float)
    assert (out == out[0, 0]).all()  # uniform
    assert out[0, 0, 0] == out[0, 0, 1] == out[0, 0, 2]  # gray
    assert abs(int(out[0, 0, 0]) - gray.mean()) <= 0.5 + 1e-9


def test_contrast_and_brightness_match_imageenhance(img):
    np.testing.assert_array_equal(
        np.asarray(run_tool(img, "contrast", {"factor": 1.7}).image), np.asarray(ImageEnhance.Contrast(img).enhance(1.7))
    )
    np.testing.assert_array_equal(
        np.asarray(run_tool(img, "brightness", {"factor": 0.5}).image), np.asarray(ImageEnhance.Brightness(img).enhance(0.5))
    )
    np.testing.assert_array_equal(np.asarray(run_tool(img, "brightness", {"factor": 1}).image), np.asarray(img))


@pytest.mark.parametrize(
    "name,args,fragment",
    [
        ("zoom_in", {"box": [0, 0, 21, 5]}, "outside"),
        ("zoom_in", {"box": [-1, 0, 5, 5]}, "outside"),
        ("zoom_in", {"box": [5, 5, 5, 9]}, "empty or inverted"),
        ("zoom_in", {"box": [8, 5, 2, 9]}, "empty or inverted"),
        ("zoom_in", {"box": [0, 0, 5]}, "4 numbers"),
        ("zoom_in", {"box": ["a", 0, 5, 5]}, "4 numbers"),
        ("zoom_in", {"box": [0, 0, 5, 5], "scale": 0}, "> 0"),
        ("zoom_in", {"box": [0, 0, 5, 5], "scale": 100}, "scale"),
        ("zoom_in", {}, "missing required argument 'box'"),
        ("zoom_in", {"box": [0, 0, 5, 5], "zoom": 2}, "unexpected"),
        ("zoom_in", [0, 0, 5, 5], "JSON object"),
        ("rotate", {"degrees": "ninety"}, "number"),
        ("rotate", {"degrees": float("nan")}, "finite"),
        ("contrast", {"factor": 0}, "> 0"),
        ("contrast", {"factor": -1.5}, "> 0"),
        ("brightness", {"factor": True}, "number"),
        ("sharpen", {"factor": 2}, "unknown tool 'sharpen'"),
    ],
)
def test_bad_calls_return_errors_not_exceptions(img, name, args, fragment):
    res = run_tool(img, name, args)
    assert res.image is None and not res.ok
    assert fragment in res.error, res.error


def test_unknown_tool_error_lists_registered(img):
    err = run_tool(img, "blur", {}).error
    for name in TOOLS:
        assert name in err


def test_schemas_are_openai_format():
    names = [s["function"]["name"] for s in TOOL_SCHEMAS]
    assert names == list(TOOLS)
    for s in TOOL_SCHEMAS:
        assert s["type"] == "function"
        params = s["function"]["parameters"]
        assert params["type"] == "object" and set(params["required"]) <= set(params["properties"])
        json.dumps(s)  # serialisable
    zoom = next(s for s in TOOL_SCHEMAS if s["function"]["name"] == "zoom_in")["function"]["parameters"]
    assert zoom["required"] == ["box"] and zoom["properties"]["box"]["minItems"] == 4


def test_variants(img, arr):
    np.testing.assert_array_equal(np.asarray(make_variant(img, "rotate")), np.rot90(arr, 1))
    np.testing.assert_array_equal(np.asarray(make_variant(img, "rotate", degrees=180)), np.rot90(arr, 2))
    low = np.asarray(make_variant(img, "low_contrast", factor=0.2), dtype=float)
    assert low.std() < np.asarray(arr, dtype=float).std() * 0.3
    dark = np.asarray(make_variant(img, "dark"), dtype=float)
    assert dark.mean() < arr.mean() * 0.5
    with pytest.raises(ValueError, match="unknown variant"):
        make_variant(img, "blur")
    with pytest.raises(ValueError):
        make_variant(img, "low_contrast", factor=0)


@pytest.mark.parametrize("deg", [90, 180, 270, -90, 0])
def test_transform_boxes_follow_rotation(img, arr, deg):
    box = [3, 2, 11, 9]
    (nb,) = transform_boxes([box], img.size, deg)
    rotated = rotate(img, deg)
    np.testing.assert_array_equal(np.asarray(zoom_in(rotated, nb, 1)), np.rot90(arr[2:9, 3:11], (deg // 90) % 4))


# ----------------------------------------------------------------------------- parsing
def test_parse_openai_tool_calls():
    calls = parse_openai_tool_calls(
        [
            {"id": "c1", "type": "function", "function": {"name": "zoom_in", "arguments": '{"box": [1, 2, 3, 4]}'}},
            {"id": "c2", "type": "function", "function": {"name": "rotate", "arguments": "{degrees: 90"}},
            {"id": "c3", "type": "function", "function": {"name": "contrast", "arguments": {"factor": 2}}},
            {"id": "c4", "type": "function", "function": {"name": "rotate", "arguments": "[90]"}},
        ]
    )
    assert [(c.name, c.id) for c in calls] == [("zoom_in", "c1"), ("rotate", "c2"), ("contrast", "c3"), ("rotate", "c4")]
    assert calls[0].arguments == {"box": [1, 2, 3, 4]} and calls[0].parse_error is None
    assert calls[1].arguments is None and "not valid JSON" in calls[1].parse_error
    assert calls[2].arguments == {"factor": 2}
    assert "JSON object" in calls[3].parse_error


def test_parse_text_tool_calls_both_formats_in_order():
    text = (
        "I need a closer look.\n"
        "TOOL: rotate(degrees=-90)\n"
        '<tool_call>{"name": "zoom_in", "arguments": {"box": [10, 20, 30, 40], "scale": 3}}</tool_call>\n'
        "- TOOL: contrast(factor=1.5)\n"
    )
    calls = parse_text_tool_calls(text)
    assert [(c.name, c.arguments, c.source) for c in calls] == [
        ("rotate", {"degrees": -90}, "line"),
        ("zoom_in", {"box": [10, 20, 30, 40], "scale": 3}, "tag"),
        ("contrast", {"factor": 1.5}, "line"),
    ]
    assert all(c.parse_error is None for c in calls)
    assert strip_tool_calls(text) == "I need a closer look."


@pytest.mark.parametrize(
    "text,name,fragment",
    [
        ("TOOL: zoom_in([1, 2, 3, 4])", "zoom_in", "keyword"),
        ("TOOL: zoom_in(box=[1, 2, 3, 4]", "zoom_in", "not a call"),
        ("TOOL: zoom_in(box=x)", "zoom_in", "not a literal"),
        ('<tool_call>{"name": "zoom_in", "arguments": {"box": [1, 2]</tool_call>', "zoom_in", "not valid JSON"),
        ('<tool_call>{"arguments": {}}</tool_call>', "", "no string 'name'"),
        ('<tool_call>{"name": "rotate", "arguments": "{\\"degrees\\": 90}"}</tool_call>', "rotate", None),
    ],
)
def test_parse_text_bad_or_odd_calls(text, name, fragment):
    (call,) = parse_text_tool_calls(text)
    assert call.name == name
    if fragment is None:
        assert call.parse_error is None and call.arguments == {"degrees": 90}
    else:
        assert fragment in call.parse_error


def test_parse_tool_calls_prefers_openai_and_handles_plain_answers():
    tc = [{"id": "a", "type": "function", "function": {"name": "rotate", "arguments": '{"degrees": 90}'}}]
    assert [c.source for c in parse_tool_calls("TOOL: contrast(factor=2)", tc)] == ["openai"]
    assert parse_tool_calls("The answer is B.", None) == []
    assert parse_tool_calls("", []) == []
    assert parse_tool_calls(None) == []
