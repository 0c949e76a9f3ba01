"""PatternRL's RL data mixture (issues 31, 41): the paper's sources, OpenMMReasoner first and counted per row by its
subset's domain, virl39k left out, balanced domains, caps, and the checks the composition records.

The sources here are a few synthetic rows per source in the project's manifest format (``datasets/README.md``),
not in each set's released layout (those readers: test_sources.py)."""
from __future__ import annotations

import json

import pytest

from howeval.training.mixture import MixtureConfig, build_mixture, main


def manifest(tmp_path, name, n, **extra):
    path = tmp_path / name / "manifest.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"uid": f"{name}:{i}", "question": f"q{i}?", "answer": str(i), "answer_type": "integer_number",
             "image": f"images/{i}.png", **{k: (v(i) if callable(v) else v) for k, v in extra.items()}}
            for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


OMR_SUBSETS = ["mmk12", "algopuzzle", "tqa", "virl39k", "wemath_standard", "thinklite_vl_hard"]


@pytest.fixture
def sources(tmp_path):
    """OpenMMReasoner rows over its real subsets (issue 41: each row counts in its subset's domain), the others
    a few rows each."""
    sizes = {"OpenMMReasoner-RL-74K": 60, "WeMath": 6, "MMK12": 6, "ThinkLite-VL-Hard-11K": 8, "PuzzleVQA": 10,
             "AlgoPuzzleVQA": 10, "TextbookQA": 10, "ChartQA": 10, "InfographicVQA": 10}
    out = []
    for name, n in sizes.items():
        extra = {"subset": lambda i: OMR_SUBSETS[i % 6]} if name.startswith("OpenMM") else {}
        out.append({"name": name, "path": manifest(tmp_path, name, n, **extra)})
    return out


def test_paper_mixture_openmmreasoner_first_and_balanced(sources):
    rows, comp = build_mixture(MixtureConfig(total=45, sources=sources))
    assert comp["by_domain"] == {"math": 15, "logic": 15, "document": 15} and comp["shortfall"] == {}
    # 60 rows over 6 subsets: 10 virl39k left out; math 30 (mmk12, wemath, thinklite), logic 10, document 10
    assert comp["available"]["OpenMMReasoner-RL-74K"] == 50 and comp["excluded"]["OpenMMReasoner-RL-74K"] == 10
    assert not any(r.get("subset") == "virl39k" for r in rows)
    # drawn first in every domain: all 15 math prompts, its 10 logic and 10 document rows, the rest supplemented
    assert comp["by_domain_source"]["math"] == {"OpenMMReasoner-RL-74K": 15}
    assert comp["by_domain_source"]["logic"] == {"OpenMMReasoner-RL-74K": 10, "PuzzleVQA": 2, "AlgoPuzzleVQA": 3}
    assert comp["by_source"]["OpenMMReasoner-RL-74K"] == 35 and comp["majority"] == {
        "source": "OpenMMReasoner-RL-74K", "share": 0.7778}
    assert comp["checks"] == {"primary_is_majority": True, "domains_balanced": True} and comp["balance"] == 0.0
    assert comp["by_subset"]["OpenMMReasoner-RL-74K"]["algopuzzle"] == 10
    assert {r["mixture_domain"] for r in rows if r.get("subset") == "tqa"} == {"document"}
    assert all(r["image"].startswith("/") for r in rows)  # resolved against each source's folder
    again, _ = build_mixture(MixtureConfig(total=45, sources=sources))
    assert [r["uid"] for r in again] == [r["uid"] for r in rows]  # deterministic
    other, _ = build_mixture(MixtureConfig(total=45, sources=sources, seed=1))
    assert {r["uid"] for r in other} != {r["uid"] for r in rows}


def test_caps_and_a_short_domain_are_recorded(sources):
    capped = [dict(s, cap=12) if s["name"].startswith("OpenMM") else s for s in sources]
    _, comp = build_mixture(MixtureConfig(total=45, sources=capped))
    # the cap holds over all domains; the others fill: OpenMMReasoner is still the largest source, not the majority
    assert comp["by_source"]["OpenMMReasoner-RL-74K"] == 12 and comp["by_domain"] == {"math": 15, "logic": 15, "document": 15}
    assert comp["majority"] == {"source": "OpenMMReasoner-RL-74K", "share": 0.2667}
    assert comp["checks"] == {"primary_is_majority": False, "domains_balanced": True}
    # more prompts than logic has rows: the shortfall and the failed checks are recorded, not raised
    _, comp = build_mixture(MixtureConfig(total=120, sources=sources))
    assert comp["by_domain"] == {"math": 40, "logic": 30, "document": 40} and comp["shortfall"] == {"logic": 10}
    assert comp["balance"] == 0.25 and comp["checks"] == {"primary_is_majority": False, "domains_balanced": False}


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


def test_the_shipped_paper_config_validates(repo_root):
    import yaml

    from howeval.config.base import validate

    cfg = validate(MixtureConfig, yaml.safe_load((repo_root / "configs" / "train" / "mixture.yaml").read_text()), "m")
    assert cfg.total == 44_200 and cfg.primary == "OpenMMReasoner-RL-74K" and len(cfg.sources) == 9
    assert cfg.balance_tolerance == 0.10 and cfg.sources[0].resolved_exclude == {"subset": ["virl39k"]}
