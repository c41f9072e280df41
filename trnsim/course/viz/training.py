"""Figures for LLM training (notebooks 10 and 11). Each function draws on the Axes it is given."""
from __future__ import annotations

from typing import Sequence

import numpy as np

GIB = 2**30
STEP_PARTS = (("compute", "compute", "#4C72B0"), ("tp_comm", "TP comm", "#DD8452"), ("pp_comm", "PP sends", "#937860"),
              ("bubble", "pipeline bubble", "#C44E52"), ("dp_exposed", "exposed DP sync", "#8172B3"),
              ("optimizer", "optimizer", "#55A868"))
MEM_PARTS = (("weights_bytes", "weights", "#4C72B0"), ("gradients_bytes", "gradients", "#DD8452"),
             ("optimizer_bytes", "optimizer state", "#55A868"), ("activations_bytes", "activations", "#C44E52"))


def _labels(estimates, labels):
    return list(labels) if labels is not None else [e.plan.label().split(" (")[0] for e in estimates]


def plot_step_breakdown(ax, estimates: Sequence, labels: Sequence[str] | None = None, *, unit: str = "s"):
    """Horizontal stacked bars: where each plan's step time goes."""
    labels = _labels(estimates, labels)
    scale = {"s": 1.0, "ms": 1e3}[unit]
    y = np.arange(len(estimates))
    left = np.zeros(len(estimates))
    for key, name, color in STEP_PARTS:
        vals = np.array([e.breakdown_s[key] for e in estimates]) * scale
        if np.any(vals > 0):
            ax.barh(y, vals, left=left, color=color, label=name, height=0.6)
        left += vals
    for yi, total, e in zip(y, left, estimates):
        ax.text(total, yi, f"  {total:.3g} {unit}, MFU {100 * e.mfu:.0f}%", va="center", fontsize=8)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlabel(f"time per training step ({unit})")
    ax.set_xlim(0, left.max() * 1.45 if len(left) else 1)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, fontsize=7, frameon=False)
    ax.grid(axis="y", visible=False)
    return ax


def plot_memory(ax, estimates: Sequence, labels: Sequence[str] | None = None):
    """Stacked bars of memory per device by part, with the device capacity as a dashed line."""
    labels = _labels(estimates, labels)
    x = np.arange(len(estimates))
    bottom = np.zeros(len(estimates))
    for key, name, color in MEM_PARTS:
        vals = np.array([getattr(e.memory, key) for e in estimates]) / GIB
        ax.bar(x, vals, bottom=bottom, color=color, label=name, width=0.6)
        bottom += vals
    cap = estimates[0].memory.capacity_bytes / GIB
    ax.axhline(cap, color="k", ls="--", lw=1)
    ax.text(len(estimates) - 0.5, cap, f"{cap:.0f} GiB per {estimates[0].system_spec.device_name}",
            ha="right", va="bottom", fontsize=8)
    ax.set_xticks(x, labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("GiB per device")
    ax.set_ylim(0, max(bottom.max(), cap) * 1.18)
    ax.legend(fontsize=7, frameon=False, loc="upper left", ncol=2)
    ax.grid(axis="x", visible=False)
    return ax


def plot_plan_map(ax, result, *, top: int = 1):
    """Every feasible plan as a point: memory per device (x) against step time (y), colour = TP."""
    ranked = result.ranked
    if not ranked:
        ax.text(0.5, 0.5, "no feasible plan", ha="center", va="center", transform=ax.transAxes)
        return ax
    tps = sorted({e.plan.tp for e in ranked})
    cmap = __import__("matplotlib").colormaps["viridis"]
    for i, tp in enumerate(tps):
        pts = [e for e in ranked if e.plan.tp == tp]
        ax.scatter([e.memory.total_bytes / GIB for e in pts], [e.step_time_s for e in pts], s=18,
                   color=cmap(i / max(1, len(tps) - 1)), label=f"TP{tp}", alpha=0.8)
    best = ranked[0]
    ax.scatter([best.memory.total_bytes / GIB], [best.step_time_s], s=120, facecolors="none", edgecolors="r",
               linewidths=1.5, label="fastest")
    ax.axvline(best.memory.capacity_bytes / GIB, color="k", ls="--", lw=1)
    ax.set_xlabel("memory per device (GiB); dashed = capacity")
    ax.set_ylabel("step time (s)")
    ax.legend(fontsize=7, frameon=False, ncol=2)
    return ax


def plot_validation(ax, predicted: Sequence[float], published: Sequence[float], names: Sequence[str]):
    """Predicted / published throughput per run (one row each), with 1.0 and the mean ratio marked."""
    p, q = np.asarray(predicted, dtype=float), np.asarray(published, dtype=float)
    r = p / q
    y = np.arange(len(r))
    ax.scatter(r, y, color="#4C72B0", zorder=3)
    for yi, ri, pi, qi in zip(y, r, p, q):
        ax.text(ri, yi, f"  {pi:.0f} vs {qi:.0f}", va="center", fontsize=7)
    mean = float(r.mean())
    ax.axvline(1.0, color="k", ls="--", lw=1, label="prediction = published")
    ax.axvline(mean, color="#C44E52", lw=1, label=f"mean ratio {mean:.2f}")
    ax.set_yticks(y, list(names), fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0.9, max(1.6, r.max() * 1.12))
    ax.set_xlabel("predicted / published TFLOPS per GPU (labels: predicted vs published)")
    ax.legend(fontsize=8, frameon=False, loc="center left")
    ax.grid(axis="y", visible=False)
    return ax


def plot_losses(ax, runs: Sequence, labels: Sequence[str] | None = None):
    """Loss per step of several training runs (dashed lines so identical curves stay visible)."""
    styles = ["-", "--", ":", "-."]
    for i, run in enumerate(runs):
        lab = labels[i] if labels is not None else f"{run.mode} x{run.cores}"
        ax.plot(run.losses, ls=styles[i % len(styles)], lw=2 if i == 0 else 1.5, label=lab)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (nats per character)")
    ax.legend(frameon=False)
    return ax


def plot_time_split(ax, runs: Sequence, labels: Sequence[str] | None = None):
    """Simulated time per step split into compute and communication (microseconds)."""
    labels = list(labels) if labels is not None else [f"{r.mode} x{r.cores}" for r in runs]
    n = np.array([len(r.records) for r in runs], dtype=float)
    comp = np.array([r.compute_s for r in runs]) / n * 1e6
    comm = np.array([r.comm_s for r in runs]) / n * 1e6
    x = np.arange(len(runs))
    ax.bar(x, comp, color="#4C72B0", label="compute", width=0.6)
    ax.bar(x, comm, bottom=comp, color="#DD8452", label="communication", width=0.6)
    for xi, c, m in zip(x, comp, comm):
        ax.text(xi, c + m, f"{c + m:.1f} us", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, labels)
    ax.set_ylabel("simulated time per step (us)")
    ax.set_ylim(0, (comp + comm).max() * 1.15)
    ax.legend(frameon=False)
    ax.grid(axis="x", visible=False)
    return ax


def plot_predicted_vs_published(ax, rows: Sequence, *, unit: str = "", title: str = "", log: bool = True):
    """Predicted (cross-validated, filled) and physics-only (open) against published, one point per row.

    ``rows`` are :class:`trnsim.models.calibration.Row`; the grey band is +-20%; rows off by 10% or more are labelled.
    """
    pub = np.array([r.published for r in rows])
    pred = np.array([r.predicted for r in rows])
    phys = np.array([r.physics for r in rows])
    lo, hi = min(pub.min(), pred.min(), phys.min()) * 0.8, max(pub.max(), pred.max(), phys.max()) * 1.25
    xs = np.array([lo, hi])
    ax.plot(xs, xs, color="k", lw=1)
    ax.fill_between(xs, xs / 1.2, xs * 1.2, color="0.85", label="within 20%")
    ax.scatter(pub, phys, facecolors="none", edgecolors="#C44E52", s=42, label="physics only")
    ax.scatter(pub, pred, color="#4C72B0", s=30, zorder=3, label="with the calibrated residual (leave-one-out)")
    spots: dict[tuple[float, float], list[str]] = {}
    for r in rows:  # label the rows outside +-10% (the others crowd the diagonal); one label per point
        if abs(r.error) >= 0.10:
            key = (round(r.published, 1), round(r.predicted, 1))
            spots.setdefault(key, []).append(f"{r.label.split()[0]} {100 * r.error:+.0f}%")
    for (x, y), names in spots.items():
        # away from the diagonal: above-left of a point predicted too high, below-right of one predicted too low
        # (a label to the right of a point above the diagonal lands on its neighbours along the band)
        above = y > x
        ax.annotate("\n".join(names), (x, y), fontsize=7, xytext=(-5, 4) if above else (5, -4),
                    textcoords="offset points", va="bottom" if above else "top", ha="right" if above else "left")
    if log:
        from matplotlib.ticker import FuncFormatter, LogLocator

        ax.set_xscale("log")
        ax.set_yscale("log")
        # labels at 1-2-5 per decade, plus 3 on a narrow range (under 1.5 decades would otherwise show two)
        subs = (1.0, 2.0, 3.0, 5.0) if hi / lo < 30 else (1.0, 2.0, 5.0)
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(LogLocator(subs=subs))
            axis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
            axis.set_minor_formatter(FuncFormatter(lambda v, _p: ""))
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel(f"published {unit}".strip())
    ax.set_ylabel(f"predicted {unit}".strip())
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, frameon=False, loc="upper left")
    return ax
