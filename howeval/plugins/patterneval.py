"""PatternEval (the sweep's core): every config x mode x sample generated, each response batch judged as it lands.

The plug-in (:class:`PatternEval`) plans one pipeline per config with rows still to generate (generate ->
judge, each finished response batch streamed into the judge actors; responses and judgments written as
they land) and one ``judge`` pipeline for written responses still lacking a judgment. The sweep runs it
with every config; ``howeval.ray_jobs.judge`` with no config (judging only) and ``howeval.ray_jobs.build_refs`` with
writers and no judges.

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

from howeval.config import JudgesConfig, ModelConfig
from howeval.judges.pipeline import judge_id, verifier_id
from howeval.plugins.pipeline import Pipeline, Plan, Stage, Tallies, Tally
from howeval.plugins.registry import Benchmark, RunContext, Summary, register
from howeval.records import (
    JUDGMENT_SCHEMA,
    KEY,
    RESPONSE_KEY,
    RESPONSE_SCHEMA,
    SAMPLE_SCHEMA,
    VERIFY_TYPE,
    conform,
    key_of,
    latest_responses,
)
from howeval.store import compact, join, read_table, remove_temp_files

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
    exists without ``judge_error``, made by this verifier (``verifier_id``: a bumped ``judges.verifier.version``
    or an added LLM fallback re-verifies the stored rows on resume; their newer judgment replaces the old one
    at the next tidy, and an LLM pattern judge's answers come from the judge cache, not paid again). A
    verifier verdict is reusable when it has the same response hash and verifier id and is not an LLM failure.
    """
    vid = verifier_id(judges)
    done, cached = set(), {}
    for j in judgments:
        k = key_of(j, RESPONSE_KEY)
        if not j.get("judge_error") and j.get("verifier") in (vid, None):
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



# -- the stages of the sweep ----------------------------------------------------------------------------
def policy_batch_size(model: ModelConfig) -> int:
    """Rows per batch of a config's generate stage: ``resources.batch_size``, or when unset the engine's own
    default (``howeval.engines.registry.default_batch_size``); the rows in flight follow the engine's capacity."""
    from howeval.engines.registry import resolved_batch_size

    return resolved_batch_size(model.engine, model.options, model.resources.batch_size)


def generate_stage(model, out_uri: str, forward=None, outputs: tuple[str, ...] = (), feeds: str | None = None) -> Stage:
    """A config's policy actors: ``PolicyStage(model)``, resources and batches in flight from the config;
    each actor reads its rows' images itself (no image passes through the driver). ``outputs``: the
    columns ``forward`` hands on (default: a response row's); ``feeds``: the progress line of the stage
    it feeds (``"judge"``), or None."""
    from howeval.actors.policy import REQUIRED_COLUMNS, PolicyStage
    from howeval.engines.registry import batches_in_flight

    r = model.resources
    batch = policy_batch_size(model)
    return Stage("generate", PolicyStage, {"model_config": model}, inputs=tuple(REQUIRED_COLUMNS),
                 outputs=outputs or tuple(RESPONSE_SCHEMA.names), batch_size=batch, replicas=r.replicas,
                 concurrency=batches_in_flight(model.engine, model.options, batch), num_cpus=r.num_cpus,
                 num_gpus=r.num_gpus, accelerator_type=r.accelerator_type, out_uri=out_uri, forward=forward,
                 tally=Tally(model.name, group_col="mode", tokens_col="completion_tokens", feeds=feeds),
                 read_images=True)


def judge_stage(judges, only, cache_dir: str | None, out_uri: str, batch_size: int = 16, share: int = 1,
                read_images: bool = False, n_judges: int = 1, feeds: bool = False) -> Stage:
    """Verifier + pattern judges: ``JudgeStage`` actors writing ``judgments/<config>/``.

    ``share``: how many pipelines run a judge pool at once. ``judges.replicas`` and ``judges.num_cpus``
    describe the sweep's judges as a whole: each pool gets ``max(1, replicas // share)`` actors and the
    CPUs are split so all pools together reserve ``replicas x num_cpus``. So 25 configs do not start 25
    times the judge processes, and a judge actor always fits beside its config's engine (whole
    reservations per config could leave every config with an engine and no judge, or the reverse: a
    deadlock on a small node). ``n_judges``: judgment rows per response (the ``judge`` line counts responses).
    """
    from howeval.actors.judge import REQUIRED_COLUMNS, JudgeStage

    share = max(share, 1)
    replicas = max(1, judges.replicas // share)
    return Stage("judge", JudgeStage, {"judges": judges, "only": only, "cache_dir": cache_dir},
                 inputs=tuple(REQUIRED_COLUMNS), outputs=tuple(JUDGMENT_SCHEMA.names), batch_size=batch_size,
                 replicas=replicas, num_cpus=judges.num_cpus * judges.replicas / (share * replicas), out_uri=out_uri,
                 tally=Tally("judge", error_col="judge_error", per_item=max(n_judges, 1)), read_images=read_images)


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
        if judges is None:
            stages = [generate_stage(model, join(out, "responses", model.name))]
        else:
            stages = [generate_stage(model, join(out, "responses", model.name), partial(judge_input, with_images=with_images),
                                     tuple(JUDGE_INPUT_SCHEMA.names), feeds="judge"),
                      judge_stage(judges, only, cache_dir, join(out, "judgments", "{config}"),
                                  batch_size=policy_batch_size(model), share=share, n_judges=n_judges)]
        pipelines.append(Pipeline(name, conform(todo, WORK_SCHEMA), stages))
    if catch_up:
        schema = JUDGE_INPUT_SCHEMA.append(pa.field("image_paths", pa.list_(pa.string())))
        pipelines.append(Pipeline("judge", conform(catch_up, schema),
                                  [judge_stage(judges, only, cache_dir, join(out, "judgments", "{config}"), share=share,
                                               read_images=with_images, n_judges=n_judges)]))
    return pipelines, {"totals": totals, "n_judges": n_judges}



_FROM_CONFIG = object()


@register
class PatternEval(Benchmark):
    """The sweep's generation and judging as a plug-in (SPEC section 1: Acc, Trigger; the report's core).

    Args:
        models: configs to generate with; None = the run config's ``models``; ``[]`` = judge only.
        judges: the judges block; default the run config's ``judges``; None = generate only.
        modes: modes to run (those a model does not configure are skipped).
        only: pattern-judge names to run (default all).

    Its :meth:`finish` gives a :class:`RunOutcome` as ``Summary.result`` and the failed pipelines
    (``{config or "judge": reason}``) as ``Summary.failures``.
    """

    name = "patterneval"
    title = "PatternEval"
    phase = 0

    def __init__(self, models: list[ModelConfig] | None = None, judges=_FROM_CONFIG, modes=("NT", "T"),
                 only: list[str] | None = None):
        self.models, self.judges, self.modes, self.only = models, judges, tuple(modes), only

    def _judges(self, cfg) -> JudgesConfig | None:
        return cfg.judges if self.judges is _FROM_CONFIG else self.judges

    def plan(self, ctx: RunContext) -> Plan:
        """Tidy the run's stored rows, then plan every pending row (:func:`plan_sweep`).

        Raises:
            ValueError: ``ctx.max_attempts`` < 1.
        """
        if ctx.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {ctx.max_attempts}")
        cfg = ctx.cfg
        models = list(cfg.models) if self.models is None else list(self.models)
        judges = self._judges(cfg)
        tidy(cfg.output_uri)
        latest = latest_responses(read_table(join(cfg.output_uri, "responses"), RESPONSE_SCHEMA)[0].to_pylist())
        pipelines, info = plan_sweep(cfg, ctx.samples, models, latest, judges=judges, modes=self.modes,
                                     max_attempts=ctx.max_attempts, only=self.only)
        title = "generate + judge" if models and judges is not None else "generate" if models else "judge"
        return Plan(title, pipelines, info["totals"])

    def finish(self, ctx: RunContext, plan: Plan, tallies: Tallies) -> Summary:
        """Tidy again (a retried row replaces its old one) and count what was written."""
        tidy(ctx.cfg.output_uri)
        outcome = RunOutcome(failures=dict(tallies.failures), seconds=tallies.seconds,
                             generated={p.name: tallies.rows("generate", p.name) for p in plan.pipelines
                                        if p.stages[0].name == "generate"},
                             judged=tallies.rows("judge"), judge_errors=tallies.rows("judge", key="errors"))
        return Summary([], dict(tallies.failures), outcome)
