"""Widgets for notebook 12: the serving estimator and the batching simulation.

Thin wiring only: numbers from :mod:`trnsim.serving`, plots from :mod:`trnsim.course.viz.serving`.
Drive them in code by setting the control attributes (``panel.instance.value = ...``) and
read ``panel.result``, ``panel.summary`` and ``panel.error``.
"""
from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt

from trnsim.serving import ServingError, estimate, service_times, simulate, valid_tp
from trnsim.serving.hardware import gpu_instance_names
from trnsim.course.ui.render import Choice, missing_choices, show
from trnsim.course.viz.serving import latency_cdf, memory_bar, phase_breakdown

MODELS = ("gpt2-small", "llama2-7b", "llama3.1-8b", "llama2-13b", "llama3.1-70b")
INSTANCES = ("inf2.xlarge", "inf2.24xlarge", "inf2.48xlarge", "trn1.2xlarge", "trn1.32xlarge", "trn2.48xlarge") + gpu_instance_names()


class EstimatorPanel:
    """Model x instance x TP x batch x tokens -> TTFT, TPOT, tokens/s, memory, cost, binding limit."""

    def __init__(self, model: str = "llama3.1-8b", instance: str = "inf2.xlarge", tp: int = 2, batch: int = 8,
                 input_tokens: int = 512, output_tokens: int = 128, draw: bool = True) -> None:
        self.draw = draw
        self._busy = False
        self.model = Choice(options=MODELS, value=model, description="model")
        self.instance = Choice(options=INSTANCES, value=instance, description="instance")
        self.tp = Choice(options=valid_tp(model, instance), value=tp, description="TP degree")
        self.batch = widgets.IntSlider(value=batch, min=1, max=64, description="batch", continuous_update=False)
        self.input_tokens = widgets.IntSlider(value=input_tokens, min=16, max=8192, step=16, description="input tok",
                                              continuous_update=False)
        self.output_tokens = widgets.IntSlider(value=output_tokens, min=1, max=2048, description="output tok",
                                               continuous_update=False)
        self.out = widgets.Output(layout=widgets.Layout(min_height="330px"))
        self.result = None
        self.summary = ""
        self.error = ""
        self.model.observe(self._on_hw, names="value")
        self.instance.observe(self._on_hw, names="value")
        for w in (self.tp, self.batch, self.input_tokens, self.output_tokens):
            w.observe(lambda _c: None if self._busy else self.update(), names="value")
        self.update()

    def _on_hw(self, _change) -> None:
        if missing_choices([self.model, self.instance]):
            self.update()   # says what to pick; the TP options stay until the hardware is known again
            return
        try:
            opts = valid_tp(self.model.value, self.instance.value)
        except ServingError as exc:   # the estimate shown before belongs to other hardware: drop it
            self.result, self.summary, self.error = None, "", str(exc)
            show(self.out, error=f"Cannot estimate: {self.error}")
            return
        keep = self.tp.value if self.tp.value in opts else opts[min(1, len(opts) - 1)]
        self._busy = True  # changing the options fires the tp observer; recompute once, below
        try:
            self.tp.options = opts
            self.tp.value = keep
        finally:
            self._busy = False
        self.update()

    def update(self) -> None:
        """Recompute and redraw; errors go to the output area and ``self.error``."""
        self.error = missing_choices([self.model, self.instance, self.tp])
        if self.error:
            self.result, self.summary = None, ""
            show(self.out, error=self.error)
            return
        try:
            self.result = estimate(self.model.value, self.instance.value, int(self.tp.value), int(self.batch.value),
                                   int(self.input_tokens.value), int(self.output_tokens.value))
            # the estimate's notes (context beyond the model's maximum, KV heads replicated, idle cores) belong in
            # what the learner reads, not only on the result object
            self.summary = "\n".join([self.result.summary()] + [f"note: {n}" for n in self.result.notes])
        except (ServingError, ValueError) as exc:
            self.result, self.summary, self.error = None, "", str(exc)
            show(self.out, error=f"Cannot estimate: {self.error}")
            return
        if not self.draw:
            return
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw=dict(width_ratios=[2, 1]))
        phase_breakdown(axes[0], self.result)
        memory_bar(axes[1], self.result)
        fig.tight_layout()
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        controls = widgets.VBox([self.model, self.instance, self.tp, self.batch, self.input_tokens, self.output_tokens])
        return widgets.VBox([controls, self.out])


class BatchingPanel:
    """Poisson arrivals at a rate; static vs continuous batching; p50/p99 latency and TTFT."""

    def __init__(self, model: str = "llama3.1-8b", instance: str = "inf2.xlarge", tp: int = 2, max_batch: int = 8,
                 input_tokens: int = 512, output_tokens: int = 128, rate_rps: float = 2.0, instances: int = 1,
                 seed: int = 0, n_requests: int = 1000, draw: bool = True) -> None:
        self.draw = draw
        self.fixed = dict(model=model, instance=instance, tp=tp, input_tokens=input_tokens, output_tokens=output_tokens)
        self.rate = widgets.FloatSlider(value=rate_rps, min=0.1, max=20.0, step=0.1, description="req/s",
                                        continuous_update=False)
        self.max_batch = widgets.IntSlider(value=max_batch, min=1, max=32, description="max batch",
                                           continuous_update=False)
        self.instances = widgets.IntSlider(value=instances, min=1, max=16, description="instances",
                                           continuous_update=False)
        self.metric = widgets.ToggleButtons(options=["ttft", "latency"], value="ttft", description="show")
        self.seed = widgets.IntText(value=seed, description="seed")
        self.n_requests = n_requests
        self.out = widgets.Output(layout=widgets.Layout(min_height="330px"))
        self._tables: dict = {}
        self.results: dict = {}
        self.summary = ""
        self.error = ""
        for w in (self.rate, self.max_batch, self.instances, self.metric, self.seed):
            w.observe(lambda _c: self.update(), names="value")
        self.update()

    def _times(self, max_batch: int):
        key = (max_batch,)
        if key not in self._tables:
            f = self.fixed
            self._tables[key] = service_times(f["model"], f["instance"], f["tp"], max_batch, f["input_tokens"],
                                              f["output_tokens"])
        return self._tables[key]

    def update(self) -> None:
        self.error = missing_choices([('"show" metric', self.metric)])
        if self.error:
            self.results, self.summary = {}, ""
            show(self.out, error=self.error)
            return
        f = self.fixed
        try:
            st = self._times(int(self.max_batch.value))
            self.results = {
                mode: simulate(f["model"], f["instance"], f["tp"], int(self.max_batch.value), f["input_tokens"],
                               f["output_tokens"], float(self.rate.value), mode, instances=int(self.instances.value),
                               n_requests=self.n_requests, seed=int(self.seed.value), times=st)
                for mode in ("static", "continuous")
            }
            self.summary = "\n".join(r.summary() for r in self.results.values())
        except (ServingError, ValueError) as exc:
            self.results, self.summary, self.error = {}, "", str(exc)
            show(self.out, error=f"Cannot simulate: {self.error}")
            return
        if not self.draw:
            return
        fig, ax = plt.subplots(figsize=(7.5, 3.6))
        latency_cdf(ax, list(self.results.values()), self.metric.value)
        ax.set_title(f"{f['model']} on {self.instances.value}x {f['instance']} (tp={f['tp']}), "
                     f"{self.rate.value:g} req/s Poisson")
        fig.tight_layout()
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        controls = widgets.HBox([widgets.VBox([self.rate, self.max_batch, self.instances]),
                                 widgets.VBox([self.metric, self.seed])])
        return widgets.VBox([controls, self.out])
