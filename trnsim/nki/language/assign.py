"""Assignment semantics of tiles: ``dst[...] = value`` and ``dst += value``.

``buf[...] = op(...)`` writes the instruction's result straight into ``buf`` (the result tile is
retargeted, as the compiler does); ``psum[...] += nl.matmul(...)`` accumulates in PSUM; any other value
is copied (DMA for HBM, ``tensor_copy`` on chip) or memset (a Python number). Registered as the
tensor operators' hooks by :mod:`trnsim.nki.language`.
"""
from __future__ import annotations

import math

import numpy as np

from trnsim.nki.context import check_assign_shape, current, read, write
from trnsim.nki.isa.dma import _dma
from trnsim.nki.isa.fill import _memset_into
from trnsim.nki.isa.common import check_accumulate
from trnsim.nki.rules import KernelError
from trnsim.nki.tensors import Broadcast, Tensor, View


def assign(dst: View, value) -> None:
    """``dst[...] = value``: retarget a fresh op result into ``dst``, else copy / memset."""
    ctx = current()
    # `t[k] += x` assigns the in-place result back to itself: nothing to do
    if value is dst.tensor and dst.adv is None and dst.ranges == dst.tensor._full_ranges:
        return
    if type(value) is View and value.tensor is dst.tensor and value.adv is None and dst.adv is None \
            and value.ranges == dst.ranges:
        return
    if isinstance(value, Tensor):
        last = ctx.last_out() if ctx.last_out is not None else None
        fresh = (last is value and ctx.last_out_index == len(ctx.instructions) - 1 and value.alias is None
                 and value.kind == "local")
        if fresh and not (ctx.instructions[-1].opcode in ("nc_matmul", "nc_transpose")
                          and ctx.instructions[-1].engine == "tensor" and dst.tensor.buffer != "psum"):
            check_assign_shape(dst, value.shape, "assign")
            ins = ctx.instructions[-1]
            if dst.tensor.buffer == "hbm" and ins.engine != "dma":
                raise KernelError("err_unsupported_memory",
                                  f"compute results cannot be written to HBM directly ({dst!r})",
                                  "compute into an SBUF tile, then nl.store it to HBM")
            if ctx.numerics:
                vals = ctx.last_vals if ctx.last_vals is not None else value.data
                msk = ctx.last_mask
                if vals.shape != dst.shape:
                    vals = vals.reshape(dst.shape) if vals.size == math.prod(dst.shape) \
                        else np.broadcast_to(vals, dst.shape)
                if msk is not None and msk.shape != dst.shape:
                    msk = msk.reshape(dst.shape) if msk.size == math.prod(dst.shape) else None
                write(dst, vals, msk)
                if dst.tensor.acc is not None:
                    dst.tensor.acc[dst.npkey()] = True
            dst.tensor.mm_open = dst.tensor.psum_other_value = dst.tensor.buffer == "psum"
            ctx.retarget_last_write(value, dst)
            return
        value = value.full_view()
    if isinstance(value, (View, Broadcast)):
        check_assign_shape(dst, value.shape, "assign")
        if dst.tensor.buffer == "hbm" or value.tensor.buffer == "hbm":
            _dma(dst, value, None, api="assign")
            return
        from trnsim.nki.language.compute import copy
        copy(value, _dst=dst)
        return
    if isinstance(value, (int, float, np.integer, np.floating, bool)):
        _memset_into(dst, value)
        return
    raise KernelError("err_unsupported_assignment", f"cannot assign {type(value).__name__} to a tile",
                      "assign a tile, an NKI op result, or a Python number")


def augmented(dst: View, value, op: str):
    """``dst += value`` (PSUM matmul accumulation when value is a fresh matmul result)."""
    ctx = current()
    if op == "add" and isinstance(value, Tensor) and ctx.last_out is not None and ctx.last_out() is value \
            and ctx.last_out_index == len(ctx.instructions) - 1 and value.alias is None:
        ins = ctx.instructions[-1]
        if ins.opcode == "nc_matmul" and dst.tensor.buffer == "psum":
            check_assign_shape(dst, value.shape, "+=")
            t = dst.tensor
            if ctx.numerics:
                key = dst.npkey()
                acc = t.acc[key]
                group_start = not bool(np.any(acc))
                old = read(dst)
                new = value.data.reshape(dst.shape) if value.data.shape != dst.shape else value.data
                write(dst, np.where(acc, old + new, new))
                t.acc[key] = True
            else:
                group_start = not t.mm_open
            if not group_start:
                check_accumulate(ctx, t, "+= nl.matmul")
            t.mm_open = True
            t.psum_other_value = False
            ins.attrs["accumulate"] = not group_start
            ins.attrs["group_start"] = group_start
            ctx.retarget_last_write(value, dst, rmw=True)
            if not group_start:  # the accumulation reads the destination
                ins.reads = ins.reads + (ctx.operand(dst),)
            return dst if not dst.is_full() else dst.tensor
    from trnsim.nki.language import compute
    fn = getattr(compute, op)
    fn(dst, value, _dst=dst)
    return dst.tensor if dst.is_full() else dst

