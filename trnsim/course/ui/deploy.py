"""Widgets for notebook 13: the region map and the deployment planner.

Thin wiring only: numbers from :mod:`trnsim.deploy`, plots from :mod:`trnsim.course.viz.deploy`.
Drive in code by setting control attributes (``panel.rate.value = 5``); read
``panel.options`` / ``panel.result``, ``panel.summary`` and ``panel.error``. The planner runs
the batching simulation for every option, so its controls update on release only.
"""
from __future__ import annotations

import ipywidgets as widgets

from trnsim.deploy import DATA_CLASSES, DeployError, plan, report, transfer_routes, user_sites
from trnsim.deploy.planner import RANK_BY, PlanRequest
from trnsim.serving import ServingError
from trnsim.deploy.residency import sensitive_bases
from trnsim.course.ui.render import Choice, cached_tight_layout, fit_labels, missing_choices, panel_figure, show
from trnsim.course.viz.deploy import plan_bars, region_map


class MapPanel:
    """Where the regions are, which list Neuron capacity, and the RTT from a Malaysian city."""

    def __init__(self, origin: str = "Kuala Lumpur", extent: str = "asia", neuron_in_region: bool = False,
                 draw: bool = True) -> None:
        self.draw = draw
        self.origin = Choice(options=list(user_sites()), value=origin, description="users in")
        self.extent = widgets.ToggleButtons(options=["asia", "world"], value=extent, description="map")
        self.neuron_in_region = widgets.Checkbox(value=neuron_in_region, indent=False,
                                                 description="scenario: Neuron capacity arrives in ap-southeast-5",
                                                 layout=widgets.Layout(width="auto"))
        self.out = widgets.Output(layout=widgets.Layout(min_height="420px"))
        self.summary = ""
        self.error = ""
        for w in (self.origin, self.extent, self.neuron_in_region):
            w.observe(lambda _c: self.update(), names="value")
        self.update()

    def update(self) -> None:
        from trnsim.deploy import rtt_table

        self.error = missing_choices([self.origin, self.extent])
        if self.error:
            self.summary = ""
            show(self.out, error=self.error)
            return
        rows = rtt_table(self.origin.value)[:6]
        self.summary = "\n".join(f"{e.region:<15} {e.distance_km:7,.0f} km  floor {e.floor_ms:5.1f} ms  "
                                 f"typical {e.typical_ms:6.1f} ms" for e in rows)
        if not self.draw:
            return
        fig = panel_figure((8, 6) if self.extent.value == "asia" else (11, 5.5))
        ax = fig.add_subplot()
        region_map(ax, self.origin.value, self.extent.value, neuron_in_region=self.neuron_in_region.value,
                   annotate_rtt=self.extent.value == "asia")
        cached_tight_layout(fig, type(self).__name__)
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        return fit_labels(widgets.VBox([widgets.HBox([self.origin, self.extent]), self.neuron_in_region, self.out]))


class PlannerPanel:
    """Users, data class, rate, latency objective, model -> ranked options with cost, carbon, residency."""

    def __init__(self, request: PlanRequest | None = None, draw: bool = True) -> None:
        r = request or PlanRequest()
        self.draw = draw
        self._base = r
        cu = dict(continuous_update=False)
        self.users = Choice(options=list(user_sites()), value=r.users, description="users in")
        self.data_class = Choice(options=DATA_CLASSES, value=r.data_class, description="data class")
        self.rate = widgets.FloatSlider(value=r.rate_rps, min=0.5, max=20.0, step=0.5, description="req/s", **cu)
        self.slo = widgets.IntSlider(value=int(r.ttft_slo_ms), min=100, max=5000, step=50, description="TTFT p99 ms", **cu)
        self.model = Choice(options=("llama3.1-8b", "llama2-7b", "llama2-13b", "llama3.1-70b"), value=r.model,
                                      description="model")
        self.personal_share = widgets.FloatSlider(value=r.personal_share, min=0.05, max=0.95, step=0.05,
                                                  description="personal share", **cu)
        self.route = Choice(options=[("(none chosen)", None)] + [(v, k) for k, v in transfer_routes().items()],
                                      value=r.transfer_route, description="s.129 route")
        self.neuron_in_region = widgets.Checkbox(value=r.neuron_in_region, description="scenario: Neuron in ap-southeast-5",
                                                 indent=False, layout=widgets.Layout(width="auto"))
        self.sensitive_basis = Choice(
            options=[("(none chosen)", None)] + [(k.replace("_", " "), k) for k in sensitive_bases()],
            value=r.sensitive_basis, description="s.40 basis")
        self.rank_by = Choice(options=RANK_BY, value=r.rank_by, description="rank by")
        self.out = widgets.Output(layout=widgets.Layout(min_height="420px"))
        self.options = []
        self.summary = ""
        self.error = ""
        for w in (self.users, self.data_class, self.rate, self.slo, self.model, self.personal_share, self.route,
                  self.neuron_in_region, self.rank_by, self.sensitive_basis):
            w.observe(lambda _c: self.update(), names="value")
        self.update()

    @property
    def request(self) -> PlanRequest:
        return PlanRequest(**{**self._base.__dict__, "users": self.users.value, "data_class": self.data_class.value,
                              "rate_rps": float(self.rate.value), "ttft_slo_ms": float(self.slo.value),
                              "model": self.model.value, "personal_share": float(self.personal_share.value),
                              "transfer_route": self.route.value, "neuron_in_region": bool(self.neuron_in_region.value),
                              "sensitive_basis": self.sensitive_basis.value,
                              "rank_by": self.rank_by.value})

    @property
    def result(self):
        """The top-ranked option (or None)."""
        return self.options[0] if self.options else None

    def update(self) -> None:
        self.error = missing_choices([self.users, self.data_class, self.model, self.rank_by])
        if self.error:
            self.options, self.summary = [], ""
            show(self.out, error=self.error)
            return
        try:
            self.options = plan(self.request)
        except (DeployError, ServingError, ValueError) as exc:
            self.options, self.summary, self.error = [], "", str(exc)
            show(self.out, error=f"Cannot plan: {self.error}")
            return
        top = self.options[0]
        self.summary = report(self.options) + "\n\nTop option, residency:\n" + top.residency.explain()
        if not self.draw:
            return
        fig = panel_figure((11.5, 3.6))
        axes = fig.subplots(1, 2, sharey=True)
        plan_bars(axes[0], self.options, "usd_per_month")
        plan_bars(axes[1], self.options, "kgco2e_per_month")
        axes[1].set_ylabel("")
        cached_tight_layout(fig, type(self).__name__)
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        left = widgets.VBox([self.users, self.data_class, self.model, self.rate, self.slo])
        right = widgets.VBox([self.personal_share, self.route, self.sensitive_basis, self.rank_by, self.neuron_in_region])
        return fit_labels(widgets.VBox([widgets.HBox([left, right]), self.out]))
