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

4. **Category-level retention** (issue 41; PatternEval §3 "categories with meaningful response variation are
   preferentially retained", **(reconstructed)**: the paper gives no threshold): a category's *variation* is the
   share of its rolled-out items whose earlier rollouts disagree on the pattern (Trigger rate strictly between
   0 and 1 over the configs and modes that answered it). With ``variation_min`` set, a category whose variation
   reaches it keeps its full quota even when rule 2 would down-sample it; one below it keeps
   ``low_variation_keep`` of its quota (default 1: unchanged unless rule 2 applies). A category with no
   rolled-out item has no variation (None) and only rules 2-3 apply. Every decision is recorded per category.

The trigger input comes from a sweep: :func:`triggers_from_judgments` turns a run's judgments into ``{uid: Trigger
rate}`` (the job ``python -m howeval.ray_jobs.build_triggers --run RUN --output DIR`` writes it as
``triggers.json``, with the per-item detail and what was skipped).

Output rows keep every manifest field, image paths rewritten relative to the output folder.

    python -m howeval.benchmarks.construction --manifest A/manifest.jsonl --manifest B/manifest.jsonl \\
        --out built/ --per-category 300 --source-cap 120 [--triggers triggers.json] [--variation-min 0.2] [--seed 0]

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


def category_variation(items: Sequence[dict], triggers: Mapping[str, float]) -> tuple[float | None, int]:
    """``(variation, rolled-out items)`` of one category: the share of its items with a Trigger rate strictly between
    0 and 1 among those with a rate (rule 4); ``(None, 0)`` when no item has one.

    >>> category_variation([{"uid": "a"}, {"uid": "b"}, {"uid": "c"}], {"a": 0.5, "b": 1.0})
    (0.5, 2)
    """
    rates = [triggers[r["uid"]] for r in items if triggers.get(r["uid"]) is not None]
    if not rates:
        return None, 0
    return sum(0 < x < 1 for x in rates) / len(rates), len(rates)


def build(rows: Sequence[dict], *, per_category: int | None = None, source_cap: int | None = None,
          format_share: float = 0.8, format_keep: float = 0.5, triggers: Mapping[str, float] | None = None,
          seed: int = 0, variation_min: float | None = None, low_variation_keep: float = 1.0) -> BuildResult:
    """Select a balanced benchmark from candidate manifest rows (module docstring: rules 1-4).

    Args:
        rows: manifest rows (``uid``, ``category``, ``source``, ``answer_type``, ``family`` or a known category).
        per_category: items kept per category before down-sampling (None: all).
        source_cap: most items of one source per category (None: no cap).
        format_share: share of format-checked answers from which a category counts as format-dominated.
        format_keep: the share of its quota a format-dominated category keeps, in (0, 1].
        triggers: uid -> Trigger rate of earlier rollouts in [0, 1] (pattern-oriented order; rule 4's variation);
            missing = 0 for the order, not rolled out for the variation.
        seed: tie-break order.
        variation_min: rule 4's threshold in [0, 1] (None: rule 4 off, as before issue 41).
        low_variation_keep: the share of its quota a category below ``variation_min`` keeps, in (0, 1].

    Decisions per category: ``available``, ``format_checked`` (share), ``variation`` (share or None),
    ``rolled_out`` (items with a rate), ``retention`` (why the quota is what it is), ``quota``, ``kept``,
    ``capped``, ``with_failures``.

    Raises:
        ValueError: a bad parameter, a duplicate uid, or a row with no family.
    """
    if per_category is not None and per_category < 1 or source_cap is not None and source_cap < 1:
        raise ValueError(f"per_category and source_cap must be >= 1 or None, got {per_category}, {source_cap}")
    if not 0 < format_keep <= 1 or not 0 < format_share <= 1:
        raise ValueError(f"format_keep and format_share must be in (0, 1], got {format_keep}, {format_share}")
    if variation_min is not None and not 0 <= variation_min <= 1 or not 0 < low_variation_keep <= 1:
        raise ValueError(f"variation_min must be in [0, 1] and low_variation_keep in (0, 1], got {variation_min}, "
                         f"{low_variation_keep}")
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
        variation, rolled = category_variation(items, trig)
        varied = variation_min is not None and variation is not None and variation >= variation_min
        if varied:
            retention = f"varied ({variation:.0%} >= {variation_min:.0%}): full quota"
        elif share >= format_share:
            quota = max(1, round(quota * format_keep))
            retention = f"format-checked ({share:.0%}): {format_keep:g} of quota"
        else:
            retention = "full quota"
        if variation_min is not None and variation is not None and not varied and low_variation_keep < 1:
            quota = max(1, round(quota * low_variation_keep))
            retention += f"; low variation ({variation:.0%} < {variation_min:.0%}): {low_variation_keep:g} of quota"
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
        decisions[cat] = {"available": len(items), "format_checked": share, "variation": variation,
                          "rolled_out": rolled, "retention": retention, "quota": quota, "kept": len(kept),
                          "capped": capped, "with_failures": sum(1 for r in kept if (trig.get(r["uid"]) or 0) > 0)}
        out += kept
    return BuildResult(out, decisions, seed)


def triggers_from_judgments(judgments: Sequence[Mapping], judge: str | None = None) -> dict:
    """A sweep's judgments -> the builder's trigger input (rule 1) and the per-item detail (rule 4).

    Args:
        judgments: rows of a run's ``judgments/`` (:data:`howeval.records.JUDGMENT_SCHEMA`: ``sample_id`` (the
            manifest uid), ``config``, ``mode``, ``judge``, ``correct``, ``cot``, ``rep``, ``con``, ``pr``,
            ``judge_error``).
        judge: the pattern judge id whose labels count (e.g. ``"rules@1"``); None: the only one in the rows.

    Returns:
        ``{"judge", "rates": {uid: Trigger rate in [0, 1]}, "detail": {uid: {"n": labelled rollouts, "triggered",
        "trigger", "n_scored", "correct": accuracy or None, "varies": 0 < trigger < 1}}, "skipped": {reason: n}}``;
        a rollout without labels (judge error, truncated or failed response) is skipped with its reason, never
        counted as untriggered; an item with no labelled rollout has no rate.

    Raises:
        ValueError: ``judge`` is None and the rows hold several judges (names them), or ``judge`` has no rows.

    >>> t = triggers_from_judgments([{"sample_id": "a", "judge": "j", "cot": True, "rep": False, "con": False,
    ...     "pr": False, "correct": True}, {"sample_id": "a", "judge": "j", "cot": False, "rep": False, "con": False,
    ...     "pr": False, "correct": False}, {"sample_id": "b", "judge": "j", "judge_error": "timeout"}])
    >>> t["rates"], t["detail"]["a"]["varies"], t["skipped"]
    ({'a': 0.5}, True, {'judge_error': 1})
    """
    from howeval.metrics.patterneval import trigger_of

    found = sorted({str(j.get("judge")) for j in judgments})
    if judge is None:
        if len(found) != 1:
            raise ValueError(f"the run's judgments hold judges {found}: give one (judge=...)")
        judge = found[0]
    rows = [j for j in judgments if j.get("judge") == judge]
    if not rows:
        raise ValueError(f"judge {judge!r} has no judgments; found {found}")
    acc: dict[str, dict] = {}
    skipped: Counter = Counter()
    for j in rows:
        t = trigger_of(dict(j))
        if t is None:
            skipped["judge_error" if j.get("judge_error") else "no_labels"] += 1
            continue
        d = acc.setdefault(str(j["sample_id"]), {"n": 0, "triggered": 0, "n_scored": 0, "n_correct": 0})
        d["n"] += 1
        d["triggered"] += bool(t)
        if j.get("correct") is not None:
            d["n_scored"] += 1
            d["n_correct"] += bool(j["correct"])
    detail = {}
    for uid, d in sorted(acc.items()):
        rate = d["triggered"] / d["n"]
        detail[uid] = {"n": d["n"], "triggered": d["triggered"], "trigger": round(rate, 4), "n_scored": d["n_scored"],
                       "correct": round(d["n_correct"] / d["n_scored"], 4) if d["n_scored"] else None,
                       "varies": 0 < rate < 1}
    return {"judge": judge, "rates": {u: d["trigger"] for u, d in detail.items()}, "detail": detail,
            "skipped": dict(skipped)}


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
        lines += ["", "Build decisions per category: candidates, share with a format-checked answer, response "
                  "variation (share of rolled-out items whose rollouts disagree on the pattern; - = none rolled out), "
                  "the retention rule applied, quota, kept, left out by the source cap, kept items whose rollouts "
                  "failed.", "",
                  "| category | candidates | format-checked % | variation % | retention | quota | kept | capped | "
                  "with failures |", "|---|---|---|---|---|---|---|---|---|"]
        for c, d in decisions.items():
            var = "-" if d.get("variation") is None else f"{100 * d['variation']:.0f}"
            lines.append(f"| {c} | {d['available']} | {100 * d['format_checked']:.0f} | {var} | "
                         f"{d.get('retention', '')} | {d['quota']} | {d['kept']} | {d['capped']} | {d['with_failures']} |")
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
    ap.add_argument("--variation-min", type=float, default=None,
                    help="rule 4: a category whose share of rolled-out items with varying rollouts reaches this keeps "
                         "its full quota (needs --triggers; default: rule 4 off)")
    ap.add_argument("--low-variation-keep", type=float, default=1.0,
                    help="rule 4: the share of its quota a category below --variation-min keeps (default 1)")
    a = ap.parse_args(argv)
    triggers = json.load(open(a.triggers)) if a.triggers else None
    res = build(_load(a.manifest), per_category=a.per_category, source_cap=a.source_cap, format_share=a.format_share,
                format_keep=a.format_keep, triggers=triggers, seed=a.seed, variation_min=a.variation_min,
                low_variation_keep=a.low_variation_keep)
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
