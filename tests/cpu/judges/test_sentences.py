"""Tests for howeval.judges.sentences: the public text helpers the rule judge uses (doctests and edge cases)."""
from __future__ import annotations

import doctest

from howeval.judges import sentences
from howeval.judges.sentences import clip_text, mask_template, norm_sentence, word_tokens


def test_doctests():
    res = doctest.testmod(sentences)
    assert res.attempted > 0 and res.failed == 0


def test_helpers_on_edge_cases():
    assert word_tokens("") == [] and norm_sentence("   ") == "" and mask_template("$x$") == ""
    assert clip_text("short") == "short" and len(clip_text("x" * 500)) == 240
    assert mask_template("Step 3: add 4 and 5.") == mask_template("Step 7: add 1 and 2.")  # one template
