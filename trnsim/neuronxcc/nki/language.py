"""Beta 1 ``nki.language`` (``import trnsim.neuronxcc.nki.language as nl``): the NKI 0.6 language plus the
names NKI 0.2 removed (``arange``, ``mgrid``, ``par_dim``, ``loop_reduce``, ``static_cast``).

Everything else is :mod:`trnsim.nki.language`; kernels launched through :mod:`trnsim.neuronxcc.nki` run
with the Beta 1 rules (``mask=``, block dimensions, value-returning instructions, loop-scoped tiles).
"""
from __future__ import annotations

import numpy as np

from trnsim.nki import dtypes as _dt
from trnsim.nki.language import *  # noqa: F401,F403
from trnsim.nki.language import __all__ as _nl_all
from trnsim.nki.dtypes import (bfloat16, bool_, float8_e4m3, float8_e4m3fn, float8_e5m2, float16,  # noqa: F401
                               float32, int8, int16, int32, tfloat32, uint8, uint16, uint32)
from trnsim.nki.rules import KernelError
from trnsim.nki.tensors import IndexExpr, MGrid, ParDim


def par_dim(n: int) -> ParDim:
    """Mark the partition dimension of an on-chip tensor shape (Beta 1 block dimensions)."""
    return ParDim(n)


mgrid = MGrid()


def arange(start: int, stop: int | None = None, step: int = 1) -> IndexExpr:
    """1-D index vector; reshape with ``[:, None]`` (partition) / ``[None, :]`` (free) before indexing."""
    if stop is None:
        start, stop = 0, start
    if int(step) == 0:
        raise KernelError("err_invalid_range", "nl.arange step cannot be 0", "use a non-zero step, e.g. nl.arange(0, n, 1)")
    n = len(range(int(start), int(stop), int(step)))
    return IndexExpr(1, 0, int(start), int(step), n)


class fp32:
    """Beta 1 ``nl.fp32``: the limits of float32 (``nl.fp32.min`` is the lowest finite value, the usual
    "minus infinity" fill of a masked maximum)."""
    min = float(np.finfo(np.float32).min)
    max = float(np.finfo(np.float32).max)


def rand(shape, dtype=float32, **kwargs):
    """Beta 1 ``nl.rand(shape, dtype=nl.float32, ...)``: uniform values on [0, 1) (NKI 0.6 requires dtype)."""
    from trnsim.nki.language import rand as _rand
    return _rand(shape, dtype, **kwargs)


def shared_identity_matrix(n, dtype=uint8, **kwargs):
    """Beta 1 ``nl.shared_identity_matrix(n, dtype=nl.uint8)``: an ``n`` x ``n`` identity held in shared HBM (a
    constant loaded with the model), read with ``nl.load`` (NKI 0.6 returns an SBUF tile instead)."""
    if kwargs:
        raise KernelError("err_invalid_arguments", f"nl.shared_identity_matrix got unexpected arguments {sorted(kwargs)}",
                          "call nl.shared_identity_matrix(n, dtype=...)")
    n = int(n)
    if n < 1:
        raise KernelError("err_invalid_shape", f"shared_identity_matrix(n={n}) needs n >= 1", "pass n >= 1")
    from trnsim.nki.language.constants import shared_constant
    return shared_constant(np.eye(n, dtype=_dt.storage_dtype(_dt.dtype_name(dtype))))


def atomic_rmw(dst, value, op, *, mask=None):
    """Beta 1 ``nl.atomic_rmw(dst, value, op)``: ``dst = op(dst, value)`` on HBM ``dst`` (often indexed by a tile of
    row numbers, ``t[idx_tile, i_f]``), as one read-modify-write DMA; rows that name the same HBM row all land.
    NKI 0.6 removed it: a read-modify-write DMA is ``nisa.dma_compute``."""
    from trnsim.nki.isa.dma import _dma_copy_beta1
    from trnsim.nki.context import as_view
    from trnsim.nki.isa.common import is_tile
    for v, arg in ((dst, "dst"), (value, "value")):
        if not is_tile(v):
            raise KernelError("err_expected_tile", f"operand '{arg}' of nl.atomic_rmw must be a tensor or tile, got "
                              f"{type(v).__name__}", "pass an HBM tensor (or an indirect access of one) as dst and an "
                              "SBUF tile as value")
    if as_view(dst).tensor.buffer != "hbm":
        raise KernelError("err_unsupported_memory", "nl.atomic_rmw updates an HBM tensor",
                          "pass an HBM tensor (or an indirect access of one) as dst")
    return _dma_copy_beta1(dst=dst, src=value, dst_rmw_op=op, mask=mask)


def loop_reduce(x, op, loop_indices, *, dtype=None, mask=None, **kwargs):
    raise KernelError("err_unsupported_api", "nl.loop_reduce is not supported by trnsim",
                      "accumulate explicitly with acc[...] = nl.add(acc, x) in a sequential_range loop")


def static_cast(x, dtype):
    """Host-side helper: round a numpy array to an NKI dtype (returns numpy)."""
    return _dt.cast(np.asarray(x, dtype=np.float32), _dt.dtype_name(dtype)).astype(_dt.storage_dtype(
        _dt.dtype_name(dtype)))



__all__ = list(_nl_all) + ["par_dim", "mgrid", "arange", "loop_reduce", "static_cast", "fp32",
                          "shared_identity_matrix", "atomic_rmw"]
