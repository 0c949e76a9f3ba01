"""PatternEval benchmark construction (issue 31; PatternEval §3 "Benchmark construction" and Table 1): source
manifests -> one balanced benchmark manifest and its composition report.

The paper's third step, "pattern-oriented sampling and constituent-category balancing: categories dominated by
deterministic answer-format checks are down-sampled, categories with meaningful response variation are
preferentially retained, and high-volume source categories are capped", as three rules applied per category:

1. **Pattern-oriented order**: an item whose rollouts showed a response-pattern failure (``triggers``: uid ->
   Trigger rate of earlier rollouts, e.g. a sweep's judgments) comes before one without, higher rate first;
   ties in a seeded random order.
2. **Down-sampling of format-checked categories**: a category where at least ``format_share`` of items have
   an answer a deterministic format check decides (``FORMAT_CHECKED``: multiple choice, yes/no, integers)
   keeps ``format_keep`` of its quota.
3. **Source caps**: at most ``source_cap`` items of one source within a category; the quota is
   ``per_category`` (None: every item), filled in the order of rule 1 while the cap allows.

Output rows keep every manifest field, image paths rewritten relative to the output folder.

    python -m howeval.benchmarks.construction --manifest A/manifest.jsonl --manifest B/manifest.jsonl \\
        --out built/ --per-category 300 --source-cap 120 [--triggers triggers.json] [--seed 0]

writes ``built/manifest.jsonl`` and ``built/composition.md`` (Table 1: prompts per family and category with
shares, and per source).
"""
from __future__ import annotations

import argparse
import json
import os
import posixpath
import random
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from howeval.benchmarks.loaders import CATEGORY_FAMILY
from howeval.store import iter_jsonl

FORMAT_CHECKED = ("multiple_choice", "boolean_text", "integer_number")
"""Answer types a deterministic answer-format check decides (a letter, yes/no, an integer)."""

FAMILIES = ("VG", "OS", "KR")


@dataclass
class BuildResult:
    """The selected rows, the per-category decisions (``quota``, ``format_checked`` share, ``available``,
    ``capped``: items left out by the source cap) and the seed."""

    rows: list[dict]
    decisions: dict[str, dict] = field(default_factory=dict)
    seed: int = 0


def _family(row: dict) -> str:
    fam = row.get("family") or CATEGORY_FAMILY.get(str(row.get("category")))
    if fam not in FAMILIES:
        raise ValueError(f"uid {row.get('uid')!r}: no family for category {row.get('category')!r}; give 'family' (VG|OS|KR)")
    return fam


def build(rows: Sequence[dict], *, per_category: int | None = None, source_cap: int | None = None,
          format_share: float = 0.8, format_keep: float = 0.5, triggers: Mapping[str, float] | None = None,
          seed: int = 0) -> BuildResult:
    """Select a balanced benchmark from candidate manifest rows (module docstring: rules 1-3).

    Args:
        rows: manifest rows (``uid``, ``category``, ``source``, ``answer_type``, ``family`` or a known category).
        per_category: items kept per category before down-sampling (None: all).
        source_cap: most items of one source per category (None: no cap).
        format_share: share of format-checked answers from which a category counts as format-dominated.
        format_keep: the share of its quota a format-dominated category keeps, in (0, 1].
        triggers: uid -> Trigger rate of earlier rollouts (pattern-oriented order); missing = 0.
        seed: tie-break order.

    Raises:
        ValueError: a bad parameter, a duplicate uid, or a row with no family.
    """
    if per_category is not None and per_category < 1 or source_cap is not None and source_cap < 1:
        raise ValueError(f"per_category and source_cap must be >= 1 or None, got {per_category}, {source_cap}")
    if not 0 < format_keep <= 1 or not 0 < format_share <= 1:
        raise ValueError(f"format_keep and format_share must be in (0, 1], got {format_keep}, {format_share}")
    seen: set[str] = set()
    by_cat: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        if r["uid"] in seen:
            raise ValueError(f"duplicate uid {r['uid']!r} across the source manifests")
        seen.add(r["uid"])
        _family(r)
        by_cat[str(r.get("category"))].append(r)
    rng = random.Random(seed)
    trig = triggers or {}
    out: list[dict] = []
    decisions: dict[str, dict] = {}
    for cat in sorted(by_cat):
        items = by_cat[cat]
        share = sum(r.get("answer_type") in FORMAT_CHECKED for r in items) / len(items)
        quota = len(items) if per_category is None else min(per_category, len(items))
        if share >= format_share:
            quota = max(1, round(quota * format_keep))
        # rule 1: a failure seen in rollouts first (higher Trigger first), then a seeded random order
        keyed = [(-(trig.get(r["uid"]) or 0.0), rng.random(), r) for r in items]
        keyed.sort(key=lambda k: (k[0], k[1]))
        per_source: Counter = Counter()
        kept, capped = [], 0
        for *_k, r in keyed:
            if len(kept) == quota:
                break
            src = str(r.get("source") or "unknown")
            if source_cap is not None and per_source[src] >= source_cap:
                capped += 1
                continue
            per_source[src] += 1
            kept.append(r)
        decisions[cat] = {"available": len(items), "format_checked": share, "quota": quota, "kept": len(kept),
                          "capped": capped, "with_failures": sum(1 for r in kept if (trig.get(r["uid"]) or 0) > 0)}
        out += kept
    return BuildResult(out, decisions, seed)


def composition(rows: Sequence[dict]) -> dict:
    """Table 1 of PatternEval: prompts per family and per category (with the family) and per source.

    >>> c = composition([{"uid": "a", "category": "ocr", "source": "s"}, {"uid": "b", "category": "stem", "source": "s"}])
    >>> c["n"], c["families"]["OS"], c["categories"]["stem"], c["sources"]
    (2, 1, {'family': 'KR', 'n': 1}, {'s': 2})
    """
    fam, cats, srcs = Counter(), {}, Counter()
    for r in rows:
        f = _family(r)
        fam[f] += 1
        c = cats.setdefault(str(r.get("category")), {"family": f, "n": 0})
        c["n"] += 1
        srcs[str(r.get("source") or "unknown")] += 1
    return {"n": len(rows), "families": {f: fam[f] for f in FAMILIES},
            "categories": dict(sorted(cats.items(), key=lambda kv: (FAMILIES.index(kv[1]["family"]), kv[0]))),
            "sources": dict(srcs.most_common())}


def render_composition(comp: dict, decisions: Mapping[str, dict] | None = None) -> str:
    """Markdown of :func:`composition` (PatternEval Table 1 layout: family, category, prompts, share), then the
    per-category build decisions when given, then prompts per source."""
    n = comp["n"] or 1
    lines = ["## Composition (PatternEval Table 1)", "", f"{comp['n']} prompts.", "",
             "| family | category | prompts | % |", "|---|---|---|---|"]
    for f in FAMILIES:
        lines.append(f"| **{f}** | all | **{comp['families'][f]}** | **{100 * comp['families'][f] / n:.1f}** |")
        lines += [f"| {f} | {c} | {x['n']} | {100 * x['n'] / n:.1f} |" for c, x in comp["categories"].items()
                  if x["family"] == f]
    if decisions:
        lines += ["", "Build decisions per category: candidates, share with a format-checked answer, quota after "
                  "down-sampling, kept, left out by the source cap, kept items whose rollouts failed.", "",
                  "| category | candidates | format-checked % | quota | kept | capped | with failures |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {c} | {d['available']} | {100 * d['format_checked']:.0f} | {d['quota']} | {d['kept']} | "
                  f"{d['capped']} | {d['with_failures']} |" for c, d in decisions.items()]
    lines += ["", "| source | prompts |", "|---|---|"] + [f"| {s} | {k} |" for s, k in comp["sources"].items()]
    return "\n".join(lines) + "\n"


def _load(paths: Sequence[str]) -> list[dict]:
    rows = []
    for p in paths:
        base = posixpath.dirname(p)
        for _i, r in iter_jsonl(p):
            img = r.get("image")
            if isinstance(img, str) and "://" not in img and not img.startswith("/"):
                r["image"] = os.path.abspath(posixpath.join(base, img))
            rows.append(r)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """The CLI of the module docstring."""
    ap = argparse.ArgumentParser(prog="python -m howeval.benchmarks.construction", description=__doc__.split("\n")[0])
    ap.add_argument("--manifest", action="append", required=True, help="a source manifest (JSONL); repeat for several")
    ap.add_argument("--out", required=True, help="output folder (manifest.jsonl, composition.md)")
    ap.add_argument("--per-category", type=int, default=None)
    ap.add_argument("--source-cap", type=int, default=None)
    ap.add_argument("--format-share", type=float, default=0.8)
    ap.add_argument("--format-keep", type=float, default=0.5)
    ap.add_argument("--triggers", help="JSON {uid: Trigger rate} of earlier rollouts (pattern-oriented order)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    triggers = json.load(open(a.triggers)) if a.triggers else None
    res = build(_load(a.manifest), per_category=a.per_category, source_cap=a.source_cap, format_share=a.format_share,
                format_keep=a.format_keep, triggers=triggers, seed=a.seed)
    os.makedirs(a.out, exist_ok=True)
    out_abs = os.path.abspath(a.out)
    with open(os.path.join(a.out, "manifest.jsonl"), "w", encoding="utf-8") as f:
        for r in res.rows:
            img = r.get("image")
            if isinstance(img, str) and img.startswith("/"):
                r = {**r, "image": os.path.relpath(img, out_abs)}
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    md = render_composition(composition(res.rows), res.decisions)
    with open(os.path.join(a.out, "composition.md"), "w", encoding="utf-8") as f:
        f.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
