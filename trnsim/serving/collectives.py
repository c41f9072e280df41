"""Time of the tensor-parallel all-reduce that follows attention and the MLP in every layer.

Neuron: ``trnsim.cluster.collective_time("all_reduce", bytes, topology(instance).group(tp))``
when that API is available (alpha-beta per algorithm on the instance's real topology).
Until then, and for cross-checking, a ring all-reduce (Thakur et al. 2005, training.md section 6):
``T = 2(p-1) * alpha + 2 (p-1)/p * n / B`` with alpha = the documented intra-node step latency
(``data/collectives.json``, 1-2 us, midpoint) and B = the per-link NeuronLink bandwidth of the
chip (cores on one chip exchange through their shared HBM instead).
GPU g6 instances have no sourced interconnect figure in the project, so TP > 1 is refused there.
"""
from __future__ import annotations

import math
from functools import lru_cache

import trnsim
from trnsim.serving.hardware import ServingError, serving_hardware


def _cluster_api():
    try:
        from trnsim import cluster
    except Exception:
        return None
    if hasattr(cluster, "collective_time") and hasattr(cluster, "topology"):
        return cluster
    return None


@lru_cache(maxsize=None)
def _group(instance: str, tp: int):
    cluster = _cluster_api()
    topo = cluster.topology(instance)
    return topo.group(tp) if tp < topo.size else topo


def _alpha_us() -> float:
    from trnsim.cluster.constants import constants

    return float(constants().intra_node_hop_latency_us)


def ring_allreduce_us(instance: str, tp: int, message_bytes: float) -> float:
    """Ring all-reduce over the first ``tp`` devices of ``instance`` (fallback model), microseconds."""
    hw = serving_hardware(instance)
    inst = trnsim.instance(instance)
    chip = trnsim.chip(inst.chip)
    cores_per_chip = hw.devices // hw.accelerators
    if tp <= cores_per_chip or not chip.neuronlink_links:
        bw = hw.device_hbm_bytes_per_s * cores_per_chip  # cores of one chip share its HBM
    else:
        bw = float(inst.neuronlink_gbytes_per_s_per_chip or chip.neuronlink_gbytes_per_s) * 1e9 / chip.neuronlink_links
    p = tp
    return 2 * (p - 1) * _alpha_us() + 2 * (p - 1) / p * message_bytes / bw * 1e6


def method() -> str:
    """Which collective model is in use: 'trnsim.cluster' or 'ring alpha-beta (fallback)'."""
    return "trnsim.cluster" if _cluster_api() is not None else "ring alpha-beta (fallback)"


def allreduce_parts(instance: str, tp: int, message_bytes: float) -> tuple[float, float]:
    """(total, latency part) of an all-reduce over ``tp`` devices of ``instance``, in microseconds."""
    if tp <= 1:
        return 0.0, 0.0
    hw = serving_hardware(instance)
    if hw.kind != "neuron":
        raise ServingError(
            f"tp={tp} on {instance}: the project has no sourced GPU interconnect figures, so trnsim models "
            "GPU serving with tp=1 only (one model copy per GPU). Use tp=1, or a Neuron instance for TP."
        )
    cluster = _cluster_api()
    if cluster is None:
        total = ring_allreduce_us(instance, tp, message_bytes)
        return total, 2 * (tp - 1) * _alpha_us()
    timing = cluster.collective_time("all_reduce", int(math.ceil(message_bytes)), _group(instance, tp))
    return float(timing.time_us), float(timing.alpha_us)


def allreduce_us(instance: str, tp: int, message_bytes: float) -> float:
    """All-reduce time in microseconds of ``message_bytes`` over ``tp`` devices of ``instance``."""
    return allreduce_parts(instance, tp, message_bytes)[0]


def collective_parts(instance: str, tp: int, op: str, message_bytes: float) -> tuple[float, float]:
    """(total, latency part) in microseconds of collective ``op`` over ``tp`` devices of ``instance``."""
    if tp <= 1:
        return 0.0, 0.0
    cluster = _cluster_api()
    timing = cluster.collective_time(op, int(math.ceil(message_bytes)), _group(instance, tp))
    return float(timing.time_us), float(timing.alpha_us)
