"""Tests for howeval.benchmarks.adapt.tools: pixel-exact execution, bad calls as errors, schemas, variants."""
from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image, ImageEnhance

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
