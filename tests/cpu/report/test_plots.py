"""howeval.report.plots: overlaid radars (missing categories open, not 0) and the length figures."""
from __future__ import annotations

import math

from howeval.metrics.length import length_analysis
from howeval.report.plots import all_plots, radar_values

PNG = b"\x89PNG\r\n\x1a\n"


def _m(trig_by_cat):
    return {"by_category": {c: {"n": 1, "trigger": t, "acc": 1.0} for c, t in trig_by_cat.items()}}


def test_radar_values_leave_missing_categories_open():
    metrics = {"configs": {"a": {"NT": _m({"x": 0.5, "y": 0.0, "z": 0.25})},
                           "b": {"NT": _m({"x": 1.0, "y": None}), "T": _m({"x": 0.0})}}}
    v = radar_values(metrics, "NT", ["x", "y", "z"])
    assert v["a"] == [50.0, 0.0, 25.0]
    assert v["b"][0] == 100.0 and math.isnan(v["b"][1]) and math.isnan(v["b"][2])  # never 0
    assert list(radar_values(metrics, "T", ["x", "y", "z"])) == ["b"]


def test_all_plots_writes_the_four_figures():
    metrics = {"configs": {"a": {"NT": _m({"x": 0.5, "y": 0.0, "z": 0.25}), "T": _m({"x": 0.1, "y": 0.2, "z": 0.3})}}}
    rows = [{"sample_id": str(i), "config": "a", "mode": m, "correct": [True, False, None][i % 3],
             "cot": i % 2 == 0, "rep": False, "con": False, "pr": False, "response": "w " * (i + 1)}
            for i in range(36) for m in ("NT", "T")]  # 12 rows per mode x correctness group: enough to bin
    out = all_plots(metrics, length_analysis(rows), ["x", "y", "z"])
    assert sorted(out) == ["length_scatter.png", "length_sextiles.png", "radar_NT.png", "radar_T.png"]
    assert all(png[:8] == PNG for png in out.values())
    assert all_plots(metrics, length_analysis([]), ["x", "y"]) == {}  # < 3 categories, no rows: nothing drawn


def test_radars_share_one_radial_scale_and_scatter_axes_fit_the_data():
    from howeval.report.plots import _fitted, radar_top

    metrics = {"configs": {"a": {"NT": _m({"x": 0.08, "y": 0.0, "z": 0.05}), "T": _m({"x": 0.27, "y": 0.2, "z": 0.3})}}}
    assert radar_top(metrics, ["x", "y", "z"]) == 30.0  # one limit for NT (max 8%) and T (max 30%): was 10 vs 30
    lo, hi = _fitted([2.0, 4.5, 9.0], 0, 100)  # Trigger values under 10%: the axis ends near 10, not at 100
    assert (lo, hi) == (1.0, 10.0)
    assert _fitted([0.0, 100.0], 0, 100) == (-5.0, 105.0)
