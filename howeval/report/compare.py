"""Compare two runs, or two configs, on the prompts they share (how the paper's Tables 5-6 are made).

Side A and side B are each one config of one run (its responses joined with a pattern judge's labels).
Per mode (NT, T), on the ``sample_id``s both sides have:

- Acc, Trigger, each label rate (CoT, Rep, Con, PR) and Acc / Trigger per family, for A and B over the
  pairs where both sides are known (correct not null; labels not null), and Δ = B − A in points;
- a 95% paired bootstrap interval of Δ (resampling prompts: ``howeval.metrics.stats.paired_bootstrap_ci``)
  and McNemar's test on the pairs (``howeval.metrics.stats.mcnemar``; b = true in A only, c = true in B only);
- the prompts that flipped: right→wrong, wrong→right, clean→triggered, triggered→clean, with both responses.

``compare_runs`` returns a dict; ``compare_markdown`` renders it; ``write_comparison`` writes
``compare.json``, ``compare.md`` and ``compare.html`` under a folder.
"""
from __future__ import annotations

import json
from collections import defaultdict

from howeval.metrics.patterneval import trigger_of
from howeval.metrics.stats import MIN_PAIRS_CI, mcnemar, paired_bootstrap_ci
from howeval.records import LABELS, MODES
from howeval.store import undefined_as_null

FLIPS = ("right_to_wrong", "wrong_to_right", "clean_to_triggered", "triggered_to_clean")
LABEL_NAMES = {"cot": "CoT", "rep": "Rep", "con": "Con", "pr": "PR"}
FLIP_TITLES = {"right_to_wrong": "right → wrong", "wrong_to_right": "wrong → right",
               "clean_to_triggered": "clean → triggered", "triggered_to_clean": "triggered → clean"}


def load_side(run: str, config: str | None = None, judge: str | None = None) -> tuple[str, list[dict]]:
    """``(config, rows)``: one config's responses of ``run`` joined with a pattern judge's judgments.

    ``config`` None is allowed when the run has exactly one config. A T/NT pair's name (``pair_as``: two
    checkpoints, one per mode) loads both members' rows under that name. ``judge``: pattern judge name
    (default the run's primary).

    Raises:
        FileNotFoundError: ``run`` is not a sweep run.
        ValueError: unknown config or judge, or several configs and none named.
    """
    from howeval.config import load_run_config
    from howeval.judges.pipeline import judge_id
    from howeval.records import JUDGMENT_SCHEMA, RESPONSE_SCHEMA
    from howeval.report.run import joined_rows, pair_rows
    from howeval.store import join, read_table

    cfg = load_run_config(run)
    names = [m.name for m in cfg.models]
    if config is None:
        if len(names) != 1:
            raise ValueError(f"{run} has configs {names}: name one with --config")
        config = names[0]
    name = judge or cfg.judges.primary_name
    jc = next((j for j in cfg.judges.pattern if j.name == name), None)
    if jc is None:
        raise ValueError(f"judge {name!r} not in {run}'s judges {[j.name for j in cfg.judges.pattern]}")
    pairs = {m: g for m, g in cfg.mode_pairs().items() if g == config}
    members = set(pairs) or {config}
    responses = [r for r in read_table(join(run, "responses"), RESPONSE_SCHEMA)[0].to_pylist() if r["config"] in members]
    if not responses:
        raise ValueError(f"config {config!r} has no responses in {run}; its configs: {names}"
                         + (f", T/NT pairs: {sorted(set(cfg.mode_pairs().values()))}" if cfg.mode_pairs() else ""))
    judgments = [j for j in read_table(join(run, "judgments"), JUDGMENT_SCHEMA)[0].to_pylist() if j["config"] in members]
    return config, pair_rows(joined_rows(responses, judgments, judge_id(jc)), pairs)


def _rate(vals: list[float]) -> float | None:
    return sum(vals) / len(vals) if vals else None


def paired_stat(pairs: list[tuple], n_boot: int = 2000, alpha: float = 0.05, seed: int = 0,
                min_pairs: int = MIN_PAIRS_CI) -> dict:
    """``{"n", "a", "b", "delta", "ci", "mcnemar"}`` over boolean pairs ``(a, b)`` (a None side is skipped).

    ``a``, ``b``: the rates of each side over the used pairs; ``delta`` = b − a; ``ci``: paired bootstrap
    interval of the delta, None with fewer than ``min_pairs`` pairs (:data:`MIN_PAIRS_CI`; then
    ``"ci_refused"`` says why); ``mcnemar``: b = #(a true, b false), c = #(a false, b true).

    >>> s = paired_stat([(True, False), (False, False), (True, True), (None, True)])
    >>> s["n"], s["a"], s["b"], s["delta"], (s["mcnemar"]["b"], s["mcnemar"]["c"])
    (3, 0.6666666666666666, 0.3333333333333333, -0.3333333333333333, (1, 0))
    """
    used = [(bool(x), bool(y)) for x, y in pairs if x is not None and y is not None]
    a, b = _rate([float(x) for x, _ in used]), _rate([float(y) for _, y in used])
    ci = paired_bootstrap_ci(used, "delta_acc", n_boot, alpha, seed) if len(used) >= min_pairs else None
    out = {"n": len(used), "a": a, "b": b, "delta": None if a is None else b - a,  # ci: "delta_acc" = mean(second − first)
           "ci": list(ci) if ci else None, "mcnemar": mcnemar(used) if used else None}
    if used and len(used) < min_pairs:
        out["ci_refused"] = f"too few pairs ({len(used)} < {min_pairs})"
    return out


def _brief(r: dict) -> dict:
    return {"response": r.get("response"), "reasoning": r.get("reasoning"), "correct": r.get("correct"),
            "extracted": r.get("extracted"), "labels": {k: r.get(k) for k in LABELS}, "finish_reason": r.get("finish_reason")}


def compare_rows(a_rows: list[dict], b_rows: list[dict], n_boot: int = 2000, alpha: float = 0.05,
                 seed: int = 0) -> dict:
    """The comparison of two sides' joined rows (each one config; see the module docstring).

    Returns ``{mode: {"n_a", "n_b", "n_shared", "acc", "trigger", "labels": {k: stat}, "families": {f:
    {"acc": stat, "trigger": stat}}, "flips": {kind: [{"sample_id", "family", "category", "question",
    "answer", "a": {...}, "b": {...}}]}}}`` for each mode both sides have; each stat is :func:`paired_stat`.
    When each side has one mode and they differ (a non-thinking checkpoint's NT against a thinking
    checkpoint's T), the two are paired by prompt under the key ``"NT vs T"``.
    """
    out = {}
    modes_a, modes_b = {r["mode"] for r in a_rows}, {r["mode"] for r in b_rows}
    if not modes_a & modes_b and len(modes_a) == len(modes_b) == 1:
        # one mode each, different (a non-thinking checkpoint vs a thinking one): pair them as NT vs T
        plan = [(f"{next(iter(modes_a))} vs {next(iter(modes_b))}", next(iter(modes_a)), next(iter(modes_b)))]
    else:
        plan = [(m, m, m) for m in MODES]
    for mode, mode_a, mode_b in plan:
        a = {r["sample_id"]: r for r in a_rows if r["mode"] == mode_a}
        b = {r["sample_id"]: r for r in b_rows if r["mode"] == mode_b}
        if not a or not b:
            continue
        shared = sorted(set(a) & set(b))
        pa_ = [(a[s], b[s]) for s in shared]
        res = {"n_a": len(a), "n_b": len(b), "n_shared": len(shared),
               "acc": paired_stat([(x.get("correct"), y.get("correct")) for x, y in pa_], n_boot, alpha, seed),
               "trigger": paired_stat([(trigger_of(x), trigger_of(y)) for x, y in pa_], n_boot, alpha, seed),
               "labels": {k: paired_stat([(x.get(k), y.get(k)) for x, y in pa_], n_boot, alpha, seed) for k in LABELS}}
        fam: dict[str, list] = defaultdict(list)
        for x, y in pa_:
            fam[str(x.get("family"))].append((x, y))
        res["families"] = {f: {"acc": paired_stat([(x.get("correct"), y.get("correct")) for x, y in ps], n_boot, alpha, seed),
                               "trigger": paired_stat([(trigger_of(x), trigger_of(y)) for x, y in ps], n_boot, alpha, seed)}
                           for f, ps in sorted(fam.items())}
        flips: dict[str, list] = {k: [] for k in FLIPS}
        for s, (x, y) in zip(shared, pa_):
            ca, cb, ta, tb = x.get("correct"), y.get("correct"), trigger_of(x), trigger_of(y)
            kinds = []
            if ca is True and cb is False:
                kinds.append("right_to_wrong")
            if ca is False and cb is True:
                kinds.append("wrong_to_right")
            if ta is False and tb is True:
                kinds.append("clean_to_triggered")
            if ta is True and tb is False:
                kinds.append("triggered_to_clean")
            for k in kinds:
                flips[k].append({"sample_id": s, "family": x.get("family"), "category": x.get("category"),
                                 "question": x.get("question"), "answer": x.get("answer"), "a": _brief(x), "b": _brief(y)})
        res["flips"] = flips
        out[mode] = res
    return out


def compare_runs(a: tuple[str, str | None], b: tuple[str, str | None], judge: str | None = None,
                 n_boot: int = 2000, alpha: float = 0.05, seed: int = 0) -> dict:
    """Compare side ``a = (run, config)`` with side ``b`` (config None: the run's only config).

    Returns ``{"a": {"run", "config"}, "b": {...}, "judge", "intervals": {...}, "modes": compare_rows(...)}``.
    """
    ca, ra = load_side(a[0], a[1], judge)
    cb, rb = load_side(b[0], b[1], judge)
    sa, sb = sampling_of(a[0], ca), sampling_of(b[0], cb)
    warnings = [f"the two sides sampled differently: {k} {sa.get(k)!r} (A) vs {sb.get(k)!r} (B); a difference "
                "may come from the sampling, not the model or mode" for k in ("temperature", "top_p", "max_tokens")
                if sa.get(k) != sb.get(k)]
    return {"a": {"run": a[0], "config": ca, "sampling": sa}, "b": {"run": b[0], "config": cb, "sampling": sb},
            "judge": judge or "primary", "intervals": {"n_boot": n_boot, "alpha": alpha, "seed": seed,
                                                       "min_pairs": MIN_PAIRS_CI},
            "warnings": warnings, "modes": compare_rows(ra, rb, n_boot, alpha, seed)}


def sampling_of(run: str, config: str) -> dict:
    """``{"temperature", "top_p", "max_tokens"}`` a config of ``run`` generated with: what its engine applied
    (``run_config.json`` ``generation_settings``), else the config's own setting; ``"model default"`` when
    neither says. A T/NT pair's name gives its members' settings joined by " / " when they differ."""
    from howeval.config import load_run_config

    cfg = load_run_config(run)
    names = [m for m, g in cfg.mode_pairs().items() if g == config] or [config]
    per = []
    for name in sorted(names):
        m = next((x for x in cfg.models if x.name == name), None)
        applied = (cfg.generation_settings.get(name) or {}).get("applied") or {}
        per.append({"temperature": applied.get("temperature", m.sampling.temperature if m and m.sampling.temperature
                                               is not None else "model default"),
                    "top_p": applied.get("top_p", m.sampling.top_p if m and m.sampling.top_p is not None
                                         else "model default"),
                    "max_tokens": m.sampling.max_tokens if m else None})
    return {k: per[0][k] if len({str(p[k]) for p in per}) == 1 else " / ".join(str(p[k]) for p in per) for k in per[0]}


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _pts(x) -> str:
    return "–" if x is None else f"{100 * x:+.1f}"


def _ci(ci, refused: str | None = None) -> str:
    return refused if refused else "–" if not ci else f"[{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"


def _mc(m) -> str:
    return "–" if not m else f"b={m['b']}, c={m['c']}, p={m['p_value']:.3g}"


def _row(name: str, s: dict) -> str:
    return (f"| {name} | {s['n']} | {_pct(s['a'])} | {_pct(s['b'])} | {_pts(s['delta'])} | "
            f"{_ci(s['ci'], s.get('ci_refused'))} | {_mc(s['mcnemar'])} |")


def side_name(side: dict) -> str:
    """``config `x` of run `r` ``: how the report and the terminal name a side."""
    return f"config `{side['config']}` of run `{side['run']}`"


def title(c: dict) -> str:
    """``A: x (run r) vs B: y (run s)``, or ``x vs y (run r)`` when both sides are one run's."""
    a, b = c["a"], c["b"]
    if a["run"] == b["run"]:
        return f"A: {a['config']} vs B: {b['config']} (run {a['run']})"
    return f"A: {a['config']} (run {a['run']}) vs B: {b['config']} (run {b['run']})"


def _sampling(s: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in s.items())


def _quote(text: str | None, limit: int = 600) -> str:
    """A response as a fenced text block (shown verbatim: no Markdown or HTML inside it is interpreted)."""
    t = (text or "").strip() or "(empty)"
    t = t if len(t) <= limit else t[:limit] + " …"
    return "~~~~text\n" + t.replace("~~~~", "~ ~ ~ ~") + "\n~~~~"


def compare_markdown(c: dict, max_flips: int = 20) -> str:
    """Markdown of a :func:`compare_runs` result: per mode a stats table, a family table and the flips."""
    a, b = c["a"], c["b"]
    level = 100 * (1 - c.get("intervals", {}).get("alpha", 0.05))
    min_pairs = c.get("intervals", {}).get("min_pairs", MIN_PAIRS_CI)
    out = [f"# Comparison: {title(c)}", "",
           f"- **A**: {side_name(a)}" + (f" (sampling: {_sampling(a['sampling'])})" if a.get("sampling") else ""),
           f"- **B**: {side_name(b)}" + (f" (sampling: {_sampling(b['sampling'])})" if b.get("sampling") else ""),
           f"- Pattern judge: {c.get('judge', 'primary')}", *[f"- **Warning**: {w}." for w in c.get("warnings", [])], "",
           f"Rates in % over the pairs: the shared prompts where both sides are known ('pairs' column); Δ = B − A in "
           f"points; {level:.0f}% paired bootstrap interval (resampling prompts), shown from {min_pairs} pairs on; "
           "McNemar: b = true in A only, c = true in B only (exact binomial below 25 discordant pairs, else χ² with "
           "continuity correction)."]
    head = ["| metric | pairs | A | B | Δ (pts) | CI | McNemar |", "|---|---:|---:|---:|---:|---|---|"]
    for mode, m in c["modes"].items():
        out += ["", f"## {mode}: {m['n_shared']} shared prompts (A {m['n_a']}, B {m['n_b']})", "", *head,
                _row("Acc", m["acc"]), _row("Trigger", m["trigger"])]
        out += [_row(LABEL_NAMES[k], m["labels"][k]) for k in LABELS]
        out += ["", "By family:", "", *head]
        for f, s in m["families"].items():
            out += [_row(f"Acc {f}", s["acc"]), _row(f"Trigger {f}", s["trigger"])]
        for kind in FLIPS:
            items = m["flips"][kind]
            out += ["", f"### {mode}: {FLIP_TITLES[kind]} ({len(items)})"]
            for it in items[:max_flips]:
                out += ["", f"**{it['sample_id']}** ({it['family']}/{it['category']}), gold `{it['answer']}`",
                        "", f"A (correct={it['a']['correct']}, labels={[k for k, v in it['a']['labels'].items() if v]}):",
                        "", _quote(it["a"]["response"]), "",
                        f"B (correct={it['b']['correct']}, labels={[k for k, v in it['b']['labels'].items() if v]}):",
                        "", _quote(it["b"]["response"])]
            if len(items) > max_flips:
                out += ["", f"… and {len(items) - max_flips} more in compare.json."]
    return "\n".join(out) + "\n"


def write_comparison(out_dir: str, comparison: dict) -> list[str]:
    """Write ``compare.json``, ``compare.md`` and ``compare.html`` under ``out_dir``; returns their URIs."""
    from howeval.report.html import render_html
    from howeval.store import join, write_text

    md = compare_markdown(comparison)
    files = {"compare.json": json.dumps(undefined_as_null(comparison), indent=2, default=str, allow_nan=False), "compare.md": md,
             "compare.html": render_html([("md", md)], {}, md.splitlines()[0].lstrip("# "))}
    uris = []
    for name, text in files.items():
        write_text(join(out_dir, name), text)
        uris.append(join(out_dir, name))
    return uris
