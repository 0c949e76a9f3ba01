"""AdaptMMBench (SPEC section 4): every model on the items with evidence boxes, in text, adaptive and
oracle-visual mode, beside generation.

The plug-in runs in phase 0, at the same time as the sweep's generation (it needs no response): one
``adapt:<config>`` pipeline per config of ``AdaptStage`` actors (``howeval.actors.adapt``) with rows under
``<run>/adapt/<config>/``, keyed by (sample_id, config, mode): rerunning computes only what is missing.
Its progress lines are ``adapt <config> <mode>``; its summary a line per config (Acc per mode, MCC of
tool calling, text-vs-adaptive consistency); its report part the AdaptMMBench table.
"""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from howeval.config import AdaptConfig, SweepConfig
from howeval.plugins.pipeline import Pipeline, Plan, Stage, Tallies, Tally
from howeval.plugins.registry import Benchmark, RunContext, Summary, register
from howeval.records import ADAPT_SCHEMA, SAMPLE_SCHEMA, conform
from howeval.report.tables import consistency_text, mcc_text
from howeval.store import existing_keys, join, read_table, remove_temp_files

ADAPT_WORK_SCHEMA = (SAMPLE_SCHEMA.append(pa.field("image_paths", pa.list_(pa.string())))
                     .append(pa.field("config", pa.string())).append(pa.field("adapt_mode", pa.string())))
"""Episode input: a sample with evidence boxes (image paths), the config and the mode to run it in."""

ORDER = ("text", "adaptive", "oracle")


def adapt_settings(cfg: SweepConfig, engine: str) -> AdaptConfig:
    """The sweep's ``adapt:`` block (validated at load; defaults when unset) with tool_format filled in for
    ``engine`` (plain text for ``hf``/``replay``) and, with a process judge and no ``process_judge_cache``,
    that cache under the run's judge cache (``<run>/judge_cache/adapt-process`` for a local run,
    :func:`howeval.judges.cache.run_judge_cache_dir`): what each ``AdaptStage`` of that engine is given."""
    s = (cfg.adapt or AdaptConfig()).for_engine(engine)
    if s.process_judge is not None and s.process_judge_cache is None:
        from howeval.judges.cache import run_judge_cache_dir

        s = s.model_copy(update={"process_judge_cache": str(Path(run_judge_cache_dir(cfg.output_uri)) / "adapt-process")})
    return s


def adapt_items(samples: list[dict]) -> list[dict]:
    """The samples AdaptMMBench runs: those with evidence boxes and an image (bytes or paths)."""
    return [s for s in samples if s.get("evidence_boxes") and (s.get("images") or s.get("image_paths"))]


def summarize_run(output_uri: str, configs: list[str]) -> dict:
    """``{config: summary}`` of every stored episode row of each config (``benchmarks.adapt.metrics.summarize_rows``)."""
    from howeval.benchmarks.adapt.metrics import summarize_rows

    return {c: summarize_rows(_counted(output_uri, read_table(join(output_uri, "adapt", c), ADAPT_SCHEMA)[0].to_pylist()))
            for c in configs}


def _counted(output_uri: str, rows: list[dict]) -> list[dict]:
    """``rows`` less those of benchmark rows the run skipped (``bad_rows.json``: a row skipped on a resume
    may have episodes from an earlier run; ``howeval.report.run.skipped_ids``)."""
    from howeval.report.run import read_bad_rows, skipped_ids

    skipped = skipped_ids(read_bad_rows(output_uri))
    return [r for r in rows if r["sample_id"] not in skipped]


def adapt_lines(summaries: dict, failures: dict[str, str]) -> list[str]:
    """The AdaptMMBench result in words, one line per config: accuracy per mode (text, adaptive, oracle)
    with its count, the MCC of tool calling, errors and unresolved verdicts; a failed config (a key of
    ``failures``: the config name) with its reason."""
    out = []
    for name, s in sorted(summaries.items()):
        if name in failures:
            out.append(f"AdaptMMBench {name}: FAILED: {failures[name]}")
            continue
        if not s.get("n"):
            continue
        modes = sorted(s["n"], key=lambda m: (ORDER.index(m) if m in ORDER else len(ORDER), m))
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


@register
class Adapt(Benchmark):
    """AdaptMMBench episodes as a plug-in (enabled by the sweep's ``adapt:`` block).

    Its :meth:`finish` gives ``({config: summary}, {config: failure reason})`` as ``Summary.result`` and
    the failures as ``{"adapt:<config>": reason}``.
    """

    name = "adapt"
    title = "AdaptMMBench"
    phase = 0

    def enabled(self, cfg) -> bool:
        return getattr(cfg, "adapt", None) is not None

    def skip_reason(self, sample: dict, cfg) -> str | None:
        """:func:`adapt_items`' rule in words: a row needs ``evidence_boxes`` and an image."""
        if not sample.get("evidence_boxes"):
            return "no evidence_boxes"
        return None if (sample.get("images") or sample.get("image_paths")) else "no image"

    def plan(self, ctx: RunContext) -> Plan:
        """One ``adapt:<config>`` pipeline per config with episodes still to run (item-major: each batch
        holds every mode of its items, so the modes' lines advance together)."""
        from howeval.actors.adapt import REQUIRED_COLUMNS, AdaptStage

        cfg = ctx.cfg
        items = adapt_items(ctx.samples)
        plan = Plan("AdaptMMBench")
        if not items:
            return plan
        for model in cfg.models:
            s = adapt_settings(cfg, model.engine)
            uri = join(cfg.output_uri, "adapt", model.name)
            remove_temp_files(uri)
            done = existing_keys(read_table(uri, ADAPT_SCHEMA)[0], ("sample_id", "config", "mode"))
            todo = [{**x, "config": model.name, "adapt_mode": m} for x in items for m in s.modes
                    if (x["sample_id"], model.name, m) not in done]
            if not todo:
                continue
            modes = [t["adapt_mode"] for t in todo]
            for m in dict.fromkeys(modes):
                plan.lines[f"adapt {model.name} {m}"] = (modes.count(m), 0)
            r = model.resources
            plan.pipelines.append(Pipeline(f"adapt:{model.name}", conform(todo, ADAPT_WORK_SCHEMA), [Stage(
                "adapt", AdaptStage, {"model_config": model, "settings": s, "schema": ADAPT_SCHEMA}, out_uri=uri,
                inputs=tuple(REQUIRED_COLUMNS), outputs=tuple(ADAPT_SCHEMA.names),
                batch_size=r.batch_size, replicas=r.replicas, num_cpus=r.num_cpus, num_gpus=r.num_gpus,
                accelerator_type=r.accelerator_type, read_images=any(x.get("images") is None for x in todo),
                tally=Tally(f"adapt {model.name}", group_col="mode", tokens_col="tokens"))]))
        return plan

    def finish(self, ctx: RunContext, plan: Plan, tallies: Tallies) -> Summary:
        """A line per config (:func:`adapt_lines`), from every episode row stored for it; when no row has
        evidence boxes, one line saying so."""
        if not adapt_items(ctx.samples):
            return Summary(["AdaptMMBench: no row has evidence_boxes and an image: nothing to run (datasets/README.md)"],
                           {}, ({}, {}))
        failures = {k.split(":", 1)[1]: v for k, v in tallies.failures.items()}
        summaries = summarize_run(ctx.cfg.output_uri, [m.name for m in ctx.cfg.models])
        return Summary(adapt_lines(summaries, failures), {f"adapt:{k}": v for k, v in failures.items()},
                       (summaries, failures))

    def report(self, cfg, joined: list[dict]) -> tuple[dict, list[str]] | None:
        """``adapt``: a summary per config of every stored episode row (SPEC section 4)."""
        from howeval.benchmarks.adapt.metrics import summarize_rows
        from howeval.report.tables import render_adapt

        rows = _counted(cfg.output_uri, read_table(join(cfg.output_uri, "adapt"), ADAPT_SCHEMA)[0].to_pylist())
        if not rows:
            return None
        by_cfg: dict = {}
        for r in rows:
            by_cfg.setdefault(r["config"], []).append(r)
        summary = {c: summarize_rows(rs) for c, rs in sorted(by_cfg.items())}
        return {"adapt": summary}, [render_adapt(summary)]
