"""Numerics of the engines' operators: activation functions (``ACT``), binary ALU ops (``ALU``),
free-axis reductions (``REDUCE``) and ``op_name`` (an ``op=`` argument -> canonical name)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from trnsim.nki.rules import KernelError


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
    "right_shift": _intop(np.right_shift), "mod": np.mod, "abs_max": lambda a, b: np.where(np.abs(a) > np.abs(b), a, b),
}

# bitvec operators (nki.api.shared "Supported Math Operators"): integer bit patterns, no float conversion
BITVEC = frozenset({"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"})

# arithmetic unary operators an ALU instruction (tensor_scalar) accepts as op0/op1, with operand None or 0
UNARY_ALU: dict[str, Any] = {
    "abs": lambda x: np.abs(x), "square": lambda x: np.square(x), "relu": lambda x: np.maximum(x, np.float32(0)),
    "rsqrt": lambda x: np.float32(1) / np.sqrt(x), "reciprocal": lambda x: np.float32(1) / x,
}

# arithmetic operators the GpSimd Engine runs in native 32-bit integer arithmetic (tensor_tensor on int32/uint32)
INT_EXACT: dict[str, Any] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
    "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "less": np.less, "less_equal": np.less_equal,
}


def _unsigned(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"u{np.dtype(dtype).itemsize}")


def bitvec(name: str, a: np.ndarray, b) -> np.ndarray:
    """``a <name> b`` on the bit patterns of integer array ``a`` (its width; ``b`` an int or integer array).

    ``right_shift`` is the logical shift (zeros shifted in: the shared operator table has no arithmetic shift
    right); ``left_shift`` drops the bits shifted out of the width."""
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise TypeError(f"bitvec {name} needs an integer array, got {a.dtype}")
    u = _unsigned(a.dtype)
    ua = a.view(u) if a.dtype.kind == "i" else a
    ub = np.asarray(b).astype(np.int64).astype(u)
    with np.errstate(all="ignore"):
        if name == "right_shift":
            r = np.where(ub >= 8 * u.itemsize, u.type(0), np.right_shift(ua, ub % (8 * u.itemsize)))
        elif name == "left_shift":
            r = np.where(ub >= 8 * u.itemsize, u.type(0), np.left_shift(ua, ub % (8 * u.itemsize)))
        else:
            r = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}[name](ua, ub)
    r = np.asarray(r, dtype=u)
    return r.view(a.dtype) if a.dtype.kind == "i" else r


def check_unary_operand(name: str, operand: Any, api: str, arg: str) -> None:
    """A unary ALU operator takes no operand: ``operand`` "Must be None or 0 when op0 is a unary operator"."""
    if name in UNARY_ALU and operand is not None and \
            not (isinstance(operand, (int, float, np.integer, np.floating)) and operand == 0):
        raise KernelError("err_invalid_arguments",
                          f"{arg} of '{api}' must be None or 0 with the unary operator {name}, got {operand!r}",
                          f"pass {arg}=None (the operator takes no operand)")


def alu_name(op: Any) -> str:
    """Canonical name of an ``op0`` / ``op1`` argument: a binary ALU op or an arithmetic unary one (UNARY_ALU)."""
    name = op if isinstance(op, str) else (getattr(op, "_nki_op", None) or _NP_NAMES.get(op))
    if name in UNARY_ALU:
        return name
    return op_name(op)


# reduction ops over free axes
REDUCE: dict[str, Any] = {
    "add": np.sum, "maximum": np.max, "minimum": np.min, "multiply": np.prod,
    "logical_and": lambda x, axis, keepdims: np.all(x != 0, axis=axis, keepdims=keepdims).astype(np.float32),
    "logical_or": lambda x, axis, keepdims: np.any(x != 0, axis=axis, keepdims=keepdims).astype(np.float32),
    "logical_xor": lambda x, axis, keepdims: (np.count_nonzero(x, axis=axis, keepdims=keepdims) % 2).astype(np.float32),
    # a left fold x0 - x1 - x2 - ... over the reduced elements (in order)
    "subtract": lambda x, axis, keepdims: _fold_last(x, axis, keepdims, lambda f: f[..., 0] - f[..., 1:].sum(axis=-1)),
    # bitvec reductions: on integer bit patterns (reduce.py passes the raw integer storage)
    "bitwise_and": lambda x, axis, keepdims: _fold_last(_ints(x), axis, keepdims, lambda f: np.bitwise_and.reduce(f, axis=-1)),
    "bitwise_or": lambda x, axis, keepdims: _fold_last(_ints(x), axis, keepdims, lambda f: np.bitwise_or.reduce(f, axis=-1)),
    "bitwise_xor": lambda x, axis, keepdims: _fold_last(_ints(x), axis, keepdims, lambda f: np.bitwise_xor.reduce(f, axis=-1)),
}


def _ints(x: np.ndarray) -> np.ndarray:
    return x if x.dtype.kind in "iu" else x.astype(np.int64)


def _fold_last(x: np.ndarray, axis, keepdims: bool, fold) -> np.ndarray:
    """Apply ``fold`` (over a last axis) to the elements of ``axis`` (trailing axes of ``x``) flattened in order."""
    axes = sorted(a % x.ndim for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    lead = [k for k in range(x.ndim) if k not in axes]
    flat = np.transpose(x, lead + axes).reshape([x.shape[k] for k in lead] + [-1])
    r = fold(flat)
    if keepdims:
        r = r.reshape([1 if k in axes else x.shape[k] for k in range(x.ndim)])
    return r

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

