"""Ready-made studies for the collectives notebook: ring animation states, size sweeps, link comparison.

Pure functions over :mod:`trnsim.cluster.collectives`; the figures that draw them live
in :mod:`trnsim.course.viz.collectives`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from trnsim.cluster.algorithms import AlgorithmError
from trnsim.cluster.collectives import SUPPORTED, CollectiveTiming, all_reduce, choose_algorithm, collective_time
from trnsim.cluster.topology import Topology, topology


@dataclass(frozen=True)
class RingAnimation:
    """States of a one-channel ring all-reduce where every rank starts with ones.

    ``states[k][r, c]`` = how many ranks' contributions chunk c of rank r holds after k
    rounds (p = complete). ``moves[k]`` = (src, dst, chunk) transfers of round k;
    ``phases[k]`` its phase name; ``times_us[k]`` the simulated time after k rounds.
    """

    order: tuple[int, ...]
    states: np.ndarray
    moves: tuple[tuple[tuple[int, int, int], ...], ...]
    phases: tuple[str, ...]
    times_us: tuple[float, ...]
    message_bytes: int

    @property
    def rounds(self) -> int:
        return len(self.moves)

    def describe(self, k: int) -> str:
        p = self.states.shape[1]
        st = self.states[k]
        done = int((st == p).sum())
        phase = "start" if k == 0 else self.phases[k - 1]
        return (f"after {k} of {self.rounds} steps ({phase}): {done} of {p * p} rank-chunks complete, "
                f"t = {self.times_us[k]:,.1f} us")


def ring_allreduce_animation(topo: Topology, message_bytes: int = 16 * 2**20) -> RingAnimation:
    """Run a real one-channel ring all-reduce (ones on every rank) and keep every intermediate state.

    Timing uses ``message_bytes`` per rank (the data values are one float per chunk; the
    step times are those of ``collective_time`` for the given size).
    """
    p = topo.size
    if p < 2:
        raise AlgorithmError(f"a ring animation needs at least 2 ranks; {topo.label} has {p}")
    res = all_reduce([np.ones(p) for _ in range(p)], topo, "ring", ring_channels=1, snapshots=True)
    assert res.snapshots is not None
    states = np.stack(res.snapshots).round().astype(int)
    moves: list[list[tuple[int, int, int]]] = [[] for _ in range(res.rounds)]
    phases = [""] * res.rounds
    for s in res.steps:
        moves[s.round].append((s.src, s.dst, s.dst_offset))
        phases[s.round] = s.phase
    timing = collective_time("all_reduce", message_bytes, topo, "ring", ring_channels=1)
    per_round = [ph.time_us / ph.rounds for ph in timing.phases for _ in range(ph.rounds)]
    times = tuple(float(x) for x in np.concatenate([[0.0], np.cumsum(per_round)]))
    return RingAnimation(tuple(topo.ring_orders()[0]), states, tuple(tuple(m) for m in moves), tuple(phases),
                         times, message_bytes)


def size_sweep(op: str, topo: Topology, sizes: Sequence[int],
               algorithms: Sequence[str] | None = None) -> dict[str, list[CollectiveTiming | None]]:
    """collective_time for every size and algorithm (None where the algorithm cannot run), plus 'auto'."""
    algos = list(algorithms) if algorithms is not None else [a for a in SUPPORTED[op]]
    out: dict[str, list[CollectiveTiming | None]] = {}
    for a in algos + ["auto"]:
        row: list[CollectiveTiming | None] = []
        for n in sizes:
            try:
                row.append(collective_time(op, int(n), topo, a))
            except AlgorithmError:
                row.append(None)
        out[a] = row
    return out


def auto_regions(op: str, topo: Topology, sizes: Sequence[int]) -> list[tuple[int, int, str]]:
    """Contiguous runs (first size, last size, algorithm) of the automatic choice over ``sizes``."""
    runs: list[tuple[int, int, str]] = []
    for n in sizes:
        a = choose_algorithm(op, int(n), topo)
        if runs and runs[-1][2] == a:
            runs[-1] = (runs[-1][0], int(n), a)
        else:
            runs.append((int(n), int(n), a))
    return runs


LINK_CASES: tuple[tuple[str, str, int, str], ...] = (
    ("trn1.32xlarge: NeuronLink torus", "trn1.32xlarge", 1, "auto"),
    ("trn2.48xlarge: NeuronLink torus", "trn2.48xlarge", 1, "auto"),
    ("Trn2 UltraServer: + Z links", "trn2.ultraserver", 1, "auto"),
    ("4 x trn2.48xlarge: EFA, hierarchical", "trn2.48xlarge", 4, "hierarchical"),
    ("4 x trn2.48xlarge: EFA, flat ring", "trn2.48xlarge", 4, "ring"),
    ("2 x trn1.32xlarge: EFA, hierarchical", "trn1.32xlarge", 2, "hierarchical"),
)


@dataclass(frozen=True)
class LinkCase:
    label: str
    topology: Topology
    timing: CollectiveTiming


def link_comparison(message_bytes: int, op: str = "all_reduce",
                    cases: Sequence[tuple[str, str, int, str]] = LINK_CASES) -> list[LinkCase]:
    """Time one collective on several machines: NeuronLink inside an instance vs EFA between them."""
    out = []
    for label, name, nodes, algo in cases:
        topo = topology(name, nodes)
        out.append(LinkCase(label, topo, collective_time(op, message_bytes, topo, algo)))
    return out


def algorithm_table(op: str, topo: Topology, sizes: Sequence[int], algorithms: Sequence[str]) -> str:
    """Text table: time of each algorithm per size, the model's fastest and the documented (auto) choice."""
    short = {"recursive_halving_doubling": "RDH", "recursive_doubling": "RD"}
    names = [short.get(a, a) for a in algorithms]
    head = f"{'size':>9} " + " ".join(f"{n:>11}" for n in names) + f"  {'fastest':>12} {'auto':>12}"
    lines = [f"{op} on {topo.label} ({topo.size} ranks), time in us", head]
    for n in sizes:
        ts: dict[str, float] = {}
        cells = []
        for a in algorithms:
            try:
                t = collective_time(op, int(n), topo, a).time_us
                ts[a] = t
                cells.append(f"{t:>11,.1f}")
            except AlgorithmError:
                cells.append(f"{'-':>11}")
        best = min(ts, key=ts.get) if ts else "-"
        auto = choose_algorithm(op, int(n), topo)
        size = _short_bytes(int(n))
        lines.append(f"{size:>9} " + " ".join(cells) + f"  {short.get(best, best):>12} {short.get(auto, auto):>12}")
    return "\n".join(lines)


def _short_bytes(n: int) -> str:
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= f:
            return f"{n / f:g} {unit}"
    return f"{n} B"


@dataclass(frozen=True)
class MicroBenchmarkCase:
    """One nccom-test example output next to the model's host-launched prediction (us)."""

    label: str
    op: str
    ranks: int
    message_bytes: int
    published_us: float
    predicted_us: float

    @property
    def error(self) -> float:
        return self.predicted_us / self.published_us - 1.0


def nccom_comparison(target: str = "trn1.32xlarge") -> list[MicroBenchmarkCase]:
    """The documented nccom-test examples (data/collectives.json) vs :func:`cost_collective` with launch='host'.

    The 2-rank floor and its 1 GiB plateau are inputs of the model (launch overhead and the per-rank
    ceiling come from them), so those two rows agree by construction; the others are checks.
    """
    from trnsim.cluster.constants import fact
    from trnsim.cluster.costing import cost_collective

    cases = [("2-rank all-reduce, 1 KiB (floor: input)", "all_reduce", 2, 1024, "nccom_allreduce_2rank_floor_us"),
             ("2-rank all-reduce, 1 GiB (plateau: input)", "all_reduce", 2, 2**30, "nccom_allreduce_2rank_1gib_us"),
             ("32-rank all-gather, 1 KiB", "all_gather", 32, 1024, "nccom_allgather_32rank_1kib_us"),
             ("32-rank all-gather, 512 KiB", "all_gather", 32, 512 * 1024, "nccom_allgather_32rank_512kib_us"),
             ("2-node all-reduce, floor (64 ranks, 1 KiB)", "all_reduce", 64, 1024, "nccom_allreduce_2node_floor_us")]
    out = []
    for label, op, ranks, nbytes, key in cases:
        t = cost_collective(op, nbytes, ranks, target, launch="host")
        out.append(MicroBenchmarkCase(label, op, ranks, nbytes, float(fact("micro_benchmarks", key)), t.time_us))
    return out


def neuronlink_to_efa_ratio(instance: str) -> float:
    """Per-chip NeuronLink bandwidth / per-chip share of the instance's EFA bandwidth (both per direction).

    trn1.32xlarge: 384 GiB/s per chip vs 800 Gbit/s / 16 chips = 6.25 GB/s -> 66x; trn2.48xlarge:
    1,024 GB/s vs 3,200 Gbit/s / 16 -> 41x. Reads the per-chip figure per direction (named
    assumption ``neuronlink_per_chip_reading`` in data/collectives.json).
    """
    from trnsim.catalog import instance as _instance

    inst = _instance(instance)
    if not inst.neuronlink_gbytes_per_s_per_chip or not inst.efa_gbits_per_s:
        raise ValueError(f"{instance} lacks a NeuronLink or EFA figure in the catalog")
    return inst.neuronlink_gbytes_per_s_per_chip / (inst.efa_gbits_per_s / 8.0 / inst.chips)
