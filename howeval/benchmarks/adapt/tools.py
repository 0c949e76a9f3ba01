"""Visual tools for AdaptMMBench's adaptive mode (SPEC section 4), executed with Pillow.

Four tools a model may call on the image it is looking at:

- ``zoom_in(box=[x0, y0, x1, y1], scale=2)``: crop the box (pixel coordinates of the current image,
  ``x1``/``y1`` exclusive) and upscale it by ``scale`` with nearest-neighbour resampling, so every
  output pixel is a copy of an input pixel (tests compare arrays exactly).
- ``rotate(degrees)``: counter-clockwise rotation with ``expand=True`` (multiples of 90 are exact
  transposes; other angles fill the corners with black).
- ``contrast(factor)`` / ``brightness(factor)``: ``PIL.ImageEnhance`` with the given factor
  (1 = unchanged, < 1 less, > 1 more).

``TOOLS`` maps a name to a :class:`ToolSpec` (function + argument schema); ``TOOL_SCHEMAS`` is the same
registry in OpenAI ``tools`` format; :func:`run_tool` validates a model's call and runs it, returning a
:class:`ToolResult` with either an image or an error message. A bad call (unknown tool, missing,
unexpected or ill-typed argument, a box that is empty, inverted or outside the image, a factor <= 0)
is an *ineffective call*: it is reported, never raised.

:func:`make_variant` builds the tool-requiring variants of an item (rotation, low contrast, darkening)
and :func:`transform_boxes` carries evidence boxes through a right-angle rotation.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PIL import Image, ImageEnhance

MAX_SCALE = 8.0
"""Largest zoom factor a call may ask for."""

MAX_OUTPUT_PIXELS = 4096 * 4096
"""A tool result larger than this is refused (guards memory against a huge ``scale``)."""


# ----------------------------------------------------------------------------- the operations
def zoom_in(img: Image.Image, box: list[float], scale: float = 2.0) -> Image.Image:
    """Crop ``box = [x0, y0, x1, y1]`` (pixels, half-open) and upscale by ``scale`` (nearest neighbour).

    Float coordinates are rounded to the nearest pixel. Raises ValueError on an empty, inverted or
    out-of-bounds box (``0 <= x0 < x1 <= width``, ``0 <= y0 < y1 <= height``) or ``scale`` outside
    ``(0, MAX_SCALE]``.

    >>> im = Image.new("L", (10, 10))
    >>> zoom_in(im, [2, 3, 6, 5], scale=2).size
    (8, 4)
    """
    x0, y0, x1, y1 = check_box(box, img.size)
    scale = float(scale)
    if not (0 < scale <= MAX_SCALE) or not math.isfinite(scale):
        raise ValueError(f"scale must be in (0, {MAX_SCALE}], got {scale}")
    crop = img.crop((x0, y0, x1, y1))
    w, h = max(1, round((x1 - x0) * scale)), max(1, round((y1 - y0) * scale))
    if w * h > MAX_OUTPUT_PIXELS:
        raise ValueError(f"zoomed image {w}x{h} exceeds {MAX_OUTPUT_PIXELS} pixels; use a smaller scale")
    if (w, h) == crop.size:
        return crop
    return crop.resize((w, h), resample=Image.Resampling.NEAREST)


def rotate(img: Image.Image, degrees: float) -> Image.Image:
    """Rotate counter-clockwise by ``degrees`` with ``expand=True`` (the whole image stays visible).

    >>> rotate(Image.new("L", (4, 2)), 90).size
    (2, 4)
    """
    degrees = float(degrees)
    if not math.isfinite(degrees):
        raise ValueError(f"degrees must be finite, got {degrees}")
    return img.rotate(degrees, expand=True)


def contrast(img: Image.Image, factor: float) -> Image.Image:
    """``ImageEnhance.Contrast(img).enhance(factor)``: 0 gives a uniform gray at the mean luminance, 1 the
    original. Raises ValueError on a negative or non-finite factor (the tool call layer also refuses 0)."""
    return ImageEnhance.Contrast(_enhanceable(img)).enhance(_check_factor(factor, allow_zero=True))


def brightness(img: Image.Image, factor: float) -> Image.Image:
    """``ImageEnhance.Brightness(img).enhance(factor)``: 0 gives black, 1 the original."""
    return ImageEnhance.Brightness(_enhanceable(img)).enhance(_check_factor(factor, allow_zero=True))


def check_box(box: Any, size: tuple[int, int]) -> tuple[int, int, int, int]:
    """Validate a ``[x0, y0, x1, y1]`` pixel box against an image ``size = (width, height)``.

    Returns the box rounded to integers. Raises TypeError on a non-list or non-numeric entry and
    ValueError on an empty, inverted or out-of-bounds box, naming the box and the image size.
    """
    if not isinstance(box, (list, tuple)) or len(box) != 4:
        raise TypeError(f"box must be a list of 4 numbers [x0, y0, x1, y1], got {box!r}")
    if not all(_is_number(v) for v in box):
        raise TypeError(f"box entries must be numbers, got {box!r}")
    if not all(math.isfinite(float(v)) for v in box):
        raise ValueError(f"box entries must be finite, got {box!r}")
    x0, y0, x1, y1 = (int(round(float(v))) for v in box)
    w, h = size
    if x1 <= x0 or y1 <= y0:
        raise ValueError(f"box {list(box)} is empty or inverted (need x0 < x1 and y0 < y1)")
    if x0 < 0 or y0 < 0 or x1 > w or y1 > h:
        raise ValueError(f"box {list(box)} lies outside the {w}x{h} image (need 0 <= x0 < x1 <= {w}, 0 <= y0 < y1 <= {h})")
    return x0, y0, x1, y1


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_factor(factor: Any, *, allow_zero: bool) -> float:
    if not _is_number(factor):
        raise TypeError(f"factor must be a number, got {factor!r}")
    f = float(factor)
    if not math.isfinite(f) or f < 0 or (f == 0 and not allow_zero):
        rule = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"factor must be finite and {rule}, got {factor!r}")
    return f


def _enhanceable(img: Image.Image) -> Image.Image:
    """ImageEnhance needs L/RGB(A); palette and other modes go to RGB(A) first."""
    if img.mode in ("L", "LA", "RGB", "RGBA"):
        return img
    return img.convert("RGBA" if "A" in img.getbands() or "transparency" in img.info else "RGB")


# ----------------------------------------------------------------------------- the registry
@dataclass(frozen=True)
class Param:
    """One tool argument: JSON-schema type (``"box"`` = 4 numbers, ``"number"``), meaning, default."""

    kind: str
    description: str
    required: bool = True
    default: Any = None
    exclusive_minimum: float | None = None


@dataclass(frozen=True)
class ToolSpec:
    """A registered tool: the Pillow function, a description for the model and its arguments."""

    name: str
    fn: Callable[..., Image.Image]
    description: str
    params: dict[str, Param] = field(default_factory=dict)

    def openai_schema(self) -> dict[str, Any]:
        """This tool in OpenAI ``tools`` format (``{"type": "function", "function": {...}}``)."""
        props: dict[str, Any] = {}
        for pname, p in self.params.items():
            if p.kind == "box":
                props[pname] = {
                    "type": "array",
                    "items": {"type": "number"},
                    "minItems": 4,
                    "maxItems": 4,
                    "description": p.description,
                }
            else:
                props[pname] = {"type": "number", "description": p.description}
                if p.exclusive_minimum is not None:
                    props[pname]["exclusiveMinimum"] = p.exclusive_minimum
                if p.default is not None:
                    props[pname]["default"] = p.default
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": props,
                    "required": [n for n, p in self.params.items() if p.required],
                    "additionalProperties": False,
                },
            },
        }


TOOLS: dict[str, ToolSpec] = {
    "zoom_in": ToolSpec(
        "zoom_in",
        zoom_in,
        "Crop a region of the current image and enlarge it, to read small text or inspect details.",
        {
            "box": Param("box", "[x0, y0, x1, y1] in pixels of the current image; x1 and y1 exclusive."),
            "scale": Param("number", f"Enlargement factor in (0, {MAX_SCALE:g}]; default 2.", False, 2, 0),
        },
    ),
    "rotate": ToolSpec(
        "rotate",
        rotate,
        "Rotate the current image counter-clockwise by the given degrees (the canvas grows to fit).",
        {"degrees": Param("number", "Counter-clockwise angle in degrees, e.g. 90, 180, -90.")},
    ),
    "contrast": ToolSpec(
        "contrast",
        contrast,
        "Change the contrast of the current image (factor > 1 increases it, < 1 decreases it).",
        {"factor": Param("number", "Contrast factor > 0; 1 leaves the image unchanged.", exclusive_minimum=0)},
    ),
    "brightness": ToolSpec(
        "brightness",
        brightness,
        "Change the brightness of the current image (factor > 1 brightens, < 1 darkens).",
        {"factor": Param("number", "Brightness factor > 0; 1 leaves the image unchanged.", exclusive_minimum=0)},
    ),
}
"""Tool name -> :class:`ToolSpec`. Add a tool by registering it here; nothing else changes."""

TOOL_SCHEMAS: list[dict[str, Any]] = [spec.openai_schema() for spec in TOOLS.values()]
"""All tools in OpenAI ``tools`` format, as offered in adaptive mode."""


@dataclass
class ToolResult:
    """The outcome of one call: ``image`` on success, else ``error`` (a message meant for the model)."""

    image: Image.Image | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def validate_args(name: str, args: Any) -> dict[str, Any]:
    """Check a call's arguments against ``TOOLS[name]``; return them with defaults filled in.

    Raises KeyError for an unknown tool (listing the registered ones), TypeError for a non-dict,
    missing, unexpected or ill-typed argument and ValueError for an out-of-range number.
    """
    if name not in TOOLS:
        raise KeyError(f"unknown tool {name!r}; registered tools: {sorted(TOOLS)}")
    spec = TOOLS[name]
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise TypeError(f"{name}: arguments must be a JSON object, got {type(args).__name__} {args!r}")
    unexpected = sorted(set(args) - set(spec.params))
    if unexpected:
        raise TypeError(f"{name}: unexpected argument(s) {unexpected}; accepted: {sorted(spec.params)}")
    out: dict[str, Any] = {}
    for pname, p in spec.params.items():
        if pname not in args:
            if p.required:
                raise TypeError(f"{name}: missing required argument {pname!r}; got {sorted(args)}")
            out[pname] = p.default
            continue
        v = args[pname]
        if p.kind == "box":
            if not isinstance(v, (list, tuple)) or len(v) != 4 or not all(_is_number(x) for x in v):
                raise TypeError(f"{name}: {pname} must be a list of 4 numbers, got {v!r}")
        else:
            if not _is_number(v):
                raise TypeError(f"{name}: {pname} must be a number, got {v!r}")
            if not math.isfinite(float(v)):
                raise ValueError(f"{name}: {pname} must be finite, got {v!r}")
            if p.exclusive_minimum is not None and float(v) <= p.exclusive_minimum:
                raise ValueError(f"{name}: {pname} must be > {p.exclusive_minimum:g}, got {v!r}")
        out[pname] = v
    return out


def run_tool(img: Image.Image, name: str, args: Any) -> ToolResult:
    """Validate and execute one tool call on ``img``. Never raises for a bad call: returns the error.

    >>> im = Image.new("RGB", (8, 8))
    >>> run_tool(im, "zoom_in", {"box": [0, 0, 4, 4]}).image.size
    (8, 8)
    >>> run_tool(im, "zoom_in", {"box": [0, 0, 40, 4]}).error
    'zoom_in: box [0, 0, 40, 4] lies outside the 8x8 image (need 0 <= x0 < x1 <= 8, 0 <= y0 < y1 <= 8)'
    >>> run_tool(im, "blur", {}).error
    "unknown tool 'blur'; registered tools: ['brightness', 'contrast', 'rotate', 'zoom_in']"
    """
    try:
        checked = validate_args(name, args)
    except KeyError as e:
        return ToolResult(None, str(e.args[0]))
    except (TypeError, ValueError) as e:
        return ToolResult(None, str(e))
    try:
        return ToolResult(TOOLS[name].fn(img, **checked))
    except (TypeError, ValueError) as e:
        return ToolResult(None, f"{name}: {e}")
    except (OSError, MemoryError) as e:  # Pillow failing on this image: still the call's outcome
        return ToolResult(None, f"{name}: could not process the image: {type(e).__name__}: {e}")


# ----------------------------------------------------------------------------- tool-requiring variants
def _variant_rotate(img: Image.Image, degrees: float = 90.0) -> Image.Image:
    return rotate(img, degrees)


def _variant_low_contrast(img: Image.Image, factor: float = 0.3) -> Image.Image:
    return contrast(img, _check_factor(factor, allow_zero=False))


def _variant_dark(img: Image.Image, factor: float = 0.35) -> Image.Image:
    return brightness(img, _check_factor(factor, allow_zero=False))


VARIANTS: dict[str, Callable[..., Image.Image]] = {
    "rotate": _variant_rotate,
    "low_contrast": _variant_low_contrast,
    "dark": _variant_dark,
}
"""Variant kind -> transform. Defaults: rotate 90 degrees, contrast 0.3, brightness 0.35."""


def make_variant(img: Image.Image, kind: str = "rotate", **params: Any) -> Image.Image:
    """A tool-requiring variant of ``img`` (SPEC 4: "made by transforms (rotation, contrast change)").

    ``kind="rotate"`` takes ``degrees`` (default 90; use :func:`transform_boxes` for the evidence boxes),
    ``kind="low_contrast"`` takes ``factor`` (default 0.3), ``kind="dark"`` takes ``factor`` (default 0.35).
    A model undoes them with ``rotate(-degrees)``, ``contrast(1/factor)`` or ``brightness(1/factor)``.

    >>> make_variant(Image.new("L", (4, 2)), "rotate").size
    (2, 4)
    """
    if kind not in VARIANTS:
        raise ValueError(f"unknown variant kind {kind!r}; registered: {sorted(VARIANTS)}")
    return VARIANTS[kind](img, **params)


def transform_boxes(boxes: list[list[float]], size: tuple[int, int], degrees: float) -> list[list[int]]:
    """Map ``[x0, y0, x1, y1]`` boxes of an image of ``size`` through a counter-clockwise rotation by a
    multiple of 90 degrees (as done by :func:`rotate`), so a rotated variant keeps valid evidence boxes.

    >>> transform_boxes([[0, 0, 1, 2]], (4, 3), 90)
    [[0, 3, 2, 4]]
    """
    k = int(round(float(degrees) / 90.0)) % 4
    if abs(float(degrees) - 90.0 * round(float(degrees) / 90.0)) > 1e-9:
        raise ValueError(f"transform_boxes handles multiples of 90 degrees only, got {degrees}")
    w, h = size
    out = []
    for box in boxes:
        x0, y0, x1, y1 = check_box(box, size)
        for _ in range(k):  # one 90-degree CCW step: (x, y) -> (y, w - x); the new width is h
            x0, y0, x1, y1 = y0, w - x1, y1, w - x0
            w, h = h, w
        w, h = size
        out.append([x0, y0, x1, y1])
    return out
