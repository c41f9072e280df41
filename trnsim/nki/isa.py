"""``nki.isa``: one function per NeuronCore instruction (``import trnsim.nki.isa as nisa``).

Both API generations are accepted: the classic value-returning forms
(``t = nisa.nc_matmul(stationary, moving)``) and the newer destination-first forms
(``nisa.nc_matmul(dst, stationary, moving, accumulate=True)``, ``nisa.dma_copy(dst=, src=)``).
Semantics and rules follow SDK-legacy ``general/nki/api/nki/isa/__init__.py`` and SDK-HEAD
``nki/api/nki/isa/__init__.py`` (see /work/shared/reference/nki.md section 1.7). Arithmetic is
float32 (Vector/Scalar engines compute in fp32 and cast on output); matmul accumulates in fp32 PSUM.
"""
from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from trnsim.nki import dtypes as dt
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.runtime import as_view, current, read, write
from trnsim.nki.tensors import Broadcast, Mask, Tensor, View, check_bounds, mask_array


class engine:
    """Engine selector for instructions that can run on several engines."""
    unknown = "unknown"
    tensor = "tensor"
    vector = "vector"
    scalar = "scalar"
    gpsimd = "gpsimd"
    activation = "scalar"
    pool = "gpsimd"
    sync = "sync"


class reduce_cmd:
    idle = "idle"
    reset = "reset"
    reduce = "reduce"
    reset_reduce = "reset_reduce"


class oob_mode:
    error = "error"
    skip = "skip"


class dge_mode:
    unknown = "unknown"
    none = "none"
    swdge = "swdge"
    hwdge = "hwdge"


class nc_version:
    gen2 = "NC-v2"
    gen3 = "NC-v3"
    gen4 = "NC-v4"


def get_nc_version() -> str:
    """NeuronCore version of the current target ("NC-v2" for trn1/inf2, "NC-v3" trn2, "NC-v4" trn3)."""
    return current().limits.neuroncore_version


# ------------------------------------------------------------------------------ op tables

def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), vectorised in float64 then cast
    x64 = x.astype(np.float64)
    s = np.sign(x64)
    a = np.abs(x64)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t \
        * np.exp(-a * a)
    return (s * y).astype(np.float32)


def _sigmoid(x):
    return (0.5 * (1.0 + np.tanh(0.5 * x))).astype(np.float32)


def _gelu(x):
    return 0.5 * x * (1.0 + _erf(x / np.float32(math.sqrt(2.0))))


def _gelu_tanh(x):
    c = np.float32(math.sqrt(2.0 / math.pi))
    return 0.5 * x * (1.0 + np.tanh(c * (x + np.float32(0.044715) * x * x * x)))


def _gelu_dx(x):
    pdf = np.exp(-0.5 * x * x) / np.float32(math.sqrt(2 * math.pi))
    return 0.5 * (1.0 + _erf(x / np.float32(math.sqrt(2.0)))) + x * pdf


def _softplus(x):
    return np.logaddexp(np.float32(0), x).astype(np.float32)


# activation functions (ScalarE); computed in float32
ACT: dict[str, Any] = {
    "copy": lambda x: x, "identity": lambda x: x,
    "exp": np.exp, "log": np.log, "tanh": np.tanh, "sigmoid": _sigmoid,
    "relu": lambda x: np.maximum(x, np.float32(0)),
    "gelu": _gelu, "gelu_apprx_tanh": _gelu_tanh, "gelu_dx": _gelu_dx,
    "silu": lambda x: x * _sigmoid(x), "silu_dx": lambda x: _sigmoid(x) * (1 + x * (1 - _sigmoid(x))),
    "softplus": _softplus, "mish": lambda x: x * np.tanh(_softplus(x)),
    "sqrt": np.sqrt, "rsqrt": lambda x: np.float32(1) / np.sqrt(x), "square": np.square,
    "abs": np.abs, "sign": np.sign, "sin": np.sin, "cos": np.cos, "arctan": np.arctan, "erf": _erf,
    "erf_dx": lambda x: np.float32(2 / math.sqrt(math.pi)) * np.exp(-x * x),
    "reciprocal": lambda x: np.float32(1) / x, "negative": np.negative,
    "ceil": np.ceil, "floor": np.floor, "trunc": np.trunc,
    "logical_not": lambda x: (x == 0).astype(np.float32),
}


def _cmp(fn):
    return lambda a, b: fn(a, b).astype(np.float32)


def _intop(fn):
    return lambda a, b: fn(np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64)).astype(np.float32)


# binary ALU ops (VectorE); computed in float32 (bitwise ops on integers)
ALU: dict[str, Any] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "power": np.power,
    "equal": _cmp(np.equal), "not_equal": _cmp(np.not_equal), "greater": _cmp(np.greater),
    "greater_equal": _cmp(np.greater_equal), "less": _cmp(np.less), "less_equal": _cmp(np.less_equal),
    "logical_and": _cmp(lambda a, b: (a != 0) & (b != 0)), "logical_or": _cmp(lambda a, b: (a != 0) | (b != 0)),
    "logical_xor": _cmp(lambda a, b: (a != 0) ^ (b != 0)),
    "bitwise_and": _intop(np.bitwise_and), "bitwise_or": _intop(np.bitwise_or),
    "bitwise_xor": _intop(np.bitwise_xor), "left_shift": _intop(np.left_shift),
    "right_shift": _intop(np.right_shift), "mod": np.mod, "abs_max": lambda a, b: np.maximum(np.abs(a), np.abs(b)),
}

# reduction ops over free axes
REDUCE: dict[str, Any] = {
    "add": np.sum, "maximum": np.max, "minimum": np.min, "multiply": np.prod,
    "logical_and": lambda x, axis, keepdims: np.all(x != 0, axis=axis, keepdims=keepdims).astype(np.float32),
    "logical_or": lambda x, axis, keepdims: np.any(x != 0, axis=axis, keepdims=keepdims).astype(np.float32),
}

_NP_NAMES = {
    np.add: "add", np.subtract: "subtract", np.multiply: "multiply", np.divide: "divide",
    np.true_divide: "divide", np.maximum: "maximum", np.minimum: "minimum", np.power: "power",
    np.equal: "equal", np.not_equal: "not_equal", np.greater: "greater", np.greater_equal: "greater_equal",
    np.less: "less", np.less_equal: "less_equal", np.logical_and: "logical_and", np.logical_or: "logical_or",
    np.logical_xor: "logical_xor", np.bitwise_and: "bitwise_and", np.bitwise_or: "bitwise_or",
    np.bitwise_xor: "bitwise_xor", np.left_shift: "left_shift", np.right_shift: "right_shift",
    np.mod: "mod", np.exp: "exp", np.log: "log", np.tanh: "tanh", np.sqrt: "sqrt", np.square: "square",
    np.abs: "abs", np.absolute: "abs", np.sign: "sign", np.sin: "sin", np.cos: "cos", np.arctan: "arctan",
    np.negative: "negative", np.reciprocal: "reciprocal", np.max: "maximum", np.min: "minimum",
    np.sum: "add", np.prod: "multiply", np.amax: "maximum", np.amin: "minimum", np.ceil: "ceil",
    np.floor: "floor", np.trunc: "trunc", np.logical_not: "logical_not",
}


def op_name(op: Any, kind: str = "alu") -> str:
    """Canonical op name for an ``op=`` argument (nl function, numpy ufunc, or string)."""
    if isinstance(op, str):
        name = op
    else:
        name = getattr(op, "_nki_op", None) or _NP_NAMES.get(op)
        if name is None:
            name = getattr(op, "__name__", repr(op))
    table = {"alu": ALU, "act": ACT, "reduce": REDUCE}[kind]
    if name not in table:
        raise KernelError("err_unsupported_op",
                          f"{name!r} is not a supported {'activation function' if kind == 'act' else kind + ' op'}",
                          f"use one of: {', '.join(sorted(table))}")
    return name


# ------------------------------------------------------------------------------ helpers

def _is_tile(x) -> bool:
    return isinstance(x, (Tensor, View, Broadcast))


def tile_arg(x, api: str, arg: str, buffers: tuple[str, ...] = ("sbuf", "psum")):
    """Validate a tile operand: an NKI tile, in an allowed buffer, partition dim first."""
    if not _is_tile(x):
        raise KernelError("err_expected_tile", f"operand '{arg}' of '{api}' must be a tile, got {type(x).__name__}",
                          "pass a tile produced by nl.load / nl.ndarray / an NKI op")
    v = as_view(x)
    t = v.tensor
    if t.buffer not in buffers:
        raise KernelError("err_unsupported_memory",
                          f"Expected operand '{arg}' of '{api}' to be in address space '{'|'.join(buffers)}', "
                          f"but got a tile in '{t.buffer}' instead.",
                          "load HBM data into SBUF with nl.load first" if t.buffer == "hbm" else
                          ("copy the PSUM tile to SBUF with nl.copy first" if t.buffer == "psum" else
                           "use a tile in the required buffer"))
    base = v.view if isinstance(v, Broadcast) else v
    if t.buffer != "hbm" and not base.pfirst:
        raise KernelError("err_failed_to_infer_tile_from_local_tensor",
                          f"operand '{arg}' of '{api}' ({base!r}) does not have the partition dimension first",
                          "index the block dimension(s) first, e.g. buf[i] or buf[i, :, :]")
    if len(v.shape) < 1 or v.shape[0] > _pmax():
        lim = current().limits.pmax
        raise KernelError("err_num_partition_exceed_arch_limit",
                          f"number of partitions {v.shape[0] if v.shape else 0} exceed architecture limitation of "
                          f"{lim}. (operand '{arg}' of '{api}', tile {fmt_shape(v.shape)}; {current().target})",
                          f"tile the partition dimension into chunks of at most {lim}")
    return v


def _pmax() -> int:
    return current().limits.pmax


def _free(shape) -> int:
    n = 1
    for s in shape[1:]:
        n *= s
    return n


def _check_free_limit(v, api: str, arg: str) -> None:
    lim = current().limits
    t = v.tensor
    cap = lim.vector_free_max_psum if t.buffer == "psum" else lim.vector_free_max_sbuf
    n = _free(v.shape)
    if cap is not None and n > cap:
        raise KernelError("err_free_size_exceed_arch_limit",
                          f"operand '{arg}' of '{api}' has {n} elements per partition; the limit for a "
                          f"{t.buffer.upper()} "
                          f"operand is {cap} on {lim.target}",
                          "split the free dimension into smaller tiles")


def _out_tile(shape, dtype_name: str, buffer: str, api: str, dst=None, *, allowed=("sbuf", "psum")):
    ctx = current()
    if dst is not None:
        d = as_view(dst)
        if isinstance(d, Broadcast):
            raise KernelError("err_unsupported_assignment", "cannot write into a broadcast view", "write into a tile")
        if d.tensor.buffer not in allowed:
            raise KernelError("err_unsupported_memory",
                              f"Expected operand 'dst' of '{api}' to be in address space '{'|'.join(allowed)}', but "
                              f"got a tile in '{d.tensor.buffer}' instead.",
                              "write compute results to SBUF (or PSUM) and nl.store them to HBM")
        if tuple(d.shape) != tuple(shape):
            if not (math.prod(d.shape) == math.prod(shape) and d.shape[0] == shape[0]):
                from trnsim.nki.runtime import _check_assign_shape
                _check_assign_shape(d, shape, api)
        return d, None
    t = ctx.new_tensor(shape, dtype_name, buffer, api=api, temp=True)
    return t.full_view(), t


def _finish(ctx, out_tensor, vals32=None) -> None:
    if out_tensor is not None:
        ctx.last_out = weakref.ref(out_tensor)
        ctx.last_out_index = len(ctx.instructions) - 1
        ctx.last_vals = vals32
    else:
        ctx.last_out = None
        ctx.last_vals = None


def _store_result(ctx, dview, vals, mask):
    dview.tensor.mm_open = False
    ctx.last_mask = mask
    if ctx.numerics:
        if vals.shape != dview.shape:
            vals = vals.reshape(dview.shape) if vals.size == math.prod(dview.shape) else \
                np.broadcast_to(vals, dview.shape)
        write(dview, vals, mask)
        if dview.tensor.acc is not None:
            dview.tensor.acc[dview.npkey()] = False


def _result(dst_given, out_tensor, dview):
    if dst_given is not None:
        return dst_given
    return out_tensor


def _dtype(dtype, default: str) -> str:
    return default if dtype is None else dt.dtype_name(dtype)


def _scalar_or_vec(x, P: int, api: str, arg: str, reads: list):
    """Scalar operand (python number) or per-partition vector tile [P, 1] -> (value or array, is_vec)."""
    if x is None:
        return None, False
    if _is_tile(x):
        v = tile_arg(x, api, arg)
        if v.shape[0] != P or _free(v.shape) != 1:
            raise KernelError("err_activation_scale_scalar_or_vector" if arg == "scale" else "err_operand_shape",
                              f"operand '{arg}' of '{api}' must be a scalar or a [{P}, 1] per-partition vector, "
                              f"got {fmt_shape(v.shape)}",
                              "reduce it to one value per partition first (e.g. nl.sum(x, axis=1))")
        reads.append(v)
        return v, True
    if isinstance(x, (int, float, np.integer, np.floating, bool, np.bool_)):
        return float(x), False
    raise KernelError("err_operand_type", f"operand '{arg}' of '{api}' has unsupported type {type(x).__name__}",
                      "pass a Python number or a [P, 1] tile")


def _vec_values(x, is_vec, numerics):
    if not numerics or x is None:
        return None
    if is_vec:
        return read(x).reshape(x.shape[0], *([1] * 1))
    return np.float32(x)


def _bcast_free(a: np.ndarray, ndim: int) -> np.ndarray:
    """Reshape a [P, 1] vector for broadcasting against an ndim-D tile."""
    return a.reshape((a.shape[0],) + (1,) * (ndim - 1))


# ------------------------------------------------------------------------------ DMA

def _dma(dst, src, mask, api: str = "dma_copy", dtype=None):
    ctx = current()
    d = as_view(dst)
    s = as_view(src)
    if isinstance(s, Broadcast):
        raise KernelError("err_unsupported_memory", "DMA source cannot be a broadcast view",
                          "materialise the broadcast into an SBUF tile with nl.copy first")
    dt_, st_ = d.tensor, s.tensor
    dbuf, sbuf_ = dt_.buffer, st_.buffer
    if dbuf == "psum" or sbuf_ == "psum":
        for v, arg in ((d, "dst"), (s, "src")):
            if v.tensor.buffer == "psum":
                raise KernelError("err_unsupported_memory",
                                  f"Expected operand '{arg}' of '{api}' to be in address space 'hbm|sbuf', but got "
                                  "a tile in 'psum' instead.",
                                  "copy PSUM results to SBUF (nl.copy) before moving them with DMA")
    ds, ss = d.shape, s.shape
    m = mask_array(mask, ds) if mask is not None else None
    if type(s) is not View or s.adv is not None or s.ranges is not st_._full_ranges:
        check_bounds(s, m if ss == ds else None)
    if type(d) is not View or d.adv is not None or d.ranges is not dt_._full_ranges:
        check_bounds(d, m)
    if ds != ss and math.prod(ds) != math.prod(ss):
        from trnsim.nki.runtime import _check_assign_shape
        _check_assign_shape(d, ss, api)
    if ctx.numerics:
        if m is not None and ss == ds:
            vals = read(s, m, raw=True)
        else:
            vals = read(s, raw=True)
        if d.tensor.dtype_name != s.tensor.dtype_name or (dtype is not None):
            vals = vals.astype(np.float32)
        if vals.shape != ds:
            vals = vals.reshape(ds) if vals.size == math.prod(ds) else np.broadcast_to(vals, ds)
        write(d, vals, m)
    ctx.last_mask = m
    n = math.prod(ds) if m is None else int(m.sum())
    onchip = d if dbuf != "hbm" else (s if sbuf_ != "hbm" else None)
    if onchip is not None:
        parts = onchip.shape[0] if onchip.shape else 1
        if m is not None:
            parts = int(m.reshape(m.shape[0], -1).any(axis=1).sum()) if m.ndim > 0 else parts
    else:
        parts = ds[0] if ds else 1
    nbytes = n * st_.itemsize
    attrs = {"api": api, "partitions": int(parts), "bytes_per_partition": nbytes // max(1, parts),
             "src": sbuf_, "dst": dbuf}
    if dt_.dtype_name != st_.dtype_name:
        attrs["cast"] = f"{st_.dtype_name}->{dt_.dtype_name}"
    ctx.emit("dma_copy", "dma", (s,), (d,), attrs, 0, nbytes, _free(ds), parts)
    _finish(ctx, None)


def dma_copy(*args, dst=None, src=None, mask=None, dst_rmw_op=None, oob_mode=None, dge_mode=None, **kw):
    """Copy ``src`` to ``dst`` with a DMA engine (casts if dtypes differ). ``dst_rmw_op=np.add`` accumulates."""
    if args:
        if len(args) == 2 and dst is None and src is None:
            dst, src = args
        else:
            raise KernelError("err_invalid_arguments", "dma_copy takes dst= and src=",
                              "call nisa.dma_copy(dst=tile, src=tensor)")
    if dst is None or src is None:
        raise KernelError("err_invalid_arguments", "dma_copy needs both dst= and src=",
                          "call nisa.dma_copy(dst=tile, src=tensor)")
    if dst_rmw_op is not None:
        ctx = current()
        d, s = as_view(dst), as_view(src)
        name = op_name(dst_rmw_op)
        if ctx.numerics:
            m = mask_array(mask, tuple(d.shape))
            write(d, ALU[name](read(d), read(s).reshape(d.shape)), m)
        ctx.emit("dma_copy", "dma", (s, d), (d,), {"api": "dma_copy", "dst_rmw_op": name, "partitions": d.shape[0],
                                                   "bytes_per_partition": _free(s.shape) * s.tensor.itemsize,
                                                   "src": s.tensor.buffer, "dst": d.tensor.buffer},
                 _free(d.shape) * d.shape[0], math.prod(s.shape) * s.tensor.itemsize, _free(d.shape), d.shape[0])
        return None
    _dma(dst, src, mask, "dma_copy")
    return None


# ------------------------------------------------------------------------------ Tensor engine

_WIDE = frozenset({"float32", "tfloat32"})
_MM_DTYPES = {"float8_e4m3", "float8_e4m3fn", "float8_e5m2", "bfloat16", "float16", "tfloat32", "float32"}


def _matmul(stationary, moving, dst=None, accumulate=None, mask=None, api: str = "nc_matmul",
            extra_attrs: dict | None = None):
    ctx = current()
    lim = ctx.limits
    s = tile_arg(stationary, api, "stationary", ("sbuf",))
    m = tile_arg(moving, api, "moving", ("sbuf",))
    if isinstance(s, Broadcast) or isinstance(m, Broadcast):
        raise KernelError("err_unsupported_memory", f"'{api}' operands cannot be broadcast views",
                          "materialise the tile first")
    if len(s.shape) != 2 or len(m.shape) != 2:
        raise KernelError("err_exceed_max_supported_dimension",
                          f"'{api}' takes 2-D tiles: stationary{fmt_shape(s.shape)}, moving{fmt_shape(m.shape)}",
                          "index the tiles down to [K, M] and [K, N]")
    K, M = s.shape
    K2, N = m.shape
    if K != K2:
        raise KernelError("err_num_partition_mismatch",
                          f"number of partitions (dimension 0 size of a tile) mismatch in parameters "
                          f"(stationary{fmt_shape(s.shape)}, moving{fmt_shape(m.shape)}) of '{api}': the contraction "
                          "dimension K must be the partition dimension of both operands [LC#1]",
                          "put K on the partition axis of both tiles (pass x transposed: nl.matmul(x_T, y, "
                          "transpose_x=True) or nisa.nc_matmul(x_T, y))")
    if M > lim.gemm_stationary_fmax:
        raise KernelError("err_size_of_dimension_exceed_arch_limit",
                          f"size of dimension 1 in 'stationary{fmt_shape(s.shape)}' of '{api}' exceed architecture "
                          f"limitation of {lim.gemm_stationary_fmax}. [TC#3 gemm_stationary_fmax on {lim.target}]",
                          f"tile M into chunks of {lim.gemm_stationary_fmax} (nl.tile_size.gemm_stationary_fmax)")
    if N > lim.gemm_moving_fmax:
        raise KernelError("err_size_of_dimension_exceed_arch_limit",
                          f"size of dimension 1 in 'moving{fmt_shape(m.shape)}' of '{api}' exceed architecture "
                          f"limitation of {lim.gemm_moving_fmax}. [TC#3 gemm_moving_fmax on {lim.target}]",
                          f"tile N into chunks of {lim.gemm_moving_fmax} (nl.tile_size.gemm_moving_fmax)")
    sd, md = s.tensor.dtype_name, m.tensor.dtype_name
    for d_, arg in ((sd, "stationary"), (md, "moving")):
        if d_ not in _MM_DTYPES:
            raise KernelError("err_unsupported_dtype",
                              f"operand '{arg}' of '{api}' has dtype {d_}; the Tensor Engine takes "
                              "fp8_e4m3/fp8_e5m2/bfloat16/float16/tfloat32/float32",
                              "cast the tile (nl.copy(x, dtype=nl.bfloat16)) before the matmul")
    if (sd in _WIDE) != (md in _WIDE):
        raise KernelError("err_matmul_dtype_mismatch",
                          f"'{api}' mixes {sd} stationary with {md} moving: if one operand is float32/tfloat32 the "
                          "other must be too",
                          "cast both operands to the same precision class (e.g. both bfloat16)")
    out_dtype = "float32"
    if dst is not None:
        d = as_view(dst)
        if d.tensor.buffer != "psum":
            raise KernelError("err_unsupported_memory",
                              f"Expected operand 'dst' of '{api}' to be in address space 'psum', but got a tile in "
                              f"'{d.tensor.buffer}' instead. (the Tensor Engine writes PSUM only)",
                              "allocate the result with nl.ndarray((M, N), nl.float32, buffer=nl.psum)")
        okd = {"float32"} if lim.neuroncore_version in ("NC-v2", "NC-v3") else {"float32", "bfloat16"}
        if d.tensor.dtype_name not in okd:
            raise KernelError("err_unsupported_dtype",
                              f"matmul destination dtype {d.tensor.dtype_name}: PSUM matmul results are "
                              f"{'/'.join(sorted(okd))} on {lim.target}",
                              "use an nl.float32 PSUM tile and cast when copying to SBUF")
        if tuple(d.shape) != (M, N):
            raise KernelError("err_shape_mismatch",
                              f"matmul destination {fmt_shape(d.shape)} does not match stationary.T @ moving = "
                              f"[{M}, {N}]", "allocate the PSUM tile as [M, N]")
        dview, out_t = d, None
    else:
        dview, out_t = _out_tile((M, N), out_dtype, "psum", api)
    msk = mask_array(mask, (M, N)) if mask is not None else None
    ctx.last_mask = msk
    group_start = True
    reads = [s, m]
    res = None
    if ctx.numerics:
        a = read(s)
        b = read(m)
        res = a.T @ b
        if dst is not None:
            old_acc = dview.tensor.acc[dview.npkey()]
            if accumulate is None:
                acc_mask = old_acc
            else:
                acc_mask = np.full((M, N), bool(accumulate))
            group_start = not bool(np.any(acc_mask))
            if not group_start:
                old = read(dview)
                res_w = np.where(acc_mask, old + res, res)
            else:
                res_w = res
            write(dview, res_w, msk)
            dview.tensor.acc[dview.npkey()] = True if msk is None else (msk | old_acc)
        else:
            write(dview, res, msk)
            dview.tensor.acc[...] = True
    elif dst is not None:
        group_start = accumulate is False or (accumulate is None and not dview.tensor.mm_open)
    dview.tensor.mm_open = True
    if not group_start:
        reads.append(dview)
    attrs = {"accumulate": not group_start, "group_start": group_start, "stationary_free": M, "moving_free": N,
             "dtype": sd if sd == md else f"{sd}x{md}"}
    if extra_attrs:
        attrs.update(extra_attrs)
    ctx.emit("nc_matmul", "tensor", reads, (dview,), attrs, 2 * K * M * N, 0, N, K)
    _finish(ctx, out_t, res)
    return _result(dst, out_t, dview)


def nc_matmul(*args, mask=None, accumulate=None, is_stationary_onezero=False, is_moving_onezero=False,
              is_transpose=False, tile_position=(), tile_size=(), perf_mode=None, name=None, **kw):
    """``stationary.T @ moving`` into PSUM (fp32). Classic: ``nc_matmul(stationary, moving)`` returns a PSUM
    tile; new: ``nc_matmul(dst, stationary, moving, accumulate=None|True|False)`` (``None``: first write to a
    PSUM location overwrites, later writes accumulate)."""
    dst = kw.pop("dst", None)
    stationary = kw.pop("stationary", None)
    moving = kw.pop("moving", None)
    if kw:
        raise KernelError("err_invalid_arguments", f"unexpected arguments {sorted(kw)} to nc_matmul",
                          "nc_matmul(stationary, moving) or nc_matmul(dst, stationary, moving)")
    pos = list(args)
    if len(pos) == 3:
        dst, stationary, moving = pos
    elif len(pos) == 2:
        if dst is not None:
            stationary, moving = pos
        else:
            stationary, moving = pos
    elif len(pos) == 1:
        if stationary is None:
            stationary = pos[0]
        else:
            dst = pos[0]
    if stationary is None or moving is None:
        raise KernelError("err_invalid_arguments", "nc_matmul needs stationary and moving tiles",
                          "nc_matmul(stationary, moving) or nc_matmul(dst, stationary, moving)")
    if is_transpose:
        return nc_transpose(moving, engine="tensor", dst=dst)
    return _matmul(stationary, moving, dst, accumulate, mask)


def _transpose(data, eng: str, dst=None, mask=None, dtype=None, api: str = "nc_transpose"):
    ctx = current()
    lim = ctx.limits
    if eng in (None, "unknown"):
        v0 = as_view(data)
        eng = "vector" if (len(v0.shape) == 2 and v0.shape[0] <= lim.vector_transpose_max[0]
                           and v0.shape[1] <= lim.vector_transpose_max[1]) else "tensor"
    bufs = ("sbuf",) if eng == "tensor" else ("sbuf", "psum")
    v = tile_arg(data, api, "data" if api == "nc_transpose" else "x", bufs)
    if len(v.shape) != 2:
        raise KernelError("err_exceed_max_supported_dimension",
                          f"parameter '{'data' if api == 'nc_transpose' else 'x'}{fmt_shape(v.shape)}' of '{api}' "
                          "exceed max supported number of dimensions of 2.",
                          "transpose 2-D tiles [P, F]")
    P, F = v.shape
    cap = lim.tensor_transpose_max if eng == "tensor" else lim.vector_transpose_max
    for dim, (size, c) in enumerate(zip((P, F), cap)):
        if size > c:
            raise KernelError("err_size_of_dimension_exceed_arch_limit",
                              f"size of dimension {dim} in 'x{fmt_shape(v.shape)}' of '{api}' exceed architecture "
                              f"limitation of {c}. ({eng} engine transpose on {lim.target})",
                              f"transpose in blocks of at most {cap[0]}x{cap[1]}"
                              + ("" if eng == "tensor" else " or use engine=nisa.tensor_engine"))
    if eng == "tensor":
        odt = "float32" if lim.neuroncore_version == "NC-v2" else v.tensor.dtype_name
        dview, out_t = _out_tile((F, P), _dtype(dtype, odt), "psum", api, dst, allowed=("psum",))
    else:
        dview, out_t = _out_tile((F, P), _dtype(dtype, v.tensor.dtype_name), "sbuf", api, dst)
    res = None
    if ctx.numerics:
        res = read(v).T
        _store_result(ctx, dview, res, mask_array(mask, (F, P)))
    ctx.emit("nc_transpose", eng, (v,), (dview,), {"engine": eng}, 0, 0, F, P)
    _finish(ctx, out_t, res)
    return _result(dst, out_t, dview)


def nc_transpose(*args, mask=None, dtype=None, engine=None, **kw):
    """Swap partition and free axes: TensorE (<= 128x128, SBUF -> PSUM) or VectorE (<= 32x32)."""
    dst = kw.pop("dst", None)
    data = kw.pop("data", None)
    if len(args) == 2:
        dst, data = args
    elif len(args) == 1:
        data = args[0]
    return _transpose(data, engine, dst, mask, dtype)


# ------------------------------------------------------------------------------ Vector / Scalar

def _tt(data1, data2, op, dtype=None, mask=None, dst=None, eng="vector", api="tensor_tensor", pbcast_ok=False):
    ctx = current()
    name = op_name(op)
    a = tile_arg(data1, api, "data1")
    b = tile_arg(data2, api, "data2")
    if a.tensor.buffer == "psum" and b.tensor.buffer == "psum" and api == "tensor_tensor":
        raise KernelError("err_unsupported_memory",
                          "tensor_tensor cannot read both inputs from PSUM",
                          "copy one of them to SBUF first (nl.copy)")
    if a.shape[0] != b.shape[0] and not (pbcast_ok and (a.shape[0] == 1 or b.shape[0] == 1)):
        raise KernelError("err_num_partition_mismatch",
                          f"number of partitions (dimension 0 size of a tile) mismatch in parameters "
                          f"(data1{fmt_shape(a.shape)}, data2{fmt_shape(b.shape)}) of '{api}'",
                          "make both tiles span the same partitions (broadcast explicitly with "
                          "tile.broadcast_to((P, n)) if needed)")
    try:
        shape = tuple(int(x) for x in np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    except ValueError:
        raise KernelError("err_shape_mismatch",
                          f"shapes {fmt_shape(a.shape)} and {fmt_shape(b.shape)} of '{api}' ({name}) do not match "
                          "or broadcast", "use tiles of the same shape (or size-1 dimensions to broadcast)") from None
    _check_free_limit(a, api, "data1")
    odt = _dtype(dtype, dt.promote(a.tensor.dtype_name, b.tensor.dtype_name))
    dview, out_t = _out_tile(shape, odt, "sbuf", api, dst)
    res = None
    if ctx.numerics:
        with np.errstate(all="ignore"):
            res = ALU[name](read(a), read(b)).astype(np.float32, copy=False)
        _store_result(ctx, dview, res, mask_array(mask, tuple(dview.shape)))
    n = _free(shape)
    attrs = {"op": name}
    if a.shape[0] != b.shape[0]:
        attrs["partition_broadcast"] = True
    ctx.emit("tensor_tensor", eng, (a, b), (dview,), attrs, n * shape[0], 0, n, shape[0])
    _finish(ctx, out_t, res)
    return _result(dst, out_t, dview)


def tensor_tensor(*args, op=None, dtype=None, mask=None, engine=None, **kw):
    """Element-wise ``data1 op data2`` on VectorE (fp32 arithmetic). Same partitions; not both in PSUM."""
    dst = kw.pop("dst", None)
    data1 = kw.pop("data1", None)
    data2 = kw.pop("data2", None)
    pos = list(args)
    if len(pos) == 4:
        dst, data1, data2, op = pos
    elif len(pos) == 3:
        if _is_tile(pos[2]):
            dst, data1, data2 = pos
        else:
            data1, data2, op = pos
    elif len(pos) == 2:
        data1, data2 = pos
    eng = "gpsimd" if engine in ("gpsimd",) else "vector"
    return _tt(data1, data2, op, dtype, mask, dst, eng)


def _ts(data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False, dtype=None, mask=None,
        dst=None, eng="vector", api="tensor_scalar"):
    ctx = current()
    v = tile_arg(data, api, "data")
    _check_free_limit(v, api, "data")
    P = v.shape[0]
    reads = [v]
    n0 = op_name(op0)
    o0, vec0 = _scalar_or_vec(operand0, P, api, "operand0", reads)
    n1 = op_name(op1) if op1 is not None else None
    o1, vec1 = _scalar_or_vec(operand1, P, api, "operand1", reads) if op1 is not None else (None, False)
    dflt = v.tensor.dtype_name
    for o, vec in ((o0, vec0), (o1, vec1)):
        if vec:
            dflt = dt.promote(dflt, o.tensor.dtype_name)
        elif o is not None:
            dflt = dt.promote(dflt, "float32" if not float(o).is_integer() or dt.is_float(dflt) else "int32")
    odt = _dtype(dtype, dflt)
    shape = tuple(v.shape)
    dview, out_t = _out_tile(shape, odt, "sbuf", api, dst)
    res = None
    if ctx.numerics:
        x = read(v)
        with np.errstate(all="ignore"):
            for name, o, vec, rev in ((n0, o0, vec0, reverse0), (n1, o1, vec1, reverse1)):
                if name is None:
                    continue
                ov = _bcast_free(read(o), x.ndim) if vec else np.float32(o)
                x = ALU[name](ov, x) if rev else ALU[name](x, ov)
            res = np.asarray(x, dtype=np.float32)
        _store_result(ctx, dview, res, mask_array(mask, shape))
    n = _free(shape)
    attrs = {"op0": n0, "op1": n1, "operand0_is_vector": vec0, "operand1_is_vector": vec1}
    ctx.emit("tensor_scalar", eng, reads, (dview,), attrs, n * P * (1 + (n1 is not None)), 0, n, P)
    _finish(ctx, out_t, res)
    return _result(dst, out_t, dview)


def tensor_scalar(*args, op0=None, operand0=None, reverse0=False, op1=None, operand1=None, reverse1=False,
                  dtype=None, mask=None, engine=None, **kw):
    """``(data op0 operand0) op1 operand1`` with scalar or [P, 1] operands (VectorE by default)."""
    dst = kw.pop("dst", None)
    data = kw.pop("data", None)
    pos = list(args)
    if pos and _is_tile(pos[0]) and len(pos) >= 2 and _is_tile(pos[1]) and (len(pos) >= 3 or op0 is not None):
        dst = pos.pop(0)
    if pos:
        data = pos.pop(0)
    if pos:
        op0 = pos.pop(0)
    if pos:
        operand0 = pos.pop(0)
    if pos:
        reverse0 = pos.pop(0)
    if pos:
        op1 = pos.pop(0)
    if pos:
        operand1 = pos.pop(0)
    eng = {"scalar": "scalar", "gpsimd": "gpsimd"}.get(engine, "vector")
    return _ts(data, op0, operand0, reverse0, op1, operand1, reverse1, dtype, mask, dst, eng)


def _activation(func, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None, dtype=None, mask=None,
                dst=None, api="activation"):
    ctx = current()
    name = op_name(func, "act")
    v = tile_arg(data, api, "data")
    _check_free_limit(v, api, "data")
    P = v.shape[0]
    reads = [v]
    if _is_tile(scale):
        sv = tile_arg(scale, api, "scale")
        if sv.tensor.dtype_name != "float32":
            raise KernelError("err_activation_scale_invalid_type",
                              f"activation scale tile has dtype {sv.tensor.dtype_name}; it must be float32",
                              "keep the scale vector in nl.float32")
    sc, sc_vec = _scalar_or_vec(scale, P, api, "scale", reads)
    if bias is not None and not _is_tile(bias):
        raise KernelError("err_activation_bias_invalid_type", "activation bias must be a [P, 1] tile",
                          "put the bias in a [P, 1] tile (e.g. nl.full((P, 1), b, nl.float32))")
    if bias is not None:
        bv = tile_arg(bias, api, "bias")
        if bv.tensor.dtype_name not in ("float32", "float16", "bfloat16"):
            raise KernelError("err_activation_bias_invalid_type",
                              f"activation bias has dtype {bv.tensor.dtype_name}; it must be float32/float16/bfloat16",
                              "cast the bias tile")
    bi, bi_vec = _scalar_or_vec(bias, P, api, "bias", reads)
    shape = tuple(v.shape)
    dview, out_t = _out_tile(shape, _dtype(dtype, v.tensor.dtype_name), "sbuf", api, dst)
    res = None
    red_name = op_name(reduce_op, "reduce") if reduce_op is not None else None
    if ctx.numerics:
        x = read(v)
        if sc_vec:
            x = x * _bcast_free(read(sc), x.ndim)
        elif sc is not None and sc != 1.0:
            x = x * np.float32(sc)
        if bi is not None:
            x = x + _bcast_free(read(bi), x.ndim)
        with np.errstate(all="ignore"):
            res = np.asarray(ACT[name](x), dtype=np.float32)
        _store_result(ctx, dview, res, mask_array(mask, shape))
    writes = [dview]
    if red_name is not None:
        if reduce_res is None:
            raise KernelError("err_invalid_arguments", "activation with reduce_op needs reduce_res=",
                              "pass reduce_res=<[P, 1] tile>")
        rv = as_view(reduce_res)
        if tuple(rv.shape) != (P, 1):
            raise KernelError("err_shape_mismatch", f"reduce_res must be [{P}, 1], got {fmt_shape(rv.shape)}",
                              f"allocate it as nl.ndarray(({P}, 1), nl.float32)")
        if ctx.numerics:
            axes = tuple(range(1, res.ndim))
            write(rv, REDUCE[red_name](res, axis=axes, keepdims=True).reshape(P, 1))
        writes.append(rv)
    n = _free(shape)
    attrs = {"func": name, "has_scale": sc_vec or (sc is not None and sc != 1.0), "has_bias": bi is not None,
             "reduce": red_name is not None}
    if red_name:
        attrs["reduce_op"] = red_name
    ctx.emit("activation", "scalar", reads, writes, attrs, n * P * (1 + int(attrs["has_scale"]) + int(bi is not None)),
             0, n, P)
    _finish(ctx, out_t, res)
    return _result(dst, out_t, dview)


def activation(*args, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=None, mask=None,
               dtype=None, **kw):
    """``out = func(data * scale + bias)`` on ScalarE (fp32 internally), optional free-axis reduce into reduce_res."""
    dst = kw.pop("dst", None)
    op = kw.pop("op", None)
    data = kw.pop("data", None)
    pos = list(args)
    if pos and _is_tile(pos[0]):
        dst = pos.pop(0)
    if pos:
        op = pos.pop(0)
    if pos:
        data = pos.pop(0)
    if pos:
        bias = pos.pop(0)
    if pos:
        scale = pos.pop(0)
    return _activation(op, data, bias, scale, reduce_op, reduce_res, dtype, mask, dst)


def activation_reduce(*args, reduce_op=None, reduce_res=None, **kw):
    return activation(*args, reduce_op=reduce_op, reduce_res=reduce_res, **kw)


def _reduce(op, data, axis, dtype=None, mask=None, negate=False, keepdims=False, dst=None, api="tensor_reduce",
            name_override=None, strict=True):
    ctx = current()
    name = name_override or op_name(op, "reduce")
    v = tile_arg(data, api, "data")
    nd = len(v.shape)
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    axes = sorted({int(a) + nd if int(a) < 0 else int(a) for a in axes})
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
    _check_free_limit(v, api, "data")
    shape = [s for k, s in enumerate(v.shape) if k not in axes] if not keepdims else \
        [1 if k in axes else s for k, s in enumerate(v.shape)]
    while len(shape) < 2:
        shape.append(1)
    shape = tuple(shape)
    odt = _dtype(dtype, v.tensor.dtype_name)
    dview, out_t = _out_tile(shape, odt, "sbuf", api, dst)
    res = None
    if ctx.numerics:
        x = read(v)
        with np.errstate(all="ignore"):
            if name in REDUCE:
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
        _store_result(ctx, dview, res, mask_array(mask, shape))
    n = _free(v.shape)
    ctx.emit("tensor_reduce", "vector", (v,), (dview,), {"op": name, "axis": tuple(axes), "negate": bool(negate)},
             n * v.shape[0], 0, n, v.shape[0])
    _finish(ctx, out_t, res)
    return _result(dst, out_t, dview)


def tensor_reduce(*args, axis=None, mask=None, dtype=None, negate=False, keepdims=False, **kw):
    """Reduce ``data`` with ``op`` along free ``axis`` (must include the last axis; never axis 0)."""
    dst = kw.pop("dst", None)
    op = kw.pop("op", None)
    data = kw.pop("data", None)
    pos = list(args)
    if pos and _is_tile(pos[0]):
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


def _copy(src, dtype=None, mask=None, dst=None, eng="vector", api="tensor_copy"):
    ctx = current()
    if eng == "gpsimd":
        v = tile_arg(src, api, "src", ("sbuf",))
    else:
        v = tile_arg(src, api, "src")
    shape = tuple(v.shape)
    dview, out_t = _out_tile(shape, _dtype(dtype, v.tensor.dtype_name), "sbuf", api, dst)
    if eng == "gpsimd" and dview.tensor.buffer == "psum":
        raise KernelError("err_unsupported_memory", "GpSimd engine cannot access PSUM",
                          "use the Vector or Scalar engine to read/write PSUM")
    res = None
    if ctx.numerics:
        res = read(v)
        _store_result(ctx, dview, res, mask_array(mask, tuple(dview.shape)))
    n = _free(shape)
    base = v.view if isinstance(v, Broadcast) else v
    ctx.emit("tensor_copy", eng, (base,), (dview,), {"src": v.tensor.buffer, "dst": dview.tensor.buffer}, 0, 0, n,
             shape[0])
    _finish(ctx, out_t, res)
    return _result(dst, out_t, dview)


def tensor_copy(*args, mask=None, dtype=None, engine=None, **kw):
    """Copy (and cast) a tile between SBUF/PSUM locations.

    Classic ``tensor_copy(src)``; new ``tensor_copy(dst=, src=)``."""
    dst = kw.pop("dst", None)
    src = kw.pop("src", None)
    pos = list(args)
    if len(pos) == 2:
        dst, src = pos
    elif len(pos) == 1:
        src = pos[0]
    eng = {"scalar": "scalar", "gpsimd": "gpsimd"}.get(engine, "vector")
    return _copy(src, dtype, mask, dst, eng)


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
    n = _free(d.shape)
    ctx.emit("memset", eng, (), (d,), {"value": value}, 0, 0, n, d.shape[0])
    _finish(ctx, None)


def memset(*args, value=None, dtype=None, mask=None, engine=None, **kw):
    """Fill a tile with a constant. Classic ``memset(shape, value, dtype)`` returns a new SBUF tile;
    new ``memset(dst, value)``."""
    dst = kw.pop("dst", None)
    shape = kw.pop("shape", None)
    pos = list(args)
    if pos and _is_tile(pos[0]):
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


def iota(expr, dtype=None, *, mask=None, dst=None, **kw):
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
    dview, out_t = _out_tile(shape, _dtype(dtype, "int32"), "sbuf", "iota", dst, allowed=("sbuf",))
    res = None
    if ctx.numerics:
        res = np.broadcast_to(expr.values(), shape).astype(np.float32)
        _store_result(ctx, dview, res, mask_array(mask, shape))
    n = _free(shape)
    ctx.emit("iota", "gpsimd", (), (dview,), {}, 0, 0, n, shape[0])
    _finish(ctx, out_t, res)
    return _result(dst, out_t, dview)


def affine_select(pred, on_true_tile, on_false_value, *, dtype=None, mask=None, dst=None, **kw):
    """``out = on_true_tile where pred else on_false_value`` with an affine predicate (GpSimd)."""
    ctx = current()
    v = tile_arg(on_true_tile, "affine_select", "on_true_tile", ("sbuf",))
    shape = tuple(v.shape)
    if not isinstance(pred, Mask):
        raise KernelError("err_unsupported_expression_in_mask", "affine_select pred must be an affine predicate",
                          "build it from nl.arange / nl.mgrid comparisons")
    p = np.broadcast_to(pred.arr.reshape(pred.arr.shape + (1,) * (len(shape) - pred.arr.ndim)), shape)
    dview, out_t = _out_tile(shape, _dtype(dtype, v.tensor.dtype_name), "sbuf", "affine_select", dst)
    res = None
    if ctx.numerics:
        res = np.where(p, read(v), np.float32(on_false_value)).astype(np.float32)
        _store_result(ctx, dview, res, mask_array(mask, shape))
    n = _free(shape)
    ctx.emit("affine_select", "gpsimd", (v,), (dview,), {}, n * shape[0], 0, n, shape[0])
    _finish(ctx, out_t, res)
    return _result(dst, out_t, dview)


def bn_stats(data, *, dtype=None, mask=None, dst=None, **kw):
    """Per-partition statistics of ``data`` ([P, F], F <= bn_stats_fmax) for bn_aggr.

    Output [P, 6] float32. The hardware's 6-value layout is not documented; trnsim stores
    (count, mean, M2 = count * variance, 0, 0, 0) per partition, which bn_aggr combines exactly.
    """
    ctx = current()
    v = tile_arg(data, "bn_stats", "data")
    lim = ctx.limits
    F = _free(v.shape)
    if F > lim.bn_stats_fmax:
        raise KernelError("err_size_of_dimension_exceed_arch_limit",
                          f"size of dimension 1 in 'data{fmt_shape(v.shape)}' of 'bn_stats' exceed architecture "
                          f"limitation of {lim.bn_stats_fmax}.",
                          f"call bn_stats on chunks of {lim.bn_stats_fmax} (nl.tile_size.bn_stats_fmax) and combine "
                          "them with bn_aggr")
    P = v.shape[0]
    dview, out_t = _out_tile((P, 6), _dtype(dtype, "float32"), "sbuf", "bn_stats", dst)
    res = None
    if ctx.numerics:
        x = read(v).reshape(P, -1)
        res = np.zeros((P, 6), dtype=np.float32)
        res[:, 0] = F
        res[:, 1] = x.mean(axis=1)
        res[:, 2] = x.var(axis=1) * F
        _store_result(ctx, dview, res, None)
    ctx.emit("bn_stats", "vector", (v,), (dview,), {}, 3 * F * P, 0, F, P)
    _finish(ctx, out_t, res)
    return _result(dst, out_t, dview)


def bn_aggr(data, *, dtype=None, mask=None, dst=None, **kw):
    """Combine bn_stats outputs [P, 6*k] into [P, 2] = (mean, variance) per partition."""
    ctx = current()
    v = tile_arg(data, "bn_aggr", "data")
    P = v.shape[0]
    F = _free(v.shape)
    if F % 6:
        raise KernelError("err_shape_mismatch", f"bn_aggr input {fmt_shape(v.shape)} is not a multiple of 6 values "
                          "per partition", "pass the concatenated outputs of bn_stats")
    dview, out_t = _out_tile((P, 2), _dtype(dtype, "float32"), "sbuf", "bn_aggr", dst)
    res = None
    if ctx.numerics:
        s = read(v).reshape(P, F // 6, 6).astype(np.float64)
        cnt, mean, m2 = s[..., 0], s[..., 1], s[..., 2]
        n = cnt.sum(axis=1)
        mu = (cnt * mean).sum(axis=1) / n
        var = (m2 + cnt * (mean - mu[:, None]) ** 2).sum(axis=1) / n
        res = np.stack([mu, var], axis=1).astype(np.float32)
        _store_result(ctx, dview, res, None)
    ctx.emit("bn_aggr", "vector", (v,), (dview,), {}, 4 * F * P, 0, F, P)
    _finish(ctx, out_t, res)
    return _result(dst, out_t, dview)


def reciprocal(data, *, dtype=None, mask=None, dst=None, **kw):
    """1/x on VectorE."""
    ctx = current()
    v = tile_arg(data, "reciprocal", "data")
    shape = tuple(v.shape)
    dview, out_t = _out_tile(shape, _dtype(dtype, v.tensor.dtype_name), "sbuf", "reciprocal", dst)
    res = None
    if ctx.numerics:
        with np.errstate(all="ignore"):
            res = (np.float32(1) / read(v)).astype(np.float32)
        _store_result(ctx, dview, res, mask_array(mask, shape))
    n = _free(shape)
    ctx.emit("reciprocal", "vector", (v,), (dview,), {}, n * shape[0], 0, n, shape[0])
    _finish(ctx, out_t, res)
    return _result(dst, out_t, dview)


def scalar_tensor_tensor(*, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, dtype=None,
                         mask=None, dst=None, **kw):
    """``(data op0 operand0) op1 operand1`` on VectorE: operand0 a scalar or [P, 1] vector, operand1 a tile."""
    ctx = current()
    api = "scalar_tensor_tensor"
    v = tile_arg(data, api, "data")
    _check_free_limit(v, api, "data")
    P = v.shape[0]
    reads = [v]
    n0, n1 = op_name(op0), op_name(op1)
    o0, vec0 = _scalar_or_vec(operand0, P, api, "operand0", reads)
    t1 = tile_arg(operand1, api, "operand1")
    if tuple(t1.shape) != tuple(v.shape):
        raise KernelError("err_shape_mismatch", f"operand1 {fmt_shape(t1.shape)} of '{api}' must match data "
                          f"{fmt_shape(v.shape)}", "use tiles of the same shape")
    reads.append(t1)
    shape = tuple(v.shape)
    dview, out_t = _out_tile(shape, _dtype(dtype, dt.promote(v.tensor.dtype_name, t1.tensor.dtype_name)), "sbuf",
                             api, dst)
    res = None
    if ctx.numerics:
        x = read(v)
        with np.errstate(all="ignore"):
            ov = _bcast_free(read(o0), x.ndim) if vec0 else np.float32(o0)
            x = ALU[n0](ov, x) if reverse0 else ALU[n0](x, ov)
            y = read(t1)
            res = np.asarray(ALU[n1](y, x) if reverse1 else ALU[n1](x, y), dtype=np.float32)
        _store_result(ctx, dview, res, mask_array(mask, shape))
    n = _free(shape)
    ctx.emit(api, "vector", reads, (dview,), {"op0": n0, "op1": n1}, 2 * n * P, 0, n, P)
    _finish(ctx, out_t, res)
    return _result(dst, out_t, dview)


def tensor_scalar_reduce(*, data, op0, operand0, reduce_op, reduce_res, reverse0=False, dtype=None, mask=None,
                         dst=None, **kw):
    """``out = data op0 operand0`` and ``reduce_res = reduce_op(out)`` along the free axes (one VectorE
    instruction)."""
    ctx = current()
    api = "tensor_scalar_reduce"
    v = tile_arg(data, api, "data")
    _check_free_limit(v, api, "data")
    P = v.shape[0]
    reads = [v]
    n0 = op_name(op0)
    rname = op_name(reduce_op, "reduce")
    o0, vec0 = _scalar_or_vec(operand0, P, api, "operand0", reads)
    rv = as_view(reduce_res)
    if tuple(rv.shape) != (P, 1):
        raise KernelError("err_shape_mismatch", f"reduce_res must be [{P}, 1], got {fmt_shape(rv.shape)}",
                          f"allocate it as nl.ndarray(({P}, 1), nl.float32)")
    shape = tuple(v.shape)
    dview, out_t = _out_tile(shape, _dtype(dtype, v.tensor.dtype_name), "sbuf", api, dst)
    res = None
    if ctx.numerics:
        x = read(v)
        with np.errstate(all="ignore"):
            ov = _bcast_free(read(o0), x.ndim) if vec0 else np.float32(o0)
            res = np.asarray(ALU[n0](ov, x) if reverse0 else ALU[n0](x, ov), dtype=np.float32)
        _store_result(ctx, dview, res, mask_array(mask, shape))
        write(rv, REDUCE[rname](res, axis=tuple(range(1, res.ndim)), keepdims=True).reshape(P, 1))
    n = _free(shape)
    ctx.emit(api, "vector", reads, (dview, rv), {"op0": n0, "reduce_op": rname}, 2 * n * P, 0, n, P)
    _finish(ctx, out_t, res)
    return _result(dst, out_t, dview)


def tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0=False, reverse1=False, *, dtype=None, mask=None,
                       dst=None, **kw):
    """Scan along the free axis: ``r[:, i] = op1(op0(data0[:, i], r[:, i-1]), data1[:, i])``, ``r[:, -1] = initial``."""
    ctx = current()
    api = "tensor_tensor_scan"
    a = tile_arg(data0, api, "data0")
    b = tile_arg(data1, api, "data1")
    if tuple(a.shape) != tuple(b.shape) or len(a.shape) != 2:
        raise KernelError("err_shape_mismatch", f"'{api}' needs two 2-D tiles of one shape, got {fmt_shape(a.shape)} "
                          f"and {fmt_shape(b.shape)}", "pass [P, F] tiles of the same shape")
    P, F = a.shape
    reads = [a, b]
    n0, n1 = op_name(op0), op_name(op1)
    init, ivec = _scalar_or_vec(initial, P, api, "initial", reads)
    dview, out_t = _out_tile((P, F), _dtype(dtype, dt.promote(a.tensor.dtype_name, b.tensor.dtype_name)), "sbuf",
                             api, dst)
    res = None
    if ctx.numerics:
        x, y = read(a), read(b)
        r = read(init).reshape(P) if ivec else np.full(P, init, dtype=np.float32)
        res = np.empty((P, F), dtype=np.float32)
        with np.errstate(all="ignore"):
            for i in range(F):
                t = ALU[n0](r, x[:, i]) if reverse0 else ALU[n0](x[:, i], r)
                r = ALU[n1](t, y[:, i]) if not reverse1 else ALU[n1](y[:, i], t)
                res[:, i] = r
        _store_result(ctx, dview, res, mask_array(mask, (P, F)))
    ctx.emit(api, "vector", reads, (dview,), {"op0": n0, "op1": n1}, 2 * P * F, 0, F, P)
    _finish(ctx, out_t, res)
    return _result(dst, out_t, dview)


__all__ = ["nc_matmul", "nc_transpose", "activation", "activation_reduce", "tensor_tensor", "tensor_scalar",
           "tensor_reduce", "tensor_copy", "memset", "iota", "dma_copy", "bn_stats", "bn_aggr", "affine_select",
           "reciprocal", "scalar_tensor_tensor", "tensor_scalar_reduce", "tensor_tensor_scan", "engine",
           "reduce_cmd", "oob_mode", "dge_mode", "nc_version", "get_nc_version"]
