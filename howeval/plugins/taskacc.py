"""Task accuracy (Table 6 of the PatternEval/PatternRL paper: BaseRL vs PatternRL on math, logic and document
benchmarks): each response of a benchmark with a ``task:`` block scored by that benchmark's own answer criterion.

Why a plug-in over the sweep's own generation and not a generation of its own: Table 6 compares trained policies
on the same footing as PatternEval (the same configs = policies, the same NT / T modes, prompts, sampling and
answer instruction), and the sweep already generates, retries and resumes every (sample, config, mode) of every
benchmark it lists. So the task benchmarks are listed among the sweep's benchmarks (``howeval.config.TaskConfig``)
and this plug-in only scores: in phase 1, after generation, every latest response of a task benchmark without a
score row at its benchmark's current criterion goes through one ``taskacc`` pipeline of stateless scoring tasks
(``howeval.actors.taskacc.TaskScoreStage``) into ``<run>/task_scores/`` (keyed by
``howeval.benchmarks.taskacc.TASK_SCORE_KEY``: a rerun scores nothing twice, a changed criterion scores again).
Scoring needs the gold answers of the loaded benchmark rows (DocVQA's several per question), which only the run
has; its report part, "Table 6 (task accuracy)", reads the stored rows.
"""
from __future__ import annotations

from howeval.benchmarks.taskacc import TASK_INPUT_SCHEMA, TASK_SCORE_KEY, TASK_SCORE_SCHEMA, summarize_task_rows
from howeval.plugins.pipeline import Pipeline, Plan, Stage, Tallies, Tally
from howeval.plugins.registry import Benchmark, RunContext, Summary, register, scoring_line, scoring_summary
from howeval.records import RESPONSE_SCHEMA, conform, latest_responses
from howeval.store import existing_keys, join, read_table, remove_temp_files

SCORES = "task_scores"
"""The run's folder of score rows."""


def task_benchmarks(cfg) -> dict:
    """``{benchmark name: its BenchmarkConfig}`` of the config's benchmarks with a ``task:`` block."""
    return {b.name: b for b in getattr(cfg, "benchmarks", None) or [] if getattr(b, "task", None) is not None}


def pending_scores(samples: list[dict], responses: dict[tuple, dict], tasks: dict, done: set[tuple]) -> list[dict]:
    """Rows (``TASK_INPUT_SCHEMA`` columns) still to score: each latest response without an engine error whose
    sample belongs to a task benchmark and that has no score at that benchmark's criterion (``done``: stored keys).
    The golds are the sample's ``answers`` when the benchmark lists several, else its ``answer``."""
    by_id = {s["sample_id"]: s for s in samples if s.get("benchmark") in tasks}
    out = []
    for r in responses.values():
        s = by_id.get(r["sample_id"])
        if s is None or r.get("error"):
            continue
        task = tasks[s["benchmark"]].task
        key = (r["sample_id"], r["config"], r["mode"], r["response_hash"], task.criterion)
        if key in done:
            continue
        out.append(dict(zip(TASK_SCORE_KEY, key)) | {
            "benchmark": s["benchmark"], "category": task.category, "response": r.get("response") or "",
            "golds": s.get("answers") or [s["answer"]], "answer_type": s.get("answer_type"), "options": s.get("options")})
    return out


TASKACC_WORDS = {"title": "TASK ACCURACY", "all_done": "every response of a task benchmark was already scored",
                 "folder": SCORES, "after_failure": "the responses stay unscored; a rerun scores them"}
"""The wording of the task-accuracy summary line (:func:`howeval.plugins.registry.scoring_line`)."""


def taskacc_line(res: dict) -> str:
    """The scoring in words: ``TASK ACCURACY: 84 responses scored in 0:05 (task_scores/)``."""
    return scoring_line(res, **TASKACC_WORDS)


@register
class TaskAccuracy(Benchmark):
    """Table 6 task accuracy as a plug-in (enabled by a ``task:`` block on any of the sweep's benchmarks)."""

    name = "taskacc"
    title = "Task accuracy"
    phase = 1

    def enabled(self, cfg) -> bool:
        return bool(task_benchmarks(cfg))

    def skip_reason(self, sample: dict, cfg) -> str | None:
        """Only the rows of a benchmark with a ``task:`` block are scored."""
        return None if sample.get("benchmark") in task_benchmarks(cfg) else "not in a benchmark with a task: block"

    def plan(self, ctx: RunContext) -> Plan:
        """The responses still to score, as one ``taskacc`` pipeline (:func:`pending_scores`)."""
        from howeval.actors.taskacc import REQUIRED_COLUMNS, TaskScoreStage

        cfg = ctx.cfg
        out = join(cfg.output_uri, SCORES)
        responses = latest_responses(read_table(join(cfg.output_uri, "responses"), RESPONSE_SCHEMA)[0].to_pylist())
        remove_temp_files(out)
        done = existing_keys(read_table(out, TASK_SCORE_SCHEMA)[0], TASK_SCORE_KEY)
        todo = pending_scores(ctx.samples, responses, task_benchmarks(cfg), done)
        if not todo:
            return Plan("task accuracy (Table 6)")
        stage = Stage("taskacc", TaskScoreStage, inputs=REQUIRED_COLUMNS, outputs=tuple(TASK_SCORE_SCHEMA.names),
                      batch_size=64, replicas=0, num_cpus=cfg.ray.task_num_cpus, out_uri=out,
                      tally=Tally("task accuracy", error_col=None))
        return Plan("task accuracy (Table 6)", [Pipeline("taskacc", conform(todo, TASK_INPUT_SCHEMA), [stage])],
                    {"task accuracy": (len(todo), 0)})

    def finish(self, ctx: RunContext, plan: Plan, tallies: Tallies) -> Summary:
        """``result``: ``{"scored", "seconds"}`` (+ ``"failed"``); one :func:`taskacc_line`
        (:func:`howeval.plugins.registry.scoring_summary`)."""
        return scoring_summary(plan, tallies, line="task accuracy", pipeline="taskacc", **TASKACC_WORDS)

    def report(self, cfg, joined: list[dict]) -> tuple[dict, list[str]] | None:
        """``task_accuracy`` (``summarize_task_rows``, plus each benchmark's ``criteria``) and the section "Table 6
        (task accuracy)", from the score rows of the current responses at each benchmark's current criterion."""
        from howeval.report.tables import render_task_accuracy

        tasks = task_benchmarks(cfg)
        if not tasks:
            return None
        scores = read_table(join(cfg.output_uri, SCORES), TASK_SCORE_SCHEMA)[0].to_pylist()
        current = {(r["sample_id"], r["config"], r["mode"], r["response_hash"]) for r in joined if not r.get("error")}
        crit = {b: t.task.criterion for b, t in tasks.items()}
        rows = [r for r in scores if r["benchmark"] in tasks and r["criterion"] == crit[r["benchmark"]]
                and (r["sample_id"], r["config"], r["mode"], r["response_hash"]) in current]
        task_rows = [r for r in joined if r.get("benchmark") in tasks]
        if not rows and not task_rows:
            return None
        summary = summarize_task_rows(rows, {b: t.task.category for b, t in tasks.items()}, cfg.mode_pairs())
        summary["criteria"] = crit
        notes = []
        errors = sum(1 for r in task_rows if r.get("error"))
        unscored = sum(1 for r in task_rows if not r.get("error")) - len(rows)
        unresolved = sum(1 for r in rows if r.get("score") is None)
        if unresolved:
            notes.append(f"{unresolved} responses the criterion could not decide (the verifier's rules left them "
                         "open, or a program artefact) are left out of n.")
        if errors:
            notes.append(f"{errors} responses with an engine error are not scored (a rerun retries them).")
        if unscored > 0:
            notes.append(f"{unscored} responses are not scored yet (rerun the sweep: it scores only what is missing).")
        summary["notes"] = notes
        return {"task_accuracy": summary}, [render_task_accuracy(summary, crit, notes)]
