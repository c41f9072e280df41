"""trnsim.cluster: topologies and collectives (functional numpy execution + alpha-beta timing).

Public API (stable):

* :func:`topology` (``instance_name, nodes=1, lnc=None``) -> :class:`Topology`;
  :func:`ring_topology` for a synthetic textbook ring; ``Topology.group(k)`` for a sub-communicator.
* Functional collectives on per-rank numpy arrays, returning :class:`CollectiveResult`
  (``outputs``, ``steps`` of :class:`Step`, ``time_us``, ``algorithm``,
  ``algbw_gbytes_per_s``, ``busbw_gbytes_per_s``): :func:`all_reduce`, :func:`all_gather`,
  :func:`reduce_scatter`, :func:`all_to_all`, :func:`permute`.
* Timing only: :func:`collective_time` (``op, message_bytes, topo, algorithm="auto"``) ->
  :class:`CollectiveTiming` (``time_us, algorithm, algbw_gbytes_per_s, busbw_gbytes_per_s,
  steps, alpha_us, beta_us``).
* :func:`choose_algorithm`, :func:`runs_on`, :func:`bus_factor`, ``OPS``, ``ALGORITHMS``.
* :func:`cost_collective` (``op, message_bytes, ranks, target="trn1.32xlarge", *, algorithm="auto",
  launch="graph"``) -> :class:`CollectiveTiming`: the one call a kernel-level ``nki.collectives``
  op, the training estimator or the serving estimator uses to cost a collective.
"""
from trnsim.cluster.algorithms import AlgorithmError
from trnsim.cluster.collectives import (
    ALGORITHMS,
    OPS,
    SUPPORTED,
    CollectiveResult,
    CollectiveTiming,
    PhaseTiming,
    Step,
    all_gather,
    all_reduce,
    all_to_all,
    bus_factor,
    choose_algorithm,
    collective_time,
    permute,
    reduce_scatter,
    runs_on,
)
from trnsim.cluster.costing import cost_collective, host_launch_overhead_us
from trnsim.cluster.constants import constants
from trnsim.cluster.topology import Link, RankInfo, Topology, TopologyError, ring_topology, topology

__all__ = [
    "ALGORITHMS", "OPS", "SUPPORTED", "AlgorithmError", "CollectiveResult", "CollectiveTiming", "Link",
    "PhaseTiming", "RankInfo", "Step", "Topology", "TopologyError", "all_gather", "all_reduce", "all_to_all",
    "bus_factor", "choose_algorithm", "collective_time", "constants", "cost_collective",
    "host_launch_overhead_us", "runs_on", "permute", "reduce_scatter",
    "ring_topology", "topology",
]
