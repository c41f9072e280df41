"""Pipeline-parallel schedules as explicit step lists: GPipe, 1F1B and interleaved 1F1B.

A schedule is built in two parts, both pure:

1. an *order*: for each pipeline device, the sequence of forward (``F``) and backward (``B``)
   passes it runs, one per (micro-batch, model chunk);
2. a *timing*: every pass starts when its device is free and its inputs exist. A forward pass of
   virtual stage ``k`` needs the forward of stage ``k-1`` on the same micro-batch; a backward pass
   needs the backward of stage ``k+1`` (and its own forward). Point-to-point transfers are free
   here (their cost is :func:`trnsim.training.scaling.pp_layer_costs`).

Orders follow the published schedules: GPipe (Huang et al. 2019: all forwards, then all backwards),
1F1B (PipeDream-Flush, Narayanan et al. 2021: ``p - d - 1`` warm-up forwards on device ``d``, then
alternate), and interleaved 1F1B (Narayanan et al. 2021, Megatron-LM: each device holds ``v`` model
chunks; warm-up ``2 (p - d - 1) + (v - 1) p`` forwards; micro-batches in groups of ``p``).

The *bubble fraction* is the idle share of device time, ``1 - busy / (p x makespan)``. With
``t_B = 2 t_F`` the simulated GPipe and 1F1B bubbles equal ``(p - 1) / (m + p - 1)`` and the
interleaved one ``(p - 1) / (v m + p - 1)`` (the published ``(p - 1) / (v m)`` overhead relative to
ideal time).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from trnsim.training.scaling import ScalingError, check_count, check_positive

ScheduleKind = Literal["gpipe", "1f1b", "interleaved"]
SCHEDULES: tuple[str, ...] = ("gpipe", "1f1b", "interleaved")


@dataclass(frozen=True)
class PipelineStep:
    """One pass on one device: ``kind`` "F" or "B" of ``microbatch`` through model ``chunk``
    (virtual stage ``chunk * stages + device``), from ``start`` to ``end`` (in units of the
    forward time of one full stage, or whatever unit ``forward_time`` was given in)."""

    device: int
    microbatch: int
    chunk: int
    kind: str
    start: float
    end: float


@dataclass(frozen=True)
class PipelineSchedule:
    """A timed schedule: its steps (in start order per device) and summary figures."""

    kind: str
    stages: int
    microbatches: int
    chunks: int
    forward_time: float
    backward_time: float
    steps: tuple[PipelineStep, ...]

    @property
    def makespan(self) -> float:
        """Time from the first forward to the last backward."""
        return max(s.end for s in self.steps)

    @property
    def busy_time(self) -> float:
        """Sum of pass durations over all devices."""
        return sum(s.end - s.start for s in self.steps)

    @property
    def bubble_fraction(self) -> float:
        """Idle share of the devices' time: 1 - busy / (stages x makespan)."""
        return 1.0 - self.busy_time / (self.stages * self.makespan)

    def max_in_flight(self) -> int:
        """Most micro-batch chunks whose activations one device holds at once (forward done,
        backward not yet): the schedule's activation-memory multiplier."""
        worst = 0
        for d in range(self.stages):
            live = 0
            for s in sorted((s for s in self.steps if s.device == d), key=lambda s: s.start):
                live += 1 if s.kind == "F" else -1
                worst = max(worst, live)
        return worst

    def device_steps(self, device: int) -> list[PipelineStep]:
        return sorted((s for s in self.steps if s.device == device), key=lambda s: s.start)


def bubble_fraction_formula(kind: str, stages: int, microbatches: int, chunks: int = 1) -> float:
    """Closed form of the bubble: (p-1)/(m+p-1) for GPipe and 1F1B, (p-1)/(v m + p-1) interleaved."""
    p, m, v = _check_args(kind, stages, microbatches, chunks)
    return (p - 1) / ((v if kind == "interleaved" else 1) * m + p - 1)


def _check_args(kind: str, stages: int, microbatches: int, chunks: int) -> tuple[int, int, int]:
    if kind not in SCHEDULES:
        raise ScalingError(f"kind={kind!r} is not a schedule; use one of {SCHEDULES}")
    p = check_count("stages", stages)
    m = check_count("microbatches", microbatches)
    v = check_count("chunks", chunks)
    if kind != "interleaved" and v != 1:
        raise ScalingError(f"chunks={v}: only the interleaved schedule splits a device's layers into chunks; "
                           f"pass chunks=1 or kind='interleaved'")
    if kind == "interleaved":
        if v < 2:
            raise ScalingError(f"chunks={v}: interleaving needs at least 2 model chunks per device")
        if m % p:
            raise ScalingError(f"microbatches={m}: the interleaved schedule runs micro-batches in groups of "
                               f"stages={p}; use a multiple of {p}")
    return p, m, v


def _order(kind: str, p: int, m: int, v: int) -> list[list[tuple[str, int, int]]]:
    """Per device, the (kind, micro-batch, chunk) passes in the order the schedule runs them."""
    orders: list[list[tuple[str, int, int]]] = []
    for d in range(p):
        if kind == "gpipe":
            orders.append([("F", i, 0) for i in range(m)] + [("B", i, 0) for i in range(m)])
            continue
        if kind == "1f1b":
            fw = [("F", i, 0) for i in range(m)]
            bw = [("B", i, 0) for i in range(m)]
            warm = min(p - d - 1, m)
        else:  # interleaved: the k-th forward is micro-batch (k // (p v)) p + k % p of chunk (k // p) % v
            total = m * v
            fw = [("F", (k // (p * v)) * p + k % p, (k // p) % v) for k in range(total)]
            bw = [("B", (k // (p * v)) * p + k % p, v - 1 - (k // p) % v) for k in range(total)]
            warm = min(2 * (p - d - 1) + (v - 1) * p, total)
        seq = fw[:warm]
        fi, bi = warm, 0
        while bi < len(bw):
            if fi < len(fw):
                seq.append(fw[fi])
                fi += 1
            seq.append(bw[bi])
            bi += 1
        orders.append(seq)
    return orders


def schedule(kind: ScheduleKind, stages: int, microbatches: int, chunks: int = 1, *,
             forward_time: float = 1.0, backward_time: float = 2.0) -> PipelineSchedule:
    """Time the ``kind`` schedule for ``stages`` devices and ``microbatches`` micro-batches.

    ``forward_time``/``backward_time``: one micro-batch through one *whole stage* (a device's full
    share of the layers); with ``chunks = v`` each chunk pass takes 1/v of it. Default 1 and 2
    (the backward pass does twice the forward FLOPs).
    """
    p, m, v = _check_args(kind, stages, microbatches, chunks)
    tf = check_positive("forward_time", forward_time) / v
    tb = check_positive("backward_time", backward_time) / v
    orders = _order(kind, p, m, v)
    done: dict[tuple[str, int, int], float] = {}  # (kind, microbatch, virtual stage) -> end time
    free = [0.0] * p
    nxt = [0] * p
    steps: list[PipelineStep] = []
    n_virtual = p * v
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for d in range(p):
            while nxt[d] < len(orders[d]):
                k, mb, c = orders[d][nxt[d]]
                vs = c * p + d
                if k == "F":
                    deps = [("F", mb, vs - 1)] if vs > 0 else []
                else:
                    deps = [("F", mb, vs)] + ([("B", mb, vs + 1)] if vs < n_virtual - 1 else [])
                if any(dep not in done for dep in deps):
                    break
                start = max([free[d]] + [done[dep] for dep in deps])
                end = start + (tf if k == "F" else tb)
                done[(k, mb, vs)] = end
                free[d] = end
                steps.append(PipelineStep(d, mb, c, k, start, end))
                nxt[d] += 1
                remaining -= 1
                progressed = True
        if not progressed:  # cannot happen for the orders above; guards against a broken order
            raise ScalingError(f"{kind} schedule with stages={p}, microbatches={m}, chunks={v} deadlocked")
    return PipelineSchedule(kind, p, m, v, float(forward_time), float(backward_time), tuple(steps))
