"""Predicated selection: ``affine_select`` (GpSimd; predicate from an affine index pattern)."""
from __future__ import annotations

import numpy as np

from trnsim.nki.context import current, read
from trnsim.nki.isa.common import dtype_or, finish, free_size, out_tile, result_of, store_result, tile_arg
from trnsim.nki.rules import KernelError
from trnsim.nki.tensors import Mask, Tensor, View, mask_array


def affine_select(*args, dtype=None, mask=None, dst=None, **kw):
    """``out = on_true_tile where pred else on_false_value`` with an affine predicate (GpSimd).

    Beta 1 form ``affine_select(pred, on_true_tile, on_false_value)``; NKI 0.6 form ``affine_select(dst, pattern,
    channel_multiplier, on_true_tile, on_false_value, cmp_op=nl.equal, offset=0)`` (:mod:`.._patterns`)."""
    if "pattern" in kw or (args and isinstance(args[0], (Tensor, View))):
        from trnsim.nki.isa._patterns import affine_select_pattern
        if dst is not None:
            args = (dst,) + args
        return affine_select_pattern(*args, **kw)
    names = ("pred", "on_true_tile", "on_false_value")
    vals = dict(zip(names, args))
    vals.update({k: kw.pop(k) for k in names if k in kw})
    if len(vals) != 3:
        raise KernelError("err_invalid_arguments", "affine_select needs (pred, on_true_tile, on_false_value) or the "
                          "0.6 form (dst, pattern, channel_multiplier, on_true_tile, on_false_value)",
                          "e.g. nisa.affine_select(dst=t, pattern=[[-1, n]], channel_multiplier=1, on_true_tile=x, "
                          "on_false_value=-9984.0, cmp_op=nl.greater_equal)")
    pred, on_true_tile, on_false_value = vals["pred"], vals["on_true_tile"], vals["on_false_value"]
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
