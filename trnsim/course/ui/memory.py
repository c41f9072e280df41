"""Widget for notebook 03: tile shape and dtype -> SBUF/PSUM occupancy picture and DMA time.

Thin wiring only: numbers from :func:`trnsim.models.matmul_math.plan_tiles` and
:func:`trnsim.models.matmul_math.dma_load_cost` (which use trnsim.perf's DMA model and scheduler),
figures from :mod:`trnsim.course.viz.hierarchy`. Drive it in code by setting ``panel.partitions.value``,
``panel.free.value``, ``panel.dtype.value``, ...; read ``panel.result`` (a ``TilePlan``),
``panel.summary`` and ``panel.error``.
"""
from __future__ import annotations

from functools import lru_cache

import ipywidgets as widgets
import numpy as np

from trnsim.catalog import target as get_target
from trnsim.models.matmul_math import MATMUL_DTYPES, DmaCost, TilePlan, dma_load_cost, itemsize, plan_tiles
from trnsim.perf.roofline import roofline
from trnsim.course.ui.matmul import target_choice
from trnsim.course.ui.render import dtype_choice, fit_labels, missing_choices, PanelFigure, show
from trnsim.course.viz.hierarchy import plot_dma_curve, plot_psum_map, plot_sbuf_map

TARGETS = ("trn1", "inf2", "trn2", "trn3")
CURVE_BYTES_PER_PARTITION = np.unique(np.geomspace(4, 65536, 36).astype(int))


@lru_cache(maxsize=64)
def _dma_curve(partitions: int, dtype: str, target: str) -> tuple[DmaCost, ...]:
    size = itemsize(dtype)
    frees = sorted({max(1, int(b) // size) for b in CURVE_BYTES_PER_PARTITION})
    return tuple(dma_load_cost(partitions, f, dtype, target) for f in frees)


def dma_curve(partitions: int, dtype: str, target: str) -> list[DmaCost]:
    """One-load DMA costs over a range of bytes per partition (for the knee plot), priced by
    :func:`trnsim.models.matmul_math.dma_load_cost` (the simulator's current DMA model; cached per argument)."""
    return list(_dma_curve(int(partitions), dtype, target))


@lru_cache(maxsize=256)
def _plan(rows: int, cols: int, dtype: str, partitions: int, free: int, buffers: int, target: str) -> TilePlan:
    return plan_tiles(rows, cols, dtype, partitions, free, buffers, target)


def dma_thresholds(target: str) -> dict[str, int]:
    """The NKI DMA guidance lines (catalog CostConstants), labelled for the plot."""
    c = get_target(target).core.cost
    return {f"{c.dma_overhead_bound_bytes_per_partition} B: overhead-bound": c.dma_overhead_bound_bytes_per_partition,
            f"{c.dma_min_bytes_per_partition // 1024} KiB: minimum": c.dma_min_bytes_per_partition,
            f"{c.dma_saturate_bytes_per_partition // 1024} KiB: saturates": c.dma_saturate_bytes_per_partition}


def _layout(fig):
    gs = fig.add_gridspec(2, 2, width_ratios=[2.2, 1], height_ratios=[1, 1.15], hspace=0.55, wspace=0.25,
                          left=0.07, right=0.98, top=0.87, bottom=0.08)
    return fig.add_subplot(gs[0, 0]), fig.add_subplot(gs[0, 1]), fig.add_subplot(gs[1, :])


class MemoryPanel:
    """A tensor in HBM, a tile shape, a dtype and a buffer count -> SBUF/PSUM maps and DMA time."""

    def __init__(self, rows: int = 4096, cols: int = 4096, partitions: int = 128, free: int = 512,
                 dtype: str = "bfloat16", buffers: int = 2, target: str = "trn1") -> None:
        s = {"description_width": "initial"}
        lay = widgets.Layout(width="235px")
        self.rows = widgets.BoundedIntText(value=rows, min=1, max=1 << 20, description="tensor rows", style=s,
                                           layout=lay)
        self.cols = widgets.BoundedIntText(value=cols, min=1, max=1 << 20, description="tensor cols", style=s,
                                           layout=lay)
        self.partitions = widgets.IntSlider(value=partitions, min=1, max=128, description="tile partitions",
                                            continuous_update=False, style=s, layout=lay)
        self.free = widgets.BoundedIntText(value=free, min=1, max=1 << 20, description="tile free", style=s,
                                           layout=lay)
        self.dtype = dtype_choice(MATMUL_DTYPES, dtype, style=s, layout=lay)
        self.buffers = widgets.IntSlider(value=buffers, min=1, max=8, description="buffers",
                                         continuous_update=False, style=s, layout=lay)
        self.target = target_choice(target, style=s, layout=lay)
        self.out = widgets.Output(layout=widgets.Layout(min_height="480px"))
        self.result: TilePlan | None = None
        self._figure = PanelFigure()
        self.summary = ""
        self.error = ""
        for w in self.controls:
            w.observe(self._on_change, names="value")
        self.update()

    @property
    def controls(self) -> tuple[widgets.Widget, ...]:
        return (self.rows, self.cols, self.partitions, self.free, self.dtype, self.buffers, self.target)

    def _on_change(self, _change) -> None:
        self.update()

    def update(self) -> None:
        """Recompute and redraw; an invalid tiling is shown in the output area and kept in ``error``."""
        self.error = missing_choices((self.dtype, self.target))
        if self.error:
            self.result, self.summary = None, ""
            show(self.out, error=self.error)
            return
        try:
            plan = _plan(self.rows.value, self.cols.value, self.dtype.value, self.partitions.value,
                         self.free.value, self.buffers.value, self.target.value)
            curve = dma_curve(self.partitions.value, self.dtype.value, self.target.value)
        except (ValueError, TypeError) as exc:
            self.result, self.summary, self.error = None, "", str(exc)
            show(self.out, error=f"Cannot place this tiling: {exc}")
            return
        self.result, self.summary = plan, plan.summary()
        ax_sbuf, ax_psum, ax_dma = self._figure.axes("memory", (11.5, 6.4), _layout)
        plot_sbuf_map(ax_sbuf, plan)
        plot_psum_map(ax_psum, plan)
        plot_dma_curve(ax_dma, curve, thresholds=dma_thresholds(self.target.value),
                       mark=plan.dma, ceiling_gbytes_per_s=roofline(self.target.value).dma_gbytes_per_s)
        ax_dma.minorticks_off()   # minor ticks of a log axis are a large share of a redraw
        fig = self._figure.figure
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        controls = widgets.HBox(list(self.controls), layout=widgets.Layout(flex_flow="row wrap"))
        return fit_labels(widgets.VBox([controls, self.out]))


__all__ = ["MemoryPanel", "dma_curve", "dma_thresholds", "TARGETS"]
