"""Side-by-side comparison of several kernel profiles: where the critical path goes in each."""
from __future__ import annotations

from typing import Any, Sequence

from trnsim.course.viz.timeline import ENGINE_COLORS

_PARTS = (("tensor", "Tensor", ENGINE_COLORS["tensor"]), ("vector", "Vector", ENGINE_COLORS["vector"]),
          ("scalar", "Scalar", ENGINE_COLORS["scalar"]), ("gpsimd", "GpSimd", ENGINE_COLORS["gpsimd"]),
          ("dma", "DMA data", ENGINE_COLORS["dma"]), ("dma_fixed", "DMA fixed latency", "#ffbb78"),
          ("collective", "Collective", ENGINE_COLORS["collective"]), ("wait", "waiting", "#c7c7c7"))


def plot_compare(profiles: Sequence[Any], ax: Any = None, *, labels: Sequence[str] | None = None,
                 log: bool = False, title: str | None = None) -> Any:
    """Horizontal stacked bars: each profile's latency split along its critical path by engine.

    ``log=True`` uses a log time axis (for kernels that differ by orders of magnitude). Returns the Axes.
    """
    import matplotlib.pyplot as plt

    profs = list(profiles)
    if not profs:
        raise ValueError("plot_compare needs at least one Profile")
    names = list(labels) if labels is not None else [p.kernel_name for p in profs]
    if len(names) != len(profs):
        raise ValueError(f"plot_compare: {len(names)} labels for {len(profs)} profiles")
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.6 * len(profs) + 1.6))
    ys = list(range(len(profs)))[::-1]
    used = set()
    for y, p in zip(ys, profs):
        left = 0.0
        for key, lab, color in _PARTS:
            w = float(p.critical_path_us.get(key, 0.0))
            if w <= 0:
                continue
            ax.barh(y, w, left=left, color=color, edgecolor="white", lw=0.5,
                    label=lab if key not in used else None)
            used.add(key)
            left += w
        ax.text(left, y, f"  {p.latency_us:,.1f} us, {p.pct_of_tensor_peak:.0f}% PE peak", va="center", fontsize=8)
    ax.set_yticks(ys)
    ax.set_yticklabels(names, fontsize=8)
    ax.set_xlabel("critical-path time (us)")
    if log:
        ax.set_xscale("log")
    xmax = max(p.latency_us for p in profs)
    if not log and xmax > 0:
        ax.set_xlim(0, xmax * 1.45)
    if used:
        ax.legend(fontsize=7, loc="lower right", ncol=2)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title or "Where the time goes (critical path by engine)", fontsize=10)
    return ax


__all__ = ["plot_compare"]
