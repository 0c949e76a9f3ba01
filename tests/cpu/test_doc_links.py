"""Every relative link of README.md and docs/*.md resolves inside the repository (a public clone has no
``../shared``: a link there, or to a moved file, would be dead for its readers)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(md: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown file (lower case, punctuation dropped, spaces to '-')."""
    out = set()
    for line in md.read_text().splitlines():
        m = re.match(r"#+\s+(.*)", line)
        if m:
            text = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower().replace("`", ""))
            out.add(text.replace(" ", "-"))
    return out


def relative_links(md: Path) -> list[str]:
    """The links of ``md`` that are not URLs or mail addresses, code spans left out."""
    text = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", md.read_text(), flags=re.S))
    return [t for t in LINK.findall(text) if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


@pytest.mark.parametrize("md", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve_inside_the_repository(md):
    dead = []
    for target in relative_links(md):
        path, _, anchor = target.partition("#")
        dest = (md.parent / path).resolve() if path else md
        if REPO not in dest.parents and dest != REPO:
            dead.append(f"{target} (outside the repository)")
        elif not dest.exists():
            dead.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            dead.append(f"{target} (no heading #{anchor} in {dest.name})")
    assert not dead, f"{md.relative_to(REPO)}: dead links: {dead}"


def test_the_checker_finds_a_dead_link(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("[spec](../shared/SPEC.md) and [ok](https://example.com) `[not](a-link)`\n")
    assert relative_links(md) == ["../shared/SPEC.md"]
