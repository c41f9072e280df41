"""Scalar Engine ``activation`` / ``activation_reduce``: ``op(data * scale + bias)`` with an optional free-axis reduction."""
from __future__ import annotations

import warnings

import numpy as np

from trnsim.nki.context import AccumulatorIdleWarning, ActivationRangeWarning, current, read, write
from trnsim.nki.isa.common import (bcast_free, check_free_limit, dtype_or, finish, free_size, is_tile, out_tile,
                                   result_of, scalar_or_vector, store_result, tile_arg)
from trnsim.nki.isa import _accum
from trnsim.nki.isa.enums import reduce_cmd as _rc
from trnsim.nki.isa.ops import ACT, ALU, REDUCE, op_name
from trnsim.nki.rules import KernelError, fmt_shape, user_location
from trnsim.nki.tensors import mask_array
from trnsim.nki.isa.common import REQUIRED, reduce_res_view, two_forms


_RANGES: dict | None = None


def _valid_ranges() -> dict:
    """The documented valid input bounds per activation function (data/scalar_engine.json)."""
    global _RANGES
    if _RANGES is None:
        from trnsim.catalog.datafiles import load_json
        _RANGES = dict(load_json("scalar_engine.json")["activation_valid_input_range"]["value"])
    return _RANGES


def check_input_range(name: str, x: np.ndarray, api: str) -> None:
    """ActivationRangeWarning when finite inputs of activation ``name`` leave its valid range (nki.api.shared:
    outside it "the Scalar Engine will generate invalid output results")."""
    b = _valid_ranges().get(name)
    if b is None or x.size == 0:
        return
    with np.errstate(invalid="ignore"):
        fin = x[np.isfinite(x)]
    if fin.size == 0:
        return
    mag = np.abs(fin)
    bad = ((b.get("abs_max") is not None and float(mag.max()) > b["abs_max"])
           or (b.get("abs_min") is not None and float(mag.min()) < b["abs_min"])
           or (b.get("min") is not None and float(fin.min()) < b["min"])
           or (b.get("max") is not None and float(fin.max()) > b["max"]))
    if not bad:
        return
    if "abs_max" in b and "abs_min" not in b:
        valid = f"[{-b['abs_max']:.4g}, {b['abs_max']:.4g}]"
    elif "abs_min" in b:
        valid = f"±[{b['abs_min']:.4g}, {b['abs_max']:.4g}]"
    else:
        valid = f"[{b['min']:.4g}, {b['max']:.4g}]"
    loc, src = user_location()
    tip = (" (no range reduction: sin(9.0) gives about 27.65 on hardware; nl.sin range-reduces first)"
           if name == "sin" else "")
    warnings.warn(ActivationRangeWarning(
        f"'{api}' {name}: inputs span [{float(fin.min()):.4g}, {float(fin.max()):.4g}], outside its valid range "
        f"{valid} at {loc}{': ' + src if src else ''}. The Scalar Engine returns invalid results there{tip}; the "
        "simulator computed the exact function, so hardware results will differ. Keep the inputs in range."),
        stacklevel=3)


def _activation(func, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None, dtype=None, mask=None,
                dst=None, api="activation", engine="scalar", reduce_cmd=None):
    ctx = current()
    name = op_name(func, "act")
    # element-wise unless it reduces: then a Beta 1 mask may cover a ragged read (tile_arg)
    v = tile_arg(data, api, "data", mask=mask if reduce_op is None and reduce_res is None else None)
    check_free_limit(v, api, "data")
    P = v.shape[0]
    reads = [v]
    if is_tile(scale):
        sv = tile_arg(scale, api, "scale")
        if sv.tensor.dtype_name != "float32":
            raise KernelError("err_activation_scale_invalid_type",
                              f"activation scale tile has dtype {sv.tensor.dtype_name}; it must be float32",
                              "keep the scale vector in nl.float32")
    sc, sc_vec = scalar_or_vector(scale, P, api, "scale", reads, optional=True)   # None: no scale
    nki06 = ctx.dialect != "beta1"
    # NeuronCore-v2: bias is a [N, 1] vector; "starting NeuronCore-v3, bias can either be a compile-time constant
    # scalar or a [N, 1] vector" (nki.isa.activation)
    scalar_bias_ok = nki06 and ctx.limits.neuroncore_version != "NC-v2"
    if bias is not None and not is_tile(bias) and not scalar_bias_ok:
        raise KernelError("err_activation_bias_invalid_type",
                          f"activation bias must be a [P, 1] tile on {ctx.target} (a constant scalar bias needs "
                          "NeuronCore-v3 or newer)" if nki06 else "activation bias must be a [P, 1] tile",
                          "put the bias in a [P, 1] tile (e.g. nl.full((P, 1), b, nl.float32))")
    if nki06 and name == "reciprocal" and bias is not None and ctx.limits.neuroncore_version == "NC-v2":
        # nl.reciprocal as an activation "doesn't support setting bias on NeuronCore-v2" (nki.api.shared)
        raise KernelError("err_activation_bias_invalid_type",
                          f"activation op=nl.reciprocal takes no bias on {ctx.target} (NeuronCore-v2)",
                          "add the bias first (nisa.tensor_scalar(dst, data, op0=nl.add, operand0=bias)), then take "
                          "the reciprocal without bias")
    if nki06 and api in ("activation", "activation_reduce") and reduce_op is not None and \
            op_name(reduce_op, "reduce") != "add":
        raise KernelError("err_unsupported_op",
                          f"activation reduce_op={op_name(reduce_op, 'reduce')}: the Scalar Engine's reduction after "
                          "the activation must be nl.add", "pass reduce_op=nl.add, or reduce dst afterwards with "
                          "nisa.tensor_reduce")
    if bias is not None and is_tile(bias):
        bv = tile_arg(bias, api, "bias")
        if nki06:
            if bv.tensor.dtype_name == "tfloat32":   # "bias can be any supported dtype except tfloat32"
                raise KernelError("err_activation_bias_invalid_type", "activation bias cannot be tfloat32",
                                  "keep the bias tile in nl.float32")
        elif bv.tensor.dtype_name not in ("float32", "float16", "bfloat16"):
            raise KernelError("err_activation_bias_invalid_type",
                              f"activation bias has dtype {bv.tensor.dtype_name}; it must be float32/float16/bfloat16",
                              "cast the bias tile")
    bi, bi_vec = scalar_or_vector(bias, P, api, "bias", reads, optional=True)
    shape = tuple(v.shape)
    dview, out_t = out_tile(shape, dtype_or(dtype, v.tensor.dtype_name), "sbuf", api, dst)
    res = None
    red_name = op_name(reduce_op, "reduce") if reduce_op is not None else None
    if ctx.numerics:
        x = read(v)
        if sc_vec:
            x = x * bcast_free(read(sc), x.ndim)
        elif sc is not None and sc != 1.0:
            x = x * np.float32(sc)
        if bi_vec:
            x = x + bcast_free(read(bi), x.ndim)
        elif bi is not None:
            x = x + np.float32(bi)
        if api in ("activation", "activation_reduce"):
            check_input_range(name, x, api)
        with np.errstate(all="ignore"):
            res = np.asarray(ACT[name](x), dtype=np.float32)
        store_result(ctx, dview, res, mask_array(mask, shape))
    writes = [dview]
    cmd = None if reduce_cmd in (None, _rc.idle) else _accum.check_cmd(
        reduce_cmd, api, (_rc.idle, _rc.reset, _rc.reduce, _rc.reset_reduce))
    red_name_out = red_name
    if cmd is None and nki06 and api == "activation" and reduce_res is not None:
        # NKI 0.6 pseudo-code (nki.isa.activation): with reduce_cmd=idle the accumulator is left as it was and
        # "if reduce_res: reduce_res = reduce_regs", so reduce_res reads the accumulator's earlier value
        _idle_readout(ctx, engine, reduce_res, red_name, P, api, writes)
        red_name = None
    if cmd is not None:
        # NKI 0.6: reduce into the Scalar Engine accumulator; reduce_res (optional) reads it out
        if cmd != _rc.reset and red_name is None:
            raise KernelError("err_invalid_arguments", f"'{api}' reduce_cmd={cmd} needs reduce_op",
                              "pass reduce_op=nl.add (or drop reduce_cmd)")
        acc = _accum.start(ctx, engine, cmd, red_name or "add", P, api)
        if ctx.numerics and cmd != _rc.reset:
            part = REDUCE[red_name](res, axis=tuple(range(1, res.ndim)), keepdims=False).reshape(P)
            acc = np.asarray(ALU[red_name](acc, part) if red_name in ALU else part, dtype=np.float32)
        _accum.save(ctx, engine, acc if ctx.numerics else None)
        if reduce_res is not None:
            rv = reduce_res_view(reduce_res, P)
            if ctx.numerics:
                write(rv, acc.reshape(rv.shape))
            writes.append(rv)
        red_name = None                     # handled through the accumulator
    if red_name is not None:
        if reduce_res is None:
            raise KernelError("err_invalid_arguments", "activation with reduce_op needs reduce_res=",
                              "pass reduce_res=<[P, 1] tile>")
        rv = reduce_res_view(reduce_res, P)
        if ctx.numerics:
            axes = tuple(range(1, res.ndim))
            write(rv, REDUCE[red_name](res, axis=axes, keepdims=True).reshape(rv.shape))
        writes.append(rv)
    n = free_size(shape)
    attrs = {"func": name, "has_scale": sc_vec or (sc is not None and sc != 1.0), "has_bias": bi is not None,
             "reduce": red_name_out is not None}
    if red_name_out:
        attrs["reduce_op"] = red_name_out
    if cmd is not None:
        attrs["reduce_cmd"] = cmd
    ctx.emit("activation", engine, reads, writes, attrs, n * P * (1 + int(attrs["has_scale"]) + int(bi is not None)),
             0, n, P)
    finish(ctx, out_t, res)
    return result_of(dst, out_t, dview)


def _idle_readout(ctx, engine: str, reduce_res, red_name, P: int, api: str, writes: list) -> None:
    """``reduce_res`` of an ``activation`` left at ``reduce_cmd=idle``: the accumulator's current value (KernelError
    if nothing on this core set it; an AccumulatorIdleWarning if a ``reduce_op`` suggests a reduction was meant)."""
    rv = reduce_res_view(reduce_res, P)
    state = _accum.peek(ctx, engine)
    fix = ("pass reduce_cmd=nisa.reduce_cmd.reset_reduce to reduce this instruction's output into reduce_res "
           "(or call nisa.activation_reduce, which does)")
    if state is not None and state is not True and np.shape(state)[0] < P:
        raise KernelError("err_accumulator_uninitialized",
                          f"'{api}' reads {P} lanes of the {engine} engine accumulator into reduce_res"
                          f"{fmt_shape(rv.shape)}, but only {np.shape(state)[0]} were set (reduce_cmd=idle leaves it "
                          "unchanged)", fix)
    if state is None:
        raise KernelError("err_accumulator_uninitialized",
                          f"'{api}' reads the {engine} engine accumulator into reduce_res{fmt_shape(rv.shape)}, but "
                          "reduce_cmd=idle (the default) leaves the accumulator unchanged and nothing on this core "
                          "reset or loaded it: reduce_res would hold undefined values on the hardware", fix)
    if red_name is not None:
        loc, src = user_location()
        warnings.warn(AccumulatorIdleWarning(
            f"'{api}' has reduce_op={red_name} and reduce_res but reduce_cmd=idle (the default): the accumulator is "
            f"not updated, so reduce_res gets its earlier value, not this instruction's {red_name} reduction, at {loc}"
            + (f": {src}" if src else "") + f". To reduce this instruction: {fix}."), stacklevel=4)
    if ctx.numerics and state is not True:
        write(rv, np.asarray(state, dtype=np.float32)[:P].reshape(rv.shape))
    writes.append(rv)


def _activation_beta1(*args, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=None, mask=None,
               dtype=None, **kw):
    """``out = func(data * scale + bias)`` on ScalarE (fp32 internally), optional free-axis reduce into reduce_res."""
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
        bias = pos.pop(0)
    if pos:
        scale = pos.pop(0)
    return _activation(op, data, bias, scale, reduce_op, reduce_res, dtype, mask, dst, reduce_cmd=reduce_cmd)


def _activation_reduce_beta1(*args, reduce_op=None, reduce_res=None, **kw):
    return activation(*args, reduce_op=reduce_op, reduce_res=reduce_res, **kw)


def _activation_06(dst, op, data, bias, scale, reduce_op, reduce_res, reduce_cmd, name):
    """``dst = op(data * scale + bias)`` on the Scalar Engine (fp32 inside); with ``reduce_op`` also
    ``reduce_res = reduce_op(dst)`` along the free axes."""
    return _activation(op, data, bias, scale, reduce_op, reduce_res, None, None, dst, reduce_cmd=reduce_cmd)


def _activation_reduce_06(dst, op, data, reduce_op, reduce_res, bias, scale, name):
    """``activation`` with its free-axis reduction into ``reduce_res`` ([P, 1]): "equivalent to calling
    nisa.activation with reduce_cmd=nisa.reduce_cmd.reset_reduce" (nki.isa.activation_reduce)."""
    return _activation(op, data, bias, scale, reduce_op, reduce_res, None, None, dst, reduce_cmd=_rc.reset_reduce)


activation = two_forms("activation", [("dst", REQUIRED), ("op", REQUIRED), ("data", REQUIRED), ("bias", None),
                                      ("scale", 1.0), ("reduce_op", None), ("reduce_res", None),
                                      ("reduce_cmd", "idle"), ("name", None)], _activation_beta1, _activation_06)
activation_reduce = two_forms("activation_reduce", [("dst", REQUIRED), ("op", REQUIRED), ("data", REQUIRED),
                                                    ("reduce_op", REQUIRED), ("reduce_res", REQUIRED), ("bias", None),
                                                    ("scale", 1.0), ("name", None)],
                              _activation_reduce_beta1, _activation_reduce_06)


__all__ = ["activation", "activation_reduce"]
