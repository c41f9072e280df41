"""SPMD launch queries (``program_id``, ``num_programs``, ``spmd_dim``, ``nc``) and loops (``affine_range``,
``sequential_range``, ``static_range``): unrolled as they run."""
from __future__ import annotations


import operator

from trnsim.nki.language._arguments import refuse_extras
from trnsim.nki.context import current
from trnsim.nki.rules import KernelError

# Simulator limit, not a hardware limit: affine_range / sequential_range / static_range loops are unrolled as the
# kernel runs (one Python iteration per trip, each of its instructions traced), so a kernel may unroll at most this
# many loop iterations in total (all loops, nested trips counted, all program instances). The tracer runs some tens
# of thousands of instructions per second, so this is tens of seconds of tracing, and ~15x the largest kernel the
# course traces (the 8192^3 tiled matmul, ~65k iterations); beyond it a typo such as nl.affine_range(10**9) would
# effectively hang the simulator.
MAX_UNROLLED_ITERATIONS = 1_000_000


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


_AXIS_DEFAULT = object()


def num_programs(axes=_AXIS_DEFAULT):
    """Number of program instances along ``axes`` of the launch grid (an int, or a tuple for a tuple of axes);
    ``axes=None`` gives the total over the whole grid. The default is axis 0 in NKI 0.6 (the migration guide:
    "axes default changed from None to 0") and None in Beta 1; on a one-dimensional launch they agree."""
    ctx = current()
    g = ctx.grid or (1,)
    if axes is _AXIS_DEFAULT:
        axes = None if ctx.dialect == "beta1" else 0
    if axes is None:
        total = 1
        for x in g:
            total *= x
        return total
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
            vals.append(operator.index(a))   # ints only: a float bound (e.g. n / 128) is not silently truncated
        except TypeError:
            raise KernelError("err_invalid_range", f"nl.{kind} bounds must be compile-time integers, got {a!r} "
                              f"({type(a).__name__})",
                              f"write nl.{kind}(start, stop, step) with Python ints (use // for integer division)"
                              ) from None
    if vals[2] == 0:
        raise KernelError("err_invalid_range", f"nl.{kind}({', '.join(map(str, vals))}) has step 0",
                          "use a non-zero step (NKI loops count up with a positive step)")
    r = range(*vals)
    if len(r) > MAX_UNROLLED_ITERATIONS:
        raise KernelError("err_loop_trip_count_exceeds_simulator_limit",
                          f"nl.{kind}({', '.join(map(str, vals))}) has {len(r):,} iterations; the simulator unrolls "
                          f"loops and traces at most {MAX_UNROLLED_ITERATIONS:,} loop iterations per kernel "
                          "(a simulator limit, not a hardware one)",
                          "check the loop bound (tile counts are usually size // tile_size), or simulate a smaller "
                          "problem")
    return r


def _too_many_iterations(kind: str) -> None:
    """err_loop_trip_count_exceeds_simulator_limit (the kernel's loops ran past MAX_UNROLLED_ITERATIONS)."""
    raise KernelError("err_loop_trip_count_exceeds_simulator_limit",
                      f"the kernel's loops (nl.{kind} and the loops around it) ran more than "
                      f"{MAX_UNROLLED_ITERATIONS:,} iterations in total; the simulator unrolls loops and traces at "
                      "most that many per kernel (a simulator limit, not a hardware one)",
                      "check the loop bounds (nested trip counts multiply), or simulate a smaller problem")


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
            n = ctx.unrolled_iterations = ctx.unrolled_iterations + 1
            if n > MAX_UNROLLED_ITERATIONS:
                _too_many_iterations(kind)
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
    """NKI 0.6: a deprecated alias of ``range()`` (unrolled at trace time). Beta 1 (``trnsim.neuronxcc.nki``): a
    parallel loop whose iterations must not write overlapping parts of a tensor made outside it, except by
    associative accumulation (err_unexpected_output_dependencies). The buffers of an iteration are reused by
    the next (a tile kept past its iteration is re-charged when used). ``directives=nki.compiler.no_reorder()``
    keeps the loop's instructions in program order."""
    if kwargs:
        refuse_extras('affine_range', affine_range, None, kwargs)
    return _loop("affine_range", (start, stop, step), directives)


def sequential_range(start, stop=None, step=1, directives=None, **kwargs):
    """Loop with a loop-carried dependency. Unrolled at trace time."""
    if kwargs:
        refuse_extras('sequential_range', sequential_range, None, kwargs)
    return _loop("sequential_range", (start, stop, step), directives)


def static_range(start, stop=None, step=1, directives=None, **kwargs):
    """Fully unrolled loop."""
    if kwargs:
        refuse_extras('static_range', static_range, None, kwargs)
    return _loop("static_range", (start, stop, step), directives)


def no_reorder():
    """``with nl.no_reorder():`` -- the instructions issued inside keep their program order (recorded as
    ``attrs["no_reorder"]`` in the trace; see :mod:`trnsim.nki.compiler`)."""
    from trnsim.nki.context import NoReorderBlock
    return NoReorderBlock()


__all__ = ["program_id", "num_programs", "program_ndim", "spmd_dim", "nc", "affine_range", "sequential_range",
           "static_range", "no_reorder"]
