"""PNG figures of a run (matplotlib, Agg backend, no pyplot state), in the PatternEval paper's layout.

- :func:`radar_png`: Trigger by category, every config overlaid, one figure per mode (paper Fig. 4 is the
  NT radar). A category a config has no labelled row in is left open (the line breaks there), never 0.
- :func:`length_scatter_png`: mean response length vs Trigger per config x correctness aggregate, NT and
  T side by side, the correct and wrong points of one config joined, Pearson r per mode in the legend
  (paper Fig. 5). Unresolved aggregates are drawn apart (grey, open) and stay out of r.
- :func:`length_sextiles_png`: Trigger by length sextile per mode x correctness group (paper Fig. 6);
  colour = correctness, line style = mode.

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


def radar_png(metrics: dict, mode: str, categories: list[str], key: str = "trigger") -> bytes | None:
    """Radar of ``key`` (Trigger by default, in %) over ``categories``, every config of ``mode`` overlaid.

    None when fewer than 3 categories or no config has the mode.
    """
    vals = radar_values(metrics, mode, categories, key)
    if len(categories) < 3 or not vals:
        return None
    ang = np.linspace(0, 2 * np.pi, len(categories), endpoint=False)
    fig, (ax,) = _figure(6.4, 5.6, polar=True)
    top = max([v for vs in vals.values() for v in vs if not math.isnan(v)] + [10.0])
    for i, (name, vs) in enumerate(vals.items()):
        color, ls = config_style(i)
        closed = np.asarray(vs + vs[:1], dtype=float)
        ax.plot(np.append(ang, ang[0]), closed, color=color, linestyle=ls, linewidth=1.4, marker="o", markersize=3.5,
                label=f"{name} ({sum(not math.isnan(v) for v in vs)}/{len(vs)} categories)")
    ax.set_xticks(ang)
    ax.set_xticklabels([c.replace("_", "\n") for c in categories], fontsize=7)
    ax.set_ylim(0, min(100.0, 10 * math.ceil(top / 10)))
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
        ax.set_ylim(-5, 105)
        ax.grid(alpha=0.3)
    return _png(fig)


def length_sextiles_png(length: dict) -> bytes | None:
    """Fig. 6: Trigger (%) by length bin, one line per mode x correctness group; n per group in the legend."""
    bins = length.get("bins") or {}
    if not bins:
        return None
    fig, (ax,) = _figure(6.6, 3.8)
    for g, bs in bins.items():
        mode, corr = g.split("/")
        ls, mk = MODE_STYLE.get(mode, (":", "."))
        ax.plot([b["bin"] for b in bs], [100 * b["trigger"] for b in bs], marker=mk, linestyle=ls,
                color=CORRECTNESS_COLOR.get(corr, "black"), label=f"{mode} {corr} (n={sum(b['n'] for b in bs)})")
    ax.set_title(f"Trigger by response-length bin ({length.get('n_bins', 6)} equal-count bins per group, "
                 f"{length.get('unit', 'words')})", fontsize=9)
    ax.set_xlabel("length bin (1 = shortest)")
    ax.set_ylabel("Trigger (%)")
    ax.set_ylim(-5, 105)
    ax.set_xticks(range(1, max(len(b) for b in bins.values()) + 1))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _png(fig)


FIGURES = ("radar_NT.png", "radar_T.png", "length_scatter.png", "length_sextiles.png")


def all_plots(metrics: dict, length: dict, categories: list[str]) -> dict[str, bytes]:
    """File name -> PNG bytes for each figure of :data:`FIGURES` that has data."""
    out = {}
    for mode in MODES:
        png = radar_png(metrics, mode, categories)
        if png:
            out[f"radar_{mode}.png"] = png
    for name, fn in (("length_scatter.png", length_scatter_png), ("length_sextiles.png", length_sextiles_png)):
        png = fn(length)
        if png:
            out[name] = png
    return out
