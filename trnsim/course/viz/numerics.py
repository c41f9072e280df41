"""Figures for notebook 07 (numerics). Each function draws on an ``Axes`` it is given.

Numbers come from :mod:`trnsim.models.numerics` (formats from ml_dtypes, rounding, sums) and the catalog.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.patches import Rectangle

from trnsim.models.numerics import (Decoded, FloatFormat, SumResult, adjacent, float_format, neighbours,
                                    shown_digits, ulp)

FIELD_COLORS = {"sign": "#c44e52", "exponent": "#4c72b0", "mantissa": "#55a868"}
FORMAT_COLORS = {"fp32": "#2ca02c", "bf16": "#1f77b4", "fp16": "#9467bd", "fp8_e4m3": "#ff7f0e",
                 "fp8_e4m3fn": "#d62728", "fp8_e5m2": "#8c564b"}


def plot_bit_layout(ax: Axes, d: Decoded) -> None:
    """One box per bit, coloured by field (sign, exponent, mantissa), with the decoding as the title."""
    f = d.fmt
    bits = d.bit_string.replace(" ", "")
    fields = ["sign"] + ["exponent"] * f.exponent_bits + ["mantissa"] * f.mantissa_bits
    width = 1.0
    for i, (b, fld) in enumerate(zip(bits, fields)):
        ax.add_patch(Rectangle((i * width, 0), width, 1, facecolor=FIELD_COLORS[fld], alpha=0.25 + 0.55 * (b == "1"),
                               edgecolor="white", lw=1.5))
        ax.text(i * width + width / 2, 0.5, b, ha="center", va="center", fontsize=11 if f.bits <= 16 else 8,
                fontweight="bold", color="black")
    spans = (("sign", 0, 1, f"sign = {d.sign}"),
             ("exponent", 1, 1 + f.exponent_bits, f"exponent = {d.exponent} (bias {f.bias})"),
             ("mantissa", 1 + f.exponent_bits, f.bits, f"mantissa = {d.mantissa} / {2 ** f.mantissa_bits}"))
    for fld, a, b, text in spans:
        ax.annotate("", xy=(a * width, 1.15), xytext=(b * width, 1.15),
                    arrowprops=dict(arrowstyle="-", color=FIELD_COLORS[fld], lw=3))
        ax.text((a + b) / 2 * width, 1.3, text, ha="center", va="bottom", fontsize=9, color=FIELD_COLORS[fld])
    ax.set_xlim(-0.2, f.bits * width + 0.2)
    ax.set_ylim(-0.6, 1.9)
    ax.axis("off")
    ax.text(f.bits * width / 2, -0.35, d.formula, ha="center", va="center", fontsize=10)
    ax.set_title(f"{f.label}: {f.bits} bits", fontsize=10)


def plot_number_line(ax: Axes, x: float, fmt: str | FloatFormat, p_up: float | None = None) -> None:
    """Representable numbers around ``x`` (ticks at the real neighbours: the spacing halves below a power of two),
    ``x`` itself, and the stochastic-rounding odds. Beyond the largest finite number only the finite side is drawn.
    """
    import math

    f = float_format(fmt)
    lo, hi = neighbours(x, f)
    exact = lo == hi
    below = above = None
    if exact:
        below, above = adjacent(x, f)
        core = [v for v in (below, x, above) if v is not None]
        spacing = float(ulp(x, f))
    else:
        core = [v for v in (lo, hi) if math.isfinite(v)]
        spacing = hi - lo if math.isfinite(hi - lo) else float(ulp(core[0], f))
    outer_lo = adjacent(core[0], f)[0] if core else None
    outer_hi = adjacent(core[-1], f)[1] if core else None
    ticks = [v for v in [outer_lo] + core + [outer_hi] if v is not None]
    digits = shown_digits(f)
    ax.axhline(0.5, color="#999999", lw=0.8)
    for g in ticks:
        if exact and g == x:
            continue   # x itself is the red dot
        ax.plot([g, g], [0.35, 0.65], color="#777777", lw=1.2)
        ax.text(g, 0.72, f"{g:.{digits}g}", ha="center", va="bottom", fontsize=8, color="#555555")
    ax.plot([x], [0.5], "o", color="#c44e52", ms=7, zorder=3)
    ax.text(x, 0.95, f"x = {x:.7g}" + ("  (exactly representable)" if exact else ""), ha="center", va="bottom",
            fontsize=9, color="#c44e52")
    if p_up is not None and not exact and math.isfinite(lo) and math.isfinite(hi):
        ax.text(lo, 0.2, f"SR: down with p = {1 - p_up:.2f}", ha="center", va="top", fontsize=8, color="#1f77b4")
        ax.text(hi, 0.2, f"SR: up with p = {p_up:.2f}", ha="center", va="top", fontsize=8, color="#1f77b4")
    left, right = min(ticks + [x]), max(ticks + [x])
    pad = 0.25 * max(right - left, spacing)
    ax.set_xlim(left - pad, right + pad)
    ax.set_ylim(-0.1, 1.25)
    ax.axis("off")
    if exact:
        edge = "" if None not in (below, above) else f"; {x:.7g} is the largest finite {f.label} number"
        what = f"spacing above x: {spacing:.3g}{edge}"
    elif math.isfinite(lo) and math.isfinite(hi):
        what = f"spacing {spacing:.3g}"
    else:
        what = f"x is beyond the largest finite number, {core[0]:.7g}, and rounds to it"
    ax.set_title(f"neighbouring {f.label} numbers ({what})", fontsize=9)


def plot_relative_spacing(ax: Axes, names: Sequence[str] = ("fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2"),
                          lo: float = 1e-9, hi: float = 1e6, n: int = 3000) -> None:
    """Relative spacing ulp(x)/x against magnitude x (log-log) for several formats.

    The height of each saw-tooth is the format's precision (eps, then 2^-p within a binade); its
    horizontal extent is the range: it rises in the subnormals on the left and stops at the
    largest finite number on the right (marked with a dot).
    """
    xs = np.logspace(np.log10(lo), np.log10(hi), n)
    for name in names:
        f = float_format(name)
        keep = (xs <= f.max_normal) & (xs >= f.min_subnormal)
        rel = ulp(xs[keep], f) / xs[keep]
        c = FORMAT_COLORS.get(f.name, None)
        ax.plot(xs[keep], rel, color=c, lw=1.2, label=f.label)
        if f.max_normal <= hi:
            ax.plot([f.max_normal], [float(ulp(f.max_normal, f)) / f.max_normal], "o", color=c, ms=5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("magnitude |x|")
    ax.set_ylabel("relative spacing ulp(x) / |x|")
    ax.set_title("Precision (height) and range (width) of each format", fontsize=10)
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def plot_accumulation(ax: Axes, results: Sequence[tuple[str, SumResult]], relative: bool = True) -> None:
    """Running-sum error against the number of additions, one line per labelled ``SumResult``.

    For 2-D results (several independent sums) the mean absolute error over the sums is drawn.
    """
    for label, r in results:
        err = np.abs(r.partial - r.exact)
        if relative:
            err = err / np.maximum(np.abs(r.exact), np.finfo(np.float64).tiny)
        if err.ndim == 2:
            err = err.mean(axis=1)
        steps = np.arange(1, err.shape[0] + 1)
        ax.plot(steps, np.maximum(err, 1.5e-10), lw=1.4, label=label)   # exact steps sit on the floor
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of additions")
    ax.set_ylabel("relative error of the running sum" if relative else "absolute error")
    ax.set_ylim(bottom=1e-10)
    # a log axis has no zero: an exact running sum (error 0) is drawn on this line, which is not a measurement
    ax.axhline(1.5e-10, color="#bbbbbb", lw=0.8, ls=":")
    ax.text(1.0, 1.5e-10, " exact (error 0)", transform=ax.get_yaxis_transform(), va="center", ha="left",
            fontsize=7, color="#888888", clip_on=False)
    ax.legend(fontsize=8, frameon=False)


def plot_accuracy_speed(ax: Axes, points: Sequence[tuple[str, float, float]], title: str = "") -> None:
    """Scatter: Tensor Engine TFLOPS (x) against relative error (y, log), one labelled point per format."""
    for label, tflops, err in points:
        key = label.lower().replace(" ", "_")
        c = next((v for k, v in FORMAT_COLORS.items() if k == key or key.startswith(k)), "#333333")
        ax.scatter([tflops], [err], s=60, color=c, zorder=3)
        ax.annotate(label, (tflops, err), textcoords="offset points", xytext=(6, 4), fontsize=8)
    ax.set_yscale("log")
    ax.set_xlabel("Tensor Engine dense TFLOPS per NeuronCore")
    ax.set_ylabel("relative error of the matmul")
    if points:
        xmax = max(p[1] for p in points)
        ax.set_xlim(0, xmax * 1.3)
    ax.set_title(title or "Accuracy against speed", fontsize=10)
