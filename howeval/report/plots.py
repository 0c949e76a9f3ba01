"""PNG plots of a run's metrics (matplotlib, Agg backend, no pyplot state): length bins and category radars.

Each function returns PNG bytes (or None when there is nothing to draw), so callers write them wherever
the run lives (local folder or fsspec URL).
"""
from __future__ import annotations

import io

import numpy as np

from howeval.records import MODES

GROUP_STYLE = {"NT/correct": ("tab:blue", "-"), "NT/wrong": ("tab:blue", "--"),
               "T/correct": ("tab:red", "-"), "T/wrong": ("tab:red", "--")}


def _figure(w: float, h: float, polar: bool = False):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(111, projection="polar" if polar else None)
    return fig, ax


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return buf.getvalue()


def length_bins_png(length: dict) -> bytes | None:
    """Trigger (%) by length bin, one line per mode x correctness group (``howeval.metrics.length.length_analysis``)."""
    bins = length.get("bins") or {}
    if not bins:
        return None
    fig, ax = _figure(6.0, 3.6)
    for g, bs in bins.items():
        color, ls = GROUP_STYLE.get(g, ("gray", ":"))
        ax.plot([b["bin"] for b in bs], [100 * b["trigger"] for b in bs], marker="o", color=color, linestyle=ls,
                label=f"{g} (n={sum(b['n'] for b in bs)})")
    r = length["correlation"]["r"]
    ax.set_title(f"Trigger by response-length bin ({length['unit']}); Pearson r = "
                 f"{'n/a' if r is None else f'{r:+.2f}'}", fontsize=9)
    ax.set_xlabel("length bin (1 = shortest)")
    ax.set_ylabel("Trigger (%)")
    ax.set_ylim(-5, 105)
    ax.set_xticks(range(1, max(len(b) for b in bins.values()) + 1))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _png(fig)


def category_radar_png(metrics: dict, config: str, mode: str) -> bytes | None:
    """Radar of Acc and Trigger (%) by category for one config x mode; None with fewer than 3 categories."""
    m = metrics["configs"].get(config, {}).get(mode)
    if not m:
        return None
    cats = [c for c, x in m["by_category"].items() if x["n"]]
    if len(cats) < 3:
        return None
    ang = np.linspace(0, 2 * np.pi, len(cats), endpoint=False).tolist()
    fig, ax = _figure(5.2, 5.2, polar=True)
    for key, color in (("acc", "tab:green"), ("trigger", "tab:red")):
        vals = [100 * (m["by_category"][c][key] or 0.0) for c in cats]
        ax.plot(ang + ang[:1], vals + vals[:1], color=color, marker="o", label=key.capitalize())
        ax.fill(ang + ang[:1], vals + vals[:1], color=color, alpha=0.12)
    ax.set_xticks(ang)
    ax.set_xticklabels([c.replace("_", "\n") for c in cats], fontsize=7)
    ax.set_ylim(0, 100)
    ax.set_title(f"{config} / {mode}: Acc and Trigger (%) by category", fontsize=9)
    ax.legend(fontsize=7, loc="lower right", bbox_to_anchor=(1.15, -0.05))
    return _png(fig)


def all_plots(metrics: dict, length: dict) -> dict[str, bytes]:
    """File name -> PNG bytes for every plot that has data."""
    out = {}
    png = length_bins_png(length)
    if png:
        out["length_bins.png"] = png
    for cfg, c in metrics["configs"].items():
        for mode in MODES:
            if mode in c:
                png = category_radar_png(metrics, cfg, mode)
                if png:
                    out[f"radar_{cfg}_{mode}.png"] = png
    return out
