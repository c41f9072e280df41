"""Widget for notebook 00: pick a chip, see its card and its peak compute per data type."""
from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt

from trnsim.catalog import chip, chips
from trnsim.ui.render import show
from trnsim.viz.chips import plot_chip_dtypes


class ChipExplorer:
    """Drive in code with ``explorer.chip.value = "trn2"``; read ``explorer.summary``."""

    def __init__(self, name: str = "trainium") -> None:
        self.chip = widgets.Dropdown(options=[(c.display_name, c.name) for c in chips()], value=chip(name).name,
                                     description="chip")
        self.out = widgets.Output(layout=widgets.Layout(min_height="300px"))
        self.summary = ""
        self.chip.observe(lambda _change: self.update(), names="value")
        self.update()

    def update(self) -> None:
        spec = chip(self.chip.value)
        src = spec.sources["peak_tflops"]
        self.summary = f"{spec}\nsource of the compute figures: {src.citation} (as of {src.as_of})"
        fig, ax = plt.subplots(figsize=(6, 3))
        plot_chip_dtypes(ax, spec)
        fig.tight_layout()
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        return widgets.VBox([self.chip, self.out])
