"""Beta 1 ``neuronxcc.nki.isa.constants``: the instruction enums (``dge_mode``, ``oob_mode``, ``engine``,
``reduce_cmd``, ``nc_version``) of :mod:`trnsim.nki.isa.enums`."""
from trnsim.nki.isa.enums import dge_mode, engine, nc_version, oob_mode, reduce_cmd  # noqa: F401

__all__ = ["dge_mode", "engine", "nc_version", "oob_mode", "reduce_cmd"]
