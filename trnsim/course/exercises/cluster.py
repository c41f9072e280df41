"""Check-yourself exercises for the collectives notebook (09_collectives).

Each checker computes the right answer with the simulator itself (a synthetic
one-direction ring from :func:`ring_topology`, timed by :func:`collective_time`) and,
when the learner's number is off, recognises the usual slips: forgetting the factor 2
of all-reduce (reduce-scatter + all-gather), writing p instead of p-1, dropping the
latency term, mixing bits and bytes, or microseconds and milliseconds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from trnsim.course.check import CheckResult, expect_close, not_answered
from trnsim.cluster.collectives import bus_factor, collective_time
from trnsim.cluster.topology import ring_topology


@dataclass(frozen=True)
class RingExercise:
    """One ring all-reduce case: p ranks, link bandwidth B (GB/s), step latency alpha (us), n bytes."""

    ranks: int = 8
    link_gbytes_per_s: float = 100.0
    hop_latency_us: float = 1.5
    message_bytes: int = 10_000_000

    def describe(self) -> str:
        return (f"ring all-reduce of n = {self.message_bytes:,} bytes over p = {self.ranks} ranks, "
                f"link B = {self.link_gbytes_per_s:g} GB/s per direction, step latency alpha = "
                f"{self.hop_latency_us:g} us")

    def simulated_time_us(self) -> float:
        topo = ring_topology(self.ranks, self.link_gbytes_per_s, self.hop_latency_us)
        return collective_time("all_reduce", self.message_bytes, topo, "ring").time_us


RING_EXERCISE = RingExercise()


def _mistakes(ex: RingExercise) -> dict[str, float]:
    p, a, n = ex.ranks, ex.hop_latency_us, ex.message_bytes
    bw_us = n / (ex.link_gbytes_per_s * 1e3)  # n / B in microseconds
    right_bw = 2 * (p - 1) / p * bw_us
    right_lat = 2 * (p - 1) * a
    return {
        "you left out the factor 2: an all-reduce is a reduce-scatter AND an all-gather, so both the "
        "(p-1) latency steps and the (p-1)/p * n/B transfer happen twice": (p - 1) * a + (p - 1) / p * bw_us,
        "the transfer term is missing its factor 2 (reduce-scatter + all-gather each move (p-1)/p of the "
        "buffer)": right_lat + (p - 1) / p * bw_us,
        "the latency term is missing its factor 2: there are 2(p-1) steps, p-1 per half": (p - 1) * a + right_bw,
        "you used p where the formula has p-1 (a ring of p ranks needs p-1 steps per half, and each rank "
        "sends (p-1)/p of the buffer)": 2 * p * a + 2 * bw_us,
        "you used p instead of p-1 in the step count (2(p-1) steps, not 2p)": 2 * p * a + right_bw,
        "the latency term 2(p-1)*alpha is missing": right_bw,
        "bits vs bytes: B is in gigaBYTES per second; it looks like you multiplied or divided the "
        "transfer by 8": right_lat + 8 * right_bw,
        "bits vs bytes: B is in gigaBYTES per second; it looks like you divided the transfer by 8":
            right_lat + right_bw / 8,
        "units: the answer is in microseconds; yours looks like milliseconds": (right_lat + right_bw) / 1e3,
        "units: the answer is in microseconds; yours looks like seconds": (right_lat + right_bw) / 1e6,
        "GB vs GiB: the message is n bytes and B is 1e9 bytes/s; do not convert with 2**30":
            right_lat + right_bw * 1e9 / 2**30,
    }


def _sig3_tolerance(value: float) -> float:
    """Half a unit in the third significant figure of ``value``: how far an answer rounded to 3
    significant figures can be from it (1771 -> 5, so 1770 is accepted; 196 -> 0.5)."""
    return 0.5 * 10.0 ** (math.floor(math.log10(abs(value))) - 2) if value else 0.0


SLIP_RTOL = 0.01
"""A wrong answer within this relative distance of a slip's value is taken to be that slip."""


def check_ring_allreduce_time(answer_us: float, exercise: RingExercise = RING_EXERCISE) -> CheckResult:
    """Check the learner's ring all-reduce time (us) for ``exercise``.

    Accepted: within half a unit of the third significant figure of the simulated time, and no nearer
    to any slip of :func:`_mistakes` than to the right value (the latency term is ~1% of the total,
    so a 1% tolerance would accept a slip in it). A wrong answer gets the hint of the slip whose value
    it is nearest to (within :data:`SLIP_RTOL`), or the formula.
    """
    title = "ring all-reduce time"
    want = exercise.simulated_time_us()
    try:
        got = float(answer_us)
    except (TypeError, ValueError):
        return CheckResult(False, title, f"expected a number of microseconds, got {answer_us!r}",
                           ("write the time as a float, e.g. 1234.5",))
    slips = {h: v for h, v in _mistakes(exercise).items() if not math.isclose(v, want, rel_tol=1e-9)}
    off = abs(got - want)
    tol = _sig3_tolerance(want) * (1 + 1e-9)
    if off <= tol and all(off <= abs(got - v) for v in slips.values()):
        return expect_close(title, got, want, rtol=tol / abs(want), unit="us")
    res = expect_close(title, got, want, rtol=0.0, unit="us")   # the "you have ..., expected ..." message
    near = [(abs(got - v) / abs(v), h) for h, v in slips.items() if abs(got - v) <= SLIP_RTOL * abs(v)]
    if near:
        hints = [min(near)[1]]
    else:
        hints = ["use t = 2(p-1)*alpha + 2(p-1)/p * n/B; with n in bytes and B in GB/s, n/B is in ns "
                 "(divide by 1e3 for us)"]
    return CheckResult(False, title, res.message, tuple(hints))


def check_busbw(answer_gbytes_per_s: float, time_us: float, message_bytes: int, ranks: int,
                op: str = "all_reduce") -> CheckResult:
    """Check a bus bandwidth computed from a measured time (NCCL-tests definition)."""
    title = f"{op} bus bandwidth"
    if answer_gbytes_per_s is None or answer_gbytes_per_s is Ellipsis:  # a blank answer: a hint, not a type error
        return not_answered(title, "busbw = (S / t) x the bus factor of the operation; "
                                   "S / (t * 1e3) is GB/s for S in bytes, t in us")
    algbw = message_bytes / (time_us * 1e3)
    want = algbw * bus_factor(op, ranks)
    try:
        got = float(answer_gbytes_per_s)
    except (TypeError, ValueError):
        return CheckResult(False, title, f"expected a number of GB/s, got {answer_gbytes_per_s!r}")
    res = expect_close(title, got, want, rtol=0.01, unit="GB/s")
    if res.passed:
        return res
    hints = []
    if abs(got - algbw) <= 0.01 * algbw:
        hints.append(f"that is the algorithm bandwidth S/t; busbw multiplies it by {bus_factor(op, ranks):.4g} "
                     f"({'2(p-1)/p' if op == 'all_reduce' else '(p-1)/p'} for {op})")
    elif abs(got - algbw * 2) <= 0.01 * algbw * 2 and op == "all_reduce":
        hints.append("the factor is 2(p-1)/p, not 2")
    elif abs(got - algbw * 8 * bus_factor(op, ranks)) <= 0.02 * want * 8:
        hints.append("bits vs bytes: report GB/s (bytes), not Gbit/s")
    else:
        hints.append("busbw = (S / t) * factor; S in bytes, t in us -> S / (t * 1e3) is GB/s")
    return CheckResult(False, title, res.message, tuple(hints))
