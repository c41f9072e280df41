"""Figures comparing chip generations and instances (notebook 08). Each draws on a given Axes."""
from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.axes import Axes

from trnsim.catalog import instances
from trnsim.models.compare import METRICS, GenerationRow, Row, format_value, generation_table

DTYPE_COLORS = {"bf16": "#1f77b4", "fp8": "#ff7f0e", "fp32": "#2ca02c"}


def plot_generation_compute(ax: Axes, rows: Sequence[GenerationRow] | None = None) -> None:
    """Grouped bars: dense peak TFLOPS per chip for FP32, BF16 and FP8 (log scale)."""
    rows = list(rows or generation_table())
    x = np.arange(len(rows))
    width = 0.26
    for k, (dtype, attr) in enumerate((("fp32", "fp32_tflops"), ("bf16", "bf16_tflops"), ("fp8", "fp8_tflops"))):
        vals = [getattr(r, attr) for r in rows]
        xs = [xi + (k - 1) * width for xi, v in zip(x, vals) if v is not None]
        ys = [v for v in vals if v is not None]
        bars = ax.bar(xs, ys, width, label=dtype.upper(), color=DTYPE_COLORS[dtype])
        for b, v in zip(bars, ys):
            ax.annotate(f"{v:,.0f}", (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom", fontsize=7,
                        xytext=(0, 1), textcoords="offset points")
    ax.set_yscale("log")
    ax.set_xticks(x, [r.chip for r in rows])
    ax.set_ylabel("peak dense TFLOPS per chip")
    ax.set_title("Compute per chip (FP8 on Trainium3 is MXFP8)")
    ax.legend(frameon=False, fontsize=8, loc="upper left")
    ax.set_ylim(top=ax.get_ylim()[1] * 3)


def plot_generation_bar(ax: Axes, field: str, label: str, rows: Sequence[GenerationRow] | None = None,
                        color: str = "#4c72b0", fmt: str = ",.0f") -> None:
    """One bar per chip for a GenerationRow field, annotated with its value."""
    rows = list(rows or generation_table())
    vals = [getattr(r, field) for r in rows]
    bars = ax.bar([r.chip for r in rows], [0 if v is None else v for v in vals], color=color)
    for b, v in zip(bars, vals):
        ax.annotate("n/a" if v is None else format(v, fmt), (b.get_x() + b.get_width() / 2, b.get_height()),
                    ha="center", va="bottom", fontsize=8, xytext=(0, 1), textcoords="offset points")
    ax.set_ylabel(label)
    ax.set_ylim(top=max(v for v in vals if v is not None) * 1.18)
    ax.tick_params(axis="x", labelsize=8)


def plot_metric_bars(ax: Axes, rows: Sequence[Row], metric: str) -> None:
    """Horizontal bars for instances, best on top; instances without a value are listed with the reason."""
    m = METRICS[metric]
    have = sorted((r for r in rows if r.value is not None), key=lambda r: r.value, reverse=not m.higher_is_better)
    lacking = [r for r in rows if r.value is None]
    labels = [r.instance for r in lacking] + [r.instance for r in have]
    y = np.arange(len(labels))
    vmax = max((r.value for r in have), default=1.0)
    ax.barh(y[len(lacking):], [r.value for r in have], color="#4c72b0")
    for yi, r in zip(y[len(lacking):], have):
        ax.annotate(f" {format_value(r.value)}", (r.value, yi), va="center", fontsize=8)
    for yi, r in zip(y[: len(lacking)], lacking):
        ax.annotate(f" n/a: {r.reason}", (0, yi), va="center", fontsize=8, color="#777777")
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlim(0, vmax * 1.25)
    ax.set_xlabel(f"{m.label} ({m.unit})")
    where = sorted({r.price_where.rsplit(", [", 1)[0] for r in have if r.price_where})
    title = m.label
    if where:
        title += f"\nOn-Demand prices: {' / '.join(where)}"
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", visible=False)


def plot_price_performance(ax: Axes, dtype: str = "bf16") -> None:
    """Price vs peak compute for every priced instance, with lines of equal TFLOPS per dollar."""
    from trnsim.models.compare import price_quote

    quotes = {i.name: price_quote(i) for i in instances()}
    pts = [(i, quotes[i.name].usd_per_hour, i.peak_tflops(dtype)) for i in instances()
           if quotes[i.name] is not None and i.peak_tflops(dtype) is not None]
    family_colors = {"inf1": "#8c564b", "inf2": "#ff7f0e", "trn1": "#1f77b4", "trn1n": "#17becf"}
    # numbered markers plus a key: point labels would collide where instances share a price or compute level
    pts.sort(key=lambda p: (p[1], p[2]))
    for k, (inst, price, tf) in enumerate(pts, start=1):
        ax.scatter(price, tf, s=110, color=family_colors.get(inst.family, "#555555"), zorder=3)
        ax.annotate(str(k), (price, tf), fontsize=7, color="white", ha="center", va="center", zorder=4,
                    fontweight="bold")
    key = "\n".join(f"{k:>2}  {inst.name}  ${price:g}/h" for k, (inst, price, _) in enumerate(pts, start=1))
    ax.text(1.02, 1.0, key, transform=ax.transAxes, fontsize=7.5, va="top", family="monospace")
    prices = np.array([p for _, p, _ in pts])
    xs = np.geomspace(prices.min() / 1.5, prices.max() * 2.5, 50)
    for per_dollar in (50, 100, 200):
        ax.plot(xs, per_dollar * xs, ls=":", lw=0.8, color="#999999")
        ax.annotate(f"{per_dollar} TFLOPS per $/h", (xs[0], per_dollar * xs[0]), fontsize=7, color="#777777",
                    rotation=0, ha="left", va="bottom")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("On-Demand price (USD per hour)")
    ax.set_ylabel(f"peak dense {dtype.upper()} TFLOPS")
    where = sorted({f"{quotes[i.name].region}, {quotes[i.name].as_of}" for i, _, _ in pts})
    ax.set_title(f"Price vs peak {dtype.upper()} compute\nOn-Demand prices ({'; '.join(where)})", fontsize=9)
    for fam, col in family_colors.items():
        ax.scatter([], [], color=col, label=fam)
    ax.legend(frameon=False, fontsize=8, loc="lower right")


def plot_chip_dtypes(ax: Axes, spec) -> None:
    """Bars of one chip's dense peak per data type (vendor figures)."""
    items = sorted(spec.peak_tflops.items(), key=lambda kv: kv[1])
    bars = ax.barh([k.upper() for k, _ in items], [v for _, v in items], color="#4c72b0")
    for b, (_, v) in zip(bars, items):
        ax.annotate(f" {v:,.1f}", (v, b.get_y() + b.get_height() / 2), va="center", fontsize=8)
    ax.set_xlabel("peak dense TFLOPS per chip")
    ax.set_title(f"{spec.display_name}: {spec.neuroncores} NeuronCores ({spec.neuroncore_version})")
    ax.set_xlim(0, max(v for _, v in items) * 1.2)
    ax.grid(axis="y", visible=False)
