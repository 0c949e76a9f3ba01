"""Job: compare two runs, or two configs, on the prompts they share (no Ray needed).

    python -m howeval.ray_jobs.compare --run A --run B [--config X] --out DIR         # config X in both runs
    python -m howeval.ray_jobs.compare --run A --run B --config X --config Y --out DIR  # X of A vs Y of B
    python -m howeval.ray_jobs.compare --run A --config X --config Y --out DIR          # two configs of one run

With no --config, each run must have one config. A T/NT pair's name (``pair_as``) is one side with both
modes; an NT-only side against a T-only side is paired as "NT vs T". Writes DIR/compare.md,
DIR/compare.html and DIR/compare.json: Acc, Trigger, per-label and per-family deltas (B − A) over the
pairs (prompts both sides know) with paired bootstrap intervals from 10 pairs on (fewer: "too few
pairs", never a zero-width interval) and McNemar, and the prompts that flipped with both responses
(``howeval.report.compare``); a warning when the two sides sampled differently (temperature, top_p,
max_tokens).
"""
from __future__ import annotations

import argparse
import sys

from howeval.report.compare import compare_runs, write_comparison


def sides(runs: list[str], configs: list[str] | None) -> tuple[tuple[str, str | None], tuple[str, str | None]]:
    """The two (run, config) sides from the repeated ``--run`` and ``--config`` flags.

    Raises:
        ValueError: not 1-2 runs, more than 2 configs, or one run with fewer than two configs.
    """
    configs = configs or []
    if not 1 <= len(runs) <= 2:
        raise ValueError(f"give --run once or twice, got {len(runs)}")
    if len(configs) > 2:
        raise ValueError(f"give --config at most twice, got {configs}")
    ra, rb = runs[0], runs[-1]
    if len(runs) == 1 and len(configs) != 2:
        raise ValueError("with one --run, give two --config (the two configs to compare)")
    if len(configs) == 2:
        return (ra, configs[0]), (rb, configs[1])
    c = configs[0] if configs else None
    return (ra, c), (rb, c)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m howeval.ray_jobs.compare", description=__doc__.split("\n")[0])
    p.add_argument("--run", action="append", required=True, help="run folder or URI (A first, then B)")
    p.add_argument("--config", action="append", help="config name (once: the same in both; twice: A's then B's)")
    p.add_argument("--judge", help="pattern judge name (default: each run's primary)")
    p.add_argument("--out", required=True, help="output folder for compare.md / compare.html / compare.json")
    p.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    args = p.parse_args(argv)
    try:
        a, b = sides(args.run, args.config)
        comp = compare_runs(a, b, judge=args.judge, n_boot=args.n_boot, seed=args.seed)
        write_comparison(args.out, comp)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("\n".join(summary_lines(comp)))
    for w in comp.get("warnings", []):
        print(f"warning: {w}")
    print(f"wrote {args.out}/compare.md, compare.html and compare.json")
    return 0


def summary_lines(comp: dict) -> list[str]:
    """The sides by name, then one line per mode: shared prompts, then Acc and Trigger of A -> B in % (one
    decimal, as the sweep's summary) with the pairs they are over, the paired delta in points and its
    bootstrap interval (none below ``howeval.report.compare.MIN_PAIRS_CI`` pairs), e.g.
    ``NT: 8 shared prompts; Acc 25.0% -> 50.0% (+25.0 pts, 2 pairs: too few for an interval); ...``."""
    from howeval.report.compare import title

    out = [title(comp)]
    for mode, m in comp["modes"].items():
        parts = [f"{name} {_stat(m[key])}" for name, key in (("Acc", "acc"), ("Trigger", "trigger"))]
        out.append(f"{mode}: {m['n_shared']} shared prompts; " + "; ".join(parts))
    return out


def _stat(s: dict) -> str:
    def pct(x):
        return "–" if x is None else f"{100 * x:.1f}%"

    ci = s.get("ci")
    if s.get("delta") is None:
        return f"{pct(s.get('a'))} -> {pct(s.get('b'))} (0 pairs)"
    extra = (f"CI [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]" if ci else "too few for an interval" if s.get("ci_refused")
             else "no interval")
    return f"{pct(s.get('a'))} -> {pct(s.get('b'))} ({100 * s['delta']:+.1f} pts, {s['n']} pairs: {extra})"


if __name__ == "__main__":
    sys.exit(main())
