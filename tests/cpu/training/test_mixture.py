"""PatternRL's RL data mixture (issue 31): the paper's sources, virl39k left out, balanced domains.

The sources here are a few synthetic rows per source in the project's manifest format (``datasets/README.md``),
not in each set's released layout (those readers: test_sources.py)."""
from __future__ import annotations

import json

import pytest

from howeval.training.mixture import PAPER_SOURCES, MixtureConfig, build_mixture, main


def manifest(tmp_path, name, n, **extra):
    path = tmp_path / name / "manifest.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"uid": f"{name}:{i}", "question": f"q{i}?", "answer": str(i), "answer_type": "integer_number",
             "image": f"images/{i}.png", **{k: (v(i) if callable(v) else v) for k, v in extra.items()}}
            for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture
def sources(tmp_path):
    sizes = {"OpenMMReasoner-RL-74K": 40, "WeMath": 6, "MMK12": 6, "ThinkLite-VL-Hard-11K": 8, "PuzzleVQA": 10,
             "AlgoPuzzleVQA": 10, "TextbookQA": 10, "ChartQA": 10, "InfographicVQA": 10}
    out = []
    for name, n in sizes.items():
        extra = {"subset": lambda i: "virl39k" if i % 2 else "mmr1"} if name.startswith("OpenMM") else {}
        out.append({"name": name, "path": manifest(tmp_path, name, n, **extra)})
    return out


def test_paper_mixture_balances_domains_and_leaves_virl39k_out(sources):
    rows, comp = build_mixture(MixtureConfig(total=45, sources=sources))
    assert comp["by_domain"] == {"math": 15, "logic": 15, "document": 15} and comp["shortfall"] == {}
    assert comp["available"]["OpenMMReasoner-RL-74K"] == 20  # 40 rows, the 20 of virl39k left out
    assert not any(r.get("subset") == "virl39k" for r in rows)
    # math: 15 of 20 + 6 + 6 + 8 = 40 rows, by size: OpenMMReasoner gives most (7.5 -> 8 by largest remainder)
    assert comp["by_source"]["OpenMMReasoner-RL-74K"] == 8
    assert sum(comp["by_source"][s] for s, d in PAPER_SOURCES.items() if d == "math") == 15
    assert {r["mixture_domain"] for r in rows if r["mixture_source"] == "ChartQA"} == {"document"}
    assert all(r["image"].startswith("/") for r in rows)  # resolved against each source's folder
    again, _ = build_mixture(MixtureConfig(total=45, sources=sources))
    assert [r["uid"] for r in again] == [r["uid"] for r in rows]  # deterministic
    other, _ = build_mixture(MixtureConfig(total=45, sources=sources, seed=1))
    assert {r["uid"] for r in other} != {r["uid"] for r in rows}


def test_a_short_domain_is_reported_and_sources_give_in_proportion_to_their_rows(sources):
    rows, comp = build_mixture(MixtureConfig(total=90, sources=sources))
    assert comp["by_domain"] == {"math": 30, "logic": 20, "document": 30}
    assert comp["shortfall"] == {"logic": 10}  # PuzzleVQA + AlgoPuzzleVQA have 20 rows for a quota of 30
    # math: 30 of 40 rows = 3/4 of each source (20, 6, 6, 8 -> 15, 4.5, 4.5, 6; ties of remainder go to the name first in order: MMK12)
    assert {s: comp["by_source"][s] for s in ("OpenMMReasoner-RL-74K", "WeMath", "MMK12", "ThinkLite-VL-Hard-11K")} == {
        "OpenMMReasoner-RL-74K": 15, "WeMath": 4, "MMK12": 5, "ThinkLite-VL-Hard-11K": 6}


def test_unknown_source_needs_a_domain_and_bad_rows_are_named(tmp_path):
    with pytest.raises(ValueError, match="'MySet' is not one of the paper's sources"):
        MixtureConfig(sources=[{"name": "MySet", "path": "x.jsonl"}])
    with pytest.raises(ValueError, match=r"domain\(s\) \['science'\] that domains does not list"):
        MixtureConfig(sources=[{"name": "MySet", "path": "x.jsonl", "domain": "science"}])
    with pytest.raises(FileNotFoundError, match="sources.WeMath.path"):
        build_mixture(MixtureConfig(sources=[{"name": "WeMath", "path": str(tmp_path / "nope.jsonl")}]))


def test_cli_writes_the_manifest_and_its_composition(sources, tmp_path, capsys):
    import yaml

    cfg = tmp_path / "mixture.yaml"
    cfg.write_text(yaml.safe_dump({"total": 12, "sources": sources}))
    out = tmp_path / "out" / "mixture.jsonl"
    assert main(["--config", str(cfg), "--out", str(out)]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    comp = json.loads((tmp_path / "out" / "mixture.jsonl.composition.json").read_text())
    assert len(rows) == 12 and comp["by_domain"] == {"math": 4, "logic": 4, "document": 4}
