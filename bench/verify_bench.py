"""Verifier speed on real responses: responses per CPU second per answer type, beside earlier versions.

Sources (read from ``../shared/data``, never copied): ``responses/mathv_model_responses.jsonl`` (144
MATH-Vision responses of 3 VLMs, multiple_choice and free_form) and
``responses/tabmwp_gpt3_cot_responses.jsonl`` (40 GPT-3 answers to TabMWP items: integer, decimal and
text types; literal ``\\n`` sequences turned into newlines), joined to ``manifest.jsonl`` by uid.

What is measured: CPU seconds of ``verify(response, answer, answer_type, options)`` (rules only, no LLM
judge), counted as this process's CPU time plus the CPU time of its child processes (the current
verifier runs math-verify in a budget child: :mod:`howeval.judges.budget`). CPU time, not wall time: the
machine is shared, and a response must not be charged for waiting for a core. Each pass verifies every
response once; the first (warm-up: imports, math-verify's lazy grammar, the child's start) is not
counted; the figure per type is the best of ``--repeats`` passes. Also reported: the slowest single
response (its CPU seconds), to compare with the 2 s per-item budget.

Earlier versions are measured the same way from a ``git archive`` of their commit, in a subprocess with
that tree first on ``PYTHONPATH`` (``--ref NAME=COMMIT``; the default is the verifier's first version,
0a53a40). The "previous" column is the "current" figure of the last run recorded in ``--json`` from a
different commit (the previous release's figure); the first run of this file records main before issue
25 (b306cd0) as previous.

Usage::

    python bench/verify_bench.py [--data ../shared/data] [--repeats 3] [--ref first=0a53a40 ...]
        [--out bench/results/verify_bench.md] [--json bench/results/verify_bench.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = (
    ("responses/mathv_model_responses.jsonl", "math-vision:", False),
    ("responses/tabmwp_gpt3_cot_responses.jsonl", "tabmwp:", True),
)
BUDGET_S = 2.0  # the verifier's per-item budget (howeval.judges.budget.DEFAULT_ITEM_BUDGET_S)
DEFAULT_REFS = ("first=0a53a40",)


def load_items(data: Path) -> list[dict]:
    """Every real response joined to its manifest item: ``{uid, answer_type, response, answer, options}``.

    Raises:
        FileNotFoundError: ``data`` lacks the manifest or a responses file.
        ValueError: a response has no manifest item.
    """
    manifest = {}
    with open(data / "manifest.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                item = json.loads(line)
                manifest[item["uid"]] = item
    items = []
    for rel, prefix, unescape in SOURCES:
        with open(data / rel, encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                uid = f"{prefix}{rec['id']}"
                if uid not in manifest:
                    raise ValueError(f"{rel}: id {rec['id']!r} has no manifest item {uid!r}")
                it = manifest[uid]
                resp = rec["response"].replace("\\n", "\n") if unescape else rec["response"]
                items.append({"uid": uid, "answer_type": it["answer_type"], "response": resp,
                              "answer": it["answer"], "options": it["options"]})
    return items


def _cpu_now() -> float:
    """CPU seconds of this process (``time.process_time``) and of its live children (user + system, read
    with psutil; clock-tick resolution, so groups are timed as a whole, not response by response)."""
    import psutil

    total = time.process_time()
    for child in psutil.Process().children(recursive=True):
        try:
            c = child.cpu_times()
            total += c.user + c.system
        except psutil.Error:  # gone between the listing and the read
            pass
    return total


MIN_PASS_CPU_S = 0.3
"""Each timed pass verifies a group's responses as many times as it takes to spend about this much CPU."""


def measure(verify, items: list[dict], repeats: int) -> dict:
    """Per answer type: ``{n, cpu_s_per_response, responses_per_cpu_s, wall_s_per_response,
    worst_response_cpu_s, worst_uid}``.

    One warm-up pass (each response once, timed one by one for the slowest response), then ``repeats``
    timed passes per type, each over the whole group (looped to about :data:`MIN_PASS_CPU_S`); per type
    the best pass.
    """
    by_type: dict[str, list[dict]] = defaultdict(list)
    for it in items:
        by_type[it["answer_type"]].append(it)
    worst: dict[str, tuple[float, str]] = {}
    first: dict[str, float] = defaultdict(float)
    verify(r"so \boxed{x^2+1}", "x^2+1", "free_form", None)  # start-up: imports, math-verify's child and grammar
    probe = []
    for _ in range(30):  # what one timing of a single response costs by itself (psutil's child listing)
        t0 = _cpu_now()
        probe.append(_cpu_now() - t0)
    overhead = sorted(probe)[len(probe) // 2]
    for it in items:  # warm-up (not counted in the rates); the slowest single response
        t0 = _cpu_now()
        verify(it["response"], it["answer"], it["answer_type"], it["options"])
        dt = max(_cpu_now() - t0 - overhead, 0.0)
        first[it["answer_type"]] += dt
        if dt > worst.get(it["answer_type"], (-1.0, ""))[0]:
            worst[it["answer_type"]] = (dt, it["uid"])
    out = {}
    for atype, group in sorted(by_type.items()):
        loops = max(1, min(200, round(MIN_PASS_CPU_S / max(first[atype], 1e-4))))
        best_cpu, best_wall = float("inf"), float("inf")
        for _ in range(repeats):
            c0, w0 = _cpu_now(), time.perf_counter()
            for _ in range(loops):
                for it in group:
                    verify(it["response"], it["answer"], it["answer_type"], it["options"])
            best_cpu = min(best_cpu, (_cpu_now() - c0) / (loops * len(group)))
            best_wall = min(best_wall, (time.perf_counter() - w0) / (loops * len(group)))
        out[atype] = {"n": len(group), "cpu_s_per_response": best_cpu,
                      "responses_per_cpu_s": (1.0 / best_cpu) if best_cpu > 0 else None,
                      "wall_s_per_response": best_wall, "cold_cpu_s_per_response": first[atype] / len(group),
                      "worst_response_cpu_s": worst[atype][0], "worst_uid": worst[atype][1]}
    return out


def _import_verify(module: str):
    mod = __import__(module, fromlist=["verify"])
    return mod.verify, mod.__file__


def measure_ref(commit: str, data: Path, repeats: int) -> dict:
    """The figures of the verifier at ``commit`` (a git archive of its ``howeval`` in a temp folder)."""
    with tempfile.TemporaryDirectory(prefix="verify-bench-") as tmp:
        blob = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", commit, "howeval"],
                              check=True, capture_output=True).stdout
        tar_path = Path(tmp) / "tree.tar"
        tar_path.write_bytes(blob)
        with tarfile.open(tar_path) as tf:
            tf.extractall(tmp, filter="data")
        module = "howeval.judges.verify" if (Path(tmp) / "howeval/judges/verify").exists() else "howeval.verify"
        env = dict(os.environ, PYTHONPATH=tmp)
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", module, "--data", str(data),
                               "--repeats", str(repeats)], cwd=tmp, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"measuring {commit} failed:\n{proc.stderr[-2000:]}")
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        if not res["file"].startswith(tmp):
            raise RuntimeError(f"measuring {commit} imported {res['file']}, not the archived tree")
        return res["figures"]


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True).stdout.strip()


def render(run: dict, previous: dict | None, previous_label: str) -> str:
    """The markdown table of one run (current, previous release, each earlier ref)."""
    refs = run["refs"]
    head = ["answer type", "n", "current: responses / CPU s", "current: CPU ms / response",
            "current: wall ms / response", "current: first pass, CPU ms / response",
            "slowest response (CPU s, first pass)"]
    head.append(f"previous ({previous_label}): responses / CPU s")
    for name, commit in run["ref_commits"].items():
        head.append(f"{name} ({commit[:7]}): responses / CPU s")
        head.append(f"current / {name}")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def rate(fig: dict | None, atype: str) -> str:
        f = (fig or {}).get(atype)
        if not f or not f["responses_per_cpu_s"]:
            return "-"
        cold = f"; first pass {1000 * f['cold_cpu_s_per_response']:.2f} ms" if "cold_cpu_s_per_response" in f else ""
        return f"{f['responses_per_cpu_s']:.0f} (wall {1000 * f['wall_s_per_response']:.2f} ms{cold})"

    for atype, f in run["current"].items():
        row = [atype, str(f["n"]), f"{f['responses_per_cpu_s']:.0f}", f"{1000 * f['cpu_s_per_response']:.2f}",
               f"{1000 * f['wall_s_per_response']:.2f}", f"{1000 * f['cold_cpu_s_per_response']:.2f}",
               f"{f['worst_response_cpu_s']:.3f} ({f['worst_uid']})",
               rate(previous, atype)]
        for name in run["ref_commits"]:
            g = refs[name].get(atype)
            row.append(rate(refs[name], atype))
            row.append(f"{g['cpu_s_per_response'] / f['cpu_s_per_response']:.2f}x" if g and f["cpu_s_per_response"] else "-")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ref", action="append", default=None, help="NAME=COMMIT of an earlier verifier to measure")
    ap.add_argument("--previous-ref", default=None, help="measure this commit as 'previous' (default: from --json)")
    ap.add_argument("--out", type=Path, default=REPO / "bench/results/verify_bench.md")
    ap.add_argument("--json", type=Path, default=REPO / "bench/results/verify_bench.json")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error(f"--repeats must be >= 1, got {args.repeats}")
    if not (args.data / "manifest.jsonl").exists():
        ap.error(f"no manifest.jsonl under --data {args.data} (the shared real samples)")
    items = load_items(args.data)
    if args.child:  # measuring an archived tree: print the figures as one JSON line
        verify, path = _import_verify(args.child)
        print(json.dumps({"file": path, "figures": measure(verify, items, args.repeats)}))
        return 0

    from howeval.judges.verify import verify

    head = _git("rev-parse", "HEAD")
    history = json.loads(args.json.read_text()) if args.json.exists() else {"runs": []}
    refs = dict(r.split("=", 1) for r in (args.ref or DEFAULT_REFS) if r != "none")
    ref_commits = {name: _git("rev-parse", c) for name, c in refs.items()}
    t0 = time.time()
    current = measure(verify, items, args.repeats)
    ref_figs = {name: measure_ref(c, args.data, args.repeats) for name, c in ref_commits.items()}
    prev_runs = [r for r in history["runs"] if r["commit"] != head]
    if args.previous_ref:
        pc = _git("rev-parse", args.previous_ref)
        previous, previous_label = measure_ref(pc, args.data, args.repeats), pc[:7]
    elif prev_runs:
        previous, previous_label = prev_runs[-1]["current"], prev_runs[-1]["commit"][:7]
    else:
        previous, previous_label = None, "none recorded"
    run = {"commit": head, "date": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "repeats": args.repeats,
           "n_responses": len(items), "current": current, "previous": previous, "previous_label": previous_label,
           "refs": ref_figs, "ref_commits": ref_commits, "seconds": round(time.time() - t0, 1)}
    history["runs"] = prev_runs + [run]
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(history, indent=1) + "\n")
    table = render(run, previous, previous_label)
    slowest = max(f["worst_response_cpu_s"] for f in current.values())
    md = "\n".join([
        "# Verifier speed on real responses",
        "",
        f"Generated by `make bench-verify` (`python bench/verify_bench.py`) at commit {head[:7]}, {run['date']} UTC:",
        f"{len(items)} real responses of `../shared/data/responses/` (MATH-Vision, TabMWP), rules only. CPU time of",
        "this process and its children (math-verify's budget child), best of "
        f"{args.repeats} passes after a first pass; responses per CPU second (higher is faster). The first pass",
        "(each response once, after one start-up call) shows what a response costs the first time its item is",
        "seen (sympy caches what it builds); wall time is on a shared 2-core machine, for reference only.",
        "",
        table,
        "",
        f"Slowest single response: {slowest:.3f} CPU s, against the {BUDGET_S:g} s per-item budget.",
        "",
    ])
    args.out.write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
