"""The tracing context of a running kernel (layer 2, above tensors and trace records).

A kernel runs eagerly in Python: every ``nl``/``nisa`` call checks its rules, computes its result
with numpy (unless ``numerics=False``) and appends one :class:`~trnsim.nki.trace.Instruction` to the
trace through :meth:`Context.emit`. Loops are unrolled as they run. This module holds the state of
one trace (allocations, live on-chip capacity, dependency tables), ``current()`` (the context of the
running kernel) and the data helpers ``read`` / ``write`` every instruction uses.

Allocation lifetime. NKI 0.6 (``nki`` dialect): an SBUF/PSUM tensor is a Python object; it is live
while the kernel holds a reference to it (a tile made in a loop and kept in a list stays valid after
the loop). Beta 1 (``beta1`` dialect, ``trnsim.neuronxcc.nki``): a tensor is live until the end of the
``affine_range`` / ``sequential_range`` / ``static_range`` iteration that created it, or until the
kernel drops its last reference, whichever comes first; using it later is
``err_local_variable_used_out_of_scope``. Live SBUF bytes per partition are summed over live tensors
and checked against the target's usable SBUF per partition; each live PSUM tensor occupies whole banks
(ceil(bytes per partition / bank bytes)) and the live bank count is checked against the target's bank
count.

Dependencies: each instruction depends on the earlier instructions whose regions overlap its own
(read-after-write, write-after-read, write-after-write), tracked per allocation with per-allocation
access lists that are pruned when a write covers earlier accesses.

Tracing speed (timing-only traces of tens of thousands of instructions): shape-only facts of a new
tile (normalised shape, layout, PSUM banks, full-view geometry) are checked once per (shape, dtype,
buffer, partition dim) and memoised (``Context._tile_spec``); the partition / PSUM-bank rules still run
on the first allocation of each spec and the state-dependent capacity rules on every allocation. Trace
Operands are cached per view and per tensor (full view, or basic sub-view by its ranges); the records
are built with ``trace.make_*`` (same dataclasses, cheaper construction). Measured in
tests/test_bench_nki.py.
"""
from __future__ import annotations

import math
import warnings
import weakref
from typing import Any

import numpy as np

from trnsim.nki import dtypes as dt
from trnsim.nki.rules import KernelError, fmt_shape, limits_for, short_location, user_location
from trnsim.nki.tensors import Broadcast, Tensor, View
from trnsim.nki.trace import (Allocation, Instruction, Operand, Region, Trace, make_allocation, make_instruction,
                              make_operand, make_region)

_CURRENT: "Context | None" = None


class Placement:
    """Where the kernel asked an on-chip tensor to live (``nki.compiler.sbuf.mod_alloc`` / ``psum.mod_alloc`` /
    ``nl.ndarray(address=...)``): recorded on the trace Allocation (``placement``) so a scheduler can honour it.

    ``buffer`` "sbuf" | "psum"; ``fields``: the directive's arguments (``base_addr`` bytes per partition,
    ``base_partition``, ``base_bank``, ``num_free_tiles`` / ``num_bank_tiles`` rotating-buffer counts, ...)."""
    __slots__ = ("buffer", "fields")

    def __init__(self, buffer: str, **fields):
        self.buffer = buffer
        self.fields = fields

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.fields.items())
        return f"{self.buffer}.mod_alloc({args})"
_new_tensor = object.__new__


def current() -> "Context":
    ctx = _CURRENT
    if ctx is None:
        raise KernelError("err_nki_api_outside_of_nki_kernel",
                          "NKI API called outside of a kernel",
                          "call it inside a function run by nki.simulate_kernel / an @nki.jit kernel")
    return ctx


_NO_REORDER_UID = [0]


class UninitializedReadWarning(RuntimeWarning):
    """A kernel read on-chip or HBM memory that nothing had written (undefined values on hardware)."""


UninitializedReadWarning.__module__ = "trnsim.nki"


class ActivationRangeWarning(RuntimeWarning):
    """A Scalar Engine activation got inputs outside the function's documented valid range: the hardware returns
    invalid results there (e.g. sin without range reduction), while the simulator computes the exact function."""


ActivationRangeWarning.__module__ = "trnsim.nki"


class AccumulatorIdleWarning(RuntimeWarning):
    """``nisa.activation(..., reduce_op=..., reduce_res=...)`` left at ``reduce_cmd=idle`` (the default): the
    accumulator is not updated, so ``reduce_res`` receives its earlier value, not this instruction's reduction."""


AccumulatorIdleWarning.__module__ = "trnsim.nki"


class NoReorderBlock:
    """``with nki.compiler.no_reorder():`` -- instructions issued inside keep their program order."""

    def __init__(self):
        self._saved: list = []

    def __enter__(self) -> "NoReorderBlock":
        ctx = current()
        _NO_REORDER_UID[0] += 1
        self._saved.append(ctx.directive_attrs)
        attrs = dict(ctx.directive_attrs or {})
        attrs["no_reorder"] = _NO_REORDER_UID[0]
        ctx.directive_attrs = attrs
        return self

    def __exit__(self, *exc) -> None:
        current().directive_attrs = self._saved.pop()



class Context:
    """State of one kernel trace (all SPMD instances)."""

    def __init__(self, kernel_name: str, target: str, numerics: bool, grid: tuple[int, ...]):
        self.kernel_name = kernel_name
        self.target = target
        self.limits = limits_for(target)
        self.numerics = numerics
        self.grid = grid
        self.instructions: list[Instruction] = []
        self.allocs: list[Allocation] = []   # by alloc_id; first_use / last_use kept up to date by emit
        self.writes: dict[int, list] = {}
        self.reads: dict[int, list] = {}
        self.scopes: list[list] = [[]]
        self.loops: list[tuple[str, int, int]] = []   # (kind, loop uid, iteration) of enclosing NKI loops
        self.affine_writes: dict[int, dict] = {}       # loop uid -> {(alloc, shape): {iteration: [union, boxes]}}
        self.n_affine = 0
        self.unrolled_iterations = 0               # nl.*_range iterations run (language.control limit)
        self.sbuf_used = 0
        self.psum_banks_used = 0
        self.live: dict[int, tuple[str, int, int, str, tuple]] = {}
        self.peak_sbuf_bytes = 0
        self.peak_psum_banks = 0
        self.peak_pending = -1   # index of the instruction whose result temp is not yet in the peak (see _flush_peak)
        self.program_id: tuple[int, ...] = ()
        self.shared: list[Tensor] = []
        self.shared_pos = 0
        self.new_style = True
        self.dialect = "nki"                      # "nki" (NKI 0.6 rules) or "beta1" (trnsim.neuronxcc.nki)
        self.lnc = 1                              # physical cores of the logical NeuronCore
        self.core = 0                             # physical core of the running program instance
        self.directive_attrs: dict | None = None  # attrs every emitted instruction gets (e.g. a no_reorder block)
        self.directives: dict = {}                # kernel-level compiler directives (Trace.directives)
        self.uninitialized_reads: list[str] = []  # UninitializedReadWarning messages (Trace.uninitialized_reads)
        self.placements: dict[int, dict] = {}     # alloc_id -> requested placement (Allocation.placement)
        self.active = True
        self.last_out: Any = None      # weakref to the tensor written by the last instruction
        self.last_out_index = -1
        self.last_vals: np.ndarray | None = None   # float32 result of the last op, before its output cast
        self.last_mask: np.ndarray | None = None   # mask= of the last op (elements it actually wrote)
        self.deferred: list = []                  # temps allocated over capacity, checked at the next instruction
        self._specs: dict = {}                    # memo of _tile_spec

    # ------------------------------------------------------------------ allocation
    def charge_hbm(self, name: str, shape, dtype_name: str, nbytes: int) -> None:
        """Account an HBM tensor (kernel input, output or scratch) against the target's device memory; refuse
        sizes the device cannot hold before any numpy allocation (err_hbm_over_capacity)."""
        self.hbm_used = getattr(self, "hbm_used", 0) + nbytes
        cap = self.limits.hbm_bytes
        if cap and self.hbm_used > cap:
            raise KernelError("err_hbm_over_capacity",
                              f"HBM tensor `{name or 'tensor'}`{fmt_shape(shape)} {dtype_name} needs {nbytes:,} bytes; "
                              f"with the kernel's other HBM tensors that is {self.hbm_used:,} bytes, more than the "
                              f"{cap / 2 ** 30:.0f} GiB of device memory of a {self.target} chip",
                              "use smaller tensors (split the problem across kernel launches or devices)")

    def new_alloc(self, name: str, buffer: str, shape, dtype_name: str, bpp: int, partitions: int,
                  is_io: bool) -> int:
        aid = len(self.allocs)
        self.allocs.append(make_allocation(aid, name, buffer, tuple(shape), dtype_name, bpp, partitions, -1, -1,
                                           is_io))
        return aid

    def _tile_spec(self, shape, dtype_name: str, buffer: str, pdim: int, name: str, api: str):
        """Shape-only facts of a new tensor, checked once per (shape, dtype, buffer, pdim) and memoised:
        (normalised shape, Tensor attribute template, PSUM banks). Raises the partition / PSUM-bank rules."""
        key = (shape, dtype_name, buffer, pdim)
        try:
            spec = self._specs.get(key)
        except TypeError:   # unhashable shape (e.g. a list)
            key = None
            spec = None
        if spec is not None:
            return spec
        shape = tuple(map(int, shape))
        lim = self.limits
        if any(d < 1 for d in shape):
            # an instruction's result from an empty access (e.g. nl.load(x[R:R, :]) in a loop that runs one
            # iteration past the end): nl.ndarray refuses such a shape, so its result does too
            raise KernelError("err_invalid_shape",
                              f"the result of '{api}' would have shape {fmt_shape(shape)}, a size below 1: its "
                              "operand is an empty slice",
                              "check the loop bounds and slices: an iteration past the end of the tensor (lo == hi) "
                              "reads nothing; loop over ceil(size / tile) tiles and clip the last one with min()")
        if buffer != "hbm":
            if len(shape) < 2 and buffer in ("sbuf", "psum"):
                shape = shape + (1,) * (2 - len(shape)) if shape else (1, 1)
            p = shape[pdim]
            if p > lim.pmax:
                raise KernelError("err_num_partition_exceed_arch_limit",
                                  f"number of partitions {p} exceed architecture limitation of {lim.pmax}. "
                                  f"(tile {name or api}{fmt_shape(shape)}; partition dim is dimension {pdim})",
                                  f"tile the partition dimension into chunks of at most {lim.pmax} "
                                  "(nl.tile_size.pmax)")
        proto = Tensor(None, shape, dtype_name, buffer, "", pdim=pdim)
        banks = 0
        if buffer == "psum":
            tile_bytes = proto.itemsize
            for k in range(pdim + 1, len(shape)):
                tile_bytes *= shape[k]
            # TC#2: one PSUM tile fits a bank; NC-v4 matmuls may span banks up to gemm_moving_fmax fp32
            if tile_bytes > max(lim.psum_bank_bytes, 4 * lim.gemm_moving_fmax):
                raise KernelError("err_psum_tile_exceeds_bank",
                                  f"PSUM tile {name or api}{fmt_shape(shape)} {dtype_name} needs {tile_bytes} bytes "
                                  f"per partition but one PSUM bank holds {lim.psum_bank_bytes} bytes "
                                  f"({lim.psum_fmax} fp32 elements) per partition on {self.target} "
                                  f"(nl.tile_size.psum_bank_fmax = {lim.psum_fmax})",
                                  f"split the free dimension into tiles of at most {lim.psum_fmax} fp32 elements"
                                  + (", or add a block dimension: nl.ndarray((n, nl.par_dim(128), 512), ..., "
                                     "buffer=nl.psum)" if self.dialect == "beta1" else
                                     " (one PSUM tile per bank; keep several tiles in a Python list if needed)"))
            nblocks = 1
            for k in range(pdim):
                nblocks *= shape[k]
            banks = nblocks * max(1, -(-tile_bytes // lim.psum_bank_bytes))
        fv = proto.full_view()
        proto._full_geom = fv.region() + (fv.contiguous_bytes(),)   # geometry of the full-view Operand
        template = dict(proto.__dict__)
        del template["ctx"], template["name"], template["kind"]
        template["_geoms"] = {}   # sub-view geometry depends on the spec only: shared by its tensors (Context.operand)
        spec = (shape, template, banks)
        if key is not None and len(self._specs) < 4096:
            self._specs[key] = spec
        return spec

    def new_tensor(self, shape, dtype_name: str, buffer: str, name: str = "", *, pdim: int = 0,
                   kind: str = "local", fill: Any = "uninit", api: str = "ndarray", temp: bool = False,
                   copies: int | None = None) -> Tensor:
        """Allocate a tensor, checking partition, PSUM-bank and SBUF-capacity rules.

        ``temp``: the result tile of an instruction. If it does not fit, the capacity error is deferred
        to the next instruction: ``buf[...] = op(...)`` / ``psum += matmul(...)`` write straight into
        ``buf`` on the hardware, so a temporary that is retargeted at once never occupies memory.
        ``fill``: "uninit" (NaN / 4, as NKI's simulator), a number, or "overwritten" (numerics storage left
        unfilled: the instruction that makes the tensor writes every element of it).
        """
        try:
            spec = self._specs.get((shape, dtype_name, buffer, pdim))
        except TypeError:
            spec = None
        if spec is None:
            spec = self._tile_spec(shape, dtype_name, buffer, pdim, name, api)
        shape, template, banks = spec
        lim = self.limits
        if temp and 0 <= self.peak_pending < len(self.instructions):
            self._flush_peak()
        # same attributes as Tensor(self, shape, dtype_name, buffer, name, pdim=pdim, kind=kind), from the template
        t = _new_tensor(Tensor)
        d = template.copy()   # (a dict clone: one allocation, no resizing as keys are added)
        t.__dict__ = d
        d["ctx"] = self
        d["name"] = name
        d["kind"] = kind
        d["depth"] = len(self.loops)
        allocs = self.allocs
        aid = d["alloc_id"] = len(allocs)
        bpp = template["bytes_per_partition"]
        allocs.append(make_allocation(aid, name, buffer, shape, dtype_name, bpp, template["partitions"], -1, -1,
                                      kind in ("input", "output", "shared")))
        if copies is not None:
            # explicitly placed (nki.compiler mod_alloc): the kernel manages that memory itself; its range is
            # checked against the target where the placement is recorded, not charged to the compiler's pool
            bpp = 0
            banks = 0
        elif buffer == "psum" and pdim > 0 and self.dialect == "beta1":
            # Beta 1 block dimensions: the compiler rotates a PSUM tensor's blocks through the banks (each block
            # is live only while it is used), so the tensor is charged one block's banks
            nblocks = 1
            for k in range(pdim):
                nblocks *= shape[k]
            banks = max(1, banks // max(1, nblocks))
        if buffer == "sbuf":
            need = bpp
            if temp and self.sbuf_used + need > lim.sbuf_bytes_per_partition:
                self.deferred.append((weakref.ref(t), len(self.instructions), shape, dtype_name, name, api,
                                      user_location(), need))
                need = 0
            if self.sbuf_used + need > lim.sbuf_bytes_per_partition:
                live = [v for v in self.live.values() if v[0] == "sbuf"]
                biggest = sorted(live, key=lambda v: -v[1])[:3]
                desc = ", ".join(f"{v[3] or 'tile'}{fmt_shape(v[4])} {v[1]} B" for v in biggest)
                raise KernelError("err_sbuf_over_capacity",
                                  f"SBUF over capacity: allocating {name or api}{fmt_shape(shape)} {dtype_name} needs "
                                  f"{need} bytes per partition, {self.sbuf_used} bytes per partition are already "
                                  f"used by {len(live)} live tensors (largest: {desc or 'none'}); {self.target} has "
                                  f"{lim.sbuf_bytes_per_partition} usable SBUF bytes per partition",
                                  "use smaller tiles, allocate buffers inside the loop that uses them so they are "
                                  "released each iteration, or reuse one buffer")
            self.sbuf_used += need
            if not temp and self.sbuf_used > self.peak_sbuf_bytes:
                self.peak_sbuf_bytes = self.sbuf_used
            self.live[t.alloc_id] = ("sbuf", need, 0, name, shape)
        elif buffer == "psum":
            if temp and self.psum_banks_used + banks > lim.psum_banks:
                self.deferred.append((weakref.ref(t), len(self.instructions), shape, dtype_name, name, api,
                                      user_location(), banks))
                banks = 0
            if self.psum_banks_used + banks > lim.psum_banks:
                raise KernelError("err_psum_banks_exhausted",
                                  f"more PSUM banks live than exist: allocating {name or api}{fmt_shape(shape)} "
                                  f"needs {banks} bank(s) while {self.psum_banks_used} of {lim.psum_banks} are held "
                                  f"by live PSUM tensors on {self.target}",
                                  "evacuate PSUM results to SBUF (nl.copy) and allocate PSUM tiles inside the loop "
                                  "so they are released each iteration; keep at most "
                                  f"{lim.psum_banks} PSUM tiles of one bank alive")
            self.psum_banks_used += banks
            if not temp and self.psum_banks_used > self.peak_psum_banks:
                self.peak_psum_banks = self.psum_banks_used
            self.live[t.alloc_id] = ("psum", 0, banks, name, shape)
        if buffer != "hbm":
            self.scopes[-1].append(weakref.ref(t))
            if temp:
                # a result temp counts toward the peak only if it outlives the statement that made it
                # (``buf[...] = op(...)`` / ``psum += matmul(...)`` write straight into buf on hardware)
                self.peak_pending = len(self.instructions)
        if self.numerics:
            st = dt.storage_dtype(dtype_name)
            if fill == "overwritten":   # the instruction making it writes every element (e.g. an unmasked load)
                t.data = np.empty(shape, dtype=st)
            elif isinstance(fill, str):  # uninitialised: NaN for floats, 4 for ints (as NKI's simulator)
                t.data = np.full(shape, np.nan if dt.is_float(dtype_name) else 4, dtype=st)
            elif dt.is_int(dtype_name):   # integer fills exactly (a float32 round trip loses bits above 2**24)
                t.data = dt.cast(np.full(shape, fill, dtype=np.float64), dtype_name)
            else:
                t.data = dt.cast(np.full(shape, fill, dtype=np.float32), dtype_name)
            if buffer == "psum":
                # PSUM "written" mask: where a location holds a value, a matmul with accumulate=None (or
                # psum += matmul) adds to it; a zero fill is folded into the first matmul (nothing to add)
                t.acc = np.full(shape, not isinstance(fill, str) and float(fill) != 0.0, dtype=bool)
        if not isinstance(fill, str):
            t.written = True
            if buffer == "psum" and float(fill) != 0.0:
                t.mm_open = t.psum_other_value = True
        return t

    def _flush_peak(self) -> None:
        self.peak_pending = -1
        if self.sbuf_used > self.peak_sbuf_bytes:
            self.peak_sbuf_bytes = self.sbuf_used
        if self.psum_banks_used > self.peak_psum_banks:
            self.peak_psum_banks = self.psum_banks_used

    def release(self, t: Tensor) -> None:
        if not t.live:
            return
        t.live = False
        rec = self.live.pop(t.alloc_id, None)
        if rec is not None:
            self.sbuf_used -= rec[1]
            self.psum_banks_used -= rec[2]

    def push_scope(self, kind: str, uid: int = 0, iteration: int = 0) -> None:
        self.scopes.append([])
        self.loops.append((kind, uid, iteration))
        if kind == "affine_range" and self.dialect == "beta1":
            # the independence rule of Beta 1's affine_range; in NKI 0.6 affine_range is an alias of range()
            self.n_affine += 1

    def pop_scope(self) -> None:
        """End one loop iteration. Beta 1: release the tensors it created (later use is
        err_local_variable_used_out_of_scope). NKI 0.6: their capacity is given back (the iteration's
        buffers are reused by the next one) but they stay valid: a later use re-charges them (``recharge``)."""
        if len(self.scopes) <= 1:
            return
        scope = self.scopes.pop()
        if self.loops.pop()[0] == "affine_range" and self.dialect == "beta1":
            self.n_affine -= 1
        loc = None
        beta1 = self.dialect == "beta1"
        live = self.live
        for r in scope:
            t = r()
            if t is not None and t.live:
                # as self.release(t), inlined (a loop iteration ends: every tile it made)
                t.live = False
                rec = live.pop(t.alloc_id, None)
                if rec is not None:
                    self.sbuf_used -= rec[1]
                    self.psum_banks_used -= rec[2]
                if beta1:   # the line named by err_local_variable_used_out_of_scope (0.6 never raises it)
                    if loc is None:
                        loc = short_location()
                    t.freed_line = loc
                else:
                    t.parked = rec if rec is not None else ("", 0, 0, t.name, t.shape)

    def recharge(self, t: Tensor) -> None:
        """A tensor whose loop iteration ended is used again (NKI 0.6 scoping): it holds its SBUF bytes /
        PSUM banks again from now on (until the kernel drops it), checked against the capacity."""
        rec = t.parked
        t.parked = None
        t.live = True
        if t.alias is not None or not rec[0]:
            return
        lim = self.limits
        if rec[0] == "sbuf" and self.sbuf_used + rec[1] > lim.sbuf_bytes_per_partition:
            raise KernelError("err_sbuf_over_capacity",
                              f"SBUF over capacity: tile {t.name or 'tile'}{fmt_shape(t.shape)} made in an earlier loop "
                              f"iteration is used again and needs {rec[1]} bytes per partition while "
                              f"{self.sbuf_used} are in use; {self.target} has {lim.sbuf_bytes_per_partition} usable "
                              "SBUF bytes per partition",
                              "keep fewer tiles alive across loops (consume them inside the loop) or use smaller tiles")
        if rec[0] == "psum" and self.psum_banks_used + rec[2] > lim.psum_banks:
            raise KernelError("err_psum_banks_exhausted",
                              f"more PSUM banks live than exist: PSUM tile {t.name or 'tile'}{fmt_shape(t.shape)} made in "
                              f"an earlier loop iteration is used again while {self.psum_banks_used} of "
                              f"{lim.psum_banks} banks are held",
                              "copy PSUM results to SBUF inside the loop that makes them")
        self.sbuf_used += rec[1]
        self.psum_banks_used += rec[2]
        self.peak_sbuf_bytes = max(self.peak_sbuf_bytes, self.sbuf_used)
        self.peak_psum_banks = max(self.peak_psum_banks, self.psum_banks_used)
        self.live[t.alloc_id] = rec
        # from now on it lives as long as the kernel references it (e.g. a Python list of tiles): released
        # when its last reference goes (Tensor.__del__) or when the program instance ends
        self.scopes[0].append(weakref.ref(t))

    # ------------------------------------------------------------------ trace
    def operand(self, v: View, *, name: str | None = None) -> Operand:
        """The trace Operand of view ``v`` (cached on the view, and per tensor by full view / ranges)."""
        t = v.tensor
        if t.alias is not None:
            return self.operand(t.alias)
        op = v._op
        if op is not None:
            return op
        cache = None
        ranges = v.ranges
        if v.adv is None:
            if ranges is t._full_ranges:
                op = t._full_op
                if op is not None:
                    v._op = op
                    return op
            else:
                cache = t._ops
                if cache is None:
                    cache = t._ops = {}
                else:
                    op = cache.get(ranges)
                    if op is not None:
                        v._op = op
                        return op
        if cache is None and v.adv is None and t._full_geom is not None:
            return self.full_operand(t, v)
        buf = t.buffer
        reg = v._reg
        geoms = t._geoms if cache is not None else None
        g = geoms.get(ranges) if geoms is not None else None
        if g is None and 0 in tuple(v.shape):
            # (checked once per view geometry: later views of the same ranges hit the caches above)
            raise KernelError("err_invalid_shape",
                              f"an instruction operand is an empty slice of `{t.name or 'tile'}`{fmt_shape(t.shape)}: "
                              f"shape {fmt_shape(tuple(v.shape))}, a size below 1",
                              "check the loop bounds and slices: an iteration past the end of the tensor (lo == hi) "
                              "reads and writes nothing; loop over ceil(size / tile) tiles and clip the last one with "
                              "min()")
        if g is None:
            p0, np_, b0, b1 = reg if reg is not None else v.region()
            g = (p0, np_, b0, b1, v.contiguous_bytes())
            if geoms is not None and len(geoms) < 1024:
                geoms[ranges] = g
        op = make_operand(t.name, buf, v.shape, t.dtype_name, t.itemsize,
                          make_region(buf, t.alloc_id, g[0], g[1], g[2], g[3]), g[4])
        v._op = op
        if cache is not None:
            cache[ranges] = op
        elif v.adv is None:
            t._full_op = op
        return op

    def full_operand(self, t: Tensor, v: View | None = None) -> Operand:
        """The trace Operand of the full view of ``t``, a tensor made by new_tensor (its geometry memoised per tile
        spec in ``_full_geom``); cached as ``t._full_op`` (and on ``v``)."""
        geom = t._full_geom
        buf = t.buffer
        op = make_operand(t.name, buf, t.shape, t.dtype_name, t.itemsize,
                          make_region(buf, t.alloc_id, geom[0], geom[1], geom[2], geom[3]), geom[4])
        t._full_op = op
        if v is not None:
            v._op = op
        return op

    def uninitialized_read(self, t: Tensor, opcode: str) -> None:
        """An instruction reads a tensor nothing has written yet: NKI allows it (the memory holds garbage; the
        simulator's NaN / 4 fill), so this is an UninitializedReadWarning naming the kernel line, once per tensor."""
        root = t.root if t.root is not None else t
        if root.written:
            return
        t.written = True   # warn once per tensor
        loc, src = user_location()
        msg = (f"'{opcode}' reads {t.buffer} tensor {t.name or 'tile'}{fmt_shape(t.shape)} before anything wrote it: "
               f"its values are undefined (the simulator's {'NaN' if dt.is_float(t.dtype_name) else '4'} fill) at "
               f"{loc}" + (f": {src}" if src else "") + ". Write it first (nl.zeros / nisa.memset / a load or compute "
               "into it).")
        self.uninitialized_reads.append(msg)
        warnings.warn(UninitializedReadWarning(msg), stacklevel=2)

    def check_live(self, t: Tensor) -> None:
        if t.parked is not None:
            self.recharge(t)
            return
        if not t.live:
            raise KernelError("err_local_variable_used_out_of_scope",
                              f"tensor {t.name or 'tile'}{fmt_shape(t.shape)} in {t.buffer} is used after the loop "
                              f"iteration that created it ended" + (f" (released at {t.freed_line})"
                                                                     if t.freed_line else ""),
                              "allocate the buffer before the loop (nl.ndarray / nl.zeros) and write into it with "
                              "buf[...] = ..., or use the value inside the loop")

    def _check_deferred(self, idx: int) -> None:
        keep = []
        lim = self.limits
        for entry in self.deferred:
            ref, at, shape, dtype_name, name, api, loc, need = entry
            t = ref()
            if t is None or not t.live or t.alias is not None:
                continue
            if at >= idx:
                keep.append(entry)
                continue
            buf = t.buffer
            # still live at the next instruction: charge it now if it fits (the operands that were in the way when
            # it was made, e.g. the product in ``a * g + b``, have been released; the compiler reuses their space)
            rec = self.live.get(t.alloc_id)
            if buf == "sbuf" and self.sbuf_used + need <= lim.sbuf_bytes_per_partition:
                self.sbuf_used += need
                if rec is not None:
                    self.live[t.alloc_id] = (rec[0], need, rec[2], rec[3], rec[4])
                if self.sbuf_used > self.peak_sbuf_bytes:
                    self.peak_sbuf_bytes = self.sbuf_used
                continue
            if buf == "psum" and self.psum_banks_used + need <= lim.psum_banks:
                self.psum_banks_used += need
                if rec is not None:
                    self.live[t.alloc_id] = (rec[0], rec[1], need, rec[3], rec[4])
                if self.psum_banks_used > self.peak_psum_banks:
                    self.peak_psum_banks = self.psum_banks_used
                continue
            self.deferred = []
            if buf == "psum":
                raise KernelError("err_psum_banks_exhausted",
                                  f"more PSUM banks live than exist: the result {fmt_shape(shape)} of '{api}' needs a "
                                  f"PSUM bank while {self.psum_banks_used} of {self.limits.psum_banks} are held by "
                                  "live "
                                  f"PSUM tensors on {self.target}",
                                  "accumulate into an existing PSUM tile (acc += nl.matmul(...)) or free PSUM tiles "
                                  "by evacuating them to SBUF inside the loop", location=loc[0], source=loc[1])
            raise KernelError("err_sbuf_over_capacity",
                              f"SBUF over capacity: the result {fmt_shape(shape)} {dtype_name} of '{api}' needs "
                              f"{t.bytes_per_partition} bytes per partition, {self.sbuf_used} bytes per partition are "
                              f"already used; {self.target} has {self.limits.sbuf_bytes_per_partition} usable SBUF "
                              "bytes per partition",
                              "write the result into an existing buffer (buf[...] = op(...)) or use smaller tiles",
                              location=loc[0], source=loc[1])
        self.deferred = keep

    def emit(self, opcode: str, engine: str, reads, writes, attrs: dict, flops: int = 0,
             bytes_moved: int = 0, free_elements: int = 0, partitions: int = 0) -> int:
        """Append one Instruction reading ``reads`` and writing ``writes`` (views); dependencies are the earlier
        instructions whose accesses overlap (RAW, WAR, WAW). Returns its index."""
        instructions = self.instructions
        idx = len(instructions)
        if self.deferred:
            self._check_deferred(idx)
        if 0 <= self.peak_pending < idx:
            self._flush_peak()
        deps: set[int] = set()
        rops = []
        allocs = self.allocs
        wtab = self.writes
        rtab = self.reads
        for v in reads:
            if type(v) is Broadcast:
                v = v.view
            t = v.tensor
            if not t.live:
                self.check_live(t)
            if not t.written and t.kind != "input" and t.alias is None:
                self.uninitialized_read(t, opcode)
            op = v._op
            if op is None or t.alias is not None:
                op = self.operand(v)
            rops.append(op)
            r = op.region
            aid = r.alloc_id
            p0 = r.partition_start
            p1 = p0 + r.partitions
            b0 = r.byte_start
            b1 = r.byte_stop
            wl = wtab.get(aid)
            if wl:
                for e in wl:
                    if e[0] < p1 and p0 < e[1] and e[2] < b1 and b0 < e[3]:
                        deps.add(e[4])
            rl = rtab.get(aid)
            if rl is None:
                rtab[aid] = [(p0, p1, b0, b1, idx)]
            else:
                rl.append((p0, p1, b0, b1, idx))
            rec = allocs[aid]
            if rec.first_use < 0:
                rec.first_use = idx
            rec.last_use = idx
        wops = []
        n_affine = self.n_affine
        for v in writes:
            t = v.tensor
            if not t.live:
                self.check_live(t)
            if t.kind == "input" and not t.mutable:
                raise KernelError("err_cannot_update_immutable_parameter",
                                  f"cannot write kernel input `{t.name}`{fmt_shape(t.shape)}: kernel inputs are "
                                  "immutable",
                                  "allocate an output with nl.ndarray(shape, dtype, buffer=nl.shared_hbm), write it "
                                  "and return it (or annotate the parameter nt.mutable_tensor and return it)")
            t.written = True
            root = t.root
            if root is not None:
                root.written = True
            if t.buffer == "psum" and opcode != "memset":
                # the PSUM value's origin, for the next matmul (memset decides for itself: a zero fill is folded).
                # Tensor Engine results open an accumulation group (the matmul sets mm_open itself); any other
                # engine's value is one the next matmul accumulates onto (accumulate=None), which NC-v2/v3 do
                # not support (isa.common.check_accumulate)
                if engine == "tensor":
                    t.psum_other_value = False
                else:
                    t.mm_open = t.psum_other_value = True
            op = v._op
            if op is None or t.alias is not None:
                op = self.operand(v)
            wops.append(op)
            if n_affine and t.depth < len(self.loops) and not _rmw(op, rops):
                self.check_affine_write(v)
            r = op.region
            aid = r.alloc_id
            wl = wtab.get(aid)
            if wl is None and rtab.get(aid) is None:   # first access of a fresh allocation (e.g. a result tile)
                wtab[aid] = [(r.partition_start, r.partition_start + r.partitions, r.byte_start, r.byte_stop, idx)]
                rec = allocs[aid]
                if rec.first_use < 0:
                    rec.first_use = idx
                rec.last_use = idx
            else:
                self._write_access(r, idx, deps)
        if deps:
            deps.discard(idx)
            deps = tuple(sorted(deps)) if len(deps) > 1 else tuple(deps)
        else:
            deps = ()
        loops = self.loops
        ins = make_instruction(idx, opcode, engine, tuple(rops), tuple(wops), attrs, flops, bytes_moved,
                               deps, free_elements, partitions, short_location(2), self.program_id, self.core,
                               loops[-1][0] if loops else "")
        if self.directive_attrs:
            attrs.update(self.directive_attrs)
        instructions.append(ins)
        return idx

    def emit_fresh(self, opcode: str, engine: str, src: View, out: Tensor, attrs: dict, flops: int = 0,
                   bytes_moved: int = 0, free_elements: int = 0, partitions: int = 0) -> int:
        """``emit(opcode, engine, (src,), (out.full_view(),), ...)`` for an instruction that reads one view and
        writes the whole of ``out``, a result tile no instruction has accessed yet (``nl.load``'s): the same
        record, without the general write-side search (a fresh allocation has no earlier accesses to depend on
        or to retire). Anything else takes ``emit``."""
        oaid = out.alloc_id
        wtab = self.writes
        rtab = self.reads
        if self.deferred or self.n_affine or type(src) is not View or out.alias is not None or \
                out._full_geom is None or oaid in wtab or oaid in rtab or src.tensor.alias is not None:
            return self.emit(opcode, engine, (src,), (out.full_view(),), attrs, flops, bytes_moved,
                             free_elements, partitions)
        instructions = self.instructions
        idx = len(instructions)
        if 0 <= self.peak_pending < idx:
            self._flush_peak()
        # the read (as in emit)
        t = src.tensor
        if not t.live:
            self.check_live(t)
        if not t.written and t.kind != "input":
            self.uninitialized_read(t, opcode)
        op = src._op
        if op is None:
            op = self.operand(src)
        r = op.region
        aid = r.alloc_id
        p0 = r.partition_start
        p1 = p0 + r.partitions
        b0 = r.byte_start
        b1 = r.byte_stop
        deps = ()
        wl = wtab.get(aid)
        if wl:
            found = {e[4] for e in wl if e[0] < p1 and p0 < e[1] and e[2] < b1 and b0 < e[3]}
            deps = tuple(sorted(found))
        rl = rtab.get(aid)
        if rl is None:
            rtab[aid] = [(p0, p1, b0, b1, idx)]
        else:
            rl.append((p0, p1, b0, b1, idx))
        allocs = self.allocs
        rec = allocs[aid]
        if rec.first_use < 0:
            rec.first_use = idx
        rec.last_use = idx
        # the write of the fresh tile: its first access
        out.written = True
        wop = out._full_op
        if wop is None:
            wop = self.full_operand(out)
        g = out._full_geom
        wtab[oaid] = [(g[0], g[0] + g[1], g[2], g[3], idx)]
        rec = allocs[oaid]
        rec.first_use = idx
        rec.last_use = idx
        if self.directive_attrs:
            attrs.update(self.directive_attrs)
        loops = self.loops
        instructions.append(make_instruction(idx, opcode, engine, (op,), (wop,), attrs, flops, bytes_moved, deps,
                                             free_elements, partitions, short_location(2), self.program_id,
                                             self.core, loops[-1][0] if loops else ""))
        return idx

    def check_affine_write(self, v: View) -> None:
        """err_unexpected_output_dependencies: two iterations of one nl.affine_range loop write overlapping
        parts of a tensor created outside the loop (read-modify-write accumulations are exempt, as NKI's
        "associative reductions are not loop-carried dependencies")."""
        t = v.tensor
        box = tuple(v.dim_bounds())
        key = (t.alloc_id, t.shape)
        for lvl in range(t.depth, len(self.loops)):
            kind, uid, it = self.loops[lvl]
            if kind != "affine_range":
                continue
            per_loop = self.affine_writes.get(uid)
            if per_loop is None:
                per_loop = self.affine_writes[uid] = {}
            rec = per_loop.get(key)
            if rec is None:
                rec = per_loop[key] = {}
            for it2, (ubox, boxes) in rec.items():
                if it2 == it or not _box_overlap(ubox, box):
                    continue
                for b in boxes:
                    if _box_overlap(b, box):
                        lo = [max(x[0], y[0]) for x, y in zip(b, box)]
                        hi = [min(x[1], y[1]) for x, y in zip(b, box)]
                        where = ", ".join(f"{a}:{c + 1}" for a, c in zip(lo, hi))
                        raise KernelError("err_unexpected_output_dependencies",
                                          f"iterations {it2} and {it} of an nl.affine_range loop both write "
                                          f"`{t.name or 'tile'}`[{where}] (tensor {fmt_shape(t.shape)} in {t.buffer}, "
                                          "created outside the loop): affine_range iterations must be independent",
                                          "index the write with the loop variable so each iteration writes its own "
                                          "part, allocate the buffer inside the loop, or use nl.sequential_range for "
                                          "a loop-carried dependency")
            cur = rec.get(it)
            if cur is None:
                rec[it] = [box, [box]]
            else:
                cur[0] = tuple((min(a[0], b[0]), max(a[1], b[1])) for a, b in zip(cur[0], box))
                cur[1].append(box)

    def forget_loop(self, uid: int) -> None:
        self.affine_writes.pop(uid, None)

    def _write_access(self, r: Region, idx: int, deps: set[int] | None = None) -> set[int]:
        """Record a write of region ``r`` by instruction ``idx``; add the indices of earlier overlapping
        accesses to ``deps`` (a new set if None) and return it. Earlier accesses the write covers entirely are
        dropped from the per-allocation lists (later accesses overlapping them overlap this write too)."""
        aid = r.alloc_id
        p0 = r.partition_start
        p1 = p0 + r.partitions
        b0 = r.byte_start
        b1 = r.byte_stop
        if deps is None:
            deps = set()
        wtab = self.writes
        rtab = self.reads
        for table in (wtab, rtab):
            lst = table.get(aid)
            if not lst:
                continue
            if len(lst) == 1:   # the common case (e.g. a PSUM tile's last matmul): no list rebuilt
                e = lst[0]
                if e[0] < p1 and p0 < e[1] and e[2] < b1 and b0 < e[3]:
                    deps.add(e[4])
                    if p0 <= e[0] and e[1] <= p1 and b0 <= e[2] and e[3] <= b1:
                        lst.clear()
                continue
            keep = None
            for i, e in enumerate(lst):
                if e[0] < p1 and p0 < e[1] and e[2] < b1 and b0 < e[3]:
                    deps.add(e[4])
                    if p0 <= e[0] and e[1] <= p1 and b0 <= e[2] and e[3] <= b1:
                        if keep is None:
                            keep = lst[:i]
                        continue
                if keep is not None:
                    keep.append(e)
            if keep is not None:
                table[aid] = keep
        wl = wtab.get(aid)
        if wl is None:
            wtab[aid] = [(p0, p1, b0, b1, idx)]
        else:
            wl.append((p0, p1, b0, b1, idx))
        rec = self.allocs[aid]
        if rec.first_use < 0:
            rec.first_use = idx
        rec.last_use = idx
        return deps

    def retarget_last_write(self, temp: Tensor, dst: View, rmw: bool = False) -> None:
        """Make the last instruction (which wrote ``temp``) write ``dst`` instead (``dst[...] = op(...)``)."""
        ins = self.instructions[-1]
        dt_ = dst.tensor
        if not dt_.live:
            self.check_live(dt_)
        if dt_.kind == "input" and not dt_.mutable:
            raise KernelError("err_cannot_update_immutable_parameter",
                              f"cannot write kernel input `{dt_.name}`{fmt_shape(dt_.shape)}: kernel inputs are "
                              "immutable",
                              "allocate an output with nl.ndarray(..., buffer=nl.shared_hbm) and return it")
        dt_.written = True
        op = dst._op
        if op is None or dt_.alias is not None:
            op = self.operand(dst)
        if self.n_affine and not rmw and dt_.depth < len(self.loops) and not _rmw(op, ins.reads):
            self.check_affine_write(dst)
        iidx = ins.index
        r = op.region
        raid = r.alloc_id
        if self.writes.get(raid) is None and self.reads.get(raid) is None:
            # first access of a fresh allocation (``buf = nl.ndarray(...); buf[...] = op(...)``): no dependencies
            self.writes[raid] = [(r.partition_start, r.partition_start + r.partitions, r.byte_start, r.byte_stop,
                                  iidx)]
            rec = self.allocs[raid]
            if rec.first_use < 0:
                rec.first_use = iidx
            rec.last_use = iidx
            extra = None
        else:
            extra = self._write_access(r, iidx)
            extra.discard(iidx)
        # drop the temp's own write record
        taid = temp.alloc_id
        wl = self.writes.get(taid)
        if wl:
            if len(wl) == 1:
                if wl[0][4] == iidx:
                    self.writes[taid] = []
            else:
                self.writes[taid] = [e for e in wl if e[4] != iidx]
        rec = self.allocs[taid]
        if rec.first_use == iidx:
            rec.first_use = rec.last_use = -1
        writes = ins.writes
        if len(writes) == 1:
            if writes[0].region.alloc_id == taid:
                ins.writes = (op,)
        else:
            ins.writes = tuple(op if w.region.alloc_id == taid else w for w in writes)
        if extra:
            ins.deps = tuple(sorted(extra.union(ins.deps)))
        temp.alias = dst
        self.release(temp)
        temp.live = True  # still readable (through its alias) but holds no capacity

    def trace(self) -> Trace:
        if self.peak_pending >= 0:
            self.peak_pending = -1
        for aid, place in self.placements.items():
            self.allocs[aid].placement = place
        # the records the tracer kept up to date, of the allocations an instruction used (and all kernel I/O)
        allocs = [a for a in self.allocs if a.first_use >= 0 or a.is_kernel_io]
        return Trace(self.kernel_name, self.target, self.instructions, allocs, self.grid, self.numerics,
                     self.peak_sbuf_bytes, self.peak_psum_banks, self.lnc, dict(self.directives),
                     tuple(self.uninitialized_reads))


def _box_overlap(a, b) -> bool:
    for x, y in zip(a, b):
        if x[0] > y[1] or y[0] > x[1]:
            return False
    return True


def _rmw(op: Operand, reads) -> bool:
    """True if the instruction also reads the region it writes (an accumulation)."""
    r = op.region
    for o in reads:
        q = o.region
        if q.alloc_id == r.alloc_id and q.byte_start < r.byte_stop and r.byte_start < q.byte_stop and \
                q.partition_start < r.partition_start + r.partitions and \
                r.partition_start < q.partition_start + q.partitions:
            return True
    return False


# ---------------------------------------------------------------------------- data helpers

def as_view(x) -> View | Broadcast:
    if isinstance(x, Tensor):
        return x.full_view()
    return x


def _index_arrays(v: View) -> tuple:
    """Broadcast int index arrays (one per tensor dim) of shape v.shape."""
    if v.adv is not None:
        return tuple(np.broadcast_to(a.values(), v.shape) if not isinstance(a, int) else a for a in v.adv)
    out = []
    vd = 0
    nd = len(v.shape)
    for r in v.ranges:
        if r[0] == "i":
            out.append(r[1])
        else:
            shp = [1] * nd
            shp[vd] = r[3]
            out.append(np.broadcast_to((r[1] + r[2] * np.arange(r[3])).reshape(shp), v.shape))
            vd += 1
    return tuple(out)


def _in_bounds(v: View) -> bool:
    return all(0 <= lo and hi < s for (lo, hi), s in zip(v.dim_bounds(), v.tensor.shape))


def read(x, mask: np.ndarray | None = None, *, raw: bool = False) -> np.ndarray:
    """Values of a view as float32 (or raw storage if ``raw``); masked-off elements may be garbage."""
    if isinstance(x, Broadcast):
        return np.broadcast_to(read(x.view, raw=raw), x.shape)
    t = x.tensor
    data = t.data
    if mask is not None and not _in_bounds(x):
        out = np.full(x.shape, np.nan, dtype=np.float32 if not raw else data.dtype)
        idx = _index_arrays(x)
        sel = tuple(i[mask] if isinstance(i, np.ndarray) else i for i in idx)
        out[mask] = data[sel]
        return out
    vals = data[x.npkey()]
    if raw:
        return vals
    if vals.dtype == np.float32:
        return vals
    if t.dtype_name in dt.PACKED:
        raise KernelError("err_unsupported_dtype",
                          f"`{t.name}` holds MX 4-packed {t.dtype_name} words; only nisa.nc_matmul_mx, "
                          "nisa.quantize_mx and DMA copies can use them",
                          "keep MX data for nc_matmul_mx; compute on the unquantised (bf16/fp32) tile instead")
    return vals.astype(np.float32)


def write(v: View, values: np.ndarray, mask: np.ndarray | None = None) -> None:
    """Store ``values`` (any float/int array broadcastable to v.shape) into view ``v`` with the tensor's
    dtype rounding; only where ``mask`` is true."""
    t = v.tensor
    vals = dt.cast(np.asarray(values), t.dtype_name) if not isinstance(values, np.ndarray) or \
        values.dtype != t.data.dtype else values
    if t.dtype_name == "tfloat32":
        vals = dt.cast(np.asarray(values, dtype=np.float32), "tfloat32")
    if mask is None:
        t.data[v.npkey()] = vals
        return
    vals = np.broadcast_to(vals, v.shape)
    if _in_bounds(v):
        key = v.npkey()
        t.data[key] = np.where(mask, vals, t.data[key])
        return
    idx = _index_arrays(v)
    sel = tuple(i[mask] if isinstance(i, np.ndarray) else i for i in idx)
    t.data[sel] = vals[mask]


def check_assign_shape(dst: View, shape, api: str) -> None:
    ds = tuple(dst.shape)
    shape = tuple(shape)
    if ds == shape:
        return
    if ds and shape and ds[0] == shape[0] and math.prod(ds) == math.prod(shape) and len(ds) != len(shape):
        return  # same elements per partition, e.g. a [P, 1] value into a [P] column view
    if len(shape) <= len(ds):
        padded = (1,) * (len(ds) - len(shape)) + shape
        if all(a == b or a == 1 for a, b in zip(padded, ds)):
            return
        if math.prod(ds) == math.prod(shape) and ds[0] == shape[0]:
            return  # same elements per partition in a different free-dim shape
    if math.prod(ds) < math.prod(shape):
        raise KernelError("err_store_dst_shape_smaller_than_other_shape",
                          f"Illegal assignment destination shape in 'a = b': shape {fmt_shape(ds)} of parameter 'a' is "
                          f"smaller than other parameter shapes b{fmt_shape(shape)}.",
                          "make the destination the same shape as the value (or index the value down to it)")
    raise KernelError("err_shape_mismatch",
                      f"the value {fmt_shape(shape)} does not fill the destination {fmt_shape(ds)} in '{api}' "
                      "(only size-1 dimensions broadcast)",
                      "index the destination down to the value's shape, e.g. out[0:128, 0:256]")
