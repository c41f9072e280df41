"""Tile-level compute built on instructions: ``matmul``/``transpose`` (Tensor Engine), element-wise
math (``activation`` / ``tensor_tensor`` / ``tensor_scalar``), reductions, ``where``, ``softmax``."""
from __future__ import annotations

import builtins

import numpy as np

from trnsim.nki import dtypes as _dt
from trnsim.nki.language._arguments import refuse_extras
from trnsim.nki.context import as_view, current, read
from trnsim.nki.isa import activations as _act, common as _common, copy as _cp, elementwise as _ew  # noqa: F401
from trnsim.nki.isa import matmul as _mm, ops as _ops, reduce as _red, transpose as _tr  # noqa: F401
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.tensors import Broadcast, Tensor, View


# ----------------------------------------------------------------------------- compute

def matmul(x, y, transpose_x: bool = False, *, mask=None, **kwargs) -> Tensor:
    """``x @ y`` into a new PSUM tile (fp32). With ``transpose_x=True``, ``x`` is already [K, M] and the
    result is ``x.T @ y`` (one nc_matmul); otherwise x [M, K] is first transposed on the Tensor Engine."""
    if mask is not None or kwargs:
        refuse_extras('matmul', matmul, mask, kwargs)
    if isinstance(y, (Tensor, View)) and as_view(y).tensor.buffer == "psum":
        y = copy(y)          # the Tensor Engine reads SBUF: the compiler evacuates a PSUM operand first
    if isinstance(x, (Tensor, View)) and as_view(x).tensor.buffer == "psum":
        x = copy(x)
    if not transpose_x:
        xt = _tr._transpose(x, "tensor", api="transpose")
        xs = copy(xt, dtype=as_view(x).tensor.dtype_name)
        return _mm._matmul(xs, y, mask=mask, api="matmul", extra_attrs={"transpose_x": False})
    return _mm._matmul(x, y, mask=mask, api="matmul", extra_attrs={"transpose_x": True})


def transpose(x, dtype=None, *, mask=None, **kwargs) -> Tensor:
    """Swap the partition and free axes of a 2-D tile (Tensor Engine; <= 128 x 128)."""
    if mask is not None or kwargs:
        refuse_extras('transpose', transpose, mask, kwargs)
    return _tr._transpose(x, "tensor", mask=mask, dtype=dtype, api="transpose")


def copy(x, dtype=None, *, mask=None, _dst=None, **kwargs):
    """Copy a tile (e.g. PSUM -> SBUF), casting to ``dtype``."""
    if mask is not None or kwargs:
        refuse_extras('copy', copy, mask, kwargs)
    return _cp._copy(x, dtype, mask, _dst, "vector", api="copy")


def broadcast_to(x, shape, dtype=None):
    """``x`` broadcast to ``shape`` (a view; with ``dtype``, of a cast copy of ``x``)."""
    if dtype is not None and _dt.dtype_name(dtype) != as_view(x).tensor.dtype_name:
        x = copy(x, dtype)
    return as_view(x).broadcast_to(shape)


def _is_tile(x) -> bool:
    return isinstance(x, (Tensor, View, Broadcast))


def _free1(v) -> bool:
    return builtins.all(s == 1 for s in v.shape[1:])


_COMPARE = frozenset({"equal", "not_equal", "greater", "greater_equal", "less", "less_equal"})
_TILE_REQUIRED = frozenset({"equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "logical_and",
                            "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
                            "right_shift"})


def _binary(name: str, x, y, dtype=None, mask=None, _dst=None):
    xt, yt = _is_tile(x), _is_tile(y)
    for v, arg in ((x, "x"), (y, "y")):
        if not (_is_tile(v) or isinstance(v, (int, float, bool, np.integer, np.floating, np.bool_))):
            raise KernelError("err_operand_type", f"operand '{arg}' of nl.{name} is {type(v).__name__} ({v!r})",
                              "pass a tile or a Python number")
    nki06 = current().dialect != "beta1"
    if not xt and not yt:
        if nki06 and name in _TILE_REQUIRED:
            # "At least one of x, y must be a tile" (nki.language comparison / logical / bitwise / shift ops)
            raise KernelError("err_operand_type", f"nl.{name}({x!r}, {y!r}) has no tile operand: at least one of x, y "
                              "must be a tile", "compute constants in Python (e.g. x == y, x & y)")
        return _ops.ALU[name](np.float32(x), np.float32(y)).item()
    if nki06 and dtype is None and name in _COMPARE:
        # comparisons: "dtype ... Defaults to the input tile dtype" (nki.language equal, less, ...)
        dtype = as_view(x if xt else y).tensor.dtype_name
    if nki06 and name in _ops.BITVEC:
        for v in (x, y):
            if _is_tile(v) and not _dt.is_int(as_view(v).tensor.dtype_name):
                # "Inputs must be integer typed." (nki.language bitwise_* / left_shift / right_shift)
                raise KernelError("err_unsupported_dtype", f"nl.{name} needs integer tiles, got "
                                  f"{as_view(v).tensor.dtype_name} {fmt_shape(as_view(v).shape)}",
                                  "use an integer tile (nl.int32, ...); view float bits with .view(nl.int32)")
            if not _is_tile(v) and not isinstance(v, (int, np.integer)):
                raise KernelError("err_unsupported_dtype", f"nl.{name} needs integer operands, got {v!r}",
                                  "pass an int")
        if dtype is None:
            # bit patterns keep an integer type: the widest input tile's (the first of equal width), never the
            # float32 that promoting uint32 with int32 (or with a Python int) would give
            names = [as_view(v).tensor.dtype_name for v in (x, y) if _is_tile(v)]
            dtype = sorted(names, key=_dt.itemsize, reverse=True)[0]   # (stable: the first of the widest)
    if xt and yt:
        xv, yv = as_view(x), as_view(y)
        xs, ys = tuple(xv.shape), tuple(yv.shape)
        if xs != ys and xs[0] == ys[0]:
            if _free1(yv) and not _free1(xv) and not isinstance(yv, Broadcast):
                return _ew._ts(xv, name, yv, False, dtype=dtype, mask=mask, dst=_dst, api=name)
            if _free1(xv) and not _free1(yv) and not isinstance(xv, Broadcast):
                return _ew._ts(yv, name, xv, True, dtype=dtype, mask=mask, dst=_dst, api=name)
        return _ew._tt(xv, yv, name, dtype, mask, _dst, api=name, pbcast_ok=True, eng_auto=True)
    if xt:
        return _ew._ts(x, name, y, False, dtype=dtype, mask=mask, dst=_dst, api=name)
    return _ew._ts(y, name, x, True, dtype=dtype, mask=mask, dst=_dst, api=name)


def _make_binary(name: str):
    def fn(x, y, dtype=None, *, mask=None, _dst=None, **kwargs):
        if mask is not None or kwargs:
            refuse_extras(name, fn, mask, kwargs)
        return _binary(name, x, y, dtype, mask, _dst)
    fn.__name__ = name
    fn.__doc__ = f"Element-wise {name} of two tiles (or a tile and a scalar / [P, 1] vector), fp32 arithmetic."
    fn._nki_op = name
    return fn


add = _make_binary("add")
subtract = _make_binary("subtract")
multiply = _make_binary("multiply")
divide = _make_binary("divide")
maximum = _make_binary("maximum")
minimum = _make_binary("minimum")
power = _make_binary("power")
equal = _make_binary("equal")
not_equal = _make_binary("not_equal")
greater = _make_binary("greater")
greater_equal = _make_binary("greater_equal")
less = _make_binary("less")
less_equal = _make_binary("less_equal")
logical_and = _make_binary("logical_and")
logical_or = _make_binary("logical_or")
logical_xor = _make_binary("logical_xor")
bitwise_and = _make_binary("bitwise_and")
bitwise_or = _make_binary("bitwise_or")
bitwise_xor = _make_binary("bitwise_xor")
left_shift = _make_binary("left_shift")
right_shift = _make_binary("right_shift")
mod = _make_binary("mod")


def _make_unary(name: str):
    def fn(x, dtype=None, *, mask=None, **kwargs):
        if mask is not None or kwargs:
            refuse_extras(name, fn, mask, kwargs)
        return _act._activation(name, x, dtype=dtype, mask=mask, api=name)
    fn.__name__ = name
    fn.__doc__ = f"Element-wise {name} on the Scalar Engine (activation instruction, fp32 internally)."
    fn._nki_op = name
    return fn


def _rsqrt(x, dtype=None, *, mask=None, **kwargs):
    """1 / sqrt(x). NKI 0.5+: runs on the GpSimd Engine (higher precision) and cannot read PSUM; Beta 1 code keeps
    the Scalar Engine activation."""
    if mask is not None or kwargs:
        refuse_extras('rsqrt', rsqrt, mask, kwargs)
    ctx = current()
    if ctx.dialect == "beta1":
        return _act._activation("rsqrt", x, dtype=dtype, mask=mask, api="rsqrt")
    v = _common.tile_arg(x, "rsqrt", "x", ("sbuf", "psum"))
    if v.tensor.buffer == "psum":
        raise KernelError("err_unsupported_memory",
                          "nl.rsqrt runs on the GpSimd Engine (NKI 0.5+), which cannot read PSUM",
                          "copy the PSUM tile to SBUF first (nl.copy), or call nisa.activation(dst=..., op=nl.rsqrt, "
                          "data=psum_tile) on the Scalar Engine")
    return _act._activation("rsqrt", x, dtype=dtype, mask=mask, api="rsqrt", engine="gpsimd")


exp = _make_unary("exp")
log = _make_unary("log")
tanh = _make_unary("tanh")
sigmoid = _make_unary("sigmoid")
relu = _make_unary("relu")
gelu = _make_unary("gelu")
gelu_apprx_tanh = _make_unary("gelu_apprx_tanh")
gelu_dx = _make_unary("gelu_dx")
silu = _make_unary("silu")
silu_dx = _make_unary("silu_dx")
softplus = _make_unary("softplus")
mish = _make_unary("mish")
sqrt = _make_unary("sqrt")
rsqrt = _rsqrt
rsqrt._nki_op = "rsqrt"
square = _make_unary("square")
abs = _make_unary("abs")  # noqa: A001
sign = _make_unary("sign")
sin = _make_unary("sin")
cos = _make_unary("cos")
arctan = _make_unary("arctan")
erf = _make_unary("erf")
erf_dx = _make_unary("erf_dx")
negative = _make_unary("negative")
ceil = _make_unary("ceil")
floor = _make_unary("floor")
trunc = _make_unary("trunc")
logical_not = _make_unary("logical_not")
identity = _make_unary("identity")
identity._nki_op = "identity"


def reciprocal(x, dtype=None, *, mask=None, **kwargs):
    if mask is not None or kwargs:
        refuse_extras('reciprocal', reciprocal, mask, kwargs)
    return _act._activation("reciprocal", x, dtype=dtype, mask=mask, api="reciprocal")


reciprocal._nki_op = "reciprocal"
copy._nki_op = "copy"


def _make_reduce(name: str, op: str):
    def fn(x, axis, dtype=None, *, mask=None, keepdims=False, **kwargs):
        if mask is not None or kwargs:
            refuse_extras(name, fn, mask, kwargs)
        return _red._reduce(op, x, axis, dtype, mask, False, keepdims, api=name, name_override=op, strict=False)
    fn.__name__ = name
    fn.__doc__ = (f"{name} along free axes (never axis 0, the partition axis); result keeps >= 2 dims. Any free "
                  "axes are accepted (the compiler reorders the access pattern so they become innermost).")
    return fn


sum = _make_reduce("sum", "add")  # noqa: A001
max = _make_reduce("max", "maximum")  # noqa: A001
min = _make_reduce("min", "minimum")  # noqa: A001
prod = _make_reduce("prod", "multiply")
mean = _make_reduce("mean", "mean")
_var_any_keepdims = _make_reduce("var", "var")


def var(x, axis, dtype=None, *, mask=None, keepdims=True, **kwargs):
    """Variance along free axes. As in the reference, ``keepdims`` is ignored: the result always keeps the reduced
    axes (size 1)."""
    if mask is not None or kwargs:
        refuse_extras('var', var, mask, kwargs)
    return _var_any_keepdims(x, axis, dtype=dtype, mask=mask, keepdims=True)
all = _make_reduce("all", "logical_and")  # noqa: A001
sum._nki_op = "add"
max._nki_op = "maximum"
min._nki_op = "minimum"
prod._nki_op = "multiply"


def where(condition, x, y, dtype=None, *, mask=None, **kwargs):
    """Select ``x`` where ``condition`` is non-zero else ``y`` (VectorE select)."""
    if mask is not None or kwargs:
        refuse_extras('where', where, mask, kwargs)
    ctx = current()
    c = _common.tile_arg(condition, "where", "condition")
    shape = tuple(c.shape)
    reads = [c]
    xs = []
    for a, nm in ((x, "x"), (y, "y")):
        if _is_tile(a):
            v = _common.tile_arg(a, "where", nm)
            try:
                ok = tuple(np.broadcast_shapes(tuple(v.shape), shape)) == shape
            except ValueError:
                ok = False
            if not ok:
                raise KernelError("err_shape_mismatch",
                                  f"nl.where: '{nm}' {fmt_shape(v.shape)} does not match the condition "
                                  f"{fmt_shape(shape)}", "use tiles of the condition's shape (or size-1 dims that "
                                  "broadcast to it)")
            reads.append(v)
            xs.append(v)
        elif isinstance(a, (int, float, bool, np.integer, np.floating, np.bool_)):
            xs.append(float(a))
        else:
            raise KernelError("err_operand_type", f"nl.where: '{nm}' is {type(a).__name__}",
                              "pass a tile or a Python number")
    odt = _common.dtype_arg(dtype, "where") if dtype is not None else next(
        (v.tensor.dtype_name for v in xs if not isinstance(v, float)), "float32")
    dview, out_t = _common.out_tile(shape, odt, "sbuf", "where")
    res = None
    if ctx.numerics:
        if _dt.is_int(odt) and builtins.all(isinstance(v, float) or v.tensor.dtype_name == odt for v in xs):
            # integer tiles of the output dtype are selected exactly (no FP32 round trip)
            vals = [read(v, raw=True) if not isinstance(v, float) else _dt.cast(np.array(v), odt) for v in xs]
            res = np.where(read(c) != 0, vals[0], vals[1])
        else:
            vals = [read(v) if not isinstance(v, float) else np.float32(v) for v in xs]
            res = np.where(read(c) != 0, vals[0], vals[1]).astype(np.float32)
        res = np.broadcast_to(res, shape)
        _common.store_result(ctx, dview, res, None)
    n = _common.free_size(shape)
    ctx.emit("select", "vector", reads, (dview,), {}, n * shape[0], 0, n, shape[0])
    _common.finish(ctx, out_t, res)
    return out_t


def softmax(x, axis=-1, dtype=None, *, mask=None, **kwargs):
    """Softmax along free ``axis`` (default the last) = exp(x - max) / sum (four instructions)."""
    if mask is not None or kwargs:
        refuse_extras('softmax', softmax, mask, kwargs)
    mx = max(x, axis=axis, keepdims=True)
    if _free1(as_view(mx)):        # one value per partition: a tensor_scalar with a [P, 1] operand
        e = _ew._ts(x, "subtract", mx, False, api="softmax")
    else:                          # reduced over an inner axis only: element-wise with broadcasting
        e = _binary("subtract", x, mx)
    e = exp(e)
    s = sum(e, axis=axis, keepdims=True)
    if _free1(as_view(s)):
        return _ew._ts(e, "divide", s, False, dtype=dtype, api="softmax")
    return _binary("divide", e, s, dtype)


def device_print(print_prefix: str, tensor, **kwargs) -> None:
    """Print a tile's values (simulation only)."""
    if kwargs:
        refuse_extras('device_print', device_print, None, kwargs)
    ctx = current()
    if ctx.numerics and _is_tile(tensor):
        print(print_prefix, read(as_view(tensor)))
    else:
        print(print_prefix, tensor)


__all__ = ["matmul", "transpose", "copy", "broadcast_to", "add", "subtract", "multiply", "divide", "maximum",
           "minimum", "power", "equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "logical_and",
           "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
           "mod", "exp", "log", "tanh", "sigmoid", "relu", "gelu", "gelu_apprx_tanh", "gelu_dx", "silu", "silu_dx",
           "softplus", "mish", "sqrt", "rsqrt", "square", "abs", "sign", "sin", "cos", "arctan", "erf", "erf_dx",
           "negative", "ceil", "floor", "trunc", "logical_not", "identity", "reciprocal", "sum", "max", "min",
           "prod", "mean", "var", "all", "where", "softmax", "device_print"]
