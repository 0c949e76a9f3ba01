"""Job: build the PatternRM SFT corpus from a run's judgments by three judges (SPEC section 2, "Corpus").

    python -m howeval.ray_jobs.build_corpus --run runs/demo --judges rules@rules-1.0 llm-a@v1 llm-b@v1 --out runs/demo/patternrm_corpus

Steps, each printing its counts:

1. read ``<run>/judgments/`` and ``<run>/responses/`` (Parquet, ``records`` schemas);
2. keep responses that all the given judges labelled without error and agree on the whole 4-label vector;
3. join the response text (responses with an engine error, a truncated thinking response or an empty
   y_m are dropped: there is nothing to label);
4. hold out a share (by a hash of the key) as a labelled file for calibration (``heldout.jsonl``);
5. oversample positives of rare labels (``howeval.judges.patternrm.format.oversample``);
6. write SFT chat records: ``sft_direct.jsonl`` (labels only, the served variant) and
   ``sft_thinking.jsonl`` (a short judgment, then labels), plus ``counts.json``.

The data are small (tens of thousands of rows): this job runs in one process, without Ray.

``--offline`` builds the corpus that needs no judge instead (``howeval.judges.patternrm.corpus``: real
texts plus pattern injections with labels known by construction, the 47 hand-labelled responses left
out; card: ``docs/patternrm_corpus.md``) and writes ``offline.jsonl`` (every record, unknown labels as
null: what the embedded MiniLM head trains on) and ``sft_<target>.jsonl`` from the records whose four
labels are all known (the SFT path of ``howeval.ray_jobs.train_patternrm``)::

    python -m howeval.ray_jobs.build_corpus --offline --out runs/patternrm/offline
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from howeval.judges.patternrm.format import ROW_KEY, TARGETS, label_counts, oversample, sft_record, unanimous_rows
from howeval.records import JUDGMENT_SCHEMA, RESPONSE_SCHEMA
from howeval.store import join, read_table


def _say(step: str, counts: dict[str, Any]) -> None:
    print(f"[build_corpus] {step}: " + ", ".join(f"{k}={v}" for k, v in counts.items()), flush=True)


def _heldout(row: dict, share: float, seed: int) -> bool:
    h = hashlib.sha256(f"{seed}:{json.dumps([row[c] for c in ROW_KEY], default=str)}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2.0**64 < share


def _three_judges(judges: list[str] | None, found: list[str], run: str) -> list[str]:
    """The three judges the corpus is built from: ``judges``, or all of ``found`` when there are three.

    Raises:
        ValueError: not given and the run has other than 3; not exactly 3; one has no judgments in ``run``.
    """
    if judges is None:
        if len(found) != 3:
            raise ValueError(f"--judges not given and the run has {len(found)} judges {found}; name the three to use")
        judges = found
    if len(judges) != 3:
        raise ValueError(f"the corpus needs exactly 3 judges (SPEC section 2), got {judges}")
    unknown = [j for j in judges if j not in found]
    if unknown:
        raise ValueError(f"judges {unknown} have no judgments in {run}; found {found}")
    return judges


def _join_responses(kept: list[dict[str, Any]], responses: list[dict[str, Any]]
                    ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The unanimous rows with their question and response text, and the counts of those left out (no
    response row, an engine error, truncated, empty) and ``kept``."""
    text = {tuple(r[k] for k in ROW_KEY): r for r in responses}
    joined, c = [], {"no_response_row": 0, "engine_error": 0, "truncated": 0, "empty_response": 0}
    for row in kept:
        r = text.get(tuple(row[k] for k in ROW_KEY))
        if r is None:
            c["no_response_row"] += 1
        elif r.get("error"):
            c["engine_error"] += 1
        elif r.get("truncated"):
            c["truncated"] += 1
        elif not (r.get("response") or "").strip():
            c["empty_response"] += 1
        else:
            joined.append({**row, "question": r["question"] or "", "response": r["response"]})
    c["kept"] = len(joined)
    return joined, c


def _write_corpus(outp: Path, targets: tuple[str, ...], sampled: list[dict[str, Any]], held: list[dict[str, Any]],
                  max_chars: int | None) -> dict[str, int]:
    """Write ``sft_<target>.jsonl`` per target (the oversampled training rows) and ``heldout.jsonl`` under
    ``outp``; returns the rows written per file."""
    written: dict[str, int] = {}
    for target in targets:
        path = outp / f"sft_{target}.jsonl"
        with path.open("w") as f:
            for r in sampled:
                meta = {"sample_id": r["sample_id"], "config": r["config"], "mode": r["mode"], "copy": r["copy"]}
                rec = sft_record(r["question"], r["response"], r["labels"], target, r["evidence"], max_chars, meta)
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        written[f"sft_{target}.jsonl"] = len(sampled)
    with (outp / "heldout.jsonl").open("w") as f:
        for r in held:
            f.write(json.dumps({"sample_id": r["sample_id"], "config": r["config"], "mode": r["mode"],
                                "question": r["question"], "response": r["response"], "labels": r["labels"]},
                               ensure_ascii=False) + "\n")
    written["heldout.jsonl"] = len(held)
    return written


def build_corpus(run: str, judges: list[str] | None, out: str, targets: tuple[str, ...] = TARGETS,
                 min_rate: float = 0.1, max_copies: int = 3, holdout: float = 0.0, seed: int = 0,
                 max_chars: int | None = 4000) -> dict[str, Any]:
    """Build the corpus; returns the counts of every step (also written to ``<out>/counts.json``)."""
    counts: dict[str, Any] = {}
    judgments, bad_j = read_table(join(run, "judgments"), JUDGMENT_SCHEMA)
    responses, bad_r = read_table(join(run, "responses"), RESPONSE_SCHEMA)
    jrows = judgments.to_pylist()
    found = sorted({j["judge"] for j in jrows})
    counts["read"] = {"judgments": len(jrows), "responses": responses.num_rows, "judges_found": found,
                      "quarantined_files": len(bad_j) + len(bad_r)}
    _say("read", counts["read"])
    judges = _three_judges(judges, found, run)

    kept, c = unanimous_rows(jrows, judges)
    counts["consensus"] = c
    _say("consensus (whole 4-label vector, 3 judges)", c)

    joined, c = _join_responses(kept, responses.to_pylist())
    counts["joined"] = c
    _say("joined with response text", c)

    held = [r for r in joined if holdout > 0 and _heldout(r, holdout, seed)]
    train = [r for r in joined if not (holdout > 0 and _heldout(r, holdout, seed))]
    counts["split"] = {"train": len(train), "heldout": len(held)}
    _say("split", counts["split"])
    counts["labels_before"] = label_counts(train)
    _say("labels before oversampling", counts["labels_before"])
    sampled = oversample(train, min_rate=min_rate, max_copies=max_copies, seed=seed)
    counts["labels_after"] = label_counts(sampled)
    _say(f"labels after oversampling (min_rate={min_rate}, max_copies={max_copies})", counts["labels_after"])

    outp = Path(out)
    outp.mkdir(parents=True, exist_ok=True)
    counts["written"] = _write_corpus(outp, targets, sampled, held, max_chars)
    counts["judges"] = list(judges)
    _say("written", counts["written"])
    (outp / "counts.json").write_text(json.dumps(counts, indent=2))
    return counts


def build_offline(out: str, targets: tuple[str, ...] = TARGETS, seed: int = 0, max_chars: int | None = 4000,
                  data_root: str | None = None, human_labels: str | None = None, demo_manifest: str | None = None) -> dict[str, Any]:
    """Write the offline corpus (see the module docstring); returns its counts (also ``<out>/counts.json``)."""
    from howeval.judges.patternrm.corpus import build_offline_corpus, corpus_counts, load_bases
    from howeval.judges.patternrm.head import default_sources, require_data_root

    src = default_sources()
    bases = load_bases(require_data_root(data_root or src["data_root"]), human_labels or src["human_labels"],
                       demo_manifest or src["demo_manifest"], seed=seed)
    records = build_offline_corpus(bases, seed=seed)
    counts: dict[str, Any] = {"bases": len(bases), "corpus": corpus_counts(records), "written": {}}
    _say("offline corpus", {"bases": len(bases), "records": len(records)})
    outp = Path(out)
    outp.mkdir(parents=True, exist_ok=True)
    with (outp / "offline.jsonl").open("w") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    counts["written"]["offline.jsonl"] = len(records)
    known = [r for r in records if all(v is not None for v in r["labels"].values())]
    for target in targets:
        with (outp / f"sft_{target}.jsonl").open("w") as f:
            for r in known:
                labels = {k: bool(v) for k, v in r["labels"].items()}
                rec = sft_record(r["question"], r["response"], labels, target, None, max_chars,
                                 {"uid": r["uid"], "origin": r["origin"], "recipe": r["recipe"]})
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        counts["written"][f"sft_{target}.jsonl"] = len(known)
    _say("written", counts["written"])
    (outp / "counts.json").write_text(json.dumps(counts, indent=2))
    return counts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m howeval.ray_jobs.build_corpus", description=__doc__.split("\n")[0])
    p.add_argument("--run", help="output URI of a sweep run with judgments by three judges")
    p.add_argument("--offline", action="store_true", help="build the offline corpus (no judges; see the module docstring)")
    p.add_argument("--judges", nargs=3, help="the three judge ids (name@version); default: the run's three judges")
    p.add_argument("--out", required=True, help="output folder for the corpus")
    p.add_argument("--targets", nargs="+", choices=TARGETS, default=list(TARGETS),
                   help="SFT target formats to write (default: all)")
    p.add_argument("--min-rate", type=float, default=0.1, help="oversample positives of a label until this rate")
    p.add_argument("--max-copies", type=int, default=3, help="extra copies per instance at most")
    p.add_argument("--holdout", type=float, default=0.0, help="share held out as a labelled file (heldout.jsonl)")
    p.add_argument("--seed", type=int, default=0, help="seed of the oversampling and the held-out split (default 0)")
    p.add_argument("--max-chars", type=int, default=4000, help="response characters kept per record (head + tail)")
    a = p.parse_args(argv)
    if a.offline == bool(a.run):
        p.error("give exactly one of --run RUN (three judges' judgments) or --offline")
    try:
        if a.offline:
            build_offline(a.out, tuple(a.targets), a.seed, a.max_chars)
            return 0
        build_corpus(a.run, a.judges, a.out, tuple(a.targets), a.min_rate, a.max_copies, a.holdout, a.seed, a.max_chars)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
