"""Benchmark: median callback time of every course panel at its defaults (run: python tests/bench_panels.py).

Each panel is built at its defaults, then one control is flipped between two values ``ROUNDS`` times;
every flip fires the panel's real observer (compute + draw + PNG), which is what a learner waits
for. Prints the median wall time, its 90th percentile and the median CPU time of this process per
panel, and the goal (median < 100 ms). On a shared machine the wall time includes waiting for a core;
the CPU time is closer to what an idle laptop would show. Not a pytest test: timings depend on the
machine and its load (report them with that caveat).
"""
from __future__ import annotations

import statistics
import sys
import time
from typing import Any, Callable

import matplotlib

matplotlib.use("Agg")

ROUNDS = 12
GOAL_MS = 100.0


def _cases() -> list[tuple[str, Callable[[], Any], Callable[[Any], Any], tuple[Any, Any]]]:
    """(panel name, factory, control getter, two values to flip between)."""
    from trnsim.course.ui.deploy import MapPanel, PlannerPanel
    from trnsim.course.ui.engines import EnginePanel
    from trnsim.course.ui.fusion import FusionPanel
    from trnsim.course.ui.instances import InstancePanel
    from trnsim.course.ui.intro import ChipExplorer
    from trnsim.course.ui.journey import BlockPanel
    from trnsim.course.ui.matmul import RooflinePanel, SystolicPanel
    from trnsim.course.ui.memory import MemoryPanel
    from trnsim.course.ui.numerics import AccumulationPanel, BitsPanel
    from trnsim.course.ui.tiling import TilingPanel

    return [
        ("ChipExplorer (00)", ChipExplorer, lambda p: p.chip, ("trainium2", "trainium")),
        ("Roofline (01)", RooflinePanel, lambda p: p.m, (64, 4096)),
        ("Systolic (01)", SystolicPanel, lambda p: p.cycle, (4, 5)),
        ("Engines (02)", EnginePanel, lambda p: p.tiles, (2, 1)),
        ("Memory (03)", MemoryPanel, lambda p: p.free, (1024, 512)),
        ("Tiling (04)", TilingPanel, lambda p: p.cols, (900, 1000)),
        ("Block (05)", BlockPanel, lambda p: p.block_k, (4, 8)),
        ("Fusion (06)", FusionPanel, lambda p: p.cols, (2048, 1024)),
        ("Bits (07)", BitsPanel, lambda p: p.value, (2.5, 3.14159)),
        ("Accumulation (07)", AccumulationPanel, lambda p: p.steps, (1000, 2000)),
        ("Instances (08)", InstancePanel, lambda p: p.dtype, ("fp8", "bf16")),
        ("Map (13)", MapPanel, lambda p: p.extent, ("world", "asia")),
        ("Planner (13)", PlannerPanel, lambda p: p.rate, (4.0, 2.0)),
    ]


def measure(factory: Callable[[], Any], control: Callable[[Any], Any], values: tuple[Any, Any],
            rounds: int = ROUNDS) -> tuple[list[float], list[float]]:
    """Wall and CPU callback times (ms) of ``rounds`` flips of ``control(panel)`` between ``values``."""
    panel = factory()
    w = control(panel)
    times, cpu = [], []
    for i in range(rounds):
        t0, c0 = time.perf_counter(), time.process_time()
        w.value = values[i % 2]
        times.append(1e3 * (time.perf_counter() - t0))
        cpu.append(1e3 * (time.process_time() - c0))
        err = getattr(panel, "error", "")
        if err:
            raise RuntimeError(f"{type(panel).__name__} reported an error while benchmarking: {err}")
    return times, cpu


def collectives_first_views() -> list[tuple[str, float]]:
    """Wall ms of the first look at each instance in the collectives panel (notebook 09): the panel sweeps
    message sizes for a new topology before it draws, so a first look costs more than a flip between two
    views already seen (which the cases above measure)."""
    from trnsim.course.ui.collectives import CollectivesPanel

    panel = CollectivesPanel()
    out = []
    for inst in panel.instance.options:
        t0 = time.perf_counter()
        panel.instance.value = inst
        out.append((f"{inst} ({panel.ranks.value} ranks)", 1e3 * (time.perf_counter() - t0)))
        if panel.error:
            raise RuntimeError(f"CollectivesPanel reported an error while benchmarking {inst}: {panel.error}")
    return out


def main(argv: list[str]) -> int:
    only = argv[1:]
    print(f"{'panel':<20} {'median ms':>10} {'p90 ms':>8} {'CPU ms':>8}  goal < {GOAL_MS:.0f} ms (median)")
    slow = 0
    for name, factory, control, values in _cases():
        if only and not any(o.lower() in name.lower() for o in only):
            continue
        wall, cpu = measure(factory, control, values)
        t = sorted(wall)
        med, p90 = statistics.median(t), t[int(0.9 * (len(t) - 1))]
        slow += med >= GOAL_MS
        print(f"{name:<20} {med:>10.1f} {p90:>8.1f} {statistics.median(cpu):>8.1f}  {'ok' if med < GOAL_MS else 'SLOW'}")
    if not only or any(o.lower() in "collectives (09)" for o in only):
        print("Collectives (09), first look at each instance (one run each, wall ms):")
        for label, ms in collectives_first_views():
            print(f"  {label:<40} {ms:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
