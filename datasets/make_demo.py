"""The project's own demo benchmark: synthetic images with exact answers, drawn with Pillow.

``build_demo(out_dir)`` renders every item (bar/line charts, tables, receipts, signs, GUI
screens, geometric shapes, diagrams) with Pillow primitives and Pillow's built-in font
(``ImageFont.load_default(size=...)``, which needs Pillow >= 10.1 with FreeType), and writes
``out_dir/manifest.jsonl`` plus ``out_dir/images/<name>.png``. Nothing is downloaded and nothing
is random at run time: scatter positions come from fixed seeds, coordinates are integers, PNGs
are saved without metadata, so the same Pillow/FreeType build gives the same bytes every run.

Command line::

    python datasets/make_demo.py --out datasets/demo

Record format: the shared manifest's fields (``uid, source, category, question, options, answer,
answer_type, image, reference_steps``) plus ``family`` (VG | OS | KR), ``evidence_boxes``
(``[x0, y0, x1, y1]`` integer pixels, exact because the generator drew them), ``key_steps``
(AdaptMMBench), ``domain`` (AdaptMMBench: real_world | ocr | gui | knowledge | math),
``tool_required`` and ``tool`` (``"zoom"``, ``"rotate"``, ``"contrast"`` or null: the visual
operation that makes the evidence readable), ``text_answerable`` (the question text alone is
enough, so a text-only model can answer it) and ``image_size`` (``[width, height]``).

The answers of data-driven items are computed from the module-level constants below
(``FRUIT_SALES``, ``RECEIPT_ITEMS``, ``GRAPH_EDGES`` ...), which tests recompute independently.
"""
from __future__ import annotations

import argparse
import json
import math
import random
from collections import deque
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

SOURCE = "howeval demo"
UID_PREFIX = "demo:"
MANIFEST_NAME = "manifest.jsonl"
IMAGES_DIR = "images"

FAMILIES: dict[str, tuple[str, ...]] = {
    "VG": ("ood_perception", "content_recognition", "grounding", "factuality"),
    "OS": ("ocr", "chart_understanding"),
    "KR": ("stem", "knowledge", "general_reasoning"),
}
ANSWER_TYPES = ("multiple_choice", "integer_number", "decimal_number", "extractive_text", "boolean_text")
DOMAINS = ("real_world", "ocr", "gui", "knowledge", "math")
TOOLS = ("zoom", "rotate", "contrast")
LETTERS = "ABCD"

# --------------------------------------------------------------------------------------------
# Data behind the items (tests recompute answers from these)
# --------------------------------------------------------------------------------------------

#: vg-count-001: (shape, colour, centre x, centre y, radius) on a 480x360 canvas.
VG_COUNT_SHAPES: tuple[tuple[str, str, int, int, int], ...] = (
    ("circle", "red", 70, 80, 28),
    ("circle", "blue", 180, 70, 26),
    ("square", "red", 300, 85, 26),
    ("circle", "red", 410, 95, 30),
    ("triangle", "green", 90, 220, 32),
    ("circle", "red", 215, 190, 24),
    ("circle", "green", 330, 215, 27),
    ("square", "blue", 420, 250, 25),
    ("circle", "red", 140, 300, 26),
    ("triangle", "red", 270, 300, 30),
)
#: vg-count-002: number of triangles scattered among squares (seeded positions).
VG_TRIANGLES = 7
VG_SQUARES = 5
#: os-chart-001..003: bar chart of fruit sales (boxes sold).
FRUIT_SALES: dict[str, int] = {"Apples": 42, "Bananas": 27, "Cherries": 35, "Grapes": 18, "Pears": 31}
#: os-chart-004..005: average temperature (°C) by month.
MONTH_TEMPS: dict[str, float] = {"Jan": 3.5, "Feb": 1.5, "Mar": 6.0, "Apr": 9.5, "May": 13.0, "Jun": 16.5}
#: os-chart-006: bar chart with a tiny footnote.
SURVEY_SHARES: dict[str, int] = {"Bus": 34, "Bike": 21, "Car": 28, "Walk": 17}
SURVEY_N = 1284
#: os-ocr-007/008: receipt lines (item, price in cents).
RECEIPT_ITEMS: tuple[tuple[str, int], ...] = (("Bread", 240), ("Milk", 115), ("Eggs", 320), ("Coffee", 475))
#: os-ocr-010: train departures (destination, platform, time).
TIMETABLE: tuple[tuple[str, int, str], ...] = (
    ("Oxford", 3, "14:35"),
    ("Bristol", 1, "15:05"),
    ("Leeds", 4, "15:20"),
    ("York", 2, "16:10"),
)
#: os-ocr-011: yearly rainfall (mm) by city.
RAINFALL: dict[str, int] = {"Lima": 16, "Bergen": 2250, "Madrid": 420, "Dublin": 760}
#: kr-reason-012: undirected graph; question asks the fewest edges from A to E.
GRAPH_NODES: dict[str, tuple[int, int]] = {
    "A": (70, 180), "B": (180, 70), "C": (300, 70), "D": (210, 290), "E": (410, 180), "F": (320, 290),
}
GRAPH_EDGES: tuple[tuple[str, str], ...] = (
    ("A", "B"), ("B", "C"), ("C", "E"), ("A", "D"), ("D", "F"), ("F", "E"), ("B", "D"),
)
#: kr-reason-013: heights in cm.
HEIGHTS: dict[str, int] = {"Ann": 150, "Ben": 172, "Cal": 161}
#: kr-stem-004: number cards.
MEAN_CARDS: tuple[int, ...] = (2, 3, 4, 5)
#: kr-stem-002: rectangle sides.
RECT_SIDES: tuple[int, int] = (7, 4)
#: kr-stem-014: circle radius written in a tiny note.
CIRCLE_RADIUS_CM = 9
#: kr-reason-011: analogue clock time.
CLOCK_TIME: tuple[int, int] = (4, 30)


def cents(value: int) -> str:
    """Format integer cents as a price string, e.g. ``1150 -> "11.50"`` (exact, no floats)."""
    return f"{value // 100}.{value % 100:02d}"


def shortest_path_edges(edges: Sequence[tuple[str, str]], start: str, goal: str) -> int:
    """Fewest edges from ``start`` to ``goal`` in an undirected graph (breadth-first search)."""
    adjacency: dict[str, list[str]] = {}
    for a, b in edges:
        adjacency.setdefault(a, []).append(b)
        adjacency.setdefault(b, []).append(a)
    seen, queue = {start: 0}, deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            return seen[node]
        for nxt in sorted(adjacency.get(node, [])):
            if nxt not in seen:
                seen[nxt] = seen[node] + 1
                queue.append(nxt)
    raise ValueError(f"no path from {start!r} to {goal!r} in {edges!r}")


# --------------------------------------------------------------------------------------------
# Drawing helpers
# --------------------------------------------------------------------------------------------

Box = list[int]

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "green": (40, 160, 60),
    "blue": (40, 90, 210),
    "yellow": (240, 200, 30),
    "grey": (150, 150, 150),
    "black": (0, 0, 0),
    "white": (255, 255, 255),
}


@cache
def font(size: int) -> ImageFont.FreeTypeFont:
    """Pillow's built-in scalable font at ``size`` px (no system fonts)."""
    loaded = ImageFont.load_default(size=size)
    if not isinstance(loaded, ImageFont.FreeTypeFont):
        raise RuntimeError(
            f"ImageFont.load_default(size={size}) returned {type(loaded).__name__}: "
            "the demo set needs Pillow >= 10.1 built with FreeType"
        )
    return loaded


class Canvas:
    """An RGB image plus drawing calls that return the exact integer box of what they drew."""

    def __init__(self, width: int, height: int, background: tuple[int, int, int] | str = "white") -> None:
        self.width, self.height = width, height
        self.image = Image.new("RGB", (width, height), background)
        self.draw = ImageDraw.Draw(self.image)

    def clamp(self, box: Sequence[float], pad: int = 0) -> Box:
        x0, y0, x1, y1 = box
        return [
            max(0, math.floor(x0) - pad),
            max(0, math.floor(y0) - pad),
            min(self.width, math.ceil(x1) + pad),
            min(self.height, math.ceil(y1) + pad),
        ]

    @staticmethod
    def union(*boxes: Sequence[int]) -> Box:
        return [min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes)]

    def text(self, xy: tuple[int, int], s: str, size: int, fill: Any = "black", anchor: str = "la",
             pad: int = 2) -> Box:
        f = font(size)
        bbox = self.draw.textbbox(xy, s, font=f, anchor=anchor)
        self.draw.text(xy, s, font=f, fill=fill, anchor=anchor)
        return self.clamp(bbox, pad)

    def rect(self, box: Sequence[int], fill: Any = None, outline: Any = "black", width: int = 2) -> Box:
        self.draw.rectangle(list(box), fill=fill, outline=outline, width=width)
        return self.clamp([box[0], box[1], box[2] + 1, box[3] + 1])

    def shape(self, kind: str, cx: int, cy: int, r: int, fill: Any, outline: Any = "black") -> Box:
        if kind == "circle":
            self.draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fill, outline=outline, width=2)
        elif kind == "square":
            self.draw.rectangle([cx - r, cy - r, cx + r, cy + r], fill=fill, outline=outline, width=2)
        elif kind == "triangle":
            self.draw.polygon([(cx, cy - r), (cx + r, cy + r), (cx - r, cy + r)], fill=fill, outline=outline, width=2)
        elif kind == "star":
            pts = []
            for k in range(10):
                rad = r if k % 2 == 0 else r * 2 // 5
                ang = -math.pi / 2 + k * math.pi / 5
                pts.append((cx + round(rad * math.cos(ang)), cy + round(rad * math.sin(ang))))
            self.draw.polygon(pts, fill=fill, outline=outline, width=2)
        else:
            raise ValueError(f"unknown shape {kind!r}; known: circle, square, triangle, star")
        return self.clamp([cx - r, cy - r, cx + r + 1, cy + r + 1])

    def line(self, points: Sequence[tuple[int, int]], fill: Any = "black", width: int = 2) -> None:
        self.draw.line(list(points), fill=fill, width=width)


def scatter(rng: random.Random, n: int, width: int, height: int, r: int, margin: int,
            avoid: Sequence[Sequence[int]] = ()) -> list[tuple[int, int]]:
    """``n`` non-overlapping centres for shapes of radius ``r`` (rejection sampling, seeded)."""
    placed: list[tuple[int, int]] = []
    for _ in range(20000):
        if len(placed) == n:
            return placed
        x = rng.randint(margin + r, width - margin - r)
        y = rng.randint(margin + r, height - margin - r)
        if any(abs(x - px) < 2 * r + 12 and abs(y - py) < 2 * r + 12 for px, py in placed):
            continue
        if any(b[0] - r - 6 < x < b[2] + r + 6 and b[1] - r - 6 < y < b[3] + r + 6 for b in avoid):
            continue
        placed.append((x, y))
    raise RuntimeError(f"could not place {n} shapes of radius {r} on {width}x{height}")


def bar_chart(c: Canvas, data: dict[str, int], area: tuple[int, int, int, int], title: str,
              y_max: int, y_step: int, label_size: int = 14, colour: Any = COLOURS["blue"]) -> dict[str, Box]:
    """Vertical bars with value labels on top; returns the box of each bar plus its labels."""
    x0, y0, x1, y1 = area
    c.text(((x0 + x1) // 2, y0 - 28), title, label_size + 4, anchor="ms")
    c.line([(x0, y0), (x0, y1), (x1, y1)], width=2)
    for v in range(0, y_max + 1, y_step):
        y = y1 - (y1 - y0) * v // y_max
        c.line([(x0 - 5, y), (x0, y)], width=1)
        c.line([(x0 + 1, y), (x1, y)], fill=(225, 225, 225), width=1)
        c.text((x0 - 8, y), str(v), label_size - 2, anchor="rm", pad=0)
    slot = (x1 - x0) // len(data)
    boxes: dict[str, Box] = {}
    for i, (name, value) in enumerate(data.items()):
        bx0 = x0 + i * slot + slot // 5
        bx1 = x0 + (i + 1) * slot - slot // 5
        top = y1 - (y1 - y0) * value // y_max
        bar = c.rect([bx0, top, bx1, y1 - 1], fill=colour, outline="black", width=1)
        val = c.text(((bx0 + bx1) // 2, top - 4), str(value), label_size, anchor="ms")
        lab = c.text(((bx0 + bx1) // 2, y1 + 6), name, label_size, anchor="mt")
        boxes[name] = Canvas.union(bar, val, lab)
    return boxes


def save_png(image: Image.Image, path: Path) -> None:
    """PNG without metadata, fixed compression: same pixels give the same bytes."""
    image.save(path, format="PNG", optimize=False, compress_level=9)


# --------------------------------------------------------------------------------------------
# Items
# --------------------------------------------------------------------------------------------

ItemBuilder = Callable[[], tuple[Canvas, dict[str, Any]]]
_BUILDERS: list[tuple[str, ItemBuilder]] = []


def item(name: str) -> Callable[[ItemBuilder], ItemBuilder]:
    """Register an item builder under ``name`` (the uid is ``demo:<name>``); names are unique."""

    def register(fn: ItemBuilder) -> ItemBuilder:
        if any(n == name for n, _ in _BUILDERS):
            raise ValueError(f"duplicate demo item name {name!r}")
        _BUILDERS.append((name, fn))
        return fn

    return register


def rec(family: str, category: str, question: str, answer: str, answer_type: str, *,
        steps: list[str], key_steps: list[str], boxes: list[Box], domain: str,
        options: list[str] | None = None, tool: str | None = None, text_answerable: bool = False) -> dict[str, Any]:
    """The item-specific fields of a record (uid, source, image and size are added by ``build_demo``)."""
    return {
        "family": family,
        "category": category,
        "question": question,
        "options": options,
        "answer": answer,
        "answer_type": answer_type,
        "reference_steps": steps,
        "evidence_boxes": boxes,
        "key_steps": key_steps,
        "domain": domain,
        "tool_required": tool is not None,
        "tool": tool,
        "text_answerable": text_answerable,
    }


def mc(options: list[str], correct: str) -> tuple[list[str], str]:
    """Options list and the letter of ``correct`` in it."""
    return options, LETTERS[options.index(correct)]


# ---- VG: perception and grounding ----------------------------------------------------------

@item("vg-count-001")
def _vg_count_red_circles() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, (250, 248, 240))
    boxes = []
    for kind, colour, x, y, r in VG_COUNT_SHAPES:
        b = c.shape(kind, x, y, r, COLOURS[colour])
        if kind == "circle" and colour == "red":
            boxes.append(b)
    n = len(boxes)
    return c, rec(
        "VG", "content_recognition", "How many red circles are there in the image?", str(n), "integer_number",
        steps=[
            "The image shows circles, squares and triangles in red, green and blue.",
            "Keep only the shapes that are circles.",
            "Among the circles, keep only the red ones.",
            f"Counting them gives {n} red circles.",
        ],
        key_steps=["Identify the red circles, ignoring red squares and triangles.", f"Count them: {n}."],
        boxes=boxes, domain="real_world",
    )


@item("vg-count-002")
def _vg_count_triangles() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, "white")
    rng = random.Random(1002)
    centres = scatter(rng, VG_TRIANGLES + VG_SQUARES, 480, 360, 24, 10)
    boxes = []
    for i, (x, y) in enumerate(centres):
        if i < VG_TRIANGLES:
            boxes.append(c.shape("triangle", x, y, 22, COLOURS["yellow"]))
        else:
            c.shape("square", x, y, 20, COLOURS["yellow"])
    return c, rec(
        "VG", "content_recognition", "How many triangles are in the picture?", str(VG_TRIANGLES), "integer_number",
        steps=[
            "All shapes in the picture are yellow, so colour does not help.",
            "The shapes are either triangles or squares.",
            f"Counting only the triangles gives {VG_TRIANGLES}.",
        ],
        key_steps=["Tell triangles from squares.", f"Count the triangles: {VG_TRIANGLES}."],
        boxes=boxes, domain="real_world",
    )


@item("vg-color-003")
def _vg_colour_largest() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, "white")
    squares = [("red", 90, 100, 30), ("green", 300, 190, 70), ("blue", 110, 270, 40), ("yellow", 400, 70, 35)]
    boxes = {colour: c.shape("square", x, y, r, COLOURS[colour]) for colour, x, y, r in squares}
    largest = max(squares, key=lambda s: s[3])[0]
    options, letter = mc(["red", "green", "blue", "yellow"], largest)
    return c, rec(
        "VG", "content_recognition", "What colour is the largest square?", letter, "multiple_choice", options=options,
        steps=[
            "There are four squares of different sizes and colours.",
            f"The {largest} square is clearly bigger than the other three.",
            f"So the largest square is {largest}, which is option {letter}.",
        ],
        key_steps=["Compare the sizes of the four squares.", f"The largest one is {largest}."],
        boxes=[boxes[largest]], domain="real_world",
    )


@item("vg-ground-004")
def _vg_left_of_star() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, (245, 245, 255))
    row = [("circle", "blue"), ("square", "red"), ("star", "yellow"), ("triangle", "green")]
    boxes = {}
    for i, (kind, colour) in enumerate(row):
        boxes[kind] = c.shape(kind, 75 + i * 110, 180, 38, COLOURS[colour])
    left = row[[k for k, _ in row].index("star") - 1][0]
    options, letter = mc(["circle", "square", "triangle", "star"], left)
    return c, rec(
        "VG", "grounding", "Which shape is directly to the left of the star?", letter, "multiple_choice",
        options=options,
        steps=[
            "The four shapes stand in one horizontal row.",
            "The star is the third shape from the left.",
            f"The shape just before it, on its left, is the {left}.",
            f"That is option {letter}.",
        ],
        key_steps=["Locate the star in the row.", f"Read the neighbour on its left: the {left}."],
        boxes=[boxes["star"], boxes[left]], domain="real_world",
    )


@item("vg-ground-005")
def _vg_quadrant() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, "white")
    c.line([(240, 0), (240, 359)], fill=(180, 180, 180), width=1)
    c.line([(0, 180), (479, 180)], fill=(180, 180, 180), width=1)
    c.shape("square", 110, 80, 30, COLOURS["blue"])
    c.shape("triangle", 360, 90, 32, COLOURS["red"])
    c.shape("square", 120, 270, 28, COLOURS["yellow"])
    target = c.shape("circle", 370, 265, 34, COLOURS["green"])
    options, letter = mc(["top-left", "top-right", "bottom-left", "bottom-right"], "bottom-right")
    return c, rec(
        "VG", "grounding", "In which quadrant of the image is the green circle?", letter, "multiple_choice",
        options=options,
        steps=[
            "Grey lines split the image into four quadrants.",
            "The only green shape is a circle.",
            "It lies right of the vertical line and below the horizontal line.",
            f"So it is in the bottom-right quadrant, option {letter}.",
        ],
        key_steps=["Find the green circle.", "Place it relative to the centre lines: bottom-right."],
        boxes=[target], domain="real_world",
    )


@item("vg-gui-006")
def _vg_gui_buttons() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, (200, 205, 215))
    c.rect([40, 60, 440, 300], fill=(250, 250, 250), outline=(90, 90, 90), width=2)
    c.rect([40, 60, 440, 96], fill=(60, 90, 160), outline=(90, 90, 90), width=2)
    c.text((56, 78), "Save changes?", 18, fill="white", anchor="lm")
    c.text((60, 140), "You have unsaved edits in report.txt.", 15)
    buttons = ["Cancel", "Save", "Delete", "Help"]
    boxes = {}
    for i, label in enumerate(buttons):
        bx = 56 + i * 96
        b = c.rect([bx, 230, bx + 84, 266], fill=(230, 230, 235), outline=(80, 80, 80), width=1)
        c.text((bx + 42, 248), label, 15, anchor="mm")
        boxes[label] = b
    answer = buttons[buttons.index("Save") + 1]
    return c, rec(
        "VG", "grounding", "In this dialog, which button is immediately to the right of the 'Save' button? "
        "Answer with the button's label.", answer, "extractive_text",
        steps=[
            "The dialog has a row of four buttons at the bottom.",
            "From left to right they read Cancel, Save, Delete, Help.",
            f"The button right after Save is {answer}.",
        ],
        key_steps=["Read the button labels left to right.", f"The neighbour right of Save is {answer}."],
        boxes=[boxes["Save"], boxes[answer]], domain="gui",
    )


@item("vg-ood-007")
def _vg_upside_down_sign() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, (225, 235, 225))
    patch = Canvas(220, 90, COLOURS["green"])
    patch.rect([4, 4, 215, 85], outline="white", width=3)
    patch.text((110, 45), "EXIT 42", 34, fill="white", anchor="mm")
    rotated = patch.image.transpose(Image.Transpose.ROTATE_180)
    x, y = 130, 110
    c.image.paste(rotated, (x, y))
    c.rect([236, 200, 244, 330], fill=(120, 120, 120), outline=(90, 90, 90), width=1)
    return c, rec(
        "VG", "ood_perception", "The sign in this picture is upside down. What number is written on it?", "42",
        "integer_number",
        steps=[
            "The green sign is printed upside down.",
            "Rotating the sign by 180 degrees makes its text readable.",
            "The rotated text reads 'EXIT 42'.",
            "The number on the sign is 42.",
        ],
        key_steps=["Rotate the sign by 180 degrees.", "Read the number: 42."],
        boxes=[[x, y, x + 220, y + 90]], domain="real_world", tool="rotate",
    )


@item("vg-ood-008")
def _vg_low_contrast_code() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, (128, 128, 128))
    box = c.text((240, 180), "7351", 64, fill=(137, 137, 137), anchor="mm", pad=4)
    return c, rec(
        "VG", "ood_perception", "A 4-digit code is written very faintly in this grey image. What is the code?",
        "7351", "extractive_text",
        steps=[
            "The image is almost uniform grey.",
            "Raising the contrast reveals faint digits in the middle.",
            "The digits read 7, 3, 5, 1.",
            "The code is 7351.",
        ],
        key_steps=["Increase the contrast of the image.", "Read the four digits: 7351."],
        boxes=[box], domain="real_world", tool="contrast",
    )


@item("vg-ood-009")
def _vg_dot_grid() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, (20, 20, 30))
    cols, rows, missing = 6, 4, {(2, 1), (4, 3)}
    boxes = []
    for j in range(rows):
        for i in range(cols):
            if (i, j) in missing:
                continue
            boxes.append(c.shape("circle", 90 + i * 60, 90 + j * 60, 12, (250, 250, 120), outline=(250, 250, 120)))
    n = cols * rows - len(missing)
    return c, rec(
        "VG", "ood_perception", "How many glowing dots are there in this dark image?", str(n), "integer_number",
        steps=[
            f"The dots form a grid of {rows} rows and {cols} columns.",
            f"A full grid would hold {rows} x {cols} = {rows * cols} dots.",
            f"{len(missing)} positions of the grid are empty.",
            f"So there are {rows * cols} - {len(missing)} = {n} dots.",
        ],
        key_steps=[f"See the {rows} x {cols} grid.", f"Subtract the {len(missing)} gaps: {n}."],
        boxes=[Canvas.union(*boxes)], domain="real_world",
    )


@item("vg-fact-010")
def _vg_no_red_circle() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, "white")
    boxes = [c.shape("square", 100 + i * 140, 180, 40, COLOURS["blue"]) for i in range(3)]
    return c, rec(
        "VG", "factuality", "Is there a red circle in the image?", "no", "boolean_text", options=["yes", "no"],
        steps=[
            "The image contains three shapes.",
            "All three are blue squares.",
            "There is no circle and nothing red, so the answer is no.",
        ],
        key_steps=["List the shapes: three blue squares.", "No red circle is present: no."],
        boxes=boxes, domain="real_world",
    )


@item("vg-fact-011")
def _vg_open_sign() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, (70, 60, 55))
    c.rect([60, 40, 420, 320], fill=(150, 110, 70), outline=(40, 30, 20), width=4)
    board = c.rect([120, 100, 360, 200], fill="white", outline=COLOURS["red"], width=4)
    word = c.text((240, 150), "OPEN", 52, fill=COLOURS["red"], anchor="mm")
    c.text((240, 250), "Mon-Sat 9:00-18:00", 18, fill="white", anchor="mm")
    return c, rec(
        "VG", "factuality", "Someone claims the sign on this door says the shop is closed. Is that claim true?",
        "no", "boolean_text", options=["yes", "no"],
        steps=[
            "The door carries a white sign with red letters.",
            "The sign reads 'OPEN'.",
            "A sign reading OPEN does not say the shop is closed.",
            "So the claim is false: no.",
        ],
        key_steps=["Read the sign: OPEN.", "Compare with the claim 'closed': it is false."],
        boxes=[Canvas.union(board, word)], domain="real_world",
    )


@item("vg-fact-012")
def _vg_star_premise() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, (20, 30, 70))
    rng = random.Random(1012)
    boxes = [c.shape("star", x, y, 30, COLOURS["yellow"]) for x, y in scatter(rng, 4, 480, 360, 32, 12)]
    return c, rec(
        "VG", "factuality", "The caption says this picture shows five stars. How many stars does it actually show?",
        str(len(boxes)), "integer_number",
        steps=[
            "The caption claims there are five stars.",
            "Count the yellow stars actually drawn on the dark background.",
            f"There are {len(boxes)} stars, so the caption is wrong.",
        ],
        key_steps=["Ignore the caption's count.", f"Count the stars in the image: {len(boxes)}."],
        boxes=boxes, domain="real_world",
    )


@item("vg-zoom-013")
def _vg_tiny_letter() -> tuple[Canvas, dict[str, Any]]:
    w, h = 1280, 960
    c = Canvas(w, h, (235, 240, 245))
    tiny = c.rect([w - 46, h - 40, w - 24, h - 18], fill="white", outline="black", width=1)
    c.text((w - 35, h - 29), "Q", 11, anchor="mm", pad=0)
    rng = random.Random(1013)
    palette = ["red", "green", "blue", "yellow"]
    for i, (x, y) in enumerate(scatter(rng, 18, w, h, 50, 40, avoid=[tiny])):
        c.shape(["circle", "square", "triangle"][i % 3], x, y, 46, COLOURS[palette[i % 4]])
    return c, rec(
        "VG", "content_recognition", "What letter is printed inside the tiny white box in the bottom-right corner "
        "of the image?", "Q", "extractive_text",
        steps=[
            "The image is filled with large coloured shapes.",
            "A very small white box sits in the bottom-right corner.",
            "Zooming into that corner makes its content readable.",
            "The box contains the letter Q.",
        ],
        key_steps=["Zoom into the bottom-right corner.", "Read the letter in the tiny box: Q."],
        boxes=[tiny], domain="real_world", tool="zoom",
    )


@item("vg-zoom-014")
def _vg_tiny_caption_year() -> tuple[Canvas, dict[str, Any]]:
    w, h = 1280, 960
    c = Canvas(w, h, (150, 200, 240))
    c.rect([0, 600, w - 1, h - 1], fill=(90, 160, 80), outline=(90, 160, 80), width=1)
    c.shape("circle", 980, 200, 90, COLOURS["yellow"], outline=COLOURS["yellow"])
    c.draw.polygon([(200, 600), (420, 300), (640, 600)], fill=(120, 110, 110))
    c.draw.polygon([(520, 600), (760, 250), (1000, 600)], fill=(100, 95, 95))
    caption = c.text((14, 14), "Photo taken: 2019", 10, fill=(40, 40, 60))
    return c, rec(
        "VG", "factuality", "A note says this photo was taken in 2021. According to the small caption in the "
        "top-left corner, is that correct?", "no", "boolean_text", options=["yes", "no"],
        steps=[
            "The picture is a landscape with a tiny caption in the top-left corner.",
            "Zooming into the top-left corner makes the caption readable.",
            "The caption reads 'Photo taken: 2019'.",
            "2019 differs from 2021, so the note is not correct: no.",
        ],
        key_steps=["Zoom into the top-left caption.", "Read the year 2019 and compare with 2021: no."],
        boxes=[caption], domain="real_world", tool="zoom",
    )


# ---- OS: OCR and structured images -----------------------------------------------------------

def _fruit_chart() -> tuple[Canvas, dict[str, Box]]:
    c = Canvas(560, 400, "white")
    boxes = bar_chart(c, FRUIT_SALES, (70, 70, 530, 340), "Boxes of fruit sold", 50, 10)
    return c, boxes


@item("os-chart-001")
def _os_chart_value() -> tuple[Canvas, dict[str, Any]]:
    c, boxes = _fruit_chart()
    v = FRUIT_SALES["Apples"]
    return c, rec(
        "OS", "chart_understanding", "According to the bar chart, how many boxes of Apples were sold?", str(v),
        "integer_number",
        steps=[
            "The chart shows boxes of fruit sold per fruit.",
            "Find the bar labelled Apples on the x-axis.",
            f"The value printed on top of the Apples bar is {v}.",
        ],
        key_steps=["Locate the Apples bar.", f"Read its value: {v}."],
        boxes=[boxes["Apples"]], domain="ocr",
    )


@item("os-chart-002")
def _os_chart_max() -> tuple[Canvas, dict[str, Any]]:
    c, boxes = _fruit_chart()
    best = max(FRUIT_SALES, key=FRUIT_SALES.__getitem__)
    options, letter = mc(["Bananas", "Apples", "Pears", "Cherries"], best)
    return c, rec(
        "OS", "chart_understanding", "Which fruit sold the most boxes?", letter, "multiple_choice", options=options,
        steps=[
            "Compare the heights of the five bars.",
            f"The tallest bar is {best} with {FRUIT_SALES[best]} boxes.",
            f"{best} is option {letter}.",
        ],
        key_steps=["Find the tallest bar.", f"It is {best}: option {letter}."],
        boxes=[boxes[best]], domain="ocr",
    )


@item("os-chart-003")
def _os_chart_range() -> tuple[Canvas, dict[str, Any]]:
    c, boxes = _fruit_chart()
    hi = max(FRUIT_SALES, key=FRUIT_SALES.__getitem__)
    lo = min(FRUIT_SALES, key=FRUIT_SALES.__getitem__)
    d = FRUIT_SALES[hi] - FRUIT_SALES[lo]
    return c, rec(
        "OS", "chart_understanding", "What is the difference between the largest and the smallest number of boxes "
        "sold in the chart?", str(d), "integer_number",
        steps=[
            f"The tallest bar is {hi} with {FRUIT_SALES[hi]} boxes.",
            f"The shortest bar is {lo} with {FRUIT_SALES[lo]} boxes.",
            f"The difference is {FRUIT_SALES[hi]} - {FRUIT_SALES[lo]} = {d}.",
        ],
        key_steps=[f"Read the maximum ({FRUIT_SALES[hi]}) and minimum ({FRUIT_SALES[lo]}).", f"Subtract: {d}."],
        boxes=[boxes[hi], boxes[lo]], domain="math",
    )


def _temp_chart() -> tuple[Canvas, dict[str, Box]]:
    c = Canvas(560, 400, "white")
    x0, y0, x1, y1 = 70, 70, 530, 330
    t_max = 20.0
    c.text((300, 42), "Average temperature (°C)", 18, anchor="ms")
    c.line([(x0, y0), (x0, y1), (x1, y1)], width=2)
    for v in range(0, 21, 5):
        y = y1 - (y1 - y0) * v // 20
        c.line([(x0 - 5, y), (x0, y)], width=1)
        c.text((x0 - 8, y), str(v), 12, anchor="rm", pad=0)
    step = (x1 - x0) // len(MONTH_TEMPS)
    pts, boxes = [], {}
    for i, (month, temp) in enumerate(MONTH_TEMPS.items()):
        x = x0 + step // 2 + i * step
        y = y1 - round((y1 - y0) * temp / t_max)
        pts.append((x, y))
        boxes[month] = c.text((x, y1 + 6), month, 14, anchor="mt")
    c.line(pts, fill=COLOURS["red"], width=3)
    for (month, temp), (x, y) in zip(MONTH_TEMPS.items(), pts):
        dot = c.shape("circle", x, y, 5, COLOURS["red"], outline=COLOURS["red"])
        val = c.text((x, y - 10), f"{temp:.1f}", 13, anchor="ms")
        boxes[month] = Canvas.union(boxes[month], dot, val)
    return c, boxes


@item("os-chart-004")
def _os_line_min() -> tuple[Canvas, dict[str, Any]]:
    c, boxes = _temp_chart()
    lo = min(MONTH_TEMPS, key=MONTH_TEMPS.__getitem__)
    return c, rec(
        "OS", "chart_understanding", "In which month is the average temperature lowest? Answer with the month label "
        "used in the chart.", lo, "extractive_text",
        steps=[
            "The line chart gives one temperature per month from Jan to Jun.",
            f"The lowest point of the line is at {lo}.",
            f"Its label reads {MONTH_TEMPS[lo]:.1f}, below every other month.",
        ],
        key_steps=["Find the lowest point of the line.", f"Read its month label: {lo}."],
        boxes=[boxes[lo]], domain="ocr",
    )


@item("os-chart-005")
def _os_line_value() -> tuple[Canvas, dict[str, Any]]:
    c, boxes = _temp_chart()
    v = MONTH_TEMPS["Apr"]
    return c, rec(
        "OS", "chart_understanding", "What average temperature does the chart give for Apr, in °C?", f"{v:.1f}",
        "decimal_number",
        steps=[
            "Find Apr on the x-axis of the line chart.",
            "Follow it up to the red point on the line.",
            f"The label above that point reads {v:.1f}.",
        ],
        key_steps=["Locate the Apr point.", f"Read its label: {v:.1f}."],
        boxes=[boxes["Apr"]], domain="ocr",
    )


@item("os-chart-006")
def _os_chart_footnote() -> tuple[Canvas, dict[str, Any]]:
    w, h = 1280, 960
    c = Canvas(w, h, "white")
    bar_chart(c, SURVEY_SHARES, (140, 140, 1180, 820), "How people get to work (%)", 40, 10, label_size=22,
              colour=COLOURS["green"])
    note = c.text((w - 12, h - 10), f"Survey sample size: n = {SURVEY_N}", 10, fill=(90, 90, 90), anchor="rd")
    return c, rec(
        "OS", "chart_understanding", "The small footnote in the bottom-right corner gives the survey's sample size. "
        "What is n?", str(SURVEY_N), "integer_number",
        steps=[
            "The chart shows shares of ways to get to work.",
            "The sample size is not in the bars but in a tiny footnote in the bottom-right corner.",
            "Zooming into that corner makes the footnote readable.",
            f"It reads 'Survey sample size: n = {SURVEY_N}'.",
        ],
        key_steps=["Zoom into the bottom-right footnote.", f"Read n = {SURVEY_N}."],
        boxes=[note], domain="ocr", tool="zoom",
    )


def _receipt() -> tuple[Canvas, dict[str, Box]]:
    c = Canvas(400, 480, (210, 195, 170))
    c.rect([70, 30, 330, 450], fill="white", outline=(170, 160, 150), width=1)
    c.text((200, 60), "CORNER MARKET", 20, anchor="mm")
    c.text((200, 86), "Receipt #0417", 13, fill=(80, 80, 80), anchor="mm")
    c.line([(90, 106), (310, 106)], fill=(150, 150, 150), width=1)
    boxes: dict[str, Box] = {}
    y = 130
    for name, price in RECEIPT_ITEMS:
        a = c.text((95, y), name, 16, anchor="lm")
        b = c.text((305, y), cents(price), 16, anchor="rm")
        boxes[name] = Canvas.union(a, b)
        y += 34
    c.line([(90, y - 10), (310, y - 10)], fill=(150, 150, 150), width=1)
    total = sum(p for _, p in RECEIPT_ITEMS)
    a = c.text((95, y + 14), "TOTAL", 18, anchor="lm")
    b = c.text((305, y + 14), cents(total), 18, anchor="rm")
    boxes["TOTAL"] = Canvas.union(a, b)
    c.text((200, 420), "Thank you!", 14, anchor="mm")
    return c, boxes


@item("os-ocr-007")
def _os_receipt_total() -> tuple[Canvas, dict[str, Any]]:
    c, boxes = _receipt()
    total = cents(sum(p for _, p in RECEIPT_ITEMS))
    listing = ", ".join(f"{n} {cents(p)}" for n, p in RECEIPT_ITEMS)
    return c, rec(
        "OS", "ocr", "What is the total amount printed on this receipt?", total, "decimal_number",
        steps=[
            f"The receipt lists {len(RECEIPT_ITEMS)} items: {listing}.",
            "Below the items there is a TOTAL line.",
            f"The TOTAL line reads {total}.",
        ],
        key_steps=["Find the TOTAL line.", f"Read the amount: {total}."],
        boxes=[boxes["TOTAL"]], domain="ocr",
    )


@item("os-ocr-008")
def _os_receipt_item() -> tuple[Canvas, dict[str, Any]]:
    c, boxes = _receipt()
    price = cents(dict(RECEIPT_ITEMS)["Eggs"])
    return c, rec(
        "OS", "ocr", "How much did the Eggs cost on this receipt?", price, "decimal_number",
        steps=[
            "The receipt has one line per item with the price on the right.",
            "Find the line that starts with Eggs.",
            f"The price on that line is {price}.",
        ],
        key_steps=["Find the Eggs line.", f"Read its price: {price}."],
        boxes=[boxes["Eggs"]], domain="ocr",
    )


@item("os-ocr-009")
def _os_street_sign() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, (170, 210, 240))
    c.rect([0, 290, 479, 359], fill=(120, 120, 120), outline=(120, 120, 120), width=1)
    c.rect([232, 150, 246, 300], fill=(110, 110, 110), outline=(80, 80, 80), width=1)
    sign = c.rect([110, 80, 370, 150], fill=(20, 120, 60), outline="white", width=3)
    c.text((240, 115), "Maple Ave", 32, fill="white", anchor="mm")
    return c, rec(
        "OS", "ocr", "What street name is written on the green sign?", "Maple Ave", "extractive_text",
        steps=[
            "A green street sign is mounted on a pole.",
            "The white text on the sign reads 'Maple Ave'.",
            "So the street is Maple Ave.",
        ],
        key_steps=["Find the green sign.", "Read its text: Maple Ave."],
        boxes=[sign], domain="ocr",
    )


def _table(c: Canvas, header: Sequence[str], rows: Sequence[Sequence[str]], x0: int, y0: int,
           col_w: Sequence[int], row_h: int, size: int) -> list[Box]:
    """Draw a grid table; returns the box of each data row."""
    xs = [x0]
    for wdt in col_w:
        xs.append(xs[-1] + wdt)
    n = len(rows) + 1
    c.rect([x0, y0, xs[-1], y0 + row_h], fill=(220, 228, 240), outline="black", width=1)
    for j in range(n + 1):
        c.line([(x0, y0 + j * row_h), (xs[-1], y0 + j * row_h)], width=1)
    for x in xs:
        c.line([(x, y0), (x, y0 + n * row_h)], width=1)
    for i, cell in enumerate(header):
        c.text((xs[i] + 10, y0 + row_h // 2), cell, size, anchor="lm")
    boxes = []
    for j, row in enumerate(rows, start=1):
        for i, cell in enumerate(row):
            c.text((xs[i] + 10, y0 + j * row_h + row_h // 2), cell, size, anchor="lm")
        boxes.append(c.clamp([x0, y0 + j * row_h, xs[-1] + 1, y0 + (j + 1) * row_h + 1]))
    return boxes


@item("os-ocr-010")
def _os_timetable() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 320, "white")
    c.text((240, 36), "Departures", 22, anchor="mm")
    rows = [(d, str(p), t) for d, p, t in TIMETABLE]
    boxes = _table(c, ["Destination", "Platform", "Departs"], rows, 40, 70, [160, 120, 120], 40, 16)
    idx = [d for d, _, _ in TIMETABLE].index("Oxford")
    t = TIMETABLE[idx][2]
    return c, rec(
        "OS", "ocr", "According to the departures board, at what time does the train to Oxford depart?", t,
        "extractive_text",
        steps=[
            "The table lists destination, platform and departure time.",
            "Find the row whose destination is Oxford.",
            f"The Departs column of that row reads {t}.",
        ],
        key_steps=["Find the Oxford row.", f"Read the departure time: {t}."],
        boxes=[boxes[idx]], domain="ocr",
    )


@item("os-ocr-011")
def _os_rainfall_table() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 320, "white")
    c.text((240, 36), "Yearly rainfall", 22, anchor="mm")
    rows = [(city, f"{mm} mm") for city, mm in RAINFALL.items()]
    boxes = _table(c, ["City", "Rainfall"], rows, 80, 70, [170, 150], 40, 16)
    wettest = max(RAINFALL, key=RAINFALL.__getitem__)
    options, letter = mc(list(RAINFALL), wettest)
    return c, rec(
        "OS", "ocr", "According to the table, which city gets the most rain per year?", letter, "multiple_choice",
        options=options,
        steps=[
            "The table gives yearly rainfall in millimetres for four cities.",
            "Compare the four rainfall values.",
            f"The largest value is {RAINFALL[wettest]} mm, for {wettest}.",
            f"{wettest} is option {letter}.",
        ],
        key_steps=["Read the four rainfall values.", f"Pick the largest: {wettest}."],
        boxes=[boxes[list(RAINFALL).index(wettest)]], domain="ocr",
    )


@item("os-ocr-012")
def _os_document_serial() -> tuple[Canvas, dict[str, Any]]:
    w, h = 1280, 960
    c = Canvas(w, h, (230, 230, 225))
    c.rect([120, 30, 1160, 930], fill="white", outline=(180, 180, 180), width=1)
    c.text((640, 110), "ANNUAL MAINTENANCE REPORT", 30, anchor="mm")
    rng = random.Random(1112)
    y = 180
    while y < 820:
        length = rng.randint(640, 900)
        c.rect([200, y, 200 + length, y + 10], fill=(200, 200, 200), outline=(200, 200, 200), width=1)
        y += 30 if rng.random() < 0.8 else 60
    serial = c.text((1150, 920), "SN: K4-7721", 10, fill=(60, 60, 60), anchor="rd")
    return c, rec(
        "OS", "ocr", "What serial number is printed in tiny text at the bottom-right of the document? Answer "
        "with the code after 'SN:'.", "K4-7721", "extractive_text",
        steps=[
            "The page is a report whose body text is blurred into grey lines.",
            "A very small line of text sits at the bottom-right of the page.",
            "Zooming into that corner makes it readable.",
            "It reads 'SN: K4-7721', so the serial number is K4-7721.",
        ],
        key_steps=["Zoom into the bottom-right corner of the page.", "Read the serial number: K4-7721."],
        boxes=[serial], domain="ocr", tool="zoom",
    )


@item("os-ocr-013")
def _os_shelf_price_tag() -> tuple[Canvas, dict[str, Any]]:
    w, h = 1280, 960
    c = Canvas(w, h, (245, 240, 230))
    rng = random.Random(1113)
    palette = [(200, 80, 60), (60, 120, 180), (230, 180, 50), (90, 160, 90)]
    for shelf_y in (300, 580, 860):
        c.rect([40, shelf_y, w - 40, shelf_y + 18], fill=(140, 100, 60), outline=(100, 70, 40), width=1)
        x = 60
        while x < w - 160:
            bw, bh = rng.randint(70, 130), rng.randint(120, 220)
            c.rect([x, shelf_y - bh, x + bw, shelf_y - 1], fill=palette[rng.randrange(4)], outline="black", width=1)
            x += bw + rng.randint(10, 30)
    tag = c.rect([46, 881, 100, 901], fill="white", outline="black", width=1)
    c.text((73, 891), "$3.85", 11, anchor="mm", pad=0)
    return c, rec(
        "OS", "ocr", "What price is written on the small white tag at the lower-left end of the bottom shelf? "
        "Give the number only.", "3.85", "decimal_number",
        steps=[
            "The image shows three shelves of boxes.",
            "A tiny white price tag hangs under the left end of the bottom shelf.",
            "Zooming into that tag makes the price readable.",
            "The tag reads $3.85, so the price is 3.85.",
        ],
        key_steps=["Zoom into the tag under the bottom shelf's left end.", "Read the price: 3.85."],
        boxes=[tag], domain="ocr", tool="zoom",
    )


@item("os-gui-014")
def _os_phone_battery() -> tuple[Canvas, dict[str, Any]]:
    w, h = 1080, 1080
    c = Canvas(w, h, (30, 30, 35))
    c.rect([0, 0, w - 1, 22], fill=(15, 15, 20), outline=(15, 15, 20), width=1)
    c.text((12, 11), "09:41", 9, fill="white", anchor="lm")
    battery = c.text((w - 10, 11), "Battery 37%", 10, fill="white", anchor="rm")
    c.text((60, 90), "Settings", 44, fill="white", anchor="lm")
    for i, (label, on) in enumerate([("Wi-Fi", True), ("Bluetooth", False), ("Airplane mode", False),
                                     ("Dark theme", True)]):
        y = 200 + i * 130
        c.rect([40, y, w - 40, y + 100], fill=(50, 50, 58), outline=(70, 70, 80), width=1)
        c.text((80, y + 50), label, 30, fill="white", anchor="lm")
        knob = COLOURS["green"] if on else (110, 110, 110)
        c.rect([w - 200, y + 30, w - 80, y + 70], fill=knob, outline=knob, width=1)
        c.text((w - 140, y + 50), "ON" if on else "OFF", 20, fill="white", anchor="mm")
    return c, rec(
        "OS", "ocr", "What battery percentage does the phone's status bar show? Give the number only.", "37",
        "integer_number",
        steps=[
            "The screenshot shows a phone's settings screen.",
            "The status bar at the very top holds tiny text.",
            "Zooming into the top-right corner makes it readable.",
            "It reads 'Battery 37%', so the answer is 37.",
        ],
        key_steps=["Zoom into the status bar's right end.", "Read the battery level: 37."],
        boxes=[battery], domain="gui", tool="zoom",
    )


# ---- KR: knowledge reasoning -------------------------------------------------------------------

@item("kr-stem-001")
def _kr_hypotenuse() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, "white")
    a, b = 6, 8
    hyp = math.isqrt(a * a + b * b)
    p0, p1, p2 = (100, 300), (100, 300 - a * 30), (100 + b * 40, 300)
    c.draw.polygon([p0, p1, p2], fill=(230, 240, 255), outline="black", width=3)
    c.rect([100, 282, 118, 300], outline="black", width=1)
    la = c.text((88, 210), str(a), 22, anchor="rm")
    lb = c.text((260, 312), str(b), 22, anchor="mt")
    lh = c.text((275, 190), "?", 24, fill=COLOURS["red"], anchor="mm")
    return c, rec(
        "KR", "stem", f"A right triangle has legs of length {a} and {b}. How long is its hypotenuse?", str(hyp),
        "integer_number",
        steps=[
            f"The legs of the right triangle are {a} and {b}.",
            "By the Pythagorean theorem the hypotenuse is sqrt(a^2 + b^2).",
            f"{a}^2 + {b}^2 = {a * a} + {b * b} = {a * a + b * b}.",
            f"sqrt({a * a + b * b}) = {hyp}.",
        ],
        key_steps=["Apply the Pythagorean theorem.", f"Compute sqrt({a * a + b * b}) = {hyp}."],
        boxes=[la, lb, lh], domain="math", text_answerable=True,
    )


@item("kr-stem-002")
def _kr_rectangle_area() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, "white")
    wd, ht = RECT_SIDES
    rect = c.rect([100, 100, 100 + wd * 40, 100 + ht * 40], fill=(255, 240, 210), outline="black", width=3)
    lw = c.text((100 + wd * 20, 90), f"{wd} cm", 20, anchor="ms")
    lh = c.text((90, 100 + ht * 20), f"{ht} cm", 20, anchor="rm")
    area = wd * ht
    return c, rec(
        "KR", "stem", "What is the area of the rectangle in square centimetres?", str(area), "integer_number",
        steps=[
            f"The top side of the rectangle is labelled {wd} cm.",
            f"The left side is labelled {ht} cm.",
            "The area of a rectangle is width times height.",
            f"{wd} x {ht} = {area} square centimetres.",
        ],
        key_steps=[f"Read the side lengths {wd} cm and {ht} cm.", f"Multiply: {area}."],
        boxes=[Canvas.union(rect, lw, lh)], domain="math",
    )


@item("kr-stem-003")
def _kr_pens() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, "white")
    pens = []
    for i in range(3):
        x = 120 + i * 110
        pens.append(c.rect([x, 80, x + 18, 260], fill=COLOURS["blue"], outline="black", width=1))
        c.draw.polygon([(x, 260), (x + 18, 260), (x + 9, 290)], fill=(230, 200, 160), outline="black")
    tag = c.rect([330, 300, 420, 340], fill=COLOURS["yellow"], outline="black", width=1)
    c.text((375, 320), "$2 each", 16, anchor="mm")
    unit, n = 2, 3
    return c, rec(
        "KR", "stem", f"One pen costs {unit} dollars. How many dollars do {n} pens cost?", str(unit * n),
        "integer_number",
        steps=[
            f"Each pen costs {unit} dollars.",
            f"We need the price of {n} pens.",
            f"{n} x {unit} = {unit * n} dollars.",
        ],
        key_steps=[f"Use the unit price {unit}.", f"Multiply by {n}: {unit * n}."],
        boxes=[*pens, tag], domain="math", text_answerable=True,
    )


@item("kr-stem-004")
def _kr_mean_cards() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, (235, 245, 235))
    boxes = []
    for i, v in enumerate(MEAN_CARDS):
        x = 60 + i * 100
        boxes.append(c.rect([x, 120, x + 70, 220], fill="white", outline="black", width=2))
        c.text((x + 35, 170), str(v), 40, anchor="mm")
    total = sum(MEAN_CARDS)
    mean = total / len(MEAN_CARDS)
    return c, rec(
        "KR", "stem", "What is the mean (average) of the numbers on the cards?", f"{mean:g}", "decimal_number",
        steps=[
            "The cards show " + ", ".join(map(str, MEAN_CARDS)) + ".",
            f"Their sum is {' + '.join(map(str, MEAN_CARDS))} = {total}.",
            f"There are {len(MEAN_CARDS)} cards.",
            f"The mean is {total} / {len(MEAN_CARDS)} = {mean:g}.",
        ],
        key_steps=["Read the card numbers and add them.", f"Divide by the count: {mean:g}."],
        boxes=[Canvas.union(*boxes)], domain="math",
    )


@item("kr-stem-005")
def _kr_prime() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, "white")
    card = c.rect([170, 80, 310, 280], fill=(255, 250, 220), outline="black", width=3)
    c.text((240, 180), "7", 96, anchor="mm")
    return c, rec(
        "KR", "stem", "The card shows the number 7. Is 7 a prime number?", "yes", "boolean_text",
        options=["yes", "no"],
        steps=[
            "The card shows the number 7.",
            "A prime number has exactly two divisors, 1 and itself.",
            "7 is not divisible by 2, 3, 4, 5 or 6.",
            "So 7 is prime: yes.",
        ],
        key_steps=["Read the number 7.", "Check its divisors: only 1 and 7, so yes."],
        boxes=[card], domain="math", text_answerable=True,
    )


@item("kr-know-006")
def _kr_element_tile() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, (240, 240, 240))
    tile = c.rect([160, 70, 320, 290], fill=(255, 225, 200), outline="black", width=3)
    c.text((176, 92), "26", 22, anchor="lm")
    c.text((240, 180), "Fe", 72, anchor="mm")
    c.text((240, 262), "55.845", 20, anchor="mm")
    options, letter = mc(["Iron", "Fluorine", "Lead", "Francium"], "Iron")
    return c, rec(
        "KR", "knowledge", "This periodic-table tile shows the chemical symbol Fe. Which element is it?", letter,
        "multiple_choice", options=options,
        steps=[
            "The tile shows the symbol Fe, atomic number 26.",
            "Fe comes from the Latin 'ferrum'.",
            "Ferrum is iron, element 26.",
            f"So the answer is Iron, option {letter}.",
        ],
        key_steps=["Read the symbol Fe.", "Recall Fe is iron."],
        boxes=[tile], domain="knowledge", text_answerable=True,
    )


@item("kr-know-007")
def _kr_planets() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(640, 300, (10, 10, 30))
    planets = ["Mercury", "Venus", "?", "Mars", "Jupiter", "Saturn", "Uranus", "Neptune"]
    c.shape("circle", 0, 150, 60, COLOURS["yellow"], outline=COLOURS["yellow"])
    c.text((10, 230), "Sun", 14, fill="white")
    sizes = [6, 10, 11, 8, 26, 22, 15, 15]
    marked: Box = []
    for i, (name, r) in enumerate(zip(planets, sizes)):
        x = 95 + i * 68
        b = c.shape("circle", x, 150, r, (150, 170, 220), outline="white")
        t = c.text((x, 200 if i % 2 == 0 else 100), name, 13 if name != "?" else 22,
                   fill="white" if name != "?" else COLOURS["red"], anchor="mm")
        if name == "?":
            marked = Canvas.union(b, t)
    options, letter = mc(["Venus", "Earth", "Mars", "Jupiter"], "Earth")
    return c, rec(
        "KR", "knowledge", "The diagram shows the planets in order from the Sun. Which planet is marked with a "
        "question mark?", letter, "multiple_choice", options=options,
        steps=[
            "The planets are drawn in order of distance from the Sun.",
            "The question mark is on the third planet, after Mercury and Venus and before Mars.",
            "The third planet from the Sun is Earth.",
            f"Earth is option {letter}.",
        ],
        key_steps=["Locate the marked planet: third from the Sun.", "Recall the third planet is Earth."],
        boxes=[marked], domain="knowledge",
    )


@item("kr-know-008")
def _kr_postcard_capital() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, (250, 235, 210))
    c.rect([20, 20, 459, 339], outline=(150, 90, 60), width=4)
    c.draw.polygon([(240, 60), (290, 280), (190, 280)], outline=(90, 80, 70), width=4)
    c.line([(212, 190), (268, 190)], fill=(90, 80, 70), width=4)
    caption = c.text((240, 310), "Greetings from the capital of France", 18, anchor="mm")
    return c, rec(
        "KR", "knowledge", "This postcard comes from the capital of France. Which city is that? Answer with the "
        "city name.", "Paris", "extractive_text",
        steps=[
            "The postcard says it is from the capital of France.",
            "It shows a tall iron tower shape.",
            "The capital of France is Paris.",
        ],
        key_steps=["Read the caption: capital of France.", "Recall the capital: Paris."],
        boxes=[caption], domain="knowledge", text_answerable=True,
    )


@item("kr-know-009")
def _kr_thermometer() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(360, 480, "white")
    x, top, bottom = 180, 40, 400
    c.rect([x - 12, top, x + 12, bottom], fill="white", outline="black", width=2)
    for v in range(0, 121, 20):
        y = bottom - (bottom - top) * v // 120
        c.line([(x + 12, y), (x + 24, y)], width=2)
        c.text((x + 30, y), f"{v} °C", 14, anchor="lm")
    level = bottom - (bottom - top) * 100 // 120
    mercury = c.rect([x - 8, level, x + 8, bottom + 20], fill=COLOURS["red"], outline=COLOURS["red"], width=1)
    c.shape("circle", x, bottom + 30, 24, COLOURS["red"], outline="black")
    mark = c.text((x + 30, level), "100 °C", 14, anchor="lm")
    return c, rec(
        "KR", "knowledge", "A pot of water at sea level is heated. The thermometer shows its temperature. Is the "
        "water at its boiling point?", "yes", "boolean_text", options=["yes", "no"],
        steps=[
            "The red column of the thermometer ends at the 100 °C mark.",
            "At sea level water boils at 100 °C.",
            "The reading equals the boiling point, so the answer is yes.",
        ],
        key_steps=["Read the thermometer: 100 °C.", "Recall water boils at 100 °C at sea level: yes."],
        boxes=[Canvas.union(mercury, mark)], domain="knowledge",
    )


@item("kr-reason-010")
def _kr_sequence() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(560, 240, "white")
    seq = [2, 4, 6, 8]
    boxes = []
    for i, v in enumerate(seq + [None]):
        x = 40 + i * 100
        boxes.append(c.rect([x, 70, x + 80, 170], fill=(230, 240, 255) if v else "white", outline="black", width=2))
        c.text((x + 40, 120), str(v) if v else "?", 40, fill="black" if v else COLOURS["red"], anchor="mm")
    nxt = seq[-1] + (seq[1] - seq[0])
    return c, rec(
        "KR", "general_reasoning", "The cards show 2, 4, 6, 8 and then a blank card. What number belongs on the "
        "blank card?", str(nxt), "integer_number",
        steps=[
            "The cards read 2, 4, 6, 8.",
            "Each number is 2 more than the one before.",
            f"The next number is 8 + 2 = {nxt}.",
        ],
        key_steps=["Find the rule: add 2.", f"Apply it to 8: {nxt}."],
        boxes=[Canvas.union(*boxes)], domain="math", text_answerable=True,
    )


@item("kr-reason-011")
def _kr_clock() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(400, 400, (245, 245, 245))
    cx, cy, r = 200, 200, 160
    face = c.shape("circle", cx, cy, r, "white")
    for k in range(1, 13):
        ang = math.radians(k * 30 - 90)
        c.text((cx + round((r - 26) * math.cos(ang)), cy + round((r - 26) * math.sin(ang))), str(k), 22, anchor="mm")
    hh, mm = CLOCK_TIME
    m_ang = math.radians(mm * 6 - 90)
    h_ang = math.radians((hh % 12) * 30 + mm * 0.5 - 90)
    c.line([(cx, cy), (cx + round(125 * math.cos(m_ang)), cy + round(125 * math.sin(m_ang)))], width=4)
    c.line([(cx, cy), (cx + round(80 * math.cos(h_ang)), cy + round(80 * math.sin(h_ang)))], width=8)
    c.shape("circle", cx, cy, 6, "black")
    t = f"{hh}:{mm:02d}"
    return c, rec(
        "KR", "general_reasoning", "What time does the clock show? Answer in H:MM format.", t, "extractive_text",
        steps=[
            f"The long minute hand points at {mm // 5 if mm else 12}, which means {mm} minutes.",
            f"The short hour hand lies between {hh} and {hh % 12 + 1}.",
            f"So the hour is {hh}.",
            f"The clock shows {t}.",
        ],
        key_steps=[f"Read the minute hand: {mm} minutes.", f"Read the hour hand: {hh}, giving {t}."],
        boxes=[face], domain="real_world",
    )


@item("kr-reason-012")
def _kr_graph_path() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, "white")
    for a, b in GRAPH_EDGES:
        c.line([GRAPH_NODES[a], GRAPH_NODES[b]], fill=(80, 80, 80), width=3)
    boxes = {}
    for name, (x, y) in GRAPH_NODES.items():
        boxes[name] = c.shape("circle", x, y, 22, (200, 225, 255))
        c.text((x, y), name, 20, anchor="mm")
    d = shortest_path_edges(GRAPH_EDGES, "A", "E")
    return c, rec(
        "KR", "general_reasoning", "Moving only along the drawn lines, what is the smallest number of lines you "
        "must travel to get from node A to node E?", str(d), "integer_number",
        steps=[
            "A connects directly to B and D; neither B nor D connects directly to E.",
            "So E cannot be reached in 2 lines.",
            "The path A-B-C-E uses 3 lines (A-D-F-E also does).",
            f"The minimum is {d}.",
        ],
        key_steps=["Read the edges around A and E.", f"Find the shortest path length: {d}."],
        boxes=[Canvas.union(*boxes.values())], domain="math",
    )


@item("kr-reason-013")
def _kr_heights() -> tuple[Canvas, dict[str, Any]]:
    c = Canvas(480, 360, "white")
    boxes = bar_chart(c, HEIGHTS, (70, 60, 450, 320), "Height (cm)", 200, 50, colour=(170, 120, 200))
    tallest = max(HEIGHTS, key=HEIGHTS.__getitem__)
    options, letter = mc(["Ann", "Ben", "Cal", "They are all the same height"], tallest)
    return c, rec(
        "KR", "general_reasoning", "Who is the tallest of the three children?", letter, "multiple_choice",
        options=options,
        steps=[
            "The chart gives each child's height in cm.",
            "The heights are " + ", ".join(f"{k} {v}" for k, v in HEIGHTS.items()) + ".",
            f"The greatest is {HEIGHTS[tallest]} cm, {tallest}.",
            f"{tallest} is option {letter}.",
        ],
        key_steps=["Read the three heights.", f"Pick the greatest: {tallest}."],
        boxes=[boxes[tallest]], domain="math",
    )


@item("kr-stem-014")
def _kr_circle_diameter() -> tuple[Canvas, dict[str, Any]]:
    w, h = 1280, 960
    c = Canvas(w, h, "white")
    c.text((640, 80), "Worksheet 3: Circles", 36, anchor="mm")
    c.shape("circle", 640, 480, 260, (230, 245, 255))
    c.line([(640, 480), (900, 480)], fill=COLOURS["red"], width=3)
    c.text((770, 465), "r", 28, fill=COLOURS["red"], anchor="ms")
    note = c.text((12, h - 10), f"Note: r = {CIRCLE_RADIUS_CM} cm", 10, fill=(70, 70, 70), anchor="ld")
    d = 2 * CIRCLE_RADIUS_CM
    return c, rec(
        "KR", "stem", "The tiny note in the bottom-left corner gives the circle's radius. What is the circle's "
        "diameter in cm?", str(d), "integer_number",
        steps=[
            "The worksheet shows a circle with its radius r marked.",
            "The value of r is only in a tiny note in the bottom-left corner.",
            f"Zooming in, the note reads 'r = {CIRCLE_RADIUS_CM} cm'.",
            f"The diameter is 2r = 2 x {CIRCLE_RADIUS_CM} = {d} cm.",
        ],
        key_steps=[f"Zoom into the note and read r = {CIRCLE_RADIUS_CM}.", f"Double it: {d}."],
        boxes=[note], domain="math", tool="zoom",
    )


# --------------------------------------------------------------------------------------------
# Build
# --------------------------------------------------------------------------------------------

def item_names() -> list[str]:
    """Names of all demo items, in manifest order."""
    return [name for name, _ in _BUILDERS]


def render_item(name: str) -> tuple[Image.Image, dict[str, Any]]:
    """Render one item: its image and its full manifest record."""
    builders = dict(_BUILDERS)
    if name not in builders:
        raise ValueError(f"unknown demo item {name!r}; known: {', '.join(item_names())}")
    canvas, fields = builders[name]()
    record: dict[str, Any] = {
        "uid": UID_PREFIX + name,
        "source": SOURCE,
        "family": fields["family"],
        "category": fields["category"],
        "question": fields["question"],
        "options": fields["options"],
        "answer": fields["answer"],
        "answer_type": fields["answer_type"],
        "image": f"{IMAGES_DIR}/{name}.png",
        "image_size": [canvas.width, canvas.height],
        **{k: v for k, v in fields.items() if k not in {"family", "category", "question", "options", "answer",
                                                        "answer_type"}},
    }
    validate_record(record)
    return canvas.image, record


def validate_record(record: dict[str, Any]) -> None:
    """Check one record's invariants; raises ``ValueError`` naming the uid, field and value."""
    uid = record.get("uid")

    def fail(field: str, why: str) -> None:
        raise ValueError(f"{uid}: field {field!r} = {record.get(field)!r}: {why}")

    fam, cat = record["family"], record["category"]
    if fam not in FAMILIES:
        fail("family", f"must be one of {sorted(FAMILIES)}")
    if cat not in FAMILIES[fam]:
        fail("category", f"must be one of {FAMILIES[fam]} for family {fam}")
    if record["answer_type"] not in ANSWER_TYPES:
        fail("answer_type", f"must be one of {ANSWER_TYPES}")
    if record["domain"] not in DOMAINS:
        fail("domain", f"must be one of {DOMAINS}")
    if record["tool"] is not None and record["tool"] not in TOOLS:
        fail("tool", f"must be null or one of {TOOLS}")
    opts = record["options"]
    if record["answer_type"] == "multiple_choice":
        if not opts or len(opts) > len(LETTERS) or record["answer"] not in LETTERS[: len(opts)]:
            fail("answer", f"must be a letter among {LETTERS[: len(opts or [])]!r} for options {opts!r}")
    elif record["answer_type"] == "boolean_text":
        if not opts or record["answer"] not in opts:
            fail("answer", f"must be one of the options {opts!r}")
    if not 3 <= len(record["reference_steps"]) <= 6:
        fail("reference_steps", "needs 3 to 6 steps")
    if not 2 <= len(record["key_steps"]) <= 4:
        fail("key_steps", "needs 2 to 4 steps")
    w, h = record["image_size"]
    if not record["evidence_boxes"]:
        fail("evidence_boxes", "needs at least one box")
    for box in record["evidence_boxes"]:
        if len(box) != 4 or not all(isinstance(v, int) for v in box):
            fail("evidence_boxes", f"box {box!r} is not four integers")
        x0, y0, x1, y1 = box
        if not (0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h):
            fail("evidence_boxes", f"box {box!r} is empty or outside the {w}x{h} image")


def build_demo(out_dir: Path | str) -> Path:
    """Render every demo item into ``out_dir`` and return the path of its ``manifest.jsonl``.

    Writes ``out_dir/images/<name>.png`` per item (removing stale ``.png`` files there that no
    item produces) and ``out_dir/manifest.jsonl``, one JSON record per line in registration order.
    """
    out = Path(out_dir)
    images = out / IMAGES_DIR
    images.mkdir(parents=True, exist_ok=True)
    lines, produced = [], set()
    for name in item_names():
        image, record = render_item(name)
        path = out / record["image"]
        save_png(image, path)
        produced.add(path.name)
        lines.append(json.dumps(record, ensure_ascii=False))
    for stale in sorted(images.glob("*.png")):
        if stale.name not in produced:
            stale.unlink()
    manifest = out / MANIFEST_NAME
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")
    return manifest


def summarize(manifest: Path | str) -> dict[str, dict[str, int]]:
    """Counts by family, category, answer_type, domain and tool for a demo manifest."""
    counts: dict[str, dict[str, int]] = {k: {} for k in ("family", "category", "answer_type", "domain", "tool")}
    for line in Path(manifest).read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        for k in counts:
            key = str(r[k])
            counts[k][key] = counts[k].get(key, 0) + 1
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render the howeval demo benchmark (images + manifest.jsonl).")
    parser.add_argument("--out", type=Path, default=Path("datasets/demo"), help="output folder (default: %(default)s)")
    args = parser.parse_args(argv)
    manifest = build_demo(args.out)
    counts = summarize(manifest)
    total = sum(counts["family"].values())
    print(f"wrote {total} items to {manifest}")
    for k, v in counts.items():
        print(f"  {k}: " + ", ".join(f"{name}={n}" for name, n in sorted(v.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
