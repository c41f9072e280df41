"""SPMD launch queries (``program_id``, ``num_programs``, ``spmd_dim``, ``nc``) and loops (``affine_range``,
``sequential_range``, ``static_range``): unrolled as they run."""
from __future__ import annotations

import numpy as np

from trnsim.nki.context import current
from trnsim.nki.rules import KernelError


# ----------------------------------------------------------------------------- SPMD / loops

def program_id(axis: int = 0) -> int:
    """Index of this SPMD program instance along ``axis``."""
    ctx = current()
    if axis >= len(ctx.grid):
        if not ctx.grid and axis == 0:
            return 0
        raise KernelError("err_invalid_axis", f"program_id({axis}) but the launch grid is {ctx.grid}",
                          "launch with kernel[g0, g1, ...](...) with enough dimensions")
    return ctx.program_id[axis]


def num_programs(axes: int | None = None):
    """Size of the SPMD grid along ``axes`` (all axes as a tuple when None)."""
    ctx = current()
    g = ctx.grid or (1,)
    if axes is None:
        return g if len(g) > 1 else g[0]
    if isinstance(axes, (tuple, list)):
        return tuple(g[a] for a in axes)
    if axes >= len(g):
        raise KernelError("err_invalid_axis", f"num_programs({axes}) but the launch grid is {ctx.grid}",
                          "use an axis of the grid")
    return g[axes]


def program_ndim() -> int:
    return len(current().grid)


def spmd_dim(*args):
    return int(np.prod([int(a) for a in args]))


def nc(n: int) -> int:
    return int(n)


_LOOP_UID = [0]


def _loop(kind: str, args):
    r = range(*[int(a) for a in args])
    ctx = current()
    _LOOP_UID[0] += 1
    uid = _LOOP_UID[0]
    try:
        for i in r:
            ctx.push_scope(kind, uid, i)
            try:
                yield i
            finally:
                ctx.pop_scope()
    finally:
        ctx.forget_loop(uid)


def affine_range(*args, **kwargs):
    """Parallel loop (no loop-carried dependency except associative accumulation). Unrolled at trace time;
    tiles created in an iteration are released at its end."""
    return _loop("affine_range", args)


def sequential_range(*args, **kwargs):
    """Loop with a loop-carried dependency. Unrolled at trace time."""
    return _loop("sequential_range", args)


def static_range(*args, **kwargs):
    """Fully unrolled loop."""
    return _loop("static_range", args)


__all__ = ["program_id", "num_programs", "program_ndim", "spmd_dim", "nc", "affine_range", "sequential_range",
           "static_range"]
