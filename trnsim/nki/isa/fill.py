"""Fills: ``memset`` (constant) and ``iota`` (index pattern) into a tile."""
from __future__ import annotations

import weakref

import numpy as np

from trnsim.nki import dtypes as dt
from trnsim.nki.context import as_view, current, write
from trnsim.nki.isa.common import dtype_or, finish, free_size, is_tile, out_tile, result_of, store_result
from trnsim.nki.rules import KernelError
from trnsim.nki.tensors import mask_array


def _memset_into(dview, value: float, mask=None, eng="vector"):
    ctx = current()
    d = as_view(dview)
    if d.tensor.buffer == "hbm":
        raise KernelError("err_hbm_tensor_with_init_value_not_supported",
                          "HBM tensors cannot be filled by compute engines",
                          "fill an SBUF tile and nl.store it")
    d.tensor.mm_open = False
    ctx.last_mask = None
    if ctx.numerics:
        write(d, np.full(d.shape, value, dtype=np.float32), mask_array(mask, tuple(d.shape)))
        if d.tensor.acc is not None:
            d.tensor.acc[d.npkey()] = False
    n = free_size(d.shape)
    ctx.emit("memset", eng, (), (d,), {"value": value}, 0, 0, n, d.shape[0])
    finish(ctx, None)


def memset(*args, value=None, dtype=None, mask=None, engine=None, **kw):
    """Fill a tile with a constant. Classic ``memset(shape, value, dtype)`` returns a new SBUF tile;
    new ``memset(dst, value)``."""
    dst = kw.pop("dst", None)
    shape = kw.pop("shape", None)
    pos = list(args)
    if pos and is_tile(pos[0]):
        dst = pos.pop(0)
    elif pos:
        shape = pos.pop(0)
    if pos:
        value = pos.pop(0)
    if pos:
        dtype = pos.pop(0)
    eng = "gpsimd" if engine == "gpsimd" else "vector"
    if dst is not None:
        _memset_into(dst, float(value), mask, eng)
        return dst
    ctx = current()
    t = ctx.new_tensor(shape, dt.dtype_name(dtype), "sbuf", api="memset")
    _memset_into(t.full_view(), float(value), mask, eng)
    ctx.last_out = weakref.ref(t)
    ctx.last_out_index = len(ctx.instructions) - 1
    ctx.last_vals = None
    return t


def iota(expr=None, dtype=None, *rest, mask=None, dst=None, **kw):
    """Materialise an affine index expression (``nl.arange`` / ``nl.mgrid``) as a tile on GpSimd.

    NKI 0.6 form ``iota(dst, pattern, offset=0, channel_multiplier=0)``: see :mod:`trnsim.nki.isa._patterns`."""
    from trnsim.nki.tensors import IndexExpr
    if "pattern" in kw or is_tile(expr):
        from trnsim.nki.isa._patterns import iota_pattern
        if is_tile(expr):
            dst, pos = expr, ((dtype,) + rest if dtype is not None else ())
        else:
            pos = ()
        return iota_pattern(dst, *pos, **kw)
    ctx = current()
    if not isinstance(expr, IndexExpr):
        if isinstance(expr, (int, np.integer)):
            raise KernelError("err_invalid_arguments", "iota needs an index expression", "use nl.arange / nl.mgrid")
        raise KernelError("err_invalid_arguments", f"iota expects an nl.arange / nl.mgrid expression, got "
                          f"{type(expr).__name__}", "e.g. nisa.iota(nl.arange(128)[:, None], dtype=nl.int32)")
    shape = tuple(expr.shape)
    if len(shape) < 2:
        shape = shape + (1,)
    dview, out_t = out_tile(shape, dtype_or(dtype, "int32"), "sbuf", "iota", dst, allowed=("sbuf",))
    res = None
    if ctx.numerics:
        res = np.broadcast_to(expr.values(), shape).astype(np.float32)
        store_result(ctx, dview, res, mask_array(mask, shape))
    n = free_size(shape)
    ctx.emit("iota", "gpsimd", (), (dview,), {}, 0, 0, n, shape[0])
    finish(ctx, out_t, res)
    return result_of(dst, out_t, dview)


__all__ = ["memset", "iota"]
