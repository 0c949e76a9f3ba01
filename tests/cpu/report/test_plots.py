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


def test_length_figure_leaves_thin_bins_out_and_labels_bins_in_whole_lengths(monkeypatch):
    """Issue 34: a bin of 2 rows drew a 0 -> 50% spike, and ticks read 6.83333."""
    import math

    from howeval.report import plots

    figs = []
    monkeypatch.setattr(plots, "_png", lambda fig: figs.append(fig) or b"png")
    edges = [1.0, 6.83333, 12.5, 40.0]
    bs = [{"bin": i + 1, "n": n, "lo": edges[i], "hi": edges[i + 1], "trigger": t}
          for i, (n, t) in enumerate([(10, 0.1), (2, 0.5), (8, 0.25)])]
    assert plots.length_sextiles_png({"bins": {"NT/correct": bs}, "unit": "words"}) == b"png"
    ax = figs[0].axes[0]
    y = list(ax.lines[0].get_ydata())
    assert y[0] == 10.0 and math.isnan(y[1]) and y[2] == 25.0  # the 2-row bin is a gap
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1–6", "7–12", "13–40"]
    assert "1 point(s) from fewer than 5 rows left out" in ax.get_title()
