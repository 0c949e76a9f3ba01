"""PatternRM's offline corpus, recipe v3 (issue 21): no label predictable from layout or length alone.

v2 drew layouts apart from labels and gave clean bases length-matched twins, yet a classifier on length and
layout features alone still beat the all-positive floor on its held-out split (cot 0.43 vs 0.38, rep 0.45
vs 0.34, con 0.40 vs 0.35): injections add text to model-response carriers that had no clean twin, and
``pr`` wrappers are short. v3 gives every carrier a clean twin in the same layout and of about the same
length, and :func:`balance_cells` masks labels so that each (layout, length, characters-per-line) cell has
the same positive rate per label.
"""
from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import pytest

from howeval.judges.patternrm.corpus import balance_cells, build_offline_corpus, load_bases
from howeval.judges.patternrm.head import corpus_fingerprint, default_sources
from howeval.judges.patternrm.layout import layout_of
from howeval.records import LABELS

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="module")
def bases(shared_data):
    src = default_sources()
    return load_bases(shared_data, src["human_labels"], src["demo_manifest"])


@pytest.fixture(scope="module")
def v3(bases):
    return build_offline_corpus(bases)


def _rec(text: str, rep: int | None, pr: int | None = 0) -> dict:
    return {"uid": text[:12], "question": "", "response": text, "labels": {"cot": 0, "rep": rep, "con": 0, "pr": pr},
            "origin": "t", "recipe": "t", "layout": layout_of(text)}


def test_balance_cells_gives_each_cell_the_same_positive_rate_and_only_masks():
    # rep is a length detector here: 8 of 10 long texts positive, 1 of 10 short ones
    short = [_rec(f"The sum {i} is {i + 1}.", int(i == 0)) for i in range(10)]
    long = [_rec(f"We add the values {i} and {i}.\nThe total is {2 * i}.\nThe answer is {2 * i} in all of the cases here.",
                 int(i < 8)) for i in range(10)]
    recs = short + long
    out = balance_cells(recs, n_chars=2, n_lines=1, seed=0)
    assert [r["response"] for r in out] == [r["response"] for r in recs]
    assert all(r["labels"]["rep"] is not None for r in recs)  # the input is not changed
    rates = {}
    for name, part in (("short", out[:10]), ("long", out[10:])):
        known = [r["labels"]["rep"] for r in part if r["labels"]["rep"] is not None]
        rates[name] = sum(known) / len(known)
    # global rate 9/20 = 0.45: short keeps its 1 positive and 1 of 9 negatives; long its 2 negatives and 2 of 8 positives
    assert rates == {"short": 0.5, "long": 0.5}
    masked = [r for r in out if r["labels"]["rep"] is None]
    assert len(masked) == 14 and all(r["balanced_out"] == ["rep"] for r in masked)
    assert all(r["labels"]["cot"] == 0 and r["labels"]["pr"] == 0 for r in out)  # one class only: nothing to balance
    # a label known only positive in a cell (pr here: positives only among the long texts) is masked there whole
    out2 = balance_cells([{**r, "labels": {**r["labels"], "pr": int(i >= 10)}} for i, r in enumerate(recs)], n_chars=2, n_lines=1)
    assert all(r["labels"]["pr"] is None for r in out2)


def test_corpus_v3_positive_rate_per_label_is_the_same_in_every_layout_length_cell(v3):
    """Per label, among the records where it is known: the builder's own cells (layout x 8 length bins x 3
    characters-per-line bins) hold the corpus rate to within one record, and an independent coarser grid
    (detected layout x length quintile, cells of >= 20 records) to within 0.06 (measured: cot 0.049, rep
    0.030, con 0.029, pr 0.056); v2 was off by 0.15-0.21 on the same grid."""
    from howeval.judges.patternrm.corpus import _cells

    cells = _cells(v3, 8, 3)
    lens = sorted(len(r["response"]) for r in v3)
    edges = [lens[int(len(lens) * q)] for q in (0.2, 0.4, 0.6, 0.8)]
    for k in LABELS:
        known = [i for i, r in enumerate(v3) if r["labels"][k] is not None]
        pos = [i for i in known if v3[i]["labels"][k] == 1]
        assert len(pos) > 250 and len(known) - len(pos) > 1200, (k, len(pos), len(known))
        rate = len(pos) / len(known)
        own, coarse = defaultdict(list), defaultdict(list)
        for i in known:
            own[cells[i]].append(v3[i]["labels"][k])
            n = len(v3[i]["response"])
            coarse[(layout_of(v3[i]["response"]), sum(n >= e for e in edges))].append(v3[i]["labels"][k])
        for c, ys in own.items():
            assert abs(sum(ys) - rate * len(ys)) <= 1.0, (k, c, sum(ys), len(ys), rate)
        dev = max(abs(sum(ys) / len(ys) - rate) for ys in coarse.values() if len(ys) >= 20)
        assert dev <= 0.06, (k, dev)
        assert len({lay for lay, _ in coarse}) == 4


def test_corpus_v3_passes_the_length_layout_shortcut_check_where_v2_failed(bases, v3):
    sys.path.insert(0, str(REPO / "bench"))
    from patternrm_calibration import shortcut_check, shortcut_other_splits

    s = shortcut_check(v3)
    assert s["passed"], s["labels"]
    for k, v in s["labels"].items():
        assert v["f1"] <= v["all_positive_f1"] + 0.02, (k, v)
    assert shortcut_other_splits(v3)["passed_splits"] == 4
    v2 = build_offline_corpus(bases, carrier_twins=False, balance=False)
    assert not shortcut_check(v2)["passed"]


def test_corpus_v3_flawed_records_have_a_clean_twin_of_the_same_layout_and_length(v3):
    """Each injected variant (any carrier) and each wrong chain is followed by its clean twin: same uid, all
    four labels 0 (or masked by the cell balance), the same layout as drawn, length ratio median ~1.06 (1,193 of 1,304 have one; the
    missing are carriers whose item has no gold solution with a computation to keep)."""
    flawed = [i for i, r in enumerate(v3) if r["recipe"] != "twin" and (r["recipe"] != "none" or r["origin"] == "gsm8k_wrong_chain")]
    ratios, same_layout = [], 0
    for i in flawed:
        t = v3[i + 1] if i + 1 < len(v3) else None
        if t is None or t["recipe"] != "twin" or t["uid"] != v3[i]["uid"]:
            continue
        # clean: every label 0, unless the cell balance masked it (then listed in balanced_out)
        assert all(t["labels"][k] == 0 or (t["labels"][k] is None and k in t["balanced_out"]) for k in LABELS), t
        ratios.append(len(t["response"]) / len(v3[i]["response"]))
        same_layout += layout_of(t["response"]) == layout_of(v3[i]["response"])
    assert len(ratios) >= 0.9 * len(flawed), (len(ratios), len(flawed))
    ratios.sort()
    assert 0.95 <= ratios[len(ratios) // 2] <= 1.15
    assert sum(0.7 <= x <= 1.4 for x in ratios) >= 0.85 * len(ratios)
    assert same_layout >= 0.9 * len(ratios)
    # the model-response carriers, unknown-labelled, now have clean twins too (v2: none)
    assert sum(1 for r in v3 if r["recipe"] == "twin" and r["origin"] == "model_response") > 200


def test_corpus_is_deterministic_and_fingerprint_covers_labels(bases, v3):
    again = build_offline_corpus(bases)
    assert corpus_fingerprint(again) == corpus_fingerprint(v3)
    flipped = [dict(r, labels={**r["labels"], "rep": 0 if r["labels"]["rep"] == 1 else 1}) if i == 0 else r for i, r in enumerate(v3)]
    assert corpus_fingerprint(flipped) != corpus_fingerprint(v3)
