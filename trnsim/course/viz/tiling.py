"""Figure for notebook 04: which iteration of a kernel's tile loops writes which part of the output."""
from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch, Rectangle

from trnsim.models.tiling import Coverage

_PALETTE = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c",
            "#ccb974", "#64b5cd", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#17becf"]


def plot_coverage(ax: Axes, cov: Coverage, max_labels: int = 48) -> None:
    """Draw the output array coloured by the loop iteration that wrote each element.

    Grey hatching marks the part of a full-size tile that lies beyond the output (what the ``min()``
    bound clips off the last tile's slice), pink marks output elements nobody wrote. Partition dimension (rows) runs down, free dimension
    (columns) across, as in NKI's pictures of SBUF tiles.
    """
    c = cov.choice
    gi, gj = int(c.loops[0]), int(c.loops[1])
    height = max(c.rows, gi * c.tile_p)
    width = max(c.cols, gj * c.tile_f)
    if cov.owner is not None:
        owner = cov.owner
        cmap = ListedColormap(_PALETTE)
        shown = np.ma.masked_invalid(np.mod(owner, len(_PALETTE)))
        ax.imshow(shown, cmap=cmap, vmin=-0.5, vmax=len(_PALETTE) - 0.5, interpolation="nearest",
                  extent=(0, c.cols, c.rows, 0), aspect="auto")
        if cov.unwritten:
            nan_img = np.where(np.isnan(owner), 1.0, np.nan)
            ax.imshow(np.ma.masked_invalid(nan_img), cmap=ListedColormap(["#f4cccc"]), interpolation="nearest",
                      extent=(0, c.cols, c.rows, 0), aspect="auto")
    else:
        ax.add_patch(Rectangle((0, 0), c.cols, c.rows, facecolor="#f0f0f0", edgecolor="none"))
        ax.text(c.cols / 2, c.rows / 2, "kernel rejected:\n" + (cov.rule or "error"), ha="center", va="center",
                color="#c44e52", fontsize=10, fontweight="bold")
    # tile footprints, and the parts that hang over the edge of the output (clipped off by min())
    for i in range(gi):
        for j in range(gj):
            x0, y0 = j * c.tile_f, i * c.tile_p
            ax.add_patch(Rectangle((x0, y0), c.tile_f, c.tile_p, fill=False, edgecolor="black", lw=0.8))
            if x0 + c.tile_f > c.cols or y0 + c.tile_p > c.rows:
                for (rx, ry, rw, rh) in _overhang(x0, y0, c.tile_f, c.tile_p, c.cols, c.rows):
                    ax.add_patch(Rectangle((rx, ry), rw, rh, facecolor="none", edgecolor="#999999", hatch="///",
                                           lw=0))
            if gi * gj <= max_labels and cov.owner is not None:
                idle = x0 >= c.cols or y0 >= c.rows
                if idle:
                    cx, cy, label, color = x0 + c.tile_f / 2, y0 + c.tile_p / 2, f"({i},{j})\nidle", "#333333"
                else:
                    cx = x0 + min(c.tile_f, c.cols - x0) / 2
                    cy = y0 + min(c.tile_p, c.rows - y0) / 2
                    label, color = f"({i},{j})", "white"
                ax.text(cx, cy, label, ha="center", va="center", fontsize=8, color=color,
                        bbox=dict(facecolor="white", edgecolor="none", pad=1) if idle else None)
    ax.add_patch(Rectangle((0, 0), c.cols, c.rows, fill=False, edgecolor="#c44e52", lw=2.0))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.set_xlabel("free dimension (columns)")
    ax.set_ylabel("partition dimension (rows)")
    ax.grid(False)
    ax.set_title(f"Output [{c.rows}, {c.cols}]: loop iteration (i, j) that wrote each element", fontsize=10)
    overhang = "beyond the output: clipped off by min()" if c.clip else "beyond the output: not clipped"
    handles = [Patch(facecolor="none", edgecolor="#c44e52", lw=2, label="output array"),
               Patch(facecolor="none", edgecolor="#999999", hatch="///", label=overhang)]
    if cov.unwritten:
        handles.append(Patch(facecolor="#f4cccc", label="never written (NaN)"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def _overhang(x0: float, y0: float, w: float, h: float, cols: int, rows: int) -> list[tuple[float, float, float, float]]:
    """Rectangles of the tile ``(x0, y0, w, h)`` that lie outside ``[0, cols) x [0, rows)``."""
    parts = []
    if x0 + w > cols:   # right overhang (full tile height)
        left = max(x0, cols)
        parts.append((left, y0, x0 + w - left, h))
    if y0 + h > rows:   # bottom overhang (only the part inside the output's columns, to avoid double hatching)
        top = max(y0, rows)
        right = min(x0 + w, cols)
        if right > x0:
            parts.append((x0, top, right - x0, y0 + h - top))
    return parts
