"""Collective timing for the estimator: the only place trnsim.training calls trnsim.cluster.

A communication group is described by its size and how many nodes it spans (ranks are
spread evenly over those nodes). Neuron instances are timed by
``trnsim.cluster.collective_time``; the GPU-era reference systems by an alpha-beta model
built from their data (calculon ``network.py`` form: t = latency + volume / (bandwidth *
efficiency), with the standard ring volumes 2(n-1)/n * S for all-reduce and (n-1)/n * S
for all-gather / reduce-scatter, Thakur et al. 2005 / NCCL-tests ``PERFORMANCE.md``), and a
hierarchical all-reduce across nodes: intra-node reduce-scatter, inter-node all-reduce of
1/Y of the buffer, intra-node all-gather (Neuron ``internode-collective-comm`` doc).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from trnsim.training.systems import PlanError, SystemSpec, system

OPS = ("all_reduce", "all_gather", "reduce_scatter", "permute")


def collective_s(sys: SystemSpec, op: str, message_bytes: float, group_size: int, stride: int = 1) -> float:
    """Seconds for one collective of ``message_bytes`` over a group of ``group_size`` ranks.

    Group members are ranks 0, stride, 2*stride, ... of the cluster (a TP group has
    stride 1; a DP group has stride tp*pp). ``message_bytes`` is the full buffer (NCCL-tests
    S). ``permute`` is one point-to-point send of ``message_bytes`` from rank 0 to rank
    ``stride`` (a pipeline-stage boundary; pass group_size=2). Every group of the same kind
    runs at the same time, so groups whose inter-node phases share a node's network
    interfaces share their bandwidth (see :func:`nic_share`).
    """
    if op not in OPS:
        raise ValueError(f"collective op {op!r} is not one of {OPS}")
    if (group_size <= 1 and op != "permute") or message_bytes <= 0:
        return 0.0
    return _cached(sys.name, op, float(message_bytes), int(group_size), int(stride))


def nodes_spanned(devices_per_node: int, group_size: int, stride: int) -> int:
    return (group_size - 1) * stride // devices_per_node + 1


def nic_share(devices_per_node: int, nics_per_node: int, local_ranks: int) -> float:
    """How many concurrent groups share each inter-node interface, relative to one group alone.

    With D ranks per node all in some group, K interfaces and L ranks of one group per
    node, one group alone drives min(L, K) interfaces with L/min(L, K) of its ranks each,
    while all D/L groups together put D/K ranks on each: share = D*min(L, K)/(K*L) >= 1.
    """
    k = max(1, nics_per_node)
    return max(1.0, devices_per_node * min(local_ranks, k) / (k * local_ranks))


@lru_cache(maxsize=65536)
def _cached(name: str, op: str, message_bytes: float, group_size: int, stride: int) -> float:
    sys = system(name)
    if sys.kind == "gpu":
        return _gpu_time_s(sys, op, message_bytes, group_size, stride)
    return _neuron_time_s(sys, op, message_bytes, group_size, stride)


# ---------------------------------------------------------------- GPU alpha-beta model
def _link(sys: SystemSpec, inter: bool) -> tuple[float, float]:
    """(latency_s, effective bytes/s) of the intra- or inter-node network."""
    if inter:
        return sys.inter_latency_us * 1e-6, sys.inter_gbytes_per_s * 1e9 * sys.inter_efficiency
    return sys.intra_latency_us * 1e-6, sys.intra_gbytes_per_s * 1e9 * sys.intra_efficiency


def _flat(sys: SystemSpec, op: str, s_bytes: float, n: int, inter: bool) -> float:
    if n <= 1:
        return 0.0
    lat, bw = _link(sys, inter)
    factor = 2.0 * (n - 1) / n if op == "all_reduce" else (n - 1) / n
    return lat + factor * s_bytes / bw


def _gpu_time_s(sys: SystemSpec, op: str, s_bytes: float, group: int, stride: int) -> float:
    """Alpha-beta time; one network interface per GPU (DGX A100), so groups never share one."""
    if op == "permute":
        lat, bw = _link(sys, inter=stride >= sys.devices_per_node)
        return lat + s_bytes / bw
    nodes = nodes_spanned(sys.devices_per_node, group, stride)
    local = max(1, group // nodes)
    if nodes <= 1:
        return _flat(sys, op, s_bytes, group, inter=False)
    if op == "all_reduce":
        return (_flat(sys, "reduce_scatter", s_bytes, local, False)
                + _flat(sys, "all_reduce", s_bytes / local, nodes, True)
                + _flat(sys, "all_gather", s_bytes, local, False))
    if op == "all_gather":  # inter-node first (smaller, slower), then intra-node
        return _flat(sys, "all_gather", s_bytes / local, nodes, True) + _flat(sys, "all_gather", s_bytes, local, False)
    return _flat(sys, "reduce_scatter", s_bytes, local, False) + _flat(sys, "reduce_scatter", s_bytes / local, nodes, True)


# ---------------------------------------------------------------- Neuron: trnsim.cluster
@lru_cache(maxsize=256)
def _group(name: str, group: int, stride: int):
    from trnsim import cluster

    nodes = nodes_spanned(system(name).devices_per_node, group, stride)
    topo = cluster.topology(name, nodes=nodes)
    return topo.group([i * stride for i in range(group)])


REFERENCE_BYTES = 1 << 26  # 64 MiB: size at which each algorithm's alpha and beta are read


@lru_cache(maxsize=4096)
def _alpha_beta(name: str, op: str, group: int, stride: int) -> tuple[tuple[str, float, float, float], ...]:
    """Per algorithm: (name, alpha_us, beta_us per byte, EFA part of beta per byte) from trnsim.cluster.

    The cluster model is alpha-beta: for a fixed group and algorithm its time is
    latency (alpha, independent of size) + transfer (beta, proportional to the bytes), so
    one timing at REFERENCE_BYTES gives the time at every size.
    """
    from trnsim import cluster

    topo = _group(name, group, stride)
    out = []
    for algo in cluster.SUPPORTED[op]:
        if not cluster.runs_on(algo, topo):
            continue  # the generation's runtime does not run it for this group (trn1: ring; mesh at 16 ranks)
        try:
            t = cluster.collective_time(op, REFERENCE_BYTES, topo, algorithm=algo)
        except (ValueError, cluster.AlgorithmError, cluster.TopologyError):
            continue  # not applicable to this group (e.g. hierarchical inside one node)
        efa = sum(ph.beta_us for ph in t.phases if ph.link_kind == "efa")
        out.append((t.algorithm, t.alpha_us, t.beta_us / REFERENCE_BYTES, efa / REFERENCE_BYTES))
    if not out:
        raise PlanError(f"no collective algorithm of trnsim.cluster applies to {op} on {topo!r}")
    return tuple(out)


def _best_flat(name: str, op: str, s_bytes: float, group: int, stride: int, efa_share: float = 1.0) -> tuple[str, float]:
    """(algorithm, us) of the fastest algorithm for one group, EFA transfer stretched by ``efa_share``."""
    best = None
    for algo, alpha_us, beta, efa in _alpha_beta(name, op, group, stride):
        t_us = alpha_us + (beta + (efa_share - 1.0) * efa) * s_bytes
        if best is None or t_us < best[1]:
            best = (algo, t_us)
    return best


def neuron_timing(sys: SystemSpec, op: str, s_bytes: float, group: int, stride: int) -> tuple[str, float]:
    """(algorithm, seconds) for a collective on a Neuron cluster, timed by trnsim.cluster.

    Inside one node: the fastest algorithm the generation's runtime runs for the group
    (:func:`trnsim.cluster.runs_on`: a ring on trn1, mesh only at 16 ranks; the
    documented "auto" size thresholds describe the full 16-chip torus, not a sub-group
    such as a TP group of 8 ranks on 4 chips). Across nodes: the documented hierarchical
    algorithm (Neuron ``internode-collective-comm``): intra-node reduce-scatter, inter-node
    all-reduce of 1/Y of the buffer over one rank per node, intra-node all-gather (AG: inter
    then intra; RS: intra then inter). Every DP group runs at once, so the inter-node stage
    shares the nodes' EFA interfaces (:func:`nic_share`).
    """
    D = sys.devices_per_node
    nodes = nodes_spanned(D, group, stride)
    if nodes == 1:
        algo, t_us = _best_flat(sys.name, op, s_bytes, group, stride)
        return algo, t_us * 1e-6
    local = max(1, group // nodes)
    inter_topo = _group(sys.name, nodes, D)
    share = nic_share(D, inter_topo.spec.efa_nics_per_node, local)
    t_us = 0.0
    if local > 1 and op in ("all_reduce", "reduce_scatter"):
        t_us += _best_flat(sys.name, "reduce_scatter", s_bytes, local, stride)[1]
    t_us += _best_flat(sys.name, op, s_bytes / local, nodes, D, share)[1]
    if local > 1 and op in ("all_reduce", "all_gather"):
        t_us += _best_flat(sys.name, "all_gather", s_bytes, local, stride)[1]
    return "hierarchical", t_us * 1e-6


def _neuron_time_s(sys: SystemSpec, op: str, s_bytes: float, group: int, stride: int) -> float:
    if op == "permute":  # one send across a stage boundary; all boundaries send at once
        topo = _group(sys.name, 2, stride)
        share = nic_share(sys.devices_per_node, topo.spec.efa_nics_per_node, 1) if stride >= sys.devices_per_node else 1.0
        return _best_flat(sys.name, "permute", s_bytes, 2, stride, share)[1] * 1e-6
    return neuron_timing(sys, op, s_bytes, group, stride)[1]


def all_reduce_arrays(arrays: list[np.ndarray], instance: str = "trn1.32xlarge") -> tuple[list[np.ndarray], float]:
    """Sum ``arrays`` (one per rank, ranks 0..n-1 of one ``instance``) with the functional ring
    all-reduce of ``trnsim.cluster``; returns (per-rank outputs, simulated seconds)."""
    from trnsim import cluster

    n = len(arrays)
    if n == 1:
        return [arrays[0].copy()], 0.0
    topo = _group(instance, n, 1)
    res = cluster.all_reduce(list(arrays), topo, algorithm="ring", op="sum")
    return list(res.outputs), res.time_us * 1e-6
