"""Free-axis reductions: ``tensor_reduce``, ``tensor_scalar_reduce``, and the batch-norm statistics pair
``bn_stats`` / ``bn_aggr`` (Vector Engine)."""
from __future__ import annotations

import operator
import warnings

import numpy as np

from trnsim.nki.context import current, read, write
from trnsim.nki.isa.common import (bcast_free, check_free_limit, dtype_or, finish, free_size, is_tile, out_tile,
                                   require_fp32_vector, result_of, scalar_or_vector, store_result, tile_arg)
from trnsim.nki.isa import _accum
from trnsim.nki.isa.enums import reduce_cmd as _rc
from trnsim.nki import dtypes as dt
from trnsim.nki.isa.ops import ALU, BITVEC, REDUCE, UNARY_ALU, alu_name, check_unary_operand, op_name
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.tensors import mask_array
from trnsim.nki.isa.common import REQUIRED, bit_pattern, reduce_res_view, two_forms


# the value a masked-off input element takes so that it does not change the reduction (mean / var skip it)
_IDENTITY = {"add": 0, "maximum": -np.inf, "minimum": np.inf, "multiply": 1, "logical_and": 1,
             "logical_or": 0, "logical_xor": 0, "bitwise_and": -1, "bitwise_or": 0, "bitwise_xor": 0}


def _int_identity(name: str, dtype: np.dtype):
    """_IDENTITY in an integer storage dtype (infinities become its limits, all-ones its bit pattern)."""
    info = np.iinfo(dtype)
    v = _IDENTITY[name]
    if v == -np.inf:
        return dtype.type(info.min)
    if v == np.inf:
        return dtype.type(info.max)
    if v == -1:
        return dtype.type(info.max if info.min == 0 else -1)
    return dtype.type(v)


def _input_mask(mask, in_shape: tuple, axes: list, keepdims: bool, out_shape: tuple, name: str, api: str):
    """Beta 1 ``mask=`` of a reduction: (input mask, output write mask). The mask's index expressions name "which
    range of indices along one of the input tile axes should be valid" (NKI API Masking), so a mask over the input
    tile keeps masked-off elements out of the reduction and leaves output rows with no masked-in element
    unwritten. A mask that only fits the output tile masks the write (None, mask)."""
    if mask is None:
        return None, None
    try:
        m_in = mask_array(mask, in_shape)
    except KernelError:
        return None, mask_array(mask, out_shape)
    if m_in is None:
        return None, None
    if name not in _IDENTITY and name not in ("mean", "var"):
        raise KernelError("err_unsupported_expression_in_mask", f"'{api}' with op {name} cannot mask input elements",
                          "slice the tile to the valid region instead, or reduce with add / maximum / minimum")
    m_out = m_in.any(axis=tuple(axes), keepdims=keepdims).reshape(out_shape)
    return m_in, (None if m_out.all() else m_out)


def _reduce(op, data, axis, dtype=None, mask=None, negate=False, keepdims=False, dst=None, api="tensor_reduce",
            name_override=None, strict=True):
    ctx = current()
    name = name_override or op_name(op, "reduce")
    v = tile_arg(data, api, "data", mask=mask)
    nd = len(v.shape)
    try:
        axes = [operator.index(a) for a in (axis if isinstance(axis, (list, tuple)) else [axis])]
    except TypeError:
        raise KernelError("err_invalid_axis", f"axis={axis!r} of '{api}' is not an integer or a list of integers "
                          f"(tile {fmt_shape(v.shape)})", f"pass free axes as ints, e.g. axis=1 or axis=[1, 2]") \
            from None
    if not axes:
        raise KernelError("err_invalid_axis", f"axis={axis!r} of '{api}' names no axis (tile {fmt_shape(v.shape)})",
                          "pass the free axes to reduce, e.g. axis=1")
    if any(not -nd <= a < nd for a in axes):
        raise KernelError("err_invalid_axis", f"axis {list(axes)} out of range for a {nd}-D tile {fmt_shape(v.shape)}",
                          f"use axes 1..{nd - 1} (or -{nd - 1}..-1)")
    axes = sorted({a + nd if a < 0 else a for a in axes})
    if 0 in axes:
        raise KernelError("err_reduce_partition_axis",
                          f"reduction over the partition axis (axis 0) of {fmt_shape(v.shape)} in '{api}': reductions "
                          "run along free axes only",
                          "transpose first (nl.transpose / nisa.nc_transpose) so the axis is free, or contract over "
                          "partitions with a matmul against a ones vector")
    if any(a >= nd for a in axes):
        raise KernelError("err_invalid_axis", f"axis {axes} out of range for a {nd}-D tile {fmt_shape(v.shape)}",
                          f"use axes 1..{nd - 1}")
    if strict and axes != list(range(axes[0], nd)):
        raise KernelError("err_reduce_axis_not_innermost",
                          f"reduction axes {axes} of {fmt_shape(v.shape)} must be the last contiguous free axes "
                          "([1], [1, 2], ...)", f"reduce over axes {list(range(axes[0], nd))} or reorder the tile")
    check_free_limit(v, api, "data")
    shape = [s for k, s in enumerate(v.shape) if k not in axes] if not keepdims else \
        [1 if k in axes else s for k, s in enumerate(v.shape)]
    while len(shape) < 2:
        shape.append(1)
    shape = tuple(shape)
    odt = dtype_or(dtype, v.tensor.dtype_name)
    dview, out_t = out_tile(shape, odt, "sbuf", api, dst)
    int_bits = name in BITVEC and dt.is_int(v.tensor.dtype_name)
    if name in BITVEC and ctx.dialect != "beta1" and not (int_bits and dt.is_int(dview.tensor.dtype_name)):
        # bitvec operators "expect integer data types and treat input elements as bit patterns" (nki.api.shared)
        raise KernelError("err_unsupported_dtype",
                          f"'{api}' with the bitvec operator {name} needs integer tiles, got data "
                          f"{v.tensor.dtype_name}, dst {dview.tensor.dtype_name}",
                          "use integer tiles (nl.int32, ...); view float bits with .view(nl.int32)")
    if name in BITVEC and negate and ctx.dialect != "beta1":
        # negate "is only applicable when op is an arithmetic operator" (nki.isa.tensor_reduce)
        raise KernelError("err_invalid_arguments",
                          f"'{api}' with the bitvec operator {name} cannot negate: negate applies to arithmetic "
                          "operators only", "drop negate=True, or reduce with an arithmetic operator (nl.add, ...)")
    res = None
    in_mask, out_mask = _input_mask(mask, tuple(v.shape), axes, keepdims, shape, name, api)
    if ctx.numerics and int_bits:
        x = read(v, raw=True)
        if in_mask is not None:
            x = np.where(in_mask, x, _int_identity(name, x.dtype))
        r = REDUCE[name](x, axis=tuple(axes), keepdims=keepdims)
        res = bit_pattern(np.asarray(r).reshape(shape), dview)
        store_result(ctx, dview, res, out_mask)
    elif ctx.numerics:
        x = read(v)
        stat = name in ("mean", "var") and in_mask is not None
        if in_mask is not None and not stat:
            x = np.where(in_mask, x, np.float32(_IDENTITY[name]))
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # a row with nothing masked in (it is not written)
            if stat:   # over the masked-in elements only
                r = (np.mean if name == "mean" else np.var)(x, axis=tuple(axes), keepdims=keepdims, where=in_mask)
            elif name in REDUCE:
                r = REDUCE[name](x, axis=tuple(axes), keepdims=keepdims)
            elif name == "mean":
                r = np.mean(x, axis=tuple(axes), keepdims=keepdims)
            elif name == "var":
                r = np.var(x, axis=tuple(axes), keepdims=keepdims)
            else:
                raise KernelError("err_unsupported_op", f"unsupported reduction {name}", "use add/max/min")
        res = np.asarray(r, dtype=np.float32).reshape(shape)
        if negate:
            res = -res
        store_result(ctx, dview, res, out_mask)
    n = free_size(v.shape)
    ctx.emit("tensor_reduce", "vector", (v,), (dview,), {"op": name, "axis": tuple(axes), "negate": bool(negate)},
             n * v.shape[0], 0, n, v.shape[0])
    finish(ctx, out_t, res)
    return result_of(dst, out_t, dview)


def _tensor_reduce_beta1(*args, axis=None, mask=None, dtype=None, negate=False, keepdims=False, **kw):
    """Reduce ``data`` with ``op`` along free ``axis`` (must include the last axis; never axis 0)."""
    dst = kw.pop("dst", None)
    op = kw.pop("op", None)
    data = kw.pop("data", None)
    pos = list(args)
    if pos and is_tile(pos[0]):
        dst = pos.pop(0)
    if pos:
        op = pos.pop(0)
    if pos:
        data = pos.pop(0)
    if pos:
        axis = pos.pop(0)
    if axis is None:
        raise KernelError("err_invalid_arguments", "tensor_reduce needs axis=", "pass axis=1 (or [1, 2, ...])")
    return _reduce(op, data, axis, dtype, mask, negate, keepdims, dst)


def _tensor_scalar_reduce_beta1(*, data, op0, operand0, reduce_op, reduce_res, reverse0=False, dtype=None, mask=None,
                         dst=None, **kw):
    """``out = data op0 operand0`` and ``reduce_res = reduce_op(out)`` along the free axes (one VectorE
    instruction)."""
    ctx = current()
    api = "tensor_scalar_reduce"
    v = tile_arg(data, api, "data")
    check_free_limit(v, api, "data")
    P = v.shape[0]
    reads = [v]
    n0 = alu_name(op0)   # an arithmetic unary op (nl.abs, ...) is an ALU operator too (its operand is unused)
    rname = op_name(reduce_op, "reduce")
    o0, vec0 = (None, False) if n0 in UNARY_ALU else scalar_or_vector(operand0, P, api, "operand0", reads)
    rv = reduce_res_view(reduce_res, P)
    shape = tuple(v.shape)
    dview, out_t = out_tile(shape, dtype_or(dtype, v.tensor.dtype_name), "sbuf", api, dst)
    res = None
    if ctx.numerics:
        x = read(v)
        with np.errstate(all="ignore"):
            if n0 in UNARY_ALU:
                res = np.asarray(UNARY_ALU[n0](x), dtype=np.float32)
            else:
                ov = bcast_free(read(o0), x.ndim) if vec0 else np.float32(o0)
                res = np.asarray(ALU[n0](ov, x) if reverse0 else ALU[n0](x, ov), dtype=np.float32)
        store_result(ctx, dview, res, mask_array(mask, shape))
        write(rv, REDUCE[rname](res, axis=tuple(range(1, res.ndim)), keepdims=True).reshape(rv.shape))
    n = free_size(shape)
    ctx.emit(api, "vector", reads, (dview, rv), {"op0": n0, "reduce_op": rname}, 2 * n * P, 0, n, P)
    finish(ctx, out_t, res)
    return result_of(dst, out_t, dview)


def _bn_stats_beta1(data, *, dtype=None, mask=None, dst=None, **kw):
    """Per-partition statistics of ``data`` ([P, F], F <= bn_stats_fmax) for bn_aggr.

    Output [P, 6] float32: (count, mean, variance * count) of the even-indexed elements of each partition, then
    the same of the odd-indexed ones (the nki.isa.bn_stats reference layout); bn_aggr combines them exactly.
    """
    ctx = current()
    v = tile_arg(data, "bn_stats", "data", mask=mask)
    lim = ctx.limits
    F = free_size(v.shape)
    if F > lim.bn_stats_fmax:
        raise KernelError("err_size_of_dimension_exceed_arch_limit",
                          f"size of dimension 1 in 'data{fmt_shape(v.shape)}' of 'bn_stats' exceed architecture "
                          f"limitation of {lim.bn_stats_fmax}.",
                          f"call bn_stats on chunks of {lim.bn_stats_fmax} (nl.tile_size.bn_stats_fmax) and combine "
                          "them with bn_aggr")
    P = v.shape[0]
    dview, out_t = out_tile((P, 6), dtype_or(dtype, "float32"), "sbuf", "bn_stats", dst)
    res = None
    if ctx.numerics:
        # (count, mean, variance * count) of the even-indexed elements, then of the odd-indexed ones
        # (nki.isa.bn_stats); an empty half (one element per partition) is (0, 0, 0)
        x = read(v).reshape(P, -1).astype(np.float64)
        res = np.zeros((P, 6), dtype=np.float32)
        m = mask_array(mask, tuple(v.shape)) if mask is not None else None
        # Beta 1 mask=: the statistics of the masked-in elements only (a ragged last chunk), row by row
        rows = [x] if m is None else [x[p:p + 1, m.reshape(P, -1)[p]] for p in range(P)]
        for r0, xr in enumerate(rows):
            sel = slice(None) if m is None else slice(r0, r0 + 1)
            for k, half in enumerate((xr[:, 0::2], xr[:, 1::2])):
                n = half.shape[1]
                if n:
                    res[sel, 3 * k] = n
                    res[sel, 3 * k + 1] = half.mean(axis=1)
                    res[sel, 3 * k + 2] = half.var(axis=1) * n
        # a partition the mask leaves out entirely keeps its old statistics (masked-off elements are not written)
        rows_in = None if m is None else m.reshape(P, -1).any(axis=1)
        store_result(ctx, dview, res, None if rows_in is None or rows_in.all() else
                     np.broadcast_to(rows_in[:, None], (P, 6)).reshape(dview.shape))
    ctx.emit("bn_stats", "vector", (v,), (dview,), {}, 3 * F * P, 0, F, P)
    finish(ctx, out_t, res)
    return result_of(dst, out_t, dview)


def _bn_aggr_beta1(data, *, dtype=None, mask=None, dst=None, **kw):
    """Combine bn_stats outputs [P, 3*k] ((count, mean, variance * count) triples) into [P, 2] = (mean, variance)."""
    ctx = current()
    v = tile_arg(data, "bn_aggr", "data")
    P = v.shape[0]
    F = free_size(v.shape)
    if F % 3:
        # "an array of (count, mean, variance*count) tuples per partition ... a modulo of three" (nki.isa.bn_aggr)
        raise KernelError("err_shape_mismatch", f"bn_aggr input {fmt_shape(v.shape)} has {F} values per partition, "
                          "not a whole number of (count, mean, variance * count) triples",
                          "pass the concatenated outputs of bn_stats (6 values each)")
    dview, out_t = out_tile((P, 2), dtype_or(dtype, "float32"), "sbuf", "bn_aggr", dst)
    res = None
    if ctx.numerics:
        s = read(v).reshape(P, F // 3, 3).astype(np.float64)
        cnt, mean, m2 = s[..., 0], s[..., 1], s[..., 2]
        with np.errstate(all="ignore"):
            n = cnt.sum(axis=1)
            mu = (cnt * mean).sum(axis=1) / n
            var = (m2 + cnt * (mean - mu[:, None]) ** 2).sum(axis=1) / n
        res = np.stack([mu, var], axis=1).astype(np.float32)
        store_result(ctx, dview, res, None)
    ctx.emit("bn_aggr", "vector", (v,), (dview,), {}, 4 * F * P, 0, F, P)
    finish(ctx, out_t, res)
    return result_of(dst, out_t, dview)


def _tensor_reduce_06(dst, op, data, axis, negate, keepdims, name):
    """``dst = op-reduction of data`` along free ``axis`` (never 0, the partition axis)."""
    return _reduce(op, data, axis, None, None, negate, keepdims, dst)


def _tensor_scalar_reduce_06(dst, data, op0, operand0, reduce_op, reduce_res, reverse0, reduce_cmd, reduce_init,
                             reduce_res_negate, name):
    """``dst = data op0 operand0`` and a reduction of it along the free axes into the Vector Engine accumulator
    (one VectorE instruction); ``reduce_res`` [P, 1] (optional) receives the accumulator (negated if
    ``reduce_res_negate``). ``reduce_cmd``: ``reset_reduce`` (default), ``reduce`` (continue the accumulator),
    ``load_reduce`` (start from ``reduce_init``)."""
    ctx = current()
    api = "tensor_scalar_reduce"
    v = tile_arg(data, api, "data")
    check_free_limit(v, api, "data")
    P = v.shape[0]
    reads = [v]
    n0 = alu_name(op0)
    if n0 in BITVEC:
        # "Bitvec operators are not supported in this API." (nki.isa.tensor_scalar_reduce)
        raise KernelError("err_unsupported_op", f"op0={n0} of '{api}' is a bitvec operator; it takes arithmetic "
                          "operators only", "use nisa.tensor_scalar for bitvec operators, then nisa.tensor_reduce")
    if reverse0:
        raise KernelError("err_invalid_arguments", f"'{api}' reverse0=True is not supported yet (reference: "
                          "'currently not supported yet')", "swap the operands with a separate nisa.tensor_scalar")
    rname = op_name(reduce_op, "reduce")
    if rname not in ("add", "multiply", "maximum", "minimum"):
        # "The reduce_op can be any of nl.add, nl.multiply, nl.max or nl.min." (nki.isa.tensor_scalar_reduce)
        raise KernelError("err_unsupported_op", f"reduce_op={rname} of '{api}': the Vector Engine accumulator "
                          "reduces with add, multiply, max or min", "pass reduce_op=nl.add, nl.multiply, nl.max or "
                          "nl.min")
    check_unary_operand(n0, operand0, api, "operand0")
    o0, vec0 = (None, False) if n0 in UNARY_ALU else scalar_or_vector(operand0, P, api, "operand0", reads)
    cmd = _accum.check_cmd(reduce_cmd, api, (_rc.reset_reduce, _rc.reduce, _rc.load_reduce))
    if reduce_init is not None and cmd != _rc.load_reduce:
        raise KernelError("err_invalid_arguments", f"'{api}' reduce_init is only used with reduce_cmd.load_reduce "
                          f"(got {cmd})", "drop reduce_init or pass reduce_cmd=nisa.reduce_cmd.load_reduce")
    if cmd == _rc.load_reduce and reduce_init is None:
        raise KernelError("err_invalid_arguments", f"'{api}' reduce_cmd.load_reduce needs reduce_init",
                          "pass reduce_init=<number or [P, 1] float32 tile>")
    init_v, init_vec = scalar_or_vector(reduce_init, P, api, "reduce_init", reads) if reduce_init is not None \
        else (None, False)
    require_fp32_vector(init_v, init_vec, api, "reduce_init")
    rv = None
    if reduce_res is not None:
        rv = reduce_res_view(reduce_res, P)
    shape = tuple(v.shape)
    dview, out_t = out_tile(shape, v.tensor.dtype_name, "sbuf", api, dst)
    init = None
    if cmd == _rc.load_reduce and ctx.numerics:
        init = read(init_v).reshape(P) if init_vec else np.float32(init_v)
    acc = _accum.start(ctx, "vector", cmd, rname, P, api, init)
    res = None
    if ctx.numerics:
        x = read(v)
        with np.errstate(all="ignore"):
            if n0 in UNARY_ALU:
                res = np.asarray(UNARY_ALU[n0](x), dtype=np.float32)
            else:
                ov = bcast_free(read(o0), x.ndim) if vec0 else np.float32(o0)
                res = np.asarray(ALU[n0](ov, x) if reverse0 else ALU[n0](x, ov), dtype=np.float32)
        store_result(ctx, dview, res, None)
        part = REDUCE[rname](res, axis=tuple(range(1, res.ndim))).reshape(P)
        acc = np.asarray(ALU[rname](acc, part), dtype=np.float32)
        if rv is not None:
            write(rv, (-acc if reduce_res_negate else acc).reshape(rv.shape))
    _accum.save(ctx, "vector", acc if ctx.numerics else None)
    n = free_size(shape)
    writes = (dview, rv) if rv is not None else (dview,)
    ctx.emit(api, "vector", reads, writes, {"op0": n0, "reduce_op": rname, "reduce_cmd": cmd}, 2 * n * P, 0, n, P)
    finish(ctx, out_t, res)
    return result_of(dst, out_t, dview)


def _bn_stats_06(dst, data, name):
    """Per-partition statistics of ``data`` for ``bn_aggr`` (dst [P, 6])."""
    return _bn_stats_beta1(data, dst=dst)


def _bn_aggr_06(dst, data, name):
    """Combine ``bn_stats`` outputs into dst [P, 2] = (mean, variance)."""
    return _bn_aggr_beta1(data, dst=dst)


tensor_reduce = two_forms("tensor_reduce", [("dst", REQUIRED), ("op", REQUIRED), ("data", REQUIRED),
                                            ("axis", REQUIRED), ("negate", False), ("keepdims", False),
                                            ("name", None)], _tensor_reduce_beta1, _tensor_reduce_06)
tensor_scalar_reduce = two_forms("tensor_scalar_reduce",
                                 [("dst", REQUIRED), ("data", REQUIRED), ("op0", REQUIRED), ("operand0", REQUIRED),
                                  ("reduce_op", REQUIRED), ("reduce_res", None), ("reverse0", False),
                                  ("reduce_cmd", "reset_reduce"), ("reduce_init", None), ("reduce_res_negate", False),
                                  ("name", None)], _tensor_scalar_reduce_beta1, _tensor_scalar_reduce_06)
bn_stats = two_forms("bn_stats", [("dst", REQUIRED), ("data", REQUIRED), ("name", None)], _bn_stats_beta1,
                     _bn_stats_06)
bn_aggr = two_forms("bn_aggr", [("dst", REQUIRED), ("data", REQUIRED), ("name", None)], _bn_aggr_beta1, _bn_aggr_06)


__all__ = ["tensor_reduce", "tensor_scalar_reduce", "bn_stats", "bn_aggr"]
