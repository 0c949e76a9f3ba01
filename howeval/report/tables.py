"""Render metrics as the tables a reader of the PatternEval paper expects (Markdown)."""
from __future__ import annotations

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


def render_report(metrics: dict, *, title: str, notes: list[str] | None = None,
                  bad_rows: list[dict] | None = None, extra_sections: list[str] | None = None) -> str:
    """Markdown report: main table (Acc, Trigger, label rates per config x mode), Δ table,
    by family, by category, failures, skipped rows. All rates are percentages."""
    cfgs = metrics["configs"]
    out = [f"# {title}", ""]
    for n in notes or []:
        out.append(f"> {n}")
    if notes:
        out.append("")
    out += ["## PatternEval: accuracy and response patterns", "",
            "Acc = verifier accuracy; Trigger = share of responses with at least one pattern; CoT, Rep, Con, PR =",
            "per-label rates (SPEC §1). All in %. n = responses; scored / labelled = rows with a verdict. Acc is over",
            "the scored rows: 'unresolved' answers (the rules could not decide; no LLM fallback configured) and",
            "engine errors are left out of it and counted here, never scored as wrong.", ""]
    rows = []
    for name, c in cfgs.items():
        for m in MODES:
            if m not in c:
                continue
            x = c[m]
            rows.append([name, m, str(x["n"]), f"{x['n_scored']}/{x['n_labeled']}", pct(x["acc"]), pct(x["trigger"]),
                         *[pct(x["labels"][k]) for k in LABELS], str(x["n_unresolved"]), str(x["n_errors"]), str(x["n_truncated"]),
                         "–" if x.get("mean_completion_tokens") is None else f"{x['mean_completion_tokens']:.0f}"])
    out += [_table(["config", "mode", "n", "scored/labelled", "Acc", "Trigger", "CoT", "Rep", "Con", "PR",
                    "unresolved", "errors", "truncated", "tokens"], rows), ""]
    out += ["## Paired gaps (T vs NT on the same prompts)", "",
            "Δacc = Acc_T − Acc_NT; Δpat = Trigger_NT − Trigger_T (positive: thinking mode triggers fewer patterns).", ""]
    drows = [[n, pts(c.get("delta_acc")), pts(c.get("delta_pat")), str(c.get("n_paired_acc", 0)),
              str(c.get("n_paired_pat", 0))] for n, c in cfgs.items()]
    out += [_table(["config", "Δacc (pts)", "Δpat (pts)", "pairs (acc)", "pairs (pat)"], drows), ""]
    for key, label in (("by_family", "family"), ("by_category", "category")):
        out += [f"## By {label}", ""]
        rows = []
        for name, c in cfgs.items():
            for m in MODES:
                if m not in c:
                    continue
                for g, x in c[m][key].items():
                    rows.append([name, m, g, str(x["n"]), pct(x["acc"]), pct(x["trigger"]),
                                 *[pct(x["labels"][k]) for k in LABELS]])
        out += [_table(["config", "mode", label, "n", "Acc", "Trigger", "CoT", "Rep", "Con", "PR"], rows), ""]
    for sec in extra_sections or []:
        out += [sec, ""]
    if bad_rows:
        out += ["## Skipped benchmark rows (--skip-bad-rows)", ""]
        out += [_table(["file:line", "uid", "field", "reason"],
                       [[f"{b['path']}:{b['line']}", str(b["uid"]), b["field"], b["reason"]] for b in bad_rows]), ""]
    return "\n".join(out)


def render_crystal(crystal: dict) -> str:
    """CRYSTAL table: mean step precision, recall, Match F1, LIS ratio, Ordered Match F1 per config x mode."""
    rows = []
    for c, modes in crystal.items():
        for m, x in modes.items():
            rows.append([c, m, str(x["n"]), pct(x["precision"]), pct(x["recall"]), pct(x["f1"]), pct(x["lis"]),
                         pct(x["ordered_f1"])])
    any_x = next((x for modes in crystal.values() for x in modes.values()), None)
    head = "## CRYSTAL: step-level reasoning"
    if any_x:
        head += (f"\n\nGreedy one-to-one matching at τ = {any_x['tau']} ({any_x['embedder']}), Ordered Match F1 with "
                 f"α = {any_x['alpha']} and the {any_x['order'].upper()} order score (SPEC §3). Means over responses "
                 "whose item has reference steps, in %.")
    return head + "\n\n" + _table(["config", "mode", "n", "Precision", "Recall", "Match F1", "LIS ratio",
                                    "Ordered Match F1"], rows)


def render_adapt(adapt: dict) -> str:
    """AdaptMMBench tables: accuracy per mode and domain, MCC of tool calling, efficiency."""
    rows, eff = [], []
    for c, s in adapt.items():
        for mode, acc in s["accuracy"].items():
            doms = ", ".join(f"{d} {pct(v)}" for d, v in acc.items() if d != "all")
            rows.append([c, mode, str(s["n"].get(mode, 0)), pct(acc.get("all")), doms])
            e = s["efficiency"][mode]
            eff.append([c, mode, *("–" if e[k] is None else f"{e[k]:.1f}" for k in ("tokens", "steps", "tool_calls", "turns")),
                        pct(s["tool_exec_ok_rate"].get(mode)), pct(s.get("key_step_coverage", {}).get(mode))])
    mcc = [[c, "–" if s["mcc"] is None else f"{s['mcc']:.3f}",
            " / ".join(str((s["confusion"] or {}).get(k, "–")) for k in ("tp", "fp", "tn", "fn")),
            " / ".join(str((s["labels"] or {}).get(k, "–")) for k in ("required", "redundant", "unsolved")),
            str(sum(s["errors"].values())), str(s.get("unresolved", 0))] for c, s in adapt.items()]
    return "\n\n".join([
        "## AdaptMMBench: adaptive tool use",
        "Accuracy (%) per mode and domain; text = no tools, adaptive = the model may call zoom/rotate/contrast "
        "(executed by the system), oracle = gold evidence crops given (SPEC §4).",
        _table(["config", "mode", "n", "Acc", "by domain"], rows),
        "Mode selection: MCC of 'called a tool' against the model's own Tool-Required labels (ε = 1e-8).",
        _table(["config", "MCC", "TP / FP / TN / FN", "required / redundant / unsolved", "errors", "unresolved"], mcc),
        "Efficiency per item, the share of executed tool calls that ran without error, and key-step coverage "
        "(embedding match of the trajectory's steps against K at τ = 0.35).",
        _table(["config", "mode", "tokens", "steps", "tool calls", "turns", "tool calls that ran", "key-step coverage"], eff),
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
