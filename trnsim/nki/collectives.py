"""``nki.collectives``: communication between ranks (``import trnsim.nki.collectives as ncc``).

A rank is one kernel instance on one NeuronCore. :func:`trnsim.nki.simulate_ranks` runs one instance per
rank (:mod:`trnsim.nki.ranks`); when a rank reaches a collective it waits until every rank of its replica
sub-group has reached the same collective, the data are exchanged with numpy, and each rank continues.
Semantics follow the NKI 0.6 reference (aws-neuron-sdk ``nki/api/nki/collectives``); reductions run in
float32 and are cast to the destination dtype.

Each collective appends one trace record per rank: engine ``"collective"``, opcode = the collective's
name, attrs ``op``, ``bytes_per_rank`` (bytes this rank contributes), ``replica_group_size`` and
``replica_groups``. Costing them (ring/tree algorithms over the cluster links) belongs to the performance
model; this package never imports it.
"""
from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from trnsim.nki import _threadstate, dtypes as dt
from trnsim.nki.context import as_view, current, read, write
from trnsim.nki.isa.ops import op_name
from trnsim.nki.language.types import NKIObject
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.tensors import Tensor, View

ENGINE = "collective"
_REDUCE_OPS = {"add": np.add, "minimum": np.minimum, "maximum": np.maximum}


# ----------------------------------------------------------------------------- replica groups

@dataclass
class ReplicaGroup(NKIObject):
    """Ranks taking part in a collective: a list of disjoint sub-groups (lists of rank ids). A collective runs
    independently inside each sub-group; the order of a sub-group is its ring / concatenation order."""
    replica_groups: list = field(default_factory=list)

    def __post_init__(self):
        groups = self.replica_groups
        if isinstance(groups, ReplicaGroup):
            groups = groups.replica_groups
        if not isinstance(groups, (list, tuple)) or not groups:
            raise KernelError("err_invalid_replica_group", f"ReplicaGroup needs a list of rank lists, got {groups!r}",
                              "pass e.g. ReplicaGroup([[0, 1, 2, 3]])", location="")
        if all(isinstance(g, (int, np.integer)) for g in groups):
            groups = [groups]
        seen: set[int] = set()
        out = []
        for g in groups:
            if not isinstance(g, (list, tuple)) or not g:
                raise KernelError("err_invalid_replica_group", f"replica sub-group {g!r} must be a non-empty list of "
                                  "rank ids", "pass e.g. ReplicaGroup([[0, 1], [2, 3]])", location="")
            ranks = []
            for r in g:
                if not isinstance(r, (int, np.integer)) or int(r) < 0:
                    raise KernelError("err_invalid_replica_group", f"rank id {r!r} in {list(g)} is not a "
                                      "non-negative int", "use rank ids 0..world_size-1", location="")
                if int(r) in seen:
                    raise KernelError("err_invalid_replica_group", f"rank {int(r)} appears in two replica sub-groups "
                                      f"of {[list(x) for x in groups]}", "sub-groups must not overlap", location="")
                seen.add(int(r))
                ranks.append(int(r))
            out.append(tuple(ranks))
        self.replica_groups = [list(g) for g in out]
        self._groups = tuple(out)

    def group_of(self, rank: int) -> tuple[int, ...]:
        """The sub-group ``rank`` belongs to. In a multi-rank launch every rank the group names must exist (a
        sub-group of missing ranks would never run; the caller's own sub-group is checked again on arrival)."""
        world = getattr(_RANK, "world", None)
        if world is not None:
            missing = [r for g in self._groups for r in g if r >= world.size]
            if missing:
                raise KernelError("err_rank_not_in_replica_group", f"rank {missing[0]} of the replica group "
                                  f"{self.replica_groups} does not exist in a launch of {world.size} ranks",
                                  f"use rank ids 0..{world.size - 1}")
        for g in self._groups:
            if rank in g:
                return g
        raise KernelError("err_rank_not_in_replica_group", f"rank {rank} is not in the replica group "
                          f"{self.replica_groups}", "list every calling rank in exactly one sub-group")


# ----------------------------------------------------------------------------- rank state (per thread)

_RANK = _threadstate.RANK   # .world (the launcher's World) and .rank of the rank running in this thread


def _world():
    w = getattr(_RANK, "world", None)
    if w is None:
        raise KernelError("err_collective_outside_multi_rank_launch",
                          "nki.collectives needs several ranks: this kernel runs as a single instance",
                          "launch it with trnsim.nki.simulate_ranks(kernel, world_size, per_rank_args)")
    return w, _RANK.rank


@dataclass
class Arrival:
    """One rank's call of a collective: what it sends, what it receives into, and the result to write."""
    rank: int
    api: str
    members: tuple[int, ...]            # the ranks that must all arrive (its sub-group)
    key: tuple                          # must be equal on every member (api, groups, static arguments)
    payload: Any                        # numpy inputs (None in timing-only traces)
    result: Any = None                  # filled by the exchange
    resolve: Any = None                 # callable(arrivals: dict rank -> Arrival) filling .result


def _exchange(api: str, members: tuple[int, ...], key: tuple, payload, resolve):
    world, rank = _world()
    core = getattr(_RANK, "lnc_core", None)
    if core is not None:
        raise KernelError("err_unsupported_collective_in_lnc2",
                          f"{api} inside an LNC=2 launch (rank {rank}, physical core {core}): trnsim simulates a "
                          "collective as one call per rank, and the NKI reference does not say how the two physical "
                          "cores of a logical NeuronCore share one (both run the kernel body, so both would call it)",
                          "launch the kernel with one core per rank for simulate_ranks (kernel[1], or a grid "
                          "without nl.nc(2)); nki.collectives.rank_id() works under LNC=2")
    a = Arrival(rank, api, members, key, payload, resolve=resolve)
    world.wait_collective(a)
    return a.result


# ----------------------------------------------------------------------------- helpers

def _tensor_list(x, api: str, arg: str) -> list:
    if isinstance(x, (Tensor, View)):
        x = [x]
    if not isinstance(x, (list, tuple)) or not x:
        raise KernelError("err_invalid_arguments", f"{api}: '{arg}' must be a non-empty list of tensors, got "
                          f"{type(x).__name__}", f"pass {arg}=[tensor]")
    out = []
    for t in x:
        if not isinstance(t, (Tensor, View)):
            raise KernelError("err_expected_tile", f"{api}: '{arg}' holds a {type(t).__name__}, not a tensor",
                              "pass NKI tensors (nl.ndarray / kernel arguments)")
        v = as_view(t)
        if v.tensor.alias is not None:
            v = v.tensor.alias
        out.append(v)
    return out


def _check_spaces(api: str, srcs, dsts, hbm_only: bool = False, single: bool = False) -> str:
    if len(srcs) != len(dsts):
        raise KernelError("err_invalid_arguments", f"{api}: {len(srcs)} source tensors but {len(dsts)} destinations",
                          "pass one destination per source")
    bufs = {v.tensor.buffer for v in srcs + dsts}
    if "psum" in bufs:
        raise KernelError("err_unsupported_memory", f"{api}: collectives read and write HBM or SBUF, not PSUM",
                          "copy the PSUM tile to SBUF first (nisa.tensor_copy)")
    if len(bufs) > 1:
        raise KernelError("err_collective_mixed_memory", f"{api}: tensors are in both HBM and SBUF; one collective "
                          "uses one memory space", "keep all sources and destinations in HBM, or all in SBUF")
    space = bufs.pop()
    if hbm_only and space != "hbm":
        raise KernelError("err_unsupported_memory", f"{api}: tensors must be in HBM (SBUF is not supported for "
                          f"{api})", "allocate them with nl.ndarray(..., buffer=nl.shared_hbm)")
    if space == "sbuf" and len(srcs) > 1:
        raise KernelError("err_collective_coalesced_sbuf", f"{api}: {len(srcs)} SBUF tensors in one call; coalesced "
                          "collectives (several tensors) need HBM tensors",
                          "issue one call per SBUF tensor, or use HBM")
    if single and len(srcs) != 1:
        raise KernelError("err_collective_coalesced_unsupported", f"{api}: {len(srcs)} tensors in one call; "
                          f"{api} takes exactly one source and one destination", "issue one call per tensor")
    return space


def _reduce_op(op, api: str) -> str:
    name = op_name(op) if op is not None else None
    if name not in _REDUCE_OPS:
        raise KernelError("err_unsupported_op", f"{api}: reduction op {name or op!r} is not supported",
                          "use op=nl.add, nl.minimum or nl.maximum")
    return name


def _nbytes(views) -> int:
    return int(sum(math.prod(v.shape) * v.tensor.itemsize for v in views))


def _read_all(views):
    if not current().numerics:
        return None
    return [np.array(read(v, raw=True), copy=True) for v in views]


def _reduce_values(a: np.ndarray) -> np.ndarray:
    """The values a collective reduces: integers exactly (int64; written back through the destination dtype's
    conversion, which saturates at its range as every trnsim write into an integer tensor does, see
    ``dtypes.cast``), floats in float32."""
    if a.dtype.kind in "iu":
        return a.astype(np.int64)
    return a.astype(np.float32) if a.dtype != np.float32 else a


def _refuse_packed(api: str, views) -> None:
    """A reducing collective computes on values; MX x4-packed words are "custom data type for nki.isa.nc_matmul_mx
    and nki.isa.quantize_mx" (nki.api.shared) and would be added as raw integers."""
    for v in views:
        name = v.tensor.dtype_name
        if dt.is_packed(name):
            raise KernelError("err_unsupported_dtype", f"{api} reduces values, but a tensor holds MX x4-packed {name} "
                              "words (only nisa.nc_matmul_mx, nisa.quantize_mx and DMA copies use them)",
                              "reduce the unquantised (bf16 / fp32) tensor, then quantize the result")


def _check_priority(priority, api: str) -> None:
    if priority is None:
        return
    if isinstance(priority, bool) or not isinstance(priority, (int, np.integer)) or not 0 <= int(priority) <= 3:
        raise KernelError("err_invalid_arguments", f"{api}: priority={priority!r} is a DMA QoS level 0..3 (lower is "
                          "higher priority)", "pass priority=0, 1, 2 or 3, or leave it None")
    ctx = current()
    if ctx.limits.neuroncore_version in ("NC-v2", "NC-v3"):
        raise KernelError("err_unsupported_on_target", f"{api}: priority= needs NeuronCore-v4 (trn3); this kernel "
                          f"targets {ctx.target}", "drop priority= or target trn3")


def _with_options(fn):
    """Check the ``priority`` / ``name`` arguments every collective takes and record them on its trace record."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        priority, name = bound.arguments.get("priority"), bound.arguments.get("name")
        _check_priority(priority, fn.__name__)
        _RANK.options = {k: v for k, v in (("priority", priority), ("name", name)) if v is not None}
        try:
            return fn(*args, **kwargs)
        finally:
            _RANK.options = None
    return wrapper


def _emit(api: str, reads, writes, attrs: dict, nbytes: int) -> None:
    ctx = current()
    opts = getattr(_RANK, "options", None)
    if opts:
        attrs.update(opts)
    ref = writes[0] if writes else reads[0]
    P = ref.shape[0] if ref.shape else 1
    free = int(math.prod(ref.shape[1:])) if len(ref.shape) > 1 else 1
    attrs.setdefault("bytes_per_rank", nbytes)
    ctx.emit(api, ENGINE, tuple(reads), tuple(writes), attrs, 0, nbytes, free, P)
    ctx.last_out = None
    ctx.last_vals = None


def _write_results(views, results) -> None:
    if results is None or not current().numerics:
        return
    for v, r in zip(views, results):
        if r is None:
            continue
        write(v, r.reshape(v.shape) if r.shape != tuple(v.shape) else r)


def _group_attrs(rg: ReplicaGroup, members) -> dict:
    return {"replica_group_size": len(members), "replica_groups": [list(g) for g in rg.replica_groups]}


def _rg(replica_group, api: str) -> ReplicaGroup:
    if isinstance(replica_group, ReplicaGroup):
        return replica_group
    if isinstance(replica_group, (list, tuple)):
        return ReplicaGroup(list(replica_group))
    raise KernelError("err_invalid_replica_group", f"{api}: replica_group must be a ReplicaGroup, got "
                      f"{type(replica_group).__name__}", "pass ncc.ReplicaGroup([[0, 1, 2, 3]])")


def _shapes(views) -> tuple:
    return tuple((tuple(v.shape), v.tensor.dtype_name) for v in views)


def _check_same_shapes(api, arrivals, what="source"):
    first = None
    for a in arrivals.values():
        if first is None:
            first = a
        elif a.key != first.key:
            raise KernelError("err_collective_mismatch",
                              f"{api}: ranks {first.rank} and {a.rank} call it with different arguments: "
                              + "; ".join(f"{x!r} vs {y!r}" for x, y in zip(first.key, a.key) if x != y),
                              "every rank of a sub-group must pass tensors of the same shapes and the same options")


# ----------------------------------------------------------------------------- collectives

@_with_options
def all_reduce(srcs, dsts, replica_group, op, priority: Optional[int] = None, name: Optional[str] = None) -> None:
    """Every rank of each sub-group gets ``op`` (add / minimum / maximum) over the sub-group of each source;
    a list of tensors is a coalesced all-reduce (HBM only)."""
    api = "all_reduce"
    sv, dvs = _tensor_list(srcs, api, "srcs"), _tensor_list(dsts, api, "dsts")
    space = _check_spaces(api, sv, dvs)
    opn = _reduce_op(op, api)
    _refuse_packed(api, list(sv) + list(dvs))
    for s, d in zip(sv, dvs):
        if tuple(s.shape) != tuple(d.shape):
            raise KernelError("err_shape_mismatch", f"{api}: source {fmt_shape(s.shape)} and destination "
                              f"{fmt_shape(d.shape)} differ", "all_reduce keeps the shape: use equal shapes")
    rg = _rg(replica_group, api)
    world, rank = _world()
    members = rg.group_of(rank)

    def resolve(arr):
        _check_same_shapes(api, arr)
        if arr[members[0]].payload is None:
            return
        k = len(arr[members[0]].payload)
        red = []
        for i in range(k):
            acc = None
            for m in members:
                x = _reduce_values(arr[m].payload[i])
                acc = x.copy() if acc is None else _REDUCE_OPS[opn](acc, x)
            red.append(acc)
        for m in members:
            arr[m].result = red

    res = _exchange(api, members, (api, rg._groups, _shapes(sv), _shapes(dvs), opn), _read_all(sv), resolve)
    _write_results(dvs, res)
    _emit(api, sv, dvs, {"op": opn, "space": space, **_group_attrs(rg, members)}, _nbytes(sv))


@_with_options
def all_gather(srcs, dsts, replica_group, collective_dim: int, priority: Optional[int] = None,
               name: Optional[str] = None) -> None:
    """Every rank gets the sources of its sub-group concatenated along ``collective_dim`` in sub-group order
    (HBM: dim 0; SBUF 2-D tiles: dim 0 or 1)."""
    api = "all_gather"
    sv, dvs = _tensor_list(srcs, api, "srcs"), _tensor_list(dsts, api, "dsts")
    space = _check_spaces(api, sv, dvs)
    cd = int(collective_dim)
    allowed = (0,) if space == "hbm" else (0, 1)
    if cd not in allowed:
        raise KernelError("err_invalid_collective_dim", f"{api}: collective_dim={cd} is not supported for "
                          f"{space.upper()} tensors", f"use collective_dim in {allowed}")
    rg = _rg(replica_group, api)
    world, rank = _world()
    members = rg.group_of(rank)
    n = len(members)
    for s, d in zip(sv, dvs):
        if space == "sbuf" and (len(s.shape) != 2 or len(d.shape) != 2):
            raise KernelError("err_invalid_shape", f"{api}: SBUF collectives take 2-D tiles, got {fmt_shape(s.shape)}"
                              f" -> {fmt_shape(d.shape)}", "use [partitions, free] tiles")
        want = list(s.shape)
        want[cd] *= n
        if list(d.shape) != want:
            raise KernelError("err_shape_mismatch", f"{api}: destination {fmt_shape(d.shape)} must be the source "
                              f"{fmt_shape(s.shape)} with dim {cd} times the sub-group size {n} = {fmt_shape(want)}",
                              f"allocate the destination as {fmt_shape(want)}")

    def resolve(arr):
        _check_same_shapes(api, arr)
        if arr[members[0]].payload is None:
            return
        k = len(arr[members[0]].payload)
        out = [np.concatenate([arr[m].payload[i] for m in members], axis=cd) for i in range(k)]
        for m in members:
            arr[m].result = out

    res = _exchange(api, members, (api, rg._groups, _shapes(sv), _shapes(dvs), cd), _read_all(sv), resolve)
    _write_results(dvs, res)
    _emit(api, sv, dvs, {"op": None, "collective_dim": cd, "space": space, **_group_attrs(rg, members)},
          _nbytes(sv))


@_with_options
def reduce_scatter(srcs, dsts, replica_group, collective_dim: int, op, priority: Optional[int] = None,
                   name: Optional[str] = None) -> None:
    """Each source is split along dim 0 into one chunk per sub-group rank; the rank at position k gets ``op``
    over the sub-group of chunk k."""
    api = "reduce_scatter"
    sv, dvs = _tensor_list(srcs, api, "srcs"), _tensor_list(dsts, api, "dsts")
    space = _check_spaces(api, sv, dvs)
    opn = _reduce_op(op, api)
    _refuse_packed(api, list(sv) + list(dvs))
    if int(collective_dim) != 0:
        raise KernelError("err_invalid_collective_dim", f"{api}: collective_dim={collective_dim} is not supported",
                          "use collective_dim=0")
    rg = _rg(replica_group, api)
    world, rank = _world()
    members = rg.group_of(rank)
    n = len(members)
    for s, d in zip(sv, dvs):
        want = list(s.shape)
        if want[0] % n:
            raise KernelError("err_shape_mismatch", f"{api}: source dim 0 ({want[0]}) does not split into {n} equal "
                              "chunks", f"make dim 0 a multiple of the sub-group size {n}")
        want[0] //= n
        if list(d.shape) != want:
            raise KernelError("err_shape_mismatch", f"{api}: destination {fmt_shape(d.shape)} must be one chunk of the"
                              f" source, {fmt_shape(want)}", f"allocate the destination as {fmt_shape(want)}")

    def resolve(arr):
        _check_same_shapes(api, arr)
        if arr[members[0]].payload is None:
            return
        k = len(arr[members[0]].payload)
        for pos, m in enumerate(members):
            out = []
            for i in range(k):
                acc = None
                for j in members:
                    chunk = np.array_split(_reduce_values(arr[j].payload[i]), n, axis=0)[pos]
                    acc = chunk.copy() if acc is None else _REDUCE_OPS[opn](acc, chunk)
                out.append(acc)
            arr[m].result = out

    res = _exchange(api, members, (api, rg._groups, _shapes(sv), _shapes(dvs), opn), _read_all(sv), resolve)
    _write_results(dvs, res)
    _emit(api, sv, dvs, {"op": opn, "collective_dim": 0, "space": space, **_group_attrs(rg, members)}, _nbytes(sv))


@_with_options
def all_to_all(srcs, dsts, replica_group, collective_dim: int, priority: Optional[int] = None,
               name: Optional[str] = None) -> None:
    """Each source is split along dim 0 into one chunk per sub-group rank; chunk k goes to the rank at position
    k, which stores the chunks it receives in sender order (HBM only)."""
    api = "all_to_all"
    sv, dvs = _tensor_list(srcs, api, "srcs"), _tensor_list(dsts, api, "dsts")
    _check_spaces(api, sv, dvs, hbm_only=True)
    if int(collective_dim) != 0:
        raise KernelError("err_invalid_collective_dim", f"{api}: collective_dim={collective_dim} is not supported",
                          "use collective_dim=0")
    rg = _rg(replica_group, api)
    world, rank = _world()
    members = rg.group_of(rank)
    n = len(members)
    for s, d in zip(sv, dvs):
        if s.shape[0] % n or tuple(s.shape) != tuple(d.shape):
            raise KernelError("err_shape_mismatch", f"{api}: source {fmt_shape(s.shape)} and destination "
                              f"{fmt_shape(d.shape)} must be equal with dim 0 a multiple of the sub-group size {n}",
                              "use equal shapes whose first dimension splits into one chunk per rank")

    def resolve(arr):
        _check_same_shapes(api, arr)
        if arr[members[0]].payload is None:
            return
        k = len(arr[members[0]].payload)
        for pos, m in enumerate(members):
            arr[m].result = [np.concatenate([np.array_split(arr[j].payload[i], n, axis=0)[pos] for j in members],
                                            axis=0) for i in range(k)]

    res = _exchange(api, members, (api, rg._groups, _shapes(sv), _shapes(dvs)), _read_all(sv), resolve)
    _write_results(dvs, res)
    _emit(api, sv, dvs, {"op": None, "collective_dim": 0, "space": "hbm", **_group_attrs(rg, members)}, _nbytes(sv))


def _metadata(meta, n: int, has_rdispls: bool, api: str) -> View:
    if not isinstance(meta, (Tensor, View)):
        raise KernelError("err_expected_tile", f"{api}: metadata_tensor must be a tensor, got {type(meta).__name__}",
                          "pass a uint32 tensor of shape (rows, ranks) in HBM or (1, rows, ranks) in SBUF")
    mv = as_view(meta)
    rows = 4 if has_rdispls else 3
    want = (rows, n) if mv.tensor.buffer == "hbm" else (1, rows, n)
    if mv.tensor.dtype_name != "uint32" or tuple(mv.shape) != want:
        raise KernelError("err_invalid_metadata", f"{api}: metadata_tensor is {fmt_shape(mv.shape)} "
                          f"{mv.tensor.dtype_name}; with has_rdispls={has_rdispls} and {n} ranks it must be "
                          f"{fmt_shape(want)} uint32 in {mv.tensor.buffer}",
                          "rows: send counts, send displacements, receive counts (+ receive displacements)")
    return mv


def _flat_chunk(arr: np.ndarray, start: int, count: int, api: str, what: str, rank: int) -> np.ndarray:
    flat = arr.reshape(-1)
    if start < 0 or count < 0 or start + count > flat.size:
        raise KernelError("err_collective_out_of_bounds", f"{api}: rank {rank} {what} [{start}, {start + count}) is "
                          f"outside its buffer of {flat.size} elements", "fix the counts / displacements in the "
                          "metadata tensor")
    return flat[start:start + count]


def _v_collective(api, srcs, dsts, replica_group, metadata_tensor, recv_counts_known, has_rdispls, per_dest: bool):
    sv, dvs = _tensor_list(srcs, api, "srcs"), _tensor_list(dsts, api, "dsts")
    _check_spaces(api, sv, dvs, hbm_only=True, single=True)
    rg = _rg(replica_group, api)
    world, rank = _world()
    members = rg.group_of(rank)
    n = len(members)
    if not per_dest:
        if has_rdispls:
            raise KernelError("err_unsupported_option", f"{api}: has_rdispls=True is not supported",
                              "leave has_rdispls=False: chunks land in equal slots of dst")
        if n != 4:
            raise KernelError("err_invalid_replica_group", f"{api}: each rank list must have exactly 4 ranks, got {n}",
                              "use sub-groups of 4 ranks (the 4 ranks of one chip under LNC=2)")
    mv = _metadata(metadata_tensor, n, has_rdispls, api)
    ctx = current()
    s, d = sv[0], dvs[0]
    dst_elems = int(math.prod(d.shape))
    if dst_elems % n:
        raise KernelError("err_shape_mismatch", f"{api}: destination of {dst_elems} elements does not split into {n} "
                          "equal slots", f"make the destination size a multiple of {n}")
    slot = dst_elems // n
    payload = None
    if ctx.numerics:
        meta = read(mv, raw=True).reshape(-1, n).astype(np.int64)
        src = read(s, raw=True)
        if per_dest:
            chunks = [_flat_chunk(src, int(meta[1, k]), int(meta[0, k]), api, f"send chunk for rank {members[k]}",
                                  rank).copy() for k in range(n)]
        else:
            c = _flat_chunk(src, int(meta[1, 0]), int(meta[0, 0]), api, "send chunk", rank).copy()
            chunks = [c] * n
        payload = (chunks, meta)

    def resolve(arr):
        _check_same_shapes(api, arr)
        if arr[members[0]].payload is None:
            return
        for pos, m in enumerate(members):
            meta_m = arr[m].payload[1]
            got = []
            for spos, j in enumerate(members):
                chunk = arr[j].payload[0][pos]
                start = int(meta_m[3, spos]) if has_rdispls else spos * slot
                if chunk.size > (dst_elems - start if has_rdispls else slot) or start < 0:
                    raise KernelError("err_collective_out_of_bounds",
                                      f"{api}: rank {j} sends {chunk.size} elements to rank {m}, whose slot at "
                                      f"{start} holds {slot if not has_rdispls else dst_elems - start}",
                                      "send at most dst elements / ranks to each rank (or fix recv displacements)")
                got.append((start, chunk))
            arr[m].result = got

    key = (api, rg._groups, _shapes(sv), _shapes(dvs), bool(has_rdispls))
    res = _exchange(api, members, key, payload, resolve)
    nbytes = _nbytes(sv)
    if ctx.numerics and res is not None:
        flat = np.array(read(d, raw=True), copy=True).reshape(-1)
        for start, chunk in res:
            flat[start:start + chunk.size] = chunk.astype(flat.dtype, copy=False)
        write(d, flat.reshape(d.shape))
        if not recv_counts_known:
            meta_all = np.array(read(mv, raw=True), copy=True).reshape(-1, n)
            meta_all[2, :] = [c.size for _, c in res]
            write(mv, meta_all.reshape(mv.shape))
        nbytes = int(sum(payload[0][k].size for k in range(n) if per_dest or k == 0) * s.tensor.itemsize)
    writes = [d] if recv_counts_known else [d, mv]
    _emit(api, [s, mv], writes, {"op": None, "space": "hbm", "recv_counts_known": bool(recv_counts_known),
                                 "has_rdispls": bool(has_rdispls), **_group_attrs(rg, members)}, nbytes)


@_with_options
def all_gather_v(srcs, dsts, replica_group, metadata_tensor, recv_counts_known: bool = False,
                 has_rdispls: bool = False, priority: Optional[int] = None, name: Optional[str] = None) -> None:
    """Variable-length all-gather over flat buffers: each rank broadcasts ``src[send_displ : send_displ +
    send_count]`` (metadata rows 0 and 1, first column); sender k's chunk lands at ``dst[k * slot]`` with
    ``slot = dst elements / ranks``. Row 2 receives the per-sender counts unless ``recv_counts_known``."""
    _v_collective("all_gather_v", srcs, dsts, replica_group, metadata_tensor, recv_counts_known, has_rdispls, False)


@_with_options
def all_to_all_v(srcs, dsts, replica_group, metadata_tensor, recv_counts_known: bool = False,
                 has_rdispls: bool = False, priority: Optional[int] = None, name: Optional[str] = None) -> None:
    """All-to-all with per-destination counts known at run time: rank j sends ``src[send_displs[k] :
    send_displs[k] + send_counts[k]]`` to the k-th rank of its sub-group, which stores it at ``recv_displs[j]``
    (row 3, with ``has_rdispls``) or at ``j * slot``. Row 2 receives the counts unless ``recv_counts_known``."""
    _v_collective("all_to_all_v", srcs, dsts, replica_group, metadata_tensor, recv_counts_known, has_rdispls, True)


@_with_options
def collective_permute(srcs, dsts, source_target_pairs, priority: Optional[int] = None,
                       name: Optional[str] = None) -> None:
    """Send the source of rank ``s`` to the destination of rank ``t`` for each pair ``(s, t)`` (HBM, one tensor).
    A rank that is no pair's target keeps its destination unchanged."""
    api = "collective_permute"
    sv, dvs = _tensor_list(srcs, api, "srcs"), _tensor_list(dsts, api, "dsts")
    _check_spaces(api, sv, dvs, hbm_only=True, single=True)
    try:
        pairs = tuple((int(a), int(b)) for a, b in source_target_pairs)
    except (TypeError, ValueError):
        raise KernelError("err_invalid_arguments", f"{api}: source_target_pairs must be (source, target) rank pairs, "
                          f"got {source_target_pairs!r}", "pass e.g. [(0, 1), (1, 0)]") from None
    targets = [t for _, t in pairs]
    if len(set(targets)) != len(targets):
        raise KernelError("err_invalid_arguments", f"{api}: a rank is the target of two pairs in {list(pairs)}",
                          "give every target one source")
    if tuple(sv[0].shape) != tuple(dvs[0].shape):
        raise KernelError("err_shape_mismatch", f"{api}: source {fmt_shape(sv[0].shape)} and destination "
                          f"{fmt_shape(dvs[0].shape)} differ", "use equal shapes")
    world, rank = _world()
    bad = [r for p in pairs for r in p if not 0 <= r < world.size]
    if bad:
        raise KernelError("err_rank_not_in_replica_group", f"{api}: rank {bad[0]} in {list(pairs)} does not exist "
                          f"(world of {world.size} ranks)", f"use ranks 0..{world.size - 1}")
    members = tuple(range(world.size))   # every rank of the launch issues the permute (SPMD)

    def resolve(arr):
        _check_same_shapes(api, arr)
        if arr[members[0]].payload is None:
            return
        for s, t in pairs:
            arr[t].result = [arr[s].payload[0]]

    res = _exchange(api, members, (api, pairs, _shapes(sv), _shapes(dvs)), _read_all(sv), resolve)
    _write_results(dvs, res)
    sends = sum(1 for s, _ in pairs if s == rank)
    _emit(api, sv, dvs if rank in targets else [], {
        "op": None, "space": "hbm", "source_target_pairs": [list(p) for p in pairs],
        "replica_group_size": len(members)}, _nbytes(sv) * sends)


def _channels(by_channel, api: str, arg: str) -> list:
    if not isinstance(by_channel, (list, tuple)) or not by_channel:
        raise KernelError("err_invalid_arguments", f"{api}: '{arg}' must be a list (one entry per channel) of "
                          "one-tensor lists", f"pass {arg}=[[tensor]]")
    out = []
    for ch in by_channel:
        lst = _tensor_list(ch, api, arg)
        if len(lst) != 1:
            raise KernelError("err_collective_coalesced_unsupported", f"{api}: a channel of '{arg}' holds {len(lst)} "
                              "tensors; each channel takes exactly one", "issue one tensor per channel")
        out.append(lst[0])
    return out


def _check_channel_ids(channel_ids, nch: int, api: str) -> tuple:
    ids = tuple(int(c) for c in channel_ids)
    if ids != tuple(range(len(ids))) or len(ids) != nch:
        raise KernelError("err_invalid_channel_ids", f"{api}: channel_ids {list(ids)} for {nch} channel(s); they must "
                          "be consecutive from 0, one per channel", f"pass channel_ids={list(range(nch))}")
    return ids


def _ring(api, srcs_list, dsts_by_channel, replica_group, channel_ids, op=None):
    dvs = _channels(dsts_by_channel, api, "dsts_by_channel")
    src_sets = [_channels(s, api, a) for s, a in srcs_list]
    for ss in src_sets:
        if len(ss) != len(dvs):
            raise KernelError("err_invalid_arguments", f"{api}: {len(ss)} source channels but {len(dvs)} destination "
                              "channels", "pass one source and one destination per channel")
    for ss in src_sets:
        _check_spaces(api, ss, dvs, hbm_only=True)
        for s, d in zip(ss, dvs):
            if tuple(s.shape) != tuple(d.shape):
                raise KernelError("err_shape_mismatch", f"{api}: source {fmt_shape(s.shape)} and destination "
                                  f"{fmt_shape(d.shape)} differ", "use equal shapes")
    ids = _check_channel_ids(channel_ids, len(dvs), api)
    rg = _rg(replica_group, api)
    world, rank = _world()
    members = rg.group_of(rank)
    n = len(members)
    # "The maximum number of channels is 4 for replica groups containing all devices inside a node and 2 for
    # other supported replica groups" (nki.collectives); trnsim's ranks are the devices of one node
    max_ch = 4 if n == world.size else 2
    if len(ids) > max_ch:
        raise KernelError("err_invalid_channel_ids", f"{api}: {len(ids)} channels for a replica group of {n} of "
                          f"{world.size} ranks; at most {max_ch} ({'all ranks' if n == world.size else 'a sub-group'})",
                          f"use at most {max_ch} channels")
    opn = _reduce_op(op, api) if op is not None else None
    if opn is not None:
        _refuse_packed(api, [v for ss in src_sets for v in ss] + list(dvs))
    payload = None
    if current().numerics:
        vals = [[_reduce_values(read(s, raw=True)) for s in ss] for ss in src_sets]
        if opn is None:
            payload = [np.array(read(s, raw=True), copy=True) for s in src_sets[0]]
        else:
            payload = [_REDUCE_OPS[opn](a, b) for a, b in zip(vals[0], vals[1])]

    def resolve(arr):
        _check_same_shapes(api, arr)
        if arr[members[0]].payload is None:
            return
        for pos, m in enumerate(members):
            arr[m].result = arr[members[(pos - 1) % n]].payload

    key = (api, rg._groups, tuple(_shapes(ss) for ss in src_sets), _shapes(dvs), ids, opn)
    res = _exchange(api, members, key, payload, resolve)
    _write_results(dvs, res)
    reads = [v for ss in src_sets for v in ss]
    _emit(api, reads, dvs, {"op": opn, "space": "hbm", "channels": len(ids), **_group_attrs(rg, members)},
          _nbytes(dvs))


@_with_options
def collective_permute_implicit(srcs_by_channel, dsts_by_channel, replica_group, channel_ids=(0,),
                                priority: Optional[int] = None, name: Optional[str] = None) -> None:
    """Ring step: every rank sends its source to its successor in the sub-group and receives its predecessor's
    source into the destination (per channel)."""
    _ring("collective_permute_implicit", [(srcs_by_channel, "srcs_by_channel")], dsts_by_channel, replica_group,
          channel_ids)


@_with_options
def collective_permute_implicit_reduce(srcs0_by_channel, srcs1_by_channel, dsts_by_channel, replica_group, op,
                                       channel_ids=(0,), priority: Optional[int] = None,
                                       name: Optional[str] = None) -> None:
    """Ring step with a reduction: every rank sends ``op(src0, src1)`` to its successor and receives its
    predecessor's reduced value into the destination (per channel)."""
    if op is None:
        raise KernelError("err_unsupported_op", "collective_permute_implicit_reduce needs op=",
                          "use op=nl.add, nl.minimum or nl.maximum")
    _ring("collective_permute_implicit_reduce", [(srcs0_by_channel, "srcs0_by_channel"),
                                                 (srcs1_by_channel, "srcs1_by_channel")], dsts_by_channel,
          replica_group, channel_ids, op)


def collective_permute_implicit_current_processing_rank_id(iteration_id: int, replica_group, channel_id: int = 0,
                                                           name: Optional[str] = None) -> int:
    """The rank whose data a ring step processes: at iteration 0 this rank itself, at iteration k the rank k
    places before it in its sub-group ring (data moves one place per step). An int (a register's value)."""
    rg = _rg(replica_group, "collective_permute_implicit_current_processing_rank_id")
    world, rank = _world()
    members = rg.group_of(rank)
    if int(channel_id) < 0:
        raise KernelError("err_invalid_channel_ids", f"channel_id={channel_id} must be >= 0", "use channel 0..3")
    pos = members.index(rank)
    return members[(pos - int(iteration_id)) % len(members)]


def rank_id(name: Optional[str] = None) -> int:
    """The id of the rank running this kernel instance (0..world_size-1). An int (a register's value)."""
    world, rank = _world()
    return rank


__all__ = ["ReplicaGroup", "all_reduce", "all_gather", "all_gather_v", "reduce_scatter", "all_to_all", "all_to_all_v",
           "collective_permute", "collective_permute_implicit", "collective_permute_implicit_reduce",
           "collective_permute_implicit_current_processing_rank_id", "rank_id"]
