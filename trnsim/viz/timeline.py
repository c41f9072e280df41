"""Engine timeline (Gantt chart) of a simulated kernel, like a hardware profiler's trace view."""
from __future__ import annotations

from typing import Any

import numpy as np

ENGINE_COLORS = {"tensor": "#d62728", "vector": "#1f77b4", "scalar": "#2ca02c", "gpsimd": "#9467bd",
                 "dma": "#ff7f0e", "sync": "#7f7f7f"}
_ROW_LABELS = {"tensor": "Tensor", "vector": "Vector", "scalar": "Scalar", "gpsimd": "GpSimd"}


def _merge(starts: np.ndarray, ends: np.ndarray, min_gap: float) -> list[tuple[float, float]]:
    """Merge intervals closer than ``min_gap`` (so 100k instructions draw fast). Input sorted by start."""
    if starts.size == 0:
        return []
    out = []
    s0, e0 = float(starts[0]), float(ends[0])
    for s, e in zip(starts[1:].tolist(), ends[1:].tolist()):
        if s <= e0 + min_gap:
            if e > e0:
                e0 = e
        else:
            out.append((s0, e0 - s0))
            s0, e0 = s, e
    out.append((s0, e0 - s0))
    return out


def timeline_rows(profile: Any, max_dma_rows: int = 4) -> list[tuple[str, str, np.ndarray]]:
    """(label, engine, instruction indices) per row: used compute engines, then DMA queues by bytes."""
    tl = profile.timeline
    rows = []
    for code, name in enumerate(("tensor", "vector", "scalar", "gpsimd")):
        idx = np.flatnonzero(tl.engine == code)
        if idx.size:
            rows.append((_ROW_LABELS[name], name, idx))
    dma_idx = np.flatnonzero(tl.engine == 4)
    if dma_idx.size:
        q = tl.dma_queue[dma_idx]
        nbytes = np.array([profile.trace.instructions[i].bytes_moved for i in dma_idx], dtype=float)
        totals = np.bincount(q, weights=nbytes, minlength=len(tl.queue_names))
        order = [int(j) for j in np.argsort(-totals) if totals[j] > 0 or np.any(q == j)]
        shown = order[:max_dma_rows]
        for j in shown:
            rows.append((f"DMA {tl.queue_names[j]}", "dma", dma_idx[q == j]))
        rest = order[max_dma_rows:]
        if rest:
            rows.append((f"DMA other ({len(rest)} queues)", "dma", dma_idx[np.isin(q, rest)]))
    return rows


def plot_timeline(profile: Any, ax: Any = None, *, time_range_us: tuple[float, float] | None = None,
                  max_dma_rows: int = 4, title: str | None = None) -> Any:
    """Draw one bar per instruction on its engine row (merged when closer than ~1/1500 of the view).

    ``profile`` is a trnsim.perf Profile. Time axis in microseconds. Returns the Axes.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3.6))
    tl = profile.timeline
    lo, hi = time_range_us if time_range_us else (0.0, max(profile.latency_us, 1e-6))
    if hi <= lo:
        raise ValueError(f"plot_timeline: time_range_us={time_range_us} must have start < end")
    min_gap = (hi - lo) / 1500.0
    rows = timeline_rows(profile, max_dma_rows)
    labels = []
    for r, (label, eng, idx) in enumerate(rows):
        s = tl.start_ns[idx] / 1e3
        e = tl.end_ns[idx] / 1e3
        keep = (e >= lo) & (s <= hi)
        s, e = s[keep], e[keep]
        order = np.argsort(s, kind="stable")
        bars = _merge(s[order], e[order], min_gap)
        y = len(rows) - 1 - r
        ax.broken_barh(bars, (y - 0.38, 0.76), facecolors=ENGINE_COLORS[eng], edgecolor="none")
        busy = float((e - s).sum())
        labels.append((y, label, busy))
    ax.set_yticks([y for y, _, _ in labels])
    ax.set_yticklabels([lab if len(lab) <= 26 else lab[:25] + "~" for _, lab, _ in labels], fontsize=8)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("time (us)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title or f"{profile.kernel_name} on {profile.target}: {profile.latency_us:,.1f} us, "
                          f"bottleneck {profile.bottleneck}", fontsize=10)
    return ax


__all__ = ["plot_timeline", "timeline_rows", "ENGINE_COLORS"]
