"""Vector Engine element-wise instructions: ``tensor_tensor``, ``tensor_scalar``, ``scalar_tensor_tensor``,
``tensor_tensor_scan`` and ``reciprocal`` (fp32 arithmetic, cast on output)."""
from __future__ import annotations

import numpy as np

from trnsim.nki import dtypes as dt
from trnsim.nki.context import as_view, current, read
from trnsim.nki.isa.common import (bcast_free, bit_pattern, check_free_limit, dtype_or, finish, free_size, is_tile,
                                   out_tile, refuse_gpsimd_psum, require_fp32_vector, result_of, scalar_or_vector,
                                   store_result, tile_arg)
from trnsim.nki.isa.ops import (ALU, BITVEC, INT_EXACT, UNARY_ALU, alu_name, bitvec, check_unary_operand,
                                op_name)
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.tensors import mask_array
from trnsim.nki.isa.common import REQUIRED, two_forms


def _tt(data1, data2, op, dtype=None, mask=None, dst=None, eng="vector", api="tensor_tensor", pbcast_ok=False,
        eng_auto: bool = False):
    """``eng_auto``: engine=unknown (the compiler picks; int32 arithmetic goes to GpSimd)."""
    ctx = current()
    name = op_name(op)
    a = tile_arg(data1, api, "data1", mask=mask)   # (element-wise: a Beta 1 mask may cover a ragged read)
    b = tile_arg(data2, api, "data2", mask=mask)
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
    if api == "tensor_tensor" and free_size(a.shape) != free_size(b.shape):
        # nki.isa.tensor_tensor: "the two tiles must have the same partition axis size and the same number of
        # elements per partition" (the Vector Engine streams both operands element for element; no broadcast)
        raise KernelError("err_shape_mismatch",
                          f"nisa.tensor_tensor needs the same number of elements per partition in both inputs: "
                          f"data1{fmt_shape(a.shape)} has {free_size(a.shape)}, data2{fmt_shape(b.shape)} has "
                          f"{free_size(b.shape)} (the instruction does not broadcast)",
                          "for a [P, 1] column use nisa.tensor_scalar(dst, data, op0, operand0=column), which "
                          "broadcasts it along the free dimension; otherwise broadcast it explicitly "
                          "(nl.broadcast_to(tile, shape))")
    try:
        shape = tuple(int(x) for x in np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    except ValueError:
        raise KernelError("err_shape_mismatch",
                          f"shapes {fmt_shape(a.shape)} and {fmt_shape(b.shape)} of '{api}' ({name}) do not match "
                          "or broadcast", "use tiles of the same shape (or size-1 dimensions to broadcast)") from None
    check_free_limit(a, api, "data1")
    odt = dtype_or(dtype, dt.promote(a.tensor.dtype_name, b.tensor.dtype_name))
    dview, out_t = out_tile(shape, odt, "sbuf", api, dst)
    ints = dt.is_int(a.tensor.dtype_name) and dt.is_int(b.tensor.dtype_name)
    bits = name in BITVEC
    if bits and api == "tensor_tensor" and ctx.dialect != "beta1" and not (ints and dt.is_int(dview.tensor.dtype_name)):
        # "For bitvec operators, the input/output data types must be integer types" (nki.isa.tensor_tensor)
        raise KernelError("err_unsupported_dtype",
                          f"nisa.tensor_tensor with the bitvec operator {name} needs integer tiles (used as bit "
                          f"patterns), got data1 {a.tensor.dtype_name}, data2 {b.tensor.dtype_name}, dst "
                          f"{dview.tensor.dtype_name}",
                          "use integer tiles (nl.int32, nl.uint32, ...); view float bits with .view(nl.int32)")
    # int32/uint32 in and out, an arithmetic op, engine left to the compiler, nothing in PSUM: the GpSimd Engine's
    # native integer arithmetic, exact for all 32-bit values (nki.isa.tensor_tensor)
    nki06 = ctx.dialect != "beta1"
    if nki06 and (name == "power" or (eng == "gpsimd" and not eng_auto)):
        # nl.power runs on GpSimd, as does engine=gpsimd; "GpSimd Engine cannot access PSUM" (nki.isa.tensor_tensor)
        refuse_gpsimd_psum(api, "nl.power runs there" if name == "power" else "engine=gpsimd",
                           data1=a, data2=b, dst=dview)
        eng = "gpsimd"
    i32 = ("int32", "uint32")
    int_exact = (not bits and name in INT_EXACT and (eng_auto or (nki06 and eng == "gpsimd"))
                 and a.tensor.dtype_name in i32 and b.tensor.dtype_name in i32 and dview.tensor.dtype_name in i32
                 and "psum" not in (a.tensor.buffer, b.tensor.buffer, dview.tensor.buffer))
    if int_exact:
        eng = "gpsimd"
    res = None
    if ctx.numerics:
        if bits and ints:
            ra = read(a, raw=True)
            res = bit_pattern(bitvec(name, np.broadcast_to(ra, shape), np.broadcast_to(read(b, raw=True), shape)),
                              dview)
        elif int_exact:
            with np.errstate(all="ignore"):
                r = INT_EXACT[name](read(a, raw=True).astype(np.int64), read(b, raw=True).astype(np.int64))
            res = r.astype(dview.tensor.data.dtype) if r.dtype != bool else r.astype(np.float32)
        else:
            with np.errstate(all="ignore"):
                res = ALU[name](read(a), read(b)).astype(np.float32, copy=False)
        store_result(ctx, dview, res, mask_array(mask, tuple(dview.shape)))
    n = free_size(shape)
    attrs = {"op": name}
    if a.shape[0] != b.shape[0]:
        attrs["partition_broadcast"] = True
    ctx.emit("tensor_tensor", eng, (a, b), (dview,), attrs, n * shape[0], 0, n, shape[0])
    finish(ctx, out_t, res)
    return result_of(dst, out_t, dview)


def _tensor_tensor_beta1(*args, op=None, dtype=None, mask=None, engine=None, **kw):
    """Element-wise ``data1 op data2`` on VectorE (fp32 arithmetic). Same partitions; not both in PSUM."""
    dst = kw.pop("dst", None)
    data1 = kw.pop("data1", None)
    data2 = kw.pop("data2", None)
    pos = list(args)
    if len(pos) == 4:
        dst, data1, data2, op = pos
    elif len(pos) == 3:
        if is_tile(pos[2]):
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
    v = tile_arg(data, api, "data", mask=mask)   # (element-wise: a Beta 1 mask may cover a ragged read)
    check_free_limit(v, api, "data")
    P = v.shape[0]
    reads = [v]
    n0 = alu_name(op0)
    n1 = alu_name(op1) if op1 is not None else None
    nki06 = ctx.dialect != "beta1" and api == "tensor_scalar"
    check_unary_operand(n0, operand0, api, "operand0")
    check_unary_operand(n1, operand1, api, "operand1")
    if nki06 and op1 is None and operand1 is not None:
        raise KernelError("err_invalid_arguments",
                          f"operand1={operand1!r} of nisa.tensor_scalar is given without op1: op1 and operand1 must "
                          "both be None when unused", "drop operand1, or pass the op1 it goes with")
    o0, vec0 = (None, False) if n0 in UNARY_ALU else scalar_or_vector(operand0, P, api, "operand0", reads)
    o1, vec1 = (None, False) if op1 is None or n1 in UNARY_ALU else \
        scalar_or_vector(operand1, P, api, "operand1", reads)
    bits = n0 in BITVEC
    if n1 is not None and (n1 in BITVEC) != bits and nki06:
        raise KernelError("err_unsupported_op",
                          f"'{api}' mixes a bitvec and an arithmetic operator (op0={n0}, op1={n1}): both operators "
                          "of one instruction must be of the same type",
                          "split it into two tensor_scalar instructions")
    dflt = v.tensor.dtype_name
    for o, vec, raw in ((o0, vec0, operand0), (o1, vec1, operand1)):
        if vec:
            dflt = dt.promote(dflt, o.tensor.dtype_name)
        elif o is not None:
            # the scalar's Python type decides (an int tile divided by 2.0 is a float result whatever the value)
            is_float_scalar = isinstance(raw, (float, np.floating))
            dflt = dt.promote(dflt, "float32" if is_float_scalar or dt.is_float(dflt) else "int32")
    odt = dtype_or(dtype, dflt)
    shape = tuple(v.shape)
    dview, out_t = out_tile(shape, odt, "sbuf", api, dst)
    int_bits = bits and dt.is_int(v.tensor.dtype_name) and all(not vec or dt.is_int(o.tensor.dtype_name)
                                                                for o, vec in ((o0, vec0), (o1, vec1)))
    if nki06 and eng == "gpsimd":
        refuse_gpsimd_psum(api, "engine=gpsimd", data=v, dst=dview)
    if nki06 and eng == "scalar" and ctx.target == "trn2" and not bits and \
            (n0, n1) not in (("multiply", "add"), ("multiply", None), ("add", None)):
        # "The Scalar Engine on trn2 only supports some operator combinations" (nki.isa.tensor_scalar)
        raise KernelError("err_unsupported_op",
                          f"nisa.tensor_scalar(op0={n0}, op1={n1}) cannot run on the Scalar Engine of trn2: it supports "
                          "op0=multiply with op1=add or None, and op0=add with op1=None",
                          "run it on the Vector Engine (engine=nisa.engine.vector or leave engine unset)")
    if nki06 and not bits:
        # arithmetic operators: "the operand0 and operand1 (if used) must be float32" (nki.isa.tensor_scalar)
        require_fp32_vector(o0, vec0, api, "operand0")
        require_fp32_vector(o1, vec1, api, "operand1")
    if bits and nki06:
        # "If bitvec operators are used, the tensor_scalar instruction must run on Vector Engine. Also, the
        # input/output data types must be integer types" (nki.isa.tensor_scalar)
        if eng != "vector":
            raise KernelError("err_unsupported_engine", f"nisa.tensor_scalar with the bitvec operator {n0} runs on "
                              f"the Vector Engine only, got engine={eng}", "drop engine= or pass nisa.engine.vector")
        if not int_bits or not dt.is_int(dview.tensor.dtype_name):
            bad = [f"{k} {d}" for k, d in (("data", v.tensor.dtype_name), ("dst", dview.tensor.dtype_name))
                   + tuple((k, o.tensor.dtype_name) for k, o, vec in (("operand0", o0, vec0), ("operand1", o1, vec1))
                           if vec) if not dt.is_int(d)]
            raise KernelError("err_unsupported_dtype",
                              f"nisa.tensor_scalar with the bitvec operator {n0} needs integer input and output "
                              f"tiles (they are used as bit patterns), got {', '.join(bad)}",
                              "use an integer tile (nl.int32, nl.uint32, ...); view float bits with .view(nl.int32)")
    res = None
    if ctx.numerics:
        if int_bits:
            # bit patterns of the input's width, no float conversion
            x = read(v, raw=True)
            for name, o, vec, rev in ((n0, o0, vec0, reverse0), (n1, o1, vec1, reverse1)):
                if name is None:
                    continue
                ov = bcast_free(read(o, raw=True), x.ndim) if vec else int(o)
                if rev:
                    x = bitvec(name, np.broadcast_to(np.asarray(ov, dtype=x.dtype), x.shape), x)
                else:
                    x = bitvec(name, x, ov)
            res = bit_pattern(x, dview)
        else:
            x = read(v)
            with np.errstate(all="ignore"):
                for name, o, vec, rev in ((n0, o0, vec0, reverse0), (n1, o1, vec1, reverse1)):
                    if name is None:
                        continue
                    if name in UNARY_ALU:
                        x = UNARY_ALU[name](x)
                        continue
                    ov = bcast_free(read(o), x.ndim) if vec else np.float32(o)
                    x = ALU[name](ov, x) if rev else ALU[name](x, ov)
                res = np.asarray(x, dtype=np.float32)
        store_result(ctx, dview, res, mask_array(mask, shape))
    n = free_size(shape)
    attrs = {"op0": n0, "op1": n1, "operand0_is_vector": vec0, "operand1_is_vector": vec1}
    ctx.emit("tensor_scalar", eng, reads, (dview,), attrs, n * P * (1 + (n1 is not None)), 0, n, P)
    finish(ctx, out_t, res)
    return result_of(dst, out_t, dview)


def _tensor_scalar_beta1(*args, op0=None, operand0=None, reverse0=False, op1=None, operand1=None, reverse1=False,
                  dtype=None, mask=None, engine=None, **kw):
    """``(data op0 operand0) op1 operand1`` with scalar or [P, 1] operands (VectorE by default)."""
    dst = kw.pop("dst", None)
    data = kw.pop("data", None)
    pos = list(args)
    if pos and is_tile(pos[0]) and len(pos) >= 2 and is_tile(pos[1]) and (len(pos) >= 3 or op0 is not None):
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


def _scalar_tensor_tensor_beta1(*, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, dtype=None,
                         mask=None, dst=None, **kw):
    """``(data op0 operand0) op1 operand1`` on VectorE: operand0 a scalar or [P, 1] vector, operand1 a tile."""
    ctx = current()
    api = "scalar_tensor_tensor"
    v = tile_arg(data, api, "data")
    check_free_limit(v, api, "data")
    P = v.shape[0]
    reads = [v]
    n0, n1 = op_name(op0), op_name(op1)
    o0, vec0 = scalar_or_vector(operand0, P, api, "operand0", reads)
    t1 = tile_arg(operand1, api, "operand1")
    if tuple(t1.shape) != tuple(v.shape):
        raise KernelError("err_shape_mismatch", f"operand1 {fmt_shape(t1.shape)} of '{api}' must match data "
                          f"{fmt_shape(v.shape)}", "use tiles of the same shape")
    reads.append(t1)
    shape = tuple(v.shape)
    dview, out_t = out_tile(shape, dtype_or(dtype, dt.promote(v.tensor.dtype_name, t1.tensor.dtype_name)), "sbuf",
                             api, dst)
    res = None
    if ctx.numerics:
        x = read(v)
        with np.errstate(all="ignore"):
            ov = bcast_free(read(o0), x.ndim) if vec0 else np.float32(o0)
            x = ALU[n0](ov, x) if reverse0 else ALU[n0](x, ov)
            y = read(t1)
            res = np.asarray(ALU[n1](y, x) if reverse1 else ALU[n1](x, y), dtype=np.float32)
        store_result(ctx, dview, res, mask_array(mask, shape))
    n = free_size(shape)
    ctx.emit(api, "vector", reads, (dview,), {"op0": n0, "op1": n1}, 2 * n * P, 0, n, P)
    finish(ctx, out_t, res)
    return result_of(dst, out_t, dview)


def _tensor_tensor_scan_beta1(data0, data1, initial, op0, op1, reverse0=False, reverse1=False, *, dtype=None, mask=None,
                       dst=None, **kw):
    """Scan along the free axis: ``r[:, i] = op1(op0(data0[:, i], r[:, i-1]), data1[:, i])``, ``r[:, -1] = initial``."""
    ctx = current()
    api = "tensor_tensor_scan"
    a = tile_arg(data0, api, "data0")
    b = tile_arg(data1, api, "data1")
    if a.shape[0] != b.shape[0] or free_size(a.shape) != free_size(b.shape) or len(a.shape) < 2:
        raise KernelError("err_shape_mismatch", f"'{api}' needs two tiles with the same partitions and elements per "
                          f"partition, got {fmt_shape(a.shape)} and {fmt_shape(b.shape)}",
                          "pass tiles of the same shape; the scan runs over each partition's elements in order")
    P, F = a.shape[0], free_size(a.shape)
    reads = [a, b]
    n0, n1 = op_name(op0), op_name(op1)
    init, ivec = scalar_or_vector(initial, P, api, "initial", reads)
    dview, out_t = out_tile(tuple(a.shape), dtype_or(dtype, dt.promote(a.tensor.dtype_name, b.tensor.dtype_name)),
                            "sbuf", api, dst)
    if dview.shape[0] != P or free_size(dview.shape) != F:
        raise KernelError("err_shape_mismatch", f"'{api}' dst{fmt_shape(dview.shape)} must hold {P} partitions of {F} "
                          f"elements, as data0{fmt_shape(a.shape)}", "allocate dst like data0")
    res = None
    if ctx.numerics:
        x, y = read(a).reshape(P, F), read(b).reshape(P, F)
        r = read(init).reshape(P) if ivec else np.full(P, init, dtype=np.float32)
        res = np.empty((P, F), dtype=np.float32)
        with np.errstate(all="ignore"):
            for i in range(F):
                t = ALU[n0](r, x[:, i]) if reverse0 else ALU[n0](x[:, i], r)
                r = ALU[n1](t, y[:, i]) if not reverse1 else ALU[n1](y[:, i], t)
                res[:, i] = r
        res = res.reshape(dview.shape)
        store_result(ctx, dview, res, mask_array(mask, tuple(dview.shape)))
    ctx.emit(api, "vector", reads, (dview,), {"op0": n0, "op1": n1}, 2 * P * F, 0, F, P)
    finish(ctx, out_t, res)
    return result_of(dst, out_t, dview)


def _reciprocal_beta1(data, *, dtype=None, mask=None, dst=None, **kw):
    """1/x on VectorE."""
    ctx = current()
    v = tile_arg(data, "reciprocal", "data")
    shape = tuple(v.shape)
    dview, out_t = out_tile(shape, dtype_or(dtype, v.tensor.dtype_name), "sbuf", "reciprocal", dst)
    res = None
    if ctx.numerics:
        with np.errstate(all="ignore"):
            res = (np.float32(1) / read(v)).astype(np.float32)
        store_result(ctx, dview, res, mask_array(mask, shape))
    n = free_size(shape)
    ctx.emit("reciprocal", "vector", (v,), (dview,), {}, n * shape[0], 0, n, shape[0])
    finish(ctx, out_t, res)
    return result_of(dst, out_t, dview)


def _eng(engine, default: str = "vector") -> str:
    return {"scalar": "scalar", "gpsimd": "gpsimd", "vector": "vector"}.get(engine, default)


def _tensor_tensor_06(dst, data1, data2, op, engine, name):
    """``dst = data1 op data2`` element-wise (fp32 arithmetic, cast to dst's dtype)."""
    return _tt(data1, data2, op, None, None, dst, "gpsimd" if engine == "gpsimd" else "vector",
               eng_auto=engine not in ("vector", "gpsimd", "scalar"))


def _tensor_scalar_06(dst, data, op0, operand0, reverse0, op1, operand1, reverse1, engine, name):
    """``dst = (data op0 operand0) op1 operand1`` with scalar or [P, 1] operands."""
    return _ts(data, op0, operand0, reverse0, op1, operand1, reverse1, None, None, dst, _eng(engine))


def _arithmetic_not_both_psum(api: str, ops, a, b) -> None:
    """The reference rules of the two-tile Vector Engine instructions: arithmetic operators only, and the two
    tiles ``a`` / ``b`` ((tile, argument name) pairs) not both in PSUM."""
    for op in ops:
        if op_name(op) in BITVEC:
            raise KernelError("err_unsupported_op", f"op {op_name(op)} of '{api}' is a bitvec operator; it takes "
                              "arithmetic operators only", "use nisa.tensor_scalar / nisa.tensor_tensor for bitvec "
                              "operators")
    if is_tile(a[0]) and is_tile(b[0]) and as_view(a[0]).tensor.buffer == "psum" and \
            as_view(b[0]).tensor.buffer == "psum":
        raise KernelError("err_unsupported_memory", f"{a[1]} and {b[1]} of '{api}' cannot both be in PSUM",
                          "copy one of them to SBUF first (nisa.tensor_copy)")


def _scalar_tensor_tensor_06(dst, data, op0, operand0, op1, operand1, reverse0, reverse1, name):
    """``dst = (data op0 operand0) op1 operand1``: operand0 a scalar or [P, 1] vector, operand1 a tile."""
    # "Bitvec operators are not supported"; "data and operand1 cannot both reside in PSUM"
    _arithmetic_not_both_psum("scalar_tensor_tensor", (op0, op1), (data, "data"), (operand1, "operand1"))
    return _scalar_tensor_tensor_beta1(data=data, op0=op0, operand0=operand0, op1=op1, operand1=operand1,
                                       reverse0=reverse0, reverse1=reverse1, dst=dst)


def _tensor_tensor_scan_06(dst, data0, data1, initial, op0, op1, reverse0, reverse1, name):
    """Scan along the free axis: ``r[:, i] = op1(op0(data0[:, i], r[:, i-1]), data1[:, i])``."""
    # op0 / op1 "can be any binary arithmetic operator"; "data0 and data1 cannot both reside in PSUM"
    _arithmetic_not_both_psum("tensor_tensor_scan", (op0, op1), (data0, "data0"), (data1, "data1"))
    return _tensor_tensor_scan_beta1(data0, data1, initial, op0, op1, reverse0, reverse1, dst=dst)


def _reciprocal_06(dst, data, name):
    """``dst = 1 / data`` on the Vector Engine."""
    return _reciprocal_beta1(data, dst=dst)


tensor_tensor = two_forms("tensor_tensor", [("dst", REQUIRED), ("data1", REQUIRED), ("data2", REQUIRED),
                                            ("op", REQUIRED), ("engine", "unknown"), ("name", None)],
                          _tensor_tensor_beta1, _tensor_tensor_06)
tensor_scalar = two_forms("tensor_scalar", [("dst", REQUIRED), ("data", REQUIRED), ("op0", REQUIRED),
                                            ("operand0", REQUIRED), ("reverse0", False), ("op1", None),
                                            ("operand1", None), ("reverse1", False), ("engine", "unknown"),
                                            ("name", None)], _tensor_scalar_beta1, _tensor_scalar_06)
scalar_tensor_tensor = two_forms("scalar_tensor_tensor",
                                 [("dst", REQUIRED), ("data", REQUIRED), ("op0", REQUIRED), ("operand0", REQUIRED),
                                  ("op1", REQUIRED), ("operand1", REQUIRED), ("reverse0", False), ("reverse1", False),
                                  ("name", None)], _scalar_tensor_tensor_beta1, _scalar_tensor_tensor_06)
tensor_tensor_scan = two_forms("tensor_tensor_scan",
                               [("dst", REQUIRED), ("data0", REQUIRED), ("data1", REQUIRED), ("initial", REQUIRED),
                                ("op0", REQUIRED), ("op1", REQUIRED), ("reverse0", False), ("reverse1", False),
                                ("name", None)], _tensor_tensor_scan_beta1, _tensor_tensor_scan_06)
reciprocal = two_forms("reciprocal", [("dst", REQUIRED), ("data", REQUIRED), ("name", None)], _reciprocal_beta1,
                       _reciprocal_06)


__all__ = ["tensor_tensor", "tensor_scalar", "scalar_tensor_tensor", "tensor_tensor_scan", "reciprocal"]
