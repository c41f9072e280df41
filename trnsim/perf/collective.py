"""Cost of an ``nki.collectives`` trace record: the cluster collective model, one call per record.

Each collective a rank issues appears in its trace as one instruction on engine ``"collective"`` (opcode =
the NKI collective's name; attrs ``bytes_per_rank`` and ``replica_group_size``). Its duration is
:func:`trnsim.cluster.cost_collective` for the matching cluster operation, message size and communicator
size, on the instance of the trace's target generation (``trn1`` -> trn1.32xlarge, ``trn2`` ->
trn2.48xlarge; the alias table is ``data/collectives.json`` ``target_instances``), with ``launch="graph"``:
a collective inside a compiled kernel pays no host launch overhead.

Message size follows the NCCL-tests convention :func:`cost_collective` uses (S = the per-rank buffer for
all-reduce, all-to-all and permute; the total gathered / scattered size for all-gather / reduce-scatter):

=========================================  ===============  =========================================
NKI opcode                                 cluster op       message bytes
=========================================  ===============  =========================================
all_reduce                                 all_reduce       bytes_per_rank (the source)
all_gather, all_gather_v                   all_gather       bytes_per_rank x replica_group_size
reduce_scatter                             reduce_scatter   bytes_per_rank (the whole source)
all_to_all, all_to_all_v                   all_to_all       bytes_per_rank
collective_permute                         permute          bytes of the source tensor (one per pair)
collective_permute_implicit(_reduce)       permute          bytes_per_rank (one ring step)
=========================================  ===============  =========================================
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from trnsim.nki.trace import Instruction
from trnsim.perf.errors import CostModelError

COLLECTIVE_ENGINE = "collective"

# NKI collective opcode -> (cluster op, message-size rule)
COLLECTIVE_OPS: dict[str, tuple[str, str]] = {
    "all_reduce": ("all_reduce", "per_rank"),
    "all_gather": ("all_gather", "gathered"),
    "all_gather_v": ("all_gather", "gathered"),
    "reduce_scatter": ("reduce_scatter", "per_rank"),
    "all_to_all": ("all_to_all", "per_rank"),
    "all_to_all_v": ("all_to_all", "per_rank"),
    "collective_permute": ("permute", "source"),
    "collective_permute_implicit": ("permute", "per_rank"),
    "collective_permute_implicit_reduce": ("permute", "per_rank"),
}


@dataclass(frozen=True)
class CollectiveCost:
    """One collective record costed: what was priced and the cluster model's answer (times in us)."""

    index: int                 # instruction index in the trace
    opcode: str                # NKI name, e.g. "all_reduce"
    cluster_op: str            # trnsim.cluster op name, e.g. "all_reduce", "permute"
    message_bytes: int         # NCCL-tests S passed to cost_collective
    ranks: int                 # communicator (replica sub-group) size
    instance: str              # instance whose fabric was used, e.g. "trn1.32xlarge"
    algorithm: str             # what the runtime runs there (cost_collective's choice)
    time_us: float
    alpha_us: float            # hop latencies
    beta_us: float             # data transfer


def collective_instance(target_name: str) -> str:
    """Instance name whose fabric prices a kernel's collectives on ``target_name`` (generation alias table)."""
    from trnsim.cluster.costing import resolve_target

    return resolve_target(str(target_name))


def collective_message(ins: Instruction) -> tuple[str, int, int]:
    """(cluster op, message bytes, ranks) of one collective trace record; CostModelError if it is not one."""
    rule = COLLECTIVE_OPS.get(ins.opcode)
    if rule is None:
        raise CostModelError(
            f"instruction {ins.index}: collective opcode {ins.opcode!r} has no cost rule; known collectives: "
            f"{', '.join(sorted(COLLECTIVE_OPS))} (add it to trnsim.perf.collective.COLLECTIVE_OPS with its "
            "cluster op and message-size rule)")
    attrs = ins.attrs or {}
    missing = [k for k in ("bytes_per_rank", "replica_group_size") if k not in attrs]
    if missing:
        raise CostModelError(f"instruction {ins.index} ({ins.opcode}): collective record lacks attrs {missing}; "
                             "trace it with trnsim.nki.trace_ranks / simulate_ranks, which records them")
    op, kind = rule
    ranks = int(attrs["replica_group_size"])
    per_rank = int(attrs["bytes_per_rank"])
    if kind == "gathered":
        nbytes = per_rank * ranks
    elif kind == "source":
        nbytes = int(sum(math.prod(o.shape) * o.itemsize for o in ins.reads[:1])) or per_rank
    else:
        nbytes = per_rank
    return op, nbytes, ranks


def collective_cost(ins: Instruction, target_name: str) -> CollectiveCost:
    """Price one collective record with :func:`trnsim.cluster.cost_collective` (``launch="graph"``)."""
    from trnsim.cluster import cost_collective

    op, nbytes, ranks = collective_message(ins)
    instance = collective_instance(target_name)
    try:
        t = cost_collective(op, nbytes, ranks, instance, launch="graph")
    except ValueError as exc:
        raise CostModelError(f"instruction {ins.index} ({ins.opcode}, {nbytes} bytes over {ranks} ranks on "
                             f"{instance}): {exc}") from None
    return CollectiveCost(index=ins.index, opcode=ins.opcode, cluster_op=op, message_bytes=nbytes, ranks=ranks,
                          instance=instance, algorithm=str(t.algorithm), time_us=float(t.time_us),
                          alpha_us=float(t.alpha_us), beta_us=float(t.beta_us))


def describe(costs: Any) -> str:
    """Short text for a list of CollectiveCost, grouped by (opcode, ranks, algorithm), e.g.
    "2 x all_reduce of 1.0 MiB over 4 ranks (ring on trn1.32xlarge, 36.7 us each)"."""
    groups: dict[tuple, list] = {}
    for c in costs:
        groups.setdefault((c.opcode, c.ranks, c.algorithm, c.instance, c.message_bytes), []).append(c)
    parts = []
    for (opc, ranks, algo, inst, nbytes), cs in groups.items():
        parts.append(f"{len(cs)} x {opc} of {nbytes / 2**10:,.1f} KiB over {ranks} ranks ({algo} on {inst}, "
                     f"{cs[0].time_us:,.1f} us each)")
    return "; ".join(parts)


__all__ = ["COLLECTIVE_ENGINE", "COLLECTIVE_OPS", "CollectiveCost", "collective_cost", "collective_instance",
           "collective_message", "describe"]
