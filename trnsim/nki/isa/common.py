"""Helpers every instruction uses: operand validation, result tiles, storing results, trace bookkeeping."""
from __future__ import annotations

import math
import weakref

import numpy as np

from trnsim.nki import dtypes as dt
from trnsim.nki.context import as_view, check_assign_shape, current, read, write
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.tensors import Broadcast, Tensor, View

# ------------------------------------------------------------------------------ helpers

def is_tile(x) -> bool:
    return isinstance(x, (Tensor, View, Broadcast))


def tile_arg(x, api: str, arg: str, buffers: tuple[str, ...] = ("sbuf", "psum")):
    """Validate a tile operand: an NKI tile, in an allowed buffer, partition dim first."""
    if not is_tile(x):
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


def free_size(shape) -> int:
    n = 1
    for s in shape[1:]:
        n *= s
    return n


def check_free_limit(v, api: str, arg: str) -> None:
    lim = current().limits
    t = v.tensor
    cap = lim.vector_free_max_psum if t.buffer == "psum" else lim.vector_free_max_sbuf
    n = free_size(v.shape)
    if cap is not None and n > cap:
        raise KernelError("err_free_size_exceed_arch_limit",
                          f"operand '{arg}' of '{api}' has {n} elements per partition; the limit for a "
                          f"{t.buffer.upper()} "
                          f"operand is {cap} on {lim.target}",
                          "split the free dimension into smaller tiles")


def out_tile(shape, dtype_name: str, buffer: str, api: str, dst=None, *, allowed=("sbuf", "psum")):
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
                check_assign_shape(d, shape, api)
        return d, None
    t = ctx.new_tensor(shape, dtype_name, buffer, api=api, temp=True)
    return t.full_view(), t


def finish(ctx, out_tensor, vals32=None) -> None:
    if out_tensor is not None:
        ctx.last_out = weakref.ref(out_tensor)
        ctx.last_out_index = len(ctx.instructions) - 1
        ctx.last_vals = vals32
    else:
        ctx.last_out = None
        ctx.last_vals = None


def store_result(ctx, dview, vals, mask):
    dview.tensor.mm_open = False
    ctx.last_mask = mask
    if ctx.numerics:
        if vals.shape != dview.shape:
            vals = vals.reshape(dview.shape) if vals.size == math.prod(dview.shape) else \
                np.broadcast_to(vals, dview.shape)
        write(dview, vals, mask)
        if dview.tensor.acc is not None:
            dview.tensor.acc[dview.npkey()] = False


def result_of(dst_given, out_tensor, dview):
    if dst_given is not None:
        return dst_given
    return out_tensor


def dtype_or(dtype, default: str) -> str:
    return default if dtype is None else dt.dtype_name(dtype)


def scalar_or_vector(x, P: int, api: str, arg: str, reads: list):
    """Scalar operand (python number) or per-partition vector tile [P, 1] -> (value or array, is_vec)."""
    if x is None:
        return None, False
    if is_tile(x):
        v = tile_arg(x, api, arg)
        if v.shape[0] != P or free_size(v.shape) != 1:
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


def bcast_free(a: np.ndarray, ndim: int) -> np.ndarray:
    """Reshape a [P, 1] vector for broadcasting against an ndim-D tile."""
    return a.reshape((a.shape[0],) + (1,) * (ndim - 1))

