"""Figures for LLM serving: where decode time goes, memory per device, KV-cache growth,
batch sweeps and latency distributions from the batching simulation."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from matplotlib.axes import Axes

from trnsim.serving.estimate import ServingEstimate, estimate, kv_bytes_per_token
from trnsim.serving.hardware import GIB, serving_hardware

_COLORS = {"compute": "tab:blue", "HBM bandwidth": "tab:orange", "collective": "tab:red",
           "softmax engines": "tab:green", "operator starts": "tab:gray"}
_TERMS = (("compute", "compute_ms"), ("HBM bandwidth", "hbm_ms"), ("collective", "collective_ms"),
          ("softmax engines", "engine_ms"), ("operator starts", "fixed_ms"))


def _phase_label(name: str, p: Any) -> str:
    """'decode step (TPOT)\n= 22.6 ms (physics 28.6 x 0.79), bound by ...': the total, and where a calibrated factor
    scales the physics, both (the bars are physics terms, so a scaled total can be shorter than a bar)."""
    if abs(p.residual - 1.0) > 1e-9:
        return f"{name}\n= {p.total_ms:,.1f} ms (physics {p.physics_ms:,.1f} x {p.residual:.2f})\nbound by {p.binding}"
    return f"{name}\n= {p.total_ms:,.1f} ms\nbound by {p.binding}"


def phase_breakdown(ax: Axes, est: ServingEstimate) -> Axes:
    """Grouped bars (ms, log scale) of the physics terms of prefill and one decode step: compute, HBM traffic,
    collectives, the softmax engines and the per-operator DMA starts."""
    phases = [("prefill (TTFT)", est.prefill), ("decode step (TPOT)", est.decode)]
    x = np.arange(len(phases))
    w = 0.16
    for i, (name, attr) in enumerate(_TERMS):
        vals = [getattr(p, attr) for _, p in phases]
        ax.bar(x + (i - (len(_TERMS) - 1) / 2) * w, vals, w, color=_COLORS[name], label=name)
    ax.set_xticks(x, [_phase_label(n, p) for n, p in phases], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("physics term (ms, log scale)")
    tops = [getattr(p, attr) for _, p in phases for _, attr in _TERMS if getattr(p, attr) > 0]
    if tops:
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, max(hi, max(tops) * 60))   # headroom above the bars for the legend
    ax.set_title(f"{est.model} on {est.instance}, tp={est.tp}, batch={est.batch}")
    ax.legend(fontsize=7, ncol=3, loc="upper center")
    return ax


def memory_bar(ax: Axes, est: ServingEstimate) -> Axes:
    """One stacked bar per device: weights + KV cache against the device memory."""
    ax.barh([0], [est.weights_gib_per_device], color="tab:purple", label=f"weights {est.weights_gib_per_device:.2f} GiB")
    ax.barh([0], [est.kv_cache_gib_per_device], left=[est.weights_gib_per_device], color="tab:green",
            label=f"KV cache {est.kv_cache_gib_per_device:.2f} GiB")   # (a sliver at batch 1: the label says how much)
    ax.axvline(est.device_memory_gib, color="black", ls="--", label=f"device memory {est.device_memory_gib:.1f} GiB")
    ax.set_yticks([0], ["per device"])
    ax.set_xlabel("GiB")
    ax.set_xlim(0, max(est.device_memory_gib, est.memory_gib_per_device) * 1.1)
    ax.set_title("fits" if est.fits else "DOES NOT FIT", color="black" if est.fits else "tab:red", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return ax


def kv_growth(ax: Axes, model: Any, instance: str, tp: int, batches: Sequence[int] = (1, 8, 32),
              max_context: int = 8192, dtype: str = "bf16") -> Axes:
    """KV-cache + weights (GiB per device) against context length for several batch sizes."""
    from trnsim.serving.estimate import DTYPE_BYTES, _model

    m = _model(model)
    hw = serving_hardware(instance)
    ctx = np.linspace(0, max_context, 200)
    weights = m.params * DTYPE_BYTES[dtype] / tp / GIB
    kv = kv_bytes_per_token(m, tp, dtype) / GIB
    for b in batches:
        ax.plot(ctx, weights + b * kv * ctx, label=f"batch {b}")
    ax.axhline(hw.device_memory_bytes / GIB, color="black", ls="--", label="device memory")
    ax.axhline(weights, color="tab:purple", ls=":", label="weights alone")
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("GiB per device")
    ax.set_title(f"KV cache growth: {getattr(m, 'name', 'model')} on {instance}, tp={tp}")
    ax.legend(fontsize=7)
    return ax


def batch_sweep(ax: Axes, model: Any, instance: str, tp: int, batches: Sequence[int],
                input_tokens: int = 512, output_tokens: int = 128) -> Axes:
    """Throughput (tokens/s, left) and TPOT (ms, right) against batch size; unfilled = does not fit."""
    ests = [estimate(model, instance, tp, b, input_tokens, output_tokens) for b in batches]
    tok = [e.tokens_per_s for e in ests]
    tpot = [e.tpot_ms for e in ests]
    fits = np.array([e.fits for e in ests])
    b = np.asarray(batches)
    tok_a, tpot_a = np.asarray(tok), np.asarray(tpot)
    # solid through the batches that fit, dashed on to those that do not (a learner must not read them as reachable)
    last = int(np.flatnonzero(fits)[-1]) if fits.any() else -1
    ax.plot(b[:last + 1], tok_a[:last + 1], color="tab:blue")
    if last + 1 < len(b):
        ax.plot(b[max(last, 0):], tok_a[max(last, 0):], color="tab:blue", ls="--", alpha=0.6)
    ax.scatter(b[fits], tok_a[fits], color="tab:blue", zorder=3, label="tokens/s (fits)")
    ax.scatter(b[~fits], tok_a[~fits], facecolor="white", edgecolor="tab:blue", s=60, lw=1.5, zorder=4,
               label="does not fit (KV cache + weights > memory)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size")
    ax.set_ylabel("output tokens/s per instance", color="tab:blue")
    ax2 = ax.twinx()
    ax2.plot(b[:last + 1], tpot_a[:last + 1], color="tab:orange", marker="s", ms=3)
    if last + 1 < len(b):
        ax2.plot(b[max(last, 0):], tpot_a[max(last, 0):], color="tab:orange", marker="s", ms=3, ls="--", alpha=0.6)
    ax2.set_ylabel("TPOT (ms)", color="tab:orange")
    ax2.grid(False)
    ax.set_zorder(ax2.get_zorder() + 1)   # the throughput markers above the TPOT line where the axes coincide
    ax.patch.set_visible(False)
    ax.set_title(f"Batching: {ests[0].model} on {instance}, tp={tp}")
    ax.legend(fontsize=7, loc="upper left")
    return ax


def latency_cdf(ax: Axes, results: Sequence[Any], metric: str = "latency") -> Axes:
    """Empirical CDFs of request latency (or TTFT) from :func:`trnsim.serving.simulate` results."""
    for r in results:
        data = np.sort(r.latencies_ms if metric == "latency" else r.ttft_ms) / 1000.0
        y = np.arange(1, data.size + 1) / data.size
        ax.step(data, y, where="post", label=f"{r.mode}: p50 {np.percentile(data, 50):.2f} s, p99 {np.percentile(data, 99):.2f} s")
    ax.axhline(0.99, color="gray", lw=0.8, ls=":")
    ax.set_xlabel(("time to first token" if metric == "ttft" else "request latency") + " (s)")
    ax.set_ylabel("fraction of requests")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7, loc="lower right")
    return ax


def generations(ax: Axes, rows: Sequence[ServingEstimate]) -> Axes:
    """Cost per million output tokens (bars) with TPOT annotated, one bar per configuration."""
    labels = [f"{e.instance}\ntp={e.tp} b={e.batch}" for e in rows]
    costs = [e.cost_per_million_output_tokens_usd for e in rows]
    y = np.arange(len(rows))
    ax.barh(y, [c if c is not None else 0 for c in costs], color="tab:green", alpha=0.7)
    for i, (e, c) in enumerate(zip(rows, costs)):
        txt = f"${c:,.2f}" if c is not None else "no price in the sources"
        ax.annotate(f"{txt}  (TPOT {e.tpot_ms:.1f} ms)", (c or 0, i), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=7)
    ax.set_yticks(y, labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("USD per million output tokens (catalog on-demand price)")
    ax.set_xlim(0, max([c for c in costs if c is not None] or [1]) * 1.6)
    return ax
