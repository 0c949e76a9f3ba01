"""howeval.report.html: Markdown through the markdown package, figures embedded, no external assets."""
from __future__ import annotations

from howeval.report.html import markdown_to_html, render_html


def test_markdown_tables_and_inline():
    h = markdown_to_html("# T\n\n| a | b |\n|---|---|\n| 1 | **2** |\n\n> note `x`")
    assert "<h1>T</h1>" in h and '<div class="tbl"><table>' in h and "<td><strong>2</strong></td>" in h
    assert "<blockquote>" in h and "<code>x</code>" in h


def test_page_embeds_figures_and_skips_missing_ones():
    doc = [("md", "# Title"), ("figure", "a.png", "Figure 1. A"), ("figure", "b.png", "Figure 2. B")]
    page = render_html(doc, {"a.png": b"\x89PNG\r\n\x1a\nxx"}, "Title")
    assert "<title>Title</title>" in page and page.count("<figure") == 1
    assert 'src="data:image/png;base64,iVBORw0KGgp4eA=="' in page and "<figcaption>Figure 1. A" in page


def test_model_text_in_fenced_blocks_is_shown_verbatim():
    from howeval.report.compare import _quote

    h = markdown_to_html("x\n\n" + _quote("<script>alert(1)</script> **not bold**"))
    assert "<script>" not in h and "&lt;script&gt;" in h and "**not bold**" in h
