"""Job: PatternRL's RL data mixture from local copies of its sources, with its composition and provenance (issue 41).

    python -m howeval.ray_jobs.build_mixture --config mixture.yaml --output runs/mixture [--strict] [--hash-all]

PatternRL paper (000, section 5): "a multimodal RL mixture of 44,200 prompts, approximately balanced across
multimodal math, multimodal logic, and document understanding. Most samples are drawn from OpenMMReasoner-RL-74K,
excluding its virl39k subset, and are supplemented with ...". The config is :class:`howeval.training.mixture.MixtureConfig`
(YAML; source paths relative to the config file); every source is read from a local path (a manifest or the set's
released files, :mod:`howeval.training.sources`): nothing is downloaded. No Ray: reading and drawing are one
process's work (the readers stream Parquet shards; embedded images are written for the kept rows only).

Writes under ``--output``:

- ``mixture.jsonl``: the training manifest (rows with ``mixture_source``, ``mixture_domain``; images as paths,
  embedded ones written to ``images/<source>/``);
- ``composition.json``: :func:`howeval.training.mixture.build_mixture`'s composition (per domain, source, domain x
  source, OpenMMReasoner subset; excluded rows; shortfall; majority; balance; ``checks``);
- ``composition.md``: the same as tables (domain | source | prompts | share), the checks with their figures;
- ``provenance.json``: git commit and dirty flag, package versions, the command, the config as validated, and per
  source its path and data files (size, SHA-256 for files up to 1 GiB, or all with ``--hash-all``), rows read,
  rows excluded; start and finish time.

Exit status: 0; 1 with ``--strict`` when a check fails (the primary source is not the majority, or the domains are
not within ``balance_tolerance`` of each other): the files are written either way, and the failed check is printed
with its figures. 2: a bad config or a source that cannot be read (the message names the source, file, row, field).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

HASH_LIMIT = 1 << 30
"""Data files larger than this (1 GiB) are recorded by size only unless ``--hash-all``."""

_DATA_EXT = (".parquet", ".jsonl", ".json")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def data_files(path: str, hash_all: bool = False) -> list[dict[str, Any]]:
    """The data files a source path stands for (the file, or every JSON / JSONL / Parquet file under the folder), each
    ``{path, bytes, sha256}``; ``sha256`` is None with ``why`` for a file over :data:`HASH_LIMIT` unless ``hash_all``."""
    p = Path(path)
    files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(_DATA_EXT))
    out = []
    for f in files:
        size = f.stat().st_size
        rec: dict[str, Any] = {"path": str(f), "bytes": size}
        if hash_all or size <= HASH_LIMIT:
            rec["sha256"] = _sha256(f)
        else:
            rec["sha256"] = None
            rec["why"] = f"over {HASH_LIMIT >> 30} GiB: rerun with --hash-all to hash it"
        out.append(rec)
    return out


def composition_markdown(comp: dict[str, Any], cfg) -> str:
    """``composition.md``: prompts per domain and source (PatternEval Table 1's layout: category, source, prompts),
    OpenMMReasoner's subsets, and the checks with their figures."""
    total = comp["total"] or 1
    lines = ["# RL mixture composition", "",
             f"{comp['total']} prompts of {comp['requested']} requested; seed {cfg.seed}; primary source "
             f"{cfg.primary or '(none)'}.", "",
             "| domain | source | prompts | share |", "|---|---|---|---|"]
    for d, by in comp["by_domain_source"].items():
        for s, n in sorted(by.items(), key=lambda kv: -kv[1]):
            lines.append(f"| {d} | {s} | {n} | {n / total:.1%} |")
        lines.append(f"| **{d}** | all | **{comp['by_domain'].get(d, 0)}** | {comp['by_domain'].get(d, 0) / total:.1%} |")
    if comp.get("by_subset"):
        lines += ["", "| source | subset | prompts |", "|---|---|---|"]
        for s, subs in comp["by_subset"].items():
            for sub, n in sorted(subs.items(), key=lambda kv: -kv[1]):
                lines.append(f"| {s} | {sub} | {n} |")
    maj = comp["majority"]
    chk = comp["checks"]
    lines += ["", "Checks (the paper's statements):", "",
              f"- primary source is the majority: **{chk['primary_is_majority']}** (largest source {maj['source']}, "
              f"{(maj['share'] or 0):.1%} of the prompts)",
              f"- domains within {cfg.balance_tolerance:.0%} of each other: **{chk['domains_balanced']}** "
              f"((largest - smallest) / largest = {comp['balance']})"]
    if comp["shortfall"]:
        lines.append(f"- shortfall (prompts a domain could not fill): {comp['shortfall']}")
    if any(comp["excluded"].values()):
        lines.append(f"- rows left out by `exclude`: {({k: v for k, v in comp['excluded'].items() if v})}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import yaml
    from pydantic import ValidationError

    from howeval.config.base import validate
    from howeval.report.provenance import git_state, package_versions
    from howeval.training.mixture import MixtureConfig, build_mixture, resolve_source_paths

    p = argparse.ArgumentParser(prog="python -m howeval.ray_jobs.build_mixture", description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True, help="YAML: total, domains, seed, primary, balance_tolerance, "
                   "sources: [{name, path, format?, image_root?, image_dir?, domain?, exclude?, cap?, subset_domains?}]")
    p.add_argument("--output", required=True, help="folder for mixture.jsonl, composition.json/.md, provenance.json")
    p.add_argument("--strict", action="store_true", help="exit 1 when a check fails (the files are written anyway)")
    p.add_argument("--hash-all", action="store_true", help="hash data files over 1 GiB too")
    a = p.parse_args(argv)
    started = _dt.datetime.now(_dt.timezone.utc)
    out = Path(a.output)
    try:
        raw = yaml.safe_load(Path(a.config).read_text(encoding="utf-8")) or {}
        resolve_source_paths(raw, a.config, out.resolve() / "images")  # relative to the config file's folder
        cfg = validate(MixtureConfig, raw, "mixture config")
        rows, comp = build_mixture(cfg)
    except (ValidationError, ValueError, FileNotFoundError, KeyError, OSError) as e:
        print(f"error: build_mixture: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "mixture.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    (out / "composition.json").write_text(json.dumps(comp, indent=1) + "\n", encoding="utf-8")
    (out / "composition.md").write_text(composition_markdown(comp, cfg), encoding="utf-8")
    prov = {"job": "build_mixture", "git": git_state(), "packages": package_versions(), "command": " ".join(sys.argv),
            "config": cfg.model_dump(mode="json"), "started": started.isoformat(timespec="seconds"),
            "sources": [{"name": s.name, "format": s.format, "path": s.path, "files": data_files(s.path, a.hash_all),
                         "rows_kept": comp["available"].get(s.name, 0), "rows_excluded": comp["excluded"].get(s.name, 0),
                         "prompts": comp["by_source"].get(s.name, 0)} for s in cfg.sources],
            "outputs": {"mixture.jsonl": len(rows)},
            "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    (out / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n", encoding="utf-8")
    failed = [k for k, v in comp["checks"].items() if v is False]
    print(json.dumps({"total": comp["total"], "by_domain": comp["by_domain"], "majority": comp["majority"],
                      "balance": comp["balance"], "checks": comp["checks"], "shortfall": comp["shortfall"]}))
    for k in failed:
        print(f"build_mixture: check failed: {k} (see {out / 'composition.md'})", file=sys.stderr)
    return 1 if failed and a.strict else 0


if __name__ == "__main__":
    raise SystemExit(main())
