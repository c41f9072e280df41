"""Buffer queries: ``nl.is_hbm``, ``nl.is_on_chip``, ``nl.is_psum``, ``nl.is_sbuf``.

Each takes a memory region (``nl.sbuf``, ``nl.psum``, ``nl.hbm``, ``nl.private_hbm``, ``nl.shared_hbm``, a
:class:`~trnsim.nki.language.buffers.MemoryRegion`, or its name as a string) and answers at trace time; a tensor's
region is ``t.buffer`` (trnsim also accepts the tensor itself). No instruction is recorded.
"""
from __future__ import annotations

from trnsim.nki.language.buffers import MemoryRegion
from trnsim.nki.rules import KernelError
from trnsim.nki.tensors import Broadcast, Tensor, View

_BY_NAME = {"sbuf": "sbuf", "psum": "psum", "hbm": "hbm", "private_hbm": "hbm", "shared_hbm": "hbm"}


def _region(buffer, api: str) -> str:
    """"sbuf", "psum" or "hbm" for a memory-region argument."""
    if isinstance(buffer, MemoryRegion):
        return _BY_NAME[buffer.value]
    if isinstance(buffer, (Tensor, View)):
        return buffer.tensor.buffer
    if isinstance(buffer, Broadcast):
        return buffer.view.tensor.buffer
    if isinstance(buffer, str) and buffer in _BY_NAME:
        return _BY_NAME[buffer]
    raise KernelError("err_invalid_buffer", f"nl.{api} expects a memory region, got {buffer!r}",
                      "pass nl.sbuf, nl.psum, nl.hbm, nl.private_hbm, nl.shared_hbm or a tensor's .buffer")


def is_hbm(buffer) -> bool:
    """True for any HBM region (``nl.hbm``, ``nl.private_hbm``, ``nl.shared_hbm``)."""
    return _region(buffer, "is_hbm") == "hbm"


def is_on_chip(buffer) -> bool:
    """True for SBUF and PSUM."""
    return _region(buffer, "is_on_chip") in ("sbuf", "psum")


def is_psum(buffer) -> bool:
    """True for PSUM."""
    return _region(buffer, "is_psum") == "psum"


def is_sbuf(buffer) -> bool:
    """True for SBUF."""
    return _region(buffer, "is_sbuf") == "sbuf"


__all__ = ["is_hbm", "is_on_chip", "is_psum", "is_sbuf"]
