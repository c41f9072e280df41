"""Transposes: ``nc_transpose`` on the Tensor Engine (SBUF -> PSUM, <= 128x128) or the Vector Engine (<= 32x32)."""
from __future__ import annotations

import numpy as np

from trnsim.nki.context import as_view, current, read
from trnsim.nki.isa.common import dtype_or, finish, out_tile, result_of, store_result, tile_arg
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.tensors import mask_array
from trnsim.nki.isa.common import REQUIRED, two_forms


def _transpose(data, eng: str, dst=None, mask=None, dtype=None, api: str = "nc_transpose"):
    ctx = current()
    lim = ctx.limits
    if eng in (None, "unknown"):
        v0 = as_view(data)
        eng = "vector" if (len(v0.shape) == 2 and v0.shape[0] <= lim.vector_transpose_max[0]
                           and v0.shape[1] <= lim.vector_transpose_max[1]) else "tensor"
    bufs = ("sbuf",) if eng == "tensor" else ("sbuf", "psum")
    v = tile_arg(data, api, "data" if api == "nc_transpose" else "x", bufs)
    nki06 = api == "nc_transpose" and ctx.dialect != "beta1"
    free_shape = tuple(v.shape[1:])
    if nki06 and len(v.shape) > 2:
        # "If the data tile has more than one free axis, this API implicitly flattens all free axes into one axis
        # and then performs a 2D transpose" (nki.isa.nc_transpose)
        F_all = 1
        for x in free_shape:
            F_all *= int(x)
        shape2 = (int(v.shape[0]), F_all)
    else:
        shape2 = tuple(v.shape)
    if len(shape2) != 2:
        raise KernelError("err_exceed_max_supported_dimension",
                          f"parameter '{'data' if api == 'nc_transpose' else 'x'}{fmt_shape(v.shape)}' of '{api}' "
                          "exceed max supported number of dimensions of 2.",
                          "transpose 2-D tiles [P, F]")
    P, F = shape2
    cap = lim.tensor_transpose_max if eng == "tensor" else lim.vector_transpose_max
    for dim, (size, c) in enumerate(zip((P, F), cap)):
        if size > c:
            raise KernelError("err_size_of_dimension_exceed_arch_limit",
                              f"size of dimension {dim} in 'x{fmt_shape(shape2)}' of '{api}' exceed architecture "
                              f"limitation of {c}. ({eng} engine transpose on {lim.target})",
                              f"transpose in blocks of at most {cap[0]}x{cap[1]}"
                              + ("" if eng == "tensor" else " or use engine=nisa.tensor_engine"))
    if eng == "tensor":
        odt = "float32" if lim.neuroncore_version == "NC-v2" else v.tensor.dtype_name
        dview, out_t = out_tile((F, P), dtype_or(dtype, odt), "psum", api, dst, allowed=("psum",))
    else:
        dview, out_t = out_tile((F, P), dtype_or(dtype, v.tensor.dtype_name), "sbuf", api, dst)
    exact_engine = eng != "tensor" or lim.neuroncore_version != "NC-v2"
    if nki06 and dst is not None and exact_engine and dview.tensor.dtype_name != v.tensor.dtype_name:
        # "The output dst tile must have the same data type as that of data" (nki.isa.nc_transpose)
        raise KernelError("err_unsupported_dtype",
                          f"nisa.nc_transpose writes data's dtype: data is {v.tensor.dtype_name}, dst is "
                          f"{dview.tensor.dtype_name}",
                          f"allocate dst as {v.tensor.dtype_name}, then cast with nisa.tensor_copy if needed")
    res = None
    if ctx.numerics:
        # bit-accurate on the Vector Engine and, from NeuronCore-v3, on the Tensor Engine
        same = exact_engine and dview.tensor.dtype_name == v.tensor.dtype_name
        if exact_engine:
            res = (read(v, raw=True) if same else read(v)).reshape(P, F).T
        else:
            # NeuronCore-v2: a matmul against the identity ("equivalent to nisa.nc_matmul with is_transpose=True",
            # not bit-accurate for NaN/Inf): a NaN or Inf in a column of data makes its whole output row NaN
            with np.errstate(invalid="ignore", over="ignore"):
                res = read(v).reshape(P, F).T @ np.eye(P, dtype=np.float32)
        store_result(ctx, dview, res, mask_array(mask, (F, P)))
    ctx.emit("nc_transpose", eng, (v,), (dview,), {"engine": eng}, 0, 0, F, P)
    finish(ctx, out_t, res)
    return result_of(dst, out_t, dview)


def _nc_transpose_beta1(*args, mask=None, dtype=None, engine=None, **kw):
    """Swap partition and free axes: TensorE (<= 128x128, SBUF -> PSUM) or VectorE (<= 32x32)."""
    dst = kw.pop("dst", None)
    data = kw.pop("data", None)
    if len(args) == 2:
        dst, data = args
    elif len(args) == 1:
        data = args[0]
    return _transpose(data, engine, dst, mask, dtype)


def _nc_transpose_06(dst, data, engine, name):
    """``dst = data.T``: Tensor Engine (<= 128x128, SBUF -> PSUM) or Vector Engine (<= 32x32)."""
    return _transpose(data, engine, dst)


nc_transpose = two_forms("nc_transpose", [("dst", REQUIRED), ("data", REQUIRED), ("engine", "unknown"),
                                          ("name", None)], _nc_transpose_beta1, _nc_transpose_06)


__all__ = ["nc_transpose"]
