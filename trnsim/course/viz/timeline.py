"""Engine timeline of a simulated kernel with neuron-profile's rows.

``plot_timeline(profile, ax)``: one row per engine as neuron-profile names them (Tensor: every Tensor
Engine instruction, LoadWeights + MultiplyMoving; TensorMatrix: the MultiplyMoving part, when the PE
array streams; Vector, Scalar, GpSimd), a Collective row for nki.collectives calls, then the busiest DMA queues. ``plot_profile(profile)``: that
timeline plus the State Buffer / PSUM usage and DMA throughput rows below it, on a shared time axis.
"""
from __future__ import annotations

from typing import Any

import numpy as np

ENGINE_COLORS = {"tensor": "#d62728", "tensor_matrix": "#8c1515", "vector": "#1f77b4", "scalar": "#2ca02c",
                 "gpsimd": "#9467bd", "dma": "#ff7f0e", "sync": "#7f7f7f",
                 "collective": "#8c564b"}
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
    """(label, engine, instruction indices) per row: used compute engines (Tensor followed by TensorMatrix,
    which shows the same matmuls' MultiplyMoving part), the Collective row of nki.collectives calls if any,
    then DMA queues by bytes."""
    tl = profile.timeline
    rows = []
    cores = int(getattr(tl, "cores", 1))
    core_of = (np.fromiter((ins.core for ins in profile.trace.instructions), dtype=np.int64)
               if cores > 1 else np.zeros(len(tl), dtype=np.int64))
    for c in range(cores):                # an LNC=2 launch: each physical core's engines on rows of their own
        suffix = f" (core {c})" if cores > 1 else ""
        for code, name in enumerate(("tensor", "vector", "scalar", "gpsimd")):
            idx = np.flatnonzero((tl.engine == code) & (core_of == c))
            if idx.size:
                rows.append((_ROW_LABELS[name] + suffix, name, idx))
                if name == "tensor" and getattr(profile, "tensor_split", None) is not None and cores == 1:
                    rows.append(("TensorMatrix", "tensor_matrix", idx))
    coll_idx = np.flatnonzero(tl.engine == 6)      # nki.collectives calls (trnsim.perf.schedule.COLLECTIVE)
    if coll_idx.size:
        rows.append(("Collective", "collective", coll_idx))
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
            plural = "" if len(rest) == 1 else "s"
            rows.append((f"DMA other ({len(rest)} queue{plural})", "dma", dma_idx[np.isin(q, rest)]))
    return rows


def _bars(ax: Any, bars: Any, yrange: tuple[float, float], **kwargs: Any) -> Any:
    """What ``ax.broken_barh(bars, yrange, **kwargs)`` draws, as one compound path of rectangles (bars of a row do
    not overlap: :func:`_merge`), snapped to pixels like broken_barh's small rectangles. A timeline row has up to
    thousands of bars; broken_barh converts units bar by bar and makes a Path per bar, most of a panel's redraw.
    plot_timeline sets both limits itself, so the data limits are not grown."""
    from matplotlib.collections import PathCollection
    from matplotlib.path import Path

    xw = np.asarray(bars, dtype=float).reshape(-1, 2)
    x0, x1 = xw[:, 0], xw[:, 0] + xw[:, 1]
    y0, y1 = yrange[0], yrange[0] + yrange[1]
    verts = np.empty((len(xw), 5, 2))
    verts[:, :, 0] = np.stack([x0, x0, x1, x1, x0], axis=1)
    verts[:, :, 1] = (y0, y1, y1, y0, y0)
    codes = np.tile(np.array([Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY], dtype=Path.code_type),
                    len(xw))
    col = PathCollection([Path(verts.reshape(-1, 2), codes)], snap=True, **kwargs)
    ax.add_collection(col, autolim=False)
    return col


def _row_intervals_us(profile: Any, eng: str, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (us) of each bar of a row: MultiplyMoving parts for TensorMatrix, data-moving intervals
    for DMA queues (a transfer's fixed set-up before them is not drawn), whole instructions otherwise."""
    tl = profile.timeline
    e = tl.end_ns[idx]
    if eng == "tensor_matrix":
        split = profile.tensor_split
        return (e - split.multiply_moving_ns) / 1e3, e / 1e3
    return tl.start_ns[idx] / 1e3, e / 1e3


ROW_LABEL_FONTSIZE = 8   # points


def row_label(label: str, width: int = 16) -> str:
    """A timeline row's label as drawn: a long one breaks before its parenthesis ("DMA DGE 0\n(SyncE/ScalarE)"),
    and a line longer than 26 characters is cut with "~"."""
    if len(label) > width and " (" in label:
        head, _, tail = label.partition(" (")
        lines = [head, "(" + tail]
    else:
        lines = [label]
    return "\n".join(ln if len(ln) <= 26 else ln[:25] + "~" for ln in lines)


def row_label_margin_in(labels: list[str], fontsize: float = ROW_LABEL_FONTSIZE) -> float:
    """Inches the longest line of the drawn row labels needs left of the axes (about 0.6 em per character of
    the default sans-serif font, plus the tick and padding)."""
    longest = max((len(ln) for lab in labels for ln in row_label(lab).split("\n")), default=0)
    return longest * 0.6 * fontsize / 72 + 0.2


def plot_timeline(profile: Any, ax: Any = None, *, time_range_us: tuple[float, float] | None = None,
                  max_dma_rows: int = 4, title: str | None = None) -> Any:
    """Draw one bar per instruction on its engine row (merged when closer than ~1/1500 of the view); DMA rows
    show each transfer's data movement solid and its fixed set-up in the queue faded; the Collective row shows
    each nki.collectives call as its own outlined bar, named when wide enough.

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
        s, e = _row_intervals_us(profile, eng, idx)
        keep = (e >= lo) & (s <= hi)
        s, e = s[keep], e[keep]
        order = np.argsort(s, kind="stable")
        bars = _merge(s[order], e[order], min_gap)
        y = len(rows) - 1 - r
        if eng == "dma":
            # one lane per queue: a merged row ("DMA other (n queues)") splits its height between its queues, so
            # transfers running side by side in different queues stay visible instead of merging into one bar
            queues = tl.dma_queue[np.asarray(idx)][keep]
            lanes = np.unique(queues)
            lane_h = 0.76 / max(len(lanes), 1)
            q0 = (tl.dma_queue_start_ns[idx] / 1e3)[keep]
            for k, qn in enumerate(lanes):
                sel = queues == qn
                y0 = y + 0.38 - (k + 1) * lane_h
                h = lane_h * (0.85 if len(lanes) > 1 else 1.0)
                qs, qe = q0[sel], s[sel]     # the queue's fixed set-up before each transfer's data, faded
                qo = np.argsort(qs, kind="stable")
                _bars(ax, _merge(qs[qo], qe[qo], min_gap), (y0, h), facecolors=ENGINE_COLORS[eng], alpha=0.25,
                      edgecolor="none")
                ds, de = s[sel], e[sel]
                do = np.argsort(ds, kind="stable")
                _bars(ax, _merge(ds[do], de[do], min_gap), (y0, h), facecolors=ENGINE_COLORS[eng], edgecolor="none")
        elif eng == "collective":   # few, long calls: one bar each, outlined and named when wide enough
            ops = [profile.trace.instructions[i].opcode for i in np.asarray(idx)[keep][order]]
            bars = [(float(a), float(b - a)) for a, b in zip(s[order], e[order])]
            _bars(ax, bars, (y - 0.38, 0.76), facecolors=ENGINE_COLORS[eng], edgecolor="white", linewidth=1.0)
            for (x0, w), op in zip(bars, ops):
                if w > (hi - lo) / 12:
                    ax.text(max(x0, lo) + min(w, hi - max(x0, lo)) / 2, y, op, ha="center", va="center",
                            fontsize=7, color="white", clip_on=True)
        else:
            _bars(ax, bars, (y - 0.38, 0.76), facecolors=ENGINE_COLORS[eng], edgecolor="none")
        busy = float((e - s).sum())
        labels.append((y, label, busy))
    ax.set_yticks([y for y, _, _ in labels])
    ax.set_yticklabels([row_label(lab) for _, lab, _ in labels], fontsize=ROW_LABEL_FONTSIZE)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("time (us)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title or f"{profile.kernel_name} on {profile.target}: {profile.latency_us:,.1f} us, "
                          f"bottleneck {profile.bottleneck}", fontsize=10)
    return ax


def plot_usage(profile: Any, ax: Any, *, time_range_us: tuple[float, float] | None = None) -> Any:
    """State Buffer and PSUM usage over time, in % of capacity (bytes per partition). Returns the Axes."""
    occ = profile.occupancy
    t = np.concatenate(([0.0], occ.times_us, [profile.latency_us]))
    sb = 100 * np.concatenate(([0.0], occ.sbuf_bytes_per_partition, [0.0])) / occ.sbuf_capacity_bytes_per_partition
    ps = 100 * np.concatenate(([0.0], occ.psum_bytes_per_partition, [0.0])) / occ.psum_capacity_bytes_per_partition
    ax.step(t, sb, where="post", color="#17becf", lw=1.2, label="State Buffer (SBUF)")
    ax.step(t, ps, where="post", color="#bcbd22", lw=1.2, label="PSUM")
    ax.fill_between(t, ps, step="post", color="#bcbd22", alpha=0.25)
    ax.set_ylim(0, 105)
    ax.set_ylabel("usage %", fontsize=8)
    ax.legend(fontsize=7, loc="upper right", ncol=2, frameon=False)
    ax.set_xlim(*(time_range_us or (0.0, max(profile.latency_us, 1e-6))))
    ax.grid(axis="x", alpha=0.3)
    return ax


def plot_dma_throughput(profile: Any, ax: Any, *, bins: int = 200,
                        time_range_us: tuple[float, float] | None = None) -> Any:
    """DMA throughput over time (GB/s per bin) and its cumulative average, against the core's DMA peak."""
    centres, per_bin, cumulative = profile.dma_throughput(bins, time_range_us)
    ax.step(centres, per_bin, where="mid", color=ENGINE_COLORS["dma"], lw=1.0, label="DMA throughput")
    ax.plot(centres, cumulative, color="#7f3f00", lw=1.2, ls="--", label="cumulative")
    ax.axhline(profile.hbm_peak_gbytes_per_s, color="black", lw=0.8, ls=":",
               label=f"peak {profile.hbm_peak_gbytes_per_s:.0f} GB/s")
    ax.set_ylim(0, profile.hbm_peak_gbytes_per_s * 1.15)
    ax.set_ylabel("GB/s", fontsize=8)
    ax.legend(fontsize=7, loc="lower right", ncol=3, framealpha=0.85)
    ax.set_xlim(*(time_range_us or (0.0, max(profile.latency_us, 1e-6))))
    ax.grid(axis="x", alpha=0.3)
    return ax


def plot_profile(profile: Any, fig: Any = None, *, time_range_us: tuple[float, float] | None = None,
                 max_dma_rows: int = 4, title: str | None = None) -> Any:
    """neuron-profile's view of a kernel: engine and DMA queue rows, SBUF/PSUM usage, DMA throughput, with the
    headline numbers (total time, Tensor Engine and DMA active %, HFU, MFU) in the title. Returns the Figure."""
    import matplotlib.pyplot as plt

    n_rows = len(timeline_rows(profile, max_dma_rows))
    if fig is None:
        fig = plt.figure(figsize=(10, 2.2 + 0.32 * n_rows + 2.4))
    gs = fig.add_gridspec(3, 1, height_ratios=[max(n_rows, 2) * 0.45, 1.0, 1.0], hspace=0.12)
    ax0 = fig.add_subplot(gs[0])
    m = profile.metrics
    head = title or (f"{profile.kernel_name} on {profile.target}: {profile.latency_us / 1e3:,.3f} ms, "
                     f"bound: {profile.bottleneck}\n"
                     f"Tensor active {m.active_time_pct['tensor']:.0f}%, DMA active {m.dma_active_time_pct:.0f}%"
                     + (f", Collective active {m.active_time_pct['collective']:.0f}%"
                        if m.instruction_count.get("collective", 0) else "") + " | "
                     f"HFU {m.hfu_estimated_pct:.1f}%, MFU {m.mfu_estimated_pct:.1f}% "
                     f"(max achievable {m.mfu_max_achievable_estimated_pct:.0f}%)")
    plot_timeline(profile, ax0, time_range_us=time_range_us, max_dma_rows=max_dma_rows, title=head)
    # room for the row labels (e.g. trn2's "DMA DGE 0 (SyncE/ScalarE)" queues) left of the axes
    need = row_label_margin_in([r[0] for r in timeline_rows(profile, max_dma_rows)]) / fig.get_figwidth()
    if need > fig.subplotpars.left:
        fig.subplots_adjust(left=min(need, 0.4))
    ax0.set_xlabel("")
    ax0.tick_params(labelbottom=False)
    ax1 = fig.add_subplot(gs[1], sharex=ax0)
    plot_usage(profile, ax1, time_range_us=time_range_us)
    ax1.tick_params(labelbottom=False)
    ax2 = fig.add_subplot(gs[2], sharex=ax0)
    plot_dma_throughput(profile, ax2, time_range_us=time_range_us)
    ax2.set_xlabel("time (us)")
    return fig


__all__ = ["plot_timeline", "plot_profile", "row_label", "row_label_margin_in",
           "plot_usage", "plot_dma_throughput", "timeline_rows", "ENGINE_COLORS"]
