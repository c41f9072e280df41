"""NKI 0.6 language math added over Beta 1: ``abs_max``/``abs_min``, ``fmod``, ``invert``, ``tan``,
``gelu_apprx_sigmoid`` (and its derivative), ``rms_norm``, ``expand_dims``, ``gather_flattened``,
``shared_identity_matrix``, and the operator tokens ``prelu``, ``bypass``, ``average``.

Every function lowers to instructions as the NKI 0.6 reference (aws-neuron-sdk ``nki/api/nki/language``)
describes: binary math -> VectorE ``tensor_tensor`` / ``tensor_scalar``; unary math -> ScalarE
``activation``; ``rms_norm`` -> activation (square) + reduce + ``tensor_scalar`` + activation (rsqrt) +
two multiplies. The numerics of the new operators are registered in the instruction tables
(:data:`trnsim.nki.isa.ops.ACT` / ``ALU`` / ``REDUCE``) when this module is imported, so the ISA accepts them
as ``op=`` arguments too (``nisa.activation(op=nl.tan, ...)``, ``nisa.tensor_scalar(op0=nl.bypass, ...)``).
"""
from __future__ import annotations


import numpy as np

from trnsim.nki import dtypes as _dt
from trnsim.nki.language._arguments import refuse_extras
from trnsim.nki.context import as_view, current, read, write
from trnsim.nki.isa import activations as _act, common as _common, elementwise as _ew, ops as _ops
from trnsim.nki.isa import reduce as _red
from trnsim.nki.language.compute import _binary, _is_tile
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.tensor_api import alias_tensor
from trnsim.nki.tensors import View

# GELU's sigmoid approximation x * sigmoid(1.702 x): Hendrycks & Gimpel, "Gaussian Error Linear Units
# (GELUs)", arXiv:1606.08415, section 2.
_GELU_SIGMOID_K = 1.702


def _sig(x):
    return (0.5 * (1.0 + np.tanh(0.5 * x))).astype(np.float32)


def _gelu_sigmoid(x):
    return x * _sig(np.float32(_GELU_SIGMOID_K) * x)


def _gelu_sigmoid_dx(x):
    s = _sig(np.float32(_GELU_SIGMOID_K) * x)
    return s + np.float32(_GELU_SIGMOID_K) * x * s * (np.float32(1) - s)


def _prelu(x, relu_param=0.0):
    """PReLU: x for x >= 0, ``relu_param * x`` below (``relu_param`` is activate2's argument; 0 = ReLU)."""
    return np.where(x >= 0, x, np.float32(relu_param) * x).astype(np.float32)


def _abs_max(a, b):
    """The operand of larger magnitude, with its sign; ties give ``b`` (nl.abs_max reference)."""
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return np.where(np.abs(a) > np.abs(b), a, b)


def _abs_min(a, b):
    """The operand of smaller magnitude, with its sign; ties give ``b`` (nl.abs_min reference)."""
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return np.where(np.abs(a) < np.abs(b), a, b)


def _register(table: dict, name: str, fn) -> None:
    have = table.get(name)
    if have is not None and have is not fn:
        return   # the instruction layer already defines it (its numerics win)
    table[name] = fn


for _name, _fn in (("tan", np.tan), ("gelu_apprx_sigmoid", _gelu_sigmoid),
                   ("gelu_apprx_sigmoid_dx", _gelu_sigmoid_dx), ("prelu", _prelu), ("bypass", lambda x: x)):
    _register(_ops.ACT, _name, _fn)
for _name, _fn in (("abs_min", _abs_min), ("fmod", np.fmod), ("average", lambda a, b: (a + b) * np.float32(0.5)),
                   ("bypass", lambda a, b: np.asarray(a, dtype=np.float32))):
    _register(_ops.ALU, _name, _fn)
_register(_ops.REDUCE, "average", np.mean)


class _OpToken:
    """An operator usable only as an ``op=`` argument of an instruction (``nl.prelu``, ``nl.bypass``,
    ``nl.average``)."""
    __slots__ = ("_nki_op", "_doc")

    def __init__(self, name: str, doc: str):
        self._nki_op = name
        self._doc = doc

    def __repr__(self) -> str:
        return f"nl.{self._nki_op}"

    def __call__(self, *args, **kwargs):
        raise KernelError("err_unsupported_op", f"nl.{self._nki_op} is an operator for instructions ({self._doc}), "
                          "not a function", f"pass it as op= to an nki.isa instruction, e.g. "
                          f"nisa.activation(dst=..., op=nl.{self._nki_op}, data=...)")


prelu = _OpToken("prelu", "Scalar Engine parametric ReLU; the slope below 0 is activate2's relu_param")
bypass = _OpToken("bypass", "a no-op stage of tensor_scalar / activate2: the data passes unchanged")
average = _OpToken("average", "the mean, as a reduction op (e.g. tensor_partition_reduce)")


# ----------------------------------------------------------------------------- binary

def _needs_nc_v4(api: str) -> None:
    ctx = current()
    if ctx.limits.neuroncore_version in ("NC-v2", "NC-v3"):
        raise KernelError("err_unsupported_on_target",
                          f"nl.{api} needs NeuronCore-v4 (trn3) or newer; this kernel targets {ctx.target} "
                          f"({ctx.limits.neuroncore_version})",
                          f"target trn3 (NEURON_PLATFORM_TARGET_OVERRIDE=trn3), or write it with nl.abs, "
                          f"nl.greater and nl.where")


def abs_max(x, y, dtype=None, *, mask=None, **kwargs):
    """Element-wise: ``x`` where ``|x| > |y|``, else ``y`` (signed values; ties give ``y``). NeuronCore-v4+."""
    if mask is not None or kwargs:
        refuse_extras('abs_max', abs_max, mask, kwargs)
    _needs_nc_v4("abs_max")
    return _binary("abs_max", x, y, dtype, mask, None)


def abs_min(x, y, dtype=None, *, mask=None, **kwargs):
    """Element-wise: ``x`` where ``|x| < |y|``, else ``y`` (signed values; ties give ``y``). NeuronCore-v4+."""
    if mask is not None or kwargs:
        refuse_extras('abs_min', abs_min, mask, kwargs)
    _needs_nc_v4("abs_min")
    return _binary("abs_min", x, y, dtype, mask, None)


def fmod(x, y, dtype=None, *, mask=None, **kwargs):
    """Element-wise C-style remainder of ``x / y`` (the sign of ``x``; ``numpy.fmod``), fp32 arithmetic."""
    if mask is not None or kwargs:
        refuse_extras('fmod', fmod, mask, kwargs)
    return _binary("fmod", x, y, dtype, mask, None)


abs_max._nki_op = "abs_max"
abs_min._nki_op = "abs_min"
fmod._nki_op = "fmod"


def invert(x, dtype=None, *, mask=None, **kwargs):
    """Bitwise NOT of an integer tile (XOR with all ones, on the Vector Engine); output dtype = input's."""
    if mask is not None or kwargs:
        refuse_extras('invert', invert, mask, kwargs)
    ctx = current()
    v = _common.tile_arg(x, "invert", "x")
    src = v.tensor.dtype_name
    if _dt.is_float(src) or src == "bool":
        raise KernelError("err_unsupported_dtype", f"nl.invert needs an integer tile, got {src} {fmt_shape(v.shape)}",
                          "convert first (nl.copy(x, dtype=nl.int32)) or use nl.logical_not for a 0/1 mask")
    shape = tuple(v.shape)
    dview, out_t = _common.out_tile(shape, _common.dtype_or(dtype, src), "sbuf", "invert")
    if ctx.numerics:
        bits = np.invert(read(v, raw=True))
        vals = bits if dview.tensor.dtype_name == src else bits.astype(np.float32)
        write(dview, vals)
        ctx.last_mask = None
    n = _common.free_size(shape)
    ctx.emit("tensor_scalar", "vector", (v,), (dview,), {"op0": "bitwise_xor", "op1": None, "operand0": "all_ones",
                                                        "operand0_is_vector": False, "operand1_is_vector": False,
                                                        "api": "invert"}, n * shape[0], 0, n, shape[0])
    _common.finish(ctx, out_t, None)
    return out_t


invert._nki_op = "invert"


# ----------------------------------------------------------------------------- unary (Scalar Engine)

def _make_act(name: str, doc: str):
    def fn(x, dtype=None, *, mask=None, **kwargs):
        if mask is not None or kwargs:
            refuse_extras(name, fn, mask, kwargs)
        return _act._activation(name, x, dtype=dtype, mask=mask, api=name)
    fn.__name__ = name
    fn.__doc__ = doc
    fn._nki_op = name
    return fn


tan = _make_act("tan", "Element-wise tangent on the Scalar Engine (fp32 internally).")
gelu_apprx_sigmoid = _make_act("gelu_apprx_sigmoid",
                               "GELU approximated as x * sigmoid(1.702 x) (Hendrycks & Gimpel 2016), element-wise.")
gelu_apprx_sigmoid_dx = _make_act("gelu_apprx_sigmoid_dx",
                                  "Derivative of x * sigmoid(1.702 x): s + 1.702 x s (1 - s), s = sigmoid(1.702 x).")


# ----------------------------------------------------------------------------- rms_norm

def rms_norm(x, w, axis, n, epsilon=1e-06, dtype=None, compute_dtype=None, **kwargs):
    """``x / sqrt(sum(x**2 over axis) / n + epsilon) * w``.

    Lowered as: ScalarE square, VectorE sum over ``axis``, ``tensor_scalar`` (* 1/n, + epsilon), ScalarE
    rsqrt, VectorE multiply by the per-row factor, VectorE multiply by ``w`` (``w`` broadcasts against
    ``x``). ``compute_dtype`` (default float32) is the dtype of the intermediate tiles."""
    if kwargs:
        refuse_extras('rms_norm', rms_norm, None, kwargs)
    xv = _common.tile_arg(x, "rms_norm", "x")
    if not _is_tile(w):
        raise KernelError("err_expected_tile", f"operand 'w' of 'rms_norm' must be a tile, got {type(w).__name__}",
                          "load the weights into an SBUF tile, e.g. [1, F] broadcast to [P, F]")
    if not isinstance(n, (int, np.integer)) or int(n) <= 0:
        raise KernelError("err_invalid_arguments", f"rms_norm n={n!r}: n is the number of values in each mean "
                          "square and must be a positive integer", "pass n = the size of the reduced axes")
    if float(epsilon) < 0:
        raise KernelError("err_invalid_arguments", f"rms_norm epsilon={epsilon} must be >= 0",
                          "use a small positive epsilon such as 1e-6")
    cdt = _common.dtype_arg(compute_dtype, "rms_norm", "compute_dtype") if compute_dtype is not None else "float32"
    odt = _common.dtype_arg(dtype, "rms_norm") if dtype is not None else xv.tensor.dtype_name
    sq = _act._activation("square", xv, dtype=cdt, api="rms_norm")
    ss = _red._reduce("add", sq, axis, dtype=cdt, keepdims=True, api="rms_norm", strict=False)
    ms = _ew._ts(ss, "multiply", 1.0 / float(n), op1="add", operand1=float(epsilon), dtype=cdt, api="rms_norm")
    r = _act._activation("rsqrt", ms, dtype=cdt, api="rms_norm")
    y = _ew._tt(xv, r, "multiply", cdt, None, None, api="rms_norm")
    wv = as_view(w)
    return _ew._tt(y, wv, "multiply", odt, None, None, api="rms_norm", pbcast_ok=True)


# ----------------------------------------------------------------------------- views and gathers

def expand_dims(x, axis):
    """A view of ``x`` with a new size-1 axis at ``axis`` (numpy.expand_dims; no data moves).

    On-chip tiles keep the partition axis first, so ``axis`` must be >= 1 there; the view shares the
    tile's storage (no new allocation, no instruction)."""
    v = as_view(x)
    if not isinstance(v, View):
        raise KernelError("err_expected_tile", f"nl.expand_dims expects a tensor, got {type(x).__name__}",
                          "pass a tensor or a slice of one")
    t = v.tensor
    if t.alias is not None:
        v = t.alias
        t = v.tensor
    nd = len(v.shape)
    ax = int(axis) + nd + 1 if int(axis) < 0 else int(axis)
    if not 0 <= ax <= nd:
        raise KernelError("err_invalid_axis", f"nl.expand_dims axis {axis} out of range for a {nd}-D tensor "
                          f"{fmt_shape(v.shape)}", f"use an axis in -{nd + 1}..{nd}")
    if t.buffer != "hbm" and ax == 0:
        raise KernelError("err_partition_dim_must_be_first",
                          f"nl.expand_dims(axis=0) on an on-chip tile {fmt_shape(v.shape)} would move the partition "
                          "dimension", "insert the new axis at 1 or later")
    return alias_tensor(v, tuple(v.shape[:ax]) + (1,) + tuple(v.shape[ax:]), api="nl.expand_dims")


def gather_flattened(data, indices, axis=0, dtype=None, **kwargs):
    """``out[p, j...] = data[p].flatten()[indices[p, j...]]``: each partition gathers from its own flattened
    free elements (GpSimd Engine). ``indices`` is an integer tile with ``data``'s partition count."""
    if kwargs:
        refuse_extras('gather_flattened', gather_flattened, None, kwargs)
    ctx = current()
    dv = _common.tile_arg(data, "gather_flattened", "data")
    iv = _common.tile_arg(indices, "gather_flattened", "indices")
    if int(axis) != 0:
        raise KernelError("err_invalid_axis", f"gather_flattened axis={axis}: the gather runs per partition over "
                          "the flattened free elements (axis 0)", "pass axis=0")
    if _dt.is_float(iv.tensor.dtype_name):
        raise KernelError("err_unsupported_dtype", f"gather_flattened indices must be integers, got "
                          f"{iv.tensor.dtype_name}", "create the index tile as nl.int32 or nl.uint32")
    if iv.shape[0] != dv.shape[0]:
        raise KernelError("err_num_partition_mismatch", f"gather_flattened data {fmt_shape(dv.shape)} and indices "
                          f"{fmt_shape(iv.shape)} span different partitions", "give both the same partition count")
    shape = tuple(iv.shape)
    dview, out_t = _common.out_tile(shape, _common.dtype_or(dtype, dv.tensor.dtype_name), "sbuf",
                                    "gather_flattened")
    res = None
    nfree = _common.free_size(dv.shape)
    if ctx.numerics:
        P = dv.shape[0]
        flat = read(dv, raw=_dt.is_int(dv.tensor.dtype_name)).reshape(P, nfree)   # integers gather exactly
        idx = read(iv, raw=True).reshape(P, -1).astype(np.int64)
        bad = (idx < 0) | (idx >= nfree)
        if bad.any():
            p, j = map(int, np.argwhere(bad)[0])
            raise KernelError("err_index_out_of_bounds", f"gather_flattened index {int(idx[p, j])} at partition {p} "
                              f"is outside the {nfree} free elements of data {fmt_shape(dv.shape)}",
                              f"keep indices in 0..{nfree - 1}")
        res = np.take_along_axis(flat, idx, axis=1).reshape(shape)
        _common.store_result(ctx, dview, res, None)   # into another integer type dt.cast saturates
    n = _common.free_size(shape)
    ctx.emit("gather_flattened", "gpsimd", (dv, iv), (dview,), {"elements_per_partition": nfree}, 0, 0, n, shape[0])
    _common.finish(ctx, out_t, res)
    return out_t


def shared_identity_matrix(n, dtype=_dt.uint8, dst=None, **kwargs):
    """An ``n`` x ``n`` identity matrix in SBUF (``dtype`` default uint8), or written into ``dst``.

    The compiler keeps one shared identity per dtype in HBM and DMAs it in; the trace records that DMA
    (``dma_copy`` from a constant)."""
    if kwargs:
        refuse_extras('shared_identity_matrix', shared_identity_matrix, None, kwargs)
    ctx = current()
    n = int(n)
    if not 1 <= n <= ctx.limits.pmax:
        raise KernelError("err_num_partition_exceed_arch_limit",
                          f"shared_identity_matrix(n={n}): an SBUF identity has n partitions; {ctx.target} has "
                          f"{ctx.limits.pmax}", f"use n in 1..{ctx.limits.pmax} (nl.tile_size.pmax)")
    dname = _dt.dtype_name(dtype)
    dview, out_t = _common.out_tile((n, n), dname, "sbuf", "shared_identity_matrix", dst, allowed=("sbuf",))
    if ctx.numerics:
        write(dview, np.eye(n, dtype=np.float32).reshape(dview.shape))
        ctx.last_mask = None
    isz = _dt.itemsize(dname)
    ctx.emit("dma_copy", "dma", (), (dview,), {"api": "shared_identity_matrix", "src": "constant", "dst": "sbuf",
                                               "partitions": n, "bytes_per_partition": n * isz}, 0, n * n * isz, n, n)
    _common.finish(ctx, out_t, None)
    return dst if dst is not None else out_t


__all__ = ["abs_max", "abs_min", "fmod", "invert", "tan", "gelu_apprx_sigmoid", "gelu_apprx_sigmoid_dx", "prelu",
           "bypass", "average", "rms_norm", "expand_dims", "gather_flattened", "shared_identity_matrix"]
