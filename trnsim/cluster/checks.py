"""Argument checks at the boundary of trnsim.cluster's public functions.

Topology arguments raise :class:`TopologyError`; collective arguments raise
:class:`AlgorithmError` (both ValueErrors; a wrong *type* raises a subclass that is also a
TypeError). The size limits below are this simulator's (what it can build and run in
seconds), not hardware facts; the errors say so and name the way out.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from trnsim.cluster.algorithms import OPS, AlgorithmError
from trnsim.cluster.topology import MAX_RANKS, Topology
from trnsim.catalog.validation import check_bool, check_choice, check_int, check_str, type_error

MAX_FUNCTIONAL_RANKS = 256
"""Simulator limit: ranks for functional execution, which moves every chunk in Python (p^2 transfers)."""
MAX_BUFFER_BYTES = 2**30
"""Simulator limit: bytes of all ranks' buffers (and snapshots) held by one functional collective."""
MAX_MESSAGE_BYTES = 2**50
"""Largest message :func:`collective_time` accepts (1 PiB); timing needs no memory, but beyond this the
answer means nothing for a real job."""


def check_topo(topo: Any) -> None:
    if not isinstance(topo, Topology):
        raise type_error(AlgorithmError)(
            f"topo={topo!r}: must be a Topology from trnsim.cluster.topology(...) or ring_topology(...)")


def check_op(op: Any) -> None:
    check_choice("op", op, OPS, error=AlgorithmError,
                 fix="an unknown collective for trnsim.cluster (broadcast and reduce are not modelled)")


def check_timing_args(op: Any, message_bytes: Any, topo: Any, algorithm: Any, ring_channels: Any) -> None:
    """Arguments of :func:`trnsim.cluster.collective_time` and :func:`choose_algorithm`."""
    check_op(op)
    check_topo(topo)
    check_int("message_bytes", message_bytes, error=AlgorithmError, min_value=0, max_value=MAX_MESSAGE_BYTES,
              fix="a whole number of bytes >= 0")
    check_str("algorithm", algorithm, error=AlgorithmError, what="an algorithm name or 'auto'")
    if ring_channels is not None:
        check_int("ring_channels", ring_channels, error=AlgorithmError, min_value=1, max_value=64,
                  allow_integral_float=False)


def check_run_args(op: str, arrays: Any, topo: Any, algorithm: Any, *, record_steps: Any = True,
                   snapshots: Any = False, ring_channels: Any = None) -> None:
    """Arguments of the functional collectives (all_reduce, ...): sizes the simulator can move."""
    check_topo(topo)
    check_str("algorithm", algorithm, error=AlgorithmError, what="an algorithm name or 'auto'")
    check_bool("record_steps", record_steps, error=AlgorithmError)
    check_bool("snapshots", snapshots, error=AlgorithmError)
    if ring_channels is not None:
        check_int("ring_channels", ring_channels, error=AlgorithmError, min_value=1, max_value=64,
                  allow_integral_float=False)
    p = topo.size
    if p > MAX_FUNCTIONAL_RANKS:
        raise AlgorithmError(
            f"{op} on {p:,} ranks: functional execution moves every chunk and is limited to "
            f"{MAX_FUNCTIONAL_RANKS} ranks in this simulator; use topo.group(k) for a smaller communicator, "
            "or collective_time() to time the full topology")
    if not isinstance(arrays, (list, tuple)):
        return  # the collective's own check names the expected list
    for a in arrays[: p + 1]:
        numeric = isinstance(a, (np.ndarray, np.generic, list, tuple, int, float, complex))
        dt = np.asarray(a).dtype if numeric else None
        # "V" without fields: ml_dtypes floats (bfloat16, float8); object, string and date arrays are refused
        if dt is None or dt.kind in "OUSMm" or (dt.kind == "V" and dt.fields is not None):
            raise type_error(AlgorithmError)(
                f"{op}: every rank's array must hold numbers (bool, int, float, complex or an ml_dtypes float), "
                f"got {a!r:.60}; pass one numpy array per rank")
    nbytes = 0
    for a in arrays[: p + 1]:
        size, itemsize = getattr(a, "size", None), getattr(getattr(a, "dtype", None), "itemsize", None)
        if size is not None and itemsize is not None:
            nbytes += int(size) * int(itemsize)
    # all-gather holds p x the input per rank; all-to-all and permute hold 2 x
    held = nbytes * (p if op == "all_gather" else 2 if op in ("all_to_all", "permute") else 1)
    if snapshots:
        held *= 2 * max(1, p)  # one copy of every buffer per round (about 2(p-1) rounds for a ring)
    if held > MAX_BUFFER_BYTES:
        raise AlgorithmError(
            f"{op}: the buffers{' and snapshots' if snapshots else ''} would hold {held / 2**20:,.0f} MiB, over the "
            f"simulator limit of {MAX_BUFFER_BYTES // 2**20:,} MiB; use smaller arrays "
            f"(functional runs show the algorithm; time large messages with collective_time())")


def check_bus_factor_args(op: Any, ranks: Any) -> None:
    check_op(op)
    check_int("ranks", ranks, error=AlgorithmError, min_value=1, max_value=10**9, allow_integral_float=False)


def check_pairs(pairs: Sequence[Any] | None, shift: Any) -> None:
    check_int("shift", shift, error=AlgorithmError, min_value=-(10**9), max_value=10**9, allow_integral_float=False)
    if pairs is None:
        return
    if isinstance(pairs, (str, bytes)) or not hasattr(pairs, "__iter__"):
        raise type_error(AlgorithmError)(f"pairs={pairs!r}: must be a list of (src, dst) rank pairs or None")
    for pr in pairs:
        if not (isinstance(pr, (tuple, list)) and len(pr) == 2):
            raise type_error(AlgorithmError)(f"pairs: each entry must be a (src, dst) pair of ranks, got {pr!r}")
        for x in pr:
            check_int("pairs[] rank", x, error=AlgorithmError, min_value=0, max_value=MAX_RANKS,
                      allow_integral_float=False)
