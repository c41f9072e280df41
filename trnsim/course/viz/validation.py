"""Predicted vs published kernel latency (trnsim.perf.validation rows): how far kernel predictions can be trusted."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

_TARGET_COLORS = {"trn1": "#1f77b4", "trn2": "#d62728", "trn3": "#2ca02c"}


def plot_published_vs_predicted(rows: Sequence[Any], ax: Any = None, *, band_pct: float = 15.0) -> Any:
    """Scatter of predicted vs published latency (ms, log-log) with the y = x line and a +-``band_pct`` band;
    each point labelled "<target> s<stage> <error>%". ``rows`` are ValidationRow records. Returns the Axes."""
    import matplotlib.pyplot as plt

    if not rows:
        raise ValueError("plot_published_vs_predicted: no rows; pass trnsim.perf.validation.published_vs_predicted()")
    if ax is None:
        _, ax = plt.subplots(figsize=(5.2, 4.6))
    pub = np.array([r.published_ms for r in rows])
    pred = np.array([r.predicted_ms for r in rows])
    lo, hi = 0.7 * min(pub.min(), pred.min()), 1.4 * max(pub.max(), pred.max())
    x = np.geomspace(lo, hi, 50)
    ax.plot(x, x, color="black", lw=1, label="predicted = published")
    f = band_pct / 100
    ax.fill_between(x, x * (1 - f), x * (1 + f), color="#999999", alpha=0.2, label=f"within {band_pct:.0f}%")
    from matplotlib.ticker import FuncFormatter, LogLocator

    for t_i, tgt in enumerate(sorted({r.target for r in rows})):
        sub = [r for r in rows if r.target == tgt]
        side = 1 if t_i % 2 == 0 else -1          # first target labelled to the right, second to the left
        ax.scatter([r.published_ms for r in sub], [r.predicted_ms for r in sub], s=40, zorder=3,
                   color=_TARGET_COLORS.get(tgt, "#555555"), edgecolor="black", label=sub[0].set_name)
        for r in sub:
            ax.annotate(f"{tgt} s{r.stage} {r.error_pct:+.0f}%", (r.published_ms, r.predicted_ms),
                        xytext=(6 * side, -11 if r.stage % 2 else 5), textcoords="offset points", fontsize=7,
                        ha="left" if side > 0 else "right")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.set_xlabel("published latency on hardware (ms)")
    ax.set_ylabel("trnsim prediction (ms)")
    ax.set_title("NKI matmul kernels: trnsim vs real hardware", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(alpha=0.3, which="both")
    return ax


__all__ = ["plot_published_vs_predicted"]
