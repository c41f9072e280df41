"""Fills: ``memset`` (constant) and ``iota`` (index pattern) into a tile."""
from __future__ import annotations

import math
import weakref

import ml_dtypes
import numpy as np

from trnsim.nki import dtypes as dt
from trnsim.nki.context import as_view, current, write
from trnsim.nki.isa.common import dtype_or, finish, free_size, is_tile, out_tile, result_of, store_result
from trnsim.nki.rules import KernelError
from trnsim.nki.tensors import mask_array
from trnsim.nki.isa.common import REQUIRED, pattern_values, refuse_gpsimd_psum, tile_arg, two_forms
from trnsim.nki.rules import fmt_shape


def fill_value(value, dtype_name: str, shape, api: str = "memset") -> float:
    """``value`` of a fill (memset, nl.full / zeros / ones, ``tile[...] = number``) into a ``dtype_name`` tile of
    ``shape``, as the float the engine writes. The value must be a number the dtype can hold: an integer tile
    takes values in its range once rounded to the nearest integer, ties to even (the engine's output conversion;
    it would saturate), a float tile finite values below its largest finite value (they would become inf; +-inf
    and nan themselves are accepted), an MX x4-packed tile only 0 (NKI 0.6 ``nisa.memset``)."""
    # ml_dtypes scalars (bfloat16, the fp8 formats: e.g. Beta 1's nl.finfo(nl.bfloat16).min) are numbers too
    if not isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)) and not (
            isinstance(value, np.generic) and type(value).__module__.startswith("ml_dtypes")):
        raise KernelError("err_memset_value_type",
                          f"{api} value {value!r} ({type(value).__name__}) for tile {fmt_shape(shape)} {dtype_name} "
                          "is not a number", "pass a compile-time Python int or float, e.g. value=0.0")
    try:
        v = float(value)
    except OverflowError:          # a Python int beyond float range
        v = math.copysign(math.inf, value)
    where = f"{api} value {value!r} does not fit tile {fmt_shape(shape)} {dtype_name}"
    if dt.is_packed(dtype_name):
        if v != 0.0:
            raise KernelError("err_unsupported_dtype",
                              f"{where}: an MX x4-packed tile can only be filled with 0",
                              "fill it with value=0; make packed data with nisa.quantize_mx or pack it on the host")
        return v
    if not dt.is_float(dtype_name):
        if dtype_name == "bool":
            lo, hi = 0, 1
        else:
            info = np.iinfo(dt.value_dtype(dtype_name))
            lo, hi = int(info.min), int(info.max)
        if dt.is_int(dtype_name) and math.isfinite(v):
            v = float(np.rint(v))     # float -> integer rounds to nearest, ties to even (as dt.cast does)
        if not (math.isfinite(v) and lo <= v <= hi):
            raise KernelError("err_memset_value_out_of_range",
                              f"{where}: {dtype_name} holds {lo}..{hi} (the engine would store a saturated value)",
                              f"use a value in [{lo}, {hi}], or a wider dtype for the tile (e.g. nl.int32 or "
                              "nl.float32)")
        return v
    if math.isfinite(v):
        big = float(ml_dtypes.finfo(dt.value_dtype(dtype_name)).max)
        with np.errstate(over="ignore", invalid="ignore"):
            stored = dt.cast(np.array([v], dtype=np.float64).astype(np.float32), dtype_name)
        got = float(stored.astype(np.float32)[0])
        if math.isnan(got) and abs(v) <= big:
            # inside the range but not representable: a format without zero or sign (float8_e8m0fnu, the MX scale
            # format of powers of two) stores NaN
            raise KernelError("err_memset_value_out_of_range",
                              f"{where}: {dtype_name} cannot represent it (it would be stored as NaN)",
                              "float8_e8m0fnu holds only positive powers of two (2**-127 .. 2**127, no zero): fill "
                              "with such a value, e.g. 1.0" if dtype_name == "float8_e8m0fnu" else
                              f"use a value {dtype_name} can represent")
        if abs(v) > float(np.finfo(np.float32).max) or not np.isfinite(got):
            has_inf = bool(np.isinf(dt.cast(np.array([np.inf], dtype=np.float32), dtype_name).astype(np.float32))[0])
            if not has_inf:
                raise KernelError("err_memset_value_out_of_range",
                                  f"{where}: the largest finite {dtype_name} is {big:g} and the format has no inf, so "
                                  "it would be stored as NaN", f"use a value within +-{big:g}")
            raise KernelError("err_memset_value_out_of_range",
                              f"{where}: the largest finite {dtype_name} is {big:g}, so it would be stored as "
                              f"{'-' if v < 0 else ''}inf",
                              f"use a value within +-{big:g}, or pass {'-' if v < 0 else ''}np.inf explicitly if an "
                              "infinite fill is meant")
    return v


def _memset_into(dview, value, mask=None, eng="vector"):
    ctx = current()
    d = as_view(dview)
    if d.tensor.buffer == "hbm":
        raise KernelError("err_hbm_tensor_with_init_value_not_supported",
                          "HBM tensors cannot be filled by compute engines",
                          "fill an SBUF tile and nl.store it")
    if eng == "gpsimd" and ctx.dialect != "beta1":
        refuse_gpsimd_psum("memset", "engine=gpsimd", dst=d)
    value = fill_value(value, d.tensor.dtype_name, d.shape)
    d.tensor.mm_open = d.tensor.psum_other_value = d.tensor.buffer == "psum" and value != 0.0
    ctx.last_mask = None
    if ctx.numerics:
        # integer fills exactly (float64 holds every 32-bit integer), floats via the fp32 fill value
        vals = dt.cast(np.full(d.shape, value, dtype=np.float64), d.tensor.dtype_name) \
            if dt.is_int(d.tensor.dtype_name) else np.full(d.shape, value, dtype=np.float32)
        write(d, vals, mask_array(mask, tuple(d.shape)))
        if d.tensor.acc is not None:
            d.tensor.acc[d.npkey()] = value != 0.0   # a zero fill folds into the next matmul
    n = free_size(d.shape)
    ctx.emit("memset", eng, (), (d,), {"value": value}, 0, 0, n, d.shape[0] if d.shape else 1)
    finish(ctx, None)


def _memset_beta1(*args, value=None, dtype=None, mask=None, engine=None, **kw):
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
        _memset_into(dst, value, mask, eng)
        return dst
    ctx = current()
    t = ctx.new_tensor(shape, dt.dtype_name(dtype), "sbuf", api="memset")
    _memset_into(t.full_view(), value, mask, eng)
    ctx.last_out = weakref.ref(t)
    ctx.last_out_index = len(ctx.instructions) - 1
    ctx.last_vals = None
    return t


def _iota_beta1(expr, dtype=None, *, mask=None, dst=None, **kw):
    """Materialise an affine index expression (``nl.arange`` / ``nl.mgrid``) as a tile on GpSimd."""
    from trnsim.nki.tensors import IndexExpr
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


def _memset_06(dst, value, engine, name):
    """Fill ``dst`` with ``value``; the value's type must match dst's dtype (an int for integer tiles, NKI 0.3+)."""
    if not is_tile(dst):
        raise KernelError("err_expected_tile", f"operand 'dst' of 'memset' must be a tile, got {type(dst).__name__}",
                          "pass a tile allocated with nl.ndarray(shape, dtype, buffer=nl.sbuf)")
    d = as_view(dst)
    if dt.is_packed(d.tensor.dtype_name) and value != 0:
        raise KernelError("err_memset_value_type",
                          f"memset value {value!r} into {d.tensor.dtype_name} {fmt_shape(d.shape)}: a tile of packed "
                          "x4 words can only be memset to 0",
                          "memset it to 0, or quantize values into it with nisa.quantize_mx")
    if not dt.is_float(d.tensor.dtype_name) and isinstance(value, float) and not isinstance(value, bool):
        example = int(value) if math.isfinite(value) else 0
        raise KernelError("err_memset_value_type",
                          f"memset value {value!r} is a float but dst {fmt_shape(d.shape)} is {d.tensor.dtype_name}",
                          f"pass an integer literal, e.g. value={example}")
    if engine not in (None, "unknown", "vector", "gpsimd"):
        raise KernelError("err_unsupported_engine", f"memset(engine={engine}): memset runs on the Vector or the "
                          "GpSimd engine", "pass engine=nisa.engine.vector or nisa.engine.gpsimd, or drop engine=")
    _memset_into(dst, value, None, "gpsimd" if engine == "gpsimd" else "vector")
    return dst


def _iota_06(dst, pattern, offset, channel_multiplier, name):
    """``dst[p, ...] = offset + channel_multiplier * p + sum(step_k * i_k)`` over ``pattern`` (GpSimd, 32-bit
    integer arithmetic that wraps like int32, cast to dst's dtype): an int32 / uint32 dst receives the exact
    32-bit word, other dtypes the converted value."""
    ctx = current()
    d = tile_arg(dst, "iota", "dst", ("sbuf",))
    P = d.shape[0]
    for v, arg in ((offset, "offset"), (channel_multiplier, "channel_multiplier")):
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and not -2 ** 31 <= int(v) < 2 ** 31:
            raise KernelError("err_invalid_arguments", f"{arg}={int(v)} of 'iota' is outside int32 "
                              f"[-2147483648, 2147483647]", f"pass an int32 {arg} (the engine holds it in 32 bits)")
    vals = pattern_values(pattern, offset, channel_multiplier, P, "iota", d.shape)
    res = None
    if ctx.numerics:
        v32 = vals.astype(np.int32)                   # int64 -> int32 wraps modulo 2**32
        dname = d.tensor.dtype_name
        res = (v32.view(np.uint32) if dname == "uint32" else v32 if dname == "int32" else
               v32.astype(np.float32)).reshape(d.shape)
        store_result(ctx, d, res, None)
    n = free_size(d.shape)
    ctx.emit("iota", "gpsimd", (), (d,), {}, 0, 0, n, P)
    finish(ctx, None)
    return dst


memset = two_forms("memset", [("dst", REQUIRED), ("value", REQUIRED), ("engine", "unknown"), ("name", None)],
                   _memset_beta1, _memset_06)
iota = two_forms("iota", [("dst", REQUIRED), ("pattern", REQUIRED), ("offset", 0), ("channel_multiplier", 0),
                          ("name", None)], _iota_beta1, _iota_06)


__all__ = ["memset", "iota"]
