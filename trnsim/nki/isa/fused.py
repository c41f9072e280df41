"""NeuronCore-v4 fused instructions: ``activate2`` (Scalar Engine: two tensor-scalar ALU stages, an
activation, and an accumulating reduction) and ``exponential`` (Vector Engine: ``exp(src - max_value)``
with a running sum in the Vector accumulator). Arithmetic in fp32, cast on output."""
from __future__ import annotations

import numpy as np

from trnsim.nki import dtypes as dt
from trnsim.nki.context import current, read, write
from trnsim.nki.isa import _accum
from trnsim.nki.isa._result import done, dst_or_new
from trnsim.nki.isa.common import free_size, require_fp32_vector, scalar_or_vector, tile_arg
from trnsim.nki.isa.enums import reduce_cmd as _rc
from trnsim.nki.isa.activations import check_input_range
from trnsim.nki.isa.ops import ACT, ALU, op_name
from trnsim.nki.rules import KernelError, fmt_shape

# the (op0, op1) pairs the tensor-scalar stage of activate2 supports (reference)
_A2_PAIRS = {("multiply", "add"), ("multiply", "subtract"), ("multiply", "bypass"), ("add", "bypass"),
             ("subtract", "bypass"), ("bypass", "bypass")}
_A2_REDUCE = {"add": np.add, "maximum": np.maximum, "minimum": np.minimum,
              "abs_max": lambda a, b: np.maximum(np.abs(a), np.abs(b)),
              "abs_min": lambda a, b: np.minimum(np.abs(a), np.abs(b))}
_A2_REDUCE_ALL = {"add": lambda x: x.sum(axis=1), "maximum": lambda x: x.max(axis=1),
                  "minimum": lambda x: x.min(axis=1), "abs_max": lambda x: np.abs(x).max(axis=1),
                  "abs_min": lambda x: np.abs(x).min(axis=1)}


def _version(ctx) -> int:
    return int(str(ctx.limits.neuroncore_version).split("v")[-1])


def _need_v4(ctx, api: str) -> None:
    if _version(ctx) < 4:
        raise KernelError("err_unsupported_on_target", f"'{api}' is a NeuronCore-v4 instruction; {ctx.target} is "
                          f"{ctx.limits.neuroncore_version}",
                          "target trn3, or use nisa.activation / nisa.tensor_scalar")


def _alu_or_bypass(op) -> str:
    if op is None:
        return "bypass"
    name = op if isinstance(op, str) else getattr(op, "_nki_op", None)
    if name == "bypass":
        return "bypass"
    return op_name(op)


def _act_name(op) -> str:
    name = op if isinstance(op, str) else getattr(op, "_nki_op", None)
    if name in ("prelu", "bypass"):
        return name
    return op_name(op, "act")


def _same(d, v, api):
    if d.shape[0] != v.shape[0] or free_size(d.shape) != free_size(v.shape):
        raise KernelError("err_shape_mismatch", f"dst{fmt_shape(d.shape)} and input{fmt_shape(v.shape)} of '{api}' "
                          "must have the same partitions and elements per partition", "allocate dst like the input")


def activate2(dst=None, op=None, data=None, imm0=None, imm1=None, op0=None, op1=None, relu_param=0.0, reverse0=False,
              reverse1=False, reduce_op=None, reduce_res=None, reduce_cmd=_rc.idle, name=None):
    """``dst = op((data op0 imm0) op1 imm1)`` on ScalarE with an optional reduction of ``dst`` along the free
    axis into the Scalar accumulator (``reduce_res`` [P, 1] receives it). NeuronCore-v4+.

    ``op0``/``op1``: one of (multiply, add), (multiply, subtract), (multiply, bypass), (add, bypass),
    (subtract, bypass), (bypass, bypass); ``imm0``/``imm1``/``relu_param``: numbers or [P, 1] tiles;
    ``op=nl.prelu`` uses ``relu_param`` as the negative slope."""
    ctx = current()
    api = "activate2"
    _need_v4(ctx, api)
    v = tile_arg(data, api, "data")
    d, out_t = dst_or_new(dst, v.shape, v.tensor.dtype_name, api)
    _same(d, v, api)
    a = _act_name(op)
    n0, n1 = _alu_or_bypass(op0), _alu_or_bypass(op1)
    if (n0, n1) not in _A2_PAIRS:
        raise KernelError("err_unsupported_op",
                          f"activate2 tensor-scalar stage (op0={n0}, op1={n1}) is not supported",
                          "use one of " + ", ".join(f"({x}, {y})" for x, y in sorted(_A2_PAIRS)))
    if reverse0 and n0 == "bypass" or reverse1 and n1 == "bypass":
        raise KernelError("err_invalid_arguments", f"'{api}' reverse0/reverse1 need op0/op1 to be set (not bypass)",
                          "drop reverse0/reverse1 or set the op")
    cmd = _accum.check_cmd(reduce_cmd, api, (_rc.idle, _rc.reset, _rc.reduce, _rc.reset_reduce))
    rname = None
    if reduce_op is not None:
        rname = reduce_op if isinstance(reduce_op, str) else (getattr(reduce_op, "_nki_op", None)
                                                              or op_name(reduce_op))
        if rname not in _A2_REDUCE:
            raise KernelError("err_unsupported_op", f"reduce_op={rname} of '{api}': supported are "
                              f"{', '.join(_A2_REDUCE)}", "use nl.add, nl.maximum, nl.minimum, nl.abs_max, nl.abs_min")
    elif cmd in (_rc.reduce, _rc.reset_reduce):
        raise KernelError("err_invalid_arguments", f"'{api}' reduce_cmd={cmd} needs reduce_op", "pass reduce_op=nl.add")
    P, n = v.shape[0], free_size(v.shape)
    reads = [v]
    i0, vec0 = scalar_or_vector(imm0, P, api, "imm0", reads) if n0 != "bypass" else (None, False)
    i1, vec1 = scalar_or_vector(imm1, P, api, "imm1", reads) if n1 != "bypass" else (None, False)
    if vec0 and vec1 and i0.tensor.dtype_name != i1.tensor.dtype_name:
        raise KernelError("err_dtype_mismatch", f"'{api}' imm0 ({i0.tensor.dtype_name}) and imm1 "
                          f"({i1.tensor.dtype_name}) tiles must have the same dtype", "keep both in nl.float32")
    rp, rvec = scalar_or_vector(relu_param, P, api, "relu_param", reads, optional=a != "prelu")   # prelu slope
    acc = _accum.start(ctx, "scalar", cmd, rname or "add", P, api)
    res = None
    if ctx.numerics:
        x = read(v).reshape(P, n)
        with np.errstate(all="ignore"):
            for nm, o, vec, rev in ((n0, i0, vec0, reverse0), (n1, i1, vec1, reverse1)):
                if nm == "bypass":
                    continue
                ov = read(o).reshape(P, 1) if vec else np.float32(o)
                x = ALU[nm](ov, x) if rev else ALU[nm](x, ov)
            x = np.asarray(x, dtype=np.float32)
            if a == "prelu":
                slope = read(rp).reshape(P, 1) if rvec else np.float32(rp)
                res = np.where(x > 0, x, slope * x).astype(np.float32)
            elif a == "bypass":
                res = x
            else:
                check_input_range(a, x, "activate2")
                res = np.asarray(ACT[a](x), dtype=np.float32)
        write(d, res.reshape(d.shape))
        if cmd in (_rc.reduce, _rc.reset_reduce):
            # the accumulator sees the values written to dst (after the output cast)
            out = read(d).reshape(P, n)
            acc = _A2_REDUCE[rname](acc, _A2_REDUCE_ALL[rname](out)).astype(np.float32)
    writes = [d]
    if cmd != _rc.idle:
        _accum.save(ctx, "scalar", acc if ctx.numerics else None)
    if reduce_res is not None:
        if acc is None and cmd == _rc.idle:
            acc = _accum.start(ctx, "scalar", _rc.reduce, rname or "add", P, api)
        rv = tile_arg(reduce_res, api, "reduce_res")
        if tuple(rv.shape) != (P, 1):
            raise KernelError("err_shape_mismatch", f"reduce_res of '{api}' must be [{P}, 1], got "
                              f"{fmt_shape(rv.shape)}", f"allocate it as nl.ndarray(({P}, 1), nl.float32)")
        if ctx.numerics:
            write(rv, np.asarray(acc, dtype=np.float32).reshape(P, 1))
        writes.append(rv)
    ctx.emit(api, "scalar", reads, writes, {"func": a, "op0": n0, "op1": n1, "reduce_cmd": cmd},
             P * n * (1 + (n0 != "bypass") + (n1 != "bypass")), 0, n, P)
    return done(ctx, dst, out_t)


def exponential(dst=None, src=None, max_value=0.0, reduce_res=None, reduce_cmd=_rc.idle, reduce_init=0.0, name=None):
    """``dst = exp(src - max_value)`` on the Vector Engine (NeuronCore-v4+); with ``reduce_cmd`` other than
    ``idle`` the Vector accumulator adds up ``dst`` (``reduce_res`` [P, 1] receives the sum).
    ``max_value``/``reduce_init``: numbers or [P, 1] fp32 tiles."""
    ctx = current()
    api = "exponential"
    _need_v4(ctx, api)
    s = tile_arg(src, api, "src")
    d, out_t = dst_or_new(dst, s.shape, s.tensor.dtype_name, api)
    _same(d, s, api)
    if len(s.shape) > 4:
        raise KernelError("err_exceed_max_supported_dimension", f"src of '{api}' is {len(s.shape)}-D; at most 4-D",
                          "reshape the tile")
    if d.tensor.dtype_name == "uint32":
        raise KernelError("err_unsupported_dtype", f"dst of '{api}' cannot be uint32", "use float32 (or int32)")
    cmd = _accum.check_cmd(reduce_cmd, api, (_rc.idle, _rc.reset_reduce, _rc.reduce, _rc.load_reduce))
    P, n = s.shape[0], free_size(s.shape)
    reads = [s]
    mv, mvec = scalar_or_vector(max_value, P, api, "max_value", reads)
    ri, rivec = scalar_or_vector(reduce_init, P, api, "reduce_init", reads)
    require_fp32_vector(mv, mvec, api, "max_value")
    require_fp32_vector(ri, rivec, api, "reduce_init")
    if cmd != _rc.load_reduce and (rivec or ri != 0.0):
        raise KernelError("err_invalid_arguments", f"'{api}' reduce_init is only used with reduce_cmd.load_reduce "
                          f"(got reduce_cmd={cmd})", "drop reduce_init or pass reduce_cmd=nisa.reduce_cmd.load_reduce")
    init = None
    if cmd == _rc.load_reduce and ctx.numerics:
        init = read(ri).reshape(P) if rivec else np.float32(ri)
    acc = _accum.start(ctx, "vector", cmd, "add", P, api, init)
    if ctx.numerics:
        x = read(s).reshape(P, n)
        m = read(mv).reshape(P, 1) if mvec else np.float32(mv)
        with np.errstate(all="ignore"):
            res = np.exp(x - m).astype(np.float32)
        write(d, res.reshape(d.shape))
        if acc is not None:
            acc = (acc + read(d).reshape(P, n).sum(axis=1, dtype=np.float32)).astype(np.float32)
    writes = [d]
    if cmd == _rc.idle:
        _accum.invalidate(ctx, "vector")
    else:
        _accum.save(ctx, "vector", acc if ctx.numerics else None)
    if reduce_res is not None:
        if cmd == _rc.idle:
            raise KernelError("err_invalid_arguments", f"'{api}' reduce_res with reduce_cmd.idle: nothing is "
                              "accumulated", "pass reduce_cmd=nisa.reduce_cmd.reset_reduce to sum the exponentials")
        rv = tile_arg(reduce_res, api, "reduce_res")
        if tuple(rv.shape) != (P, 1):
            raise KernelError("err_shape_mismatch", f"reduce_res of '{api}' must be [{P}, 1], got "
                              f"{fmt_shape(rv.shape)}", f"allocate it as nl.ndarray(({P}, 1), nl.float32)")
        if not dt.is_float(rv.tensor.dtype_name):
            raise KernelError("err_unsupported_dtype", f"reduce_res of '{api}' must be a float type",
                              "use nl.float32")
        if ctx.numerics:
            write(rv, acc.reshape(P, 1))
        writes.append(rv)
    ctx.emit(api, "vector", reads, writes, {"reduce_cmd": cmd}, 2 * P * n, 0, n, P)
    return done(ctx, dst, out_t)


__all__ = ["activate2", "exponential"]
