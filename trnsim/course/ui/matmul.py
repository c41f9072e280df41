"""Widgets for notebook 01: a matmul on the roofline, and a systolic array you can scrub in time.

Thin wiring only: numbers from :mod:`trnsim.models.matmul_math` and :mod:`trnsim.models.systolic`, figures from
:mod:`trnsim.course.viz.roofline` (reused) and :mod:`trnsim.course.viz.systolic`. Drive the panels in code by
setting their controls (``panel.m.value = 4096``); read ``panel.result``, ``panel.summary`` and
``panel.error``.
"""
from __future__ import annotations

from functools import lru_cache

import ipywidgets as widgets
import numpy as np

from trnsim.models.matmul_math import MATMUL_DTYPES, MatmulEstimate, estimate
from trnsim.models.systolic import SystolicRun, example_operands, simulate_systolic
from trnsim.course.ui.render import Choice, dtype_choice, fit_labels, missing_choices, panel_figure, PanelFigure, show
from trnsim.course.viz.roofline import plot_roofline
from trnsim.course.viz.systolic import plot_systolic_state, plot_time_budget, systolic_figsize

TARGETS = ("trn1", "inf2", "trn2", "trn3")


def resolve_target(name: str) -> str:
    """A target name the catalog knows ("trainium2", "Trn2") -> its short kernel-target name ("trn2")."""
    import trnsim

    key = str(name).strip().lower()
    if key in TARGETS:
        return key
    chip_name = trnsim.chip(key).name
    for t in TARGETS:
        if trnsim.target(t).chip.name == chip_name:
            return t
    raise ValueError(f"no kernel target for {name!r}")


def target_choice(value: str, **kwargs) -> Choice:
    """A target dropdown that also accepts chip names ("trainium2" for "trn2")."""
    c = Choice(options=list(TARGETS), value=None, description="target", resolve=resolve_target, **kwargs)
    c.value = value
    return c


@lru_cache(maxsize=256)
def _estimate(m: int, n: int, k: int, dtype: str, target: str) -> MatmulEstimate:
    return estimate(m, n, k, dtype, target)


@lru_cache(maxsize=64)
def _systolic(k: int, m: int, n: int, seed: int) -> SystolicRun:
    w, x = example_operands(k, m, n, seed)
    return simulate_systolic(w, x)


class RooflinePanel:
    """M, N, K, dtype and target -> the matmul's roofline point, time estimate and bound."""

    def __init__(self, m: int = 4096, n: int = 4096, k: int = 4096, dtype: str = "bfloat16",
                 target: str = "trn1") -> None:
        style = {"description_width": "20px"}
        lay = widgets.Layout(width="150px")
        self.m = widgets.BoundedIntText(value=m, min=1, max=1 << 20, description="M", style=style, layout=lay)
        self.n = widgets.BoundedIntText(value=n, min=1, max=1 << 20, description="N", style=style, layout=lay)
        self.k = widgets.BoundedIntText(value=k, min=1, max=1 << 20, description="K", style=style, layout=lay)
        wide = {"description_width": "45px"}
        self.dtype = dtype_choice(MATMUL_DTYPES, dtype, style=wide, layout=widgets.Layout(width="200px"))
        self.target = target_choice(target, style=wide, layout=widgets.Layout(width="160px"))
        self.out = widgets.Output(layout=widgets.Layout(min_height="330px"))
        self.result: MatmulEstimate | None = None
        self._figure = PanelFigure()
        self.summary = ""
        self.error = ""
        for w in (self.m, self.n, self.k, self.dtype, self.target):
            w.observe(self._on_change, names="value")
        self.update()

    def _on_change(self, _change) -> None:
        self.update()

    def update(self) -> None:
        """Recompute and redraw; bad input is shown in the output area and kept in ``error``."""
        self.error = missing_choices((self.dtype, self.target))
        if self.error:
            self.result, self.summary = None, ""
            show(self.out, error=self.error)
            return
        try:
            self.result = _estimate(self.m.value, self.n.value, self.k.value, self.dtype.value, self.target.value)
            self.summary = self.result.summary()
        except (ValueError, TypeError) as exc:
            self.result, self.summary, self.error = None, "", str(exc)
            show(self.out, error=f"Cannot estimate: {exc}")
            return
        est = self.result
        ax1, ax2 = self._figure.axes("roofline", (11.5, 4.2),
                                     lambda fig: fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.35, 1]}))
        fig = self._figure.figure
        plot_roofline([est], ax1, target=est.target, dtype=est.dtype,
                      labels=[f"{est.m}x{est.k} @ {est.k}x{est.n}"])
        plot_time_budget(ax2, est)
        ax1.minorticks_off()   # minor ticks of a log axis are ~40% of a redraw (tests/bench_panels.py)
        fig.subplots_adjust(left=0.07, right=0.98, bottom=0.13, top=0.91, wspace=0.42)  # fixed: tight_layout is slow
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        controls = widgets.HBox([self.m, self.n, self.k, self.dtype, self.target],
                                layout=widgets.Layout(flex_flow="row wrap"))
        return fit_labels(widgets.VBox([controls, self.out]))


class SystolicPanel:
    """Step a small K x M systolic array through ``stationary.T @ moving``, cycle by cycle.

    ``cycle`` is an IntSlider; ``play`` is a Play button jslinked to it in the browser (no threads:
    the front-end advances the slider, the slider's observer redraws).
    """

    def __init__(self, k: int = 4, m: int = 3, n: int = 5, seed: int = 0) -> None:
        self.seed = seed
        sl = dict(min=1, max=8, continuous_update=False, style={"description_width": "20px"},
                  layout=widgets.Layout(width="190px"))
        self.k = widgets.IntSlider(value=k, description="K", **sl)
        self.m = widgets.IntSlider(value=m, description="M", **sl)
        self.n = widgets.IntSlider(value=n, description="N", **sl)
        self.cycle = widgets.IntSlider(value=0, min=0, max=1, description="cycle", continuous_update=False,
                                       layout=widgets.Layout(width="420px"))
        self.play = widgets.Play(value=0, min=0, max=1, interval=700, description="play")
        widgets.jslink((self.play, "value"), (self.cycle, "value"))
        self.out = widgets.Output(layout=widgets.Layout(min_height="300px"))
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
            self.run = _systolic(self.k.value, self.m.value, self.n.value, self.seed)
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
        self.summary = (f"cycle {t} (of 0..{run.cycles - 1}; K + M + N - 2 = {run.cycles} cycles): "
                        f"{st.active_pes} of {run.k * run.m} PEs busy, "
                        f"{int(st.outputs_done.sum())} of {run.m * run.n} results in PSUM")
        if t == run.cycles - 1:
            ok = np.allclose(run.out, run.stationary.T @ run.moving)
            self.summary += f"; matches numpy stationary.T @ moving: {ok}"
        fig = panel_figure(systolic_figsize(run, 11.0))
        plot_systolic_state(run, t, fig.add_subplot())
        fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.9)
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        shape = widgets.HBox([self.k, self.m, self.n])
        return fit_labels(widgets.VBox([shape, widgets.HBox([self.play, self.cycle]), self.out]))


__all__ = ["RooflinePanel", "SystolicPanel", "TARGETS"]
