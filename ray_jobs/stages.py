"""What each job computes: "read the keys written -> pending rows -> pipelines" (``ray_jobs.plan``), run
on Ray Data (``ray_jobs.execute``).

- :func:`generate_and_judge`: every model config of a sweep at once (one pipeline each: generate ->
  judge, each finished response batch streamed into the config's judge actors), responses and judgments
  written as they land. Used by ``ray_jobs.sweep`` (all configs, judged), ``ray_jobs.judge`` (no
  configs: only the responses still lacking a judgment) and ``ray_jobs.build_refs`` (writers, unjudged).
- :func:`score_run`: CRYSTAL step scores of a run's responses (``ray_jobs.crystal``, the sweep).
- :func:`adapt_episodes`: AdaptMMBench episodes, every config at once (``ray_jobs.adapt``, the sweep).

Resume is exact: each batch is one atomically written Parquet file; the pending rows are the keys not
yet written, plus rows whose engine call failed (``error``) and that have had fewer than
``max_attempts`` attempts (``attempt`` column). A retried row is written beside the old one and the old
one is then dropped (:func:`howeval.store.compact`), so each key is stored once after every run.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import partial

import pyarrow as pa

from howeval.config import AdaptConfig, JudgesConfig, ModelConfig, SweepConfig
from howeval.judges.pipeline import judge_id, verifier_id
from howeval.records import (
    JUDGMENT_SCHEMA,
    KEY,
    RESPONSE_KEY,
    RESPONSE_SCHEMA,
    SAMPLE_SCHEMA,
    VERIFY_TYPE,
    conform,
    key_of,
    latest_attempts,
)
from howeval.report.tables import consistency_text, mcc_text
from howeval.store import compact, join, read_table, remove_temp_files
from ray_jobs.execute import run_pipelines
from ray_jobs.plan import Pipeline, Stage, Tally, generate_stage, judge_stage
from ray_jobs.progress import Progress, duration

log = logging.getLogger("howeval")

WORK_SCHEMA = (SAMPLE_SCHEMA.append(pa.field("image_paths", pa.list_(pa.string())))
               .append(pa.field("config", pa.string())).append(pa.field("mode", pa.string()))
               .append(pa.field("instruction", pa.string())).append(pa.field("attempt", pa.int64())))
"""Generation input: a sample (image paths; bytes only when already read), the config and mode to run it in,
an optional instruction, the attempt number."""

JUDGE_INPUT_SCHEMA = (RESPONSE_SCHEMA.append(pa.field("judges_needed", pa.list_(pa.string())))
                      .append(pa.field("cached_verify", VERIFY_TYPE)).append(pa.field("image_data_urls", pa.list_(pa.string()))))
"""Judging input: a response row, the judge ids it still needs (null = all), a reusable verifier verdict, and
every image of the sample as data URLs (for image-aware judges; null otherwise)."""

JUDGMENT_KEY = ("sample_id", "config", "mode", "judge")
MAX_ATTEMPTS = 3
"""Default attempts per row for rows whose engine call failed (``--max-attempts``)."""


# -- planning (pure) ------------------------------------------------------------------------------------
def latest_responses(rows: list[dict]) -> dict[tuple, dict]:
    """One response per key ``(sample_id, config, mode)``: the highest ``attempt`` (null counts as 1)."""
    return {key_of(r): r for r in latest_attempts(rows)}


def pending_work(samples: list[dict], model: ModelConfig, latest: dict[tuple, dict], modes=("NT", "T"),
                 max_attempts: int = MAX_ATTEMPTS) -> list[dict]:
    """Rows (sample + config + mode + attempt) still to generate, in sample order, NT before T.

    A key is pending when it has no response, or its latest response has an engine ``error`` and fewer
    than ``max_attempts`` attempts; ``attempt`` is then the previous attempt + 1 (1 for a new key).
    """
    out = []
    for s in samples:
        for m in modes:
            if m not in model.modes:
                continue
            prev = latest.get((s["sample_id"], model.name, m))
            if prev is None:
                out.append({**s, "config": model.name, "mode": m, "attempt": 1})
            elif prev.get("error") and (prev.get("attempt") or 1) < max_attempts:
                out.append({**s, "config": model.name, "mode": m, "attempt": (prev.get("attempt") or 1) + 1})
    return out


def plan_judging(responses: list[dict], judgments: list[dict], judges: JudgesConfig,
                 only: list[str] | None = None) -> list[dict]:
    """Response rows that still need a judge, each with ``judges_needed`` and ``cached_verify``.

    Rows with an engine ``error`` are not judged (nothing to judge; a rerun retries the generation).
    A (response, judge) pair is done when a judgment with the same key, judge id and response hash
    exists without ``judge_error``. A verifier verdict is reusable when it has the same response hash and
    verifier id and is not an LLM failure.
    """
    vid = verifier_id(judges)
    done, cached = set(), {}
    for j in judgments:
        k = key_of(j, RESPONSE_KEY)
        if not j.get("judge_error"):
            done.add((*k, j["judge"]))
        if j.get("verifier") == vid and j.get("verify_method") not in (None, "llm_error"):
            cached[k] = {"correct": j["correct"], "extracted": j["extracted"],
                         "method": j["verify_method"], "reason": j["verify_reason"]}  # a VERIFY_TYPE struct
    ids = [judge_id(c) for c in judges.pattern if only is None or c.name in only]
    out = []
    for r in responses:
        if r.get("error"):
            continue
        k = key_of(r, RESPONSE_KEY)
        need = [jid for jid in ids if (*k, jid) not in done]
        if need:
            out.append({**r, "judges_needed": need, "cached_verify": cached.get(k)})
    return out


def judge_input(batch: pa.Table, out: pa.Table, with_images: bool = False) -> pa.Table | None:
    """Forward of a generation batch to judging (runs in the policy actor): the responses without an
    engine error, with every image of the sample as data URLs when an image-aware judge needs them."""
    rows = [r for r in out.to_pylist() if not r.get("error")]
    if not rows:
        return None
    if with_images:
        from howeval.judges.images import judge_image_urls

        imgs = {s["sample_id"]: s["images"] for s in batch.select(["sample_id", "images"]).to_pylist()}
        for r in rows:
            r["image_data_urls"] = judge_image_urls(imgs.get(r["sample_id"]), r["sample_id"]) or None
    return conform(rows, JUDGE_INPUT_SCHEMA)


def _response_rank(r: dict):
    return r.get("attempt") or 1


def _judgment_rank(current: dict[tuple, str | None]):
    def rank(j: dict):
        k = key_of(j)
        return (k in current and current[k] == j.get("response_hash"), not j.get("judge_error"))
    return rank


def tidy(output_uri: str) -> dict:
    """Leave one row per key under ``responses/`` and ``judgments/`` (after a retry or a killed run):
    temp files removed, superseded attempts and judgments of superseded responses dropped."""
    dropped = {}
    for part in ("responses", "judgments"):
        remove_temp_files(join(output_uri, part))
    dropped["responses"] = compact(join(output_uri, "responses"), KEY, _response_rank)
    rows = read_table(join(output_uri, "responses"), RESPONSE_SCHEMA)[0].to_pylist()
    current = {k: r["response_hash"] for k, r in latest_responses(rows).items()}
    dropped["judgments"] = compact(join(output_uri, "judgments"), JUDGMENT_KEY, _judgment_rank(current))
    return dropped


# -- the streamed generate -> judge pipelines ----------------------------------------------------------
@dataclass
class RunOutcome:
    """What a run did: rows written per config, judgment rows (and how many of them are ``judge_error``
    rows), and the failed pipelines with their reason."""

    failures: dict[str, str] = field(default_factory=dict)
    generated: dict[str, int] = field(default_factory=dict)
    judged: int = 0
    judge_errors: int = 0
    seconds: float = 0.0


def plan_sweep(cfg, samples: list[dict], models: list[ModelConfig], latest: dict[tuple, dict], *,
               judges: JudgesConfig | None, modes=("NT", "T"), max_attempts: int = MAX_ATTEMPTS,
               only: list[str] | None = None) -> tuple[list[Pipeline], dict]:
    """The pipelines of a sweep (pure): one per config with rows to generate (generate -> judge) and one
    ``judge`` pipeline for written responses still lacking a judgment.

    Returns ``(pipelines, totals)``; ``totals`` maps each progress label (``"<config> <mode>"``,
    ``"judge"``) to ``(total rows, rows already done)``.
    """
    out = cfg.output_uri
    totals: dict[str, tuple[int, int]] = {}
    n_judges = 0
    with_images = False
    cache_dir = None
    if judges is not None:
        sel = [j for j in judges.pattern if only is None or j.name in only]
        n_judges = len(sel)
        with_images = any(j.kind == "llm" and j.with_image for j in sel)
        from howeval.judges.cache import judge_cache_dir

        cache_dir = judge_cache_dir(judges, out)  # write-ahead: a killed run pays no finished judge call twice
    todos = {}
    for model in models:
        todo = pending_work(samples, model, latest, modes, max_attempts)
        for m in (m for m in modes if m in model.modes):
            waiting = sum(1 for r in todo if r["mode"] == m)
            totals[f"{model.name} {m}"] = (len(samples), len(samples) - waiting)
        if todo:
            todos[model.name] = (model, todo)
    keys_pending = {key_of(r) for _, todo in todos.values() for r in todo}
    catch_up: list[dict] = []
    if judges is not None:
        rows = [r for r in latest.values() if r["config"] in {m.name for m in models} or not models]
        judgments = read_table(join(out, "judgments"), JUDGMENT_SCHEMA)[0].to_pylist()
        catch_up = [r for r in plan_judging(rows, judgments, judges, only) if key_of(r) not in keys_pending]
        if with_images:
            paths = {s["sample_id"]: s.get("image_paths") for s in samples}
            for r in catch_up:
                r["image_paths"] = paths.get(r["sample_id"])
        judged_before = len({key_of(r) for r in rows if not r.get("error")}) - len(catch_up)
        totals["judge"] = (judged_before + len(catch_up) + len(keys_pending), judged_before)
    share = len(todos) + bool(catch_up)
    pipelines = []
    for name, (model, todo) in todos.items():
        forward = partial(judge_input, with_images=with_images) if judges is not None else None
        stages = [generate_stage(model, join(out, "responses", model.name), forward)]
        if judges is not None:
            stages.append(judge_stage(judges, only, cache_dir, join(out, "judgments", "{config}"),
                                      batch_size=model.resources.batch_size, share=share))
        pipelines.append(Pipeline(name, conform(todo, WORK_SCHEMA), stages))
    if catch_up:
        schema = JUDGE_INPUT_SCHEMA.append(pa.field("image_paths", pa.list_(pa.string())))
        pipelines.append(Pipeline("judge", conform(catch_up, schema),
                                  [judge_stage(judges, only, cache_dir, join(out, "judgments", "{config}"), share=share,
                                               read_images=with_images)]))
    return pipelines, {"totals": totals, "n_judges": n_judges}


def generate_and_judge(cfg, samples: list[dict], models: list[ModelConfig], *, judges: JudgesConfig | None,
                       modes=("NT", "T"), max_attempts: int = MAX_ATTEMPTS, only: list[str] | None = None,
                       progress: Progress | None = None, verbose: bool = False, max_restarts: int = 1,
                       max_task_retries: int = -1) -> RunOutcome:
    """Generate every pending row of every config at once and judge each response batch as it lands.

    Args:
        cfg: a job config with ``output_uri`` (responses under ``<output_uri>/responses/<config>/``,
            judgments under ``<output_uri>/judgments/<config>/``).
        samples: benchmark rows (``SAMPLE_SCHEMA`` columns with ``image_paths``; image bytes are read by
            the stage actors, so ``images`` may be null; an ``instruction`` column is passed on).
        models: the configs to generate with (one pipeline each); ``[]`` = judge only.
        judges: the judges block; None = generate only (no judgments).
        modes: modes to run (those a model does not configure are skipped).
        max_attempts: attempts per row whose engine call failed (>= 1).
        only: pattern-judge names to run (default all).
        progress: live progress (a quiet one is made when None).

    Returns:
        :class:`RunOutcome`; ``failures`` maps a config name (or ``"judge"``) to a one-line reason.
    """
    import time

    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    t0 = time.perf_counter()
    out = cfg.output_uri
    tidy(out)
    progress = progress or Progress.silent()
    outcome = RunOutcome()
    latest = latest_responses(read_table(join(out, "responses"), RESPONSE_SCHEMA)[0].to_pylist())
    pipelines, info = plan_sweep(cfg, samples, models, latest, judges=judges, modes=modes, max_attempts=max_attempts,
                                 only=only)
    progress.section("generate + judge" if models and judges is not None else "generate" if models else "judge")
    for label, (total, done) in info["totals"].items():
        progress.add(label, total=total, done=done)
    n_judges = max(info["n_judges"], 1)
    for p in pipelines:
        log.info("pipeline %s", p.describe())

    def on_counts(pipeline, stage, groups):
        if not groups:  # an actor of this stage is built
            labels = ["judge"] if stage == "judge" else [f"{pipeline} {m}" for m in modes]
            for label in labels:
                if label in progress.lines:
                    progress.ready(label)
            return
        for group, s in groups.items():
            if stage == "judge":
                progress.update("judge", s["rows"] // n_judges, s["errors"] // n_judges)
                outcome.judged += s["rows"]
                outcome.judge_errors += s["errors"]
            else:
                progress.update(f"{pipeline} {group}", s["rows"], s["errors"], s["tokens"])
                outcome.generated[pipeline] = outcome.generated.get(pipeline, 0) + s["rows"]
                if judges is not None and s["errors"]:
                    progress.shrink("judge", s["errors"])

    def on_failure(name, reason):
        outcome.failures[name] = reason
        if name == "judge":
            progress.fail("judge", reason)
            progress.note(f"FAILED judge: {reason}")
            return
        for m in modes:
            if f"{name} {m}" in progress.lines:
                ln = progress.lines[f"{name} {m}"]
                progress.fail(f"{name} {m}", reason)
                if judges is not None:
                    progress.shrink("judge", ln.total - ln.done)
        progress.note(f"FAILED {name}: {reason}")

    for p in pipelines:  # every pipeline starts now: rates and ETAs count from here
        labels = ["judge"] if p.name == "judge" else [f"{p.name} {m}" for m in modes] + ["judge"] * len(p.stages[1:])
        for label in labels:
            if label in progress.lines:
                progress.start(label)
    progress.tick(force=True)
    run_pipelines(pipelines, on_counts=on_counts, on_failure=on_failure, on_tick=progress.tick, verbose=verbose,
                  max_restarts=max_restarts, max_task_retries=max_task_retries)
    progress.finish()
    tidy(out)
    outcome.seconds = time.perf_counter() - t0
    return outcome


# -- CRYSTAL step scores and AdaptMMBench episodes -------------------------------------------------------
def score_run(cfg: SweepConfig, samples: list[dict], verbose: bool = False, progress: Progress | None = None) -> dict:
    """CRYSTAL step scores of the run's responses that have reference steps, appended to ``<run>/steps``
    (keyed by ``records.STEP_KEY``: rerunning scores nothing twice). Returns ``{"scored": n, "seconds": s}``
    and ``"failed"`` with the reason when the embedder pipeline failed (:func:`crystal_line` says it in
    words). ``progress`` gets a ``CRYSTAL step scores`` section with one ``crystal`` line."""
    import time

    t0 = time.perf_counter()
    from actors.embedder import StepScoreUDF
    from howeval.benchmarks.crystal import DEFAULT_EMBEDDER, crystal_settings
    from howeval.parsing.steps import response_steps
    from howeval.records import STEP_KEY, STEPS_SCHEMA
    from howeval.store import existing_keys

    s = crystal_settings(cfg.crystal)
    emb = s.embedder or DEFAULT_EMBEDDER
    refs = {x["sample_id"]: x["reference_steps"] for x in samples if x.get("reference_steps")}
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
        return {"scored": 0, "seconds": time.perf_counter() - t0}
    stage = Stage("crystal", StepScoreUDF, batch_format="numpy", out_uri=join(cfg.output_uri, "steps"),
                  kwargs={"settings": s}, inputs=tuple(StepScoreUDF.REQUIRED_COLUMNS),
                  outputs=StepScoreUDF.OUTPUT_COLUMNS, batch_size=64, replicas=s.replicas, num_cpus=s.num_cpus,
                  tally=Tally("crystal", error_col=None))
    table = pa.Table.from_pylist(todo, schema=pa.schema([STEPS_SCHEMA.field(n) for n in (*STEP_KEY, "pred_steps", "ref_steps")]))
    progress = progress or Progress.silent()
    progress.section("CRYSTAL step scores")
    progress.add("crystal", total=len(todo))
    progress.start("crystal")
    progress.tick(force=True)

    def on_failure(name, reason):
        progress.fail("crystal", reason)

    failures = run_pipelines([Pipeline("crystal", table, [stage])], verbose=verbose,
                             on_counts=lambda _p, _s, groups: _count(progress, "crystal", groups),
                             on_failure=on_failure, on_tick=progress.tick)
    progress.finish()
    log.info("CRYSTAL: scored %d responses", len(todo))
    return {"scored": len(todo), "seconds": time.perf_counter() - t0,
            **({"failed": failures["crystal"]} if failures else {})}


def _count(progress: Progress, label: str, groups: dict) -> None:
    if not groups:  # an actor is built
        progress.ready(label)
    for s in groups.values():
        progress.update(label, s["rows"], s["errors"], s["tokens"])


def crystal_line(res: dict) -> str:
    """:func:`score_run`'s result in words: ``CRYSTAL: 84 responses scored in 1:05 (steps/)``."""
    if res.get("failed"):
        return f"CRYSTAL FAILED after {duration(res.get('seconds', 0))}: {res['failed']} (the responses stay unscored)"
    if not res.get("scored"):
        return "CRYSTAL: every response with reference steps was already scored"
    return f"CRYSTAL: {res['scored']} responses scored in {duration(res.get('seconds', 0))} (steps/)"


ADAPT_WORK_SCHEMA = (SAMPLE_SCHEMA.append(pa.field("image_paths", pa.list_(pa.string())))
                     .append(pa.field("config", pa.string())).append(pa.field("adapt_mode", pa.string())))


def adapt_settings(cfg: SweepConfig, engine: str) -> AdaptConfig:
    """The sweep's ``adapt:`` block (validated at load; defaults when unset) with tool_format filled in for
    ``engine`` (plain text for ``hf``/``replay``): what each ``AdaptStage`` of that engine is given."""
    return (cfg.adapt or AdaptConfig()).for_engine(engine)


def adapt_episodes(cfg: SweepConfig, samples: list[dict], verbose: bool = False,
                   progress: Progress | None = None) -> tuple[dict, dict[str, str]]:
    """Every model on the items with evidence boxes, all configs at once (one pipeline each); rows under
    ``<run>/adapt/<config>/`` keyed by (sample_id, config, mode). Returns ``({config: summary}, {config:
    failure reason})``. ``progress`` gets an ``AdaptMMBench`` section with a ``"<config> <mode>"`` line
    per mode (text, adaptive, oracle)."""
    from actors.adapt import AdaptStage
    from howeval.benchmarks.adapt.metrics import summarize_rows
    from howeval.records import ADAPT_SCHEMA
    from howeval.store import existing_keys

    items = [s for s in samples if s.get("evidence_boxes") and (s.get("images") or s.get("image_paths"))]
    if not items:
        return {}, {}
    pipelines = []
    for model in cfg.models:
        s = adapt_settings(cfg, model.engine)
        uri = join(cfg.output_uri, "adapt", model.name)
        remove_temp_files(uri)
        done = existing_keys(read_table(uri, ADAPT_SCHEMA)[0], ("sample_id", "config", "mode"))
        # item-major: each batch holds every mode of its items, so the modes' progress lines advance together
        # (mode-major queued a mode's rows behind the others, and its ETA counted the wait)
        todo = [{**x, "config": model.name, "adapt_mode": m} for x in items for m in s.modes
                if (x["sample_id"], model.name, m) not in done]
        if not todo:
            continue
        r = model.resources
        reads = any(x.get("images") is None for x in todo)
        pipelines.append(Pipeline(model.name, conform(todo, ADAPT_WORK_SCHEMA), [Stage(
            "adapt", AdaptStage, {"model_config": model, "settings": s, "schema": ADAPT_SCHEMA}, out_uri=uri,
            batch_size=r.batch_size, replicas=r.replicas, num_cpus=r.num_cpus, num_gpus=r.num_gpus,
            accelerator_type=r.accelerator_type, read_images=reads,
            tally=Tally(model.name, group_col="mode", tokens_col="tokens"))]))
    progress = progress or Progress.silent()
    if pipelines:
        progress.section("AdaptMMBench")
        for p in pipelines:
            modes = p.rows.column("adapt_mode").to_pylist()
            for m in dict.fromkeys(modes):
                progress.add(f"{p.name} {m}", total=modes.count(m))
                progress.start(f"{p.name} {m}")
        progress.tick(force=True)

    def on_counts(pipeline, _stage, groups):
        if not groups:  # an actor is built
            for label in [k for k in progress.lines if k.startswith(f"{pipeline} ")]:
                progress.ready(label)
        for mode, s in groups.items():
            if f"{pipeline} {mode}" in progress.lines:
                progress.update(f"{pipeline} {mode}", s["rows"], s["errors"], s["tokens"])

    def on_failure(name, reason):
        for label in [k for k in progress.lines if k.startswith(f"{name} ")]:
            progress.fail(label, reason)

    failures = run_pipelines(pipelines, verbose=verbose, on_counts=on_counts, on_failure=on_failure,
                             on_tick=progress.tick)
    if pipelines:
        progress.finish()
    summaries = {m.name: summarize_rows(read_table(join(cfg.output_uri, "adapt", m.name), ADAPT_SCHEMA)[0].to_pylist())
                 for m in cfg.models}
    return summaries, failures


def adapt_lines(summaries: dict, failures: dict[str, str]) -> list[str]:
    """:func:`adapt_episodes`' result in words, one line per config: accuracy per mode (text, adaptive,
    oracle) with its count, the MCC of tool calling, errors and unresolved verdicts; a failed config with its reason."""
    out = []
    for name, s in sorted(summaries.items()):
        if name in failures:
            out.append(f"AdaptMMBench {name}: FAILED: {failures[name]}")
            continue
        if not s.get("n"):
            continue
        order = ("text", "adaptive", "oracle")
        modes = sorted(s["n"], key=lambda m: (order.index(m) if m in order else len(order), m))
        accs = " · ".join(f"{m} {_pct(s['accuracy'][m]['all'])} ({s['n'][m]})" for m in modes)
        extra = [f"MCC {mcc_text(s.get('mcc'), s.get('confusion'))}"]
        if s.get("consistency"):
            extra.append(f"text vs adaptive-text inconsistent {consistency_text(s['consistency'])}")
        if sum((s.get("errors") or {}).values()):
            extra.append(f"{sum(s['errors'].values())} engine errors")
        if s.get("unresolved"):
            extra.append(f"{s['unresolved']} unresolved")
        out.append(f"AdaptMMBench {name}: Acc {accs}; {', '.join(extra)}")
    return out


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def generate(cfg, model: ModelConfig, samples: list[dict], modes=("NT", "T"), max_attempts: int = MAX_ATTEMPTS,
             verbose: bool = False) -> dict:
    """Generate one config's pending rows without judging (``build_refs``' writers, benchmarks).

    Returns counts: ``{"config", "new", "seconds"}`` and ``"failed"`` with the reason when the config failed.
    """
    outcome = generate_and_judge(cfg, samples, [model], judges=None, modes=modes, max_attempts=max_attempts,
                                 verbose=verbose)
    res = {"config": model.name, "new": outcome.generated.get(model.name, 0), "seconds": outcome.seconds}
    if outcome.failures:
        res["failed"] = next(iter(outcome.failures.values()))
    return res
