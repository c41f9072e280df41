"""Widget for notebook 00: pick a chip, see its card and its peak compute per data type."""
from __future__ import annotations

import ipywidgets as widgets

from trnsim.catalog import chip, chips
from trnsim.course.ui.render import Choice, cached_tight_layout, fit_labels, missing_choices, panel_figure, show
from trnsim.course.viz.chips import plot_chip_dtypes


class ChipExplorer:
    """Drive in code with ``explorer.chip.value = "trn2"``; read ``explorer.summary``."""

    def __init__(self, name: str = "trainium") -> None:
        self.chip = Choice(options=[(c.display_name, c.name) for c in chips()], value=chip(name).name,
                           description="chip", resolve=lambda v: chip(v).name)
        self.out = widgets.Output(layout=widgets.Layout(min_height="300px"))
        self.summary = ""
        self.error = ""
        self.chip.observe(lambda _change: self.update(), names="value")
        self.update()

    def update(self) -> None:
        self.error = missing_choices([self.chip])
        if self.error:
            self.summary = ""
            show(self.out, error=self.error)
            return
        spec = chip(self.chip.value)
        src = spec.sources["peak_tflops"]
        self.summary = f"{spec}\nsource of the compute figures: {src.citation} (as of {src.as_of})"
        fig = panel_figure((7, 3.2))
        ax = fig.add_subplot()
        plot_chip_dtypes(ax, spec)
        cached_tight_layout(fig, type(self).__name__)
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        return fit_labels(widgets.VBox([self.chip, self.out]))
