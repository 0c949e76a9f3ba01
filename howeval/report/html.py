"""The HTML report next to report.md: the Markdown tables converted to HTML, with the PNG plots embedded.

``write_html_report(run_dir, metrics, rows)`` writes ``<run_dir>/plots/*.png`` and ``<run_dir>/index.html``.
The Markdown converter handles what ``howeval.report.tables`` emits (headings, pipe tables, block quotes,
paragraphs, ``**bold**``, ```code```); no extra dependency.
"""
from __future__ import annotations

import html
import re

from howeval.metrics.length import length_analysis
from howeval.report.plots import all_plots

_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}th,td{border:1px solid #ccc;padding:3px 8px}
th{background:#f2f2f2}td{text-align:right}td:first-child,td:nth-child(2){text-align:left}
blockquote{border-left:4px solid #ddd;margin:0;padding:.2em 1em;color:#555}img{max-width:100%}
.plots{display:flex;flex-wrap:wrap;gap:1em}.plots figure{margin:0}"""


def _inline(text: str) -> str:
    t = html.escape(text, quote=False)
    t = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", t)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", t)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def markdown_to_html(md: str) -> str:
    """Convert the report's Markdown subset to HTML.

    >>> markdown_to_html("# T\\n\\n| a | b |\\n|---|---|\\n| 1 | **2** |")
    '<h1>T</h1>\\n<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td><strong>2</strong></td></tr></tbody></table>'
    """
    out: list[str] = []
    lines = md.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif m := re.match(r"^(#{1,6})\s+(.*)$", line):
            n = len(m.group(1))
            out.append(f"<h{n}>{_inline(m.group(2))}</h{n}>")
            i += 1
        elif line.lstrip().startswith("|"):
            block = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                block.append(lines[i])
                i += 1
            head, body = block[0], [b for b in block[1:] if not re.match(r"^\s*\|[\s:|-]+\|\s*$", b)]
            out.append("<table><thead><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in _cells(head)) + "</tr></thead><tbody>"
                       + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in _cells(b)) + "</tr>" for b in body)
                       + "</tbody></table>")
        elif line.startswith(">"):
            quote = []
            while i < len(lines) and lines[i].startswith(">"):
                quote.append(lines[i][1:].strip())
                i += 1
            out.append("<blockquote>" + "<br>".join(_inline(q) for q in quote) + "</blockquote>")
        else:
            para = []
            while i < len(lines) and lines[i].strip() and not re.match(r"^(#|\||>)", lines[i].lstrip()):
                para.append(lines[i].strip())
                i += 1
            out.append("<p>" + _inline(" ".join(para)) + "</p>")
    return "\n".join(out)


def render_html(markdown: str, plots: list[str], title: str) -> str:
    """A standalone HTML page: plots first (relative ``plots/<name>`` paths), then the converted Markdown."""
    figs = "".join(f'<figure><img src="plots/{html.escape(p)}" alt="{html.escape(p)}"><figcaption>{html.escape(p)}'
                   "</figcaption></figure>" for p in plots)
    return (f"<!doctype html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{_CSS}</style></head><body>\n"
            + (f"<h2>Plots</h2><div class='plots'>{figs}</div>\n" if plots else "")
            + markdown_to_html(markdown) + "\n</body></html>\n")


def write_html_report(run_dir: str, metrics: dict, rows: list[dict], markdown: str | None = None) -> str:
    """Write ``<run_dir>/plots/*.png`` and ``<run_dir>/index.html``; returns the index URI.

    Args:
        run_dir: the run's output URI (local folder or fsspec URL).
        metrics: the ``metrics.json`` dict (``sweep_metrics``, optionally extended by ``howeval.metrics.stats``).
        rows: the joined rows the metrics came from (for the length analysis when ``metrics`` lacks it).
        markdown: the report text; default ``<run_dir>/report.md`` if it exists, else rendered from ``metrics``.
    """
    from howeval.store import fs_and_path, join, write_bytes, write_json

    length = metrics.get("length") or length_analysis(rows)
    plots = all_plots(metrics, length)
    for name, png in plots.items():
        write_bytes(join(run_dir, "plots", name), png)
    if markdown is None:
        fs, path = fs_and_path(join(run_dir, "report.md"))
        if fs.exists(path):
            with fs.open(path, "r") as f:
                markdown = f.read()
        else:
            from howeval.report.tables import render_report
            from howeval.metrics.stats import extra_sections

            markdown = render_report(metrics, title=f"Report: {metrics.get('run', {}).get('name', run_dir)}",
                                     extra_sections=extra_sections(metrics))
    title = (markdown.splitlines() or ["Report"])[0].lstrip("# ").strip() or "Report"
    uri = join(run_dir, "index.html")
    write_json(uri, render_html(markdown, sorted(plots), title))
    return uri
