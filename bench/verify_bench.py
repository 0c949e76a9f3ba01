"""Verifier CPU per response and verdicts, the current tree beside named earlier commits, in one interleaved run.

Responses (read, never copied):

- ``../shared/data/responses/mathv_model_responses.jsonl`` (144 MATH-Vision responses of 3 VLMs, multiple
  choice and free form) and ``responses/tabmwp_gpt3_cot_responses.jsonl`` (40 GPT-3 answers to TabMWP
  items; literal ``\\n`` sequences turned into newlines), joined to ``manifest.jsonl`` by uid, each with its
  source's own ``correct`` label;
- ``tests/fixtures/verifier_hard_cases.jsonl`` (ours): invented responses of every answer shape the
  verifier must decide or leave open, among them the ten classes of issue 33 (field ``class``: premise
  clauses, bold counts, echoed option lists, one-sentence prose, closing lines, yes/no in prose, option
  texts with punctuation at an edge, multiple choice with whole sentences and echoed lists of math
  options, program artefacts, two answer phrases on a line), each with the verdict a careful reader gives.

Versions: the current tree and each ``--ref NAME=COMMIT`` (default: :data:`DEFAULT_REFS`). A commit is
``git archive``-d (its ``howeval/`` only) into a temp folder and imported from there, whatever its layout:
``howeval/verify.py`` (the first version), ``howeval/judges/verify.py`` (one file) or
``howeval/judges/verify/`` (a package). Each version runs in its own child process (same interpreter,
its tree first on ``PYTHONPATH``) that waits for commands; the parent sends the timed passes round-robin
(repeat 1: group 1 on every version, group 2 on every version, ...; the version order rotates per
repeat), so every version meets the same machine load, and ratios are taken within this one run. Never
compared with a committed run taken at another time.

What is measured: CPU seconds of ``verify(response, answer, answer_type, options)`` (rules only, no LLM
judge): the child's ``time.process_time()`` plus the CPU of its child processes (math-verify's budget
worker since commit 424adda), read with psutil. CPU, not wall time: the machine is shared and a response
must not be charged for waiting for a core. Each version first verifies every response once (warm-up:
imports, math-verify's grammar, the worker's start; it also gives the verdicts), then each group is
timed ``--repeats`` times, each pass looping the group to about :data:`MIN_PASS_CPU_S` of the current
tree's CPU (same loop count for every version). Reported per group: the median and the best pass.

Verdicts: per version, on the real responses, agree / disagree with the label / unresolved; the moves
from each ref to the current tree (right -> wrong must be 0); on the invented shapes, the verdicts that
match the expected one and the wrong ones (a True/False where the expected is the other, or where the
expected is "unresolved").

Usage::

    python bench/verify_bench.py [--data ../shared/data] [--repeats 5] [--ref first=0a53a40 ...]
        [--out bench/results/verify_bench.md] [--json bench/results/verify_bench.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
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
SHAPES = REPO / "tests" / "fixtures" / "verifier_hard_cases.jsonl"
DEFAULT_REFS = ("first=0a53a40", "one-file=cc4f655", "before-33=27b999f")
"""first: the verifier's first version (howeval/verify.py); one-file: the last commit where it was the single
file howeval/judges/verify.py (after the final-sentence and bold rules of issue 12); before-33: main before
issue 33 (the package howeval/judges/verify/)."""
MIN_PASS_CPU_S = 0.3
"""Each timed pass loops its group to about this much CPU of the current tree (at most 200 loops)."""
BUDGET_S = 2.0  # the verifier's per-item budget (howeval.judges.budget.DEFAULT_ITEM_BUDGET_S)


def load_items(data: Path | None) -> list[dict]:
    """Real responses (when ``data`` has them) and the invented shapes, as
    ``{uid, group, answer_type, response, answer, options, label, expected, cls}``.

    ``group`` is the answer type for real responses and ``"shapes: <answer type>"`` for invented ones;
    ``label`` is the source's ``correct`` (real) or None; ``expected`` the reader's verdict (shapes).

    Raises:
        ValueError: a real response has no manifest item.
    """
    items = []
    if data is not None and (data / "manifest.jsonl").exists():
        manifest = {}
        with open(data / "manifest.jsonl", encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    item = json.loads(line)
                    manifest[item["uid"]] = item
        for rel, prefix, unescape in SOURCES:
            with open(data / rel, encoding="utf-8") as fh:
                for line in fh:
                    rec = json.loads(line)
                    uid = f"{prefix}{rec['id']}"
                    if uid not in manifest:
                        raise ValueError(f"{rel}: id {rec['id']!r} has no manifest item {uid!r}")
                    it = manifest[uid]
                    resp = rec["response"].replace("\\n", "\n") if unescape else rec["response"]
                    items.append({"uid": f"{uid}/{rec.get('model', '')}", "group": it["answer_type"],
                                  "answer_type": it["answer_type"], "response": resp, "answer": it["answer"],
                                  "options": it["options"], "label": rec["correct"], "real": True})
    for line in SHAPES.read_text(encoding="utf-8").splitlines():
        if line.strip():
            c = json.loads(line)
            items.append({"uid": f"shape:{c['id']}", "group": f"shapes: {c['answer_type']}",
                          "answer_type": c["answer_type"], "response": c["response"], "answer": c["answer"],
                          "options": c["options"], "expected": c["expected"], "cls": c.get("class"),
                          "real": False})
    return items


# ---------------------------------------------------------------- the child: one version, driven over stdin


def _cpu_now() -> float:
    """CPU seconds of this process and of its live child processes (user + system; psutil)."""
    import psutil

    total = time.process_time()
    for child in psutil.Process().children(recursive=True):
        try:
            c = child.cpu_times()
            total += c.user + c.system
        except psutil.Error:  # gone between the listing and the read
            pass
    return total


def _verify_module(tree: Path) -> str:
    """The verifier's module in a source tree, whatever the commit's layout."""
    if (tree / "howeval/judges/verify").is_dir() or (tree / "howeval/judges/verify.py").exists():
        return "howeval.judges.verify"
    if (tree / "howeval/verify.py").exists():
        return "howeval.verify"
    raise FileNotFoundError(f"no verifier under {tree}/howeval (looked for judges/verify/, judges/verify.py, verify.py)")


def _child(tree: Path, items_path: Path) -> int:
    mod = __import__(_verify_module(tree), fromlist=["verify"])
    if not str(Path(mod.__file__).resolve()).startswith(str(tree.resolve())):
        raise RuntimeError(f"imported {mod.__file__}, not the tree {tree}")
    verify = mod.verify
    items = json.loads(items_path.read_text(encoding="utf-8"))
    groups: dict[str, list[dict]] = defaultdict(list)
    for it in items:
        groups[it["group"]].append(it)

    def one(it: dict):
        try:
            return verify(it["response"], it["answer"], it["answer_type"], it["options"])
        except Exception as e:  # noqa: BLE001 - an old version's error is recorded as its verdict
            return e

    out = sys.stdout
    out.write(json.dumps({"ready": mod.__file__}) + "\n")
    out.flush()
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "verdicts":  # the warm-up pass: every response once, timed one by one
            rows = []
            for it in items:
                t0 = _cpu_now()
                r = one(it)
                dt = _cpu_now() - t0
                if isinstance(r, Exception):
                    rows.append({"uid": it["uid"], "correct": "error", "extracted": None,
                                 "reason": f"{type(r).__name__}: {r}", "cpu_s": dt})
                else:
                    rows.append({"uid": it["uid"], "correct": r.correct, "extracted": r.extracted,
                                 "reason": r.reason, "cpu_s": dt})
            out.write(json.dumps(rows) + "\n")
        elif cmd["cmd"] == "pass":
            group = groups[cmd["group"]]
            c0, w0 = _cpu_now(), time.perf_counter()
            for _ in range(cmd["loops"]):
                for it in group:
                    one(it)
            out.write(json.dumps({"cpu_s": _cpu_now() - c0, "wall_s": time.perf_counter() - w0}) + "\n")
        else:
            break
        out.flush()
    return 0


# ---------------------------------------------------------------- the parent


class Version:
    """A child process verifying with one version's tree."""

    def __init__(self, name: str, commit: str, tree: Path, items_path: Path) -> None:
        self.name, self.commit, self.tree = name, commit, tree
        env = dict(os.environ, PYTHONPATH=str(tree))
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--child", str(tree), "--items", str(items_path)],
            cwd=str(tree), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.file = self._recv()["ready"]

    def _recv(self):
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            raise RuntimeError(f"version {self.name} ({self.commit[:7]}) exited with {self.proc.returncode}")
        return json.loads(line)

    def ask(self, cmd: dict):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self._recv()

    def close(self) -> None:
        try:
            self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait(timeout=60)


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True).stdout.strip()


def _archive(commit: str, dest: Path) -> None:
    blob = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", commit, "howeval"],
                          check=True, capture_output=True).stdout
    tar_path = dest / "tree.tar"
    tar_path.write_bytes(blob)
    with tarfile.open(tar_path) as tf:
        tf.extractall(dest, filter="data")
    tar_path.unlink()


def _verdict_summary(items: list[dict], rows: list[dict]) -> dict:
    real = {"n": 0, "agree": 0, "disagree": 0, "unresolved": 0, "error": 0}
    shapes = {"n": 0, "as_expected": 0, "wrong": 0, "unresolved_expected_decided": 0, "error": 0}
    for it, r in zip(items, rows, strict=True):
        c = r["correct"]
        if it["real"]:
            real["n"] += 1
            key = "error" if c == "error" else "unresolved" if c is None else "agree" if c == it["label"] else "disagree"
            real[key] += 1
        else:
            shapes["n"] += 1
            e = it["expected"]
            if c == "error":
                shapes["error"] += 1
            elif c is e:
                shapes["as_expected"] += 1
            elif c is None:
                shapes["unresolved_expected_decided"] += 1
            else:
                shapes["wrong"] += 1
    real["unresolved_rate"] = real["unresolved"] / real["n"] if real["n"] else None
    return {"real": real, "shapes": shapes}


def _moves(items: list[dict], before: list[dict], after: list[dict]) -> dict:
    """Real responses: how each verdict moved from ``before`` to ``after`` against its label."""

    def state(it: dict, c) -> str:
        if c is None or c == "error":
            return "open"
        return "right" if c == it["label"] else "wrong"

    moves: dict[str, list[str]] = defaultdict(list)
    for it, b, a in zip(items, before, after, strict=True):
        if not it["real"]:
            continue
        sb, sa = state(it, b["correct"]), state(it, a["correct"])
        if sb != sa:
            moves[f"{sb} -> {sa}"].append(it["uid"])
    return dict(moves)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ref", action="append", default=None, help="NAME=COMMIT of an earlier verifier ('none': no refs)")
    ap.add_argument("--out", type=Path, default=REPO / "bench/results/verify_bench.md")
    ap.add_argument("--json", type=Path, default=REPO / "bench/results/verify_bench.json")
    ap.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--items", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return _child(args.child, args.items)
    if args.repeats < 1:
        ap.error(f"--repeats must be >= 1, got {args.repeats}")
    if not (args.data / "manifest.jsonl").exists():
        ap.error(f"no manifest.jsonl under --data {args.data} (the shared real samples)")
    items = load_items(args.data)
    refs = dict(r.split("=", 1) for r in (args.ref or DEFAULT_REFS) if r != "none")
    head = _git("rev-parse", "HEAD")
    dirty = bool(_git("status", "--porcelain", "--", "howeval"))
    t_start = time.time()
    with tempfile.TemporaryDirectory(prefix="verify-bench-") as tmp:
        items_path = Path(tmp) / "items.json"
        items_path.write_text(json.dumps(items), encoding="utf-8")
        versions = [Version("current", head + ("+dirty" if dirty else ""), REPO, items_path)]
        try:
            for name, c in refs.items():
                commit = _git("rev-parse", c)
                tree = Path(tmp) / name
                tree.mkdir()
                _archive(commit, tree)
                versions.append(Version(name, commit, tree, items_path))
            verdicts = {v.name: v.ask({"cmd": "verdicts"}) for v in versions}
            groups: dict[str, list[int]] = defaultdict(list)
            for i, it in enumerate(items):
                groups[it["group"]].append(i)
            cold = {g: sum(verdicts["current"][i]["cpu_s"] for i in idx) for g, idx in groups.items()}
            loops = {g: max(1, min(200, round(MIN_PASS_CPU_S / max(cold[g], 1e-4)))) for g in groups}
            passes: dict[str, dict[str, list[float]]] = {v.name: defaultdict(list) for v in versions}
            walls: dict[str, dict[str, list[float]]] = {v.name: defaultdict(list) for v in versions}
            for rep in range(args.repeats):
                for g in sorted(groups):
                    order = versions[rep % len(versions):] + versions[:rep % len(versions)]
                    for v in order:
                        r = v.ask({"cmd": "pass", "group": g, "loops": loops[g]})
                        per = loops[g] * len(groups[g])
                        passes[v.name][g].append(r["cpu_s"] / per)
                        walls[v.name][g].append(r["wall_s"] / per)
        finally:
            for v in versions:
                v.close()
    figures = {v.name: {g: {"n": len(groups[g]), "loops": loops[g],
                            "cpu_ms_median": 1000 * statistics.median(passes[v.name][g]),
                            "cpu_ms_best": 1000 * min(passes[v.name][g]),
                            "cpu_ms_passes": [round(1000 * x, 4) for x in passes[v.name][g]],
                            "wall_ms_median": 1000 * statistics.median(walls[v.name][g])}
                        for g in sorted(groups)} for v in versions}
    summaries = {v.name: _verdict_summary(items, verdicts[v.name]) for v in versions}
    moves = {name: _moves(items, verdicts[name], verdicts["current"]) for name in refs}
    run = {"commit": head, "dirty": dirty, "date": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
           "repeats": args.repeats, "n_real": sum(it["real"] for it in items),
           "n_shapes": sum(not it["real"] for it in items),
           "versions": {v.name: v.commit for v in versions}, "figures": figures, "verdicts": summaries,
           "moves_to_current": moves, "seconds": round(time.time() - t_start, 1),
           "per_item": {v.name: [[it["uid"], r["correct"]] for it, r in zip(items, verdicts[v.name], strict=True)]
                        for v in versions}}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(run, indent=1) + "\n")
    md = render(run, items, verdicts)
    args.out.write_text(md)
    print(md)
    return 0


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b > 0 else "-"


def render(run: dict, items: list[dict], verdicts: dict) -> str:
    """The markdown report of one run: CPU per group and version, verdicts, moves, shapes by class."""
    names = list(run["versions"])
    refs = names[1:]
    fig = run["figures"]
    head = ["group", "n", "loops"] + [f"{n} ({run['versions'][n][:7]}): CPU ms / response (median; best)" for n in names]
    head += [f"current / {r}" for r in refs]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for g in fig["current"]:
        row = [g, str(fig["current"][g]["n"]), str(fig["current"][g]["loops"])]
        row += [f"{fig[n][g]['cpu_ms_median']:.3f}; {fig[n][g]['cpu_ms_best']:.3f}" for n in names]
        row += [_ratio(fig["current"][g]["cpu_ms_median"], fig[r][g]["cpu_ms_median"]) for r in refs]
        lines.append("| " + " | ".join(row) + " |")
    vt = ["| version | real: n | agree with label | disagree | unresolved (rate) | shapes: n | as expected | wrong | "
          "open where a verdict was expected | errors |", "|" + "---|" * 10]
    for n in names:
        s = run["verdicts"][n]
        re_, sh = s["real"], s["shapes"]
        vt.append(f"| {n} | {re_['n']} | {re_['agree']} | {re_['disagree']} | {re_['unresolved']} "
                  f"({100 * re_['unresolved_rate']:.1f}%) | {sh['n']} | {sh['as_expected']} | {sh['wrong']} | "
                  f"{sh['unresolved_expected_decided']} | {re_['error'] + sh['error']} |")
    mv = []
    for r in refs:
        m = run["moves_to_current"][r]
        txt = "; ".join(f"{k}: {len(v)} ({', '.join(v[:8])}{', ...' if len(v) > 8 else ''})" for k, v in sorted(m.items()))
        mv.append(f"- {r} -> current: {txt or 'no verdict moved'}; right -> wrong: {len(m.get('right -> wrong', []))}")
    # shapes by class
    by_cls: dict = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))  # version -> class -> [n, as expected, wrong]
    for n in names:
        for it, r in zip(items, verdicts[n], strict=True):
            if it["real"] or it.get("cls") is None:
                continue
            cell = by_cls[n][it["cls"]]
            cell[0] += 1
            c, e = r["correct"], it["expected"]
            cell[1] += c is e
            cell[2] += c in (True, False) and c is not e
    classes = sorted({c for n in names for c in by_cls[n]})
    ct = ["| class | n | " + " | ".join(f"{n}: as expected / wrong" for n in names) + " |", "|" + "---|" * (2 + len(names))]
    for c in classes:
        ct.append(f"| {c} | {by_cls['current'][c][0]} | "
                  + " | ".join(f"{by_cls[n][c][1]} / {by_cls[n][c][2]}" for n in names) + " |")
    mc = fig["current"].get("multiple_choice"), fig["current"].get("shapes: multiple_choice")
    first = refs[0] if refs else None
    goal = ""
    if first and all(mc):
        def per(n):
            f = fig[n]
            a, b = f["multiple_choice"], f["shapes: multiple_choice"]
            return (a["cpu_ms_median"] * a["n"] + b["cpu_ms_median"] * b["n"]) / (a["n"] + b["n"])
        goal = (f"Multiple choice, real and invented responses together: current {per('current'):.3f} CPU ms per "
                f"response, {first} {per(first):.3f} ms: {per('current') / per(first):.2f}x (goal: at most 2x).")
    return "\n".join([
        "# Verifier CPU and verdicts, current tree beside earlier commits",
        "",
        f"Generated by `make bench-verify` (`python bench/verify_bench.py`) at commit {run['commit'][:7]}"
        f"{' with uncommitted changes' if run['dirty'] else ''}, {run['date']} UTC, in {run['seconds']} s. "
        f"{run['n_real']} real responses (`../shared/data/responses/`: MATH-Vision, TabMWP; grouped by answer type) "
        f"and {run['n_shapes']} invented responses (`tests/fixtures/verifier_hard_cases.jsonl`, groups `shapes: ...`). "
        "Rules only. Every version ran in its own process in this one run, the timed passes interleaved "
        f"(round-robin, order rotated per repeat; {run['repeats']} repeats). CPU = process time plus its "
        "child processes (math-verify's budget worker); wall time is on a shared machine, not used.",
        "",
        goal,
        "",
        *lines,
        "",
        "## Verdicts",
        "",
        *vt,
        "",
        "Moves of the real responses' verdicts against their labels (right = agrees with the source's label):",
        "",
        *mv,
        "",
        "Invented responses by issue-33 class (as expected / wrong verdicts; wrong = True/False where the reader says the other or leaves it open):",
        "",
        *ct,
        "",
    ])


if __name__ == "__main__":
    raise SystemExit(main())
