"""Scans and cross-partition reductions: ``tensor_scalar_cumulative`` (Vector Engine running reduction
through the shared accumulator), ``tensor_partition_reduce`` and ``sequence_bounds`` (GpSimd)."""
from __future__ import annotations

import numpy as np

from trnsim.nki.context import current, read, write
from trnsim.nki.isa import _accum
from trnsim.nki.isa._result import done, dst_or_new
from trnsim.nki.isa.common import free_size, require_fp32_vector, scalar_or_vector, tile_arg
from trnsim.nki.isa.enums import reduce_cmd as _rc
from trnsim.nki.isa.ops import BITVEC, ALU, op_name
from trnsim.nki.dtypes import dtype_name as _dtname
from trnsim.nki.rules import KernelError, fmt_shape

_CUM_OPS = ("add", "subtract", "multiply", "maximum", "minimum")
_CUM_DTYPES = ("bfloat16", "float16", "float32", "float8_e4m3", "float8_e4m3fn", "float8_e5m2", "uint8", "uint16",
               "int8", "int16")


def tensor_scalar_cumulative(dst=None, src=None, op0=None, op1=None, imm0=None, imm1=None, reduce_cmd=_rc.reset_reduce,
                             name=None):
    """Running reduction along the free axis: ``reg = op1(op0(src[:, i], imm0), reg)``; ``dst[:, i] = reg``.

    ``reduce_cmd``: ``reset_reduce`` starts ``reg`` at op1's identity, ``load_reduce`` at ``imm1``, ``reduce``
    continues the Vector accumulator left by the previous accumulating instruction. ``imm0``/``imm1``: numbers
    or [P, 1] fp32 tiles."""
    ctx = current()
    api = "tensor_scalar_cumulative"
    s = tile_arg(src, api, "src")
    d, out_t = dst_or_new(dst, s.shape, s.tensor.dtype_name, api)
    for v, arg in ((s, "src"), (d, "dst")):
        if v.tensor.dtype_name not in _CUM_DTYPES:
            raise KernelError("err_unsupported_dtype", f"{arg} of '{api}' has dtype {v.tensor.dtype_name}; the ISA "
                              f"takes {', '.join(_CUM_DTYPES)} (not int32/uint32)", "cast to float32 first")
    if d.shape[0] != s.shape[0] or free_size(d.shape) != free_size(s.shape):
        raise KernelError("err_shape_mismatch", f"dst{fmt_shape(d.shape)} and src{fmt_shape(s.shape)} of '{api}' must "
                          "have the same partitions and elements per partition", "allocate dst like src")
    n0, n1 = op_name(op0), op_name(op1)
    if n0 in BITVEC:
        # "op0: ... must be an arithmetic op" (nki.isa.tensor_scalar_cumulative)
        raise KernelError("err_unsupported_op", f"op0={n0} of '{api}' is a bitvec operator; op0 must be arithmetic",
                          "use an arithmetic op0 (nl.add, nl.multiply, nl.maximum, ...)")
    if n1 not in _CUM_OPS:
        raise KernelError("err_unsupported_op", f"op1={n1} of '{api}': the cumulative op must be one of "
                          f"{', '.join(_CUM_OPS)}", "use nl.add (prefix sum), nl.multiply, nl.maximum or nl.minimum")
    cmd = _accum.check_cmd(reduce_cmd, api, (_rc.reset_reduce, _rc.reduce, _rc.load_reduce))
    P, F = s.shape[0], free_size(s.shape)
    reads = [s]
    i0, v0 = scalar_or_vector(imm0, P, api, "imm0", reads)
    i1, v1 = scalar_or_vector(imm1, P, api, "imm1", reads) if imm1 is not None else (None, False)
    # imm0 / imm1 "Must be FP32 datatype" (nki.isa.tensor_scalar_cumulative)
    require_fp32_vector(i0, v0, api, "imm0")
    require_fp32_vector(i1, v1, api, "imm1")
    if cmd == _rc.load_reduce and imm1 is None:
        raise KernelError("err_invalid_arguments", f"'{api}' with reduce_cmd.load_reduce needs imm1 (the initial "
                          "accumulator value)", "pass imm1=<number or [P, 1] tile>")
    init = None
    if cmd == _rc.load_reduce and ctx.numerics:
        init = read(i1).reshape(P) if v1 else np.float32(i1)
    reg = _accum.start(ctx, "vector", cmd, n1, P, api, init)
    if ctx.numerics:
        x = read(s).reshape(P, F)
        a = read(i0).reshape(P, 1) if v0 else np.float32(i0)
        with np.errstate(all="ignore"):
            t = ALU[n0](x, a).astype(np.float32)
            out = np.empty((P, F), dtype=np.float32)
            for i in range(F):
                reg = ALU[n1](t[:, i], reg).astype(np.float32)
                out[:, i] = reg
        write(d, out.reshape(d.shape))
    _accum.save(ctx, "vector", reg if ctx.numerics else None)
    ctx.emit(api, "vector", reads, (d,), {"op0": n0, "op1": n1, "reduce_cmd": cmd}, 2 * P * F, 0, F, P)
    return done(ctx, dst, out_t)


_PR_OPS = {"add": np.sum, "average": np.mean, "maximum": np.max, "bitwise_or": None, "bitwise_and": None}


def tensor_partition_reduce(dst=None, op=None, data=None, name=None):
    """Reduce ``data`` across its partitions (axis 0) on GpSimd: ``dst[0, ...] = op over p of data[p, ...]``.
    ``op``: nl.add, nl.average (mean), nl.maximum, nl.bitwise_or, nl.bitwise_and."""
    ctx = current()
    api = "tensor_partition_reduce"
    v = tile_arg(data, api, "data", ("sbuf",))
    d, out_t = dst_or_new(dst, (1,) + tuple(v.shape[1:]), v.tensor.dtype_name, api, ("sbuf",))
    name_ = op if isinstance(op, str) else (getattr(op, "_nki_op", None) or getattr(op, "__name__", ""))
    name_ = {"mean": "average", "max": "maximum", "amax": "maximum", "sum": "add"}.get(name_, name_)
    if name_ not in _PR_OPS:
        name_ = op_name(op)
    if name_ not in _PR_OPS:
        raise KernelError("err_unsupported_op", f"op={name_} of '{api}': partition reductions are add, average, "
                          "maximum, bitwise_or, bitwise_and", "use nl.add, nl.maximum, nl.bitwise_or, ...")
    if d.shape[0] != 1 or free_size(d.shape) != free_size(v.shape):
        raise KernelError("err_shape_mismatch", f"dst{fmt_shape(d.shape)} of '{api}' must be one partition with the "
                          f"{free_size(v.shape)} elements of data{fmt_shape(v.shape)}",
                          f"allocate dst as (1, {free_size(v.shape)})")
    P, F = v.shape[0], free_size(v.shape)
    if ctx.numerics:
        if name_.startswith("bitwise"):
            x = np.asarray(read(v, raw=True)).reshape(P, F)
            if x.dtype.kind not in "iu":
                raise KernelError("err_unsupported_dtype", f"'{api}' {name_} needs an integer tile, got "
                                  f"{v.tensor.dtype_name}", "use an int/uint tile")
            r = (np.bitwise_or if name_ == "bitwise_or" else np.bitwise_and).reduce(x, axis=0)
        else:
            r = _PR_OPS[name_](read(v).reshape(P, F).astype(np.float32), axis=0).astype(np.float32)
        write(d, r.reshape(d.shape))
    ctx.emit(api, "gpsimd", (v,), (d,), {"op": name_}, P * F, 0, F, P)
    return done(ctx, dst, out_t)


def sequence_bounds(dst=None, segment_ids=None, name=None, dtype=None):
    """Per element of ``segment_ids`` [1, n]: ``dst[0, 0, i]`` = first index of its segment (a run of equal
    nonzero ids) and ``dst[0, 1, i]`` = one past its last index; padding (id 0) gets (n, -1). GpSimd;
    float32 or int32 (the reference's numpy definition)."""
    ctx = current()
    api = "sequence_bounds"
    s = tile_arg(segment_ids, api, "segment_ids", ("sbuf",))
    d, out_t = dst_or_new(dst, (1, 2, free_size(s.shape)),
                          s.tensor.dtype_name if dtype is None else _dtname(dtype), api, ("sbuf",))
    for v, arg in ((s, "segment_ids"), (d, "dst")):
        if v.tensor.dtype_name not in ("float32", "int32"):
            raise KernelError("err_unsupported_dtype", f"{arg} of '{api}' must be float32 or int32, got "
                              f"{v.tensor.dtype_name}", "cast it first")
    if s.shape[0] != 1:
        raise KernelError("err_num_partition_mismatch", f"segment_ids of '{api}' must be one partition, got "
                          f"{fmt_shape(s.shape)}", "pass a [1, n] tile")
    n = free_size(s.shape)
    if d.shape[0] != 1 or free_size(d.shape) != 2 * n:
        raise KernelError("err_shape_mismatch", f"dst{fmt_shape(d.shape)} of '{api}' must be [1, 2, {n}]",
                          f"allocate dst as (1, 2, {n})")
    if ctx.numerics:
        ids = np.asarray(read(s, raw=True)).reshape(n)   # in their own dtype: int32 ids above 2**24 stay distinct
        if np.any(ids < 0):
            raise KernelError("err_invalid_value", f"'{api}' segment ids must be non-negative", "use ids >= 0")
        start = np.empty(n, dtype=np.int64)
        end = np.empty(n, dtype=np.int64)
        i = 0
        while i < n:
            j = i
            while j + 1 < n and ids[j + 1] == ids[i]:
                j += 1
            if ids[i] == 0:
                start[i:j + 1], end[i:j + 1] = n, -1
            else:
                start[i:j + 1], end[i:j + 1] = i, j + 1
            i = j + 1
        write(d, np.stack([start, end]).astype(np.float32).reshape(d.shape))
    ctx.emit(api, "gpsimd", (s,), (d,), {}, 0, 0, n, 1)
    return done(ctx, dst, out_t)


__all__ = ["tensor_scalar_cumulative", "tensor_partition_reduce", "sequence_bounds"]
