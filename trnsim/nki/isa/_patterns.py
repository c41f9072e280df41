"""The NKI 0.6 access-pattern forms of ``iota`` and ``affine_select`` (GpSimd):
``value[p, i] = offset + channel_multiplier * p + sum_k step_k * idx_k(i)`` for a ``pattern`` of up to four
``[step, num]`` pairs (outermost first) enumerating the free elements of ``dst`` in row-major order."""
from __future__ import annotations

import numpy as np

from trnsim.nki.context import current, read, write
from trnsim.nki.isa.common import finish, free_size, tile_arg
from trnsim.nki.isa.ops import ALU, op_name
from trnsim.nki.rules import KernelError, fmt_shape

_CMP = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")


def affine_values(P: int, n: int, pattern, offset, channel_multiplier, api: str) -> np.ndarray:
    """int64 [P, n] values of the affine pattern (n = elements per partition of the destination)."""
    if not isinstance(pattern, (list, tuple)) or not pattern or len(pattern) > 4 or not all(
            isinstance(pr, (list, tuple)) and len(pr) == 2 for pr in pattern):
        raise KernelError("err_invalid_pattern", f"pattern={pattern!r} of '{api}' must be a list of 1 to 4 "
                          "[step, num] pairs", "e.g. pattern=[[1, 512]] for 0, 1, ..., 511 along the free axis")
    steps = [int(s) for s, _ in pattern]
    nums = [int(m) for _, m in pattern]
    if any(m < 1 for m in nums) or int(np.prod(nums)) != n:
        raise KernelError("err_invalid_pattern",
                          f"pattern {pattern} of '{api}' enumerates {int(np.prod(nums))} elements; dst holds {n} per "
                          "partition", f"make the product of the nums equal {n}")
    grids = np.meshgrid(*[np.arange(m, dtype=np.int64) * s for s, m in zip(steps, nums)], indexing="ij")
    free = sum(g.reshape(-1) for g in grids)
    return int(offset) + int(channel_multiplier) * np.arange(P, dtype=np.int64)[:, None] + free[None, :]


def iota_pattern(dst, pattern, offset=0, channel_multiplier=0):
    """``dst[p, i] = offset + channel_multiplier * p + pattern(i)`` (int32 arithmetic, cast to dst's dtype)."""
    ctx = current()
    d = tile_arg(dst, "iota", "dst", ("sbuf",))
    P, n = d.shape[0], free_size(d.shape)
    vals = affine_values(P, n, pattern, offset, channel_multiplier, "iota")
    if ctx.numerics:
        v32 = ((vals + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int64)      # 32-bit integer arithmetic
        write(d, v32.astype(np.float64).reshape(d.shape) if d.tensor.data.dtype.kind == "f" else
              v32.reshape(d.shape).astype(d.tensor.data.dtype))
    ctx.emit("iota", "gpsimd", (), (d,), {"pattern": tuple(map(tuple, pattern))}, 0, 0, n, P)
    finish(ctx, None)
    return dst


def affine_select_pattern(dst, pattern, channel_multiplier, on_true_tile, on_false_value, cmp_op="equal",
                          offset=0):
    """``dst = on_true_tile where cmp_op(affine value, 0) else on_false_value`` (GpSimd, SBUF)."""
    ctx = current()
    api = "affine_select"
    d = tile_arg(dst, api, "dst", ("sbuf",))
    v = tile_arg(on_true_tile, api, "on_true_tile", ("sbuf",))
    if v.shape[0] != d.shape[0] or free_size(v.shape) != free_size(d.shape):
        raise KernelError("err_shape_mismatch", f"on_true_tile{fmt_shape(v.shape)} and dst{fmt_shape(d.shape)} of "
                          f"'{api}' must have the same partitions and elements per partition", "allocate dst like it")
    c = op_name(cmp_op)
    if c not in _CMP:
        raise KernelError("err_unsupported_op", f"cmp_op={c} of '{api}' is not a comparison",
                          "use nl.equal, nl.not_equal, nl.less, nl.less_equal, nl.greater or nl.greater_equal")
    if not isinstance(on_false_value, (int, float, np.integer, np.floating)):
        raise KernelError("err_operand_type", f"on_false_value of '{api}' must be a number (float32), got "
                          f"{type(on_false_value).__name__}", "pass a Python float, e.g. -9984.0")
    P, n = d.shape[0], free_size(d.shape)
    vals = affine_values(P, n, pattern, offset, channel_multiplier, api)
    if ctx.numerics:
        pred = ALU[c](vals.astype(np.float64), 0.0).astype(bool)
        res = np.where(pred, read(v).reshape(P, n), np.float32(on_false_value)).astype(np.float32)
        write(d, res.reshape(d.shape))
    ctx.emit(api, "gpsimd", (v,), (d,), {"cmp_op": c}, P * n, 0, n, P)
    finish(ctx, None)
    return dst
