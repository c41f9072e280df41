"""HBM <-> SBUF convenience wrappers: ``load``, ``store``, ``load_transpose2d`` (each one ``dma_copy``)."""
from __future__ import annotations

import builtins

import numpy as np
from weakref import ref as _weakref


from trnsim.nki.language._arguments import refuse_extras
from trnsim.nki.context import as_view, current, read, write
from trnsim.nki.isa import common as _common, dma as _dmam  # noqa: F401
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.tensors import Broadcast, Tensor, View
from trnsim.nki.tensors import check_bounds as _check_bounds
from trnsim.nki.language.compute import copy


# ----------------------------------------------------------------------------- memory

def load(src, dtype=None, *, mask=None, **kwargs) -> Tensor:
    """Load an HBM tensor region into a new SBUF tile (partition dim = first dim of the access)."""
    if mask is not None or kwargs:
        refuse_extras('load', load, mask, kwargs)
    ctx = current()
    s = as_view(src)
    if type(s) is Broadcast:
        if ctx.dialect == "beta1":
            raise KernelError("err_unsupported_memory", f"the source of 'load' is a broadcast view {fmt_shape(s.shape)}",
                              "load the tensor region itself, then broadcast the tile (tile.broadcast_to(...))")
        s = s.as_access()   # NKI 0.6: the stride-0 access pattern a broadcast view is (nki-aps.rst)
    if type(s) is not View or s.tensor.buffer != "hbm":
        if not isinstance(s, (View, Broadcast)):
            raise KernelError("err_expected_tile",
                              f"operand 'src' of 'load' must be an HBM tensor, got {type(src).__name__} "
                              f"({src!r:.60})", "pass a kernel input (or a slice of one, x[0:128, 0:512]) or an "
                              "nl.ndarray(..., buffer=nl.shared_hbm)")
        if not isinstance(s, View) or s.tensor.buffer != "hbm":
            buf = s.tensor.buffer if hasattr(s, "tensor") else type(src).__name__
            raise KernelError("err_unsupported_memory",
                              f"Expected operand 'src' of 'load' to be in address space 'hbm', but got a tile in "
                              f"'{buf}' instead.",
                              "nl.load reads kernel inputs (HBM); use nl.copy for on-chip copies")
    shape = s.shape
    if type(shape) is not tuple:
        shape = tuple(shape)
    if len(shape) < 2:
        shape = shape + (1,) if shape else (1, 1)
    st = s.tensor
    dname = _common.dtype_arg(dtype, "load") if dtype is not None else st.dtype_name
    # an unmasked load writes every element of its tile (numerics: no NaN fill needed first)
    t = ctx.new_tensor(shape, dname, "sbuf", api="load", temp=True,
                       fill="uninit" if mask is not None else "overwritten")
    if mask is None and not ctx.numerics and dname == st.dtype_name and len(s.shape) >= 2 and s.runtime_index is None:
        # timing-only, unmasked, uncast load: the same checks and record as _dmam._dma(t.full_view(), s, None,
        # "load"), without its general mask / cast / numerics handling
        if (s.adv is not None or s.ranges is not st._full_ranges) and not getattr(s, "inb", False):
            _check_bounds(s, None)   # (views the fast slicing path built are inside the tensor by construction)
        ctx.last_mask = None
        parts = shape[0]
        free = 1
        for x in shape[1:]:
            free *= x
        nbytes = parts * free * st.itemsize
        ctx.last_out_index = ctx.emit_fresh(
            "dma_copy", "dma", s, t, {"api": "load", "partitions": parts,
                                      "bytes_per_partition": nbytes // builtins.max(1, parts), "src": "hbm",
                                      "dst": "sbuf"}, 0, nbytes, free, parts)
        ctx.last_out = _weakref(t)
        ctx.last_vals = None
        return t
    _dmam._dma(t.full_view(), s, mask, "load")
    mask_written = ctx.last_mask
    _common.finish(ctx, t, None)
    ctx.last_mask = mask_written
    return t


def load_transpose2d(src, dtype=None, *, mask=None, **kwargs) -> Tensor:
    """Load a 2-D HBM region transposed (DMA transpose; slow on hardware)."""
    if mask is not None or kwargs:
        refuse_extras('load_transpose2d', load_transpose2d, mask, kwargs)
    ctx = current()
    s = as_view(src)
    if s.tensor.buffer != "hbm" or len(s.shape) != 2:
        raise KernelError("err_unsupported_memory", "load_transpose2d reads a 2-D HBM access",
                          "pass in_tensor[rows, cols] from HBM")
    F, P = s.shape
    dname = _common.dtype_arg(dtype, "load_transpose2d") if dtype is not None else s.tensor.dtype_name
    t = ctx.new_tensor((P, F), dname, "sbuf", api="load_transpose2d")
    _check_bounds(s, None)
    ctx.last_mask = None
    if ctx.numerics:
        write(t.full_view(), read(s).T)
    ctx.emit("dma_copy", "dma", (s,), (t.full_view(),),
             {"api": "load_transpose2d", "transpose": True, "partitions": P,
              "bytes_per_partition": F * s.tensor.itemsize, "src": "hbm", "dst": "sbuf"},
             0, P * F * s.tensor.itemsize, F, P)
    _common.finish(ctx, t, None)
    return t


def store(dst, value, *, mask=None, **kwargs) -> None:
    """Store an SBUF tile into HBM. NKI 0.6 takes an SBUF ``value`` only (nki.language.store); the Beta 1 dialect
    accepted a PSUM value and copied it to SBUF first, as its compiler did."""
    if mask is not None or kwargs:
        refuse_extras('store', store, mask, kwargs)
    d = as_view(dst)
    if d.tensor.buffer != "hbm":
        raise KernelError("err_unsupported_memory",
                          f"Expected operand 'dst' of 'store' to be in address space 'hbm', but got a tile in "
                          f"'{d.tensor.buffer}' instead.",
                          "nl.store writes HBM tensors; use dst[...] = value or nl.copy for on-chip copies")
    if not isinstance(value, (Tensor, View, Broadcast)):
        if current().dialect == "beta1" and isinstance(value, (int, float, np.integer, np.floating)) and \
                not isinstance(value, (bool, np.bool_)):
            # Beta 1 stored a number as a fill of the HBM region ("effectively a memset"): SBUF tiles of that value
            # (memsets), at most pmax rows each, moved by DMA, as the compiler lowered it
            from trnsim.nki.language.creation import full
            shape = tuple(d.shape) if len(d.shape) >= 2 else (tuple(d.shape) or (1,)) + (1,)
            pmax = current().limits.pmax
            if mask is not None and shape[0] > pmax:
                raise KernelError("err_unsupported_mask", f"nl.store of a number with mask= into {fmt_shape(shape)}: "
                                  f"the fill is made in tiles of at most {pmax} rows",
                                  "store masked tiles of at most 128 rows, or drop mask=")
            for p0 in range(0, shape[0], pmax):
                rows = builtins.min(pmax, shape[0] - p0)
                part = d if shape[0] <= pmax else d[p0:p0 + rows]
                _dmam._dma(part, as_view(full((rows,) + shape[1:], value, dtype=d.tensor.dtype_name,
                                              buffer="sbuf")), mask, "store")
            return None
        else:
            raise KernelError("err_expected_tile", f"nl.store value must be a tile, got {type(value).__name__}",
                              "store an SBUF tile (to fill an HBM tensor with a number, store an nl.full tile)")
    v = as_view(value)
    if isinstance(v, Broadcast):
        v = as_view(copy(v))
    if v.tensor.buffer == "psum":
        if current().dialect != "beta1":
            raise KernelError("err_unsupported_memory",
                              f"Expected operand 'value' of 'store' to be in address space 'sbuf', but got the PSUM "
                              f"tile {fmt_shape(v.shape)} instead: in NKI 0.6 nl.store writes an SBUF tile to HBM",
                              "copy the PSUM tile to SBUF first (nisa.tensor_copy(dst=sbuf_tile, src=psum_tile)), "
                              "then store the SBUF tile")
        v = as_view(copy(v))
    if v.tensor.buffer == "hbm":
        raise KernelError("err_unsupported_memory",
                          "Expected operand 'value' of 'store' to be in address space 'sbuf', but got a tile in "
                          "'hbm' instead.", "load it into SBUF first (nl.load)")
    _dmam._dma(d, v, mask, "store")


__all__ = ["load", "load_transpose2d", "store"]
