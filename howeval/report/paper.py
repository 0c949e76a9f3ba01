"""The PatternEval paper's tables from ``metrics.json``: the main table and the per-category table.

- **Main table** (the paper's Table 1 layout): one row per config; Acc, Trigger, the four label rates
  (CoT, Rep, Con, PR) and the family Trigger (VG, OS, KR) each in NT and T, then Δacc and Δpat
  (SPEC section 1). Markdown and LaTeX show percentages with one decimal; the CSV has every value in
  percent (points for the Δs) to 4 decimals, plus the 95% bootstrap interval of Acc, Trigger, Δacc and
  Δpat (``*_lo``, ``*_hi``; ``howeval.metrics.stats``), the row counts and how images reached the config.
- **Per-category table** (the paper's Appendix B layout): rows (config, mode), one column per category
  (the paper's nine in its order, then any other category of the data), Trigger and Acc as two blocks.

A value that does not exist (no rows, no verdict) is "–" in Markdown and LaTeX and empty in the CSV;
it is never 0. ``write_tables`` writes ``tables/patterneval.{md,csv,tex}`` and
``tables/patterneval_categories.{md,csv,tex}`` under a run.
"""
from __future__ import annotations

import csv
import io

from howeval.records import FAMILIES, LABELS, MODES

PAPER_CATEGORIES = (("ood_perception", "VG"), ("content_recognition", "VG"), ("grounding", "VG"),
                    ("factuality", "VG"), ("ocr", "OS"), ("chart_understanding", "OS"), ("stem", "KR"),
                    ("knowledge", "KR"), ("general_reasoning", "KR"))
"""The paper's nine categories in its order, with their family (SPEC section 1)."""

LABEL_HEADERS = {"cot": "CoT", "rep": "Rep", "con": "Con", "pr": "PR"}
_MISSING = {"None", "", "null"}


def _pct(x: float | None) -> float | None:
    return None if x is None else round(100.0 * x, 4)


def _fmt(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "–"
    return f"{x:+.1f}" if signed else f"{x:.1f}"


def families_of(metrics: dict) -> list[str]:
    """VG, OS, KR, then any other family present in the metrics (missing/None families left out)."""
    seen = {f for c in metrics["configs"].values() for m in MODES if m in c for f in c[m]["by_family"]}
    return list(FAMILIES) + sorted(seen - set(FAMILIES) - _MISSING)


def categories_of(metrics: dict) -> list[str]:
    """The categories present in any config, the paper's nine first in its order, then the rest sorted."""
    seen = {k for c in metrics["configs"].values() for m in MODES if m in c for k in c[m]["by_category"]} - _MISSING
    paper = [c for c, _ in PAPER_CATEGORIES if c in seen]
    return paper + sorted(seen - set(paper))


def main_table(metrics: dict, vision: dict[str, str] | None = None) -> list[dict]:
    """One dict per config (sorted as in ``metrics``) with the main table's values.

    Keys: ``config``, ``vision`` (how images reached the config, e.g. "sent"; "" when unknown),
    ``n_<mode>``, ``scored_<mode>`` (Acc's denominator), ``labelled_<mode>`` (Trigger's denominator),
    ``acc_<mode>`` (+ ``_lo``, ``_hi``), ``trigger_<mode>`` (+ ``_lo``, ``_hi``), ``acc_all_n_<mode>`` and
    ``trigger_all_n_<mode>`` (the paper's form over all n prompts: no verdict = wrong, no labels = not
    triggered), ``<label>_<mode>`` for cot/rep/con/pr, ``trigger_<family>_<mode>``, ``delta_acc``,
    ``delta_pat`` (+ ``_lo``, ``_hi``). Rates in percent, Δs in points, None where there is no value.
    """
    vision = vision or {}
    out = []
    for name, c in metrics["configs"].items():
        row: dict = {"config": name, "vision": vision.get(name, "")}
        for m in MODES:
            x = c.get(m) or {}
            row[f"n_{m}"] = x.get("n")
            row[f"scored_{m}"] = x.get("n_scored")
            row[f"labelled_{m}"] = x.get("n_labeled")
            for key in ("acc", "trigger"):
                row[f"{key}_{m}"] = _pct(x.get(key))
                ci = x.get(f"{key}_ci") or (None, None)
                row[f"{key}_{m}_lo"], row[f"{key}_{m}_hi"] = _pct(ci[0]), _pct(ci[1])
                row[f"{key}_all_n_{m}"] = _pct(x.get(f"{key}_all_n"))
            for k in LABELS:
                row[f"{k}_{m}"] = _pct((x.get("labels") or {}).get(k))
        for f in families_of(metrics):
            for m in MODES:
                row[f"trigger_{f}_{m}"] = _pct(((c.get(m) or {}).get("by_family") or {}).get(f, {}).get("trigger"))
        for key in ("delta_acc", "delta_pat"):
            row[key] = _pct(c.get(key))
            ci = c.get(f"{key}_ci") or (None, None)
            row[f"{key}_lo"], row[f"{key}_hi"] = _pct(ci[0]), _pct(ci[1])
        out.append(row)
    return out


def _main_groups(metrics: dict) -> list[tuple[str, str]]:
    """(header, key prefix) of the NT/T column pairs, in the paper's order."""
    return ([("Acc", "acc"), ("Trigger", "trigger")] + [(LABEL_HEADERS[k], k) for k in LABELS]
            + [(f, f"trigger_{f}") for f in families_of(metrics)])


def _n(row: dict) -> str:
    a, b = row.get("n_NT"), row.get("n_T")
    return str(a if a == b or b is None else (b if a is None else f"{a}/{b}"))


_DENOM = {"acc": "scored", "trigger": "labelled"}
_DENOM_WORDS = {"acc": "with a verdict", "trigger": "labelled"}


def _cell(r: dict, prefix: str, m: str, tex: bool = False) -> str:
    """A rate cell; Acc and Trigger carry their denominator: ``45.0 (over 40 of 42 with a verdict)`` (the rows
    the rate is over, of n; never "40 of 42 correct")."""
    v = _fmt(r[f"{prefix}_{m}"])
    if prefix not in _DENOM or v == "–":
        return v
    if r.get(f"{_DENOM[prefix]}_{m}") is None:  # metrics written before the denominators were kept
        return v
    d = f"over {r[f'{_DENOM[prefix]}_{m}']} of {r[f'n_{m}']} {_DENOM_WORDS[prefix]}"
    return rf"{v}\,{{\scriptsize ({d})}}" if tex else f"{v} ({d})"


def _main_columns(metrics: dict) -> list[tuple[str, str]]:
    """(header, key prefix) of every NT/T column pair: the paper's groups with the all-N forms after Acc
    and Trigger."""
    groups = _main_groups(metrics)
    return groups[:2] + [("Acc all-N", "acc_all_n"), ("Trigger all-N", "trigger_all_n")] + groups[2:]


DENOMINATOR_NOTE = ("Acc is over the responses with a verdict ('over 28 of 42 with a verdict': 28 of the 42 had one, "
                    "not 28 correct), Trigger over the responses "
                    "with labels; Acc all-N and Trigger all-N are the paper's form over all n prompts, with a response "
                    "without a verdict (unresolved, engine error) counted as wrong and one without labels (truncated, "
                    "judge or engine error) as not triggered.")


def main_markdown(metrics: dict, vision: dict[str, str] | None = None) -> str:
    """The main table as a Markdown pipe table (percent, one decimal; family columns are Trigger); Acc and
    Trigger show their denominators, and their all-N forms follow (:data:`DENOMINATOR_NOTE`)."""
    rows = main_table(metrics, vision)
    cols = _main_columns(metrics)
    head = ["config", "images", "n"] + [f"{h} {m}" for h, _ in cols for m in MODES] + ["Δacc", "Δpat"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|"]
    for r in rows:
        cells = [r["config"], r["vision"] or "–", _n(r)] + [_cell(r, p, m) for _, p in cols for m in MODES]
        cells += [_fmt(r["delta_acc"], True), _fmt(r["delta_pat"], True)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + ["", DENOMINATOR_NOTE])


def main_csv(metrics: dict, vision: dict[str, str] | None = None) -> str:
    """The main table as CSV: every key of :func:`main_table` as a column (percent / points), 95% CIs included."""
    return _csv(main_table(metrics, vision))


def _csv(rows: list[dict]) -> str:
    """Rows as CSV, columns in the first row's key order, None as an empty cell; "" for no rows."""
    if not rows:
        return ""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: "" if v is None else v for k, v in r.items()})
    return buf.getvalue()


_TEX_ESCAPE = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
               "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def tex_escape(text: str) -> str:
    r"""Escape LaTeX's special characters. ``tex_escape("a_b & 5%") == r"a\_b \& 5\%"``."""
    return "".join(_TEX_ESCAPE.get(ch, ch) for ch in str(text))


def main_tex(metrics: dict, vision: dict[str, str] | None = None) -> str:
    """The main table as a LaTeX ``tabular`` (booktabs: ``\\usepackage{booktabs}``), NT/T under each metric."""
    rows = main_table(metrics, vision)
    groups = _main_columns(metrics)
    ncol = 3 + 2 * len(groups) + 2
    top = " & & & " + " & ".join(rf"\multicolumn{{2}}{{c}}{{{tex_escape(h)}}}" for h, _ in groups) + r" & & \\"
    rules = " ".join(rf"\cmidrule(lr){{{4 + 2 * i}-{5 + 2 * i}}}" for i in range(len(groups)))
    sub = r"Config & Images & $n$ & " + " & ".join(m for _ in groups for m in MODES) + \
        r" & $\Delta_{\mathrm{acc}}$ & $\Delta_{\mathrm{pat}}$ \\"
    body = []
    for r in rows:
        cells = [tex_escape(r["config"]), tex_escape(r["vision"] or "–"), _n(r)]
        cells += [_cell(r, p, m, tex=True) for _, p in groups for m in MODES]
        cells += [_fmt(r["delta_acc"], True), _fmt(r["delta_pat"], True)]
        body.append(" & ".join(cells) + r" \\")
    return "\n".join([r"% PatternEval main table (howeval): rates in %, family columns are Trigger; needs booktabs",
                      "% " + DENOMINATOR_NOTE,
                      r"\begin{tabular}{ll" + "r" * (ncol - 2) + "}", r"\toprule", top, rules, sub, r"\midrule",
                      *body, r"\bottomrule", r"\end{tabular}", ""])


def category_table(metrics: dict) -> tuple[list[str], list[dict]]:
    """``(categories, rows)``: one row per (config, mode) with ``config``, ``mode`` and, per category,
    ``{cat}_trigger``, ``{cat}_acc`` (percent or None), ``{cat}_n`` (rows; 0 when the config has none) and
    the denominators ``{cat}_trigger_n`` (labelled rows) and ``{cat}_acc_n`` (scored rows)."""
    cats = categories_of(metrics)
    rows = []
    for name, c in metrics["configs"].items():
        for m in MODES:
            if m not in c:
                continue
            row: dict = {"config": name, "mode": m}
            for k in cats:
                x = c[m]["by_category"].get(k) or {}
                row[f"{k}_trigger"], row[f"{k}_acc"], row[f"{k}_n"] = _pct(x.get("trigger")), _pct(x.get("acc")), x.get("n", 0)
                row[f"{k}_trigger_n"], row[f"{k}_acc_n"] = x.get("n_labeled", 0), x.get("n_scored", 0)
            rows.append(row)
    return cats, rows


def _family(cat: str) -> str:
    return dict(PAPER_CATEGORIES).get(cat, "other")


def category_markdown(metrics: dict) -> str:
    """The per-category table in Markdown: a Trigger block and an Acc block (percent; '–' = no rows)."""
    cats, rows = category_table(metrics)
    if not cats:
        return "No category labels in the data."
    out = []
    for key, title in (("trigger", "Trigger (%)"), ("acc", "Acc (%)")):
        head = ["config", "mode"] + [f"{c.replace('_', ' ')} ({_family(c)})" for c in cats]
        out += [f"**{title} by category**", "", "| " + " | ".join(head) + " |",
                "|---|---|" + "---:|" * len(cats)]
        out += ["| " + " | ".join([r["config"], r["mode"]] + [_cat_cell(r, c, key) for c in cats]) + " |" for r in rows]
        out.append("")
    out.append("Each cell: the rate (%) and, in brackets, its denominator: the responses of that config, mode and "
               "category with labels (Trigger) or with a verdict (Acc). A rate over a handful of responses moves by "
               "whole tens of points with one response.")
    return "\n".join(out)


def _cat_cell(r: dict, c: str, key: str, tex: bool = False) -> str:
    v = _fmt(r[f"{c}_{key}"])
    if v == "–":
        return v
    d = r[f"{c}_{key}_n"]
    return rf"{v}\,{{\scriptsize ({d})}}" if tex else f"{v} ({d})"


def category_csv(metrics: dict) -> str:
    """The per-category table as CSV: config, mode, then ``{cat}_trigger``, ``{cat}_acc``, ``{cat}_n``."""
    return _csv(category_table(metrics)[1])


def category_tex(metrics: dict) -> str:
    """The per-category table in LaTeX: two tabulars (Trigger, Acc), categories grouped under their family."""
    cats, rows = category_table(metrics)
    fams: list[tuple[str, int]] = []
    for c in cats:
        f = _family(c)
        if fams and fams[-1][0] == f:
            fams[-1] = (f, fams[-1][1] + 1)
        else:
            fams.append((f, 1))
    out = [r"% PatternEval per-category table (howeval): rates in %, denominators in brackets "
           r"(labelled rows for Trigger, scored rows for Acc); needs booktabs"]
    for key, title in (("trigger", "Trigger"), ("acc", "Acc")):
        top, rules, col = " & ", [], 3
        for f, k in fams:
            top += rf" & \multicolumn{{{k}}}{{c}}{{{tex_escape(f)}}}"
            rules.append(rf"\cmidrule(lr){{{col}-{col + k - 1}}}")
            col += k
        out += [rf"% {title} (%)", r"\begin{tabular}{ll" + "r" * len(cats) + "}", r"\toprule", top + r" \\",
                " ".join(rules), "Config & Mode & " + " & ".join(tex_escape(c.replace("_", " ")) for c in cats) + r" \\",
                r"\midrule"]
        out += [" & ".join([tex_escape(r["config"]), r["mode"]] + [_cat_cell(r, c, key, tex=True) for c in cats]) + r" \\"
                for r in rows]
        out += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(out)


def write_tables(run_dir: str, metrics: dict, vision: dict[str, str] | None = None) -> list[str]:
    """Write ``<run_dir>/tables/patterneval.{md,csv,tex}`` and ``patterneval_categories.{md,csv,tex}``.

    Returns the URIs written. ``vision``: config -> how images reached it (``howeval.report.meta``).
    """
    from howeval.store import join, write_text

    files = {"patterneval.md": main_markdown(metrics, vision) + "\n", "patterneval.csv": main_csv(metrics, vision),
             "patterneval.tex": main_tex(metrics, vision), "patterneval_categories.md": category_markdown(metrics) + "\n",
             "patterneval_categories.csv": category_csv(metrics), "patterneval_categories.tex": category_tex(metrics)}
    uris = []
    for name, text in files.items():
        uri = join(run_dir, "tables", name)
        write_text(uri, text)
        uris.append(uri)
    return uris
