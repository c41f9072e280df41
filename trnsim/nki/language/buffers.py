"""Memory buffers (``nl.sbuf``, ``nl.psum``, ``nl.hbm``, ``nl.shared_hbm``, ...) and index helpers (``nl.ds``)."""
from __future__ import annotations

from trnsim.nki.tensors import DynSlice


# ----------------------------------------------------------------------------- buffers

class _Buffer:
    __slots__ = ("name", "kind")

    def __init__(self, name: str, kind: str):
        self.name, self.kind = name, kind

    def __repr__(self) -> str:
        return f"nl.{self.name}"


sbuf = _Buffer("sbuf", "sbuf")
psum = _Buffer("psum", "psum")
hbm = _Buffer("hbm", "private")
private_hbm = _Buffer("private_hbm", "private")
shared_hbm = _Buffer("shared_hbm", "shared")


def ds(start: int, size: int, step: int = 1) -> DynSlice:
    """Slice of ``size`` elements starting at ``start``."""
    return DynSlice(start, size, step)


__all__ = ["sbuf", "psum", "hbm", "private_hbm", "shared_hbm", "ds"]
