"""build_mixture (issue 41): a mixture from local copies of the sources in their released layouts, with its
composition and provenance; OpenMMReasoner the majority, the three domains balanced.

The files are tiny invented ones in each source's released layout (OpenMMReasoner-RL-74K: verl Parquet, one
folder per config; ChartQA: ``train_human.json`` with ``png/``; InfographicVQA: ``{"data": [...]}``; PuzzleVQA:
JSON Lines per puzzle), as ``howeval.training.sources`` documents them."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from howeval.ray_jobs.build_mixture import main

# OpenMMReasoner configs at about a thousandth of their size (the train configs hold 72,971 rows, virl39k about half)
OMR_SIZES = {"algopuzzle": 30, "mmk12": 30, "thinklite_vl_hard": 40, "tqa_train": 20, "virl39k": 50,
             "wemath_pro": 10, "wemath_standard": 10}


def _sources(root):
    for sub, n in OMR_SIZES.items():
        shard = root / "OpenMMReasoner-RL-74K" / sub / "train-00000-of-00001.parquet"
        shard.parent.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist([{
            "data_source": sub, "ability": "math",
            "prompt": [{"role": "user", "content": f"<image>{sub} question {i}?"}],
            "images": [{"bytes": b"\x89PNG-" + sub.encode() + bytes([i]), "path": None}],
            "reward_model": {"style": "rule", "ground_truth": str(i % 5)}, "extra_info": {"index": i}}
            for i in range(n)]), shard)
    chart = root / "ChartQA" / "train"
    (chart / "png").mkdir(parents=True)
    (chart / "train_human.json").write_text(json.dumps(
        [{"imgname": f"c{i}.png", "query": f"What is bar {i}?", "label": str(i)} for i in range(20)]))
    info = root / "InfographicVQA"
    info.mkdir()
    (info / "infographicsVQA_train_v1.0.json").write_text(json.dumps({"data": [
        {"questionId": 1000 + i, "question": "How many?", "image_local_name": f"{i}.jpeg", "answers": [str(i)]}
        for i in range(20)]}))
    puz = root / "PuzzleVQA" / "data"
    puz.mkdir(parents=True)
    (puz / "circle_size_number.json").write_text("".join(json.dumps(
        {"image": f"images/circle_size_number/{i:04d}.png", "question": "What is the missing number?",
         "options": [1, 2, 3, 4], "answer": 2, "caption": "c", "explanation": "e", "deduction": "d"}) + "\n"
        for i in range(20)))


def test_mixture_from_released_layouts_is_majority_openmmreasoner_and_balanced(tmp_path, capsys):
    _sources(tmp_path / "data")
    (tmp_path / "mix.yaml").write_text(yaml.safe_dump({"total": 120, "seed": 0, "sources": [
        {"name": "OpenMMReasoner-RL-74K", "path": "data/OpenMMReasoner-RL-74K", "format": "released"},
        {"name": "ChartQA", "path": "data/ChartQA/train/train_human.json", "format": "released"},
        {"name": "InfographicVQA", "path": "data/InfographicVQA", "format": "released"},
        {"name": "PuzzleVQA", "path": "data/PuzzleVQA/data", "format": "released"}]}))
    out = tmp_path / "run"
    assert main(["--config", str(tmp_path / "mix.yaml"), "--output", str(out), "--strict"]) == 0
    comp = json.loads((out / "composition.json").read_text())
    assert comp["by_domain"] == {"math": 40, "logic": 40, "document": 40} and comp["balance"] == 0.0
    # math: OpenMMReasoner alone (90 rows); logic: its 30 algopuzzle rows + 10 PuzzleVQA; document: its 20 tqa + 20
    assert comp["by_domain_source"] == {"math": {"OpenMMReasoner-RL-74K": 40},
                                        "logic": {"OpenMMReasoner-RL-74K": 30, "PuzzleVQA": 10},
                                        "document": {"OpenMMReasoner-RL-74K": 20, "ChartQA": 10, "InfographicVQA": 10}}
    assert comp["majority"] == {"source": "OpenMMReasoner-RL-74K", "share": 0.75}
    assert comp["checks"] == {"primary_is_majority": True, "domains_balanced": True}
    assert comp["excluded"]["OpenMMReasoner-RL-74K"] == 50 and "virl39k" not in comp["by_subset"]["OpenMMReasoner-RL-74K"]
    rows = [json.loads(x) for x in (out / "mixture.jsonl").read_text().splitlines()]
    assert len(rows) == 120 and all(r["answer"] is not None and r["question"] for r in rows)
    omr = [r for r in rows if r["mixture_source"] == "OpenMMReasoner-RL-74K"]
    assert all(r["image"].startswith(str(out / "images" / "OpenMMReasoner-RL-74K")) for r in omr)
    md = (out / "composition.md").read_text()
    assert "| logic | OpenMMReasoner-RL-74K | 30 | 25.0% |" in md and "primary source is the majority: **True**" in md
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["job"] == "build_mixture" and prov["config"]["total"] == 120 and "commit" in prov["git"]
    src = {s["name"]: s for s in prov["sources"]}
    assert len(src["OpenMMReasoner-RL-74K"]["files"]) == 7 and src["OpenMMReasoner-RL-74K"]["rows_excluded"] == 50
    assert all(len(f["sha256"]) == 64 for f in src["OpenMMReasoner-RL-74K"]["files"])
    assert json.loads(capsys.readouterr().out)["checks"]["domains_balanced"] is True


def test_a_failed_check_is_printed_and_strict_exits_1(tmp_path, capsys):
    _sources(tmp_path / "data")
    (tmp_path / "mix.yaml").write_text(yaml.safe_dump({"total": 120, "sources": [
        {"name": "OpenMMReasoner-RL-74K", "path": "data/OpenMMReasoner-RL-74K", "format": "released", "cap": 30},
        {"name": "ChartQA", "path": "data/ChartQA/train/train_human.json", "format": "released"},
        {"name": "PuzzleVQA", "path": "data/PuzzleVQA/data", "format": "released"}]}))
    assert main(["--config", str(tmp_path / "mix.yaml"), "--output", str(tmp_path / "a")]) == 0
    assert main(["--config", str(tmp_path / "mix.yaml"), "--output", str(tmp_path / "b"), "--strict"]) == 1
    err = capsys.readouterr().err
    assert "check failed: primary_is_majority" in err and "check failed: domains_balanced" in err
    comp = json.loads((tmp_path / "b" / "composition.json").read_text())
    assert comp["by_source"]["OpenMMReasoner-RL-74K"] == 30 and comp["shortfall"]  # written anyway
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({"sources": [{"name": "WeMath", "path": "nope"}]}))
    assert main(["--config", str(tmp_path / "bad.yaml"), "--output", str(tmp_path / "c")]) == 2
    assert "sources.WeMath.path" in capsys.readouterr().err
