"""Beta 1 ``neuronxcc.nki.compiler`` (``import trnsim.neuronxcc.nki.compiler as ncc``): the directives of
:mod:`trnsim.nki.compiler` plus Beta 1's allocation callbacks, ``ncc.sbuf.alloc(func)`` and ``ncc.psum.alloc(func)``.

An allocation callback places each block of a tensor: ``func(block_index, partitions, bytes_per_partition)``
returns ``(partition, byte address)`` for SBUF and ``(bank, partition, byte address)`` for PSUM. trnsim evaluates
it for every block when the tensor is allocated, records the placement in the trace (``Allocation.placement``) and
checks that it fits the target (``err_allocation_out_of_range``)."""
from __future__ import annotations

from typing import Callable

from trnsim.nki.compiler import (NoReorderBlock, _PsumAllocators, _SbufAllocators, no_reorder,  # noqa: F401
                                 skip_middle_end_transformations)
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

__all__ = ["no_reorder", "skip_middle_end_transformations", "sbuf", "psum", "NoReorderBlock"]
