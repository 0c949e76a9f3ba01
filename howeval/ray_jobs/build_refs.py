"""Job: build reference steps the Delphi way (SPEC section 3, CRYSTAL).

    python -m howeval.ray_jobs.build_refs --config configs/build_refs.yaml [--limit N]

1. Every writer config writes a step chain per item in the CRYSTAL JSON format (Ray Data actor pools,
   the sweep's PolicyStage; resumable under ``<out>/chains/responses/<writer>/``).
2. Steps are embedded (bundled all-MiniLM-L6-v2 by default) and clustered by cosine similarity
   (connected components strictly above ``threshold``); the medoid of each cluster is kept, in order.
3. The checker model judges each merged chain; its verdict (or ``checker_error``) is recorded.
4. ``<out>/reference_steps.jsonl``: uid, reference_steps, support per step, the checker's verdict and
   ``human_gate: "pending"`` — humans gate the result before it becomes a benchmark's reference.
"""
from __future__ import annotations

import json
import sys

import numpy as np

from howeval.benchmarks.delphi import build_reference, checker_messages, parse_checker
from howeval.benchmarks.loaders import load_samples
from howeval.config import BuildRefsConfig
from howeval.engines.base import ChatRequest
from howeval.engines.prompts import CRYSTAL_INSTRUCTION
from howeval.parsing.steps import response_steps
from howeval.ray_jobs.common import generate_and_judge, run_builder
from howeval.records import RESPONSE_SCHEMA
from howeval.runtime.cluster import init_ray, log  # noqa: F401  (the howeval logger)
from howeval.store import join, read_table, write_json, write_text


def write_chains(cfg: BuildRefsConfig, samples: list[dict]) -> dict[str, dict[str, list[str]]]:
    """Each writer's step chain per sample id (empty for a failed generation)."""

    chains_cfg = cfg.model_copy(update={"output_uri": join(cfg.output_uri, "chains")})
    asked = [{**s, "instruction": CRYSTAL_INSTRUCTION} for s in samples]
    res = generate_and_judge(chains_cfg, asked, list(cfg.writers), judges=None, modes=(cfg.mode,))  # all writers at once
    log.info("build_refs: writers %s", res.generated)
    for stage, reason in res.failures.items():  # its chains stay missing: merged from the other writers
        log.warning("build_refs: writer %s failed: %s", stage.split(":", 1)[-1], reason)
    out: dict[str, dict[str, list[str]]] = {}
    for r in read_table(join(chains_cfg.output_uri, "responses"), RESPONSE_SCHEMA)[0].to_pylist():
        if r["mode"] == cfg.mode:
            steps = [] if r.get("error") else response_steps(r["response"] or "", r.get("reasoning"))
            out.setdefault(r["sample_id"], {})[r["config"]] = steps
    return out


def merge(cfg: BuildRefsConfig, samples: list[dict], chains: dict) -> list[dict]:
    """Cluster and merge the chains of every sample; returns output records (without the check)."""
    from howeval.embed import StepEmbedder

    emb = StepEmbedder(model_path=cfg.embedder)
    records = []
    for s in samples:
        per_writer = [chains.get(s["sample_id"], {}).get(w.name, []) for w in cfg.writers]
        flat = [x for ch in per_writer for x in ch]
        vecs = emb.encode(flat) if flat else np.zeros((0, 1))
        ref = build_reference(per_writer, vecs, cfg.threshold, cfg.min_support)
        records.append({"uid": s["sample_id"], "question": s["question"], "answer": s["answer"],
                        "reference_steps": ref.steps, "support": ref.support, "n_clusters": ref.n_clusters,
                        "writers_with_steps": sum(bool(c) for c in per_writer), "human_gate": "pending"})
    return records


def check(cfg: BuildRefsConfig, records: list[dict]) -> None:
    """Ask the checker about each merged chain; sets checker_consistent / checker_reason / checker_error."""
    if cfg.checker is None:
        return
    from howeval.engines.registry import build_engine

    c = cfg.checker
    engine = build_engine(c.engine, c.model, c.options)
    reqs = [ChatRequest(messages=checker_messages(r["question"], r["answer"], r["reference_steps"]),
                        max_tokens=c.sampling.max_tokens, temperature=0.0, request_id=r["uid"]) for r in records]
    for r, comp in zip(records, engine.generate(reqs)):
        r["checker"] = c.name
        r["checker_consistent"], r["checker_reason"], r["checker_error"] = None, None, None
        if comp.error:
            r["checker_error"] = f"engine: {comp.error}"
            continue
        try:
            r["checker_consistent"], r["checker_reason"] = parse_checker(comp.text)
        except ValueError as e:
            r["checker_error"] = str(e)


def run(cfg: BuildRefsConfig) -> list[dict]:
    samples, bad = load_samples(cfg.benchmarks, cfg.skip_bad_rows, read_images=False)
    if bad:  # rows skipped by skip_bad_rows: listed with their reasons beside the output
        write_json(join(cfg.output_uri, "bad_rows.json"), json.dumps(bad, indent=2))
    if not samples:
        raise ValueError(f"no samples to build references for: {len(bad)} bad row(s) skipped (see "
                         f"{join(cfg.output_uri, 'bad_rows.json')}), or the files are empty")
    init_ray(cfg.ray)
    records = merge(cfg, samples, write_chains(cfg, samples))
    check(cfg, records)
    write_text(join(cfg.output_uri, "reference_steps.jsonl"),
               "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return records


def _summary(cfg: BuildRefsConfig, records: list[dict]) -> str:
    n_checked = sum(r.get("checker_consistent") is not None for r in records)
    return (f"wrote {join(cfg.output_uri, 'reference_steps.jsonl')}: {len(records)} items, "
            f"{sum(len(r['reference_steps']) for r in records) / max(1, len(records)):.1f} steps/item, "
            f"{n_checked} checked, {sum(bool(r.get('checker_error')) for r in records)} checker errors")


def _failed(records: list[dict]) -> str | None:
    if records and not any(r["reference_steps"] for r in records):
        return f"none of {len(records)} items got a reference step: every writer failed (reasons in the log above)"
    return None


def main(argv=None) -> int:
    return run_builder(argv, prog="python -m howeval.ray_jobs.build_refs", description=__doc__.split("\n")[0],
                       cls=BuildRefsConfig, example="configs/build_refs.yaml", build=run, summary=_summary, failed=_failed)


if __name__ == "__main__":
    sys.exit(main())
