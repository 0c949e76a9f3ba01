"""Render metrics as the tables a reader of the PatternEval paper expects (Markdown)."""
from __future__ import annotations

from howeval.metrics.stats import MIN_PAIRS_CI
from howeval.records import LABELS, MODES


def pct(x: float | None, digits: int = 1) -> str:
    """A rate in [0, 1] as a percentage string; '–' for None. ``pct(0.125) == '12.5'``."""
    return "–" if x is None else f"{100 * x:.{digits}f}"


def pts(x: float | None) -> str:
    """A difference of rates in percentage points with a sign; '–' for None."""
    return "–" if x is None else f"{100 * x:+.1f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def acc_cell(x: dict) -> str:
    """Acc with its denominator: ``"45.0 (over 40 of 42 with a verdict)"`` = 45.0% of the 40 rows that have a
    verdict, out of 42 (not "40 of 42 correct"); ``not measured`` when no row has a verdict."""
    if x.get("acc") is None:
        return "not measured" if x.get("n") else "–"
    return f"{pct(x['acc'])} (over {x['n_scored']} of {x['n']} with a verdict)"


def trigger_cell(x: dict) -> str:
    """Trigger with its denominator: ``"30.0 (over 40 of 42 labelled)"`` = 30.0% of the 40 labelled rows out
    of 42; ``not measured`` when no row has labels."""
    if x.get("trigger") is None:
        return "not measured" if x.get("n") else "–"
    return f"{pct(x['trigger'])} (over {x['n_labeled']} of {x['n']} labelled)"


def thought_cell(t: dict | None) -> str:
    """Did the T mode think: ``yes (40 of 42 with reasoning)``, ``NO (0 of 42 with reasoning)`` (T compares
    prompts or settings, not thinking: the report's warning says why), '–' without T rows."""
    if not t:
        return "–"
    ok = t.get("n", 0) - t.get("n_errors", 0)
    if ok <= 0 or "n_reasoning" not in t:
        return "–"
    k = t["n_reasoning"]
    return f"{'yes' if k else 'NO'} ({k} of {ok} with reasoning)"


def mode_table(metrics: dict) -> str:
    """The long table: one row per config x mode with n, scored/labelled, Acc, Trigger, the label rates,
    unresolved, errors, truncated and mean completion tokens (Acc over the scored rows, SPEC section 1)."""
    rows = []
    for name, c in metrics["configs"].items():
        for m in MODES:
            if m not in c:
                continue
            x = c[m]
            rows.append([name, m, str(x["n"]), f"{x['n_scored']}/{x['n_labeled']}", acc_cell(x), trigger_cell(x),
                         pct(x.get("acc_all_n")), pct(x.get("trigger_all_n")),
                         *[pct(x["labels"][k]) for k in LABELS], str(x["n_unresolved"]), str(x["n_errors"]),
                         str(x["n_truncated"]), str(x.get("n_judge_errors", "–")),
                         "–" if x.get("mean_completion_tokens") is None else f"{x['mean_completion_tokens']:.0f}"])
    return _table(["config", "mode", "n", "scored/labelled", "Acc (scored)", "Trigger (labelled)", "Acc (all N)",
                   "Trigger (all N)", "CoT", "Rep", "Con", "PR",
                   "unresolved", "errors", "truncated", "judge errors", "tokens"], rows)


def thinking_section(metrics: dict) -> str:
    """Markdown: per config x mode, the rows with a reasoning channel and the answers the length limit cut,
    then the warnings (:func:`howeval.metrics.patterneval.thinking_warnings`): T with no reasoning
    channel compares prompts, not modes."""
    rows, warns = [], []
    for name, c in metrics["configs"].items():
        for m in MODES:
            x = c.get(m)
            if not x:
                continue
            ok = x["n"] - x.get("n_errors", 0)
            rows.append([name, m, str(x["n"]), f"{x.get('n_reasoning', 0)}/{ok}", f"{x.get('n_length_cut', 0)}/{ok}",
                         str(x.get("n_truncated", 0))])
        warns += c.get("warnings") or []
    lines = ["## Did T think? Reasoning channel and length limit", "",
             "Per config and mode: responses with a reasoning channel r_m (what a thinking mode produces), answers "
             "that stopped at the length limit (finish_reason 'length'), and of those the ones cut inside the "
             "reasoning (truncated: no answer, scored wrong), over the responses without an engine error.", "",
             _table(["config", "mode", "n", "with reasoning channel", "cut by the length limit", "truncated"], rows)]
    if warns:
        lines += [""] + [f"- **Warning**: {w}." for w in warns]
    return "\n".join(lines)


def gaps_table(metrics: dict) -> str:
    """Δacc and Δpat per config with their paired 95% intervals and McNemar tests (``howeval.metrics.stats``);
    no interval below ``howeval.metrics.stats.MIN_PAIRS_CI`` pairs (``too few pairs (2 < 10)``: a bootstrap
    over a handful of pairs gives an interval of zero width)."""
    rows = [[n, pts(c.get("delta_acc")), _pts_ci(c.get("delta_acc_ci"), c.get("n_paired_acc")), _p(c.get("mcnemar")),
             pts(c.get("delta_pat")), _pts_ci(c.get("delta_pat_ci"), c.get("n_paired_pat")), _p(c.get("mcnemar_trigger")),
             f"{c.get('n_paired_acc', 0)} / {c.get('n_paired_pat', 0)}"] for n, c in metrics["configs"].items()]
    return _table(["config", "Δacc (pts)", "Δacc CI", "McNemar (correct)", "Δpat (pts)", "Δpat CI",
                   "McNemar (trigger)", "pairs (acc / pat)"], rows)


def breakdown_table(metrics: dict, key: str, config: str | None = None) -> str:
    """Long table of ``by_family`` or ``by_category`` (``key``) per config x mode (one config if given)."""
    label = {"by_family": "family", "by_category": "category"}[key]
    rows = []
    for name, c in metrics["configs"].items():
        if config is not None and name != config:
            continue
        for m in MODES:
            if m not in c:
                continue
            for g, x in c[m][key].items():
                rows.append([name, m, g, str(x["n"]), acc_cell(x), trigger_cell(x),
                             *[pct(x["labels"][k]) for k in LABELS]])
    return _table(["config", "mode", label, "n", "Acc", "Trigger", "CoT", "Rep", "Con", "PR"], rows)


ACC_NOTE = ("Acc = verifier accuracy; Trigger = share of responses with at least one pattern; CoT, Rep, Con, PR = "
            "per-label rates (howeval docs/metrics.md §1). All in %. n = responses; scored / labelled = rows with a verdict / with "
            "labels. Acc (scored) is over the scored rows, shown as 'over 28 of 42 with a verdict' (28 of the 42 rows had a verdict; not 28 correct): 'unresolved' answers (the rules "
            "could not decide; no LLM fallback configured) and engine errors are left out of it and counted here. "
            "Trigger (labelled) likewise over the labelled rows (truncated, judge-error and engine-error rows left out). "
            "Acc (all N) and Trigger (all N) are the paper's form, over all n prompts: a row without a verdict counts "
            "as wrong, a row without labels as not triggered.")

GAPS_NOTE = ("Δacc = Acc_T − Acc_NT; Δpat = Trigger_NT − Trigger_T (positive: thinking mode triggers fewer patterns), "
             "on the prompts both modes have. Intervals: 95% percentile bootstrap resampling prompts, shown from 10 "
             "pairs on (fewer: 'too few pairs'). McNemar: "
             "b = right (or triggered) in NT only, c = in T only; exact binomial test when b + c < 25, else χ² with "
             "continuity correction.")


def bad_rows_section(bad_rows: list[dict]) -> str:
    """Markdown section listing the benchmark rows skipped by ``--skip-bad-rows``."""
    return "\n".join(["## Skipped benchmark rows (--skip-bad-rows)", "",
                      _table(["file:line", "uid", "field", "reason"],
                             [[f"{b['path']}:{b['line']}", str(b["uid"]), b["field"], b["reason"]] for b in bad_rows])])


def _pct_ci(ci) -> str:
    return "–" if not ci else f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _pts_ci(ci, n_pairs: int | None = None) -> str:
    if n_pairs is not None and 0 < n_pairs < MIN_PAIRS_CI:
        return f"too few pairs ({n_pairs} < {MIN_PAIRS_CI})"
    return "–" if not ci else f"[{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"


def _p(x: dict | None) -> str:
    if not x:
        return "–"
    kind = "exact" if x["exact"] else "χ²"
    return f"b={x['b']}, c={x['c']}, p={x['p_value']:.3g} ({kind})"


def intervals_section(metrics: dict) -> str:
    """Markdown: Acc and Trigger with their bootstrap intervals per config x mode (``add_intervals`` output)."""
    iv = metrics.get("intervals") or {}
    level = 100 * (1 - iv.get("alpha", 0.05))
    rows = [[name, m, pct(c[m].get("acc")), _pct_ci(c[m].get("acc_ci")), pct(c[m].get("trigger")),
             _pct_ci(c[m].get("trigger_ci"))] for name, c in metrics["configs"].items() for m in MODES if m in c]
    return "\n".join([f"## Uncertainty ({level:.0f}% bootstrap intervals, {iv.get('n_boot', '?')} resamples, "
                      f"seed {iv.get('seed', '?')})", "",
                      "Percentile bootstrap over prompts. The paired gaps' intervals and McNemar tests are in "
                      "the paired-gaps table.", "",
                      _table(["config", "mode", "Acc", "Acc CI", "Trigger", "Trigger CI"], rows)])


def length_section(la: dict) -> str:
    """Markdown for ``howeval.metrics.length.length_analysis``: r per mode (never pooled across modes),
    exclusions, and the bin table on common length edges (groups too small to cut listed apart)."""
    c = la["correlation"]

    def r_of(x: dict) -> str:
        if x.get("r") is None:
            return f"n/a ({x.get('n_points', 0)} aggregates; r needs 3)"
        return f"{x['r']:+.3f} (p = {x['p_value']:.3g}, {x['n_points']} aggregates)"

    by_mode = "; ".join(f"{m}: **{r_of(x)}**" for m, x in (c.get("by_mode") or {}).items()) or "–"
    ex = la.get("excluded") or {}
    excluded = ", ".join(f"{v} {k}" for k, v in ex.items() if v) or "none"
    edges = la.get("edges") or []
    small = la.get("too_small") or {}
    lines = ["## Response length and patterns", "",
             f"Length of y_m in {la['unit']}. Pearson r between mean length and Trigger over config x correctness "
             f"aggregates, per mode (never pooled across modes): {by_mode}. Unresolved answers (no verdict) form "
             f"their own group and stay out of r ({c.get('n_unresolved_points', 0)} unresolved aggregates). "
             f"Rows used: {la.get('n_used', '–')}; left out: {excluded}.", "",
             f"Trigger (%) by length bin on common edges (the {la['n_bins']}-quantiles of all rows' lengths, so a bin "
             "covers the same lengths in every group); rows in brackets:"
             + (f" edges {', '.join(f'{e:g}' for e in edges)}." if edges else "")
             + (f" Groups too small to cut (fewer than {la.get('min_rows_per_bin', 2) * la['n_bins']} rows): "
                + ", ".join(f"{g} (n={n})" for g, n in small.items()) + "." if small else ""), ""]
    nb = max((len(v) for v in la["bins"].values()), default=0)
    rows = []
    for g, bins in la["bins"].items():
        cells = ["–" if b.get("trigger") is None else f"{100 * b['trigger']:.0f} ({b['n']})" for b in bins]
        rows.append([g, str(sum(b["n"] for b in bins)), *cells, *[""] * (nb - len(bins))])
    if rows:
        first = next(iter(la["bins"].values()))
        heads = [f"{b['lo']:g}–{b['hi']:g}" if "lo" in b else f"bin {b['bin']}" for b in first]
        lines.append(_table(["group", "n", *heads], rows))
    else:
        lines.append("No group large enough to cut into bins.")
    return "\n".join(lines)


def ratio_text(x: float | None) -> str:
    """A ratio as shown: ``2.31x``, or '–' when undefined.

    >>> ratio_text(1.934), ratio_text(None)
    ('1.93x', '–')
    """
    return "–" if x is None else f"{x:.2f}x"


def render_crystal(crystal: dict, cherry: dict | None = None) -> str:
    """CRYSTAL table: answer accuracy, mean step precision, recall, their ratio (the cherry-picking analysis),
    Match F1, LIS ratio, Ordered Match F1 per config x mode; ``cherry`` (``howeval.benchmarks.crystal.cherry_picking``)
    adds the count of rows with Precision > Recall."""
    rows = []
    for c, modes in crystal.items():
        for m, x in modes.items():
            acc = "–" if x.get("accuracy") is None else f"{pct(x['accuracy'])} ({x['n_verdicts']})"
            rows.append([c, m, str(x["n"]), acc, pct(x["precision"]), pct(x["recall"]), ratio_text(x.get("pr_ratio")),
                         pct(x["f1"]), pct(x["lis"]), pct(x["ordered_f1"])])
    any_x = next((x for modes in crystal.values() for x in modes.values()), None)
    head = "## CRYSTAL: step-level reasoning"
    if any_x:
        head += (f"\n\nGreedy one-to-one matching at τ = {any_x['tau']} ({any_x['embedder']}), Ordered Match F1 with "
                 f"α = {any_x['alpha']} and the {any_x['order'].upper()} order score (howeval docs/metrics.md §3). Means over responses "
                 "whose item has reference steps, in %. Acc: answer accuracy of the same responses (verdicts in "
                 "brackets; unresolved left out). P/R: mean Precision over mean Recall, CRYSTAL's cherry-picking "
                 "analysis (above 1: few precise steps, reference steps skipped).")
    if cherry and cherry.get("n"):
        rng = (f" ({ratio_text(cherry['min_ratio'])}–{ratio_text(cherry['max_ratio'])})"
               if cherry["precision_above_recall"] else "")
        head += (f" Precision > Recall in {cherry['precision_above_recall']} of {cherry['n']} config x mode rows{rng}; "
                 "the paper: 19 of 20 models, 1.2x–7.2x.")
    return head + "\n\n" + _table(["config", "mode", "n", "Acc", "Precision", "Recall", "P/R", "Match F1",
                                    "LIS ratio", "Ordered Match F1"], rows)


def render_task_accuracy(summary: dict, criteria: dict[str, str] | None = None, notes: list[str] | None = None) -> str:
    """"Table 6 (task accuracy)": per policy (config) x mode, each category's average accuracy and each task
    benchmark's accuracy, in %, with the scored responses ``n`` (``howeval.benchmarks.taskacc.summarize_task_rows``).
    A category no benchmark of the config belongs to is ``absent`` (not 0); a benchmark or category with no
    scored response ``–``. ``criteria``: benchmark -> criterion (named under the table); ``notes``: lines after it.

    >>> s = {"benchmarks": {"cq": "document"}, "categories": ["document"], "absent": ["math", "logic"],
    ...      "rows": {"p": {"NT": {"benchmarks": {"cq": {"acc": 0.5, "n": 2, "n_unresolved": 0}},
    ...                            "categories": {"document": {"acc": 0.5, "n": 2, "n_benchmarks": 1}}}}}}
    >>> render_task_accuracy(s).splitlines()[-1]
    '| p | NT | absent | absent | 50.0 (n=2) | 50.0 (n=2) |'
    """
    from howeval.benchmarks.taskacc import TASK_CATEGORIES

    def cell(x: dict) -> str:
        return "–" if x.get("acc") is None else f"{pct(x['acc'])} (n={x['n']})"

    benches = sorted(summary["benchmarks"], key=lambda b: (TASK_CATEGORIES.index(summary["benchmarks"][b]), b))
    header = ["policy", "mode", *(f"{c} avg" for c in TASK_CATEGORIES),
              *(f"{b} ({summary['benchmarks'][b]})" for b in benches)]
    rows = []
    for policy, modes in summary["rows"].items():
        for mode, x in modes.items():
            rows.append([policy, mode, *(cell(x["categories"][c]) if c in x["categories"] else "absent" for c in TASK_CATEGORIES),
                         *(cell(x["benchmarks"][b]) for b in benches)])
    crit = criteria or {}
    head = ("## Table 6 (task accuracy)\n\nTask accuracy of each policy (config) and mode on the task benchmarks the "
            "config lists (the PatternEval/PatternRL paper's Table 6, BaseRL vs PatternRL; the paper does not name "
            "its benchmarks), in % (mean ANLS for an anls benchmark), with the scored responses n. Each benchmark by "
            "its own criterion" + (" (" + "; ".join(f"{b}: {crit[b]}" for b in benches if b in crit) + ")" if crit else "")
            + ", docs/metrics.md §5. A category's average is the unweighted mean of its benchmarks; "
            "`absent`: no benchmark of that category is configured.")
    out = head + "\n\n" + _table(header, rows)
    if notes:
        out += "\n\n" + "\n".join(f"- {n}" for n in notes)
    return out


def mcc_text(value: float | None, confusion: dict | None) -> str:
    """MCC as shown: three decimals, or ``undefined (<why>)`` when a margin of the confusion is empty (no
    tool ever called, a tool called on every item, no item of one label): the ε of the formula then
    gives 0, which would read as "no better than chance", not "cannot be measured". The run's JSON stores
    such an MCC as null beside its confusion (``howeval.benchmarks.adapt.metrics.defined_mcc``); a 0.0 stored by
    an older version reads the same. '–' when absent (no confusion: no text and adaptive results).

    >>> mcc_text(None, {"tp": 0, "fp": 0, "tn": 30, "fn": 12}), mcc_text(0.41, {"tp": 5, "fp": 2, "tn": 6, "fn": 1})
    ('undefined (no tool called)', '0.410')
    >>> mcc_text(0.0, {"tp": 0, "fp": 0, "tn": 30, "fn": 12}), mcc_text(None, None)
    ('undefined (no tool called)', '–')
    """
    if value is None and confusion is None:
        return "–"
    c = confusion or {}
    tp, fp, tn, fn = (c.get(k, 0) or 0 for k in ("tp", "fp", "tn", "fn"))
    if confusion is not None and tp + fp == 0:
        return "undefined (no tool called)"
    if confusion is not None and tn + fn == 0:
        return "undefined (a tool called on every item)"
    if confusion is not None and (tp + fn == 0 or fp + tn == 0):
        return "undefined (every item has one label)"
    return "–" if value is None else f"{value:.3f}"


def consistency_text(c: dict | None) -> str:
    """The text-vs-adaptive-text consistency figure (``howeval.benchmarks.adapt.metrics.mode_consistency``) as
    shown: ``0.02 (1/42)``, or why it is missing.

    >>> consistency_text({"n": 42, "inconsistent": 1, "rate": 1 / 42}), consistency_text({"n": 0, "rate": None})
    ('0.02 (1/42)', 'n/a (every adaptive answer called a tool)')
    """
    if c is None:
        return "–"
    if not c.get("n"):
        return "n/a (every adaptive answer called a tool)"
    return f"{c['rate']:.2f} ({c['inconsistent']}/{c['n']})"


def coverage_how(adapt: dict) -> str:
    """How the run's key-step coverage was decided, in words, from each summary's ``coverage_method``.

    >>> coverage_how({"m": {"coverage_method": ["llm:gpt-5@x|process-v1"], "coverage_errors": 2}})
    'decided by the LLM judge gpt-5@x|process-v1 per key step; 2 judge failures left out'
    >>> coverage_how({"m": {"coverage_method": ["embedding@0.35"]}})
    "embedding match of the trajectory's steps against K at τ = 0.35"
    """
    methods = sorted({m for s in adapt.values() for m in s.get("coverage_method") or []})
    errors = sum(s.get("coverage_errors") or 0 for s in adapt.values())
    words = []
    for m in methods or ["embedding@0.35"]:
        if m.startswith("llm:"):
            words.append(f"decided by the LLM judge {m[4:]} per key step")
        else:
            words.append(f"embedding match of the trajectory's steps against K at τ = {m.split('@', 1)[-1]}")
    return "; ".join(words) + (f"; {errors} judge failures left out" if errors else "")


def render_adapt(adapt: dict) -> str:
    """AdaptMMBench tables: accuracy per mode and domain, MCC of tool calling, efficiency."""
    rows, eff = [], []
    for c, s in adapt.items():
        for mode, acc in s["accuracy"].items():
            doms = ", ".join(f"{d} {pct(v)}" for d, v in acc.items() if d != "all")
            rows.append([c, mode, str(s["n"].get(mode, 0)), pct(acc.get("all")), doms])
            e = s["efficiency"][mode]
            eff.append([c, mode, *("–" if e[k] is None else f"{e[k]:.1f}" for k in ("tokens", "steps", "tool_calls", "turns")),
                        pct(s["tool_exec_ok_rate"].get(mode)), pct((s.get("tool_effectiveness") or {}).get(mode)),
                        pct(s.get("key_step_coverage", {}).get(mode))])
    mcc = [[c, mcc_text(s["mcc"], s.get("confusion")), mcc_text(s.get("mcc_solvable"), s.get("confusion_solvable")),
            " / ".join(str((s["confusion"] or {}).get(k, "–")) for k in ("tp", "fp", "tn", "fn")),
            " / ".join(str((s["labels"] or {}).get(k, "–")) for k in ("required", "redundant", "unsolved")),
            consistency_text(s.get("consistency")),
            str(sum(s["errors"].values())), str(s.get("unresolved", 0))] for c, s in adapt.items()]
    return "\n\n".join([
        "## AdaptMMBench: adaptive tool use",
        "Accuracy (%) per mode and domain; text = no tools, adaptive = the model may call zoom/rotate/contrast "
        "(executed by the system), oracle = gold evidence crops given (howeval docs/metrics.md §4).",
        _table(["config", "mode", "n", "Acc", "by domain"], rows),
        "Mode selection: MCC of 'called a tool' against the model's own labels (ε = 1e-8): Tool-Redundant when "
        "its text-mode answer is correct, Tool-Required otherwise, over every item with an adaptive answer (the "
        "paper's item set: items no mode solves count as Tool-Required). 'MCC, solvable only' leaves those out; "
        "'unsolved' counts them. 'Inconsistent': the share of items whose text-mode answer and tool-free "
        "adaptive answer differ in correctness (the labels' consistency check; the paper: 0.02).",
        _table(["config", "MCC (paper)", "MCC, solvable only", "TP / FP / TN / FN", "required / redundant / unsolved",
                "inconsistent (text vs adaptive text)", "errors", "unresolved"], mcc),
        "Efficiency per item, the share of executed tool calls that ran without error, the share the LLM process "
        "judge found effective (the paper's tool execution effectiveness; '–' without `adapt.process_judge`), and "
        f"key-step coverage ({coverage_how(adapt)}).",
        _table(["config", "mode", "tokens", "steps", "tool calls", "turns", "tool calls that ran", "effective (judge)",
                "key-step coverage"], eff),
    ])


def render_agreement(a: dict) -> str:
    """Judge-agreement section: unanimity and, per label, how many judges agree with the majority."""
    n = len(a["judges"])
    rows = [[k, *(str(a["per_label"][k]["agreement_counts"].get(c, 0)) for c in range(n, 0, -1)),
             str(a["per_label"][k]["n_disputed"]), str(a["per_label"][k]["majority_true"])] for k in a["per_label"]]
    lines = [f"## Pattern-judge agreement ({n} judges: {', '.join(a['judges'])})", "",
             f"{a['n']} responses judged by every judge; {a['n_unanimous']} unanimous on the whole 4-label vector "
             f"({pct(a['unanimous_rate'])}%), {a['n_consensus_samples']} usable as PatternRM consensus samples, "
             f"{a['n_with_errors']} with a judge error.", "",
             _table(["label", *(f"{c}/{n} agree" for c in range(n, 0, -1)), "disputed", "majority true"], rows)]
    if a.get("disputed"):
        lines += ["", "Disputed responses (first 50): " + ", ".join(f"`{s}|{c}|{m}`" for s, c, m in a["disputed"])]
    return "\n".join(lines)


ADAPT_MODES = ("text", "adaptive", "oracle")


def overview_table(metrics: dict) -> str | None:
    """The three benchmarks side by side, one row per config: PatternEval Acc and Trigger (NT / T) with their
    denominators (:func:`acc_cell`, :func:`trigger_cell`), whether T thought (:func:`thought_cell`), CRYSTAL
    Ordered Match F1 (NT / T) and AdaptMMBench accuracy per mode and MCC. None when the run has only
    PatternEval (the main table says it all)."""
    crystal, adapt = metrics.get("crystal") or {}, metrics.get("adapt") or {}
    if not crystal and not adapt:
        return None
    head = ["config", "Acc NT", "Acc T", "Trigger NT", "Trigger T", "T thought?"]
    if crystal:
        head += ["CRYSTAL OMF1 NT", "CRYSTAL OMF1 T"]
    if adapt:
        head += [f"Adapt Acc {m}" for m in ADAPT_MODES] + ["Adapt MCC"]
    rows = []
    for name in sorted(set(metrics["configs"]) | set(crystal) | set(adapt)):
        c = metrics["configs"].get(name, {})
        row = ([name] + [cell(c.get(m) or {}) for cell in (acc_cell, trigger_cell) for m in MODES]
               + [thought_cell(c.get("T"))])
        if crystal:
            row += [pct((crystal.get(name, {}).get(m) or {}).get("ordered_f1")) for m in MODES]
        if adapt:
            a = adapt.get(name) or {}
            row += [pct((a.get("accuracy", {}).get(m) or {}).get("all")) for m in ADAPT_MODES]
            row.append(mcc_text(a.get("mcc"), a.get("confusion")))
        rows.append(row)
    return _table(head, rows)


def duration(s: float) -> str:
    """Seconds as ``35s``, ``1:05`` or ``1:02:03``."""
    s = int(round(max(s, 0)))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}" if s >= 60 else f"{s}s"
