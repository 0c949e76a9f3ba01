"""Issue 30: a benchmark is one plug-in. A toy benchmark defined in this file only (no other module touched)
runs in a real sweep beside generation (its pipeline on Ray Data, its progress line, its summary line) and its
section appears in the report and its metrics in metrics.json."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from howeval.plugins.pipeline import Pipeline, Plan, Stage, Tally
from howeval.plugins.registry import Benchmark, Summary, register, registered, unregister
from howeval.records import SAMPLE_SCHEMA, conform
from howeval.store import join, read_table

TOY_ROWS = SAMPLE_SCHEMA.append(pa.field("image_paths", pa.list_(pa.string())))


class CountWords:
    """The toy's stage class: the number of words of each question (a plain class, as the actors are)."""

    def __init__(self, offset: int = 0):
        self.offset = offset

    def __call__(self, batch: pa.Table) -> pa.Table:
        words = [len(q.split()) + self.offset for q in batch.column("question").to_pylist()]
        return pa.table({"sample_id": batch.column("sample_id"), "words": pa.array(words, pa.int64())})


class Toy(Benchmark):
    """Words per question, as a benchmark plug-in: one pipeline, one line, one report section."""

    name = "toy_words"
    phase = 0

    def plan(self, ctx) -> Plan:
        rows = conform(ctx.samples, TOY_ROWS)
        stage = Stage("count", CountWords, {"offset": 1}, inputs=("sample_id", "question"), outputs=("sample_id", "words"),
                      batch_size=2, replicas=0, num_cpus=0.1, out_uri=join(ctx.cfg.output_uri, "toy"),
                      tally=Tally("toy", error_col=None))
        return Plan("toy words", [Pipeline("toy", rows, [stage])], {"toy": (rows.num_rows, 0)})

    def finish(self, ctx, plan, tallies) -> Summary:
        return Summary([f"TOY: {tallies.rows('count')} questions counted"], dict(tallies.failures))

    def report(self, cfg, joined):
        rows = read_table(join(cfg.output_uri, "toy"), pa.schema([("sample_id", pa.string()), ("words", pa.int64())]))[0]
        if not rows.num_rows:
            return None
        total = sum(rows.column("words").to_pylist())
        return {"toy_words": {"n": rows.num_rows, "total": total}}, [f"## Toy words\n\n{rows.num_rows} questions, {total} words.\n"]


@pytest.fixture
def toy():
    import sys

    import cloudpickle

    me = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(me)  # Ray's workers get the class by value: this file is not a package module
    register(Toy)
    yield
    unregister(Toy.name)
    cloudpickle.unregister_pickle_by_value(me)


def test_a_plugin_must_name_itself_and_a_name_is_held_once():
    class Nameless(Benchmark):
        pass

    with pytest.raises(ValueError, match="set the class attribute `name`"):
        register(Nameless)

    class Clash(Benchmark):
        name = "crystal"

    with pytest.raises(ValueError, match="'crystal' is taken by howeval.plugins.crystal.Crystal"):
        register(Clash)
    assert [b.name for b in registered()][:3] == ["patterneval", "crystal", "adapt"]


def test_a_pipeline_is_checked_when_built():
    rows = conform([{"sample_id": "a", "question": "q"}], TOY_ROWS)
    ok = Stage("count", CountWords, inputs=("sample_id", "question"), outputs=("sample_id", "words"))
    Pipeline("toy", rows, [ok])
    bad = Stage("sum", CountWords, inputs=("words", "score"))
    with pytest.raises(ValueError, match=r"stage 'sum' reads \['score'\], which stage 'count''s outputs do not carry"):
        Pipeline("toy", rows, [ok, bad])
    with pytest.raises(ValueError, match=r"stage 'count' reads \['question'\], which the rows do not carry"):
        Pipeline("toy", rows.select(["sample_id"]), [ok])
    with pytest.raises(ValueError, match="stage names must be unique"):
        Pipeline("toy", rows, [ok, ok])


@pytest.mark.ray
@pytest.mark.slow
def test_a_toy_benchmark_from_a_test_file_runs_in_a_sweep_and_reports(tmp_path: Path, repo_root: Path, toy, capsys):
    from howeval.ray_jobs.sweep import main

    demo = [json.loads(line) for line in (repo_root / "datasets" / "demo" / "manifest.jsonl").open()][:4]
    recorded = tmp_path / "recorded.jsonl"
    recorded.write_text("".join(json.dumps({"sample_id": r["uid"], "response": f"The answer is {r['answer']}."}) + "\n"
                                for r in demo))
    model = {"name": "rep", "engine": "replay", "options": {"path": str(recorded)}, "modes": {"NT": {}},
             "resources": {"replicas": 1, "num_cpus": 0.2, "batch_size": 4}}
    cfg = {"name": "toy", "output_uri": str(tmp_path / "run"),
           "benchmarks": [{"path": str(repo_root / "datasets" / "demo" / "manifest.jsonl"), "limit": 4}],
           "models": [model], "judges": {"pattern": [{"name": "rules"}]}, "ray": {"num_cpus": 2}}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["--config", str(tmp_path / "sweep.yaml")]) == 0
    out = capsys.readouterr().out

    words = {r["sample_id"]: r["words"] for r in pq.read_table(tmp_path / "run" / "toy").to_pylist()}
    assert words == {r["uid"]: len(r["question"].split()) + 1 for r in demo}  # its pipeline ran, with its kwargs
    assert "TOY: 4 questions counted" in out
    assert "generate + judge · toy words" in out  # one block: the toy ran beside generation
    assert "toy " in out and "4/4" in out
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["toy_words"] == {"n": 4, "total": sum(words.values())}
    assert metrics["configs"]["rep"]["NT"]["n"] == 4  # the sweep itself is unchanged
    report = (tmp_path / "run" / "report.md").read_text()
    assert f"## Toy words\n\n4 questions, {sum(words.values())} words." in report
    assert "Toy words" in (tmp_path / "run" / "index.html").read_text()
