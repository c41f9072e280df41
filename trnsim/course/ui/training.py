"""Widget panels for notebooks 10 and 11: thin wiring over trnsim.training and trnsim.course.viz.training.

* :class:`PlannerPanel`: pick a model, a cluster, sequence length, batch and a token budget;
  the panel searches every parallel plan, shows the ranked table, the fastest plans'
  step-time and memory breakdowns, and days and cost to train.
* :class:`ParallelStepPanel`: where the simulated time of one tiny-GPT step goes on 1..N
  NeuronCores, data- or tensor-parallel (timing only, no training in the callback).

Both expose their controls as attributes and keep ``result``, ``summary`` and ``error``;
``show()`` returns the widget to display.
"""
from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt

import trnsim
from trnsim.training.estimate import MAX_TRAIN_TOKENS, chinchilla_tokens
from trnsim.training.models import models
from trnsim.training.parallel import simulated_step_time
from trnsim.training.search import SearchResult, search
from trnsim.training.systems import PlanError, gpu_system_names
from trnsim.course.ui import render
from trnsim.course.viz import training as vt

TRAINING_INSTANCES = ("trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge")


def _instances() -> list[str]:
    names = {i.name for i in trnsim.instances()}
    return [n for n in TRAINING_INSTANCES if n in names] + list(gpu_system_names())


class PlannerPanel:
    """Training-plan search panel."""

    def __init__(self, model: str = "llama2-7b", instance: str = "trn1.32xlarge", nodes: int = 4,
                 seq_len: int = 4096, global_batch: int = 1024, train_tokens_b: float = 0.0, draw: bool = True):
        names = [n for n in models() if n != "tinygpt"]
        self.model = render.Choice(options=names, value=model, description="model")
        self.instance = render.Choice(options=_instances(), value=instance, description="instance")
        self.nodes = render.Choice(options=[1, 2, 4, 8, 16, 32, 64, 128, 256], value=nodes, description="nodes")
        self.seq_len = render.Choice(options=[1024, 2048, 4096, 8192], value=seq_len, description="seq len")
        self.global_batch = render.Choice(options=[64, 128, 256, 512, 1024, 2048, 4096], value=global_batch,
                                             description="batch (seq)")
        self.train_tokens_b = widgets.FloatText(value=train_tokens_b, description="tokens (B)",
                                                tooltip="0 = Chinchilla-optimal (20 tokens per parameter)")
        self.output = widgets.Output(layout=widgets.Layout(min_height="420px"))
        self.result: SearchResult | None = None
        self.summary: str = ""
        self.error: str | None = None
        self.tokens: float = 0.0
        self.draw = draw
        controls = [self.model, self.instance, self.nodes, self.seq_len, self.global_batch, self.train_tokens_b]
        for c in controls:
            c.observe(self._on_change, names="value")
        self.widget = widgets.VBox([widgets.HBox(controls[:3]), widgets.HBox(controls[3:]), self.output])
        self.update()

    def _on_change(self, _change=None) -> None:
        self.update()

    def compute(self) -> SearchResult:
        """Pure part: search the plans for the current control values."""
        return search(self.model.value, self.instance.value, int(self.nodes.value), int(self.seq_len.value),
                      int(self.global_batch.value))

    def update(self) -> None:
        self.error = None
        try:
            missing = render.missing_choices([self.model, self.instance, self.nodes, self.seq_len, self.global_batch])
            if missing:   # a Dropdown set to None from code
                raise PlanError(missing)
            b = self.train_tokens_b.value
            if not (0 <= b <= MAX_TRAIN_TOKENS / 1e9):   # also refuses nan and inf
                raise PlanError(f"tokens (B) = {b}: must be a finite number from 0 to {MAX_TRAIN_TOKENS / 1e9:,.0f} "
                                "(0 = Chinchilla-optimal)")
            self.result = self.compute()
        except (PlanError, ValueError, KeyError) as exc:
            self.result = None
            self.error = str(exc)
            self.summary = f"error: {exc}"
            self._render()
            return
        r = self.result
        b_tokens = self.train_tokens_b.value
        self.tokens = b_tokens * 1e9 if b_tokens > 0 else chinchilla_tokens(self.model.value)
        if r.best is None:
            counts = ", ".join(f"{k}: {v}" for k, v in r.reasons().items())
            first = r.rejected[0].reason if r.rejected else "-"
            self.error = f"no feasible plan ({counts} rejected); for example {first}"
            self.summary = self.error
        else:
            b = r.best
            cost = b.usd_to_train(self.tokens)
            money = f"${cost:,.0f}" if cost is not None else b.price_note
            self.summary = (f"{len(r.ranked)} feasible plans, {len(r.rejected)} rejected. Fastest: {b.plan.label()}: "
                            f"step {b.step_time_s:.3g} s, MFU {100 * b.mfu:.1f}% "
                            f"({'physics only, unvalidated' if b.residual_factor == 1.0 else 'calibrated'}), "
                            f"{b.memory.total_bytes / 2**30:.1f} GiB per {b.system_spec.device_name}. "
                            f"{self.tokens / 1e9:,.0f}B tokens: {b.days_to_train(self.tokens):,.1f} days, {money}.")
        self._render()

    def _render(self) -> None:
        if not self.draw:
            return
        if self.result is None or self.result.best is None:
            render.show(self.output, None, error=self.summary)
            return
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
        top = list(self.result.ranked[:3])
        vt.plot_step_breakdown(axes[0], top)
        vt.plot_memory(axes[1], top)
        fig.tight_layout()
        render.show(self.output, fig, text=self.summary + "\n" + self.result.table(5))

    def show(self) -> widgets.Widget:
        """The panel's widget (display it in a notebook cell)."""
        return self.widget


class ParallelStepPanel:
    """Simulated time of one tiny-GPT step (compute vs communication) for a mode and core count."""

    def __init__(self, mode: str = "dp", cores: int = 8, batch: int = 16, draw: bool = True):
        self.mode = widgets.ToggleButtons(options=["single", "dp", "tp"], value=mode, description="mode")
        self.cores = render.Choice(options=[1, 2, 4, 8, 16, 32], value=cores, description="cores")
        self.batch = render.Choice(options=[8, 16, 32, 64, 128], value=batch, description="batch")
        self.output = widgets.Output()
        self.result: dict[str, float] | None = None
        self.summary = ""
        self.error: str | None = None
        self.draw = draw
        for c in (self.mode, self.cores, self.batch):
            c.observe(lambda _ch: self.update(), names="value")
        self.widget = widgets.VBox([widgets.HBox([self.mode, self.cores, self.batch]), self.output])
        self.update()

    def update(self) -> None:
        self.error = None
        try:
            missing = render.missing_choices([self.mode, self.cores, self.batch])
            if missing:   # a control set to None from code
                raise PlanError(missing)
            mode, cores, batch = self.mode.value, self.cores.value, self.batch.value
            self.result = simulated_step_time(mode, cores, batch)   # its check_run refuses what cannot run
            r = self.result
            self.summary = (f"{mode} on {cores} core(s), batch {batch}: {1e6 * r['step']:.2f} us per step "
                            f"(compute {1e6 * r['compute']:.2f} us, communication {1e6 * r['comm']:.2f} us)")
        except PlanError as exc:
            self.result = None
            self.error = str(exc)
            self.summary = f"error: {exc}"
        if not self.draw:
            return
        if self.result is None:
            render.show(self.output, None, error=self.summary)
            return
        fig, ax = plt.subplots(figsize=(6, 1.8))
        ax.barh([0], [1e6 * self.result["compute"]], color="#4C72B0", label="compute")
        ax.barh([0], [1e6 * self.result["comm"]], left=[1e6 * self.result["compute"]], color="#DD8452",
                label="communication")
        ax.set_yticks([])
        ax.set_xlabel("simulated us per step")
        ax.legend(frameon=False, fontsize=8)
        fig.tight_layout()
        render.show(self.output, fig, text=self.summary)

    def show(self) -> widgets.Widget:
        """The panel's widget (display it in a notebook cell)."""
        return self.widget
