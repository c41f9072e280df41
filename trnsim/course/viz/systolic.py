"""Draw a weight-stationary systolic array at one clock cycle (see :mod:`trnsim.models.systolic`).

Layout (one Axes, data units = one PE): the skewed queue of moving values waiting on the left
(they march right one step per cycle), the K x M array, and the PSUM result grid on the right laid
out like ``run.out`` (row m = PSUM partition m, column n = moving column n), filling up as sums
leave the bottom of the array. Colour = which moving column n a value belongs to.

Also the time-budget bars of one matmul estimate (notebook 01).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.collections import PatchCollection
from matplotlib.patches import FancyArrowPatch, Rectangle

from trnsim.models.systolic import SystolicRun

_EMPTY = "#f2f2f2"


def _colors(n: int) -> list:
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return [cmap(i % 10) for i in range(n)]


def _fmt(v: float) -> str:
    return f"{v:.0f}" if float(v).is_integer() else f"{v:.2g}"


def systolic_figsize(run: SystolicRun, width_in: float = 10.0) -> tuple[float, float]:
    """Figure size (inches) that draws one :func:`plot_systolic_state` panel at a readable scale."""
    units_w = (run.n + run.k - 1) + 1.6 + run.m + 1.4 + run.n + 0.4
    units_h = max(run.k, run.m) + 2.6
    return width_in, max(2.6, width_in * units_h / units_w + 0.5)


def plot_systolic_state(run: SystolicRun, cycle: int, ax: Any = None, *, show_values: bool = True) -> Any:
    """Draw ``run`` at the end of ``cycle``. Returns the Axes.

    Left to right: the skewed queue of moving values waiting to enter (they march right one step per
    cycle), the K x M PE array, and the PSUM result grid laid out like ``run.out`` (row m = PSUM
    partition m, fed by array column m; column n = moving column n). Each PE box shows its weight
    ``w`` (top), the moving value passing through (coloured disc) and the partial sum it sends down
    (bottom). Idle PEs are grey. Colour = which moving column n a value belongs to.
    """
    import matplotlib.pyplot as plt

    st = run.state(cycle)
    k_dim, m_dim, n_dim = run.k, run.m, run.n
    if ax is None:
        _, ax = plt.subplots(figsize=systolic_figsize(run))
    colors = _colors(n_dim)
    queue_w = n_dim + k_dim - 1          # longest wait in the skewed queue
    fs = 10 if max(k_dim, m_dim, n_dim) <= 8 else 8
    # patches are collected per layer and added as one PatchCollection each (add_patch per box costs more than
    # drawing it: each call updates the data limits)
    pe_boxes: list = []
    pe_discs: list = []
    queue_discs: list = []
    psum_boxes: list = []
    # --- the PE array: PE (k, m) is the unit square with lower-left corner (m, -k-1)
    for k in range(k_dim):
        for m in range(m_dim):
            col = st.moving_column[k, m]
            face = "white" if col < 0 else (*colors[col][:3], 0.18)
            pe_boxes.append(Rectangle((m + 0.04, -k - 0.96), 0.92, 0.92, facecolor=face,
                                      edgecolor="#444444" if col >= 0 else "#bbbbbb", lw=1.2))
            if show_values:
                ax.text(m + 0.5, -k - 0.2, f"w={_fmt(run.stationary[k, m])}", ha="center", va="center",
                        fontsize=fs - 1, color="#555555")
            if col >= 0:
                pe_discs.append(plt.Circle((m + 0.5, -k - 0.5), 0.17, color=colors[col]))
                if show_values:
                    ax.text(m + 0.5, -k - 0.5, _fmt(st.moving_value[k, m]), ha="center", va="center",
                            fontsize=fs - 1, color="white", zorder=4, fontweight="bold")
                    ax.text(m + 0.5, -k - 0.82, f"p={_fmt(st.partial_sum[k, m])}", ha="center", va="center",
                            fontsize=fs - 1, color="#222222")
    # --- the skewed input queue on the left: moving[k, n] enters at cycle n + k
    for k in range(k_dim):
        for n in range(n_dim):
            wait = run.entry_cycle(k, n) - cycle     # cycles until it enters PE (k, 0)
            if wait <= 0:
                continue
            x = -wait + 0.5
            queue_discs.append(plt.Circle((x, -k - 0.5), 0.2, color=colors[n], alpha=0.9))
            if show_values:
                ax.text(x, -k - 0.5, _fmt(run.moving[k, n]), ha="center", va="center", fontsize=fs - 1,
                        color="white", fontweight="bold")
        ax.plot([-queue_w - 0.3, 0.0], [-k - 0.5, -k - 0.5], color="#dddddd", lw=1, zorder=0)
        ax.text(-queue_w - 0.4, -k - 0.5, f"k={k}", ha="right", va="center", fontsize=fs)
    for m in range(m_dim):
        ax.text(m + 0.5, 0.08, f"m={m}", ha="center", va="bottom", fontsize=fs)
    # --- PSUM results right of the array, laid out like run.out: row m (partition m), column n
    x0 = m_dim + 1.4
    for m in range(m_dim):
        for n in range(n_dim):
            done = st.outputs_done[m, n]
            y = -m - 1
            psum_boxes.append(Rectangle((x0 + n + 0.06, y + 0.06), 0.88, 0.88, facecolor=colors[n] if done else _EMPTY,
                                        alpha=0.85 if done else 1.0, edgecolor="#999999", lw=0.6))
            if done and show_values:
                ax.text(x0 + n + 0.5, y + 0.5, _fmt(run.out[m, n]), ha="center", va="center", fontsize=fs,
                        color="white", fontweight="bold")
        ax.text(x0 - 0.1, -m - 0.5, f"m={m}", ha="right", va="center", fontsize=fs - 1)
    for n in range(n_dim):
        ax.text(x0 + n + 0.5, 0.08, f"n={n}", ha="center", va="bottom", fontsize=fs - 1)
    ax.text(x0 + n_dim / 2, 0.75, "PSUM out[m, n]", ha="center", va="bottom", fontsize=fs, color="#333333")
    for patches, z in ((pe_boxes, 1), (queue_discs, 1), (psum_boxes, 1), (pe_discs, 3)):
        if patches:
            ax.add_collection(PatchCollection(patches, match_original=True, zorder=z), autolim=False)
    # --- dataflow labels
    ax.add_patch(FancyArrowPatch((-queue_w - 0.3, 0.95), (m_dim, 0.95), arrowstyle="-|>", mutation_scale=10,
                                 color="#888888", lw=1))
    ax.text(-queue_w / 2, 1.05, "moving data waits (skewed), then flows right", ha="center", va="bottom",
            fontsize=fs - 1, color="#666666")
    ax.text(m_dim / 2, -k_dim - 0.1, "partial sums flow down;\ncolumn m's sum lands in PSUM row m",
            ha="center", va="top", fontsize=fs - 1, color="#666666")
    ax.text(x0 + n_dim / 2, -m_dim - 0.1, "= sum over k of w[k, m] x moving[k, n]", ha="center", va="top",
            fontsize=fs - 1, color="#666666")
    ax.set_xlim(-queue_w - 1.2, x0 + n_dim + 0.3)
    ax.set_ylim(-max(k_dim, m_dim) - 1.1, 1.6)
    ax.set_aspect("equal")
    ax.axis("off")
    done = int(st.outputs_done.sum())
    ax.set_title(f"cycle {cycle} (of 0..{run.cycles - 1}): {st.active_pes} of {k_dim * m_dim} PEs busy, "
                 f"{done} of {m_dim * n_dim} results in PSUM", fontsize=fs + 1)
    return ax


def plot_pe_activity(run: SystolicRun, ax: Any = None, cycle: int | None = None) -> Any:
    """Busy PEs per cycle (fill, steady state, drain), with an optional marker at ``cycle``."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 2.4))
    busy = (run.moving_column >= 0).sum(axis=(1, 2))
    t = np.arange(run.cycles)
    ax.bar(t, busy, color="#4c72b0", width=0.8)
    ax.axhline(run.k * run.m, color="black", ls=":", lw=1, label=f"all {run.k * run.m} PEs")
    if cycle is not None:
        ax.axvline(cycle, color="#d62728", lw=1.5, label=f"cycle {cycle}")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, run.k * run.m * 1.3)
    ax.set_xlabel("cycle")
    ax.set_ylabel("busy PEs")
    ax.set_title(f"K={run.k}, M={run.m}, N={run.n}: fill, steady state, drain in {run.cycles} cycles; "
                 f"array {100 * run.utilisation:.0f}% busy", fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
    return ax


def plot_time_budget(ax: Any, est: Any) -> Any:
    """Bars for a :class:`trnsim.models.matmul_math.MatmulEstimate`: compute time at peak, HBM time at the DMA
    ceiling, and Tensor Engine time of its 128x128 tiles (the slowest bar sets the pace)."""
    names = ["compute at peak", "HBM traffic", "Tensor Engine\n(128x128 tiles)"]
    vals = [est.compute_time_us, est.memory_time_us, est.tiles.tensor_time_us]
    colors = ["#d62728", "#ff7f0e", "#9467bd"]
    y = np.arange(len(vals))[::-1]
    ax.barh(y, vals, color=colors, height=0.6)
    for yy, v in zip(y, vals):
        ax.text(v, yy, f" {v:,.2f} us", va="center", fontsize=8)
    ax.set_yticks(y)
    ax.set_yticklabels(names, fontsize=8)
    ax.set_xlim(0, max(vals) * 1.45)
    ax.set_xlabel("time (us)")
    ax.set_title(f"{est.bound}-bound: about {est.time_us:,.2f} us", fontsize=10)
    ax.grid(axis="y", visible=False)
    return ax


def plot_tile_mapping(ax: Any, tiles: Any, highlight: tuple[int, int, int] = (0, 0, 0)) -> Any:
    """Draw C[M, N] = A[M, K] @ B[K, N] cut into ``nc_matmul`` tiles (a :class:`TileMapping`).

    A sits left of C and B above it, so the tiles line up along K. The highlighted
    (m_tile, k_tile, n_tile) shows the operands of one instruction. With A stationary, A's tile is
    loaded transposed as the stationary [K, M] tile and B's is the moving [K, N] tile; with B
    stationary (the short operand A moves), B's [K, N] tile stays and A's tile streams as [K, M],
    producing the C tile transposed. Either way the result accumulates in PSUM over the K tiles.
    """
    m, n, k = tiles.m, tiles.n, tiles.k
    mi, ki, ni = highlight
    if not (0 <= mi < tiles.m_tiles and 0 <= ki < tiles.k_tiles and 0 <= ni < tiles.n_tiles):
        raise ValueError(f"highlight {highlight} is outside the {tiles.m_tiles} x {tiles.k_tiles} x "
                         f"{tiles.n_tiles} tile grid")
    gap = 0.08 * max(m, n, k)
    # coordinates: x to the right, y downward (we flip the axis at the end)
    boxes = {"A": (0.0, k + gap, k, m), "B": (k + gap, 0.0, n, k), "C": (k + gap, k + gap, n, m)}
    colors = {"A": "#4c72b0", "B": "#dd8452", "C": "#55a868"}

    def grid(x0, y0, w, h, dx, dy, color):
        ax.add_patch(Rectangle((x0, y0), w, h, facecolor=(*matplotlib_color(color), 0.12), edgecolor=color, lw=1.5))
        for x in np.arange(dx, w, dx):
            ax.plot([x0 + x, x0 + x], [y0, y0 + h], color=color, lw=0.5, alpha=0.6)
        for y in np.arange(dy, h, dy):
            ax.plot([x0, x0 + w], [y0 + y, y0 + y], color=color, lw=0.5, alpha=0.6)

    grid(*boxes["A"], tiles.k_tile, tiles.m_tile, colors["A"])
    grid(*boxes["B"], tiles.n_tile, tiles.k_tile, colors["B"])
    grid(*boxes["C"], tiles.n_tile, tiles.m_tile, colors["C"])

    def tile(name, x, y, w, h):
        x0, y0, bw, bh = boxes[name]
        ax.add_patch(Rectangle((x0 + x, y0 + y), min(w, bw - x), min(h, bh - y), facecolor=colors[name],
                               alpha=0.85, edgecolor="black", lw=1))

    tile("A", ki * tiles.k_tile, mi * tiles.m_tile, tiles.k_tile, tiles.m_tile)
    tile("B", ni * tiles.n_tile, ki * tiles.k_tile, tiles.n_tile, tiles.k_tile)
    tile("C", ni * tiles.n_tile, mi * tiles.m_tile, tiles.n_tile, tiles.m_tile)
    fs = 9
    ax.text(k / 2, k + gap - gap * 0.25, f"A [M={m:,} x K={k:,}]", ha="center", va="bottom", fontsize=fs)
    ax.text(k + gap + n / 2, -gap * 0.25, f"B [K={k:,} x N={n:,}]", ha="center", va="bottom", fontsize=fs)
    ax.text(k + gap + n / 2, k + gap + m + gap * 0.3, f"C [M={m:,} x N={n:,}]  (in PSUM, tile by tile)",
            ha="center", va="top", fontsize=fs)
    ax.text(k / 2, k / 2, f"{tiles.instructions:,} nc_matmul\n= {tiles.m_tiles} x {tiles.k_tiles} x {tiles.n_tiles}"
            f"\n(M x K x N tiles)", ha="center", va="center", fontsize=fs + 1)
    ax.set_xlim(-gap * 0.2, k + gap + n + gap * 0.2)
    ax.set_ylim(k + gap + m + gap * 1.4, -gap * 0.9)
    ax.set_aspect("equal")
    ax.axis("off")
    ks, ms, ns = (min(tiles.k_tile, k - ki * tiles.k_tile), min(tiles.m_tile, m - mi * tiles.m_tile),
                  min(tiles.n_tile, n - ni * tiles.n_tile))
    if tiles.stationary == "A":
        title = (f"one instruction (dark): A tile as stationary [{ks} x {ms}],\n"
                 f"B tile as moving [{ks} x {ns}] -> C tile [{ms} x {ns}] in PSUM")
    else:
        title = (f"one instruction (dark): B tile as stationary [{ks} x {ns}],\n"
                 f"A tile as moving [{ks} x {ms}] -> C.T tile [{ns} x {ms}] in PSUM")
    ax.set_title(title, fontsize=9)
    return ax


def matplotlib_color(c: str) -> tuple:
    from matplotlib.colors import to_rgb

    return to_rgb(c)


__all__ = ["systolic_figsize", "plot_systolic_state", "plot_pe_activity", "plot_time_budget", "plot_tile_mapping"]
