"""The report of a run from its stored records: ``write_report(cfg)`` (no Ray needed).

Joins each response with the primary pattern judge's judgment (same key and response hash; a judgment
without error preferred), computes SPEC §1 metrics with bootstrap intervals, McNemar's test and the
length analysis, adds the judge-agreement section and each benchmark plug-in's part (``sections``: CRYSTAL's,
AdaptMMBench's, registered in ``plugins``) when the run has them, and writes under the run:

- ``metrics.json`` (with ``run.provenance``: code, packages, hardware, resolved engine arguments, seeds;
  ``howeval.report.provenance``; every path relative to the run); ``report.md`` and ``index.html`` (``howeval.report.page``, ``howeval.report.html``);
- ``tables/patterneval.{md,csv,tex}`` and ``tables/patterneval_categories.{md,csv,tex}`` (``howeval.report.paper``);
- ``plots/radar_NT.png``, ``radar_T.png``, ``length_scatter.png``, ``length_sextiles.png`` (``howeval.report.plots``);
- ``samples.jsonl`` and ``samples.parquet`` (``howeval.report.samples``).

Jobs (``howeval.ray_jobs.report``, the sweep, re-judging, CRYSTAL, AdaptMMBench) call it through
``howeval.plugins.write_report``, which passes every registered plug-in's part.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from howeval.config import SweepConfig
from howeval.judges.pipeline import judge_id
from howeval.metrics.patterneval import sweep_metrics
from howeval.metrics.stats import extend_metrics
from howeval.records import (
    JUDGMENT_SCHEMA,
    LABELS,
    RESPONSE_KEY,
    RESPONSE_SCHEMA,
    key_of,
    latest_attempts,
)
from howeval.report.html import render_html
from howeval.report.meta import run_metadata
from howeval.report.page import build_document, to_markdown
from howeval.report.paper import categories_of, write_tables
from howeval.report.plots import all_plots
from howeval.report.provenance import provenance_section, relative_to_run, run_provenance
from howeval.report.samples import write_samples
from howeval.report.tables import render_agreement
from howeval.store import fs_and_path, join, read_table, undefined_as_null, write_bytes, write_json, write_text

JUDGMENT_COLUMNS = ("correct", "extracted", "verify_method", "verify_reason", "cot", "rep", "con", "pr",
                    "judge_error", "judge")


def joined_rows(responses: list[dict], judgments: list[dict], jid: str) -> list[dict]:
    """Responses with the judgment of judge ``jid`` merged in (judgment columns null when none).

    A response without a judgment and without an engine error gets ``judge_error = "not judged yet"``.
    """
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


def pair_rows(rows: list[dict], pairs: dict[str, str]) -> list[dict]:
    """``rows`` with the ``config`` of each T/NT pair member replaced by its pair's name (``pairs``: config ->
    ``pair_as``, :meth:`howeval.config.SweepConfig.mode_pairs`), the member kept in ``checkpoint_config``:
    the NT rows of the non-thinking checkpoint and the T rows of the thinking one become one config, whose
    Δacc / Δpat pair them by prompt."""
    if not pairs:
        return rows
    return [dict(r, config=pairs[r["config"]], checkpoint_config=r["config"]) if r.get("config") in pairs else r
            for r in rows]


def judge_agreement(judgments: list[dict]) -> dict | None:
    """Consensus over the pattern judges that judged the same responses (issue: several judges).

    Returns None with fewer than two judges; else ``howeval.judges.consensus.consensus_table`` over the
    responses every judge has seen, plus ``judges`` and ``disputed`` (keys of responses with at least one
    disputed label, at most 50 listed).
    """
    from howeval.judges.consensus import consensus, consensus_table
    from howeval.judges.verdict import PatternVerdict

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


def read_bad_rows(run: str) -> list[dict]:
    """The run's ``bad_rows.json`` (benchmark rows skipped by ``--skip-bad-rows``); [] when absent."""
    fs, path = fs_and_path(join(run, "bad_rows.json"))
    if not fs.exists(path):
        return []
    with fs.open(path, "r") as f:
        return json.load(f)


def skipped_ids(bad_rows: list[dict]) -> set[str]:
    """The sample ids of skipped benchmark rows (``bad_rows.json`` records), which no figure, log or count
    of the report may include: a row skipped on a resume may have answers stored from an earlier run. A
    duplicate-uid record names the id of the row kept, so it is not one.

    >>> sorted(skipped_ids([{"uid": "a", "field": "image"}, {"uid": "b", "field": "uid"}, {"uid": None, "field": "<json>"}]))
    ['a']
    """
    return {b["uid"] for b in bad_rows if b.get("uid") and b.get("field") != "uid"}


def relative_bad_rows(bad_rows: list[dict], run: str) -> list[dict]:
    """Skipped rows with their file ``path`` (and that path inside ``reason``) relative to the run folder."""
    out = []
    for b in bad_rows:
        rel = relative_to_run(b.get("path"), run)
        folder = str(Path(b["path"]).parent) if b.get("path") and rel != b["path"] else None
        reason = b.get("reason")
        if folder and isinstance(reason, str):
            reason = reason.replace(folder, str(Path(rel).parent))
        out.append({**b, "path": rel, "reason": reason})
    return out


def _notes(cfg: SweepConfig, jid: str, vision: dict[str, str]) -> list[str]:
    notes = [f"Pattern judge: `{jid}`; verifier: rule-based per answer type"
             f"{' with LLM fallback' if cfg.judges.verifier.llm_fallback else ''}."]
    blind = [c for c, v in vision.items() if v == "none"]
    ocr = [c for c, v in vision.items() if v == "OCR text"]
    if blind:
        embedded = any(m.name in blind and m.model is None and m.engine == "hf" for m in cfg.models)
        notes.append(f"Text-only configs (no image reached the model, so image questions are answered blind): "
                     f"{', '.join(blind)}." + (" The embedded SmolLM2-135M is such a model: its numbers test the "
                                                "pipeline, not a VLM." if embedded else ""))
    if ocr:
        notes.append(f"Configs that saw the images' OCR text instead of the images: {', '.join(ocr)}.")
    return notes


def not_measured_notes(metrics: dict) -> list[str]:
    """The warnings of figures that were not measured (every row failed, every judge call failed), for the
    top of the report: a reader sees them before any table (where those figures show as '–' / not measured)."""
    return [f"**Not measured**: {w}" for c in metrics.get("configs", {}).values() for w in c.get("warnings") or []
            if "not measured" in w]


def write_report(cfg: SweepConfig, bad_rows: list[dict] | None = None, judge: str | None = None,
                 on_file: Callable[[str], None] | None = None, sections: Sequence[Callable] = ()) -> dict:
    """Compute the metrics of the run at ``cfg.output_uri`` and write every report file (module docstring).

    Args:
        cfg: the run's config (``howeval.config.load_run_config(run)`` for a finished run).
        bad_rows: skipped benchmark rows; default: the run's ``bad_rows.json``. Their stored answers (a row
            skipped on a resume) are left out of every figure, count and log (:func:`skipped_ids`).
        judge: pattern judge name whose labels enter the metrics; default the primary.
        on_file: called with each file's URI once it is written (the jobs print a line per file).
        sections: the benchmarks' report parts, in order: ``section(cfg, joined rows) -> (metrics keys,
            Markdown sections) | None`` (``howeval.plugins.report_sections()``: CRYSTAL's, AdaptMMBench's, ...); their
            sections go after the judge agreement, before the provenance.

    Returns the metrics dict written to ``metrics.json``.

    Raises:
        ValueError: ``judge`` is not one of the run's pattern judges.
    """
    out = cfg.output_uri
    bad_rows = read_bad_rows(out) if bad_rows is None else bad_rows
    skipped = skipped_ids(bad_rows)  # rows skipped now may have answers from an earlier run: never counted
    # one row per key: a run killed after a retry may hold the old error row beside the new attempt
    responses = [r for r in latest_attempts(read_table(join(out, "responses"), RESPONSE_SCHEMA)[0].to_pylist())
                 if r["sample_id"] not in skipped]
    judgments = [j for j in read_table(join(out, "judgments"), JUDGMENT_SCHEMA)[0].to_pylist()
                 if j["sample_id"] not in skipped]
    name = judge or cfg.judges.primary_name
    jc = next((j for j in cfg.judges.pattern if j.name == name), None)
    if jc is None:
        raise ValueError(f"judge {name!r} not in the run's judges {[j.name for j in cfg.judges.pattern]}")
    jid = judge_id(jc)
    pairs = cfg.mode_pairs()  # T/NT pairs of two checkpoints: reported as one model's NT and T
    joined = joined_rows(responses, judgments, jid)
    rows = pair_rows(joined, pairs)
    metrics = extend_metrics(sweep_metrics(rows), rows)  # + bootstrap CIs, McNemar, length analysis
    meta = run_metadata(cfg, responses)
    vision = {c["name"]: c["vision"] for c in meta["configs"]}
    for group in set(pairs.values()):
        seen = {vision.get(m) for m, g in pairs.items() if g == group}
        vision[group] = seen.pop() if len(seen) == 1 else " / ".join(f"{m}: {vision.get(m)}" for m in sorted(pairs)
                                                                     if pairs[m] == group)
    if pairs:  # {pair: {"NT": non-thinking config, "T": thinking config}}
        metrics["pairs"] = {}
        for m in cfg.models:
            if m.pair_as is not None:
                metrics["pairs"].setdefault(m.pair_as, {})[next(iter(m.modes))] = m.name
    # paths relative to the run (never the machine's absolute data path: it differs per machine and leaks)
    metrics["run"] = {"name": cfg.name, "output_uri": meta["output_uri"], "pattern_judge": jid,
                      "benchmarks": [relative_to_run(b.path, out) for b in cfg.benchmarks],
                      "n_responses": len(responses), "vision": vision, "dates": meta["dates"],
                      "provenance": run_provenance(cfg)}
    bad_rows = relative_bad_rows(bad_rows, out)
    metrics["bad_rows"] = bad_rows
    extra = []
    agreement = judge_agreement(judgments)
    if agreement:
        metrics["judge_agreement"] = agreement
        extra.append(render_agreement(agreement))
    for section in sections:  # each benchmark plug-in's part (howeval.plugins.registry.Benchmark.report), in order
        part = section(cfg, joined)
        if part is not None:
            metrics.update(part[0])
            extra.extend(part[1])
    done = on_file or (lambda _uri: None)
    # an undefined figure is null (never 0.0, never the invalid token NaN): allow_nan=False proves it
    write_json(join(out, "metrics.json"), json.dumps(undefined_as_null(metrics), indent=2, sort_keys=True, default=str,
                                                     allow_nan=False))
    done(join(out, "metrics.json"))
    for uri in write_tables(out, metrics, vision):
        done(uri)
    pngs = all_plots(metrics, metrics["length"], categories_of(metrics))
    for fname, png in pngs.items():
        write_bytes(join(out, "plots", fname), png)
        done(join(out, "plots", fname))
    title = f"Sweep report: {cfg.name}"
    doc = build_document(metrics, title=title, meta=meta, vision=vision, notes=_notes(cfg, jid, vision) + not_measured_notes(metrics),
                         figures=[f for f in ("radar_NT.png", "radar_T.png", "length_scatter.png",
                                              "length_sextiles.png") if f in pngs],
                         extra_sections=[*extra, provenance_section(metrics["run"]["provenance"])], bad_rows=bad_rows)
    write_text(join(out, "report.md"), to_markdown(doc))
    done(join(out, "report.md"))
    write_text(join(out, "index.html"), render_html(doc, pngs, title))
    done(join(out, "index.html"))
    for uri in write_samples(out, responses, judgments, jid):
        done(uri)
    return metrics
