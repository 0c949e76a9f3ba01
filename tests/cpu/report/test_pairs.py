"""Issue 34: a T/NT pair made of two checkpoints (``pair_as``) is reported and compared as one model's NT and
T; the worked GPU example loads; InternVL3.5's documented thinking prompt is accepted, a variant refused."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from howeval.config import ConfigError, load_sweep_config
from howeval.config.sweep import INTERNVL_THINKING_PROMPT, SweepConfig
from howeval.report.run import write_report

from fakes.runs import make_run


def _split_run(root: Path) -> Path:
    """make_run's config ``alpha`` rewritten as two checkpoints: its NT rows from ``inst``, its T rows from
    ``think`` (pair_as ``alpha-pair``); ``beta`` left as it is."""
    make_run(root)
    for part in ("responses", "judgments"):
        t = pq.read_table(root / part / "part-0.parquet").to_pylist()
        for r in t:
            if r["config"] == "alpha":
                r["config"] = "inst" if r["mode"] == "NT" else "think"
        schema = pq.read_schema(root / part / "part-0.parquet")
        import pyarrow as pa

        pq.write_table(pa.Table.from_pylist(t, schema=schema), root / part / "part-0.parquet")
    cfg = json.loads((root / "run_config.json").read_text())
    alpha = next(m for m in cfg["models"] if m["name"] == "alpha")
    cfg["models"] = [m for m in cfg["models"] if m["name"] != "alpha"] + [
        {**alpha, "name": "inst", "pair_as": "alpha-pair", "modes": {"NT": {}}},
        {**alpha, "name": "think", "pair_as": "alpha-pair", "modes": {"T": {"max_tokens": 64}}}]
    (root / "run_config.json").write_text(json.dumps(cfg))
    return root


def test_two_checkpoints_are_reported_and_compared_as_one_models_nt_and_t(tmp_path):
    from howeval.config import load_run_config
    from howeval.report.compare import compare_runs

    whole = write_report(load_run_config(str(make_run(tmp_path / "whole"))))["configs"]["alpha"]
    split = _split_run(tmp_path / "split")
    metrics = write_report(load_run_config(str(split)))
    assert sorted(metrics["configs"]) == ["alpha-pair", "beta"]
    assert metrics["pairs"] == {"alpha-pair": {"NT": "inst", "T": "think"}}
    pair = metrics["configs"]["alpha-pair"]
    for key in ("delta_acc", "delta_pat", "n_paired_acc", "n_paired_pat"):
        assert pair[key] == whole[key], key  # the same rows, paired prompt by prompt
    assert pair["NT"]["acc"] == whole["NT"]["acc"] and pair["T"]["trigger"] == whole["T"]["trigger"]
    assert "| alpha-pair |" in (split / "report.md").read_text()

    # compare: the pair by its name, and its two members against each other (NT-only vs T-only: "NT vs T")
    c = compare_runs((str(split), "alpha-pair"), (str(tmp_path / "whole"), "alpha"), n_boot=100)
    assert set(c["modes"]) == {"NT", "T"} and c["modes"]["NT"]["acc"]["delta"] == 0
    c = compare_runs((str(split), "inst"), (str(split), "think"), n_boot=100)
    assert list(c["modes"]) == ["NT vs T"]
    assert c["modes"]["NT vs T"]["acc"]["delta"] == pytest.approx(whole["delta_acc"])


def test_pair_as_needs_one_nt_only_and_one_t_only_config():
    base = {"name": "s", "output_uri": "x", "benchmarks": [{"path": "m.jsonl"}]}
    m = {"engine": "replay", "options": {"path": "r.jsonl"}}
    with pytest.raises(ValueError, match="pair_as 'p' needs exactly two configs, one with only modes.NT"):
        SweepConfig.model_validate({**base, "models": [{**m, "name": "a", "pair_as": "p", "modes": {"NT": {}, "T": {}}},
                                                       {**m, "name": "b", "pair_as": "p", "modes": {"T": {}}}]})
    with pytest.raises(ValueError, match="pair_as 'a' is also a config's name"):
        SweepConfig.model_validate({**base, "models": [{**m, "name": "a", "pair_as": "a", "modes": {"NT": {}}},
                                                       {**m, "name": "b", "pair_as": "a", "modes": {"T": {}}}]})


def test_the_gpu_example_names_pairs_switches_and_multimodal_limits(repo_root):
    cfg = load_sweep_config(repo_root / "configs" / "sweeps" / "thinking-pairs.yaml")
    assert cfg.mode_pairs() == {"qwen3-vl-8b-instruct": "qwen3-vl-8b", "qwen3-vl-8b-thinking": "qwen3-vl-8b"}
    models = {m.name: m for m in cfg.models}
    assert models["qwen3-vl-8b-instruct"].model.endswith("Qwen3-VL-8B-Instruct")
    assert models["qwen3-vl-8b-thinking"].model.endswith("Qwen3-VL-8B-Thinking")
    for m in cfg.models:
        opts = m.engine_options().all_engine_kwargs()
        assert opts["limit_mm_per_prompt"]["image"] == 4 and opts["mm_processor_kwargs"]
    assert models["internvl3.5-8b"].modes["T"].system_prompt == INTERNVL_THINKING_PROMPT
    assert not models["internvl3.5-8b"].modes["T"].prompted_thinking


def test_internvl_documented_thinking_prompt_is_accepted_and_a_variant_refused(tmp_path):
    import yaml

    def sweep(prompt: str) -> Path:
        p = tmp_path / "s.yaml"
        p.write_text(yaml.safe_dump({"name": "s", "output_uri": "x", "benchmarks": [{"path": "m.jsonl"}],
                                     "models": [{"name": "ivl", "engine": "replay", "options": {"path": "r.jsonl"},
                                                 "modes": {"T": {"system_prompt": prompt}}}]}))
        return p

    cfg = load_sweep_config(sweep(" ".join(INTERNVL_THINKING_PROMPT.split())))  # whitespace may differ
    assert cfg.models[0].modes["T"].system_prompt.startswith("You are an AI assistant")
    with pytest.raises(ConfigError, match="asks for <think> tags.*InternVL3.5"):
        load_sweep_config(sweep(INTERNVL_THINKING_PROMPT.replace("thorough", "long")))


def test_the_readmes_run_your_model_example_validates(repo_root):
    """The README's GPU example loads as a sweep config: its engines, options and switches exist, and its
    Qwen3-VL pair is two checkpoints (no enable_thinking on an Instruct checkpoint)."""
    import yaml

    text = (repo_root / "README.md").read_text()
    block = text[text.index("name: my-sweep"):]
    cfg = SweepConfig.model_validate(yaml.safe_load(block[:block.index("```")]))
    assert cfg.mode_pairs() == {"qwen3-vl-8b-instruct": "qwen3-vl-8b", "qwen3-vl-8b-thinking": "qwen3-vl-8b"}
    for m in cfg.models:
        assert not any(mc.chat_template_kwargs.get("enable_thinking") for mc in m.modes.values()) or "Qwen3.5" in m.model
