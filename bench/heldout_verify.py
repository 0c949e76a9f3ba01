"""Verifier on held-out MathVista and MATH-Vision responses: unresolved share, errors, agreement with the
official scorers, before and after each source's own criterion (issue 41).

Input: the file ``bench/heldout_responses.py`` writes (492 real responses, outside the repository). Each row is
verified twice with the rules only (no LLM judge): ``source_criteria=False`` (the answer-type rules, as before
issue 41) and ``source_criteria=True`` (then MathVista's / MATH-Vision's own criterion,
:mod:`howeval.judges.verify.official`).

Figures per version: ``n``, ``unresolved`` (correct None) and its share, ``errors`` (an exception, or a
``budget`` verdict: the item broke a size or time limit), ``agree`` / ``disagree`` with the official scorer's
verdict over resolved rows, the methods used, and the same by source and answer type. MathVista's official
verdicts come from a GPT-4 answer extraction, MATH-Vision's from its rule extraction, so disagreement is
expected where an extraction differs; unresolved rows go to the LLM judge in a run.

Usage: ``python bench/heldout_verify.py [--responses FILE] [--out bench/results/verify_heldout.json]``; writes
the JSON and a Markdown table beside it.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from heldout_responses import DEFAULT_OUT, SECOND_OUT  # noqa: E402

from howeval.judges.verify import verify  # noqa: E402


def run(rows: list[dict], source_criteria: bool) -> tuple[dict, list[dict]]:
    """``(figures, per-row verdicts)`` of the rule verifier over ``rows`` (module docstring)."""
    per = []
    for r in rows:
        try:
            v = verify(r["response"], r["answer"], r["answer_type"], r.get("options"), r["source"],
                       precision=r.get("precision"), source_criteria=source_criteria)
            per.append({"correct": v.correct, "method": v.method, "reason": v.reason, "extracted": v.extracted,
                        "error": "budget" if v.method == "budget" else None})
        except Exception as e:  # noqa: BLE001 - counted and listed, the bench goes on
            per.append({"correct": None, "method": "exception", "reason": f"{type(e).__name__}: {e}",
                        "extracted": None, "error": type(e).__name__})
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        groups["all"].append(i)
        groups[r["source"]].append(i)
        groups[f"{r['source']} {r['answer_type']}"].append(i)
    fig = {}
    for g, idx in sorted(groups.items()):
        unres = sum(per[i]["correct"] is None for i in idx)
        agree = sum(per[i]["correct"] is not None and per[i]["correct"] == rows[i]["official_correct"] for i in idx)
        res = len(idx) - unres
        fig[g] = {"n": len(idx), "unresolved": unres, "unresolved_share": round(unres / len(idx), 4),
                  "errors": sum(per[i]["error"] is not None for i in idx), "agree": agree, "disagree": res - agree,
                  "agreement": round(agree / res, 4) if res else None,
                  "methods": dict(Counter(per[i]["method"] for i in idx))}
    return fig, per


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--responses", default=str(DEFAULT_OUT), help="the held-out set (bench/heldout_responses.py)")
    p.add_argument("--second", default=str(SECOND_OUT), help="the second sample (--second of heldout_responses.py); "
                   "measured too when present")
    p.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "verify_heldout.json"))
    a = p.parse_args(argv)
    path = Path(a.responses)
    if not path.is_file():
        print(f"no held-out responses at {path}: build them with bench/heldout_responses.py", file=sys.stderr)
        return 2
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    t0 = time.time()
    before, _ = run(rows, False)
    after, per = run(rows, True)
    second = None
    if a.second and Path(a.second).is_file():
        rows2 = [json.loads(x) for x in Path(a.second).read_text().splitlines() if x.strip()]
        second = {"responses": a.second, "n": len(rows2), "rules_only": run(rows2, False)[0]["all"],
                  "with_source_criteria": run(rows2, True)[0]["all"]}
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                                text=True).stdout.strip())
    # ids, verdicts and methods only: no response text (it keeps its sources' licenses, outside the repository)
    examples = [{"source": r["source"], "id": r["id"], "model": r["model"], "official_correct": r["official_correct"],
                 "correct": v["correct"], "method": v["method"],
                 "why": "declines" if v["reason"].startswith("declines") else v["reason"].split(" in a ")[0][:60]
                 if v["correct"] is None else None}
                for r, v in zip(rows, per) if v["method"] in ("nearest_option", "source_rule") or v["correct"] is None]
    out = {"commit": commit, "dirty": dirty, "date": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
           "seconds": round(time.time() - t0, 1), "responses": str(path), "n": len(rows),
           "built_by": "bench/heldout_responses.py (MathVista @ 53d5258a results/, MATH-V @ a1f5cc3a outputs/)",
           "rules_only": before, "with_source_criteria": after, "second_sample": second,
           "rows_decided_by_source_or_open": examples}
    Path(a.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    lines = ["# Verifier on held-out MathVista and MATH-Vision responses", "",
             f"Generated by `python bench/heldout_verify.py` at commit {commit[:7]}{' (dirty)' if dirty else ''}, "
             f"{out['date']} UTC, {len(rows)} real responses (`bench/heldout_responses.py`: MathVista @ 53d5258a "
             "`results/`, MATH-V @ a1f5cc3a `outputs/`; not in the repository). Rules only, no LLM judge. "
             "Agreement is with each benchmark's official verdict, over resolved rows.", "",
             "| group | n | unresolved: rules only | unresolved: + source criteria | errors | agree / disagree "
             "(+ source criteria) | nearest_option | source_rule |", "|---|---|---|---|---|---|---|---|"]
    for g in after:
        b, f = before[g], after[g]
        lines.append(f"| {g} | {f['n']} | {b['unresolved']} ({b['unresolved_share']:.1%}) | {f['unresolved']} "
                     f"({f['unresolved_share']:.1%}) | {f['errors']} | {f['agree']} / {f['disagree']} | "
                     f"{f['methods'].get('nearest_option', 0)} | {f['methods'].get('source_rule', 0)} |")
    if second:
        b2, f2 = second["rules_only"], second["with_source_criteria"]
        lines += ["", f"Second sample (other models: `heldout_responses.py --second`, {second['n']} responses), all "
                  f"rows: unresolved {b2['unresolved']} ({b2['unresolved_share']:.1%}) with the rules only, "
                  f"{f2['unresolved']} ({f2['unresolved_share']:.1%}) with the source criteria; errors {f2['errors']}; "
                  f"agree / disagree {f2['agree']} / {f2['disagree']}."]
    Path(a.out).with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
