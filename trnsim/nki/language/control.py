"""SPMD launch queries (``program_id``, ``num_programs``, ``spmd_dim``, ``nc``) and loops (``affine_range``,
``sequential_range``, ``static_range``): unrolled as they run."""
from __future__ import annotations


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


class _LaunchDim(int):
    """A launch-grid size that also says how many physical NeuronCores it spreads over (``lnc``)."""
    lnc = 1


def nc(n: int) -> _LaunchDim:
    """``nl.nc(2)``: the physical NeuronCores of a logical core, used inside ``nl.spmd_dim``."""
    d = _LaunchDim(int(n))
    d.lnc = int(n)
    return d


def spmd_dim(*args) -> _LaunchDim:
    """``kernel[nl.spmd_dim(n, nl.nc(2))]``: a grid dimension of ``n * 2`` programs spread over the 2 physical
    cores of an LNC=2 core (program ``i`` of that dimension runs on core ``i % 2``)."""
    size = 1
    lnc = 1
    for a in args:
        size *= int(a)
        lnc = max(lnc, int(getattr(a, "lnc", 1)))
    d = _LaunchDim(size)
    d.lnc = lnc
    return d


_LOOP_UID = [0]


def _range(kind: str, args) -> range:
    start, stop, step = args
    if stop is None:
        start, stop = 0, start
    vals = []
    for a in (start, stop, step):
        try:
            vals.append(int(a))
        except (TypeError, ValueError):
            raise KernelError("err_invalid_range", f"nl.{kind} bounds must be compile-time integers, got {a!r}",
                              f"write nl.{kind}(start, stop, step) with Python ints") from None
    if vals[2] == 0:
        raise KernelError("err_invalid_range", f"nl.{kind}({', '.join(map(str, vals))}) has step 0",
                          "use a non-zero step (NKI loops count up with a positive step)")
    return range(*vals)


def _loop(kind: str, args, directives=None):
    r = _range(kind, args)
    ctx = current()
    _LOOP_UID[0] += 1
    uid = _LOOP_UID[0]
    block = directives if hasattr(directives, "__enter__") else None
    try:
        if block is not None:
            block.__enter__()
        for i in r:
            ctx.push_scope(kind, uid, i)
            try:
                yield i
            finally:
                ctx.pop_scope()
    finally:
        if block is not None:
            block.__exit__(None, None, None)
        ctx.forget_loop(uid)


def affine_range(start, stop=None, step=1, directives=None, **kwargs):
    """Parallel loop (no loop-carried dependency except associative accumulation). Unrolled at trace time;
    the buffers of an iteration are reused by the next (a tile kept past its iteration is re-charged when used).
    ``directives=nki.compiler.no_reorder()`` keeps the loop's instructions in program order."""
    return _loop("affine_range", (start, stop, step), directives)


def sequential_range(start, stop=None, step=1, directives=None, **kwargs):
    """Loop with a loop-carried dependency. Unrolled at trace time."""
    return _loop("sequential_range", (start, stop, step), directives)


def static_range(start, stop=None, step=1, directives=None, **kwargs):
    """Fully unrolled loop."""
    return _loop("static_range", (start, stop, step), directives)


def no_reorder():
    """``with nl.no_reorder():`` -- the instructions issued inside keep their program order (recorded as
    ``attrs["no_reorder"]`` in the trace; see :mod:`trnsim.nki.compiler`)."""
    from trnsim.nki.context import NoReorderBlock
    return NoReorderBlock()


__all__ = ["program_id", "num_programs", "program_ndim", "spmd_dim", "nc", "affine_range", "sequential_range",
           "static_range", "no_reorder"]
