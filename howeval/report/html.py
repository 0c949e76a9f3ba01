"""The HTML report page (``index.html``): the report document converted with the ``markdown`` package.

Self-contained: the CSS is inline and every figure is embedded as a PNG data URL (the same PNGs are
also written under ``plots/``), so the page opens from disk or as an e-mail attachment with no
external asset. Wide tables scroll sideways inside their own box, their first column (the config) kept in
view (sticky), so a phone-width window shows which row each value belongs to.
"""
from __future__ import annotations

import base64
import html

import markdown as _markdown

_CSS = """body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1400px;margin:1.5em auto;
padding:0 1.2em;color:#1d1d1f;line-height:1.45}
h1{font-size:1.7em;border-bottom:2px solid #444;padding-bottom:.2em}h2{margin-top:1.8em;border-bottom:1px solid #ddd;
padding-bottom:.15em}h3{margin-top:1.4em}
.tbl{overflow-x:auto;margin:.4em 0 1.2em}table{border-collapse:collapse;font-size:12.5px}
th,td{border:1px solid #d0d0d0;padding:3px 6px}td{white-space:nowrap}th{background:#f0f2f5;vertical-align:bottom}
td{text-align:right;font-variant-numeric:tabular-nums}td:first-child,td:nth-child(2){text-align:left}
tr:nth-child(even) td{background:#fafbfc}
td:first-child,th:first-child{position:sticky;left:0;z-index:1;background:#f0f2f5}
blockquote{border-left:4px solid #c9d3e0;background:#f6f8fb;margin:.6em 0;padding:.4em 1em;color:#333}
blockquote p{margin:.2em 0}pre{white-space:pre-wrap;background:#f6f8fb;border:1px solid #e3e6ea;padding:.5em .8em;
font-size:12.5px}pre code{background:none;padding:0}code{background:#f2f2f2;padding:0 3px;border-radius:3px;font-size:.92em}
.figs{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}
figure{flex:1 1 560px;margin:0 0 1em;padding:.6em;border:1px solid #e3e3e3;border-radius:4px;background:#fff}
figure.wide{flex-basis:100%}figure img{max-width:100%;height:auto;display:block;margin:0 auto}
figcaption{font-size:13px;color:#444;margin-top:.5em}ul{padding-left:1.3em}"""


def markdown_to_html(md: str) -> str:
    """Convert Markdown (pipe tables included) to HTML with the ``markdown`` package; tables are wrapped in
    a ``<div class="tbl">`` so wide ones scroll.

    >>> markdown_to_html("| a | b |\\n|---|---|\\n| 1 | **2** |").count("<strong>2</strong>")
    1
    """
    out = _markdown.markdown(md, extensions=["tables", "sane_lists", "fenced_code"], output_format="html")
    return out.replace("<table>", '<div class="tbl"><table>').replace("</table>", "</table></div>")


def png_data_url(png: bytes) -> str:
    """``data:image/png;base64,...`` for PNG bytes."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _aspect(png: bytes) -> float:
    """Width / height of a PNG from its IHDR chunk (1.0 when the header is not a PNG's)."""
    if png[:8] != b"\x89PNG\r\n\x1a\n" or len(png) < 24:
        return 1.0
    w, h = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    return w / h if h else 1.0


def render_html(doc: list[tuple], pngs: dict[str, bytes], title: str) -> str:
    """A standalone page from the report blocks of ``howeval.report.page.build_document``.

    ``pngs``: file name -> PNG bytes for the figure blocks (a figure without bytes is left out).
    """
    body: list[str] = []
    figs: list[str] = []  # consecutive figures share one flex row (two radars side by side)
    for block in list(doc) + [("md", "")]:
        if block[0] == "md":
            if figs:
                body.append('<div class="figs">' + "".join(figs) + "</div>")
                figs = []
            if block[1]:
                body.append(markdown_to_html(block[1]))
            continue
        _, name, caption = block
        if name not in pngs:
            continue
        wide = ' class="wide"' if _aspect(pngs[name]) > 2.0 else ""
        figs.append(f'<figure id="{html.escape(name)}"{wide}><img src="{png_data_url(pngs[name])}" '
                    f'alt="{html.escape(caption)}"><figcaption>{html.escape(caption)} '
                    f'<code>plots/{html.escape(name)}</code></figcaption></figure>')
    return (f"<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
