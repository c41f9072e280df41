"""Widgets for notebook 07: take a number apart in any format, and watch a long sum drift.

Thin wiring only: numbers from :mod:`trnsim.models.numerics`, figures from :mod:`trnsim.course.viz.numerics`.

* :class:`BitsPanel`: set ``panel.fmt.value`` ("bf16", ...) and ``panel.value.value`` (a float);
  read ``panel.result`` (a :class:`~trnsim.models.numerics.Decoded`), ``panel.summary``, ``panel.error``.
* :class:`AccumulationPanel`: set ``panel.steps.value``, ``panel.increment.value``,
  ``panel.start.value`` and ``panel.acc.value``; read ``panel.results`` (label -> SumResult),
  ``panel.summary``, ``panel.error``.
"""
from __future__ import annotations

import math

import ipywidgets as widgets
import numpy as np

from trnsim.models.numerics import (FORMATS, Decoded, SumResult, accumulate, adjacent, decode, float_format,
                                    neighbours, shown_digits, stochastic_up_probability, ulp)
from trnsim.course.ui.render import Choice, cached_tight_layout, fit_labels, missing_choices, panel_figure, PanelFigure, resolve_dtype, show
from trnsim.course.viz.numerics import plot_accumulation, plot_bit_layout, plot_number_line

FORMAT_OPTIONS = [(f.label, name) for name, f in FORMATS.items()]


def describe(x: float, fmt: str) -> tuple[Decoded, str]:
    """Decode ``x`` in ``fmt`` and describe the rounding in a few lines (pure; used by the panel)."""
    f = float_format(fmt)
    if not math.isfinite(x):
        raise ValueError(f"value must be a finite number, got {x!r}")
    d = decode(x, f)
    lines = [f"{f.label} bits: {d.bit_string}   ({d.kind})", f"value: {d.formula}"]
    if d.kind in ("inf", "nan"):
        lines.append(f"|x| = {abs(x):.6g} is beyond the largest finite {f.label} number {f.max_normal:.6g}: "
                     f"it overflows to {d.kind}")
        return d, "\n".join(lines)
    err = abs(d.value - x)
    rel = err / abs(x) if x != 0 else 0.0
    lo, hi = neighbours(x, f)
    lines.append(f"rounding error: {err:.3g} (relative {rel:.2e}; at most u = {f.unit_roundoff:.2e} for normal numbers)")
    if lo == hi:   # x is a number of the format: show the representable numbers on either side of it
        below, above = adjacent(x, f)
        digits = shown_digits(f)
        shown = ["none" if v is None else f"{v:.{digits}g}" for v in (below, above)]
        end = (f" ({x:.7g} is the {'largest' if x > 0 else 'most negative'} finite {f.label} number)"
               if None in (below, above) else "")
        lines.append(f"spacing (ulp) here: {float(ulp(x, f)):.3g}; exactly representable; adjacent values "
                     f"{shown[0]} and {shown[1]}{end}")
    elif not math.isfinite(hi) or not math.isfinite(lo):
        # beyond the largest finite number, yet close enough to round to it (nearest): one finite neighbour only
        big = lo if math.isfinite(lo) else hi
        lines.append(f"|x| is beyond the largest finite {f.label} number {abs(big):.7g} but rounds to it (round to "
                     f"nearest); there is no finite number on the other side, so stochastic rounding has no pair "
                     f"to choose between and cannot keep the expected value (trnsim's round_stochastic refuses "
                     f"such values: scale them first)")
        return d, "\n".join(lines)
    else:
        lines.append(f"spacing (ulp) here: {float(ulp(x, f)):.3g}; neighbours {lo:.7g} and {hi:.7g}")
    if lo != hi:
        p = stochastic_up_probability(x, f)
        lines.append(f"stochastic rounding: to {hi if x > 0 else lo:.7g} with p = {p:.3f}, "
                     f"to {lo if x > 0 else hi:.7g} with p = {1 - p:.3f} (expected value = x)")
    return d, "\n".join(lines)


class BitsPanel:
    """Type a number, pick a format, see its bits, its value and its neighbours."""

    def __init__(self, value: float = 3.14159, fmt: str = "bf16") -> None:
        self.fmt = Choice(options=FORMAT_OPTIONS, value=fmt, description="format", resolve=resolve_dtype)
        self.value = widgets.FloatText(value=value, description="value")
        self.out = widgets.Output(layout=widgets.Layout(min_height="380px"))
        self.result: Decoded | None = None
        self.summary = ""
        self.error = ""
        for w in (self.fmt, self.value):
            w.observe(lambda _c: self.update(), names="value")
        self.update()

    def update(self) -> None:
        self.error = missing_choices([self.fmt])
        if self.error or self.value.value is None:
            self.error = self.error or "type a value to see its bits"
            self.result, self.summary = None, ""
            show(self.out, error=self.error)
            return
        x = float(self.value.value)
        try:
            self.result, self.summary = describe(x, self.fmt.value)
            self.error = ""
        except ValueError as exc:
            self.result, self.summary, self.error = None, "", str(exc)
            show(self.out, error=self.error)
            return
        f = self.result.fmt
        fig = panel_figure((9.5 if f.bits > 16 else 8.5, 4.2))
        axs = fig.subplots(2, 1, height_ratios=[1.6, 1])
        try:
            plot_bit_layout(axs[0], self.result)
            if self.result.kind in ("inf", "nan"):
                axs[1].axis("off")
            else:
                plot_number_line(axs[1], x, f, stochastic_up_probability(x, f))
        except ValueError as exc:   # a value the figure cannot place: the message, not a traceback
            self.error = f"cannot draw {x!r} in {f.label}: {exc}"
            show(self.out, error=self.error)
            return
        cached_tight_layout(fig, type(self).__name__)
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        return fit_labels(widgets.VBox([widgets.HBox([self.fmt, self.value]), self.out]))


def run_sums(steps: int, increment: float, start: float, acc: str, seed: int = 0,
             trials: int = 8) -> dict[str, SumResult]:
    """Add ``increment`` (jittered by +-50 %, seeded) ``steps`` times onto ``start``: RNE and SR in ``acc``,
    and fp32 as the reference accumulator. ``trials`` independent sums run side by side."""
    if steps < 1 or steps > 100_000:
        raise ValueError(f"steps must be between 1 and 100,000, got {steps}")
    for name, v in (("increment", increment), ("start", start)):
        if not np.isfinite(v):
            raise ValueError(f"{name} must be a finite number, got {v}")
    f = float_format(acc)
    rng = np.random.default_rng(seed)
    vals = increment * rng.uniform(0.5, 1.5, size=(steps, trials))
    top = abs(start) + float(np.abs(vals).sum(axis=0).max())
    if top > f.max_normal:
        raise ValueError(f"the sum reaches {top:.3g}, beyond the largest {f.label} number {f.max_normal:.3g}; "
                         f"use fewer steps or a smaller increment")
    out = {f"{f.label}, round to nearest": accumulate(vals, f, "nearest", start=start)}
    if f.name != "fp32":
        out[f"{f.label}, stochastic rounding"] = accumulate(vals, f, "stochastic", rng, start=start)
        out["FP32 (PSUM)"] = accumulate(vals, "fp32", start=start)
    return out


def format_sums(results: dict[str, SumResult]) -> str:
    lines = []
    for label, r in results.items():
        tot = r.partial[-1]
        ex = r.exact[-1]
        rel = np.abs(tot - ex) / np.abs(ex)
        lines.append(f"{label:<32} final {np.mean(tot):>12.6g} (exact {np.mean(ex):.6g}); "
                     f"relative error {np.mean(rel):.2e}")
    return "\n".join(lines)


class AccumulationPanel:
    """Add a small increment many times with a low-precision accumulator: round to nearest, stochastic, fp32."""

    def __init__(self, steps: int = 2000, increment: float = 1e-3, start: float = 1.0, acc: str = "bf16") -> None:
        self.steps = widgets.IntSlider(value=steps, min=10, max=4000, step=10, description="additions",
                                       continuous_update=False)
        self.increment = widgets.FloatLogSlider(value=increment, base=10, min=-5, max=1, step=0.25,
                                                description="increment", continuous_update=False)
        self.start = widgets.FloatText(value=start, description="start value")
        self.acc = Choice(options=[o for o in FORMAT_OPTIONS if o[1] != "fp8_e4m3fn"], value=acc,
                          description="accumulator", resolve=resolve_dtype)
        self.out = widgets.Output(layout=widgets.Layout(min_height="380px"))
        self.results: dict[str, SumResult] = {}
        self._figure = PanelFigure()
        self.summary = ""
        self.error = ""
        for w in (self.steps, self.increment, self.start, self.acc):
            w.observe(lambda _c: self.update(), names="value")
        self.update()

    def update(self) -> None:
        self.error = missing_choices([self.acc])
        if self.error:
            self.results, self.summary = {}, ""
            show(self.out, error=self.error)
            return
        try:
            self.results = run_sums(int(self.steps.value), float(self.increment.value), float(self.start.value),
                                    self.acc.value)
            self.summary, self.error = format_sums(self.results), ""
        except ValueError as exc:
            self.results, self.summary, self.error = {}, "", str(exc)
            show(self.out, error=self.error)
            return
        (ax,) = self._figure.axes("sums", (8.5, 3.8), lambda fig: (fig.add_subplot(),))
        fig = self._figure.figure
        plot_accumulation(ax, list(self.results.items()))
        ax.set_title(f"start {float(self.start.value):g}, add about {float(self.increment.value):.3g} "
                     f"x {int(self.steps.value):,}", fontsize=10)
        cached_tight_layout(fig, type(self).__name__)
        show(self.out, fig, self.summary)

    def show(self) -> widgets.Widget:
        controls = widgets.VBox([self.acc, self.start, self.increment, self.steps])
        return fit_labels(widgets.VBox([controls, self.out]))
