"""Widgets for notebook 01: a matmul on the roofline, and a systolic array you can scrub in time.

Thin wiring only: numbers from :mod:`trnsim.matmul_math` and :mod:`trnsim.systolic`, figures from
:mod:`trnsim.viz.roofline` (reused) and :mod:`trnsim.viz.systolic`. Drive the panels in code by
setting their controls (``panel.m.value = 4096``); read ``panel.result``, ``panel.summary`` and
``panel.error``.
"""
from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from trnsim.matmul_math import MATMUL_DTYPES, MatmulEstimate, estimate
from trnsim.systolic import SystolicRun, example_operands, simulate_systolic
from trnsim.ui.render import show
from trnsim.viz.roofline import plot_roofline
from trnsim.viz.systolic import plot_systolic_state, plot_time_budget

TARGETS = ("trn1", "inf2", "trn2", "trn3")


class RooflinePanel:
    """M, N, K, dtype and target -> the matmul's roofline point, time estimate and bound."""

    def __init__(self, m: int = 4096, n: int = 4096, k: int = 4096, dtype: str = "bfloat16",
                 target: str = "trn1") -> None:
        style = {"description_width": "30px"}
        lay = widgets.Layout(width="190px")
        self.m = widgets.BoundedIntText(value=m, min=1, max=1 << 20, description="M", style=style, layout=lay)
        self.n = widgets.BoundedIntText(value=n, min=1, max=1 << 20, description="N", style=style, layout=lay)
        self.k = widgets.BoundedIntText(value=k, min=1, max=1 << 20, description="K", style=style, layout=lay)
        self.dtype = widgets.Dropdown(options=list(MATMUL_DTYPES), value=dtype, description="dtype",
                                      style={"description_width": "40px"}, layout=widgets.Layout(width="190px"))
        self.target = widgets.Dropdown(options=list(TARGETS), value=target, description="target",
                                       style={"description_width": "40px"}, layout=widgets.Layout(width="190px"))
        self.out = widgets.Output(layout=widgets.Layout(min_height="380px"))
        self.result: MatmulEstimate | None = None
        self.summary = ""
        self.error = ""
        for w in (self.m, self.n, self.k, self.dtype, self.target):
            w.observe(self._on_change, names="value")
        self.update()

    def _on_change(self, _change) -> None:
        self.update()

    def update(self) -> None:
        """Recompute and redraw; bad input is shown in the output area and kept in ``error``."""
        self.error = ""
        try:
            self.result = estimate(self.m.value, self.n.value, self.k.value, self.dtype.value, self.target.value)
            self.summary = self.result.summary()
        except ValueError as exc:
            self.result, self.summary, self.error = None, "", str(exc)
            show(self.out, error=f"Cannot estimate: {exc}")
            return
        est = self.result
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [1.35, 1]})
        plot_roofline([est], ax1, target=est.target, dtype=est.dtype,
                      labels=[f"{est.m}x{est.k} @ {est.k}x{est.n}"])
        plot_time_budget(ax2, est)
        fig.subplots_adjust(left=0.07, right=0.98, bottom=0.13, top=0.91, wspace=0.42)  # fixed: tight_layout is slow
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        controls = widgets.VBox([self.m, self.n, self.k, self.dtype, self.target])
        return widgets.HBox([controls, self.out])


class SystolicPanel:
    """Step a small K x M systolic array through ``stationary.T @ moving``, cycle by cycle.

    ``cycle`` is an IntSlider; ``play`` is a Play button jslinked to it in the browser (no threads:
    the front-end advances the slider, the slider's observer redraws).
    """

    def __init__(self, k: int = 4, m: int = 3, n: int = 5, seed: int = 0) -> None:
        self.seed = seed
        sl = dict(min=1, max=8, continuous_update=False, style={"description_width": "20px"},
                  layout=widgets.Layout(width="200px"))
        self.k = widgets.IntSlider(value=k, description="K", **sl)
        self.m = widgets.IntSlider(value=m, description="M", **sl)
        self.n = widgets.IntSlider(value=n, description="N", **sl)
        self.cycle = widgets.IntSlider(value=0, min=0, max=1, description="cycle",
                                       layout=widgets.Layout(width="420px"))
        self.play = widgets.Play(value=0, min=0, max=1, interval=700, description="play")
        widgets.jslink((self.play, "value"), (self.cycle, "value"))
        self.out = widgets.Output(layout=widgets.Layout(min_height="420px"))
        self.run: SystolicRun | None = None
        self.summary = ""
        self.error = ""
        for w in (self.k, self.m, self.n):
            w.observe(self._on_shape, names="value")
        self.cycle.observe(self._on_cycle, names="value")
        self._on_shape(None)

    @property
    def result(self) -> SystolicRun | None:
        return self.run

    def _on_shape(self, _change) -> None:
        self.error = ""
        try:
            w, x = example_operands(self.k.value, self.m.value, self.n.value, self.seed)
            self.run = simulate_systolic(w, x)
        except ValueError as exc:
            self.run, self.summary, self.error = None, "", str(exc)
            show(self.out, error=f"Cannot simulate: {exc}")
            return
        last = self.run.cycles - 1
        with self.cycle.hold_trait_notifications():
            self.cycle.max = max(last, 1)
            self.play.max = max(last, 1)
            if self.cycle.value > last:
                self.cycle.value = last
        self.draw()

    def _on_cycle(self, _change) -> None:
        self.draw()

    def draw(self) -> None:
        if self.run is None:
            return
        run = self.run
        t = min(self.cycle.value, run.cycles - 1)
        st = run.state(t)
        self.summary = (f"cycle {t} of {run.cycles - 1} (K + M + N - 2 = {run.cycles} cycles): "
                        f"{st.active_pes} of {run.k * run.m} PEs busy, "
                        f"{int(st.outputs_done.sum())} of {run.m * run.n} results in PSUM")
        if t == run.cycles - 1:
            ok = np.allclose(run.out, run.stationary.T @ run.moving)
            self.summary += f"; matches numpy stationary.T @ moving: {ok}"
        fig, ax = plt.subplots(figsize=(8, 0.62 * (run.k + run.n) + 1.6))
        plot_systolic_state(run, t, ax)
        fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.93)
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        shape = widgets.HBox([self.k, self.m, self.n])
        return widgets.VBox([shape, widgets.HBox([self.play, self.cycle]), self.out])


__all__ = ["RooflinePanel", "SystolicPanel", "TARGETS"]
