"""The run report as one ordered document, written as ``report.md`` and as ``index.html``.

Order (what a reader of the PatternEval paper looks for first): title; run metadata (configs and how
images reached each, judges, data, dates); notes; the main table; the per-category table; the figures
with captions; the paired gaps, intervals and length analysis; other benchmarks (CRYSTAL, AdaptMMBench)
and judge agreement; then the per-config detail; skipped rows.

A document is a list of blocks: ``("md", text)`` or ``("figure", file_name, caption)``; ``to_markdown``
turns it into ``report.md`` (figures as image links to ``plots/``), ``howeval.report.html`` into the page.
"""
from __future__ import annotations

from howeval.report.paper import category_markdown, main_markdown
from howeval.report.tables import (
    ACC_NOTE,
    GAPS_NOTE,
    _table,
    bad_rows_section,
    breakdown_table,
    gaps_table,
    intervals_section,
    length_section,
    mode_table,
    overview_table,
    thinking_section,
)

FIGURE_CAPTIONS = {
    "radar_NT.png": "Non-thinking Trigger (%) over the task categories, every config overlaid (paper Fig. 4), on "
                    "the same radial scale as the thinking radar; n under each category = its labelled responses. "
                    "A category a config has no labelled response in is left open, not drawn as 0.",
    "radar_T.png": "Thinking Trigger (%) over the task categories, every config overlaid, on the non-thinking "
                   "radar's scale.",
    "length_scatter.png": "Mean response length vs Trigger per config x correctness aggregate, NT and T "
                          "(paper Fig. 5), axes fitted to the data. A config's correct and wrong points are joined; "
                          "Pearson r per mode in the legend (not pooled across modes); unresolved aggregates are open "
                          "triangles, outside r.",
    "length_sextiles.png": "Trigger by response length per mode x correctness group (paper Fig. 6), on common length "
                           "edges (the sextiles of all responses) so a bin covers the same lengths in every group; "
                           "colour = correctness, line style = mode; n per group in the legend; groups too small to "
                           "cut are named in the title, not drawn.",
}


def metadata_section(meta: dict) -> str:
    """Markdown: the run's metadata (``howeval.report.meta.run_metadata``) as a list and a configs table."""
    d, j, dates = meta["data"], meta["judges"], meta["dates"]
    when = (f"responses written {dates['responses_from']} – {dates['responses_to']}; "
            if dates.get("responses_from") else "") + f"report written {dates['report']}"
    lines = ["## Run", "",
             f"- **Run**: `{meta['name']}` at `{meta['output_uri']}`",
             f"- **Data**: {'; '.join(d['benchmarks'])}; {d['n_samples']} prompts",
             f"- **Judges**: pattern {', '.join(j['pattern'])} (primary: `{j['primary']}`); verifier {j['verifier']}",
             f"- **Dates**: {when}", ""]
    rows = []
    for c in meta["configs"]:
        im = c.get("images") or {}
        seen = f"{im.get('with_images', 0)}/{im.get('responses', 0)} responses" if im else "–"
        rows.append([c["name"], c["engine"], f"`{c['model']}`", c["vision"], seen, ", ".join(c["modes"]),
                     " / ".join(f"{k} {v}" for k, v in c["max_tokens"].items())])
    lines.append(_table(["config", "engine", "model", "images", "responses that received images", "modes",
                         "max tokens"], rows))
    lines += ["", "Images: **sent** = the engine received the images; **OCR text** = the images' OCR text was "
                  "sent instead; **none** = no image reached the model (text-only)."]
    return "\n".join(lines)


def build_document(metrics: dict, *, title: str, meta: dict | None = None, vision: dict[str, str] | None = None,
                   notes: list[str] | None = None, figures: list[str] = (), extra_sections: list[str] = (),
                   bad_rows: list[dict] | None = None) -> list[tuple]:
    """The report's blocks in reading order (see the module docstring). ``figures``: file names under ``plots/``."""
    doc: list[tuple] = [("md", f"# {title}")]
    if meta:
        doc.append(("md", metadata_section(meta)))
    if notes:
        doc.append(("md", "\n\n".join(f"> {n}" for n in notes)))
    glance = overview_table(metrics)
    if glance:
        doc.append(("md", "## The three benchmarks side by side\n\nPatternEval Acc and Trigger (%), CRYSTAL Ordered "
                    "Match F1 (%, step-level reasoning), AdaptMMBench accuracy (%) over every item in text / adaptive / "
                    "oracle mode (the paper's figure: an answer without a verdict counts as not correct) and "
                    "the MCC of its tool-use decisions. Details in their sections below.\n\n" + glance))
    doc.append(("md", "## PatternEval: main table\n\n"
                "One row per config, in % (the paper's main-table layout): Acc, Trigger, the four label rates and the "
                "family Trigger (VG / OS / KR), each NT and T, then the paired gaps Δacc = Acc_T − Acc_NT and "
                "Δpat = Trigger_NT − Trigger_T in points, over the prompts both modes have a verdict (labels) for, so a Δ "
                "can differ from the difference of the two columns. '–' = no value. The same table with 95% intervals is in "
                "`tables/patterneval.csv` (and `.tex`).\n\n" + main_markdown(metrics, vision)))
    doc.append(("md", thinking_section(metrics)))
    doc.append(("md", "## PatternEval by category\n\nThe paper's Appendix B layout; also in "
                "`tables/patterneval_categories.{md,csv,tex}`.\n\n" + category_markdown(metrics)))
    if figures:
        doc.append(("md", "## Figures"))
        for i, f in enumerate(figures, 1):
            doc.append(("figure", f, f"Figure {i}. {FIGURE_CAPTIONS.get(f, f)}"))
    doc.append(("md", "## Paired gaps (T vs NT on the same prompts)\n\n" + GAPS_NOTE + "\n\n" + gaps_table(metrics)))
    if "intervals" in metrics:
        doc.append(("md", intervals_section(metrics)))
    if "length" in metrics:
        doc.append(("md", length_section(metrics["length"])))
    for sec in extra_sections:
        doc.append(("md", sec))
    detail = ["## Per-config detail", "", ACC_NOTE, "", mode_table(metrics)]
    for name in metrics["configs"]:
        detail += ["", f"### {name}", "", "By family:", "", breakdown_table(metrics, "by_family", name), "",
                   "By category:", "", breakdown_table(metrics, "by_category", name)]
    doc.append(("md", "\n".join(detail)))
    if bad_rows:
        doc.append(("md", bad_rows_section(bad_rows)))
    return doc


def to_markdown(doc: list[tuple]) -> str:
    """``report.md``: the blocks joined, figures as ``![caption](plots/<file>)`` with the caption below."""
    out = []
    for block in doc:
        if block[0] == "md":
            out.append(block[1])
        else:
            _, f, cap = block
            out.append(f"![{f}](plots/{f})\n\n*{cap}*")
    return "\n\n".join(out) + "\n"
