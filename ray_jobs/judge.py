"""Job: (re-)judge the responses of a run with the configured judges, without regenerating anything.

    python -m ray_jobs.judge --run runs/demo [--judges configs/judges/llm.yaml] [--only NAME ...]

Judgments are cached by (response hash, judge id = name@version): a judgment already written without
error is never paid for again; rows whose judgment failed (``judge_error``) are retried. The verifier's
verdict is reused across judges for the same response hash.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys

import pyarrow as pa
import yaml

from howeval.benchmarks.loaders import load_samples
from howeval.config import ConfigError, JudgesConfig, SweepConfig, load_run_config, require_ready
from howeval.judges.pipeline import judge_id, merge_judges, verifier_id
from howeval.judges.cache import judge_cache_dir
from howeval.judges.images import judge_image_urls
from howeval.records import JUDGMENT_SCHEMA, RESPONSE_KEY, RESPONSE_SCHEMA, VERIFY_TYPE, conform, key_of
from howeval.store import join, read_table, write_json
from ray_jobs.common import blocks, init_ray, log, write_parquet

STAGE_SCHEMA = (RESPONSE_SCHEMA.append(pa.field("judges_needed", pa.list_(pa.string())))
                .append(pa.field("cached_verify", VERIFY_TYPE)).append(pa.field("image_data_urls", pa.list_(pa.string()))))


def plan_judging(responses: list[dict], judgments: list[dict], judges: JudgesConfig,
                 only: list[str] | None = None) -> list[dict]:
    """Response rows that still need a judge, each with ``judges_needed`` and ``cached_verify``.

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
        k = key_of(r, RESPONSE_KEY)
        need = [jid for jid in ids if (*k, jid) not in done]
        if need:
            out.append({**r, "judges_needed": need, "cached_verify": cached.get(k)})
    return out


def judge_run(cfg: SweepConfig, samples: list[dict] | None = None, only: list[str] | None = None) -> dict:
    """Judge every response under ``cfg.output_uri`` that lacks a judgment; append to judgments/."""
    import ray
    from ray.data import ActorPoolStrategy

    from actors.judge import JudgeStage

    responses, _ = read_table(join(cfg.output_uri, "responses"), RESPONSE_SCHEMA)
    judgments, _ = read_table(join(cfg.output_uri, "judgments"), JUDGMENT_SCHEMA)
    todo = plan_judging(responses.to_pylist(), judgments.to_pylist(), cfg.judges, only)
    if not todo:
        return {"judged": 0}
    if any(j.kind == "llm" and j.with_image for j in cfg.judges.pattern):
        if samples is None:
            samples, _ = load_samples(cfg.benchmarks, cfg.skip_bad_rows)
        # every image the policy saw, as PNG/JPEG/WebP/GIF data URLs (others converted with Pillow; the
        # loader already refused unreadable images as bad rows)
        urls = {s["sample_id"]: judge_image_urls(s["images"], s["sample_id"]) for s in samples if s["images"]}
        for r in todo:
            r["image_data_urls"] = urls.get(r["sample_id"])
    init_ray(cfg.ray)
    bs = 16
    ds = ray.data.from_arrow(blocks(conform(todo, STAGE_SCHEMA), bs))
    cache_dir = judge_cache_dir(cfg.judges, cfg.output_uri)  # write-ahead: a killed re-judge pays no call twice
    ds = ds.map_batches(JudgeStage, fn_constructor_kwargs={"judges": cfg.judges.model_dump(), "only": only,
                                                           "cache_dir": cache_dir},
                        batch_size=bs, batch_format="pyarrow", compute=ActorPoolStrategy(size=cfg.judges.replicas),
                        num_cpus=cfg.judges.num_cpus)
    write_parquet(ds, join(cfg.output_uri, "judgments"), cfg.ray.task_num_cpus)
    log.info("judged %d responses", len(todo))
    return {"judged": len(todo)}


def main(argv=None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    p = argparse.ArgumentParser(prog="python -m ray_jobs.judge", description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True, help="output URI of a sweep run")
    p.add_argument("--judges", help="YAML with a `judges:` block replacing the run's judges")
    p.add_argument("--only", nargs="+", help="judge names to run (default: all)")
    p.add_argument("--no-report", action="store_true", help="skip rewriting metrics.json / report.md")
    args = p.parse_args(argv)
    try:
        cfg = load_run_config(args.run)
        raw = cfg.model_dump()
        if args.judges:
            with open(args.judges) as f:
                doc = yaml.safe_load(f) or {}
            raw["judges"] = merge_judges(cfg.judges, JudgesConfig.model_validate(doc.get("judges", doc))).model_dump()
        cfg = SweepConfig.model_validate(raw)
        require_ready(cfg.judges, args.judges or f"{args.run}/run_config.json", only=args.only)  # keys, URLs: before Ray
        if args.judges:
            write_json(join(args.run, "run_config.json"), cfg.model_dump_json(indent=2))
        res = judge_run(cfg, only=args.only)
        if not args.no_report:
            from howeval.report.run import write_report

            write_report(cfg)
    except (ConfigError, FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
