"""One call to cost a collective: what a kernel-level ``nki.collectives`` op or a framework pays.

:func:`cost_collective` builds the communicator (the first ``ranks`` ranks of as many
instances of ``target`` as they need), lets the generation's runtime choose the algorithm
(:func:`trnsim.cluster.collectives.choose_algorithm`: a ring on trn1 except mesh at exactly 16
ranks; Mesh/RDH/KangaRing on Trn2) and returns the :class:`CollectiveTiming` of
:func:`collective_time`: hop latencies (1-2 us inside a node, 15 us over EFA) + transfer on
the busiest link or rank.

``launch="graph"`` (default) is a collective inside a compiled graph (an NxD training step, a
transformers-neuronx decode step, an NKI kernel). ``launch="host"`` is a standalone collective
launched by the runtime, as ``nccom-test`` measures it: it also pays a fixed launch overhead,
derived from the nccom-test 2-rank all-reduce floor (58 us, flat up to 64 KiB) minus the
model's own 2-rank time at that size (:func:`host_launch_overhead_us`).
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache

from trnsim.cluster.collectives import OPS, CollectiveTiming, collective_time
from trnsim.cluster.constants import DATA_FILE, constants
from trnsim.cluster.topology import Topology, TopologyError, topology

LAUNCH_MODES = ("graph", "host")


def resolve_target(target: str) -> str:
    """Instance name for ``target``: an instance name, or a generation alias ("trn1", "trn2", "inf2")."""
    if not isinstance(target, str) or not target.strip():
        raise ValueError(f"target={target!r}: pass an instance name such as 'trn1.32xlarge' or a generation "
                         f"such as 'trn1' / 'trn2' / 'inf2'")
    key = target.strip().lower()
    return _aliases().get(key, target.strip())


@lru_cache(maxsize=1)
def _aliases() -> dict[str, str]:
    from trnsim.catalog.datafiles import load_json

    rec = load_json(DATA_FILE)["target_instances"]
    return dict(rec["value"])


@lru_cache(maxsize=256)
def _communicator(instance: str, ranks: int) -> Topology:
    per_node = topology(instance).size
    nodes = -(-ranks // per_node)
    topo = topology(instance, nodes=nodes)
    return topo if ranks == topo.size else topo.group(ranks)


def host_launch_overhead_us(target: str = "trn1.32xlarge") -> float:
    """Fixed cost (us) of a host-launched collective: nccom-test 2-rank floor minus the graph model's time.

    The floor (58 us from 1 KiB to 64 KiB, ``data/collectives.json`` micro_benchmarks) is what
    one runtime-launched all-reduce costs when the data term is negligible; the model's own
    2-rank time at the floor's largest size is subtracted so the launch part is what remains.
    """
    c = constants()
    inst = resolve_target(target)
    two = _communicator(inst, 2)
    model_us = collective_time("all_reduce", c.host_floor_max_bytes, two).time_us
    return max(0.0, c.host_floor_us - model_us)


def cost_collective(op: str, message_bytes: int, ranks: int, target: str = "trn1.32xlarge", *,
                    algorithm: str = "auto", launch: str = "graph") -> CollectiveTiming:
    """Time of one collective ``op`` of ``message_bytes`` over ``ranks`` ranks of ``target``.

    ``op``: all_reduce, all_gather, reduce_scatter, all_to_all or permute.
    ``message_bytes``: NCCL-tests S (per-rank buffer for all_reduce / all_to_all / permute, the
    total gathered or scattered size for all_gather / reduce_scatter), in bytes.
    ``ranks``: communicator size; ranks beyond one instance span more instances over EFA.
    ``target``: instance name (``trn1.32xlarge``) or generation alias (``trn1``, ``trn2``, ``inf2``).
    ``algorithm``: ``auto`` (what the runtime picks) or a named algorithm (teaching).
    ``launch``: ``graph`` (inside a compiled graph) or ``host`` (standalone, as nccom-test).
    Returns a :class:`CollectiveTiming` (``time_us``, ``algorithm``, ``alpha_us``, ``beta_us``, ...).
    """
    if op not in OPS:
        raise ValueError(f"op={op!r} is not a collective; choose one of {', '.join(OPS)}")
    if launch not in LAUNCH_MODES:
        raise ValueError(f"launch={launch!r}: use 'graph' (inside a compiled graph) or 'host' (nccom-test style)")
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise ValueError(f"ranks={ranks!r}: a communicator needs a whole number of ranks >= 1")
    inst = resolve_target(target)
    try:
        topo = _communicator(inst, ranks)
    except (TopologyError, ValueError) as exc:
        raise ValueError(f"target={target!r}, ranks={ranks}: {exc}") from None
    t = collective_time(op, message_bytes, topo, algorithm)
    if launch == "host":
        extra = host_launch_overhead_us(inst)
        t = dataclasses.replace(t, time_us=t.time_us + extra, alpha_us=t.alpha_us + extra)
        algbw = t.message_bytes / (t.time_us * 1e3) if t.time_us > 0 else 0.0
        t = dataclasses.replace(t, algbw_gbytes_per_s=algbw,
                                busbw_gbytes_per_s=algbw * (t.busbw_gbytes_per_s / t.algbw_gbytes_per_s
                                                            if t.algbw_gbytes_per_s else 0.0))
    return t
