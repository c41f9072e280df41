"""Roofline figure: TensorE peak and memory roofs of one NeuronCore, with kernels as points."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from trnsim.perf.roofline import roofline


def plot_roofline(profiles: Any = (), ax: Any = None, *, target: str | None = None, dtype: str = "bfloat16",
                  labels: Sequence[str] | None = None) -> Any:
    """Log-log roofline (TFLOP/s vs FLOP per HBM byte) for ``target`` with each profile's point.

    Roofs: TensorE peak for ``dtype``, the attainable DMA ceiling (model) and the spec per-core HBM
    share (dashed). ``profiles`` is one Profile or a sequence. Returns the Axes.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    profs = [profiles] if hasattr(profiles, "latency_us") else list(profiles)
    tgt = target or (profs[0].target if profs else "trn1")
    r = roofline(tgt, dtype)
    pts = [(p.arithmetic_intensity, p.achieved_tflops) for p in profs if np.isfinite(p.arithmetic_intensity)]
    xs = [x for x, _ in pts if x > 0]
    lo = min([1.0] + [x / 3 for x in xs])
    hi = max([r.ridge_flops_per_byte * 30] + [x * 3 for x in xs])
    ai = np.logspace(np.log10(lo), np.log10(hi), 200)
    ax.loglog(ai, r.attainable_tflops(ai), color="black", lw=2,
              label=f"attainable: DMA {r.dma_gbytes_per_s:.0f} GB/s, peak {r.peak_tflops:.1f} TFLOP/s")
    ax.loglog(ai, r.attainable_tflops(ai, spec_hbm=True), color="gray", ls="--", lw=1,
              label=f"HBM share {r.hbm_gbytes_per_s:.0f} GB/s (spec)")
    ax.axvline(r.ridge_flops_per_byte, color="black", alpha=0.25, lw=1)
    ax.annotate(f"ridge {r.ridge_flops_per_byte:.0f} FLOP/B", (r.ridge_flops_per_byte, r.peak_tflops / 30),
                rotation=90, fontsize=8, ha="right", va="center", alpha=0.7)
    names = list(labels) if labels is not None else [p.kernel_name for p in profs]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, p in enumerate(profs):
        if not np.isfinite(p.arithmetic_intensity) or p.achieved_tflops <= 0:
            continue
        ax.scatter([p.arithmetic_intensity], [p.achieved_tflops], s=45, zorder=3, color=colors[(k + 1) % len(colors)],
                   label=f"{names[k]}: {p.achieved_tflops:.3g} TFLOP/s at {p.arithmetic_intensity:.3g} FLOP/B")
    ax.set_xlabel("arithmetic intensity (FLOP per HBM byte)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"Roofline of one NeuronCore ({r.target}, {dtype})", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="lower right")
    return ax


__all__ = ["plot_roofline"]
