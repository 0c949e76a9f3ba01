"""Tests for datasets/make_demo.py (the demo-set generator script): determinism, committed output, record invariants, exact answers."""
from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections import Counter
from pathlib import Path

import PIL
import pytest
from PIL import Image

REPO = Path(__file__).resolve().parents[3]
COMMITTED = REPO / "datasets" / "demo"
_spec = importlib.util.spec_from_file_location("make_demo", REPO / "datasets" / "make_demo.py")
dd = sys.modules["make_demo"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dd)
CARD = REPO / "datasets" / "README.md"


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _records(manifest: Path) -> list[dict]:
    return [json.loads(line) for line in manifest.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dd.build_demo(tmp_path_factory.mktemp("demo_a"))


@pytest.fixture(scope="module")
def records(built: Path) -> dict[str, dict]:
    return {r["uid"]: r for r in _records(built)}


def test_build_is_byte_deterministic(built: Path, tmp_path: Path) -> None:
    again = dd.build_demo(tmp_path / "demo_b")
    assert again.name == "manifest.jsonl"
    a, b = _tree(built.parent), _tree(again.parent)
    assert a.keys() == b.keys()
    assert [k for k in a if a[k] != b[k]] == []


def test_build_removes_stale_images(tmp_path: Path) -> None:
    stale = tmp_path / "images" / "old-item.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"x")
    dd.build_demo(tmp_path)
    assert not stale.exists()


def test_committed_output_matches_generator(built: Path) -> None:
    assert COMMITTED.joinpath("manifest.jsonl").exists(), "run: python datasets/make_demo.py --out datasets/demo"
    fresh, committed = _tree(built.parent), _tree(COMMITTED)
    assert fresh.keys() == committed.keys()
    assert fresh["manifest.jsonl"] == committed["manifest.jsonl"], "regenerate datasets/demo"
    m = re.search(r"Pillow (\d+\.\d+\.\d+)", CARD.read_text(encoding="utf-8"))
    if m and m.group(1) != PIL.__version__:
        pytest.skip(f"PNG bytes were rendered with Pillow {m.group(1)}, this is {PIL.__version__}")
    assert [k for k in fresh if fresh[k] != committed[k]] == [], "regenerate datasets/demo"


def test_counts_per_family_and_category(records: dict[str, dict]) -> None:
    fams = Counter(r["family"] for r in records.values())
    assert all(fams[f] >= 12 for f in dd.FAMILIES), fams
    cats = Counter((r["family"], r["category"]) for r in records.values())
    for fam, categories in dd.FAMILIES.items():
        for cat in categories:
            assert cats[(fam, cat)] >= 2, (fam, cat, cats)
    assert sum(len(c) for c in dd.FAMILIES.values()) == 9
    types = Counter(r["answer_type"] for r in records.values())
    assert set(types) == set(dd.ANSWER_TYPES), types
    assert sum(r["text_answerable"] for r in records.values()) >= 4


def test_record_fields_and_images(built: Path, records: dict[str, dict]) -> None:
    keys = ["uid", "source", "family", "category", "question", "options", "answer", "answer_type", "image",
            "image_size", "reference_steps", "evidence_boxes", "key_steps", "domain", "tool_required", "tool",
            "text_answerable"]
    for uid, r in records.items():
        assert list(r) == keys, uid
        assert uid.startswith("demo:") and r["source"] == "howeval demo"
        assert r["domain"] in dd.DOMAINS
        assert 3 <= len(r["reference_steps"]) <= 6 and 2 <= len(r["key_steps"]) <= 4, uid
        assert all(isinstance(s, str) and s.strip() for s in r["reference_steps"] + r["key_steps"]), uid
        path = built.parent / r["image"]
        assert path.is_file(), uid
        with Image.open(path) as im:
            assert im.size == tuple(r["image_size"]) and im.mode == "RGB", uid
            w, h = im.size
        assert r["evidence_boxes"], uid
        for x0, y0, x1, y1 in r["evidence_boxes"]:
            assert all(isinstance(v, int) for v in (x0, y0, x1, y1)), uid
            assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h, (uid, (x0, y0, x1, y1), (w, h))


def test_answers_are_valid_for_options(records: dict[str, dict]) -> None:
    for uid, r in records.items():
        if r["answer_type"] == "multiple_choice":
            assert 2 <= len(r["options"]) <= 4, uid
            assert r["answer"] in "ABCD"[: len(r["options"])] and len(r["answer"]) == 1, uid
        elif r["answer_type"] == "boolean_text":
            assert r["options"] == ["yes", "no"] and r["answer"] in r["options"], uid
        else:
            assert r["options"] is None, uid
        if r["answer_type"] == "integer_number":
            int(r["answer"])
        if r["answer_type"] == "decimal_number":
            float(r["answer"])


def test_tool_required_items_have_small_evidence(records: dict[str, dict]) -> None:
    zoom = [r for r in records.values() if r["tool"] == "zoom"]
    assert len(zoom) >= 6
    for r in records.values():
        assert r["tool_required"] == (r["tool"] is not None)
    for r in zoom:
        w, h = r["image_size"]
        assert w * h >= 1000 * 900, r["uid"]
        for x0, y0, x1, y1 in r["evidence_boxes"]:
            assert (x1 - x0) * (y1 - y0) < 0.01 * w * h, r["uid"]
            # in a corner region: within 15% of two edges
            near_x = x0 < 0.15 * w or x1 > 0.85 * w
            near_y = y0 < 0.15 * h or y1 > 0.85 * h
            assert near_x and near_y, r["uid"]


def test_exact_answers_recomputed_from_generator_data(records: dict[str, dict]) -> None:
    def opt(uid: str) -> str:
        r = records[uid]
        return r["options"]["ABCD".index(r["answer"])]

    sales = dd.FRUIT_SALES
    assert records["demo:os-chart-001"]["answer"] == str(sales["Apples"])
    assert opt("demo:os-chart-002") == sorted(sales, key=lambda k: -sales[k])[0]
    assert records["demo:os-chart-003"]["answer"] == str(max(sales.values()) - min(sales.values()))
    temps = dd.MONTH_TEMPS
    assert records["demo:os-chart-004"]["answer"] == sorted(temps, key=lambda k: temps[k])[0]
    assert float(records["demo:os-chart-005"]["answer"]) == temps["Apr"]
    assert records["demo:os-chart-006"]["answer"] == str(dd.SURVEY_N)
    total = sum(p for _, p in dd.RECEIPT_ITEMS)
    assert records["demo:os-ocr-007"]["answer"] == f"{total / 100:.2f}"
    assert records["demo:os-ocr-008"]["answer"] == f"{dict(dd.RECEIPT_ITEMS)['Eggs'] / 100:.2f}"
    assert records["demo:os-ocr-010"]["answer"] == next(t for d, _, t in dd.TIMETABLE if d == "Oxford")
    assert opt("demo:os-ocr-011") == sorted(dd.RAINFALL, key=lambda k: -dd.RAINFALL[k])[0]
    red_circles = [s for s in dd.VG_COUNT_SHAPES if s[0] == "circle" and s[1] == "red"]
    assert records["demo:vg-count-001"]["answer"] == str(len(red_circles))
    assert len(records["demo:vg-count-001"]["evidence_boxes"]) == len(red_circles)
    assert records["demo:vg-count-002"]["answer"] == str(dd.VG_TRIANGLES)
    assert records["demo:kr-stem-002"]["answer"] == str(dd.RECT_SIDES[0] * dd.RECT_SIDES[1])
    assert float(records["demo:kr-stem-004"]["answer"]) == sum(dd.MEAN_CARDS) / len(dd.MEAN_CARDS)
    assert records["demo:kr-stem-014"]["answer"] == str(2 * dd.CIRCLE_RADIUS_CM)
    assert opt("demo:kr-reason-013") == sorted(dd.HEIGHTS, key=lambda k: -dd.HEIGHTS[k])[0]
    hh, mm = dd.CLOCK_TIME
    assert records["demo:kr-reason-011"]["answer"] == f"{hh}:{mm:02d}"


def _bfs(edges, start, goal):
    frontier, seen, d = {start}, {start}, 0
    while frontier:
        if goal in frontier:
            return d
        nxt = {b for a, b in edges if a in frontier} | {a for a, b in edges if b in frontier}
        frontier, d = nxt - seen, d + 1
        seen |= frontier
    return None


def test_graph_answer_and_helper(records: dict[str, dict]) -> None:
    d = _bfs(dd.GRAPH_EDGES, "A", "E")
    assert records["demo:kr-reason-012"]["answer"] == str(d)
    assert dd.shortest_path_edges([("x", "y"), ("y", "z")], "x", "z") == 2
    with pytest.raises(ValueError, match="no path"):
        dd.shortest_path_edges([("x", "y")], "x", "q")


def test_chart_evidence_box_covers_the_drawn_bar(built: Path, records: dict[str, dict]) -> None:
    # the Apples bar is filled with the chart's blue; its box must contain blue pixels, the Grapes box too
    r = records["demo:os-chart-003"]
    with Image.open(built.parent / r["image"]) as im:
        for box in r["evidence_boxes"]:
            colours = {c for _, c in im.crop(box).getcolors(maxcolors=1 << 16)}
            assert dd.COLOURS["blue"] in colours, box


def test_helpers_validate() -> None:
    assert dd.cents(1150) == "11.50" and dd.cents(5) == "0.05"
    with pytest.raises(ValueError, match="unknown demo item"):
        dd.render_item("nope")
    _, good = dd.render_item("vg-color-003")
    bad = dict(good, answer="E")
    with pytest.raises(ValueError, match="letter"):
        dd.validate_record(bad)
    bad = dict(good, evidence_boxes=[[0, 0, good["image_size"][0] + 1, 10]])
    with pytest.raises(ValueError, match="outside"):
        dd.validate_record(bad)


def test_dataset_card_counts_match(records: dict[str, dict]) -> None:
    text = CARD.read_text(encoding="utf-8")
    assert re.search(rf"\b{len(records)} items\b", text), "update the counts in datasets/README.md"
    for fam, n in Counter(r["family"] for r in records.values()).items():
        assert re.search(rf"\|\s*{fam}\s*\|.*\|\s*{n}\s*\|", text), fam
    assert not (REPO / "datasets" / "__init__.py").exists()


def test_cli_writes_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert dd.main(["--out", str(tmp_path / "cli")]) == 0
    assert (tmp_path / "cli" / "manifest.jsonl").exists()
    assert "wrote" in capsys.readouterr().out
