"""Tensors, views (tiles) and index expressions of the kernel language.

* :class:`Tensor` is one allocation (an HBM kernel input/output, or an SBUF/PSUM buffer).
* :class:`View` is an access to part of a tensor (what NKI calls a tile when the partition dim
  comes first). Every API takes views; a tensor is its own full view.
* :class:`IndexExpr` is an affine index expression built from ``nl.arange`` / ``nl.mgrid``
  (e.g. ``i * 128 + nl.arange(128)[:, None]``); comparisons of them give :class:`Mask`.

Indexing follows NKI (SDK-legacy ``programming_model.rst``): basic indexing (ints, slices) gives
views; advanced indexing with arange/mgrid expressions broadcasts like numpy advanced indexing;
mixing slices with arange expressions in one subscript is an error. Out-of-bound index ranges
raise ``err_tensor_access_out_of_bound`` unless masked off.
"""
from __future__ import annotations

import math
import operator
import warnings
from typing import Any

import numpy as np

from trnsim.nki import dtypes as dt
from trnsim.nki.dtypes import dtype_name as _dtype_name
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.tensor_api import Indirect, NkiTensorMethods, affine_pattern

BUFFERS = ("sbuf", "psum", "hbm")


class ParDim(int):
    """``nl.par_dim(n)``: marks the partition dimension in an on-chip tensor shape."""

    def __repr__(self) -> str:
        return f"par_dim({int(self)})"


class DynSlice:
    """``nl.ds(start, size)``: a slice of ``size`` elements from ``start``."""
    __slots__ = ("start", "size", "step")

    def __init__(self, start: int, size: int, step: int = 1):
        try:
            self.start, self.size, self.step = operator.index(start), operator.index(size), operator.index(step)
        except TypeError:
            raise KernelError("err_unsupported_index", f"nl.ds({start!r}, {size!r}, {step!r}): start, size and step "
                              "must be integers", "pass ints (use // for integer division)") from None
        if self.step == 0 or self.size < 0:
            raise KernelError("err_invalid_slice", f"nl.ds({start}, {size}, {step}): "
                              + ("the step cannot be 0" if self.step == 0 else "the size cannot be negative"),
                              "pass nl.ds(start, size) or a non-zero step and a size >= 0")


# ----------------------------------------------------------------------------------- index exprs

class IndexExpr:
    """Affine index expression. Simple form: ``start + step * j`` along broadcast axis ``axis`` of
    an ``ndim``-dimensional grid (``size`` values); otherwise a general int64 array."""
    __slots__ = ("ndim", "axis", "start", "step", "size", "_arr")

    def __init__(self, ndim: int, axis: int | None, start: int = 0, step: int = 1, size: int = 1,
                 arr: np.ndarray | None = None):
        self.ndim, self.axis, self.start, self.step, self.size = ndim, axis, start, step, size
        self._arr = arr

    @property
    def simple(self) -> bool:
        return self._arr is None

    @property
    def shape(self) -> tuple[int, ...]:
        if self._arr is not None:
            return self._arr.shape
        return tuple(self.size if k == self.axis else 1 for k in range(self.ndim))

    def values(self) -> np.ndarray:
        if self._arr is not None:
            return self._arr
        v = self.start + self.step * np.arange(self.size, dtype=np.int64)
        return v.reshape(self.shape)

    def minmax(self) -> tuple[int, int]:
        if self._arr is not None:
            return int(self._arr.min()), int(self._arr.max())
        last = self.start + self.step * (self.size - 1)
        return (min(self.start, last), max(self.start, last))

    # -- reshaping a 1-D arange with [:, None] / [None, :]
    def __getitem__(self, key) -> "IndexExpr":
        if not isinstance(key, tuple):
            key = (key,)
        if self.ndim != 1 or not self.simple:
            raise KernelError("err_unsupported_index_expression",
                              "only a 1-D nl.arange can be reshaped with [:, None] / [None, :]",
                              "build multi-dimensional index grids with nl.mgrid")
        axis, n = None, 0
        for k in key:
            if k is None:
                n += 1
            elif isinstance(k, slice) and k == slice(None):
                axis = n
                n += 1
            else:
                raise KernelError("err_unsupported_index_expression",
                                  f"unsupported subscript {k!r} on an nl.arange expression",
                                  "use [:, None] for a partition index and [None, :] for a free index")
        if axis is None:
            raise KernelError("err_unsupported_index_expression", "subscript must keep the arange axis (':')",
                              "use [:, None] or [None, :]")
        return IndexExpr(n, axis, self.start, self.step, self.size)

    def _general(self, arr) -> "IndexExpr":
        arr = np.asarray(arr, dtype=np.int64)
        return IndexExpr(arr.ndim, None, arr=arr)

    def __add__(self, other):
        if isinstance(other, (int, np.integer)):
            if self.simple:
                return IndexExpr(self.ndim, self.axis, self.start + int(other), self.step, self.size)
            return self._general(self._arr + int(other))
        if isinstance(other, IndexExpr):
            return self._general(_bcast_add(self.values(), other.values()))
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, (int, np.integer)):
            return self + (-int(other))
        if isinstance(other, IndexExpr):
            return self._general(_bcast_add(self.values(), -other.values()))
        return NotImplemented

    def __rsub__(self, other):
        return (self * -1) + other

    def __mul__(self, other):
        if isinstance(other, (int, np.integer)):
            c = int(other)
            if self.simple:
                return IndexExpr(self.ndim, self.axis, self.start * c, self.step * c, self.size)
            return self._general(self._arr * c)
        if isinstance(other, IndexExpr):
            raise KernelError("err_unsupported_index_expression",
                              "the product of two arange expressions is not affine",
                              "index expressions must be affine: const + sum(coef * arange)")
        return NotImplemented

    __rmul__ = __mul__

    def __neg__(self):
        return self * -1

    def __floordiv__(self, other):
        if isinstance(other, (int, np.integer)):
            return self._general(self.values() // int(other))
        return NotImplemented

    def __mod__(self, other):
        if isinstance(other, (int, np.integer)):
            return self._general(self.values() % int(other))
        return NotImplemented

    def _cmp(self, other, fn) -> "Mask":
        o = other.values() if isinstance(other, IndexExpr) else other
        if not isinstance(o, (int, np.integer, np.ndarray)):
            return NotImplemented
        return Mask(fn(self.values(), o))

    def __lt__(self, o):
        return self._cmp(o, np.less)

    def __le__(self, o):
        return self._cmp(o, np.less_equal)

    def __gt__(self, o):
        return self._cmp(o, np.greater)

    def __ge__(self, o):
        return self._cmp(o, np.greater_equal)

    def __eq__(self, o):  # type: ignore[override]
        return self._cmp(o, np.equal)

    def __ne__(self, o):  # type: ignore[override]
        return self._cmp(o, np.not_equal)

    __hash__ = object.__hash__

    def __bool__(self):
        raise KernelError("err_control_flow_condition_depending_on_arange",
                          "control flow cannot depend on nl.arange / nl.mgrid values",
                          "use a mask= predicate instead of if/while on index expressions")

    def __repr__(self) -> str:
        return f"IndexExpr(shape={self.shape})"


def _bcast_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.ndim != b.ndim:
        raise KernelError("err_unsupported_index_expression",
                          f"combining index expressions of different rank ({a.ndim} vs {b.ndim})",
                          "build all index expressions of one access from the same nl.mgrid or with the "
                          "same number of dimensions")
    return a + b


class Mask:
    """A compile-time execution predicate (``mask=``) over index expressions."""
    __slots__ = ("arr",)

    def __init__(self, arr: np.ndarray):
        self.arr = np.asarray(arr, dtype=bool)

    def __and__(self, other: "Mask") -> "Mask":
        if isinstance(other, (bool, np.bool_)):
            return Mask(self.arr & bool(other))
        return Mask(np.logical_and(self.arr, other.arr))

    __rand__ = __and__

    def __or__(self, other: "Mask") -> "Mask":
        if isinstance(other, (bool, np.bool_)):
            return Mask(self.arr | bool(other))
        return Mask(np.logical_or(self.arr, other.arr))

    __ror__ = __or__

    def __invert__(self) -> "Mask":
        return Mask(~self.arr)

    def __bool__(self):
        raise KernelError("err_control_flow_condition_depending_on_arange",
                          "control flow cannot depend on a comparison of nl.arange / nl.mgrid values (it has no single "
                          "truth value)",
                          "pass the predicate as mask=..., and combine predicates with & and | (not 'and'/'or')")


def mask_array(mask: Any, shape: tuple[int, ...]) -> np.ndarray | None:
    """Broadcast a ``mask=`` argument to ``shape`` (None = all true)."""
    if mask is None or mask is True:
        return None
    if not DIALECT.beta1:
        raise _beta1_only("mask=", "slice the tiles to the valid region instead (x[0:n, 0:m]); mask= was removed in "
                          "NKI 0.2")
    if isinstance(mask, Mask):
        arr = mask.arr
    elif isinstance(mask, (bool, np.bool_)):
        arr = np.asarray(bool(mask))
    else:
        raise KernelError("err_unsupported_expression_in_mask",
                          f"mask must be a comparison of affine index expressions, got {type(mask).__name__}",
                          "build masks like (i * 128 + nl.arange(128)[:, None] < n)")
    if arr.ndim < len(shape):
        arr = arr.reshape(arr.shape + (1,) * (len(shape) - arr.ndim))
    try:
        out = np.broadcast_to(arr, shape)
    except ValueError:
        raise KernelError("err_unsupported_expression_in_mask",
                          f"mask of shape {fmt_shape(arr.shape)} does not broadcast to the tile {fmt_shape(shape)}",
                          "build the mask from the same index expressions as the access") from None
    if out.all():
        return None
    return out


class MGrid:
    """``nl.mgrid[0:128, 0:512]``: index grids with ``.p`` (partition) and ``.x``, ``.y``, ... (free)."""

    def __getitem__(self, key) -> "GridIndex":
        if not isinstance(key, tuple):
            key = (key,)
        n = len(key)
        exprs = []
        for axis, s in enumerate(key):
            if not isinstance(s, slice):
                raise KernelError("err_unsupported_index_expression", "nl.mgrid takes slices like 0:128",
                                  "write nl.mgrid[0:128, 0:512]")
            start = 0 if s.start is None else int(s.start)
            step = 1 if s.step is None else int(s.step)
            size = len(range(start, int(s.stop), step))
            exprs.append(IndexExpr(n, axis, start, step, size))
        return GridIndex(exprs)


class GridIndex(tuple):
    """Tuple of index expressions from ``nl.mgrid`` with named access ``.p``, ``.x``, ``.y``, ``.z``."""

    @property
    def p(self) -> IndexExpr:
        return self[0]

    @property
    def x(self) -> IndexExpr:
        return self[1]

    @property
    def y(self) -> IndexExpr:
        return self[2]

    @property
    def z(self) -> IndexExpr:
        return self[3]


# ------------------------------------------------------------------------------------- tensors

_LAYOUTS: dict = {}


def _layout(shape: tuple, pdim: int, hbm: bool):
    """(strides in elements, elements per partition, partitions, full ranges, partition-first) of a tensor."""
    acc = 1
    st = [0] * len(shape)
    if hbm:
        for k in range(len(shape) - 1, -1, -1):
            st[k] = acc
            acc *= shape[k]
        parts = 1
    else:
        for k in range(len(shape) - 1, -1, -1):
            if k != pdim:
                st[k] = acc
                acc *= shape[k]
        parts = shape[pdim] if shape else 1
    full = tuple(("r", 0, 1, s) for s in shape)
    lay = (tuple(st), acc, parts, full, hbm or pdim == 0)
    if len(_LAYOUTS) < 4096:
        _LAYOUTS[(shape, pdim, hbm)] = lay
    return lay


class Tensor(NkiTensorMethods):
    """One allocation. ``shape`` in elements; ``pdim`` is the partition dimension of on-chip tensors."""
    depth = 0   # number of NKI loops enclosing the tensor's creation
    # per-instance state with class-level defaults (tracing creates many tensors; set only when changed)
    live = True
    freed_line: str | None = None
    parked = None           # NKI 0.6: live-record of a tensor whose loop iteration ended (see Context.recharge)
    acc = None              # PSUM: bool array, True where a matmul accumulation group is open (numerics)
    mutable = True
    _full_op = None         # cached trace Operand of the full view
    _ops = None             # cached trace Operands of basic sub-views, by ranges
    alias = None            # View this temp tile was retargeted into (see language.assign)
    written = False
    mm_open = False         # PSUM: a matmul accumulation group is open (numerics=False tracking)
    psum_other_value = False   # PSUM: last written by a non-matmul instruction with a value a matmul would add to
    root = None             # the tensor a reshaped HBM tensor views
    _full_geom = None       # (partition_start, partitions, byte_start, byte_stop, contiguous_bytes) of the full view
    _geoms = None           # the same for basic sub-views, by ranges: one dict shared by every tensor of a tile spec

    def __init__(self, ctx, shape, dtype_name: str, buffer: str, name: str = "", *, pdim: int = 0,
                 data: np.ndarray | None = None, kind: str = "local", alloc_id: int | None = None):
        self.ctx = ctx
        self.shape = shape = tuple(map(int, shape))
        self.dtype_name = dtype_name
        self.itemsize = isz = dt.itemsize(dtype_name)
        self.buffer = buffer
        self.name = name
        self.pdim = pdim
        self.data = data
        self.kind = kind                # "input" | "output" | "shared" | "private" | "local"
        self.alloc_id = alloc_id
        hbm = buffer == "hbm"
        lay = _LAYOUTS.get((shape, pdim, hbm))
        if lay is None:
            lay = _layout(shape, pdim, hbm)
        self._strides, elems, self.partitions, self._full_ranges, self._pfirst_full = lay
        self.bytes_per_partition = elems * isz

    # numpy-like metadata
    @property
    def dtype(self):
        return dt.dtype_object(self.dtype_name)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def tensor(self) -> "Tensor":
        return self

    def full_view(self) -> "View":
        v = _new_view(View)
        v.tensor = self
        v.ranges = self._full_ranges
        v.adv = None
        v.shape = self.shape
        v._npkey = None
        v._op = None
        v._reg = None
        v.pfirst = self._pfirst_full
        v.ap_run = None
        v.runtime_index = None
        return v

    def __del__(self):
        ctx = self.ctx
        if ctx is not None and self.buffer != "hbm" and self.root is None:
            try:
                if self.live:
                    ctx.release(self)
                # no instruction can access this on-chip allocation any more (views and reshapes of it hold the
                # tensor): its dependency records are dropped, which keeps the tracer's tables small
                aid = self.alloc_id
                ctx.writes.pop(aid, None)
                ctx.reads.pop(aid, None)
            except Exception:  # never raise from a finalizer
                pass

    def __getitem__(self, key) -> "View":
        if key is Ellipsis:
            return self.full_view()
        if type(key) is tuple and len(key) == len(self.shape):
            # same result as _index's fast path, without the full view; NKI 0.6 integer indices take _index's
            # path on chip (they keep dims there) and on HBM when every dim is an integer (the result is >= 1-D)
            v = _fast_view(self, key, DIALECT.beta1)
            if v is not None:
                return v
        return self.full_view()[key]

    def __setitem__(self, key, value) -> None:
        if key is Ellipsis:
            _rt().assign(self.full_view(), value)
            return
        self.full_view().__setitem__(key, value)

    def reshape(self, shape) -> "Tensor":
        """Reshape an HBM tensor (same memory, new shape)."""
        return self.full_view().reshape(shape)

    def __repr__(self) -> str:
        return f"Tensor({self.name or '<tile>'}: {fmt_shape(self.shape)} {self.dtype_name} in {self.buffer})"

    def __getattr__(self, item):
        # tile-level methods / operators live on View
        if item.startswith("__"):
            raise AttributeError(item)
        return getattr(self.full_view(), item)

    def __len__(self) -> int:
        return self.shape[0]

    def __iter__(self):
        raise TypeError("NKI tensors are not iterable; index them with nl.arange / slices")

    def __array__(self, *a, **k):
        raise KernelError("err_tensor_to_numpy", f"cannot convert kernel tensor {self!r} to numpy inside a kernel",
                          "use NKI ops on tiles; kernel outputs come back as numpy from simulate_kernel")


_new_view = object.__new__


class ApOffsetWarning(RuntimeWarning):
    """``.ap(offset=N)`` on a view that does not start at element 0: the NKI 0.6 reference gives two readings
    (the ``NkiTensor.ap`` docstring composes N with the view's offset, the nki-aps deep-dive ignores the view's
    offset); trnsim takes the deep-dive's and says so."""


ApOffsetWarning.__module__ = "trnsim.nki"


class _Dialect:
    """Which language generation the running kernel uses (set by the runtime for each launch): Beta 1 index
    expressions (``nl.arange`` / ``nl.mgrid``) and ``mask=`` predicates exist only in ``beta1``."""
    beta1 = True


DIALECT = _Dialect()


def _beta1_only(what: str, current_form: str) -> KernelError:
    return KernelError("err_removed_api", f"{what} is NKI Beta 1 (neuronxcc.nki); this kernel runs as NKI 0.6",
                       f"{current_form}; or run Beta 1 code with import trnsim.neuronxcc.nki as nki")


class _Hooks:
    """Operations of tensors that belong to higher layers (assignment, ``+=``, arithmetic operators).

    This module (the bottom layer) never imports them: :mod:`trnsim.nki.language` fills the slots when
    it is imported (``assign``, ``augmented``, and ``ops``, the ``nl`` namespace used by ``a + b``)."""
    assign = None
    augmented = None
    ops = None


HOOKS = _Hooks()


def _rt() -> _Hooks:
    if HOOKS.assign is None:
        raise RuntimeError("trnsim.nki.language is not imported: tile assignment and operators need it")
    return HOOKS


def _ap_contiguous_run(pairs: list[tuple[int, int]]) -> int:
    """Elements in the innermost contiguous run of an access pattern ``[[step, num], ...]`` (the first pair is
    the partition access and never part of a run): inner pairs merge while each step equals the run so far,
    e.g. ``[[P, 128], [1, 512]]`` is 512 and ``[[P, 128], [64, 8], [1, 64]]`` is 512 too."""
    run = 1
    for step, num in reversed(pairs[1:]):
        if num == 1:
            continue
        if step != run:
            break
        run *= num
    return run


def _is_tile(x) -> bool:
    return isinstance(x, (Tensor, View))


def _check_indirect_args(v: "View", scalar_offset, vector_offset, indirect_dim) -> None:
    """The reference's rules for runtime offsets in ``.ap()`` (nki-aps.rst, nki.isa dma_copy)."""
    t = v.tensor
    if scalar_offset is not None and vector_offset is not None:
        raise KernelError("err_invalid_access_pattern", ".ap() got both scalar_offset= and vector_offset=: they are "
                          "mutually exclusive", "pass one of them")
    if v.runtime_index is not None:
        raise KernelError("err_invalid_access_pattern", f"{v!r} already uses a runtime index: indirect views cannot "
                          "be re-indirected (check t.is_indirect())", "index the base tensor once")
    if isinstance(indirect_dim, bool) or not isinstance(indirect_dim, (int, np.integer)) or \
            not 0 <= int(indirect_dim) < len(t.shape):
        raise KernelError("err_invalid_axis", f"indirect_dim={indirect_dim!r} of .ap() on tensor "
                          f"{fmt_shape(t.shape)}: it names a dimension of the base tensor",
                          f"pass an int in 0..{len(t.shape) - 1}")
    if vector_offset is not None:
        if int(indirect_dim) != 0:
            raise KernelError("err_invalid_access_pattern", f"vector_offset with indirect_dim={indirect_dim}: only "
                              "indirect_dim=0 is supported", "pass indirect_dim=0 (index rows of the tensor)")
        if t.buffer != "hbm":
            raise KernelError("err_unsupported_memory", f"vector_offset indexes an HBM tensor; `{t.name or 'tile'}`"
                              f"{fmt_shape(t.shape)} is in {t.buffer}",
                              "gather rows of an HBM tensor with dma_copy, or use nisa.nc_n_gather / local_gather "
                              "on-chip")
    if t.buffer != "hbm" and int(indirect_dim) == t.pdim:
        raise KernelError("err_partition_dim_must_be_first", f"a runtime offset on the partition dimension of the "
                          f"on-chip tensor {fmt_shape(t.shape)}: partitions are addressed statically",
                          "index a free dimension (indirect_dim >= 1), or gather rows from HBM with dma_copy")


def _index_tile(x, what: str, shape_ok, want: str) -> "View":
    v = x.full_view() if isinstance(x, Tensor) else x
    if not isinstance(v, View) or v.tensor.buffer != "sbuf" or dt.is_float(v.tensor.dtype_name) or \
            not shape_ok(tuple(v.shape)):
        got = (f"{fmt_shape(v.shape)} {v.tensor.dtype_name} in {v.tensor.buffer}" if isinstance(v, View)
               else type(x).__name__)
        raise KernelError("err_invalid_index", f"{what} must be {want}; got {got}",
                          "load the indices into an nl.int32 / nl.uint32 SBUF tile (nisa.dma_copy or nisa.iota)")
    return v


def _index_values(v: "View") -> np.ndarray | None:
    data = v.tensor.data
    if data is None:
        return None
    return np.asarray(data[v.npkey()]).astype(np.int64).reshape(-1)


def _add_runtime_offset(t: Tensor, flat: np.ndarray, size: int, scalar_offset, vector_offset,
                        indirect_dim: int) -> tuple[np.ndarray, "Indirect"]:
    """Add the runtime offset to the flat element indices ``flat`` (first axis = the access's first dimension):
    ``offset * prod(t.shape[indirect_dim + 1:])`` for a scalar, ``offsets[p] * row_size`` per row for a vector
    (nki-aps.rst). Rows whose addresses leave the tensor keep their static address and are listed in the record."""
    stride = 1
    for s_ in t.shape[int(indirect_dim) + 1:]:
        stride *= s_
    rows = flat.shape[0]
    index = None
    if vector_offset is not None:
        index = _index_tile(vector_offset, "vector_offset", lambda sh: len(sh) == 2,
                            "an SBUF integer tile of shape (P, 1), one row index per partition")
        pi, ncol = index.shape
        if (ncol == 1 and pi != rows) or (ncol > 1 and pi * ncol < rows):
            raise KernelError("err_shape_mismatch", f"vector_offset {fmt_shape(index.shape)} gives {pi * ncol} row "
                              f"indices but the access pattern's first pair counts {rows} rows",
                              f"use [[row_size, {pi}], ...] as the first pair (one row per index)")
        vals = _index_values(index)
        if vals is not None and ncol > 1:   # [P, N] indices are read column by column (dma_transpose gather)
            vals = vals.reshape(pi, ncol).T.reshape(-1)[:rows]
        kind = "vector"
        add = None if vals is None else vals * stride
    elif _is_tile(scalar_offset):
        index = _index_tile(scalar_offset, "scalar_offset", lambda sh: math.prod(sh) == 1,
                            "an SBUF integer tile of shape (1, 1) or a register from nisa.register_alloc")
        vals = _index_values(index)
        kind = "scalar"
        add = None if vals is None else np.full(rows, int(vals[0]) * stride, dtype=np.int64)
    elif isinstance(scalar_offset, (int, np.integer)) and not isinstance(scalar_offset, bool):
        # a loop value (nl.fori_loop / dynamic_range bodies receive the iteration value, a register on hardware)
        vals = np.array([int(scalar_offset)], dtype=np.int64)
        kind = "scalar"
        add = np.full(rows, int(vals[0]) * stride, dtype=np.int64)
    else:
        if not hasattr(scalar_offset, "_value"):
            raise KernelError("err_invalid_index", f"scalar_offset must be a (1, 1) SBUF integer tile or a register, "
                              f"got {type(scalar_offset).__name__}", "pass a tile or nisa.register_alloc(...)")
        # a register's value: None while unknown (loaded from memory in a timing-only trace); reading an
        # uninitialised register raises err_register_uninitialized (VirtualRegister.value)
        vals = None if scalar_offset._value is None else np.array([int(scalar_offset.value)], dtype=np.int64)
        kind = "scalar"
        add = None if vals is None else np.full(rows, int(vals[0]) * stride, dtype=np.int64)
    oob: tuple[int, ...] = ()
    if add is not None:
        moved = flat + add.reshape((rows,) + (1,) * (flat.ndim - 1))
        axes = tuple(range(1, flat.ndim))
        bad = ((moved < 0) | (moved >= size)).any(axis=axes) if axes else (moved < 0) | (moved >= size)
        oob = tuple(int(r) for r in np.flatnonzero(bad))
        flat = np.where(bad.reshape((rows,) + (1,) * (flat.ndim - 1)), flat, moved)
    return flat, Indirect(kind, index, int(indirect_dim), None if vals is None else tuple(int(x) for x in vals), oob)


class View(NkiTensorMethods):
    """An access to part of a tensor.

    ``ranges`` (basic form) has one entry per tensor dim: ``("i", k)`` integer index, or
    ``("r", start, step, count)`` range. ``adv`` (advanced form) is a tuple with one entry per
    tensor dim: int or IndexExpr, giving a result of the broadcast shape.
    """
    __slots__ = ("tensor", "ranges", "adv", "shape", "_npkey", "_op", "_reg", "pfirst", "ap_run", "runtime_index",
                 "inb")

    def __init__(self, tensor: Tensor, ranges, adv):
        self.tensor = tensor
        self.ranges = ranges
        self.adv = adv
        self._op = None
        self._reg = None
        self.ap_run = None    # elements per contiguous run of a .ap() access (set by View.ap)
        self.runtime_index = None  # an Indirect record for runtime-indexed accesses (.ap(scalar_offset= / vector_offset=))
        if adv is None:
            self.shape = tuple(r[3] for r in ranges if r[0] == "r")
            self._npkey = None
            if tensor.buffer != "hbm":
                # the partition dim must be the first non-integer dim
                self.pfirst = True
                for k, r in enumerate(ranges):
                    if r[0] == "r":
                        self.pfirst = (k == tensor.pdim)
                        break
            else:
                self.pfirst = True
        else:
            shapes = [a.shape for a in adv if isinstance(a, IndexExpr)]
            try:
                self.shape = tuple(int(s) for s in np.broadcast_shapes(*shapes))
            except ValueError:
                raise KernelError("err_unsupported_index_expression",
                                  "index expressions do not broadcast together: "
                                  + ", ".join(fmt_shape(s) for s in shapes),
                                  "use nl.arange(n)[:, None] for the partition axis and [None, :] for free axes"
                                  ) from None
            self._npkey = tuple(a.values() if isinstance(a, IndexExpr) else a for a in adv)
            self.pfirst = True

    # ---------------------------------------------------------------- metadata
    @property
    def dtype(self):
        return dt.dtype_object(self.tensor.dtype_name)

    @property
    def dtype_name(self) -> str:
        return self.tensor.dtype_name

    @property
    def buffer(self) -> str:
        return self.tensor.buffer

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def name(self) -> str:
        return self.tensor.name

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        t = self.tensor
        return f"View({t.name or '<tile>'}{fmt_shape(self.shape)} {t.dtype_name} in {t.buffer})"

    def npkey(self):
        k = self._npkey
        if k is None:
            k = tuple(r[1] if r[0] == "i" else _slice_of(r) for r in self.ranges)
            self._npkey = k
        return k

    def is_full(self) -> bool:
        return self.ranges is self.tensor._full_ranges

    # per-tensor-dim (min, max) of indices touched
    def dim_bounds(self) -> list[tuple[int, int]]:
        if self.adv is None:
            out = []
            for r in self.ranges:
                if r[0] == "i":
                    out.append((r[1], r[1]))
                else:
                    last = r[1] + r[2] * (r[3] - 1)
                    out.append((min(r[1], last), max(r[1], last)))
            return out
        out = []
        for a in self.adv:
            if isinstance(a, IndexExpr):
                out.append(a.minmax())
            else:
                out.append((a, a))
        return out

    def region(self) -> tuple[int, int, int, int]:
        """(partition_start, partitions, byte_start, byte_stop) touched by this view."""
        reg = self._reg
        if reg is not None:
            return reg
        t = self.tensor
        if self.adv is None:
            lo = hi = 0
            p0 = p1 = 0
            pd = t.pdim if t.buffer != "hbm" else -1
            strides = t._strides
            for k, r in enumerate(self.ranges):
                if r[0] == "i":
                    a = b = r[1]
                else:
                    if r[3] == 0:
                        self._reg = (0, 0, 0, 0)
                        return self._reg
                    a = r[1]
                    b = a + r[2] * (r[3] - 1)
                    if b < a:
                        a, b = b, a
                if k == pd:
                    p0, p1 = a, b
                st = strides[k]
                lo += st * a
                hi += st * b
        else:
            b_ = self.dim_bounds()
            if 0 in self.shape:
                self._reg = (0, 0, 0, 0)
                return self._reg
            lo = sum(s * x[0] for s, x in zip(t._strides, b_))
            hi = sum(s * x[1] for s, x in zip(t._strides, b_))
            p0, p1 = b_[t.pdim] if t.buffer != "hbm" else (0, 0)
        isz = t.itemsize
        if t.buffer == "hbm":
            reg = (0, 1, lo * isz, (hi + 1) * isz)
        else:
            reg = (p0, p1 - p0 + 1, lo * isz, (hi + 1) * isz)
        self._reg = reg
        return reg

    def contiguous_bytes(self) -> int:
        """Bytes of the innermost contiguous run per partition (row for HBM tiles)."""
        t = self.tensor
        if self.adv is not None:
            if self.ap_run is not None:
                return self.ap_run * t.itemsize
            last = self.adv[-1]
            if isinstance(last, IndexExpr) and last.simple and last.step == 1 and last.axis == last.ndim - 1:
                return last.size * t.itemsize
            return t.itemsize
        run = t.itemsize
        skip = t.pdim if t.buffer != "hbm" else -1
        nd = len(self.ranges)
        for k in range(nd - 1, -1, -1):
            if k == skip:
                continue
            r = self.ranges[k]
            if t.buffer == "hbm" and k == _first_range_dim(self.ranges):
                break  # the first tile dim of an HBM access maps to partitions
            if r[0] == "i":
                continue
            if r[2] != 1 and r[3] > 1:
                break
            run *= r[3]
            if r[3] != t.shape[k]:
                break
        return run

    # ---------------------------------------------------------------- indexing
    def __getitem__(self, key) -> "View":
        if self.adv is not None:
            if DIALECT.beta1 or self.runtime_index is not None:
                raise KernelError("err_unsupported_index_expression",
                                  f"cannot index the advanced-indexed access {self!r} again",
                                  "index the tensor once with all its index expressions")
            return _index_reordered(self, key)   # NKI 0.6: a permute / rearrange view sliced further
        return _index(self, key)

    def __setitem__(self, key, value) -> None:
        dst = self if (key is Ellipsis or (isinstance(key, slice) and key == slice(None)
                                           and len(self.shape) == 1)) else self[key]
        HOOKS.assign(dst, value)

    def offset_elements(self) -> int:
        """Flat (row-major) element offset of this view's first element in its tensor."""
        t = self.tensor
        if self.adv is not None:
            idx = []
            for a in self.adv:
                if isinstance(a, IndexExpr):
                    vals = a.values()
                    idx.append(int(vals.flat[0]) if vals.size else 0)
                else:
                    idx.append(int(a))
        else:
            idx = [r[1] for r in self.ranges]
        # row-major over the tensor's shape, without a bounds check: an empty view (x[:, 8:8]) starts one past
        # the end of its dimension, and still has an offset
        off, stride = 0, 1
        for i, n in zip(reversed(idx), reversed(t.shape)):
            off += i * stride
            stride *= n
        return int(off)

    def ap(self, pattern, offset: int | None = None, scalar_offset=None, vector_offset=None, indirect_dim: int = 0,
           dtype=None) -> "View":
        """NKI access pattern (nki-aps.rst): the elements ``flat[offset + sum(step_k * i_k)]`` of the tensor
        flattened row-major, for ``i_k < num_k`` of ``pattern = [[step_0, num_0], [step_1, num_1], ...]``; the
        result has shape ``(num_0, num_1, ...)``. ``offset`` (elements) defaults to this view's own offset.
        On SBUF/PSUM the first pair is the partition access and its step must be the tensor's free size."""
        t = self.tensor
        dynamic = scalar_offset is not None or vector_offset is not None
        if dynamic:
            _check_indirect_args(self, scalar_offset, vector_offset, indirect_dim)
        if dtype is not None and _dtype_name(dtype) != t.dtype_name:
            own = self.offset_elements() * t.itemsize
            t = _reinterpret(t, _dtype_name(dtype))
            if offset is None:
                if own % t.itemsize:
                    raise KernelError("err_invalid_access_pattern",
                                      f".ap(dtype={t.dtype_name}) on a view starting at byte {own}, which is not a "
                                      f"multiple of {t.itemsize} (the new element size)",
                                      "pass offset= in elements of the new dtype")
                offset = own // t.itemsize
        try:
            pairs = [(int(p[0]), int(p[1])) for p in pattern]
        except (TypeError, ValueError, IndexError):
            raise KernelError("err_invalid_access_pattern",
                              f"access pattern {pattern!r} is not a list of [step, num] pairs",
                              "write .ap([[partition_step, partitions], [step, num], ...], offset=...)") from None
        if not pairs or any(n < 1 for _, n in pairs):
            raise KernelError("err_invalid_access_pattern", f"access pattern {pairs} needs pairs with num >= 1",
                              "every [step, num] must count at least one element")
        base = self.offset_elements() if offset is None else int(offset)
        if offset is not None and not DIALECT.beta1 and self.offset_elements() != 0:
            own = self.offset_elements()
            warnings.warn(ApOffsetWarning(
                f".ap(offset={int(offset)}) on a view that starts at element {own} of its tensor: the NKI 0.6 "
                "reference disagrees on what this means (the NkiTensor.ap docstring adds offset= to the view's own "
                f"offset, giving {own + int(offset)}; the nki-aps deep-dive says .ap ignores the view's offset, "
                f"giving {int(offset)}). trnsim follows the deep-dive and reads from element {int(offset)}. To be "
                "unambiguous on both, call .ap on the whole tensor with the absolute offset, or leave offset= unset "
                "to keep the view's own."), stacklevel=2)
        size = 1
        for s_ in t.shape:
            size *= s_
        if t.buffer != "hbm" and len(t.shape) > 1:
            free = size // t.shape[0]
            if pairs[0][0] != free and pairs[0][1] > 1:
                raise KernelError("err_invalid_access_pattern",
                                  f"the partition step of access pattern {pairs} on {t.buffer} tensor "
                                  f"{fmt_shape(t.shape)} is {pairs[0][0]}, but partitions must be read contiguously: "
                                  f"the step must be the tensor's free size {free}",
                                  f"use [[{free}, partitions], ...] as the first pair")
        if dynamic and vector_offset is not None:
            # vector indirection: the partition pair's step is replaced by the base tensor's row size (nki-aps.rst)
            pairs = [(0, pairs[0][1])] + pairs[1:]
        flat = np.full([n for _, n in pairs], base, dtype=np.int64)
        for k, (step, n) in enumerate(pairs):
            shp = [1] * len(pairs)
            shp[k] = n
            flat = flat + (step * np.arange(n, dtype=np.int64)).reshape(shp)
        lo, hi = int(flat.min()), int(flat.max())
        if lo < 0 or hi >= size:
            raise KernelError("err_tensor_access_out_of_bound",
                              f"access pattern {pairs} with offset {base} reads elements {lo}..{hi} of tensor "
                              f"`{t.name or 'tile'}`{fmt_shape(t.shape)} ({size} elements)"
                              + (" before the runtime offset is added" if dynamic else ""),
                              "shrink the pattern's counts or the offset")
        ind = None
        if dynamic:
            flat, ind = _add_runtime_offset(t, flat, size, scalar_offset, vector_offset, indirect_dim)
            if ind.oob_rows and t.buffer != "hbm":   # only DMAs have an out-of-bounds mode; on-chip it is an error
                raise KernelError("err_tensor_access_out_of_bound",
                                  f"the runtime offset moves access pattern {pairs} outside on-chip tensor "
                                  f"`{t.name or 'tile'}`{fmt_shape(t.shape)}: {ind.describe()}",
                                  "keep the index within the tensor's dimension")
        idx = np.unravel_index(flat, t.shape)
        view = View(t, None, tuple(IndexExpr(a.ndim, None, arr=a) for a in idx))
        view.ap_run = _ap_contiguous_run(pairs)
        view.runtime_index = ind
        return view

    def _tensor_indices(self) -> list[np.ndarray]:
        """One int64 array of ``self.shape`` per tensor dimension: the tensor index of every element of this view."""
        if self.adv is not None:
            return [np.broadcast_to(a.values() if isinstance(a, IndexExpr) else np.int64(a), self.shape)
                    for a in self.adv]
        parts, vd, nd = [], 0, len(self.shape)
        for r in self.ranges:
            if r[0] == "i":
                parts.append(np.full(self.shape, r[1], dtype=np.int64))
                continue
            shp = [1] * nd
            shp[vd] = r[3]
            parts.append(np.broadcast_to((r[1] + r[2] * np.arange(r[3], dtype=np.int64)).reshape(shp), self.shape))
            vd += 1
        return parts

    def _element_index(self) -> np.ndarray:
        """Row-major flat index into the tensor of every element of this view (an int64 array of ``self.shape``)."""
        t = self.tensor
        parts = self._tensor_indices()
        return np.ravel_multi_index(tuple(parts), t.shape) if t.shape else np.zeros(self.shape, np.int64)

    def _reordered(self, flat: np.ndarray, keep_index: bool) -> "View":
        """A view of the same tensor reading the elements ``flat`` (flat indices, the new view's shape)."""
        t = self.tensor
        idx = np.unravel_index(flat, t.shape)
        view = View(t, None, tuple(IndexExpr(a.ndim, None, arr=np.ascontiguousarray(a)) for a in idx))
        if flat.size == 0:   # an empty view: no contiguous run
            view.ap_run = 0
        else:
            rows = flat.reshape(flat.shape[0], -1)[0] if flat.ndim > 1 else flat[:1]
            steps = np.diff(rows)
            view.ap_run = int(np.argmax(steps != 1) + 1) if (steps != 1).any() else int(rows.size)
        view.runtime_index = self.runtime_index if keep_index else None
        return view

    def permute(self, dims) -> "View":
        """The same elements with the dimensions reordered: result dim ``k`` is this view's dim ``dims[k]`` (no copy).
        On-chip tensors (and views with a per-partition runtime index) keep dim 0 first."""
        try:
            dims = tuple(operator.index(d) for d in dims)
        except TypeError:
            raise KernelError("err_invalid_axis", f"permute needs a tuple of ints, got {dims!r}",
                              "pass a permutation of range(ndim), e.g. (0, 2, 1)") from None
        nd = len(self.shape)
        if sorted(dims) != list(range(nd)):
            raise KernelError("err_invalid_axis", f"permute({dims}) of the {nd}-D view {fmt_shape(self.shape)}: not a "
                              f"permutation of {tuple(range(nd))}", "list every dimension exactly once")
        if dims and dims[0] != 0 and (self.tensor.buffer != "hbm" or self.runtime_index is not None):
            raise KernelError("err_partition_dim_must_be_first",
                              f"permute({dims}) of {fmt_shape(self.shape)} moves dim 0 of "
                              + ("an on-chip tensor (the partition dimension)" if self.tensor.buffer != "hbm"
                                 else "a view with a per-partition runtime index"),
                              "keep 0 first: permute((0, ...))")
        view = _permuted_affine(self, dims)
        if view is not None:
            return view
        return self._reordered(np.transpose(self._element_index(), dims), keep_index=True)

    def rearrange(self, src_pattern, dst_pattern, fixed_sizes: dict | None = None) -> "View":
        """einops-style split / reorder / merge of dimensions in one view (no copy): ``src_pattern`` names this
        view's dims (a tuple of names splits a dim), ``dst_pattern`` orders the names (a tuple merges them);
        ``fixed_sizes`` gives split sizes (one per group may be inferred). On-chip the first dim stays first."""
        fixed = dict(fixed_sizes or {})
        src = [tuple(e) if isinstance(e, (tuple, list)) else (e,) for e in src_pattern]
        dst = [tuple(e) if isinstance(e, (tuple, list)) else (e,) for e in dst_pattern]
        where = f"rearrange({tuple(src_pattern)!r}, {tuple(dst_pattern)!r}) of {fmt_shape(self.shape)}"
        if self.runtime_index is not None:
            raise KernelError("err_unsupported_view", f"{where}: the view has a runtime index",
                              "rearrange the tensor first, then index it")
        if len(src) != len(self.shape):
            raise KernelError("err_invalid_axis", f"{where}: the source pattern names {len(src)} dims, the view has "
                              f"{len(self.shape)}", "name every dimension of the view once")
        names = [n for grp in src for n in grp]
        if len(set(names)) != len(names) or sorted(names) != sorted(n for grp in dst for n in grp):
            raise KernelError("err_invalid_axis", f"{where}: the source and destination must use the same names, "
                              "each once", "list each dimension name once on both sides")
        sizes: dict = {}
        for grp, size in zip(src, self.shape):
            known = [fixed[n] for n in grp if n in fixed]
            unknown = [n for n in grp if n not in fixed]
            prod = math.prod(int(k) for k in known)
            if len(unknown) > 1 or (len(grp) == 1 and not unknown and prod != size):
                raise KernelError("err_unsupported_reshape", f"{where}: sizes of {grp} cannot be inferred from "
                                  f"{size}", "give all but one size of each split group in fixed_sizes")
            for n in grp:
                if n in fixed:
                    sizes[n] = int(fixed[n])
            if unknown:
                if prod <= 0 or size % prod:
                    raise KernelError("err_unsupported_reshape", f"{where}: {size} does not split into {grp} with "
                                      f"{fixed}", "pick split sizes that divide the dimension")
                sizes[unknown[0]] = size // prod
            if math.prod(sizes[n] for n in grp) != size:
                raise KernelError("err_unsupported_reshape", f"{where}: the sizes of {grp} multiply to "
                                  f"{math.prod(sizes[n] for n in grp)}, not {size}", "fix fixed_sizes")
        if self.tensor.buffer != "hbm" and (len(src[0]) != 1 or dst[0] != src[0]):
            raise KernelError("err_partition_dim_must_be_first", f"{where}: on-chip the partition dim stays first and "
                              "whole", f"start both patterns with {src[0][0]!r}")
        order = [names.index(n) for grp in dst for n in grp]
        if len(names) == len(src) == len(dst):   # a pure reorder (no split, no merge) is a permute
            view = _permuted_affine(self, tuple(order))
            if view is not None:
                return view
        flat = self._element_index().reshape([sizes[n] for n in names])
        flat = np.transpose(flat, order).reshape([math.prod(sizes[n] for n in grp) for grp in dst])
        return self._reordered(flat, keep_index=False)

    def reshape(self, shape) -> Tensor:
        """The same memory with a new shape (element count checked, NKI 0.5+). HBM tensors reshape freely; an
        on-chip tile keeps its partition dimension and reshapes its free dimensions."""
        t = self.tensor
        try:
            shape = tuple(operator.index(s) for s in ((shape,) if isinstance(shape, (int, np.integer)) else shape))
        except (TypeError, ValueError):
            raise KernelError("err_unsupported_reshape", f"reshape needs a tuple of ints, got {shape!r}",
                              "pass the new shape as a tuple, e.g. t.reshape((128, 1024))") from None
        if not self.is_full():
            return self._reshape_view(shape)
        if any(s < 1 for s in shape) or int(np.prod(shape)) != int(np.prod(t.shape)):
            raise KernelError("err_unsupported_reshape",
                              f"cannot reshape {fmt_shape(t.shape)} into {fmt_shape(shape)}",
                              "the element count must stay the same")
        if t.buffer != "hbm" and (shape[0] != t.shape[t.pdim] or t.pdim != 0):
            raise KernelError("err_unsupported_reshape",
                              f"reshaping on-chip tile {fmt_shape(t.shape)} into {fmt_shape(shape)} changes its "
                              f"partition dimension ({t.shape[t.pdim]} partitions)",
                              "keep the first dimension and reshape only the free dimensions")
        new = Tensor(t.ctx, shape, t.dtype_name, t.buffer, t.name, kind=t.kind, alloc_id=t.alloc_id,
                     data=None if t.data is None else t.data.reshape(shape))
        new.acc = None if t.acc is None else t.acc.reshape(shape)
        new.mutable = t.mutable
        new.depth = t.depth
        new.root = t.root if t.root is not None else t
        return new

    def _reshape_view(self, shape: tuple, api: str = "reshape") -> "View":
        """NKI 0.6 ``reshape`` of a part of a tensor (a slice, a permute): a view of the same elements in row-major
        order with the new shape. The layout must allow it (nki.language NkiTensor.reshape: "Fails if the current
        memory layout is incompatible with the requested shape"): the result must still be an affine access
        pattern, e.g. ``t[:, 2:4, :]`` of a [128, 8, 4] tile reshapes to [128, 8], ``t[:, :, 0:2]`` does not."""
        t = self.tensor
        if DIALECT.beta1 or self.runtime_index is not None:
            raise KernelError("err_unsupported_reshape",
                              f"{api} of the partial access {self!r}: only whole tensors can be reshaped"
                              + (" (a runtime-indexed view)" if self.runtime_index is not None else ""),
                              "reshape the whole tensor, then index the result")
        where = f"{api} of {fmt_shape(self.shape)} (a part of {t.name or 'tensor'}{fmt_shape(t.shape)}) into " \
                f"{fmt_shape(shape)}"
        if any(s < 1 for s in shape) or math.prod(shape) != math.prod(self.shape):
            raise KernelError("err_unsupported_reshape", f"{where}: the element count must stay the same",
                              f"use a shape of {math.prod(self.shape)} elements")
        if t.buffer != "hbm" and (not self.pfirst or not shape or shape[0] != self.shape[0]):
            raise KernelError("err_unsupported_reshape", f"{where} changes the partition dimension "
                              f"({self.shape[0] if self.shape else 0} partitions)",
                              "keep the first dimension and reshape only the free dimensions")
        new = self._reordered(self._element_index().reshape(shape), keep_index=False)
        if affine_pattern(new) is None:
            raise KernelError("err_unsupported_reshape", f"{where}: the layout of this access is incompatible with "
                              "the new shape (its elements do not form a strided pattern of that shape, as after a "
                              "non-contiguous slice or a permute)",
                              "copy it into a contiguous tile first (nisa.tensor_copy), or reshape the whole tensor "
                              "and index the result")
        return new

    def broadcast_to(self, shape) -> "Broadcast":
        return Broadcast(self, tuple(int(s) for s in shape))

    # ---------------------------------------------------------------- operator sugar
    def _nl(self):
        return _rt().ops

    def __add__(self, o):
        return self._nl().add(self, o)

    def __radd__(self, o):
        return self._nl().add(o, self)

    def __sub__(self, o):
        return self._nl().subtract(self, o)

    def __rsub__(self, o):
        return self._nl().subtract(o, self)

    def __mul__(self, o):
        return self._nl().multiply(self, o)

    def __rmul__(self, o):
        return self._nl().multiply(o, self)

    def __truediv__(self, o):
        return self._nl().divide(self, o)

    def __rtruediv__(self, o):
        return self._nl().divide(o, self)

    def __pow__(self, o):
        return self._nl().power(self, o)

    def __neg__(self):
        return self._nl().negative(self)

    def __lt__(self, o):
        return self._nl().less(self, o)

    def __le__(self, o):
        return self._nl().less_equal(self, o)

    def __gt__(self, o):
        return self._nl().greater(self, o)

    def __ge__(self, o):
        return self._nl().greater_equal(self, o)

    def __iadd__(self, o):
        return _rt().augmented(self, o, "add")

    def __isub__(self, o):
        return _rt().augmented(self, o, "subtract")

    def __imul__(self, o):
        return _rt().augmented(self, o, "multiply")

    def __bool__(self):
        t = getattr(self, "tensor", self)
        if getattr(t, "buffer", None) == "hbm":
            # an HBM tensor is a handle to memory: ``if bias:`` tests that an optional kernel argument was passed
            # (not None), as the official examples do; the data is never read at trace time
            return True
        raise KernelError("err_ambiguous_tensor_truth_value",
                          f"the truth value of tile {self!r} is ambiguous (control flow cannot depend on tile data)",
                          "use a mask= predicate, nl.where, or a data-independent loop")

    def __iter__(self):
        raise TypeError("NKI tiles are not iterable; index them with nl.arange / slices")

    def __array__(self, *a, **k):
        raise KernelError("err_tensor_to_numpy", f"cannot convert kernel tile {self!r} to numpy inside a kernel",
                          "use NKI ops on tiles; kernel outputs come back as numpy from simulate_kernel")


# Tensor operators delegate to the full view

def _reinterpret(t: "Tensor", name: str) -> "Tensor":
    """The bytes of tensor ``t`` seen as dtype ``name`` (``.ap(dtype=...)``): the same allocation, flattened
    to elements of the new size (HBM: [n]; on-chip: [partitions, n] per partition)."""
    isz = dt.itemsize(name)
    onchip = t.buffer != "hbm" and len(t.shape) > 1
    nbytes = t.bytes_per_partition if onchip else int(np.prod(t.shape)) * t.itemsize
    if t.pdim != 0 or nbytes % isz:
        raise KernelError("err_invalid_access_pattern",
                          f".ap(dtype={name}) reinterprets `{t.name or 'tile'}`{fmt_shape(t.shape)} {t.dtype_name}: "
                          f"its {nbytes} bytes{' per partition' if onchip else ''} are not a whole number of "
                          f"{isz}-byte {name} elements",
                          f"reinterpret a tensor whose size{' per partition' if onchip else ''} is a multiple of "
                          f"{isz} bytes")
    shape = (t.shape[0], nbytes // isz) if onchip else (nbytes // isz,)
    data = None
    if t.data is not None:
        dt.require_exact_bits(".ap(dtype=...)", t.dtype_name, name)
        data = np.ascontiguousarray(t.data)
        if data is not t.data:   # the view must share the tensor's memory (writes through it are real writes)
            t.data = data
        data = data.view(np.uint8).reshape(shape[:-1] + (-1,)).view(dt.storage_dtype(name)).reshape(shape)
    new = Tensor(t.ctx, shape, name, t.buffer, t.name, kind=t.kind, alloc_id=t.alloc_id, data=data)
    new.mutable = t.mutable
    new.depth = t.depth
    new.root = t.root if t.root is not None else t
    new.written = t.written
    return new


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
              "__rtruediv__", "__pow__", "__neg__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__"):
    setattr(Tensor, _name, (lambda n: lambda self, *a: getattr(self.full_view(), n)(*a))(_name))


def _taug(op):
    def f(self, o):
        _rt().augmented(self.full_view(), o, op)
        return self
    return f


Tensor.__iadd__ = _taug("add")
Tensor.__isub__ = _taug("subtract")
Tensor.__imul__ = _taug("multiply")


class Broadcast:
    """``tile.broadcast_to(shape)``: a read-only access whose size-1 dims are broadcast."""

    def __init__(self, view: View, shape: tuple[int, ...]):
        if len(shape) != len(view.shape) or any(a != b and a != 1 for a, b in zip(view.shape, shape)):
            raise KernelError("err_invalid_broadcast",
                              f"cannot broadcast tile {fmt_shape(view.shape)} to {fmt_shape(shape)}",
                              "only dimensions of size 1 can be broadcast")
        self.view = view
        self.shape = shape

    @property
    def dtype(self):
        return self.view.dtype

    @property
    def tensor(self):
        return self.view.tensor

    # NkiTensor queries: a broadcast dimension repeats one element (stride 0)
    @property
    def buffer(self) -> str:
        return self.view.buffer

    @property
    def name(self) -> str:
        return self.view.name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def offset(self) -> int:
        return self.view.offset

    @property
    def strides(self) -> tuple:
        return tuple(0 if n != m else st for st, n, m in zip(self.view.strides, self.shape, self.view.shape))

    def get_pattern(self) -> list[list[int]]:
        return [[int(st), int(n)] for st, n in zip(self.strides, self.shape)]

    def is_contiguous(self) -> bool:
        return self.view.is_contiguous() and all(n == m for n, m in zip(self.shape, self.view.shape))

    def is_indirect(self) -> bool:
        return False

    def as_access(self) -> "View":
        """The same elements as an index-expression access with stride 0 along the broadcast dimensions, the form
        ``.ap()`` builds: NKI 0.6 implements ``broadcast`` on top of ``.ap()`` (nki-aps.rst), so a DMA reads a
        broadcast view as it reads the equivalent stride-0 access pattern."""
        v = self.view
        if getattr(v, "runtime_index", None) is not None:
            # the rows of a runtime-indexed (indirect) access are known only when the DMA runs; repeating them
            # would need the indirection carried through, which trnsim does not do
            raise KernelError("err_unsupported_view", f"a broadcast {fmt_shape(self.shape)} of a runtime-indexed "
                              f"(indirect) access {fmt_shape(v.shape)} as a DMA source",
                              "gather the rows into an SBUF tile first (dma_copy of the indirect access), then "
                              "broadcast the tile")
        idx = [np.ascontiguousarray(np.broadcast_to(a, self.shape)) for a in v._tensor_indices()]
        out = View(v.tensor, None, tuple(IndexExpr(len(self.shape), None, arr=a) for a in idx))
        try:
            out.ap_run = _ap_contiguous_run([(int(st), int(n)) for st, n in self.get_pattern()])
        except KernelError:   # index-expression rows that are not an affine pattern: runs of one element
            out.ap_run = 1
        return out

    _VIEW_OPS = frozenset({"reshape", "permute", "slice", "select", "vector_select", "expand_dim", "squeeze_dim",
                           "reshape_dim", "flatten_dims", "view", "reinterpret_cast", "ap", "broadcast", "rearrange",
                           "indirect", "transpose"})

    def __getattr__(self, name: str):
        if name in Broadcast._VIEW_OPS:
            raise KernelError("err_unsupported_view", f"{name}() of a broadcast view {fmt_shape(self.shape)} (of "
                              f"{fmt_shape(self.view.shape)}): trnsim reshapes and slices tensors before broadcasting",
                              "apply the view to the tile first, then broadcast the result")
        raise AttributeError(f"'Broadcast' object has no attribute {name!r}")

    def __getitem__(self, key):
        raise KernelError("err_unsupported_view", f"indexing a broadcast view {fmt_shape(self.shape)}",
                          "index the tile first, then broadcast the result")


def _slice_of(r) -> slice:
    start, step, count = r[1], r[2], r[3]
    stop = start + step * count
    if step < 0 and stop < 0:
        stop = None
    return slice(start, stop, step)


def _first_range_dim(ranges) -> int:
    for k, r in enumerate(ranges):
        if r[0] == "r":
            return k
    return -1


def _oob(t: Tensor, dim: int, lo: int, hi: int, size: int) -> KernelError:
    if DIALECT.beta1 and t.buffer == "hbm":   # the running kernel's dialect (set by the runtime for each launch)
        fix = "shrink the index range, or mask the ragged last tile with mask=(index < size)"
    elif DIALECT.beta1:
        # an on-chip read may leave its tile only where the instruction's mask is false
        fix = (f"index inside the tile (its dimension {dim} has {size} elements), or pass the instruction a mask= "
               "that is false wherever the index leaves it (element-wise instructions, reductions and bn_stats "
               "honour it; matmuls do not: give their ragged last chunk its own, smaller nl.arange)")
    else:   # NKI 0.6 has no masks (removed in 0.2): the last tile's slice stops at the tensor's end
        fix = (f"shrink the index range: clip the ragged last tile's slice with min(), "
               f"lo : min(lo + tile, {size})")
    if t.name or t.buffer != "hbm":
        what = f"tensor `{t.name or 'tile'}`"
    else:   # an unnamed HBM tensor is one the kernel made with nl.ndarray, usually its output
        what = f"the HBM tensor {fmt_shape(t.shape)} made in the kernel"
    return KernelError("err_tensor_access_out_of_bound",
                       f"Out-of-bound access for {what} on dimension {dim}: "
                       f"index range [{lo}, {hi}] exceed dimension size of {size}", fix)


def _fast_view(t: Tensor, key: tuple, any_ints: bool = True) -> View | None:
    """The View of ``t[key]`` for the common subscript of a whole tensor by ints and unit-step slices, built in
    one pass (None if the key is not that). It is inside the tensor by construction (``inb``). ``any_ints``
    False: None when an integer index needs the general path (on chip any, on HBM all dims integers)."""
    if len(key) == 2:
        # the most common subscript (x[a:b, c:d], x[:, c:d]) unrolled: no per-dim loop
        k0, k1 = key
        s0, s1 = t.shape
        if type(k0) is slice and type(k1) is slice and k0.step is None and k1.step is None:
            a0 = 0 if k0.start is None else k0.start
            b0 = s0 if k0.stop is None else k0.stop
            a1 = 0 if k1.start is None else k1.start
            b1 = s1 if k1.stop is None else k1.stop
            if type(a0) is int and type(b0) is int and type(a1) is int and type(b1) is int and \
                    0 <= a0 and 0 <= b0 <= s0 and 0 <= a1 and 0 <= b1 <= s1:
                n0 = b0 - a0 if b0 > a0 else 0
                n1 = b1 - a1 if b1 > a1 else 0
                return _basic_view(t, (("r", a0, 1, n0), ("r", a1, 1, n1)), (n0, n1),
                                   t.pdim == 0 or t.buffer == "hbm")
    ranges = []
    vshape = []
    first_range = -1
    for d, (k, s) in enumerate(zip(key, t.shape)):
        tk = type(k)
        if tk is slice:
            if k.step is not None and k.step != 1:
                return None
            a = 0 if k.start is None else k.start
            b = s if k.stop is None else k.stop
            if type(a) is not int or type(b) is not int or a < 0 or b < 0 or b > s:
                return None     # (a stop past the end takes the general path; fast views are in bounds)
            n = b - a if b > a else 0
            ranges.append(("r", a, 1, n))
            vshape.append(n)
            if first_range < 0:
                first_range = d
        elif tk is int:
            if not 0 <= k < s:
                return None
            ranges.append(("i", k))
        else:
            return None
    hbm = t.buffer == "hbm"
    if not any_ints and len(vshape) < len(ranges) and (not hbm or not vshape):
        return None
    if len(vshape) == 1 and len(ranges) > 1 and not hbm and DIALECT.beta1:
        return None   # Beta 1 keeps a unit free dim on chip (_beta1_keep_free_dim): the general path
    # on chip the partition dim must be the first non-integer dim (as View.__init__)
    return _basic_view(t, tuple(ranges), tuple(vshape), True if hbm or first_range < 0 else first_range == t.pdim)


def _basic_view(t: Tensor, ranges: tuple, shape: tuple, pfirst: bool) -> View:
    """A View of basic ``ranges`` inside ``t`` (what ``View(t, ranges, None)`` builds, with ``inb`` set), without
    ``View.__init__``'s per-dim derivations: the caller computed ``shape`` and ``pfirst``."""
    v = _new_view(View)
    v.tensor = t
    v.ranges = ranges
    v.adv = None
    v.shape = shape
    v._npkey = None
    v._op = None
    v._reg = None
    v.pfirst = pfirst
    v.ap_run = None
    v.runtime_index = None
    v.inb = True
    return v


def _keep_two_dims(key: tuple, shape: tuple) -> tuple:
    """NKI 0.6 on-chip indexing (``NkiTensor.__getitem__``, nki-language-guide "Tensor Indexing"): integers on
    free dims drop them, unless the result would have fewer than 2 dims; then the last integer-indexed free dim
    is kept at size 1 (``t[:, 5]`` on a [128, 64] tile is a [128, 1] view). ``key`` already has dim 0 as a
    slice. A single Ellipsis is expanded; keys with index expressions, several Ellipses or too many entries are
    returned unchanged (the general path refuses them)."""
    if any(isinstance(k, IndexExpr) for k in key):
        return key
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell == 1:
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (len(shape) - (len(key) - 1)) + key[i + 1:]
    if n_ell > 1 or len(key) > len(shape):
        return key
    ints = [j for j, k in enumerate(key) if isinstance(k, (int, np.integer)) and not isinstance(k, bool)]
    kept = len(shape) - len(ints)
    if kept >= 2 or not ints:
        return key
    j = ints[-1]
    if j == 0:
        return key
    k = int(key[j]) + (shape[j] if key[j] < 0 else 0)
    if not 0 <= k < shape[j]:
        return key   # out of range: the general path raises the bounds error
    return key[:j] + (slice(k, k + 1),) + key[j + 1:]


def _resolve_slice(k: slice, count: int, shape: tuple) -> tuple[int, int, int]:
    """(first index, step, element count) of slice ``k`` over a dimension of ``count`` elements (negative bounds
    count from the end; ``shape`` names the indexed view in errors). Bounds are not clipped: a range outside the
    dimension is reported where the access is checked."""
    try:   # integers only: a float bound is not silently truncated
        s0, s1, st = (None if x is None else operator.index(x) for x in (k.start, k.stop, k.step))
    except TypeError:
        raise KernelError("err_unsupported_index", f"slice {k.start!r}:{k.stop!r}:{k.step!r} of "
                          f"{fmt_shape(shape)} has a bound that is not an integer",
                          "write slice bounds as ints (use // for integer division)") from None
    st = 1 if st is None else st
    if st == 0:
        raise KernelError("err_invalid_slice", "slice step cannot be 0", "use a positive step")
    if st > 0:
        s0 = 0 if s0 is None else s0 + (count if s0 < 0 else 0)
        s1 = count if s1 is None else s1 + (count if s1 < 0 else 0)
        return s0, st, max(0, -(-(s1 - s0) // st))
    s0 = count - 1 if s0 is None else s0 + (count if s0 < 0 else 0)
    s1 = -1 if s1 is None else s1 + (count if s1 < 0 else 0)
    return s0, st, max(0, -(-(s0 - s1) // -st))


def _int_rules_06(key: tuple, shape: tuple, onchip: bool, pfirst: bool = True) -> tuple:
    """The NKI 0.6 integer-index rules (NkiTensor.__getitem__): on SBUF / PSUM an integer on dimension 0 keeps a
    size-1 partition dimension and the result keeps >= 2 dims (``_keep_two_dims``); on HBM integers remove
    dimensions, as in numpy, but a key of integers only keeps the last dimension (the result is at least 1-D)."""
    if onchip:
        if key and pfirst and shape:
            k0 = key[0]
            if isinstance(k0, (int, np.integer)) and not isinstance(k0, bool):
                k0 = int(k0) + (shape[0] if k0 < 0 else 0)
                if 0 <= k0 < shape[0]:
                    key = (slice(k0, k0 + 1),) + key[1:]
            key = _keep_two_dims(key, shape)
    elif len(key) == len(shape) and shape and \
            all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in key):
        k = int(key[-1]) + (shape[-1] if key[-1] < 0 else 0)
        if 0 <= k < shape[-1]:
            key = key[:-1] + (slice(k, k + 1),)
    return key


def _beta1_indirect_rows(view: View, key: tuple) -> View:
    """Beta 1 indirect DMA addressing, ``hbm[idx_tile, i_f]``: row ``p`` of the access is row ``idx_tile[p, 0]`` of
    the HBM tensor (an SBUF integer tile of shape [P, 1] gives the row of each partition), the other indices select
    the same columns of every row. Integer indices may come first (``hbm[b, idx_tile, i_f]``: the rows of batch
    ``b``); the index tile then picks along the dimension it stands at. The NKI 0.6 form is
    ``hbm.ap([[row_size, P], [1, F]], offset=..., vector_offset=idx_tile, indirect_dim=d)``; this builds the same
    runtime-indexed view, so ``oob_mode`` and ``dst_rmw_op`` apply. A row index outside that dimension is out of
    bounds (it is not allowed to reach into the next batch)."""
    t = view.tensor
    if view.ranges is not t._full_ranges or view.adv is not None:
        raise KernelError("err_unsupported_index", f"an index tile on {view!r}, a part of HBM tensor "
                          f"`{t.name or 'tensor'}`{fmt_shape(t.shape)}: indirect rows index the whole tensor",
                          f"index the tensor itself: {t.name or 'tensor'}[idx_tile, i_f]")
    d = next(k for k, x in enumerate(key) if isinstance(x, (Tensor, View)))
    lead, rest = key[:d], key[d + 1:]
    if any(isinstance(x, (Tensor, View)) for x in rest) or \
            not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in lead):
        raise KernelError("err_unsupported_index", f"an indirect access of HBM tensor {fmt_shape(t.shape)} takes one "
                          "index tile, after integer indices only (hbm[idx_tile, i_f] or hbm[b, idx_tile, i_f])",
                          "index with integers, then the [P, 1] index tile, then nl.arange / slices for the rest")
    if len(key) != len(t.shape):
        raise KernelError("err_unsupported_index", f"an indirect access of HBM tensor {fmt_shape(t.shape)} needs "
                          f"{len(t.shape)} indices (the index tile for the rows, one per other dimension), got "
                          f"{len(key)}", "write tensor[idx_tile, i_f] with i_f = nl.arange(n)[None, :]")
    rows = _index_tile(key[d], "the row index of an indirect access", lambda sh: len(sh) == 2 and sh[1] == 1,
                       "an SBUF integer tile of shape [P, 1], one row index per partition")
    first = IndexExpr(2, None, arr=np.zeros((1, 1), dtype=np.int64)) \
        if any(isinstance(k, IndexExpr) for k in rest) else slice(0, 1)
    static = _index(view, tuple(lead) + (first,) + tuple(rest))   # the columns, on row 0 (of the leading indices)
    cols = static._element_index()
    if cols.ndim < 2 or cols.shape[0] != 1:
        raise KernelError("err_unsupported_index", f"the column indices of an indirect access give the shape "
                          f"{fmt_shape(cols.shape)}; they must not depend on the partition",
                          "index the free dimensions with nl.arange(n)[None, :] (or a slice)")
    flat0 = np.broadcast_to(cols, (rows.shape[0],) + cols.shape[1:]).copy()
    flat, ind = _add_runtime_offset(t, flat0.copy(), math.prod(t.shape), None, rows, d)
    if d > 0 and ind.values is not None:
        vals = np.asarray(ind.values[:rows.shape[0]])
        bad = (vals < 0) | (vals >= t.shape[d])
        if bad.any():   # outside dimension d (still inside the tensor): addressed at the static offset, as above
            flat[bad] = flat0[bad]
            ind.oob_rows = tuple(sorted(set(ind.oob_rows) | {int(r) for r in np.flatnonzero(bad)}))
    idx = np.unravel_index(flat, t.shape)
    out = View(t, None, tuple(IndexExpr(a.ndim, None, arr=a) for a in idx))
    c = cols.reshape(-1)
    out.ap_run = int(c.size) if c.size and bool(np.all(np.diff(c) == 1)) else 1
    out.runtime_index = ind
    return out


def _index(view: View, key) -> View:
    """Resolve ``view[key]`` into a new View on the same tensor."""
    t = view.tensor
    if not isinstance(key, tuple):
        key = (key,)
    if not DIALECT.beta1:
        key = _int_rules_06(key, view.shape, t.buffer != "hbm", view.pfirst)
    elif t.buffer == "hbm" and any(isinstance(k, (Tensor, View)) for k in key):
        return _beta1_indirect_rows(view, key)
    if view.ranges is t._full_ranges and len(key) == len(t.shape):
        v = _fast_view(t, key)
        if v is not None:
            return v
    # expand Ellipsis
    if any(k is Ellipsis for k in key):
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        n_fill = len(view.shape) - (len(key) - 1)
        key = key[:i] + (slice(None),) * n_fill + key[i + 1:]
    if len(key) > len(view.shape):
        raise KernelError("err_too_many_indices",
                          f"{len(key)} indices for a tile of rank {len(view.shape)} {fmt_shape(view.shape)}",
                          "index each dimension at most once")
    has_expr = any(isinstance(k, IndexExpr) for k in key)
    if has_expr and not DIALECT.beta1:
        raise _beta1_only("indexing with nl.arange / nl.mgrid expressions",
                          "index with slices (x[i * 128:(i + 1) * 128, 0:512]) or an access pattern (x.ap(...))")
    has_slice = any(isinstance(k, (slice, DynSlice)) for k in key)
    if has_expr:
        if has_slice:
            raise KernelError("err_unsupported_mixing_basic_advanced_tensor_indexing",
                              "mixing basic (slice) and advanced (nl.arange / nl.mgrid) indexing in one subscript",
                              "use index expressions for every dimension, or slices for every dimension")
        if len(key) < len(view.shape):
            raise KernelError("err_unsupported_mixing_basic_advanced_tensor_indexing",
                              f"advanced indexing must index all {len(view.shape)} dimensions of "
                              f"{fmt_shape(view.shape)}, got {len(key)}",
                              "add an index expression for each remaining dimension")
        for k in key:
            if isinstance(k, IndexExpr) and k.ndim == 1 and k.simple and len(key) > 1:
                raise KernelError("err_1d_arange_not_supported",
                                  "1-D nl.arange used as an index of a multi-dimensional tile",
                                  "reshape it: nl.arange(n)[:, None] for the partition axis, [None, :] for free axes")
    else:
        key = key + (slice(None),) * (len(view.shape) - len(key))

    # map key entries (over view dims) onto tensor dims
    vdims = [k for k, r in enumerate(view.ranges) if r[0] == "r"]
    out: list[Any] = list(view.ranges)
    adv = False
    for vd, k in zip(vdims, key):
        r = view.ranges[vd]
        start, step, count = r[1], r[2], r[3]
        if isinstance(k, (int, np.integer)):
            k = int(k)
            if k < 0:
                k += count
            if not 0 <= k < count:
                raise _oob(t, vd, k, k, count if count != t.shape[vd] else t.shape[vd])
            out[vd] = ("i", start + step * k)
        elif isinstance(k, slice):
            s0, st, n = _resolve_slice(k, count, view.shape)
            out[vd] = ("r", start + step * s0, step * st, n)
        elif isinstance(k, DynSlice):
            if k.start < 0 or k.start + k.step * (k.size - 1) >= count:
                raise _oob(t, vd, start + step * k.start, start + step * (k.start + k.step * (k.size - 1)),
                           t.shape[vd])
            out[vd] = ("r", start + step * k.start, step * k.step, k.size)
        elif isinstance(k, IndexExpr):
            adv = True
            out[vd] = k * step + start if (step != 1 or start != 0) else k
        else:
            raise KernelError("err_unsupported_index", f"unsupported index {k!r} of type {type(k).__name__}",
                              "index with ints, slices, nl.ds(start, size), or nl.arange / nl.mgrid expressions")
    if not adv:
        ranges = tuple(out)
        if DIALECT.beta1 and t.buffer != "hbm":
            ranges = _beta1_keep_free_dim(t, ranges)
        if not DIALECT.beta1 and t.buffer != "hbm":
            r = ranges[t.pdim]
            if r[0] == "r":
                _check_partition_step(t, r[2], r[3])
        if ranges == view.ranges:
            ranges = view.ranges
            if ranges is t._full_ranges:
                return t.full_view()
        return View(t, ranges, None)
    # advanced: convert ranges of the parent that are fully specified by ints
    entries: list[Any] = []
    for r in out:
        if isinstance(r, IndexExpr):
            entries.append(r)
        elif r[0] == "i":
            entries.append(r[1])
        else:  # unreachable: all view dims were indexed
            entries.append(IndexExpr(1, 0, r[1], r[2], r[3]))
    # fast path: simple exprs on distinct increasing axes covering the grid -> basic ranges
    exprs = [e for e in entries if isinstance(e, IndexExpr)]
    nd = exprs[0].ndim
    if all(e.simple and e.ndim == nd for e in exprs) and len(exprs) == nd and \
            [e.axis for e in exprs] == list(range(nd)):
        ranges = tuple(("i", e) if not isinstance(e, IndexExpr) else ("r", e.start, e.step, e.size)
                       for e in entries)
        # bounds are checked at the API call (masks may cover out-of-range elements)
        return View(t, ranges, None)
    return View(t, None, tuple(entries))


def _beta1_keep_free_dim(t: Tensor, ranges: tuple) -> tuple:
    """Beta 1: an on-chip access is at least 2-D, [partitions, free] ("NKI expects tile indices to have at least two
    dimensions to match the underlying memory", nki.errors err_1d_arange_not_supported; the fused_mamba tutorial's
    ``scan_i[0:C, i]`` is a tile "of shape [C, 1]"). When integer indices leave only the partition dimension, the
    last integer-indexed free dimension stays, with one element: ``buf[:, 1]`` of a [128, 4] tile is [128, 1]."""
    kept = [k for k, r in enumerate(ranges) if r[0] == "r"]
    if len(kept) != 1 or kept[0] != t.pdim:
        return ranges
    free_ints = [k for k, r in enumerate(ranges) if r[0] == "i" and k > t.pdim]
    if not free_ints:
        return ranges
    k = free_ints[-1]
    out = list(ranges)
    out[k] = ("r", ranges[k][1], 1, 1)
    return tuple(out)


def _index_reordered(view: View, key) -> View:
    """``view[key]`` of a view that reads its tensor's elements in a reordered pattern (``permute`` /
    ``rearrange``; NKI 0.6 lets such a view be indexed like any tensor): the key selects from the view's own
    element grid, with the NKI 0.6 integer rules of ``_index`` (on chip an integer on dim 0 keeps a size-1
    partition dim and the result keeps >= 2 dims; on HBM the result keeps >= 1 dim). Ints, slices and
    ``nl.ds`` only; an index outside the view is err_tensor_access_out_of_bound."""
    t = view.tensor
    shape = view.shape
    if not isinstance(key, tuple):
        key = (key,)
    key = _int_rules_06(key, shape, t.buffer != "hbm")
    if any(k is Ellipsis for k in key):
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (len(shape) - (len(key) - 1)) + key[i + 1:]
    if len(key) > len(shape):
        raise KernelError("err_too_many_indices", f"{len(key)} indices for a view of rank {len(shape)} "
                          f"{fmt_shape(shape)}", "index each dimension at most once")
    key = key + (slice(None),) * (len(shape) - len(key))
    picks: list[tuple] = []   # per view dim: (i,) an integer, or (start, step, count) a range
    for d, (k, size) in enumerate(zip(key, shape)):
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            i = int(k) + (size if k < 0 else 0)
            if not 0 <= i < size:
                raise _oob(t, d, int(k), int(k), size)
            picks.append((i,))
            continue
        if isinstance(k, DynSlice):
            s0, st, n = k.start, k.step, k.size
        elif isinstance(k, slice):
            s0, st, n = _resolve_slice(k, size, shape)
        else:
            raise KernelError("err_unsupported_index", f"unsupported index {k!r} of a permuted / rearranged view "
                              f"{fmt_shape(shape)}", "index it with ints, slices or nl.ds(start, size)")
        last = s0 + st * (n - 1)
        if n and (min(s0, last) < 0 or max(s0, last) >= size):
            raise _oob(t, d, min(s0, last), max(s0, last), size)
        picks.append((s0, st, n))
    if t.buffer != "hbm" and len(picks[0]) == 3:   # on chip view dim 0 is the partition dim
        _check_partition_step(t, picks[0][1], picks[0][2])
    new_shape = tuple(p[2] for p in picks if len(p) == 3)
    entries = _affine_entries(view) if new_shape and 0 not in new_shape else None
    if entries is not None:   # symbolic, as View.permute
        new_axis = []
        axis = 0
        for p in picks:
            new_axis.append(axis)
            axis += len(p) == 3
        out: list = []
        for e in entries:
            if type(e) is not list:
                out.append(e)
                continue
            p = picks[e[0]]
            if len(p) == 1:
                out.append(e[1] + e[2] * p[0])
            else:
                out.append([new_axis[e[0]], e[1] + e[2] * p[0], e[2] * p[1], p[2]])
        return _affine_view(t, out, new_shape)
    flat = view._element_index()
    axis = 0
    for p in picks:
        if len(p) == 1:
            flat = np.take(flat, p[0], axis=axis)
            continue
        flat = np.take(flat, p[0] + p[1] * np.arange(p[2], dtype=np.int64), axis=axis)
        axis += 1
    if flat.ndim == 0:
        flat = flat.reshape(1)
    return view._reordered(flat, keep_index=False)


def _check_partition_step(t: Tensor, step: int, count: int) -> None:
    """NKI 0.6 (nki-aps.rst): on SBUF / PSUM the partitions of an access are read contiguously, so a slice of the
    partition dimension with a step other than 1 is err_invalid_access_pattern (as the same pattern through
    ``.ap()`` is)."""
    if step != 1 and count > 1:
        raise KernelError("err_invalid_access_pattern",
                          f"a slice with step {step} of the partition dimension of {t.buffer} tensor "
                          f"`{t.name or 'tile'}`{fmt_shape(t.shape)}: partitions must be accessed contiguously, in "
                          "order (step 1)",
                          "slice partitions with step 1 (x[a:b, ...]) and put the stride on a free dimension, or "
                          "move data between partitions with nisa.nc_transpose / a matmul / a DMA")


def _permuted_affine(view: View, dims: tuple) -> View | None:
    """``view.permute(dims)`` (dims already checked) held symbolically, with no per-element index arrays (a permute
    of a whole HBM input stays small); None when ``view`` has no affine form (``_affine_entries``)."""
    entries = _affine_entries(view)
    if entries is None:
        return None
    new_axis = {old: new for new, old in enumerate(dims)}
    return _affine_view(view.tensor, [[new_axis[e[0]], e[1], e[2], e[3]] if type(e) is list else e for e in entries],
                        tuple(view.shape[d] for d in dims))


def _affine_entries(view: View) -> list | None:
    """The access of ``view`` per tensor dim: an int (one index), or ``[axis, start, step, count]`` (view axis
    ``axis`` reads indices ``start + step * j``, j < count), for a basic view or for a view whose index
    expressions are all simple and on distinct axes (a permute of one); None for anything else (general index
    arrays, a runtime index, an empty view), which takes the per-element path."""
    shape = view.shape
    if view.runtime_index is not None or not shape or 0 in shape or not view.tensor.shape:
        return None
    if view.adv is None:
        out: list = []
        vd = 0
        for r in view.ranges:
            if r[0] == "i":
                out.append(r[1])
            else:
                out.append([vd, r[1], r[2], r[3]])
                vd += 1
        return out
    nd = len(shape)
    out = []
    seen = set()
    for a in view.adv:
        if isinstance(a, IndexExpr):
            if not a.simple or a.ndim != nd or a.axis in seen or a.size != shape[a.axis]:
                return None
            seen.add(a.axis)
            out.append([a.axis, a.start, a.step, a.size])
        else:
            out.append(int(a))
    return out if len(seen) == nd else None


def _affine_view(t: Tensor, entries: list, shape: tuple) -> View:
    """The reordered View of ``t`` described by ``entries`` (as ``_affine_entries``) with the given shape, in the
    form ``_reordered`` builds from index arrays (one simple IndexExpr or int per tensor dim, ``ap_run`` the
    elements of the first contiguous run of the view's first row), without materialising any index array."""
    nd = len(shape)
    view = View(t, None, tuple(IndexExpr(nd, e[0], e[1], e[2], e[3]) if type(e) is list else e for e in entries))
    # flat (row-major) element stride of each view axis; a row (view dims 1..) runs on while each next dim's stride
    # equals the elements counted so far
    row_major = [1] * len(t.shape)
    for k in range(len(t.shape) - 2, -1, -1):
        row_major[k] = row_major[k + 1] * t.shape[k + 1]
    flat_stride = [0] * nd
    for k, e in enumerate(entries):
        if type(e) is list:
            flat_stride[e[0]] += e[2] * row_major[k]
    run = 1
    for d in range(nd - 1, 0, -1):
        if shape[d] == 1:
            continue
        if flat_stride[d] != run:
            break
        run *= shape[d]
    view.ap_run = run
    view.runtime_index = None
    return view


def clamped_view(view: View) -> View:
    """``view`` with every index clamped into its tensor (same shape). For a Beta 1 read whose out-of-range elements
    are all masked off (``common._check_onchip_bounds``): their values are read from the tile's edge and never
    used."""
    t = view.tensor
    idx = tuple(np.clip(p, 0, n - 1) for p, n in zip(view._tensor_indices(), t.shape))
    return View(t, None, tuple(IndexExpr(len(view.shape), None, arr=np.ascontiguousarray(a)) for a in idx))


def check_bounds(view: View, mask: np.ndarray | None) -> None:
    """Raise err_tensor_access_out_of_bound if the (unmasked part of the) access leaves the tensor."""
    t = view.tensor
    if view.adv is None:
        if view.ranges is t._full_ranges:
            return
        for r, size in zip(view.ranges, t.shape):
            if r[0] == "i":
                if not 0 <= r[1] < size:
                    break
            elif r[3]:
                a = r[1]
                b = a + r[2] * (r[3] - 1)
                if a < 0 or b < 0 or a >= size or b >= size:
                    break
        else:
            return
        b = view.dim_bounds()
        bad = [(k, lo, hi) for k, (lo, hi) in enumerate(b) if (lo < 0 or hi >= t.shape[k]) and
               not (view.ranges[k][0] == "r" and view.ranges[k][3] == 0)]
        if not bad:
            return
        if mask is None:
            k, lo, hi = bad[0]
            raise _oob(t, k, lo, hi, t.shape[k])
        # masked: check only active elements
        vd = 0
        for k, r in enumerate(view.ranges):
            if r[0] == "i":
                if not 0 <= r[1] < t.shape[k]:
                    raise _oob(t, k, r[1], r[1], t.shape[k])
                continue
            idx = r[1] + r[2] * np.arange(r[3])
            other = tuple(a for a in range(len(view.shape)) if a != vd)
            active = mask.any(axis=other) if other else mask
            act = idx[active]
            if act.size and (act.min() < 0 or act.max() >= t.shape[k]):
                raise _oob(t, k, int(act.min()), int(act.max()), t.shape[k])
            vd += 1
        return
    for k, a in enumerate(view.adv):
        if isinstance(a, IndexExpr):
            lo, hi = a.minmax()
            if lo >= 0 and hi < t.shape[k]:
                continue
            vals = np.broadcast_to(a.values(), view.shape)
            if mask is not None:
                vals = vals[mask]
            if vals.size and (vals.min() < 0 or vals.max() >= t.shape[k]):
                raise _oob(t, k, int(vals.min()), int(vals.max()), t.shape[k])
        elif not 0 <= a < t.shape[k]:
            raise _oob(t, k, a, a, t.shape[k])
