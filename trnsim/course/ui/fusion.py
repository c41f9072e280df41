"""Widget: fused vs unfused kernels -> HBM traffic, engine balance, timelines (notebook 06).

Thin wiring only: numbers come from :func:`trnsim.models.journey.compare_fusion` (two
timing-only profiles), plots from :mod:`trnsim.course.viz.journey` and :mod:`trnsim.course.viz.timeline`. Drive it in
code by setting ``panel.workload.value`` ("softmax", "normalisation", "attention"),
``panel.length.value`` (rows, or sequence length for attention) and ``panel.cols.value``; read
``panel.result``, ``panel.summary`` and ``panel.error``.
"""
from __future__ import annotations

import ipywidgets as widgets

from trnsim.models.journey import WORKLOADS, FusionResult, compare_fusion
from trnsim.course.ui.render import Choice, PanelFigure, cached_tight_layout, fit_labels, missing_choices, show
from trnsim.course.viz.journey import plot_engine_balance, plot_traffic
from trnsim.course.viz.timeline import plot_timeline

LENGTHS = (512, 1024, 2048, 4096)
COLS = (512, 1024, 2048)


def _layout(fig):
    gs = fig.add_gridspec(3, 2, height_ratios=(1.2, 1, 1))
    return fig.add_subplot(gs[0, 0]), fig.add_subplot(gs[0, 1]), fig.add_subplot(gs[1, :]), fig.add_subplot(gs[2, :])


class FusionPanel:
    """Compare the unfused and fused kernel of a workload; ``show()`` returns the widget."""

    def __init__(self, workload: str = "attention", length: int = 2048, cols: int = 1024,
                 target: str = "trn1") -> None:
        style = {"description_width": "170px"}
        self.target = target
        self.workload = Choice(options=list(WORKLOADS), value=workload, description="workload",
                                         style=style)
        self.length = widgets.SelectionSlider(options=list(LENGTHS), value=length, continuous_update=False,
                                              description="rows / sequence length", style=style)
        self.cols = Choice(options=list(COLS), value=cols, description="columns (row kernels)",
                                     style=style)
        self.out = widgets.Output(layout=widgets.Layout(min_height="560px"))
        self.result: FusionResult | None = None
        self._figure = PanelFigure()
        self.summary = ""
        self.error = ""
        for w in (self.workload, self.length, self.cols):
            w.observe(self._on_change, names="value")
        self.update()

    def _on_change(self, _change) -> None:
        self.update()

    def update(self) -> None:
        """Profile both kernels and redraw; a bad combination is shown in the output area, not raised."""
        self.error = missing_choices([self.workload, self.cols])
        if self.error:
            self.result, self.summary = None, ""
            show(self.out, error=self.error)
            return
        try:
            self.result = compare_fusion(self.workload.value, self.length.value, self.cols.value, self.target)
        except ValueError as exc:
            self.result, self.summary, self.error = None, "", str(exc)
            show(self.out, error=f"Cannot compare: {exc}")
            return
        r = self.result
        self.summary = r.summary()
        ax_traffic, ax_balance, *ax_times = self._figure.axes("fusion", (11, 6.6), _layout)
        plot_traffic(ax_traffic, list(r.labels), [p.hbm_bytes / 2**20 for p in r.profiles],
                     [b / 2**20 for b in r.estimated_bytes])
        plot_engine_balance(ax_balance, r.profiles, r.labels)
        t_max = max(p.latency_us for p in r.profiles)
        for ax, lab, p in zip(ax_times, r.labels, r.profiles):
            plot_timeline(p, ax, time_range_us=(0, t_max), max_dma_rows=2,
                          title=f"{lab}: {p.latency_us:.0f} us, bottleneck {p.bottleneck}")
        fig = self._figure.figure
        cached_tight_layout(fig, type(self).__name__)
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        return fit_labels(widgets.VBox([widgets.HBox([self.workload, self.cols]), self.length, self.out]))


__all__ = ["FusionPanel", "LENGTHS", "COLS"]
