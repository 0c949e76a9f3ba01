"""bench/verify_bench.py's pieces: the verifier found in every layout a commit had, verdict moves and summaries."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[4] / "bench" / "verify_bench.py"


@pytest.fixture(scope="module")
def vb():
    spec = importlib.util.spec_from_file_location("verify_bench", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    "layout, module",
    [
        ("howeval/verify.py", "howeval.verify"),  # the first version (0a53a40)
        ("howeval/judges/verify.py", "howeval.judges.verify"),  # one file (24a9beb .. cc4f655)
        ("howeval/judges/verify/__init__.py", "howeval.judges.verify"),  # the package (4f3582a ..)
    ],
)
def test_verify_module_in_every_layout(vb, tmp_path, layout, module):
    (tmp_path / layout).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / layout).write_text("")
    assert vb._verify_module(tmp_path) == module


def test_verify_module_missing_names_what_it_looked_for(vb, tmp_path):
    with pytest.raises(FileNotFoundError, match="judges/verify.py"):
        vb._verify_module(tmp_path)


def test_shapes_cover_every_class_without_shared_data(vb):
    items = vb.load_items(None)
    assert items and all(not it["real"] and it["group"].startswith("shapes: ") for it in items)
    assert {it["cls"] for it in items if it["cls"]} == set(range(1, 11))
    mc = [it for it in items if it["answer_type"] == "multiple_choice" and it["cls"] in (3, 8)]
    assert len(mc) >= 5  # multiple choice with whole sentences and echoed option lists (class 8's path)


def test_moves_and_summary(vb):
    items = [{"uid": u, "real": True, "label": lab} for u, lab in (("a", True), ("b", False), ("c", True), ("d", True))]
    items.append({"uid": "s", "real": False, "expected": None})
    before = [{"correct": c} for c in (True, False, None, True, True)]
    after = [{"correct": c} for c in (False, False, True, None, None)]
    moves = vb._moves(items, before, after)
    assert moves == {"right -> wrong": ["a"], "open -> right": ["c"], "right -> open": ["d"]}
    s = vb._verdict_summary(items, after)
    assert s["real"] == {"n": 4, "agree": 2, "disagree": 1, "unresolved": 1, "error": 0, "unresolved_rate": 0.25}
    assert s["shapes"] == {"n": 1, "as_expected": 1, "wrong": 0, "unresolved_expected_decided": 0, "error": 0}
    s = vb._verdict_summary(items, before)
    assert s["shapes"]["wrong"] == 1  # a verdict where the reader leaves it open is wrong
