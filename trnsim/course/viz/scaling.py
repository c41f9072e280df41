"""Figures for the scaling sections of notebooks 09, 11 and 12: pipeline schedules, compute/communication
overlap and the terms of a decode step. Each function draws onto the ``Axes`` it is given."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

FORWARD_COLOR = "#1f77b4"
BACKWARD_COLOR = "#ff7f0e"
COMM_COLOR = "#2ca02c"
EXPOSED_COLOR = "#d62728"


def plot_pipeline_schedule(ax: Any, schedule: Any, *, label_microbatches: bool = True) -> None:
    """Gantt chart of a :class:`trnsim.training.pipeline.PipelineSchedule`: one row per device (device 0
    on top), forward passes blue, backward orange, darker shades for later model chunks; idle time blank."""
    p = schedule.stages
    for s in schedule.steps:
        base = FORWARD_COLOR if s.kind == "F" else BACKWARD_COLOR
        alpha = 1.0 - 0.45 * s.chunk / max(1, schedule.chunks - 1) if schedule.chunks > 1 else 1.0
        ax.barh(p - 1 - s.device, s.end - s.start, left=s.start, height=0.8, color=base, alpha=alpha,
                edgecolor="white", linewidth=0.6)
        if label_microbatches and (s.end - s.start) >= 0.45:
            ax.text((s.start + s.end) / 2, p - 1 - s.device, str(s.microbatch), ha="center", va="center",
                    fontsize=7, color="white")
    ax.set_yticks(range(p))
    ax.set_yticklabels([f"device {d}" for d in reversed(range(p))])
    ax.set_xlim(0, schedule.makespan)
    chunk_note = f", {schedule.chunks} chunks/device" if schedule.chunks > 1 else ""
    ax.set_title(f"{schedule.kind}: p={p}, m={schedule.microbatches}{chunk_note}; "
                 f"bubble {100 * schedule.bubble_fraction:.1f}%", fontsize=10)
    ax.set_xlabel("time (forward passes of one stage)")
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color=FORWARD_COLOR, label="forward"), Patch(color=BACKWARD_COLOR, label="backward")],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)


def plot_overlap_timeline(ax: Any, timeline: Any, *, unit: str = "ms") -> None:
    """Two rows for a :class:`trnsim.training.scaling.OverlapTimeline`: the backward pass (compute) and
    each layer's gradient collective (communication); the communication left after the last backward
    pass ends (the *exposed* part) is shaded red."""
    scale = {"s": 1.0, "ms": 1e3, "us": 1e6}[unit]
    for layer, s, e in timeline.compute:
        ax.barh(1, (e - s) * scale, left=s * scale, height=0.6, color=BACKWARD_COLOR, edgecolor="white")
    for layer, s, e in timeline.comm:
        ax.barh(0, (e - s) * scale, left=s * scale, height=0.6, color=COMM_COLOR, edgecolor="white")
    end_c = timeline.compute_end_s * scale
    if timeline.exposed_comm_s > 0:
        ax.axvspan(end_c, timeline.step_end_s * scale, color=EXPOSED_COLOR, alpha=0.15, lw=0)
        ax.text(end_c, 1.45, f" exposed {timeline.exposed_comm_s * scale:.3g} {unit}", color=EXPOSED_COLOR,
                fontsize=8, va="center")
    ax.set_yticks([0, 1])
    ax.set_yticklabels(["gradient collectives", "backward compute"])
    ax.set_ylim(-0.6, 1.8)
    ax.set_xlim(0, max(timeline.step_end_s, timeline.serial_s) * scale * 1.02)
    ax.axvline(timeline.serial_s * scale, color="0.4", ls="--", lw=1)
    ax.text(timeline.serial_s * scale, -0.5, " no overlap", fontsize=8, color="0.3")
    ax.set_xlabel(f"time ({unit})")


def plot_decode_terms(ax: Any, terms: Sequence[Any], *, unit: str = "ms") -> None:
    """Per batch size, stacked weights and KV-cache streaming time next to the compute time of a decode
    step (a sequence of :class:`trnsim.serving.decode_math.DecodeTerms`, one per batch)."""
    scale = {"s": 1.0, "ms": 1e3}[unit]
    x = np.arange(len(terms))
    w = np.array([t.weights_s for t in terms]) * scale
    kv = np.array([t.kv_s for t in terms]) * scale
    c = np.array([t.compute_s for t in terms]) * scale
    ax.bar(x - 0.2, w, 0.4, color="#7f7f7f", label="weights streamed")
    ax.bar(x - 0.2, kv, 0.4, bottom=w, color="#9467bd", label="KV cache streamed")
    ax.bar(x + 0.2, c, 0.4, color=FORWARD_COLOR, label="compute (peak)")
    for i, t in enumerate(terms):
        ax.text(x[i], max(w[i] + kv[i], c[i]) * 1.03, t.bound[0].upper(), ha="center", fontsize=8)
    ax.set_xticks(x)
    ax.set_xticklabels([str(t.batch) for t in terms])
    ax.set_xlabel("batch (M = memory bound, C = compute bound)")
    ax.set_ylabel(f"time per step ({unit})")
    ax.legend(fontsize=8, loc="upper left")
