"""``tensor_copy``: copy and cast a tile between SBUF/PSUM locations (Vector, Scalar or GpSimd engine)."""
from __future__ import annotations

from trnsim.nki.context import current, read
from trnsim.nki.isa.common import dtype_or, finish, free_size, out_tile, result_of, store_result, tile_arg
from trnsim.nki.rules import KernelError
from trnsim.nki.tensors import Broadcast, mask_array
from trnsim.nki.isa.common import REQUIRED, refuse_gpsimd_psum, two_forms


def _copy(src, dtype=None, mask=None, dst=None, eng="vector", api="tensor_copy"):
    ctx = current()
    if eng == "gpsimd":
        v = tile_arg(src, api, "src", ("sbuf",), mask=mask)
    else:
        v = tile_arg(src, api, "src", mask=mask)
    shape = tuple(v.shape)
    dview, out_t = out_tile(shape, dtype_or(dtype, v.tensor.dtype_name), "sbuf", api, dst)
    if eng == "gpsimd":
        refuse_gpsimd_psum(api, "engine=gpsimd", dst=dview)
    res = None
    if ctx.numerics:
        # Vector and GpSimd engines copy bit-accurately when src and dst have the same dtype (nki.isa.tensor_copy);
        # otherwise the value goes through float32 and is cast to dst's dtype
        same = eng != "scalar" and dview.tensor.dtype_name == v.tensor.dtype_name
        res = read(v, raw=True) if same else read(v)
        store_result(ctx, dview, res, mask_array(mask, tuple(dview.shape)))
    n = free_size(shape)
    base = v.view if isinstance(v, Broadcast) else v
    ctx.emit("tensor_copy", eng, (base,), (dview,), {"src": v.tensor.buffer, "dst": dview.tensor.buffer}, 0, 0, n,
             shape[0])
    finish(ctx, out_t, res)
    return result_of(dst, out_t, dview)


def _tensor_copy_beta1(*args, mask=None, dtype=None, engine=None, **kw):
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


def _tensor_copy_06(dst, src, engine, name):
    """Copy ``src`` into ``dst`` (casting to dst's dtype) between SBUF/PSUM locations."""
    eng = {"scalar": "scalar", "gpsimd": "gpsimd"}.get(engine, "vector")
    ctx = current()
    if eng == "scalar" and ctx.limits.neuroncore_version == "NC-v2":
        # nki/api nki.isa.tensor_copy: "On NeuronCore v2, tensor_copy is not supported on the Scalar Engine"
        raise KernelError("err_unsupported_engine",
                          f"nisa.tensor_copy on the Scalar Engine of {ctx.target} (NeuronCore-v2): the Scalar "
                          "Engine of NeuronCore-v2 has no tensor_copy",
                          "use nisa.activation(dst=..., op=nl.copy, data=src) on the Scalar Engine, or leave engine= "
                          "unset (Vector Engine)")
    return _copy(src, None, None, dst, eng)


tensor_copy = two_forms("tensor_copy", [("dst", REQUIRED), ("src", REQUIRED), ("engine", "unknown"), ("name", None)],
                        _tensor_copy_beta1, _tensor_copy_06)


__all__ = ["tensor_copy"]
