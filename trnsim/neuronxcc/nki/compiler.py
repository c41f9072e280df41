"""Beta 1 ``neuronxcc.nki.compiler`` (``import trnsim.neuronxcc.nki.compiler as ncc``): the directives of
:mod:`trnsim.nki.compiler` plus Beta 1's allocation callbacks, ``ncc.sbuf.alloc(func)`` and ``ncc.psum.alloc(func)``.

An allocation callback places each block of a tensor: ``func(block_index, partitions, bytes_per_partition)``
returns ``(partition, byte address)`` for SBUF and ``(bank, partition, byte address)`` for PSUM. trnsim evaluates
it for every block when the tensor is allocated, records the placement in the trace (``Allocation.placement``) and
checks that it fits the target (``err_allocation_out_of_range``)."""
from __future__ import annotations

from typing import Callable

from trnsim.nki.compiler import (NoReorderBlock, _PsumAllocators, _SbufAllocators, no_reorder,  # noqa: F401
                                 _set_directive, skip_middle_end_transformations)
from trnsim.nki.context import Placement
from trnsim.nki.rules import KernelError


def _callback(func: Callable, buffer: str) -> Placement:
    if not callable(func):
        raise KernelError("err_invalid_allocation", f"{buffer}.alloc takes an allocation function, got "
                          f"{type(func).__name__}",
                          f"pass a function of (block index, partitions, bytes per partition), or use "
                          f"{buffer}.mod_alloc(...)", location="")
    return Placement(buffer, alloc_func=func)


class _Beta1Sbuf(_SbufAllocators):
    """``neuronxcc.nki.compiler.sbuf``."""

    @staticmethod
    def alloc(func: Callable) -> Placement:
        """Place an SBUF tensor with ``func(block_index, partitions, bytes_per_partition) -> (partition, address)``."""
        return _callback(func, "sbuf")


class _Beta1Psum(_PsumAllocators):
    """``neuronxcc.nki.compiler.psum``."""

    @staticmethod
    def alloc(func: Callable) -> Placement:
        """Place a PSUM tensor with ``func(block_index, partitions, bytes_per_partition) -> (bank, partition,
        address)``."""
        return _callback(func, "psum")


sbuf = _Beta1Sbuf()
psum = _Beta1Psum()


def enable_stack_allocator(func: Callable | None = None, log_level: int = 50):
    """Beta 1 kernel decorator: allocate the kernel's SBUF and PSUM tensors with the compiler's stack allocator.
    The reference says it "must use together with skip_middle_end_transformations"; a kernel launched with one and
    not the other raises ``err_invalid_directive``. Recorded in ``Trace.directives``; trnsim's memory accounting
    (live tiles against capacity) is the same under either allocator. ``log_level`` is accepted and unused."""
    if not isinstance(log_level, int) or isinstance(log_level, bool):
        raise KernelError("err_invalid_arguments", f"enable_stack_allocator(log_level={log_level!r}) takes an int "
                          "(a logging level)", "pass e.g. log_level=logging.INFO", location="")

    def wrap(k: Callable) -> Callable:
        return _set_directive(k, "enable_stack_allocator")
    return wrap(func) if func is not None else wrap


def force_auto_alloc(func: Callable | None = None):
    """Beta 1 kernel decorator: "force automatic allocation to be turned on in the kernel. This will ignore any
    direct allocation inside the kernel": every ``ncc.sbuf/psum.alloc`` / ``mod_alloc`` buffer (and ``address=``)
    in the kernel is allocated as ``nl.sbuf`` / ``nl.psum`` instead."""
    def wrap(k: Callable) -> Callable:
        return _set_directive(k, "force_auto_alloc")
    return wrap(func) if func is not None else wrap


class MultiBufferDirective:
    """``ncc.multi_buffer(factor)``: a loop directive (``nl.sequential_range(n, directives=ncc.multi_buffer(2))``)
    asking for ``factor`` buffers of the loop's tiles. Accepted; trnsim's schedule does not change with it."""

    def __init__(self, factor: int):
        self.factor = factor

    def __repr__(self) -> str:
        return f"MultiBufferDirective(factor={self.factor})"


def multi_buffer(factor: int = 2) -> MultiBufferDirective:
    """Beta 1 ``ncc.multi_buffer(factor=2)``: a MultiBufferDirective for a loop's ``directives=``."""
    if not isinstance(factor, int) or isinstance(factor, bool) or factor < 1:
        raise KernelError("err_invalid_arguments", f"multi_buffer(factor={factor!r}) takes an int >= 1",
                          "pass e.g. ncc.multi_buffer(2)", location="")
    return MultiBufferDirective(factor)

__all__ = ["no_reorder", "skip_middle_end_transformations", "sbuf", "psum", "NoReorderBlock", "enable_stack_allocator",
           "force_auto_alloc", "multi_buffer", "MultiBufferDirective"]
