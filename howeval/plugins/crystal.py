"""CRYSTAL (SPEC section 3): step scores of a run's responses against the samples' reference steps.

The plug-in runs in phase 1, after generation (it scores the responses generation wrote): every latest
response whose sample has reference steps and that has no step row at the run's settings (embedder, τ,
α, order) goes through one ``crystal`` pipeline of embedder actors (``howeval.actors.embedder.StepScoreUDF``)
into ``<run>/steps/`` (keyed by ``records.STEP_KEY``: rerunning scores nothing twice). Its report part
is the step-metrics table with answer Acc, Precision/Recall and the cherry-picking ratio.

Why a phase and not a stage chained after the judge: a stage in a config's pipeline shares that
pipeline's fate, so an embedder that fails to start would stop the config's generation; as its own
pipeline it fails alone (it takes seconds: 15 s in ``make demo``).
"""
from __future__ import annotations

import logging

import pyarrow as pa

from howeval.plugins.pipeline import Pipeline, Plan, Stage, Tallies, Tally
from howeval.plugins.registry import Benchmark, RunContext, Summary, register, scoring_line, scoring_summary
from howeval.records import RESPONSE_KEY, RESPONSE_SCHEMA, STEP_KEY, STEPS_SCHEMA, key_of, latest_responses
from howeval.store import existing_keys, join, read_table, remove_temp_files

log = logging.getLogger("howeval")


CRYSTAL_WORDS = {"title": "CRYSTAL", "all_done": "every response with reference steps was already scored",
                 "folder": "steps", "after_failure": "the responses stay unscored"}
"""The wording of CRYSTAL's summary line (:func:`howeval.plugins.registry.scoring_line`)."""


def crystal_line(res: dict) -> str:
    """CRYSTAL's pass in words: ``CRYSTAL: 84 responses scored in 1:05 (steps/)``, or why nothing was, or that
    it failed. ``res``: ``{"scored": n, "seconds": s}`` and ``"failed"`` (a one-line reason) when the pipeline failed.
    """
    return scoring_line(res, **CRYSTAL_WORDS)


@register
class Crystal(Benchmark):
    """CRYSTAL step scores as a plug-in (enabled by the sweep's ``crystal:`` block)."""

    name = "crystal"
    title = "CRYSTAL"
    phase = 1

    def enabled(self, cfg) -> bool:
        return getattr(cfg, "crystal", None) is not None

    def skip_reason(self, sample: dict, cfg) -> str | None:
        """A row without ``reference_steps`` (the steps its responses are matched against) is not scored."""
        return None if sample.get("reference_steps") else "no reference_steps"

    def plan(self, ctx: RunContext) -> Plan:
        """The responses still to score at the run's settings, as one ``crystal`` pipeline."""
        from howeval.actors.embedder import StepScoreUDF
        from howeval.benchmarks.crystal import DEFAULT_EMBEDDER, crystal_settings
        from howeval.parsing.steps import response_steps

        cfg = ctx.cfg
        s = crystal_settings(cfg.crystal)
        emb = s.embedder or DEFAULT_EMBEDDER
        refs = {x["sample_id"]: x["reference_steps"] for x in ctx.samples if x.get("reference_steps")}
        responses = latest_responses(read_table(join(cfg.output_uri, "responses"), RESPONSE_SCHEMA)[0].to_pylist())
        remove_temp_files(join(cfg.output_uri, "steps"))
        done = existing_keys(read_table(join(cfg.output_uri, "steps"), STEPS_SCHEMA)[0], STEP_KEY)
        todo = []
        for r in responses.values():
            if r["sample_id"] not in refs or r.get("error"):
                continue
            key = (r["sample_id"], r["config"], r["mode"], r["response_hash"], emb, s.tau, s.alpha, s.order)
            if key in done:
                continue
            todo.append(dict(zip(STEP_KEY, key)) | {"pred_steps": response_steps(r["response"] or "", r.get("reasoning")),
                                                    "ref_steps": refs[r["sample_id"]]})
        if not todo:
            return Plan("CRYSTAL step scores")
        stage = Stage("crystal", StepScoreUDF, batch_format="numpy", out_uri=join(cfg.output_uri, "steps"),
                      kwargs={"settings": s}, inputs=tuple(StepScoreUDF.REQUIRED_COLUMNS),
                      outputs=(*STEP_KEY, *StepScoreUDF.OUTPUT_COLUMNS), batch_size=64, replicas=s.replicas,
                      num_cpus=s.num_cpus, tally=Tally("crystal", error_col=None))
        table = pa.Table.from_pylist(todo, schema=pa.schema([STEPS_SCHEMA.field(n) for n in (*STEP_KEY, "pred_steps", "ref_steps")]))
        return Plan("CRYSTAL step scores", [Pipeline("crystal", table, [stage])], {"crystal": (len(todo), 0)})

    def finish(self, ctx: RunContext, plan: Plan, tallies: Tallies) -> Summary:
        """``result``: ``{"scored", "seconds"}`` (+ ``"failed"``); one :func:`crystal_line`
        (:func:`howeval.plugins.registry.scoring_summary`), or, when no row has reference steps, a line saying so."""
        words = CRYSTAL_WORDS
        if not any(x.get("reference_steps") for x in ctx.samples):
            words = {**words, "all_done": "no row has reference_steps: nothing to score (datasets/README.md)"}
        summary = scoring_summary(plan, tallies, line="crystal", pipeline="crystal", **words)
        if summary.result["scored"]:
            log.info("CRYSTAL: scored %d responses", summary.result["scored"])
        return summary

    def report(self, cfg, joined: list[dict]) -> tuple[dict, list[str]] | None:
        """``crystal`` (step metrics per config x mode with answer Acc) and ``crystal_cherry_picking`` (the
        Precision/Recall ratio, CRYSTAL section 5), from the step rows at the run's current settings."""
        from howeval.benchmarks.crystal import DEFAULT_EMBEDDER, cherry_picking, crystal_settings, summarize_step_rows
        from howeval.report.tables import render_crystal

        steps = read_table(join(cfg.output_uri, "steps"), STEPS_SCHEMA)[0].to_pylist()
        if steps and cfg.crystal is not None:  # only rows at the run's current (tau, alpha, order, embedder)
            cs = crystal_settings(cfg.crystal)
            want = (cs.embedder or DEFAULT_EMBEDDER, cs.tau, cs.alpha, cs.order)
            steps = [r for r in steps if (r["embedder"], r["tau"], r["alpha"], r["order"]) == want]
        ids = {r["sample_id"] for r in joined}  # a skipped row's responses are not in joined: nor its steps
        steps = [r for r in steps if r["sample_id"] in ids]
        if not steps:
            return None
        # the answer verdicts of the scored responses (by response key, before pairing renames configs)
        verdicts = {key_of(r, RESPONSE_KEY): r.get("correct") for r in joined}
        summary = summarize_step_rows(steps, verdicts)
        picking = cherry_picking(summary)
        return {"crystal": summary, "crystal_cherry_picking": picking}, [render_crystal(summary, picking)]
