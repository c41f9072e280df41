"""Predicated selection: ``affine_select`` (GpSimd; predicate from an affine index pattern)."""
from __future__ import annotations

import numpy as np

from trnsim.nki.context import current, read
from trnsim.nki.isa.common import dtype_or, finish, free_size, out_tile, result_of, store_result, tile_arg
from trnsim.nki.rules import KernelError
from trnsim.nki.tensors import Mask, mask_array


def affine_select(pred, on_true_tile, on_false_value, *, dtype=None, mask=None, dst=None, **kw):
    """``out = on_true_tile where pred else on_false_value`` with an affine predicate (GpSimd)."""
    ctx = current()
    v = tile_arg(on_true_tile, "affine_select", "on_true_tile", ("sbuf",))
    shape = tuple(v.shape)
    if not isinstance(pred, Mask):
        raise KernelError("err_unsupported_expression_in_mask", "affine_select pred must be an affine predicate",
                          "build it from nl.arange / nl.mgrid comparisons")
    p = np.broadcast_to(pred.arr.reshape(pred.arr.shape + (1,) * (len(shape) - pred.arr.ndim)), shape)
    dview, out_t = out_tile(shape, dtype_or(dtype, v.tensor.dtype_name), "sbuf", "affine_select", dst)
    res = None
    if ctx.numerics:
        res = np.where(p, read(v), np.float32(on_false_value)).astype(np.float32)
        store_result(ctx, dview, res, mask_array(mask, shape))
    n = free_size(shape)
    ctx.emit("affine_select", "gpsimd", (v,), (dview,), {}, n * shape[0], 0, n, shape[0])
    finish(ctx, out_t, res)
    return result_of(dst, out_t, dview)


__all__ = ["affine_select"]
