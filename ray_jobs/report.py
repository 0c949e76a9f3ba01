"""Job: metrics and report of a run from its Parquet records (no Ray needed).

    python -m ray_jobs.report --run runs/demo [--judge NAME]

Joins each response with the primary pattern judge's judgment (same key and response hash; a
judgment without error preferred), computes SPEC §1 metrics with bootstrap intervals, McNemar's test
and the length analysis, adds CRYSTAL / AdaptMMBench / judge-agreement sections when the run has
them, and writes ``metrics.json``, ``report.md``, ``index.html`` and ``plots/*.png``.
"""
from __future__ import annotations

import argparse
import json
import sys

from howeval.benchmarks.adapt.metrics import summarize_rows
from howeval.config import SweepConfig, load_run_config
from howeval.benchmarks.crystal import crystal_settings, summarize_step_rows
from howeval.judges.pipeline import judge_id
from howeval.report.html import write_html_report
from howeval.metrics.patterneval import sweep_metrics
from howeval.records import ADAPT_SCHEMA, JUDGMENT_SCHEMA, RESPONSE_KEY, RESPONSE_SCHEMA, STEPS_SCHEMA, key_of
from howeval.metrics.stats import extend_metrics, extra_sections
from howeval.report.tables import render_adapt, render_agreement, render_crystal, render_report
from howeval.store import fs_and_path, join, read_table, write_json

JUDGMENT_COLUMNS = ("correct", "extracted", "verify_method", "verify_reason", "cot", "rep", "con", "pr",
                    "judge_error", "judge")


def joined_rows(responses: list[dict], judgments: list[dict], jid: str) -> list[dict]:
    """Responses with the judgment of judge ``jid`` merged in (judgment columns null when none)."""
    best: dict[tuple, dict] = {}
    for j in judgments:
        if j["judge"] != jid:
            continue
        k = key_of(j, RESPONSE_KEY)
        if k not in best or (best[k].get("judge_error") and not j.get("judge_error")):
            best[k] = j
    out = []
    for r in responses:
        j = best.get(key_of(r, RESPONSE_KEY))
        row = dict(r)
        for c in JUDGMENT_COLUMNS:
            row[c] = j.get(c) if j else None
        if j is None and not r.get("error"):
            row["judge_error"] = "not judged yet"
        out.append(row)
    return out


def judge_agreement(judgments: list[dict]) -> dict | None:
    """Consensus over the pattern judges that judged the same responses (issue: several judges).

    Returns None with fewer than two judges; else ``howeval.judges.consensus.consensus_table`` over the
    responses every judge has seen, plus ``judges`` and ``disputed`` (keys of responses with at least one
    disputed label, at most 50 listed).
    """
    from howeval.judges.consensus import consensus, consensus_table
    from howeval.judges.verdict import PatternVerdict
    from howeval.records import LABELS

    judges = sorted({j["judge"] for j in judgments})
    if len(judges) < 2:
        return None
    by_resp: dict[tuple, dict] = {}
    for j in judgments:
        name, _, version = j["judge"].partition("@")
        if j.get("judge_error") or any(j.get(k) is None for k in LABELS):
            v = PatternVerdict.failed(name, version, j.get("judge_error") or "no labels")
        else:
            v = PatternVerdict({k: bool(j[k]) for k in LABELS}, {k: None for k in LABELS}, name, version)
        by_resp.setdefault(key_of(j, RESPONSE_KEY), {})[j["judge"]] = v
    full = {k: v for k, v in by_resp.items() if len(v) == len(judges)}
    results = {k: consensus(v) for k, v in full.items()}
    table = consensus_table(results.values())
    table["judges"] = judges
    table["disputed"] = [list(k[:3]) for k, r in sorted(results.items()) if r.disputed_labels][:50]
    return table


def _read_bad_rows(run: str) -> list[dict]:
    fs, path = fs_and_path(join(run, "bad_rows.json"))
    if not fs.exists(path):
        return []
    with fs.open(path, "r") as f:
        return json.load(f)


def write_report(cfg: SweepConfig, bad_rows: list[dict] | None = None, judge: str | None = None) -> dict:
    """Compute metrics for the run at ``cfg.output_uri`` and write ``metrics.json`` and ``report.md``."""
    out = cfg.output_uri
    responses = read_table(join(out, "responses"), RESPONSE_SCHEMA)[0].to_pylist()
    judgments = read_table(join(out, "judgments"), JUDGMENT_SCHEMA)[0].to_pylist()
    name = judge or cfg.judges.primary_name
    jc = next((j for j in cfg.judges.pattern if j.name == name), None)
    if jc is None:
        raise ValueError(f"judge {name!r} not in the run's judges {[j.name for j in cfg.judges.pattern]}")
    rows = joined_rows(responses, judgments, judge_id(jc))
    metrics = extend_metrics(sweep_metrics(rows), rows)  # + bootstrap CIs, McNemar, length analysis
    metrics["run"] = {"name": cfg.name, "output_uri": out, "pattern_judge": judge_id(jc),
                      "benchmarks": [b.path for b in cfg.benchmarks], "n_responses": len(responses)}
    bad_rows = _read_bad_rows(out) if bad_rows is None else bad_rows
    metrics["bad_rows"] = bad_rows
    notes = [f"Pattern judge: `{judge_id(jc)}`; verifier: rule-based per answer type"
             f"{' with LLM fallback' if cfg.judges.verifier.llm_fallback else ''}."]
    blind = sorted({r["config"] for r in responses if r.get("images_seen") == 0 and not r.get("error")})
    if blind:
        notes.append(f"Text-only configs (they never saw the images, so image questions are answered blind): "
                     f"{', '.join(blind)}. The embedded SmolLM2-135M is such a model: its numbers test the "
                     "pipeline, not a VLM.")
    extra = extra_sections(metrics)
    agreement = judge_agreement(judgments)
    if agreement:
        metrics["judge_agreement"] = agreement
        extra.append(render_agreement(agreement))
    steps = read_table(join(out, "steps"), STEPS_SCHEMA)[0].to_pylist()
    if steps and cfg.crystal is not None:  # only rows at the run's current (tau, alpha, order, embedder)
        cs = crystal_settings(cfg.crystal)
        want = (cs["embedder"] or "all-MiniLM-L6-v2", cs["tau"], cs["alpha"], cs["order"])
        steps = [r for r in steps if (r["embedder"], r["tau"], r["alpha"], r["order"]) == want]
    if steps:
        metrics["crystal"] = summarize_step_rows(steps)
        extra.append(render_crystal(metrics["crystal"]))
    adapt_rows = read_table(join(out, "adapt"), ADAPT_SCHEMA)[0].to_pylist()
    if adapt_rows:
        by_cfg: dict = {}
        for r in adapt_rows:
            by_cfg.setdefault(r["config"], []).append(r)
        metrics["adapt"] = {c: summarize_rows(rs) for c, rs in sorted(by_cfg.items())}
        extra.append(render_adapt(metrics["adapt"]))
    write_json(join(out, "metrics.json"), json.dumps(metrics, indent=2, sort_keys=True, default=str))
    md = render_report(metrics, title=f"Sweep report: {cfg.name}", notes=notes, bad_rows=bad_rows, extra_sections=extra)
    write_json(join(out, "report.md"), md)
    write_html_report(out, metrics, rows, markdown=md)  # plots/*.png + index.html
    return metrics


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m ray_jobs.report", description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True, help="output URI of a sweep run")
    p.add_argument("--judge", help="pattern judge name whose labels enter the metrics (default: the primary)")
    args = p.parse_args(argv)
    cfg = load_run_config(args.run)
    try:
        write_report(cfg, judge=args.judge)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {join(args.run, 'metrics.json')} and {join(args.run, 'report.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
