"""``nki.compiler``: directives to the NKI compiler, accepted and recorded in the trace.

trnsim has no compiler: the directives change nothing in the numerics. They are recorded so that a
scheduler (``trnsim.perf``) can honour them, and their arguments are checked against the target:

* ``@nki.compiler.skip_middle_end_transformations`` (on the kernel): ``Trace.directives``
  ``{"skip_middle_end_transformations": True}``: the kernel's instruction order and placement are
  meant to be kept as written.
* ``nki.compiler.no_reorder()`` (also ``nl.no_reorder()``): a context manager, or the ``directives=``
  argument of ``nl.sequential_range`` / ``affine_range``; every instruction issued inside gets
  ``attrs["no_reorder"] = <block id>``: they must run in program order (how-to-scheduling-apis.rst).
* ``nki.compiler.sbuf.mod_alloc(base_addr=, base_partition=0, num_par_tiles=(), num_free_tiles=())`` and
  ``nki.compiler.psum.mod_alloc(base_bank=, base_addr=0, base_partition=0, num_bank_tiles=(), ...)``: an
  explicit placement passed as ``buffer=`` to ``nl.ndarray``; the tensor's trace ``Allocation.placement``
  holds it. ``nl.ndarray(..., address=(partition_offset, free_offset))`` is NKI 0.6's form of the same.

Placement rules checked: the requested byte range must fit the target's SBUF partition / PSUM banks
(``err_allocation_out_of_range``).
"""
from __future__ import annotations

from typing import Callable

from trnsim.nki.context import NoReorderBlock, Placement
from trnsim.nki.rules import KernelError

def no_reorder() -> NoReorderBlock:
    """A block whose instructions must not be reordered (use with ``with`` or as a loop's ``directives=``)."""
    return NoReorderBlock()


def _set_directive(kernel: Callable, key: str, value=True) -> Callable:
    """Record a kernel-level directive on ``kernel`` (an ``@nki.jit`` Kernel or a function); it reaches
    ``Trace.directives`` when the kernel runs. Returns ``kernel``."""
    directives = dict(getattr(kernel, "_nki_directives", None) or {})
    directives[key] = value
    inner = getattr(kernel, "func", None)      # an @nki.jit Kernel: the directives travel with its function
    if inner is not None:
        inner._nki_directives = directives
    try:
        kernel._nki_directives = directives
    except AttributeError:  # pragma: no cover - objects without a __dict__
        pass
    return kernel


def skip_middle_end_transformations(kernel: Callable) -> Callable:
    """Decorator: ask the compiler to keep the kernel as written (recorded in ``Trace.directives``)."""
    return _set_directive(kernel, "skip_middle_end_transformations")


def _tuple(v, name: str) -> tuple:
    if isinstance(v, int):
        v = (v,)
    try:
        out = tuple(int(x) for x in v)
    except TypeError:
        raise KernelError("err_invalid_allocation", f"{name} must be a tuple of ints, got {v!r}",
                          f"pass {name}=(n,)", location="") from None
    if any(x < 1 for x in out):
        raise KernelError("err_invalid_allocation", f"{name}={out} has a count below 1", "use counts >= 1",
                          location="")
    return out


class _SbufAllocators:
    """``nki.compiler.sbuf``."""

    @staticmethod
    def mod_alloc(base_addr: int = 0, base_partition: int = 0, num_par_tiles=(), num_free_tiles=()) -> Placement:
        """Place an SBUF tensor at byte ``base_addr`` of each partition from ``base_partition``; with
        ``num_free_tiles=(n,)`` its blocks rotate over ``n`` buffers (modulo allocation)."""
        if int(base_addr) < 0 or int(base_partition) < 0:
            raise KernelError("err_allocation_out_of_range",
                              f"sbuf.mod_alloc(base_addr={base_addr}, base_partition={base_partition}) is negative",
                              "use a base address and partition >= 0", location="")
        return Placement("sbuf", base_addr=int(base_addr), base_partition=int(base_partition),
                         num_par_tiles=_tuple(num_par_tiles, "num_par_tiles"),
                         num_free_tiles=_tuple(num_free_tiles, "num_free_tiles"))


class _PsumAllocators:
    """``nki.compiler.psum``."""

    @staticmethod
    def mod_alloc(base_bank: int = 0, base_addr: int = 0, base_partition: int = 0, num_bank_tiles=(),
                  num_par_tiles=(), num_free_tiles=()) -> Placement:
        """Place a PSUM tensor from bank ``base_bank``; with ``num_bank_tiles=(n,)`` its blocks rotate over ``n``
        banks."""
        if int(base_bank) < 0 or int(base_addr) < 0 or int(base_partition) < 0:
            raise KernelError("err_allocation_out_of_range",
                              f"psum.mod_alloc(base_bank={base_bank}, base_addr={base_addr}) is negative",
                              "use a base bank and address >= 0", location="")
        return Placement("psum", base_bank=int(base_bank), base_addr=int(base_addr),
                         base_partition=int(base_partition), num_bank_tiles=_tuple(num_bank_tiles, "num_bank_tiles"),
                         num_par_tiles=_tuple(num_par_tiles, "num_par_tiles"),
                         num_free_tiles=_tuple(num_free_tiles, "num_free_tiles"))


sbuf = _SbufAllocators()
psum = _PsumAllocators()

__all__ = ["no_reorder", "skip_middle_end_transformations", "sbuf", "psum", "NoReorderBlock"]
