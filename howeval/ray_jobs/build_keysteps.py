"""Job: an LLM writes the key steps of new AdaptMMBench items, for a person to review (issue 31).

    python -m howeval.ray_jobs.build_keysteps --config configs/build_keysteps.yaml [--limit N]

AdaptMMBench paper (003, evaluation pipeline step (1)): "key reasoning steps K are generated with GPT-5 and
verified by humans". The Delphi builder's pattern (``howeval/ray_jobs/build_refs.py``):

1. The writer model answers :func:`howeval.benchmarks.adapt.keysteps.keystep_instruction` for each item (image,
   question, options and the gold answer) through the sweep's generation (``howeval.ray_jobs.common.generate_and_judge``,
   one call, no judges; resumable under ``<out>/writer/responses/<writer>/``).
2. Each reply is parsed into a list of steps (or a failure reason) and written to
   ``<out>/key_steps_review.jsonl`` with ``status: pending`` (``howeval.benchmarks.adapt.keysteps.review_record``).
   A rerun keeps every row a person already reviewed (status other than pending) as it is.
3. A person sets each status (accepted / edited / rejected); then
   ``python -m howeval.benchmarks.adapt.keysteps --review ... --manifest ... --out ...`` puts the accepted
   and edited steps into the manifest's ``key_steps``.
"""
from __future__ import annotations

import json
import sys

from howeval.benchmarks.adapt.keysteps import keystep_instruction, read_review, review_record
from howeval.benchmarks.loaders import load_samples
from howeval.config import BuildKeyStepsConfig
from howeval.ray_jobs.common import generate_and_judge, run_builder
from howeval.records import RESPONSE_SCHEMA
from howeval.runtime.cluster import init_ray, log  # noqa: F401  (the howeval logger)
from howeval.store import fs_and_path, join, read_table, write_json, write_text

REVIEW_FILE = "key_steps_review.jsonl"


def write_replies(cfg: BuildKeyStepsConfig, samples: list[dict]) -> dict[str, dict]:
    """The writer's latest response row per sample id (``response``, ``error``); a sample without one is absent."""
    writer_cfg = cfg.model_copy(update={"output_uri": join(cfg.output_uri, "writer")})
    asked = [{**s, "instruction": keystep_instruction(s["answer"], max_steps=cfg.max_steps)} for s in samples]
    res = generate_and_judge(writer_cfg, asked, [cfg.writer], judges=None, modes=(cfg.mode,))
    log.info("build_keysteps: writer %s", res.generated)
    for stage, reason in res.failures.items():  # its items get an error row, for the reviewer to see
        log.warning("build_keysteps: writer %s failed: %s", stage.split(":", 1)[-1], reason)
    out: dict[str, dict] = {}
    for r in read_table(join(writer_cfg.output_uri, "responses"), RESPONSE_SCHEMA)[0].to_pylist():
        if r["mode"] == cfg.mode and r["config"] == cfg.writer.name:
            out[r["sample_id"]] = r
    return out


def review_rows(cfg: BuildKeyStepsConfig, samples: list[dict], replies: dict[str, dict],
                reviewed: dict[str, dict]) -> list[dict]:
    """A review row per sample: the reviewed one kept as is, else a fresh ``pending`` row from its reply."""
    rows = []
    for s in samples:
        if s["sample_id"] in reviewed:
            rows.append(reviewed[s["sample_id"]])
            continue
        r = replies.get(s["sample_id"])
        item = {**s, "image": (s.get("image_paths") or s.get("image_names") or [None])[0]}
        if r is None:
            rows.append(review_record(item, None, writer=cfg.writer.name, error="no response written (see the job log)"))
        else:
            rows.append(review_record(item, r["response"], writer=cfg.writer.name, max_steps=cfg.max_steps,
                                      error=f"engine: {r['error']}" if r.get("error") else None))
    return rows


def run(cfg: BuildKeyStepsConfig) -> list[dict]:
    """Write (or refresh) ``<out>/key_steps_review.jsonl``; returns its rows.

    Raises:
        ValueError: no item to write steps for; a review file already there that does not read back
            (``howeval.benchmarks.adapt.keysteps.read_review``: fix it, or move it away to start over).
    """
    samples, bad = load_samples(cfg.benchmarks, cfg.skip_bad_rows, read_images=False)
    if bad:
        write_json(join(cfg.output_uri, "bad_rows.json"), json.dumps(bad, indent=2))
    if cfg.only_missing:
        samples = [s for s in samples if not s.get("key_steps")]
    if not samples:
        raise ValueError("no items to write key steps for: every item has key_steps already (only_missing: true), "
                         "or the files are empty")
    review_uri = join(cfg.output_uri, REVIEW_FILE)
    reviewed = {}
    fs, path = fs_and_path(review_uri)
    if fs.exists(path):
        reviewed = {r["uid"]: r for r in read_review(review_uri) if r["status"] != "pending"}
    todo = [s for s in samples if s["sample_id"] not in reviewed]
    replies = {}
    if todo:
        init_ray(cfg.ray)
        replies = write_replies(cfg, todo)
    rows = review_rows(cfg, samples, replies, reviewed)
    write_text(review_uri, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return rows


def _summary(cfg: BuildKeyStepsConfig, rows: list[dict]) -> str:
    by = {st: sum(r["status"] == st for r in rows) for st in ("pending", "accepted", "edited", "rejected")}
    return (f"wrote {join(cfg.output_uri, REVIEW_FILE)}: {len(rows)} items, "
            f"{sum(bool(r['proposed_steps']) for r in rows)} with proposed steps, "
            f"{sum(bool(r.get('error')) and r['status'] == 'pending' for r in rows)} failed; status {by}")


def _failed(rows: list[dict]) -> str | None:
    asked = [r for r in rows if r["status"] == "pending"]
    # the writer never answered (its engine failed, or nothing was written); a reply that does not parse is an answer
    errors = [r for r in asked if (r.get("error") or "").startswith(("engine:", "no response written"))]
    if asked and len(errors) == len(asked):
        return f"the writer failed on all {len(asked)} items to write: {errors[0]['error']}"
    return None


def main(argv=None) -> int:
    return run_builder(argv, prog="python -m howeval.ray_jobs.build_keysteps", description=__doc__.split("\n")[0],
                       cls=BuildKeyStepsConfig, example="configs/build_keysteps.yaml", build=run, summary=_summary, failed=_failed)


if __name__ == "__main__":
    sys.exit(main())
