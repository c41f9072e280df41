"""Memory buffers (``nl.sbuf``, ``nl.psum``, ``nl.hbm``, ``nl.shared_hbm``, ...) and index helpers (``nl.ds``)."""
from __future__ import annotations

from enum import Enum

from trnsim.nki.tensors import DynSlice


# ----------------------------------------------------------------------------- buffers

class MemoryRegion(Enum):
    """``nl.MemoryRegion``: where a tensor lives (``nl.sbuf``, ``nl.psum``, ``nl.private_hbm``,
    ``nl.shared_hbm``; ``nl.hbm`` is an alias of ``nl.private_hbm``)."""
    sbuf = "sbuf"
    psum = "psum"
    private_hbm = "private_hbm"
    shared_hbm = "shared_hbm"

    @property
    def kind(self) -> str:
        """"sbuf", "psum", "private" or "shared" (the allocation kind the runtime uses)."""
        return {"private_hbm": "private", "shared_hbm": "shared"}.get(self.value, self.value)

    def __eq__(self, other) -> bool:
        # a tensor's ``.buffer`` is trnsim's memory name ("sbuf", "psum", "hbm"): ``t.buffer == nl.sbuf`` holds as
        # in NKI, and any HBM tensor's buffer equals nl.hbm / nl.private_hbm / nl.shared_hbm (trnsim does not
        # tell private from shared HBM through ``.buffer``)
        if isinstance(other, str):
            return other == self.value or (other == "hbm" and self.value in ("private_hbm", "shared_hbm"))
        return self is other

    __hash__ = Enum.__hash__

    def __repr__(self) -> str:
        return f"nl.{self.value}"

    __str__ = __repr__


_Buffer = MemoryRegion
sbuf = MemoryRegion.sbuf
psum = MemoryRegion.psum
hbm = MemoryRegion.private_hbm
private_hbm = MemoryRegion.private_hbm
shared_hbm = MemoryRegion.shared_hbm


def ds(start: int, size: int, step: int = 1) -> DynSlice:
    """Slice of ``size`` elements starting at ``start``."""
    return DynSlice(start, size, step)


__all__ = ["MemoryRegion", "sbuf", "psum", "hbm", "private_hbm", "shared_hbm", "ds"]
