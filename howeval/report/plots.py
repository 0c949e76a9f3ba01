"""PNG figures of a run (matplotlib, Agg backend, no pyplot state), in the PatternEval paper's layout.

- :func:`radar_png`: Trigger by category, every config overlaid, one figure per mode (paper Fig. 4 is the
  NT radar), both modes on one radial scale (:func:`radar_top`), each category labelled with its n. A
  category a config has no labelled row in is left open (the line breaks there), never 0.
- :func:`length_scatter_png`: mean response length vs Trigger per config x correctness aggregate, NT and
  T side by side, the correct and wrong points of one config joined, Pearson r per mode in the legend
  (paper Fig. 5; never pooled across modes), axes fitted to the data. Unresolved aggregates are drawn
  apart (grey, open) and stay out of r.
- :func:`length_sextiles_png`: Trigger by length bin per mode x correctness group on common edges (paper
  Fig. 6); colour = correctness, line style = mode; groups too small to cut are not drawn.

Each function returns PNG bytes, or None when there is nothing to draw, so callers write them wherever
the run lives (local folder or fsspec URL).
"""
from __future__ import annotations

import io
import math

import numpy as np

from howeval.records import MODES

CORRECTNESS_COLOR = {"correct": "tab:green", "wrong": "tab:red", "unresolved": "tab:gray"}
MODE_STYLE = {"NT": ("-", "o"), "T": ("--", "s")}
_PALETTE = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:gray",
            "tab:olive", "tab:cyan"]
_DASHES = ["-", "--", ":", "-."]


def config_style(i: int) -> tuple[str, str]:
    """(colour, line style) of the i-th config: 10 colours, then the same colours dashed, dotted, ..."""
    return _PALETTE[i % len(_PALETTE)], _DASHES[(i // len(_PALETTE)) % len(_DASHES)]


def _figure(w: float, h: float, ncols: int = 1, polar: bool = False):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=110)
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, ncols, i + 1, projection="polar" if polar else None) for i in range(ncols)]
    return fig, axes


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return buf.getvalue()


def radar_values(metrics: dict, mode: str, categories: list[str], key: str = "trigger") -> dict[str, list[float]]:
    """Config -> ``key`` in % per category for ``mode``; NaN where the config has no value (never 0)."""
    out = {}
    for name, c in metrics["configs"].items():
        if mode not in c:
            continue
        by = c[mode]["by_category"]
        out[name] = [100 * by[k][key] if by.get(k) and by[k].get(key) is not None else math.nan for k in categories]
    return out


def radar_top(metrics: dict, categories: list[str], key: str = "trigger") -> float:
    """The common radial limit (%) of every mode's radar: the largest value over all modes, rounded up to
    10 (at least 10, at most 100), so the NT and T radars read on one scale."""
    vals = [v for m in MODES for vs in radar_values(metrics, m, categories, key).values() for v in vs
            if not math.isnan(v)]
    return min(100.0, 10 * math.ceil(max(vals + [10.0]) / 10))


def radar_png(metrics: dict, mode: str, categories: list[str], key: str = "trigger",
              top: float | None = None) -> bytes | None:
    """Radar of ``key`` (Trigger by default, in %) over ``categories``, every config of ``mode`` overlaid.

    ``top``: the radial limit in % (default :func:`radar_top`, common to both modes). Category labels
    carry the number of labelled responses behind them (n, all configs of the mode). None when fewer
    than 3 categories or no config has the mode.
    """
    vals = radar_values(metrics, mode, categories, key)
    if len(categories) < 3 or not vals:
        return None
    ang = np.linspace(0, 2 * np.pi, len(categories), endpoint=False)
    fig, (ax,) = _figure(6.4, 5.6, polar=True)
    top = radar_top(metrics, categories, key) if top is None else top
    n_key = "n_labeled" if key == "trigger" else "n_scored"
    cat_n = [sum(((c.get(mode) or {}).get("by_category", {}).get(k) or {}).get(n_key, 0) or 0
                 for c in metrics["configs"].values()) for k in categories]
    for i, (name, vs) in enumerate(vals.items()):
        color, ls = config_style(i)
        closed = np.asarray(vs + vs[:1], dtype=float)
        ax.plot(np.append(ang, ang[0]), closed, color=color, linestyle=ls, linewidth=1.4, marker="o", markersize=3.5,
                label=f"{name} ({sum(not math.isnan(v) for v in vs)}/{len(vs)} categories)")
    ax.set_xticks(ang)
    ax.set_xticklabels([f"{c.replace('_', chr(10))}\n(n={n})" for c, n in zip(categories, cat_n)], fontsize=7)
    ax.set_ylim(0, top)
    ax.tick_params(axis="y", labelsize=6)
    ax.set_title(f"{'Thinking (T)' if mode == 'T' else 'Non-thinking (NT)'}: {key.capitalize()} (%) by category",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.08, 1.0), frameon=False)
    return _png(fig)


def length_scatter_png(length: dict) -> bytes | None:
    """Fig. 5: per mode, one point per (config, correctness) aggregate at (mean length, Trigger %).

    A config's correct and wrong points are joined by a line of its colour; r per mode (over the
    correct/wrong aggregates, ``howeval.metrics.length``) is in each panel's legend. None with no points.
    """
    corr = length.get("correlation") or {}
    points = corr.get("points") or []
    if not points:
        return None
    configs = sorted({p["config"] for p in points})
    fig, axes = _figure(10.5, 4.2, ncols=2)
    xlim, ylim = _fitted([p["mean_len"] for p in points]), _fitted([100 * p["trigger"] for p in points], 0, 100)
    marker = {"correct": "o", "wrong": "X", "unresolved": "^"}
    for ax, mode in zip(axes, MODES):
        pts = [p for p in points if p["mode"] == mode]
        for i, cfg in enumerate(configs):
            color, _ = config_style(i)
            mine = {p.get("correctness", "correct" if p["correct"] else "wrong"): p for p in pts if p["config"] == cfg}
            if "correct" in mine and "wrong" in mine:
                ax.plot([mine["correct"]["mean_len"], mine["wrong"]["mean_len"]],
                        [100 * mine["correct"]["trigger"], 100 * mine["wrong"]["trigger"]], color=color, linewidth=1,
                        alpha=0.7)
            for k, p in mine.items():
                ax.scatter([p["mean_len"]], [100 * p["trigger"]], marker=marker[k], s=18 + 4 * min(p["n"], 40) ** 0.5,
                           color=color if k != "unresolved" else "none", edgecolors=color, linewidths=1.2, zorder=3)
        # legend: configs by colour, correctness by marker, r in the title entry
        from matplotlib.lines import Line2D

        rm = (corr.get("by_mode") or {}).get(mode) or {}
        r = rm.get("r")
        handles = [Line2D([], [], color="none", label=f"Pearson r = {'n/a' if r is None else f'{r:+.2f}'}"
                          f" ({rm.get('n_points', 0)} aggregates)")]
        handles += [Line2D([], [], color=config_style(i)[0], marker="o", label=c) for i, c in enumerate(configs)]
        handles += [Line2D([], [], color="black", marker=marker[k], linestyle="none",
                           markerfacecolor="none" if k == "unresolved" else "black",
                           label=k + (" (not in r)" if k == "unresolved" else "")) for k in marker
                    if any(p.get("correctness") == k for p in pts)]
        ax.legend(handles=handles, fontsize=7, loc="best")
        ax.set_title(f"{'Non-thinking (NT)' if mode == 'NT' else 'Thinking (T)'}", fontsize=9)
        ax.set_xlabel(f"mean response length ({length.get('unit', 'words')})")
        ax.set_ylabel("Trigger (%)")
        ax.set_xlim(*xlim)
        ax.set_ylim(*ylim)  # fitted to the data (both panels alike), not a fixed 0-100
        ax.grid(alpha=0.3)
    return _png(fig)


def _fitted(values: list[float], floor: float | None = None, ceil: float | None = None) -> tuple[float, float]:
    """Axis limits around ``values`` with a 10% margin (at least 1 unit), clipped to [floor, ceil].

    >>> _fitted([2.0, 8.0], 0, 100)
    (1.0, 9.0)
    """
    lo, hi = min(values), max(values)
    pad = max(0.1 * (hi - lo), 1.0)
    lo, hi = lo - pad, hi + pad
    if floor is not None:
        lo = max(lo, floor - pad / 2)
    if ceil is not None:
        hi = min(hi, ceil + pad / 2)
    return lo, hi


MIN_POINT_ROWS = 5
"""Fewest rows behind a point of the length figure: a bin of a group with fewer is a gap, not a point (2
rows make a Trigger of 0 or 50%, a spike that says nothing); the figure's title says how many were left out."""


def bin_label(b: dict, last: bool) -> str:
    """A length bin's tick label in whole units: bin ``[lo, hi)`` (the last one ``[lo, hi]``) as ``7–12``.

    >>> bin_label({"lo": 6.83333, "hi": 12.5}, False), bin_label({"lo": 12.5, "hi": 40.0}, True)
    ('7–12', '13–40')
    """
    lo = math.ceil(b["lo"])
    hi = math.floor(b["hi"]) if last else math.ceil(b["hi"]) - 1
    return f"{lo}" if hi <= lo else f"{lo}–{hi}"


def length_sextiles_png(length: dict) -> bytes | None:
    """Fig. 6: Trigger (%) by length bin on common edges, one line per mode x correctness group that was
    large enough to cut; n per group in the legend, groups too small listed in the title. A bin a group
    has no row in, or fewer than :data:`MIN_POINT_ROWS`, is a gap. Ticks are whole lengths
    (:func:`bin_label`). None when no group was cut."""
    bins = length.get("bins") or {}
    if not bins:
        return None
    fig, (ax,) = _figure(6.6, 3.8)
    all_y = []
    thin = 0
    for g, bs in bins.items():
        mode, corr = g.split("/")
        ls, mk = MODE_STYLE.get(mode, (":", "."))
        thin += sum(1 for b in bs if b.get("trigger") is not None and b["n"] < MIN_POINT_ROWS)
        y = [math.nan if b.get("trigger") is None or b["n"] < MIN_POINT_ROWS else 100 * b["trigger"] for b in bs]
        all_y += [v for v in y if not math.isnan(v)]
        ax.plot([b["bin"] for b in bs], y, marker=mk, linestyle=ls,
                color=CORRECTNESS_COLOR.get(corr, "black"), label=f"{mode} {corr} (n={sum(b['n'] for b in bs)})")
    small = length.get("too_small") or {}
    title = (f"Trigger by response length ({length.get('unit', 'words')}), common edges for all groups")
    if small:
        title += "\nnot binned (too few rows): " + ", ".join(f"{g} n={n}" for g, n in small.items())
    if thin:
        title += f"\n{thin} point(s) from fewer than {MIN_POINT_ROWS} rows left out (gaps)"
    ax.set_title(title, fontsize=8)
    first = next(iter(bins.values()))
    ax.set_xticks([b["bin"] for b in first])
    ax.set_xticklabels([bin_label(b, i == len(first) - 1) if "lo" in b else str(b["bin"]) for i, b in enumerate(first)],
                       fontsize=7)
    ax.set_xlabel(f"length bin ({length.get('unit', 'words')})")
    ax.set_ylabel("Trigger (%)")
    if all_y:
        ax.set_ylim(*_fitted(all_y, 0, 100))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _png(fig)


FIGURES = ("radar_NT.png", "radar_T.png", "length_scatter.png", "length_sextiles.png")


def all_plots(metrics: dict, length: dict, categories: list[str]) -> dict[str, bytes]:
    """File name -> PNG bytes for each figure of :data:`FIGURES` that has data."""
    out = {}
    top = radar_top(metrics, categories)
    for mode in MODES:
        png = radar_png(metrics, mode, categories, top=top)
        if png:
            out[f"radar_{mode}.png"] = png
    for name, fn in (("length_scatter.png", length_scatter_png), ("length_sextiles.png", length_sextiles_png)):
        png = fn(length)
        if png:
            out[name] = png
    return out
