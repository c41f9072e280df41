"""Widget for notebook 04: choose an output shape, a tile size and the trip counts of a kernel's two tile
loops; see which iteration writes which tile, what the ``min()`` bound clips off the last tile, and the
simulator's error when a choice breaks a rule.

Thin wiring only: :func:`trnsim.models.tiling.simulate_coverage` runs the kernel on trnsim.nki and
:func:`trnsim.course.viz.tiling.plot_coverage` draws it. Drive it in code by setting ``panel.rows.value``,
``panel.cols.value``, ``panel.tile_p.value``, ``panel.tile_f.value``, ``panel.loops_p.value``,
``panel.loops_f.value``, ``panel.clip.value`` (or ``panel.fit.click()``); read ``panel.result``
(a :class:`~trnsim.models.tiling.Coverage`), ``panel.summary`` and ``panel.error``.
"""
from __future__ import annotations

import ipywidgets as widgets

from trnsim.course.ui.render import Choice, cached_tight_layout, fit_labels, missing_choices, panel_figure, show
from trnsim.models.tiling import Coverage, TilingChoice, format_coverage, simulate_coverage
from trnsim.course.viz.tiling import plot_coverage

TILE_P_OPTIONS = (16, 32, 64, 128, 256)
TILE_F_OPTIONS = (128, 256, 512, 1024, 2048)


def summarize(choice: TilingChoice) -> tuple[Coverage, str]:
    """Run ``choice`` on the simulator: its :class:`Coverage` and the text summary the panel prints."""
    cov = simulate_coverage(choice)
    return cov, format_coverage(cov)


class TilingPanel:
    """Explore tiling with loops. ``show()`` returns the widget to display."""

    def __init__(self, rows: int = 300, cols: int = 1000, tile_p: int = 128, tile_f: int = 512,
                 loops: tuple[int, int] = (3, 2), clip: bool = True, target: str = "trn1") -> None:
        style = {"description_width": "120px"}
        slider = dict(continuous_update=False, style=style, layout=widgets.Layout(width="360px"))
        self.target = target
        self.rows = widgets.IntSlider(value=rows, min=1, max=1024, description="rows (P)", **slider)
        self.cols = widgets.IntSlider(value=cols, min=1, max=2048, description="columns (F)", **slider)
        self.tile_p = Choice(options=TILE_P_OPTIONS, value=tile_p, description="tile partitions",
                                       style=style)
        self.tile_f = Choice(options=TILE_F_OPTIONS, value=tile_f, description="tile free size",
                                       style=style)
        self.loops_p = widgets.IntSlider(value=loops[0], min=1, max=16, description="loop over rows", **slider)
        self.loops_f = widgets.IntSlider(value=loops[1], min=1, max=8, description="loop over cols", **slider)
        self.clip = widgets.Checkbox(value=clip, description="clip the last tile with min()")
        self.fit = widgets.Button(description="fit loops to tiles",
                                  tooltip="trip counts = ceil(rows/tile) x ceil(cols/tile)")
        self.out = widgets.Output(layout=widgets.Layout(min_height="420px"))
        self.result: Coverage | None = None
        self.summary = ""
        self.error = ""
        for w in (self.rows, self.cols, self.tile_p, self.tile_f, self.loops_p, self.loops_f, self.clip):
            w.observe(self._on_change, names="value")
        self.fit.on_click(self._on_fit)
        self._hold = False
        self.update()

    def choice(self) -> TilingChoice:
        return TilingChoice(int(self.rows.value), int(self.cols.value), int(self.tile_p.value),
                            int(self.tile_f.value), (int(self.loops_p.value), int(self.loops_f.value)),
                            bool(self.clip.value), self.target)

    def _on_change(self, _change) -> None:
        if not self._hold:
            self.update()

    def _on_fit(self, _button) -> None:
        need_p, need_f = self.choice().tiles_needed
        self._hold = True
        try:
            self.loops_p.value = min(need_p, self.loops_p.max)
            self.loops_f.value = min(need_f, self.loops_f.max)
        finally:
            self._hold = False
        self.update()

    def update(self) -> None:
        """Run the kernel for the current choice and redraw; rule errors go to the output area."""
        missing = missing_choices([self.tile_p, self.tile_f])
        if missing:
            self.result, self.summary, self.error = None, "", missing
            show(self.out, error=missing)
            return
        self.result, self.summary = summarize(self.choice())
        self.error = self.result.error
        fig = panel_figure((9.5, 3.8))
        ax = fig.add_subplot()
        plot_coverage(ax, self.result)
        legend = ax.get_legend()
        labels = tuple(t.get_text() for t in legend.get_texts()) if legend is not None else ()
        cached_tight_layout(fig, (type(self).__name__, labels))   # the legend's width depends on its labels
        text = self.summary.split("\n")[0] if self.error else self.summary
        show(self.out, fig, text, error=self.error)

    def show(self) -> widgets.Widget:
        controls = widgets.VBox([self.rows, self.cols, self.tile_p, self.tile_f, self.loops_p, self.loops_f,
                                 self.clip, self.fit])
        return fit_labels(widgets.VBox([controls, self.out]))
