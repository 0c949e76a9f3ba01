"""howeval.training.prompts: the hash split, prompt rows (text and image), the curriculum order."""
from __future__ import annotations

import pytest

from howeval.training.prompts import build_rows, curriculum_rows, difficulty, train_split


def samples(n=50):
    return [{"sample_id": f"s{i}", "question": "q" * (i % 7 + 1), "answer": str(i), "answer_type": "integer_number",
             "options": None, "reference_steps": ["a"] * (i % 5)} for i in range(n)]


def test_train_split_is_deterministic_and_disjoint():
    s = samples(200)
    tr, ho = train_split(s, 0.8, 0), train_split(s, 0.8, 0, side="heldout")
    assert {x["sample_id"] for x in tr}.isdisjoint({x["sample_id"] for x in ho}) and len(tr) + len(ho) == 200
    assert 130 < len(tr) < 190
    assert [x["sample_id"] for x in train_split(list(reversed(s)), 0.8, 0)] == [x["sample_id"] for x in reversed(tr)]
    assert {x["sample_id"] for x in train_split(s[:10], 0.8, 0)} == {x["sample_id"] for x in tr if x in s[:10]}
    assert train_split(s, 0.8, 1) != tr
    assert len(train_split(s, 1.0, 0)) == 200 and train_split(s, 0.5, side="all") == s
    with pytest.raises(ValueError):
        train_split(s, 0.0)


def test_build_rows_uses_question_text():
    rows = build_rows(samples(3), system_prompt="sys", kind="base")
    assert rows[0]["prompt"][0] == {"role": "system", "content": "sys"}
    assert rows[0]["prompt"][1]["content"].endswith("Put your final answer in \\boxed{}.")
    assert rows[2]["reference_steps"] == ["a", "a"] and rows[2]["difficulty"] == 2 and rows[0]["options"] == []
    with pytest.raises(ValueError, match="lack them"):
        build_rows(samples(3), kind="cpr")  # s0 has no reference steps


def test_curriculum_order():
    rows = build_rows(samples(20))
    out = curriculum_rows(rows, switch_step=3, prompts_per_step=2)
    assert len(out) == 6 + 20
    phase2 = out[6:]
    keys = [difficulty({"reference_steps": r["reference_steps"], "question": r["prompt"][-1]["content"],
                        "sample_id": r["sample_id"]}) for r in phase2]
    assert [k[0] for k in keys] == sorted(k[0] for k in keys)  # increasing difficulty
    assert sorted(r["sample_id"] for r in phase2) == sorted(r["sample_id"] for r in rows)
    assert curriculum_rows(rows[:2], 3, 2)[:6] == curriculum_rows(rows[:2], 3, 2)[:6]  # cycles, deterministic
    assert len({r["sample_id"] for r in curriculum_rows(rows[:2], 3, 2)[:6]}) == 2


def test_build_rows_with_images_and_dataset_decodes_them():
    import io

    from PIL import Image

    from howeval.training.prompts import images_dataset

    buf = io.BytesIO()
    Image.new("RGB", (8, 6), (255, 0, 0)).save(buf, format="PNG")
    png = buf.getvalue()
    s = {"sample_id": "a", "question": "Colour?", "options": None, "answer": "red", "answer_type": "extractive_text",
         "images": [png, png]}
    rows = build_rows([s], "sys", "base", images=True)
    assert rows[0]["images"] == [png, png]
    assert rows[0]["prompt"][1] == {"role": "user", "content": "Colour?\nPut your final answer in \\boxed{}."}
    ds = images_dataset(rows)
    imgs = ds[0]["images"]
    assert [im.size for im in imgs] == [(8, 6), (8, 6)] and imgs[0].convert("RGB").getpixel((0, 0)) == (255, 0, 0)
    assert "images" not in build_rows([s], None, "base")[0]
    with pytest.raises(ValueError, match="no image"):
        build_rows([{**s, "images": []}], None, "base", images=True)
