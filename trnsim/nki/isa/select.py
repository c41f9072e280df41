"""Predicated selection: ``affine_select`` (GpSimd; predicate from an affine index pattern)."""
from __future__ import annotations

import numpy as np

from trnsim.nki import dtypes as dt
from trnsim.nki.context import current, read
from trnsim.nki.isa.common import (REQUIRED, dtype_or, finish, free_size, out_tile, pattern_values, result_of,
                                   store_result, tile_arg, two_forms)
from trnsim.nki.isa.ops import ALU, op_name
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.tensors import Mask, mask_array

_CMP = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")


def _affine_select_beta1(pred, on_true_tile, on_false_value, *, dtype=None, mask=None, dst=None, **kw):
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


def _affine_select_06(dst, pattern, channel_multiplier, on_true_tile, on_false_value, cmp_op, offset, name):
    """``dst = on_true_tile where cmp_op(offset + channel_multiplier * p + sum(step_k * i_k), 0) else
    on_false_value`` (GpSimd; e.g. a causal mask)."""
    ctx = current()
    d = tile_arg(dst, "affine_select", "dst", ("sbuf",))
    v = tile_arg(on_true_tile, "affine_select", "on_true_tile", ("sbuf",))
    if tuple(v.shape) != tuple(d.shape):
        raise KernelError("err_shape_mismatch", f"on_true_tile {fmt_shape(v.shape)} and dst {fmt_shape(d.shape)} of "
                          "'affine_select' differ", "use tiles of the same shape")
    P = d.shape[0]
    if not isinstance(on_false_value, (bool, int, float, np.bool_, np.integer, np.floating)):
        raise KernelError("err_operand_type", f"on_false_value {on_false_value!r} of 'affine_select' "
                          f"({type(on_false_value).__name__}) is not a number", "pass a Python float, e.g. -1e9")
    vals = pattern_values(pattern, offset, channel_multiplier, P, "affine_select", d.shape)
    cmp = op_name(cmp_op)
    if cmp not in _CMP:
        # "cmp_op: comparison operator to use for predicate evaluation" (nki.isa.affine_select)
        raise KernelError("err_unsupported_op", f"cmp_op={cmp} of 'affine_select' is not a comparison operator",
                          "use nl.equal, nl.not_equal, nl.less, nl.less_equal, nl.greater or nl.greater_equal")
    res = None
    if ctx.numerics:
        pred = ALU[cmp](vals.astype(np.float32), np.float32(0)).reshape(d.shape) != 0
        dname = d.tensor.dtype_name
        if v.tensor.dtype_name == dname:    # same dtype: selected elements are copied bit-exactly
            res = np.where(pred, read(v, raw=True), dt.cast(np.array(on_false_value, dtype=np.float32), dname))
        else:                               # a differing dtype goes through FP32
            res = np.where(pred, read(v), np.float32(on_false_value)).astype(np.float32)
        store_result(ctx, d, res, None)
    n = free_size(d.shape)
    ctx.emit("affine_select", "gpsimd", (v,), (d,), {"cmp_op": cmp}, n * P, 0, n, P)
    finish(ctx, None)
    return dst


affine_select = two_forms("affine_select", [("dst", REQUIRED), ("pattern", REQUIRED),
                                            ("channel_multiplier", REQUIRED), ("on_true_tile", REQUIRED),
                                            ("on_false_value", REQUIRED), ("cmp_op", "equal"), ("offset", 0),
                                            ("name", None)], _affine_select_beta1, _affine_select_06)


__all__ = ["affine_select"]
