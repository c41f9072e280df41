"""The ``NkiTensor`` query and view methods of NKI 0.6 (aws-neuron-sdk ``nki/api/nki/language``, class
``NkiTensor``), shared by :class:`~trnsim.nki.tensors.Tensor` and :class:`~trnsim.nki.tensors.View` as a base class.

Queries: ``size``, ``offset``, ``strides``, ``is_contiguous()``, ``get_pattern()``, ``is_indirect()``.
Views that select part of a tensor: ``slice``, ``select`` (a static int, or a [1, 1] index tile read at run
time), ``broadcast``. Views that re-shape a whole tensor without moving data: ``expand_dim``, ``squeeze_dim``,
``reshape_dim``, ``flatten_dims``, ``view`` / ``reinterpret_cast`` (dtype reinterpretation): the result shares
the storage and allocation of the tensor (trnsim represents it as a tensor aliasing the same allocation, so it
applies to a whole tensor, not to a slice of one). Strides are in elements; on-chip tensors have stride 0 on the
partition dimension (partitions are separate memories).

This module sits below :mod:`trnsim.nki.tensors` (which derives its classes from the mixin) and never imports it.
"""
from __future__ import annotations

import math

import numpy as np

from trnsim.nki import dtypes as dt
from trnsim.nki.rules import KernelError, fmt_shape


def _view_of(x):
    """The View of a Tensor (full view) or the View itself (following a retargeted temp to its destination)."""
    v = x.full_view() if hasattr(x, "full_view") else x
    t = v.tensor
    if t.alias is not None:
        v = t.alias
    return v


def _dim(x, dim, api: str, nd: int | None = None) -> int:
    nd = len(x.shape) if nd is None else nd
    try:
        d = int(dim)
    except (TypeError, ValueError):
        raise KernelError("err_invalid_axis", f"{api}: dim must be an int, got {dim!r}", "pass a dimension index") \
            from None
    d = d + nd if d < 0 else d
    if not 0 <= d < nd:
        raise KernelError("err_invalid_axis", f"{api}: dim {dim} out of range for a {nd}-D tensor {fmt_shape(x.shape)}",
                          f"use a dim in 0..{nd - 1}")
    return d


def _on_chip(x) -> bool:
    return x.tensor.buffer != "hbm"


def _no_partition(x, d: int, api: str) -> None:
    if _on_chip(x) and d == 0:
        raise KernelError("err_partition_dim_must_be_first",
                          f"{api} on dim 0 of the on-chip tensor {fmt_shape(x.shape)}: the partition dimension stays "
                          "first and cannot be changed by a view", "apply it to a free dimension (dim >= 1)")


class Indirect:
    """How a runtime-indexed access (``.ap(scalar_offset=...)``, ``.ap(vector_offset=...)``, ``vector_select``)
    was resolved. ``kind`` is "scalar" or "vector"; ``index`` the index tile's view (None for a register: an
    instruction reading the view also reads ``index``); ``values`` the index values read when the kernel ran
    (None in a timing-only trace, which computes no data: the access is then addressed as if every index were
    0); ``oob_rows`` the positions along the access's first dimension whose addresses fall outside the tensor
    (they are addressed at the static offset; the DMA raises or, with ``oob_mode=skip``, skips them)."""
    __slots__ = ("kind", "index", "indirect_dim", "values", "oob_rows")

    def __init__(self, kind: str, index, indirect_dim: int, values, oob_rows: tuple[int, ...]):
        self.kind = kind
        self.index = index
        self.indirect_dim = indirect_dim
        self.values = values
        self.oob_rows = oob_rows

    def describe(self) -> str:
        """One line naming the first out-of-bounds row and its index value, for error messages."""
        if not self.oob_rows:
            return "all indices in bounds"
        r = self.oob_rows[0]
        val = self.values[r] if self.kind == "vector" else self.values[0]
        where = f"partition {r} of the index tile holds {val}" if self.kind == "vector" else f"the offset is {val}"
        more = f" ({len(self.oob_rows)} rows in all)" if len(self.oob_rows) > 1 else ""
        return where + more


def _not_indirect(x, api: str) -> None:
    if getattr(x, "runtime_index", None) is not None:
        raise KernelError("err_invalid_access_pattern", f"{api} on {x!r}, which already uses a runtime index: only "
                          "one dynamic select per view (check t.is_indirect())", "index the base tensor once")


def alias_tensor(x, shape, dtype_name: str | None = None, api: str = "view"):
    """A tensor sharing the storage and allocation of the whole tensor behind ``x`` with a new shape (and dtype).
    Same bytes per partition; on-chip tensors keep their partition count. A part of a tensor (a slice, a permute)
    gets a new shape, not a new dtype, when its layout allows it (``View._reshape_view``)."""
    v = _view_of(x)
    t = v.tensor
    if (v.adv is not None or not v.is_full()) and (dtype_name is None or dtype_name == t.dtype_name):
        return v._reshape_view(tuple(int(s) for s in shape), api)   # NKI 0.6: a part of a tensor, if its layout allows
    if v.adv is not None or not v.is_full():
        raise KernelError("err_unsupported_view",
                          f"{api} of the partial access {fmt_shape(v.shape)} of {t.name or 'a tensor'}"
                          f"{fmt_shape(t.shape)}: trnsim re-shapes whole tensors",
                          f"apply {api} to the whole tensor, then slice the result")
    if t.pdim != 0 and t.buffer != "hbm":
        raise KernelError("err_unsupported_view", f"{api} of a tensor whose partition dim is {t.pdim} (a Beta 1 block "
                          "layout)", "allocate the tile with the partition dimension first")
    dname = dtype_name or t.dtype_name
    shape = tuple(int(s) for s in shape)
    new_isz = dt.itemsize(dname)
    if math.prod(shape) * new_isz != math.prod(t.shape) * t.itemsize:
        raise KernelError("err_unsupported_reshape", f"{api}: {fmt_shape(shape)} {dname} does not cover the "
                          f"{fmt_shape(t.shape)} {t.dtype_name} storage", "keep the byte count the same")
    if t.buffer != "hbm" and shape[0] != t.shape[0]:
        raise KernelError("err_partition_dim_must_be_first",
                          f"{api}: {fmt_shape(t.shape)} -> {fmt_shape(shape)} changes the partition count of an "
                          "on-chip tensor", "keep dim 0 unchanged")
    data = None
    if t.data is not None:
        data = t.data
        if dname != t.dtype_name:
            dt.require_exact_bits(api, t.dtype_name, dname)
            data = np.ascontiguousarray(data).view(dt.storage_dtype(dname))
        data = data.reshape(shape)
    new = type(t)(t.ctx if t.buffer == "hbm" else None, shape, dname, t.buffer, t.name, kind=t.kind,
                 alloc_id=t.alloc_id, data=data)
    if t.acc is not None and dname == t.dtype_name:
        new.acc = t.acc.reshape(shape)
    new.mutable = t.mutable
    new.depth = t.depth
    new.root = t.root if t.root is not None else t
    new.written = t.written
    return new


class _ViewStrides:
    """``strides`` of a tensor or view in elements, one per dimension (on-chip, the partition dim's stride is the
    storage's elements per partition; the internal byte layout, ``Tensor._strides``, keeps 0 there)."""

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return tuple(st for st, _ in _pattern(obj))


def affine_pattern(v) -> list[tuple[int, int]] | None:
    """``[(stride, count), ...]`` of a view that reads its tensor through index arrays (``permute`` /
    ``rearrange`` results), in the same element units as a basic view's pattern (on chip a partition steps by
    the storage's elements per partition); None when the elements do not form an affine pattern. A view held
    symbolically (one simple index expression per view dim: a permute) reports each dim's storage stride, size-1
    dims included; in a view held as index arrays a size-1 dimension has no observable stride and reports 0."""
    t = v.tensor
    shape = tuple(v.shape)
    if 0 in shape:
        return [(0, n) for n in shape]
    pd = t.pdim if t.buffer != "hbm" else -1
    unit = [t.bytes_per_partition // t.itemsize if k == pd else t._strides[k] for k in range(len(t.shape))]
    nd = len(shape)
    exprs = [(u, a) for u, a in zip(unit, v.adv) if not isinstance(a, (int, np.integer))]
    if len(exprs) == nd and all(getattr(a, "simple", False) and a.ndim == nd for _, a in exprs) and \
            len({a.axis for _, a in exprs}) == nd:
        strides = [0] * nd
        for u, a in exprs:
            strides[a.axis] = u * a.step
        return list(zip(strides, shape))
    offs = np.zeros(shape, dtype=np.int64)
    for u, a in zip(unit, v.adv):
        offs = offs + u * np.broadcast_to(a.values() if hasattr(a, "values") else np.int64(a), shape)
    origin = int(offs[(0,) * nd]) if nd else int(offs)
    strides = []
    expect = np.full(shape, origin, dtype=np.int64)
    for d, n in enumerate(shape):
        step = 0
        if n > 1:
            at = [0] * nd
            at[d] = 1
            step = int(offs[tuple(at)]) - origin
            expect = expect + step * np.arange(n, dtype=np.int64).reshape([n if k == d else 1 for k in range(nd)])
        strides.append(step)
    if not np.array_equal(expect, offs):
        return None
    return list(zip(strides, shape))


def _pattern(x) -> list[tuple[int, int]]:
    v = _view_of(x)
    t = v.tensor
    if v.adv is not None:
        pairs = affine_pattern(v)
        if pairs is None:
            raise KernelError("err_unsupported_view", f"access pattern of the index-expression access {v!r}: its "
                              "elements are not an affine pattern [[stride, count], ...]",
                              "query a slice of the tensor instead")
        return pairs
    out = []
    # on-chip tensors: the partition dim's stride is the storage's elements per partition (nki-language-guide:
    # "the partition stride ... must be equal to the storage's free-dim element count"); internally a
    # partition adds no byte offset, so the layout keeps 0 there
    pd = t.pdim if t.buffer != "hbm" else -1
    for k, r in enumerate(v.ranges):
        if r[0] == "r":
            st = t.bytes_per_partition // t.itemsize if k == pd else t._strides[k]
            out.append((st * r[2], r[3]))
    return out


def _part_view_as(v, dname: str, old: int, new: int):
    """``v.view(dname)`` for a slice ``v`` of a tensor (every dimension kept, positive steps, the last one
    contiguous): the same slice of the whole tensor reinterpreted as ``dname``, the last dimension's start and
    size scaled by ``old / new`` bytes. None if the slice does not have that form (the caller then refuses)."""
    t = v.tensor
    rs = v.ranges
    last = rs[-1]
    if any(r[0] != "r" or r[2] < 1 for r in rs) or (last[2] != 1 and last[3] > 1):
        return None
    if (last[1] * old) % new or (last[3] * old) % new or (t.shape[-1] * old) % new:
        return None
    whole = alias_tensor(t.full_view(), tuple(t.shape[:-1]) + (t.shape[-1] * old // new,), dname, api="view")
    key = tuple(slice(r[1], r[1] + r[2] * r[3], r[2]) for r in rs[:-1]) + \
        (slice(last[1] * old // new, (last[1] + last[3]) * old // new),)
    return whole[key]


class NkiTensorMethods:
    """Mixin with the NKI 0.6 ``NkiTensor`` queries and views (see the module docstring)."""
    __slots__ = ()

    strides = _ViewStrides()

    # ------------------------------------------------------------------ queries
    @property
    def size(self) -> int:
        """Number of elements."""
        return int(math.prod(self.shape))

    @property
    def offset(self) -> int:
        """Element offset of the view's first element (index [0, 0, ...]) in its tensor's storage, flattened row-major
        with the same strides ``get_pattern`` reports (on-chip: the partition stride is the free size), so that
        ``t.ap(pattern=v.get_pattern(), offset=v.offset)`` addresses the elements of ``v`` (nki-aps.rst). For an
        ``.ap`` view that is its ``offset`` argument, even when the pattern runs backwards or across rows."""
        return _view_of(self).offset_elements()

    def get_pattern(self) -> list[list[int]]:
        """The access pattern ``[[stride, count], ...]``, one pair per dimension (strides in elements)."""
        return [[int(s), int(c)] for s, c in _pattern(self)]

    def is_contiguous(self) -> bool:
        """True if the free dimensions (all dimensions for HBM) cover storage in row-major order."""
        pat = _pattern(self)
        if _on_chip(_view_of(self)):
            pat = pat[1:]
        expect = 1
        for st, cnt in reversed(pat):
            if cnt == 1:
                continue
            if st != expect:
                return False
            expect *= cnt
        return True

    def is_indirect(self) -> bool:
        """True for a view addressed through a runtime index (dynamic ``select``, ``vector_select``, or ``.ap`` with
        ``scalar_offset`` / ``vector_offset``); such a view cannot be indirected again."""
        return getattr(_view_of(self), "runtime_index", None) is not None

    def indirect(self, index, num_elem: int | None = None):
        """NKI 0.6 Tensor Indirection (``NkiTensor.indirect``, NeuronCore-v4 and later): not simulated by trnsim.
        The reference does not pin its semantics down: the method's docstring gathers free-dimension offsets read
        from ``index`` in a snake order whose group size depends on the consuming engine (16 or 32) and, taken
        literally, runs past the index tile for the default ``num_elem``, while the 0.5.0 release notes describe
        it as selecting partitions. A simulation would be a guess that does not transfer to the device, so the
        call is refused with the alternatives that are simulated."""
        raise KernelError("err_unsupported_feature",
                          "NkiTensor.indirect (Tensor Indirection on NeuronCore-v4) is not simulated by trnsim: the "
                          "NKI 0.6 reference describes it two incompatible ways (free-dimension offsets in a snake "
                          "order, or a selection of partitions), so a simulated answer could not be trusted",
                          "gather rows with x.vector_select(0, idx) or x.ap(pattern, vector_offset=idx, "
                          "indirect_dim=0) and nisa.dma_copy, or gather on chip with nisa.nc_n_gather / "
                          "nisa.local_gather")

    # ------------------------------------------------------------------ selecting views
    def slice(self, dim: int, start: int, end: int, step: int = 1):
        """Elements ``start:end:step`` of dimension ``dim`` (``0 <= start < end <= shape[dim]``, ``step >= 1``)."""
        v = _view_of(self)
        d = _dim(v, dim, "slice")
        start, end, step = int(start), int(end), int(step)
        if not (0 <= start < end <= v.shape[d]) or step < 1:
            raise KernelError("err_tensor_access_out_of_bound",
                              f"slice(dim={d}, start={start}, end={end}, step={step}) of {fmt_shape(v.shape)}: need "
                              f"0 <= start < end <= {v.shape[d]} and step >= 1", "pick a range inside the dimension")
        key = tuple(slice(None) if k != d else slice(start, end, step) for k in range(len(v.shape)))
        return v[key]

    def select(self, dim: int, index):
        """Remove dimension ``dim`` by taking element ``index``: an int, or a [1, 1] integer tile whose value is
        read when the kernel runs (dynamic select, not on the partition dim of an on-chip tensor; the view is
        indirect, and a timing-only trace, which computes no values, addresses it as index 0)."""
        v = _view_of(self)
        d = _dim(v, dim, "select")
        dynamic = None
        if hasattr(index, "tensor") and hasattr(index, "shape"):   # a tile
            _no_partition(v, d, "dynamic select")
            _not_indirect(v, "dynamic select")
            iv = _view_of(index) if hasattr(index, "ranges") or hasattr(index, "full_view") else None
            if iv is None or tuple(iv.shape) != (1, 1) or dt.is_float(iv.tensor.dtype_name):
                raise KernelError("err_invalid_index", f"dynamic select index must be a [1, 1] integer tile, got "
                                  f"{fmt_shape(index.shape)} {index.tensor.dtype_name}",
                                  "load the index into an nl.int32 [1, 1] SBUF tile")
            if iv.tensor.data is None:   # timing-only trace: no values; addressed as index 0 (same bytes moved)
                dynamic = (iv, None)
                index = 0
            else:
                index = int(np.asarray(iv.tensor.data[iv.npkey()]).reshape(()))
                dynamic = (iv, (index,))
        else:
            try:
                index = int(index)
            except (TypeError, ValueError):
                raise KernelError("err_invalid_index", f"select index must be an int or a [1, 1] tile, got "
                                  f"{type(index).__name__}", "pass an int") from None
            _no_partition(v, d, "select")
        if not 0 <= index < v.shape[d]:
            raise KernelError("err_tensor_access_out_of_bound", f"select(dim={d}, index={index}) of "
                              f"{fmt_shape(v.shape)}" + (" (the index tile's value when the kernel ran)" if dynamic
                                                          else ""), f"use an index in 0..{v.shape[d] - 1}")
        key = tuple(slice(None) if k != d else index for k in range(len(v.shape)))
        out = v[key]
        if dynamic is not None:
            out.runtime_index = Indirect("scalar", dynamic[0], d, dynamic[1], ())
        return out

    def vector_select(self, dim: int, vector_offset):
        """Gather rows of an HBM tensor: partition ``p`` of the result reads row ``vector_offset[p]`` (an SBUF
        integer tile of shape (P, 1)); the result has ``P`` rows (``dim`` must be 0). The view is indirect: a DMA
        reading it reads the index tile too, and rows whose index leaves the tensor are an error for
        ``dma_copy(oob_mode=error)`` and skipped with ``oob_mode=skip``."""
        v = _view_of(self)
        d = _dim(v, dim, "vector_select")
        if d != 0:
            raise KernelError("err_invalid_axis", f"vector_select(dim={dim}): only dim 0 (rows) can be selected "
                              "per partition", "pass dim=0")
        _not_indirect(v, "vector_select")
        if v.tensor.buffer != "hbm":
            raise KernelError("err_unsupported_memory", f"vector_select gathers rows of an HBM tensor; "
                              f"{fmt_shape(v.shape)} is in {v.tensor.buffer}",
                              "use nisa.nc_n_gather or nisa.local_gather to gather on-chip")
        if v.adv is not None or v.ranges[0][0] != "r" or v.ranges[0][2] != 1:
            raise KernelError("err_unsupported_view", f"vector_select on {v!r}: its first dimension must be the "
                              "tensor's rows, unstrided", "call vector_select on the tensor (or a column slice of it)")
        if not (hasattr(vector_offset, "tensor") and len(getattr(vector_offset, "shape", ())) == 2):
            raise KernelError("err_invalid_index", f"vector_offset must be an SBUF integer tile of shape (P, 1), got "
                              f"{type(vector_offset).__name__}", "load the row indices into an nl.int32 (P, 1) tile")
        rows = vector_offset.shape[0]
        pattern = [[0, int(rows)]] + [[st, n] for st, n in _pattern(v)[1:]]
        return v.ap(pattern, vector_offset=vector_offset, indirect_dim=0)   # offset: the view's own

    def broadcast(self, dim: int, size: int):
        """Repeat the size-1 dimension ``dim`` ``size`` times (a read-only broadcast access; no copy)."""
        v = _view_of(self)
        d = _dim(v, dim, "broadcast")
        _no_partition(v, d, "broadcast")
        if v.shape[d] != 1:
            raise KernelError("err_invalid_broadcast", f"broadcast(dim={d}) of {fmt_shape(v.shape)}: only a size-1 "
                              "dimension can be broadcast", "select or slice the dimension down to size 1 first")
        shape = tuple(int(size) if k == d else s for k, s in enumerate(v.shape))
        return v.broadcast_to(shape)

    # ------------------------------------------------------------------ re-shaping views (whole tensors)
    def expand_dim(self, dim: int):
        """Insert a size-1 dimension at ``dim`` (not 0 on-chip)."""
        v = _view_of(self)
        d = _dim(v, dim, "expand_dim", len(v.shape) + 1)
        _no_partition(v, d, "expand_dim")
        return alias_tensor(v, v.shape[:d] + (1,) + tuple(v.shape[d:]), api="expand_dim")

    def squeeze_dim(self, dim: int):
        """Remove the size-1 dimension ``dim`` (not 0 on-chip)."""
        v = _view_of(self)
        d = _dim(v, dim, "squeeze_dim")
        _no_partition(v, d, "squeeze_dim")
        if v.shape[d] != 1:
            raise KernelError("err_unsupported_reshape", f"squeeze_dim({d}) of {fmt_shape(v.shape)}: the dimension has "
                              f"size {v.shape[d]}, not 1", "squeeze a size-1 dimension")
        return alias_tensor(v, tuple(v.shape[:d]) + tuple(v.shape[d + 1:]), api="squeeze_dim")

    def reshape_dim(self, dim: int, shape):
        """Split dimension ``dim`` into ``shape`` (one entry may be -1)."""
        v = _view_of(self)
        d = _dim(v, dim, "reshape_dim")
        parts = [int(s) for s in shape]
        if parts.count(-1) > 1:
            raise KernelError("err_unsupported_reshape", f"reshape_dim shape {parts} has more than one -1",
                              "give at most one -1")
        if -1 in parts:
            known = math.prod(p for p in parts if p != -1)
            parts[parts.index(-1)] = v.shape[d] // known if known and v.shape[d] % known == 0 else -1
        if math.prod(parts) != v.shape[d] or any(p <= 0 for p in parts):
            raise KernelError("err_unsupported_reshape", f"reshape_dim({d}, {list(shape)}): the sizes must multiply to "
                              f"{v.shape[d]}", "split the dimension into factors of its size")
        if len(parts) != 1:
            _no_partition(v, d, "reshape_dim")
        return alias_tensor(v, tuple(v.shape[:d]) + tuple(parts) + tuple(v.shape[d + 1:]), api="reshape_dim")

    def flatten_dims(self, start_dim: int, end_dim: int):
        """Merge dimensions ``start_dim..end_dim`` (inclusive) into one (``start_dim > 0`` on-chip)."""
        v = _view_of(self)
        a, b = _dim(v, start_dim, "flatten_dims"), _dim(v, end_dim, "flatten_dims")
        if b < a:
            raise KernelError("err_invalid_axis", f"flatten_dims({start_dim}, {end_dim}): end before start",
                              "pass start_dim <= end_dim")
        _no_partition(v, a, "flatten_dims")
        merged = math.prod(v.shape[a:b + 1])
        return alias_tensor(v, tuple(v.shape[:a]) + (merged,) + tuple(v.shape[b + 1:]), api="flatten_dims")

    def view(self, dtype):
        """Reinterpret the bytes as ``dtype``: the last dimension scales by the ratio of the element sizes."""
        v = _view_of(self)
        dname = dt.dtype_name(dtype)
        old, new = v.tensor.itemsize, dt.itemsize(dname)
        last = v.shape[-1] * old
        if last % new:
            raise KernelError("err_unsupported_reshape", f"view({dname}): the last dimension holds {last} bytes, not a "
                              f"multiple of {new}", "reinterpret a last dimension whose byte size divides evenly")
        t = v.tensor
        if v.adv is None and not v.is_full() and dname != t.dtype_name:
            part = _part_view_as(v, dname, old, new)
            if part is not None:
                return part
        return alias_tensor(v, tuple(v.shape[:-1]) + (last // new,), dname, api="view")

    def reinterpret_cast(self, dtype):
        """Same as :meth:`view`."""
        return self.view(dtype)


__all__ = ["Indirect", "NkiTensorMethods", "affine_pattern", "alias_tensor"]
