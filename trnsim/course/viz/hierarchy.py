"""Figures for notebook 03: the memory hierarchy, SBUF/PSUM occupancy maps and the DMA cost curve.

All take Axes and records from :mod:`trnsim.models.matmul_math` (``MemoryLevel``, ``TilePlan``, ``DmaCost``).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from matplotlib.patches import Rectangle

LEVEL_COLORS = {"host DRAM": "#8c8c8c", "HBM": "#dd8452", "SBUF": "#4c72b0", "PSUM": "#55a868"}
_BUF_COLORS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c"]


def _bytes(b: float) -> str:
    for unit, f in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= f:
            return f"{b / f:,.0f} {unit}" if b / f >= 10 else f"{b / f:,.1f} {unit}"
    return f"{b:,.0f} B"


def plot_hierarchy(axs: Sequence[Any], levels: Sequence[Any]) -> Sequence[Any]:
    """Two bar charts on a log scale: capacity (left) and bandwidth (right) of each level, fastest on top."""
    ax_c, ax_b = axs
    order = list(levels)[::-1]                         # PSUM on top
    y = np.arange(len(order))
    colors = [LEVEL_COLORS.get(lv.name, "#999999") for lv in order]
    caps = [lv.capacity_bytes for lv in order]
    bws = [lv.bandwidth_gbytes_per_s for lv in order]
    ax_c.barh(y, caps, color=colors, height=0.6, log=True)
    ax_b.barh(y, bws, color=colors, height=0.6, log=True)
    for yy, lv in zip(y, order):
        ax_c.text(lv.capacity_bytes * 1.3, yy, _bytes(lv.capacity_bytes), va="center", fontsize=8)
        approx = "~" if "approximate" in lv.source else ""
        bw = lv.bandwidth_gbytes_per_s
        ax_b.text(bw * 1.3, yy, f"{approx}{bw / 1e3:,.0f} TB/s" if bw >= 1e3 else f"{approx}{bw:,.0f} GB/s",
                  va="center", fontsize=8)
    ax_c.set_yticks(y)
    ax_c.set_yticklabels([f"{lv.name}\n{lv.layout}" if len(lv.layout) < 30 else lv.name for lv in order], fontsize=8)
    ax_b.set_yticks(y)
    ax_b.set_yticklabels([lv.name for lv in order], fontsize=8)
    ax_c.set_xlim(min(caps) / 3, max(caps) * 60)
    ax_b.set_xlim(min(bws) / 3, max(bws) * 30)
    ax_c.set_xlabel("capacity per NeuronCore (bytes, log scale)")
    ax_b.set_xlabel("bandwidth (GB/s, log scale)")
    ax_c.set_title("Capacity: from HBM up, each level is ~10-1000x smaller", fontsize=10)
    ax_b.set_title("... and ~20x faster per step up to SBUF (PSUM: as fast as SBUF)", fontsize=10)
    for ax in axs:
        ax.grid(axis="y", visible=False)
    return axs


def plot_sbuf_map(ax: Any, plan: Any) -> Any:
    """SBUF as 128 partitions (rows) x usable bytes per partition (columns), with the plan's live buffers.

    Every buffer uses the same byte range in each partition it spans (NKI allocation rule), so a
    tile is a rectangle: ``partitions`` tall, ``free x itemsize`` bytes wide.
    """
    cap = plan.sbuf_usable_bytes_per_partition
    parts = plan.sbuf_partitions
    ax.add_patch(Rectangle((0, 0), cap, parts, facecolor="#f4f4f4", edgecolor="#666666", lw=1))
    w = plan.tile_bytes_per_partition
    min_w = cap * 0.004                                  # keep tiny tiles visible (drawn at least this wide)
    for b in range(plan.buffers):
        x0 = b * w
        ax.add_patch(Rectangle((x0, 0), max(w, min_w), plan.partitions, facecolor=_BUF_COLORS[b % 8],
                               edgecolor="black", lw=0.6, alpha=0.85))
    used = plan.sbuf_bytes_per_partition
    ax.annotate(f"{plan.buffers} x [{plan.partitions} x {plan.free:,}] {plan.dtype}\n"
                f"{used:,} B per partition ({100 * used / cap:.1f}%)",
                xy=(max(used, min_w), plan.partitions / 2), xytext=(max(used, min_w) + cap * 0.05, parts * 0.55),
                fontsize=8, arrowprops=dict(arrowstyle="->", color="#333333", lw=0.8), va="center")
    ax.set_xlim(0, cap)
    ax.set_ylim(parts, 0)
    ax.set_xticks(np.linspace(0, cap, 5))
    ax.set_xticklabels([f"{x / 1024:.0f} KiB" for x in np.linspace(0, cap, 5)], fontsize=8)
    ax.set_yticks([0, 32, 64, 96, parts])
    ax.set_ylabel("partition")
    ax.set_xlabel("byte offset within each partition (usable SBUF)")
    ax.set_title(f"SBUF: {parts} partitions x {cap // 1024} KiB usable, {100 * plan.sbuf_fraction:.1f}% in use",
                 fontsize=10)
    ax.grid(False)
    return ax


def plot_psum_map(ax: Any, plan: Any) -> Any:
    """PSUM as 128 partitions x 8 banks; the banks the plan's tiles would take as FP32 matmul results."""
    banks, parts = plan.psum_banks, plan.sbuf_partitions
    need = plan.psum_banks_needed
    for b in range(banks):
        ax.add_patch(Rectangle((b, 0), 1, parts, facecolor="#f4f4f4", edgecolor="#666666", lw=1))
    per = plan.psum_banks_per_tile
    for t in range(plan.buffers):
        for j in range(per):
            bank = t * per + j
            if bank >= banks:
                break
            ax.add_patch(Rectangle((bank, 0), 1, plan.partitions, facecolor=_BUF_COLORS[t % 8], alpha=0.85,
                                   edgecolor="black", lw=0.6))
    for b in range(banks):
        ax.text(b + 0.5, parts + 6, f"b{b}", ha="center", va="top", fontsize=7)
    over = need > banks
    msg = f"needs {need} of {banks} banks" if over else f"{need} of {banks} banks (2 KiB each)"
    if not plan.fits_one_psum_bank:
        msg += f"\nfree > {plan.psum_bank_fmax}: too wide for one bank"
    ax.set_xlim(0, banks)
    ax.set_ylim(parts + 14, 0)
    ax.set_xticks([])
    ax.set_yticks([0, 64, parts])
    ax.set_ylabel("partition")
    ax.set_title(f"PSUM, tiles as FP32 results:\n{msg}", fontsize=8.5, color="#c44e52" if over or not plan.fits_one_psum_bank
                 else "black")
    ax.grid(False)
    return ax


def plot_dma_curve(ax: Any, costs: Sequence[Any], *, thresholds: dict | None = None, mark: Any = None,
                   ceiling_gbytes_per_s: float | None = None,
                   published: Sequence[tuple[float, float]] | None = None) -> Any:
    """Effective bandwidth of one load vs bytes per partition (log x): alone, and back to back in one queue.

    ``costs`` are DmaCost records over a range of sizes at one partition count; ``thresholds`` maps a
    label to bytes per partition (the NKI guidance lines); ``mark`` is the DmaCost of the current tile;
    ``published`` are measured (bytes per partition, GB/s) points to compare with, e.g.
    ``trnsim.perf.dma.published_curve(dma_params(core, chip))``.
    """
    x = np.array([c.bytes_per_partition for c in costs], dtype=float)
    alone = np.array([c.gbytes_per_s for c in costs])
    queued = np.array([c.queued_gbytes_per_s for c in costs])
    ax.semilogx(x, alone, color="#c44e52", lw=2, label="one transfer alone (fixed ~1.3 us + data)")
    ax.semilogx(x, queued, color="#4c72b0", lw=2, ls="--", label="back to back in one queue: max(fixed, data)")
    if published:
        px, py = zip(*published)
        ax.scatter(px, py, marker="s", s=22, color="black", zorder=5, label="AWS measured, [128, B] (nki-dma-overview)")
    if ceiling_gbytes_per_s:
        ax.axhline(ceiling_gbytes_per_s, color="black", ls=":", lw=1,
                   label=f"DMA ceiling {ceiling_gbytes_per_s:,.0f} GB/s")
    top = max(float(queued.max()), ceiling_gbytes_per_s or 0.0) * 1.12
    for label, b in (thresholds or {}).items():
        ax.axvline(b, color="#999999", lw=0.8)
        ax.text(b * 1.06, top * 0.02, label, rotation=90, va="bottom", fontsize=7, color="#555555",
                bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=1))
    if mark is not None:
        ax.scatter([mark.bytes_per_partition], [mark.gbytes_per_s], s=60, color="#c44e52", zorder=4,
                   edgecolor="black")
        ax.annotate(f"your tile: {mark.gbytes_per_s:,.0f} GB/s", (mark.bytes_per_partition, mark.gbytes_per_s),
                    xytext=(-12, 40), textcoords="offset points", fontsize=8, ha="right",
                    arrowprops=dict(arrowstyle="-", color="#c44e52", lw=0.8))
    ax.set_ylim(0, top)
    ax.set_xlabel("bytes per partition in one transfer (log scale)")
    ax.set_ylabel("effective GB/s")
    parts = costs[0].partitions if costs else 0
    ax.set_title(f"DMA HBM -> SBUF, {parts} partitions: the fixed cost sets a knee", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    return ax


__all__ = ["plot_hierarchy", "plot_sbuf_map", "plot_psum_map", "plot_dma_curve", "LEVEL_COLORS"]
