"""Figures for collectives (notebook 09): ring steps on a torus, time vs size, NeuronLink vs EFA.

Every function draws onto Axes it is given and returns nothing important; the data come
from :mod:`trnsim.cluster.analysis` and :mod:`trnsim.cluster.collectives`.
"""
from __future__ import annotations

from typing import Sequence

import matplotlib.colors as mcolors
import numpy as np
from matplotlib.axes import Axes
from matplotlib.patches import FancyArrowPatch

from trnsim.cluster.analysis import LinkCase, RingAnimation
from trnsim.cluster.collectives import CollectiveTiming
from trnsim.cluster.topology import Topology

ALGO_COLORS = {
    "ring": "#4c72b0",
    "recursive_doubling": "#dd8452",
    "recursive_halving_doubling": "#55a868",
    "mesh": "#c44e52",
    "hierarchical": "#8172b3",
    "auto": "#222222",
}
ALGO_LABELS = {
    "ring": "ring",
    "recursive_doubling": "recursive doubling",
    "recursive_halving_doubling": "RDH (halving + doubling)",
    "mesh": "mesh",
    "hierarchical": "hierarchical",
    "auto": "auto (documented choice)",
}


def format_bytes(n: float) -> str:
    """1024 -> '1 KiB', 3*2**20 -> '3 MiB' (short tick labels)."""
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= f:
            v = n / f
            return f"{v:.0f} {unit}" if v >= 10 or v == int(v) else f"{v:.1f} {unit}"
    return f"{n:.0f} B"


def _chip_xy(topo: Topology, rank: int) -> tuple[float, float]:
    r = topo.ranks[rank]
    s = topo.spec
    if s.kind in ("torus2d", "ultraserver-ring") and len(s.torus_shape) == 2:
        rows, cols = s.torus_shape
        row, col = divmod(r.chip_in_instance, cols)
        x, y = float(col), float(rows - 1 - row)
    else:
        n = s.chips_per_instance
        ang = 2 * np.pi * r.chip_in_instance / max(n, 1)
        x, y = 1.5 + 1.6 * np.sin(ang), 1.5 + 1.6 * np.cos(ang)
    cores = sorted({q.core for q in topo.ranks if q.chip == r.chip})
    if len(cores) > 1:
        k = cores.index(r.core)
        x += (k - (len(cores) - 1) / 2) * 0.28
    return x, y


def _arrow(ax: Axes, a: tuple[float, float], b: tuple[float, float], wrap_size: tuple[int, int] | None,
           **kw) -> None:
    """Arrow a -> b; on a torus a wrap-around hop is drawn as two stubs leaving and entering the grid."""
    (xa, ya), (xb, yb) = a, b
    if wrap_size is not None and (abs(xa - xb) > 1.5 or abs(ya - yb) > 1.5):
        dx = 0.0 if abs(xa - xb) <= 1.5 else (0.55 if xb < xa else -0.55)
        dy = 0.0 if abs(ya - yb) <= 1.5 else (0.55 if yb < ya else -0.55)
        ax.add_patch(FancyArrowPatch((xa, ya), (xa + dx, ya + dy), arrowstyle="-", shrinkA=9, shrinkB=0, **kw))
        ax.add_patch(FancyArrowPatch((xb - dx, yb - dy), (xb, yb), arrowstyle="-|>", mutation_scale=11,
                                     shrinkA=0, shrinkB=9, **kw))
        return
    ax.add_patch(FancyArrowPatch((xa, ya), (xb, yb), arrowstyle="-|>", mutation_scale=11, shrinkA=9, shrinkB=9,
                                 **kw))


def draw_ring_step(ax_net: Axes, ax_state: Axes, anim: RingAnimation, topo: Topology, step: int) -> None:
    """Left: the chips and the ring, with this step's transfers in bold. Right: who holds what.

    ``step`` = number of rounds done (0 = before the first round); arrows show round ``step``
    (the next one). The right panel colours each (rank, chunk) by the fraction of ranks whose
    contribution it already holds; rows and columns follow the ring order.
    """
    p = anim.states.shape[1]
    step = int(np.clip(step, 0, anim.rounds))
    order = list(anim.order)
    pos = {r: _chip_xy(topo, r) for r in range(p)}
    wrap = tuple(topo.spec.torus_shape) if topo.spec.kind in ("torus2d", "ultraserver-ring") else None
    st = anim.states[step]
    for i, r in enumerate(order):
        _arrow(ax_net, pos[r], pos[order[(i + 1) % p]], wrap, color="#bbbbbb", lw=1.0)
    cmap = mcolors.LinearSegmentedColormap.from_list("done", ["#f0f0f0", "#2a9d8f"])
    for r in range(p):
        frac = float((st[r] == p).sum()) / p
        ax_net.scatter(*pos[r], s=330, color=cmap(frac), edgecolor="#333333", zorder=3)
        ax_net.text(*pos[r], str(r), ha="center", va="center", fontsize=8, zorder=4)
    if step < anim.rounds:
        rs = "reduce-scatter" in anim.phases[step]
        color = "#e76f51" if rs else "#264653"
        for src, dst, chunk in anim.moves[step]:
            _arrow(ax_net, pos[src], pos[dst], wrap, color=color, lw=2.2)
            if p <= 16:  # name the chunk in flight (chunk c belongs to rank c at the end of reduce-scatter)
                (xa, ya), (xb, yb) = pos[src], pos[dst]
                if wrap is not None and (abs(xa - xb) > 1.5 or abs(ya - yb) > 1.5):
                    lx = xb + (0.0 if abs(xa - xb) <= 1.5 else (-0.42 if xb < xa else 0.42))
                    ly = yb + (0.0 if abs(ya - yb) <= 1.5 else (-0.42 if yb < ya else 0.42))
                else:
                    lx, ly = (xa + xb) / 2, (ya + yb) / 2
                vertical = abs(xa - xb) < 0.1
                ax_net.text(lx + (0.1 if vertical else 0.0), ly + (0.0 if vertical else 0.13), f"c{chunk}",
                            fontsize=6, ha="left" if vertical else "center", va="center" if vertical else "bottom",
                            color=color, zorder=5)
        label = ("reduce-scatter: each rank adds the chunk it receives" if rs
                 else "all-gather: each rank copies a finished chunk")
    else:
        label = "done: every rank holds every chunk complete"
    xs = [xy[0] for xy in pos.values()]
    ys = [xy[1] for xy in pos.values()]
    ax_net.set_xlim(min(xs) - 0.9, max(xs) + 0.9)
    ax_net.set_ylim(min(ys) - 0.9, max(ys) + 0.9)
    ax_net.set_aspect("equal")
    ax_net.axis("off")
    ax_net.set_title(f"step {step}/{anim.rounds}: {label}", fontsize=9)

    shown = st[np.ix_(order, order)] / p
    ax_state.imshow(shown, cmap="viridis", vmin=0, vmax=1, aspect="equal")
    ticks = list(range(0, p, max(1, p // 8)))
    ax_state.set_xticks(ticks, [str(order[t]) for t in ticks], fontsize=7)
    ax_state.set_yticks(ticks, [str(order[t]) for t in ticks], fontsize=7)
    ax_state.set_xlabel("chunk (owner's rank, ring order)")
    ax_state.set_ylabel("rank (ring order)")
    ax_state.grid(False)
    ax_state.set_title(f"fraction of contributions held\nt = {anim.times_us[step]:,.1f} us "
                       f"for {format_bytes(anim.message_bytes)}", fontsize=9)


def plot_time_vs_size(ax: Axes, sizes: Sequence[int], sweep: dict[str, list[CollectiveTiming | None]],
                      regions: Sequence[tuple[int, int, str]] = (), highlight: tuple[int, float] | None = None,
                      title: str = "") -> None:
    """Log-log time vs message size per algorithm, documented auto regions shaded, ring's alpha=beta marked."""
    sizes = np.asarray(sizes, dtype=float)
    for algo, row in sweep.items():
        pts = [(n, t.time_us) for n, t in zip(sizes, row) if t is not None and t.time_us > 0]
        if not pts:
            continue
        x, y = zip(*pts)
        if algo == "auto":
            ax.plot(x, y, color=ALGO_COLORS["auto"], lw=1.2, ls="--", label=ALGO_LABELS["auto"], zorder=4)
        else:
            ax.plot(x, y, color=ALGO_COLORS.get(algo, "gray"), lw=2, marker="o", ms=3,
                    label=ALGO_LABELS.get(algo, algo))
    band_colors = {"mesh": "#c44e52", "recursive_halving_doubling": "#55a868", "recursive_doubling": "#dd8452",
                   "ring": "#4c72b0", "hierarchical": "#8172b3"}
    for i, (lo, hi, algo) in enumerate(regions):
        right = regions[i + 1][0] if i + 1 < len(regions) else hi
        ax.axvspan(lo, right, color=band_colors.get(algo, "gray"), alpha=0.07, lw=0)
        ax.text(np.sqrt(lo * right), 0.97, ALGO_LABELS.get(algo, algo).split(" (")[0], transform=ax.get_xaxis_transform(),
                ha="center", va="top", fontsize=7, color=band_colors.get(algo, "gray"))
    ring = sweep.get("ring")
    if ring:
        for n, t in zip(sizes, ring):
            if t is not None and t.beta_us >= t.alpha_us:
                ax.axvline(n, color="#555555", ls=":", lw=1)
                ax.text(n * 1.12, 0.03, "ring: transfer > latency", transform=ax.get_xaxis_transform(), fontsize=7,
                        color="#555555", rotation=90, va="bottom")
                break
    if highlight is not None:
        ax.scatter([highlight[0]], [highlight[1]], s=90, facecolor="none", edgecolor="black", lw=1.5, zorder=5)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.minorticks_off()  # minor log ticks cost more to draw than the data; the grid uses major ticks
    ticks = [2**k for k in range(0, 40, 4) if sizes.min() <= 2**k <= sizes.max()]
    ax.set_xticks(ticks, [format_bytes(t) for t in ticks], fontsize=8)
    ax.set_xlabel("message size S")
    ax.set_ylabel("time (us)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, 0.9))
    if title:
        ax.set_title(title, fontsize=10)


def plot_link_comparison(ax: Axes, cases: Sequence[LinkCase]) -> None:
    """Horizontal bars of bus bandwidth per machine, annotated with time and algorithm."""
    labels = [c.label for c in cases]
    bw = [c.timing.busbw_gbytes_per_s for c in cases]
    colors = ["#e76f51" if "EFA" in c.label else "#2a9d8f" for c in cases]
    y = np.arange(len(cases))[::-1]
    ax.barh(y, bw, color=colors)
    ax.set_yticks(y, labels, fontsize=8)
    top = max(bw) if bw else 1.0
    for yi, c in zip(y, cases):
        ax.text(c.timing.busbw_gbytes_per_s + top * 0.01, yi,
                f"{c.timing.busbw_gbytes_per_s:,.0f} GB/s, {c.timing.time_us / 1e3:,.2f} ms ({c.timing.algorithm})",
                va="center", fontsize=7)
    ax.set_xlim(0, top * 1.55)
    ax.set_xlabel("bus bandwidth (GB/s, NCCL-tests definition)")
    ax.grid(axis="y", visible=False)
    if cases:
        ax.set_title(f"{cases[0].timing.op.replace('_', '-')} of {format_bytes(cases[0].timing.message_bytes)}: "
                     "NeuronLink (green) vs EFA (orange)", fontsize=10)


def plot_phase_breakdown(ax: Axes, timing: CollectiveTiming) -> None:
    """Stacked bars per phase: latency (alpha) and transfer (beta) time."""
    names = [p.name for p in timing.phases]
    a = [p.alpha_us for p in timing.phases]
    b = [p.beta_us for p in timing.phases]
    y = np.arange(len(names))[::-1]
    ax.barh(y, a, color="#f4a261", label="latency (steps x alpha)")
    ax.barh(y, b, left=a, color="#264653", label="transfer (busiest link)")
    ax.set_yticks(y, [f"{n} [{p.link_kind}]" for n, p in zip(names, timing.phases)], fontsize=7)
    ax.set_xlabel("time (us)")
    ax.set_xlim(0, max(x + y for x, y in zip(a, b)) * 1.45 if names else 1)
    ax.legend(fontsize=7, loc="center right")
    ax.grid(axis="y", visible=False)
    ax.set_title(f"{timing.algorithm}: {timing.time_us:,.0f} us in {timing.steps} steps", fontsize=10)
