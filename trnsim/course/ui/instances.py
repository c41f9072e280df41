"""Widget: pick instances and a metric, see the comparison (notebook 08).

Thin wiring only: numbers come from :mod:`trnsim.models.compare`, the plot from
:mod:`trnsim.course.viz.chips`. Drive it in code by setting ``panel.instances.value``,
``panel.metric.value`` and ``panel.dtype.value``; read ``panel.rows``,
``panel.summary`` and ``panel.error``.
"""
from __future__ import annotations

import ipywidgets as widgets

from trnsim.catalog import instances
from trnsim.models.compare import DTYPES, METRICS, Row, format_rows, metric_rows
from trnsim.course.ui.render import Choice, cached_tight_layout, dtype_choice, fit_labels, missing_choices, panel_figure, show
from trnsim.course.viz.chips import plot_metric_bars

DEFAULT_SELECTION = ("inf2.xlarge", "inf2.48xlarge", "trn1.2xlarge", "trn1.32xlarge", "trn2.48xlarge")


class InstancePanel:
    """Compare instances on one metric. ``show()`` returns the widget to display."""

    def __init__(self, selection=DEFAULT_SELECTION, metric: str = "tflops_per_usd", dtype: str = "bf16") -> None:
        names = [i.name for i in instances()]
        self.instances = widgets.SelectMultiple(options=names, value=tuple(selection), rows=10,
                                                description="instances")
        self.metric = Choice(options=[(m.label, k) for k, m in METRICS.items()], value=metric,
                                       description="metric")
        self.dtype = dtype_choice(DTYPES, dtype)
        self.out = widgets.Output(layout=widgets.Layout(min_height="360px"))
        self.rows: list[Row] = []
        self.summary = ""
        self.error = ""
        for w in (self.instances, self.metric, self.dtype):
            w.observe(self._on_change, names="value")
        self.update()

    def _on_change(self, _change) -> None:
        self.update()

    def update(self) -> None:
        """Recompute and redraw; a bad selection is reported in the output area, not raised."""
        self.error = missing_choices((self.metric, self.dtype))
        if self.error:
            self.rows, self.summary = [], ""
            show(self.out, error=self.error)
            return
        try:
            self.rows = metric_rows(list(self.instances.value), self.metric.value, self.dtype.value)
            self.summary = format_rows(self.rows, self.metric.value)
        except ValueError as exc:
            self.rows, self.summary, self.error = [], "", str(exc)
        if self.error:
            show(self.out, error=f"Cannot compare: {self.error}")
            return
        fig = panel_figure((8.5, 0.45 * len(self.rows) + 1.6))
        ax = fig.add_subplot()
        plot_metric_bars(ax, self.rows, self.metric.value)
        cached_tight_layout(fig, type(self).__name__)
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        controls = widgets.HBox([self.instances, widgets.VBox([self.metric, self.dtype])],
                                layout=widgets.Layout(flex_flow="row wrap"))
        return fit_labels(widgets.VBox([controls, self.out]))
