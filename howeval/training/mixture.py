"""The RL data mixture of PatternRL: a training manifest drawn from several source manifests in set proportions.

PatternRL paper (000, section 5, "Training setup"): "a multimodal RL mixture of 44,200 prompts, approximately
balanced across multimodal math, multimodal logic, and document understanding. Most samples are drawn from
OpenMMReasoner-RL-74K, excluding its virl39k subset, and are supplemented with data from WeMath, MMK12,
ThinkLite-VL-Hard-11K, PuzzleVQA, AlgoPuzzleVQA, TextbookQA, ChartQA, and InfographicVQA."

The paper gives no per-source counts, so the defaults are what it states (issue 41): 44,200 prompts, a third per
domain (:data:`PAPER_DOMAINS`); each OpenMMReasoner row counts in the domain of its own subset (its release is
the paper's WeMath, MMK12, ThinkLite, PuzzleVQA/AlgoPuzzleVQA and TextbookQA data: ``algopuzzle`` is logic,
``tqa`` document, the others math; :data:`howeval.training.sources.OPENMMR_SUBSET_DOMAIN`), ``virl39k`` left
out; the other sources count in their domain (:data:`PAPER_SOURCES`). "Most samples are drawn from
OpenMMReasoner-RL-74K ... supplemented with": within each domain the ``primary`` source (OpenMMReasoner) is
drawn first, up to its rows and its ``cap``, and the other sources of the domain fill the rest in proportion to
their rows (each up to its ``cap``). The composition checks what the paper states and records the result
(``checks``: the primary source is the majority; the domains within ``balance_tolerance`` (10%) of each other).
Each source is read from a path the user gives, either as a manifest
in the project's format (``format: manifest``, ``datasets/README.md``: ``uid``, ``question``, ``answer``,
``answer_type``, ``image``...) or in the set's released layout (``format: released``: the reader of its name in
:mod:`howeval.training.sources`, which also says what of each layout is known). The draw is deterministic: rows
are ranked by SHA-256 of ``seed:uid``.

:func:`build_mixture` is pure apart from reading the sources; :func:`write_mixture` writes the manifest and the
composition (prompts per domain and source).
"""
from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from howeval.config.base import StrictModel

__all__ = ["PAPER_SOURCES", "PAPER_DOMAINS", "PAPER_PRIMARY", "MixtureSource", "MixtureConfig", "build_mixture",
           "write_mixture"]

PAPER_SOURCES: dict[str, str | None] = {
    "OpenMMReasoner-RL-74K": None, "WeMath": "math", "MMK12": "math", "ThinkLite-VL-Hard-11K": "math",
    "PuzzleVQA": "logic", "AlgoPuzzleVQA": "logic",
    "TextbookQA": "document", "ChartQA": "document", "InfographicVQA": "document",
}
"""The paper's nine sources and the domain each is counted in (a row's own ``domain`` column overrides it); None:
per row (OpenMMReasoner: its subset's domain, set by its reader)."""

PAPER_PRIMARY = "OpenMMReasoner-RL-74K"
"""'Most samples are drawn from OpenMMReasoner-RL-74K': drawn first in every domain."""

PAPER_DOMAINS: dict[str, float] = {"math": 1 / 3, "logic": 1 / 3, "document": 1 / 3}
"""'approximately balanced across multimodal math, multimodal logic, and document understanding'."""

PAPER_EXCLUDE: dict[str, dict[str, list[str]]] = {"OpenMMReasoner-RL-74K": {"subset": ["virl39k"]}}
"""'excluding its virl39k subset': rows whose ``subset`` column is ``virl39k`` are left out by default."""


class MixtureSource(StrictModel):
    """One source set: its manifest and where its rows count."""

    name: str = Field(..., description="Source name (one of PAPER_SOURCES for the paper's mixture, or any name with domain given).")
    path: str = Field(..., description="format manifest: a JSONL manifest (relative image paths resolve against its folder); format released: the set's released file or folder (howeval.training.sources).")
    format: Literal["manifest", "released"] = Field("manifest", description="manifest = the project's format; released = the set's own layout, read by the reader of its name (one of the paper's nine sources).")
    image_root: str | None = Field(None, description="format released: the folder relative image paths resolve against; None = the data file's folder (png/ beside it for ChartQA).")
    image_dir: str | None = Field(None, description="format released: where the kept rows' embedded images (Parquet bytes) are written; the CLI defaults it to images/<name> beside --out.")
    domain: str | None = Field(None, description="Domain its rows count in; None = PAPER_SOURCES[name]. A row's own `domain` column wins.")
    exclude: dict[str, list[str]] | None = Field(None, description="Rows to leave out: column -> values; None = PAPER_EXCLUDE for the name (virl39k for OpenMMReasoner).")
    cap: int | None = Field(None, ge=0, description="At most this many prompts from this source (all domains together; split over its domains in proportion to its rows there); None = no cap.")
    subset_domains: dict[str, str] | None = Field(None, description="Row subset -> domain, over the reader's (OpenMMReasoner: algopuzzle logic, tqa document, the others math); for a subset the reader does not know.")

    @model_validator(mode="after")
    def _known_domain(self) -> MixtureSource:
        if self.domain is None and self.name not in PAPER_SOURCES:
            raise ValueError(f"sources: {self.name!r} is not one of the paper's sources {sorted(PAPER_SOURCES)}: give its domain")
        if self.format == "released" and self.name not in PAPER_SOURCES:
            raise ValueError(f"sources.{self.name}: format released reads only the paper's sources {sorted(PAPER_SOURCES)}; "
                             "give other sets as a manifest (format: manifest)")
        return self

    @property
    def resolved_domain(self) -> str | None:
        """The domain its rows count in when a row carries none; None = per row (OpenMMReasoner)."""
        return self.domain or PAPER_SOURCES.get(self.name)

    @property
    def resolved_exclude(self) -> dict[str, list[str]]:
        return self.exclude if self.exclude is not None else PAPER_EXCLUDE.get(self.name, {})


class MixtureConfig(StrictModel):
    """The mixture: how many prompts, each domain's share, the sources, the seed of the draw."""

    total: int = Field(44_200, ge=1, description="Prompts in the mixture (paper: 44,200).")
    domains: dict[str, float] = Field(default_factory=lambda: dict(PAPER_DOMAINS), description="Domain -> share of total (normalized to sum 1); paper: a third each.")
    sources: list[MixtureSource] = Field(..., min_length=1, description="Source manifests.")
    seed: int = Field(0, description="Seed of the hash ranking that picks each source's rows.")
    primary: str | None = Field(PAPER_PRIMARY, description="The source drawn first in every domain (paper: 'most samples are drawn from OpenMMReasoner-RL-74K'); None = every source in proportion to its rows.")
    balance_tolerance: float = Field(0.10, ge=0, le=1, description="checks.domains_balanced holds when (largest domain - smallest) / largest <= this (paper: 'approximately balanced').")

    @model_validator(mode="after")
    def _domains_cover_sources(self) -> MixtureConfig:
        if any(v < 0 for v in self.domains.values()) or sum(self.domains.values()) <= 0:
            raise ValueError(f"domains: shares must be >= 0 and not all 0, got {self.domains}")
        missing = sorted({s.resolved_domain for s in self.sources if s.resolved_domain} - set(self.domains))
        if missing:
            raise ValueError(f"sources count in domain(s) {missing} that domains does not list ({sorted(self.domains)})")
        return self


def _rank(seed: int, uid: str) -> bytes:
    return hashlib.sha256(f"{seed}:{uid}".encode()).digest()


def _read_source(src: MixtureSource) -> tuple[list[dict[str, Any]], int]:
    """``(rows kept, rows left out by exclude)`` of one source."""
    excl = {col: set(vals) for col, vals in src.resolved_exclude.items()}

    def left_out(row: dict) -> bool:
        return any(str(row.get(col)) in vals for col, vals in excl.items())

    if src.format == "released":
        from howeval.training.sources import read_released

        rows = read_released(src.name, src.path, src.image_root)
        kept = [r for r in rows if not left_out(r)]
        return kept, len(rows) - len(kept)
    folder = Path(src.path).resolve().parent
    rows, dropped = [], 0
    with open(src.path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if not isinstance(row, dict) or not row.get("uid"):
                raise ValueError(f"{src.path}:{n}: a manifest row needs a uid (source {src.name})")
            if left_out(row):
                dropped += 1
                continue
            for key in ("image", "images"):  # make image paths independent of the output's folder
                v = row.get(key)
                if isinstance(v, str) and v and "://" not in v and not os.path.isabs(v):
                    row[key] = str(folder / v)
                elif isinstance(v, list):
                    row[key] = [str(folder / x) if isinstance(x, str) and "://" not in x and not os.path.isabs(x) else x
                                for x in v]
            rows.append(row)
    return rows, dropped


def _split(total: int, weights: Mapping[str, float]) -> dict[str, int]:
    """``total`` split by ``weights`` with largest remainders (the parts sum to ``total``)."""
    s = sum(weights.values())
    exact = {k: total * w / s for k, w in weights.items()}
    out = {k: int(v) for k, v in exact.items()}
    for k in sorted(exact, key=lambda k: (out[k] - exact[k], k))[: total - sum(out.values())]:
        out[k] += 1
    return out


def _row_domain(src: MixtureSource, row: dict[str, Any]) -> str:
    """A row's domain: ``subset_domains`` of its subset, its own ``domain``, the paper table of its source's subsets
    (OpenMMReasoner), else its source's domain.

    Raises:
        ValueError: none of these gives one (names the row, the subset and the fix).
    """
    from howeval.training.sources import OPENMMR_SUBSET_DOMAIN

    sub = str(row.get("subset"))
    d = ((src.subset_domains or {}).get(sub) or row.get("domain")
         or (OPENMMR_SUBSET_DOMAIN.get(sub) if src.name == PAPER_PRIMARY else None) or src.resolved_domain)
    if not d:
        raise ValueError(f"{src.name} row {row['uid']}: no domain (subset {row.get('subset')!r} is not one the reader "
                         f"knows): give sources.{src.name}.subset_domains: {{{row.get('subset')!r}: <domain>}}")
    return str(d)


def _caps(cfg: MixtureConfig, pools: dict[str, dict[str, list[dict]]]) -> dict[tuple[str, str], int]:
    """(source, domain) -> most rows it may give there: its rows, and a source's ``cap`` split over its domains in
    proportion to its rows in each (largest remainders)."""
    limit = {(s, d): len(rs) for d, by in pools.items() for s, rs in by.items()}
    for src in cfg.sources:
        if src.cap is None:
            continue
        mine = {d: n for (s, d), n in limit.items() if s == src.name}
        if sum(mine.values()) > src.cap:
            for d, n in _split(src.cap, mine).items():
                limit[(src.name, d)] = min(n, mine[d])
    return limit


def _fill(left: int, avail: dict[str, int]) -> dict[str, int]:
    """Up to ``left`` rows from sources with ``avail`` rows each, in proportion to what they have; a source short of
    its part hands the rest to the others (repeated until filled or all are empty)."""
    take = {s: 0 for s in avail}
    while left > 0:
        open_ = {s: avail[s] - take[s] for s in avail if avail[s] > take[s]}
        if not open_:
            break
        for s, n in _split(min(left, sum(open_.values())), open_).items():
            n = min(n, open_[s])
            take[s] += n
            left -= n
    return take


def build_mixture(cfg: MixtureConfig) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The mixture's rows and its composition.

    Each domain gets ``total × share`` prompts (largest remainders). Within a domain the ``primary`` source gives
    first (up to its rows there and its cap), then the other sources fill the rest in proportion to their rows
    left after ``exclude``, each up to its rows and cap (a source short of its part hands the rest to the others
    of its domain). A row's domain: ``subset_domains`` of its subset, else its own ``domain`` (OpenMMReasoner's
    reader sets it from the subset), else its source's. Each source's rows are taken in order of
    SHA-256(``seed:uid``). Rows get ``mixture_source`` and ``mixture_domain``; a uid met twice is kept once (the
    first source).

    Returns:
        (rows, composition): composition = ``{total, requested, by_domain: {d: n}, by_source: {s: n},
        by_domain_source: {d: {s: n}}, by_subset: {s: {subset: n}}, available: {s: n}, excluded: {s: n},
        shortfall: {d: n}, majority: {source, share}, balance: (max - min) / max over domains, checks:
        {primary_is_majority, domains_balanced}}``. A check that fails is recorded as False beside its figures,
        never raised: the caller decides (the job prints it).

    Raises:
        ValueError: a row without uid or without a domain (names the subset and the fix), an unknown source
            without domain, shares that do not cover the sources, an embedded image without ``image_dir``;
            :class:`howeval.training.sources.SourceFieldError` (a ValueError) for a released row without a
            field it needs.
        FileNotFoundError: a source path that does not exist (names the source).
    """
    pools: dict[str, dict[str, list[dict]]] = {d: {} for d in cfg.domains}
    seen: set[str] = set()
    available: dict[str, int] = {}
    excluded: dict[str, int] = {}
    for src in cfg.sources:
        if not os.path.exists(src.path):
            raise FileNotFoundError(f"sources.{src.name}.path: {src.path!r} does not exist")
        rows = []
        read, dropped = _read_source(src)
        excluded[src.name] = dropped
        for row in read:
            if row["uid"] in seen:
                continue
            seen.add(row["uid"])
            d = _row_domain(src, row)
            if d not in cfg.domains:
                raise ValueError(f"{src.name} row {row['uid']}: domain {d!r} is not in domains {sorted(cfg.domains)}")
            rows.append({**row, "mixture_source": src.name, "mixture_domain": d})
        available[src.name] = len(rows)
        for row in rows:
            pools[row["mixture_domain"]].setdefault(src.name, []).append(row)
    quotas = _split(cfg.total, cfg.domains)
    limit = _caps(cfg, pools)
    out: list[dict[str, Any]] = []
    by_source: Counter = Counter()
    by_domain_source: dict[str, dict[str, int]] = {}
    shortfall = {}
    for d, quota in quotas.items():
        srcs = {s: sorted(rs, key=lambda r: _rank(cfg.seed, r["uid"])) for s, rs in pools[d].items()}
        take = {s: 0 for s in srcs}
        if cfg.primary in srcs:
            take[cfg.primary] = min(quota, limit[(cfg.primary, d)])
        others = {s: limit[(s, d)] for s in srcs if s != cfg.primary}
        for s, n in _fill(quota - sum(take.values()), others).items():
            take[s] = n
        left = quota - sum(take.values())
        if left:
            shortfall[d] = left
        for s, rs in srcs.items():
            out.extend(rs[: take[s]])
            by_source[s] += take[s]
        by_domain_source[d] = {s: n for s, n in take.items() if n}
    from howeval.training.sources import materialize_images

    for src in cfg.sources:  # embedded images: only the kept rows are written out
        materialize_images([r for r in out if r["mixture_source"] == src.name], src.image_dir, src.name)
    by_domain = {d: sum(r["mixture_domain"] == d for r in out) for d in quotas}
    by_subset: dict[str, dict[str, int]] = {}
    for r in out:
        if r.get("subset") is not None:
            sub = by_subset.setdefault(r["mixture_source"], {})
            sub[str(r["subset"])] = sub.get(str(r["subset"]), 0) + 1
    top, top_n = (by_source.most_common(1) or [(None, 0)])[0]
    counts = [n for d, n in by_domain.items() if cfg.domains[d] > 0]
    balance = round((max(counts) - min(counts)) / max(counts), 4) if counts and max(counts) else None
    shares = {d: w / sum(cfg.domains.values()) for d, w in cfg.domains.items()}
    equal = len({round(v, 9) for v in shares.values() if v > 0}) <= 1
    comp = {"total": len(out), "requested": cfg.total, "by_domain": by_domain, "by_source": dict(by_source),
            "by_domain_source": by_domain_source, "by_subset": by_subset, "available": available,
            "excluded": excluded, "shortfall": shortfall,
            "majority": {"source": top, "share": round(top_n / len(out), 4) if out else None},
            "balance": balance,
            "checks": {"primary_is_majority": None if cfg.primary is None else bool(out) and top == cfg.primary
                       and top_n * 2 > len(out),
                       "domains_balanced": None if not equal else balance is not None
                       and balance <= cfg.balance_tolerance}}
    return out, comp


def write_mixture(cfg: MixtureConfig, out_path: str) -> dict[str, Any]:
    """:func:`build_mixture`, written as ``out_path`` (JSONL manifest) and ``<out_path>.composition.json``;
    returns the composition."""
    rows, comp = build_mixture(cfg)
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    with open(out_path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    Path(str(out_path) + ".composition.json").write_text(json.dumps(comp, indent=1) + "\n", encoding="utf-8")
    return comp


def resolve_source_paths(raw: dict, config_path: str | os.PathLike, images: Path) -> dict:
    """In a raw mixture config (``{sources: [...]}``, edited in place and returned): each source's ``path``,
    ``image_root`` and ``image_dir`` made absolute against the config file's folder, and a ``released`` source
    without ``image_dir`` given ``<images>/<name>``. Entries that are not mappings are left for validation."""
    folder = Path(config_path).resolve().parent
    for s in raw.get("sources") or []:
        if not isinstance(s, dict):
            continue
        for key in ("path", "image_root", "image_dir"):
            if isinstance(s.get(key), str) and not os.path.isabs(s[key]):
                s[key] = str(folder / s[key])
        if s.get("format") == "released" and not s.get("image_dir") and isinstance(s.get("name"), str):
            s["image_dir"] = str(images / s["name"])
    return raw


def main(argv: list[str] | None = None) -> int:
    """``python -m howeval.training.mixture --config mixture.yaml --out /data/train/mixture.jsonl``"""
    import argparse

    import yaml

    from howeval.config.base import validate

    p = argparse.ArgumentParser(prog="python -m howeval.training.mixture", description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True, help="YAML: total, domains, seed, sources: [{name, path, format?, image_root?, image_dir?, domain?, exclude?}]")
    p.add_argument("--out", required=True, help="the mixture manifest (JSONL); its composition beside it")
    a = p.parse_args(argv)
    with open(a.config, encoding="utf-8") as f:
        raw = yaml.safe_load(f) or {}
    resolve_source_paths(raw, a.config, Path(a.out).resolve().parent / "images")
    comp = write_mixture(validate(MixtureConfig, raw, "mixture config"), a.out)
    print(json.dumps(comp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
