"""PatternRM text layout (howeval.judges.patternrm.layout) and the v2 corpus recipe's layout/length balance."""
from __future__ import annotations

import pytest

from howeval.judges.patternrm.layout import LAYOUTS, layout_of, plain_text, render

TEXTS = [
    "Step 1: The price of the car in 2007 is $x.\nStep 2: In 2008 it is 0.79x.\nStep 3: The answer is: 15000",
    "### Solution\n- There are 3 red and 2 blue.\n- 3 + 2 = 5\n**The answer is 5.**",
    "We add them.\n```python\nprint(3 + 4)\n7 = 3 + 4\n```\nSo the answer is \\boxed{7}.",
    "Wait, let me re-check. Mr. Smith has 4 apples. He eats 1. 4 - 1 = 3. The answer is 3.",
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_every_layout_has_the_same_plain_text(text):
    base = plain_text(text)
    for lay in LAYOUTS:
        out = render(text, lay)
        assert plain_text(out) == base, (lay, out)
        if base:
            assert layout_of(out) == lay or (lay == "code" and "=" not in base), (lay, out)


def test_plain_text_strips_layout_only():
    assert plain_text("Step 12: Add **2** and 2.") == "Add 2 and 2."
    assert plain_text("- 3 - 1 = 2") == "3 - 1 = 2"  # a bullet goes, the minus stays
    assert plain_text("-5 is negative.") == "-5 is negative."
    with pytest.raises(TypeError):
        plain_text(None)
    with pytest.raises(ValueError, match="layout 'html'"):
        render("x", "html")


def test_corpus_v2_layouts_do_not_follow_labels_and_clean_twins_exist():
    """Issue 21: v1 wrote every pr positive (MR-GSM8K wrong chains) as ``Step N:``; v2 draws the layout apart
    from the labels, and every injected variant of a clean base has a clean twin of about its length."""
    from howeval.judges.patternrm.corpus import build_offline_corpus, load_bases
    from howeval.judges.patternrm.head import default_sources

    src = default_sources()
    if not (__import__("pathlib").Path(src["data_root"]) / "steps").is_dir():
        pytest.skip(f"real samples not found at {src['data_root']} (set HOWEVAL_SHARED_DATA)")
    bases = load_bases(src["data_root"], src["human_labels"], src["demo_manifest"])
    recs = build_offline_corpus(bases)
    for k in ("cot", "rep", "con", "pr"):
        pos = [r for r in recs if r["labels"][k] == 1]
        neg = [r for r in recs if r["labels"][k] == 0]
        share = lambda rs: sum(r["layout"] == "numbered" for r in rs) / len(rs)  # noqa: E731
        assert abs(share(pos) - share(neg)) < 0.12, (k, share(pos), share(neg))
    v1 = build_offline_corpus(bases, layouts=False, twins=False, carrier_twins=False, balance=False)
    pr1 = [r for r in v1 if r["labels"]["pr"] == 1]
    assert sum(layout_of(r["response"]) == "numbered" for r in pr1) / len(pr1) > 0.3  # the v1 shortcut
    twins = [r for r in recs if r["recipe"] == "twin"]
    assert len(twins) > 300 and all(not any(r["labels"].values()) for r in twins)
