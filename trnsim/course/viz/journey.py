"""Figures for notebooks 05 and 06: SBUF budget, engine utilisation, HBM traffic (estimate vs simulator),
predicted vs published latency."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from trnsim.course.viz.timeline import ENGINE_COLORS

_BUDGET_COLORS = ("#9467bd", "#1f77b4", "#2ca02c", "#8c564b")


def plot_sbuf_budget(ax: Any, budget: Any, *, title: str | None = None) -> Any:
    """One horizontal stacked bar of SBUF KiB per partition by part, with the usable capacity as a line.

    ``budget`` has ``parts() -> {name: bytes}`` and ``capacity`` (bytes per partition). Returns the Axes.
    """
    parts = budget.parts()
    left = 0.0
    for (name, b), color in zip(parts.items(), _BUDGET_COLORS):
        w = b / 1024
        ax.barh(0, w, left=left, color=color, edgecolor="white", label=f"{name} {w:.0f} KiB")
        left += w
    cap = budget.capacity / 1024
    ax.axvline(cap, color="black", ls="--", lw=1.5)
    ax.text(cap, -0.55, f" usable {cap:.0f} KiB ", fontsize=8, va="bottom", ha="right" if left > cap else "left")
    over = left > cap
    ax.set_xlim(0, max(cap, left) * 1.12)
    ax.set_ylim(-0.6, 1.5)
    ax.set_yticks([])
    ax.set_xlabel("SBUF KiB per partition (one K step)")
    ax.legend(fontsize=7, loc="upper left", ncol=2, frameon=False)
    ax.set_title(title or ("does NOT fit: " if over else "fits: ") + f"{left:.0f} of {cap:.0f} KiB",
                 fontsize=10, color="#d62728" if over else "black")
    return ax


def plot_engine_utilisation(ax: Any, profile: Any, *, title: str | None = None) -> Any:
    """Bars: busy share of the kernel's latency per engine (and the mean DMA queue), in %."""
    names = ("tensor", "vector", "scalar", "gpsimd", "dma")
    vals = [100 * profile.engine_utilisation[n] for n in names]
    ax.bar(range(len(names)), vals, color=[ENGINE_COLORS[n] for n in names])
    for i, v in enumerate(vals):
        ax.text(i, v + 2, f"{v:.0f}%", ha="center", fontsize=8)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(["Tensor", "Vector", "Scalar", "GpSimd", "DMA"], fontsize=8)
    ax.set_ylim(0, 115)
    ax.set_ylabel("busy (% of latency)")
    ax.set_title(title or f"{profile.pct_of_tensor_peak:.1f}% of Tensor Engine peak", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return ax


def plot_traffic(ax: Any, labels: Sequence[str], simulated_mib: Sequence[float],
                 estimated_mib: Sequence[float] | None = None, *, title: str = "HBM traffic") -> Any:
    """Horizontal bars of simulated HBM MiB per kernel, with the back-of-envelope estimate as a marker."""
    y = np.arange(len(labels))[::-1]
    ax.barh(y, simulated_mib, color=ENGINE_COLORS["dma"], label="simulator (DMA bytes)")
    if estimated_mib is not None:
        ax.scatter(estimated_mib, y, marker="|", s=400, color="black", zorder=3, label="envelope estimate")
    top = max(list(simulated_mib) + list(estimated_mib or [])) if len(labels) else 1.0
    for yi, v in zip(y, simulated_mib):
        ax.text(v + 0.01 * top, yi, f" {v:.0f} MiB", va="center", fontsize=8)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlim(0, top * 1.8)
    ax.set_xlabel("MiB moved between HBM and SBUF")
    ax.legend(fontsize=7, loc="center right")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title, fontsize=10)
    return ax


def plot_engine_balance(ax: Any, profiles: Sequence[Any], labels: Sequence[str], *,
                        title: str = "Engine balance: busy time per engine") -> Any:
    """Grouped bars: busy time (us) of each engine for each profile; hatched bars for later profiles."""
    names = ("tensor", "vector", "scalar", "gpsimd", "dma")
    width = 0.8 / max(1, len(profiles))
    x = np.arange(len(names))
    hatches = ("", "//", "..", "xx")
    for k, (p, lab) in enumerate(zip(profiles, labels)):
        vals = [p.engine_busy_us[n] for n in names]
        ax.bar(x + (k - (len(profiles) - 1) / 2) * width, vals, width, color=[ENGINE_COLORS[n] for n in names],
               hatch=hatches[k % len(hatches)], edgecolor="white", label=lab)
    ax.set_xticks(x)
    ax.set_xticklabels(["Tensor", "Vector", "Scalar", "GpSimd", "DMA"], fontsize=8)
    ax.set_ylabel("busy time (us)")
    handles = [plt_patch(hatches[k % len(hatches)], lab) for k, lab in enumerate(labels)]
    ax.legend(handles=handles, fontsize=7, loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(title, fontsize=10)
    return ax


def plt_patch(hatch: str, label: str) -> Any:
    """A grey legend patch with ``hatch`` (engine colours differ per bar, the hatch tells kernels apart)."""
    from matplotlib.patches import Patch

    return Patch(facecolor="#bbbbbb", edgecolor="white", hatch=hatch, label=label)


def plot_published(ax: Any, labels: Sequence[str], envelope_ms: Sequence[float], simulated_ms: Sequence[float],
                   published_ms: Sequence[float], *, title: str = "Predicted vs published latency") -> Any:
    """Grouped bars per kernel: back-of-envelope bound, simulated and published latency (ms), each simulated
    bar labelled with its error against the published one ((sim - pub) / pub)."""
    x = np.arange(len(labels))
    w = 0.27
    ax.bar(x - w, envelope_ms, w, color="#bbbbbb", label="back-of-envelope bound")
    ax.bar(x, simulated_ms, w, color=ENGINE_COLORS["dma"], label="simulator")
    ax.bar(x + w, published_ms, w, color="black", label="published (real trn1)")
    top = max(list(envelope_ms) + list(simulated_ms) + list(published_ms)) if len(labels) else 1.0
    for xi, s, p in zip(x, simulated_ms, published_ms):
        ax.text(xi, max(s, p) + 0.02 * top, f"{100 * (s - p) / p:+.0f}%", ha="center", fontsize=8)
    ax.text(0.01, 0.98, "% above the bars: simulator vs published", transform=ax.transAxes, fontsize=7,
            va="top", color="#555555")
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylim(0, top * 1.15)
    ax.set_ylabel("latency (ms)")
    ax.legend(fontsize=7, loc="upper right", frameon=False)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(title, fontsize=10)
    return ax


__all__ = ["plot_sbuf_budget", "plot_engine_utilisation", "plot_traffic", "plot_engine_balance", "plot_published"]
