"""Instruction option enumerations (``nisa.engine``, ``nisa.reduce_cmd``, ...) and ``get_nc_version``."""
from __future__ import annotations

from trnsim.nki.context import current


class engine:
    """Engine selector for instructions that can run on several engines."""
    unknown = "unknown"
    tensor = "tensor"
    vector = "vector"
    scalar = "scalar"
    gpsimd = "gpsimd"
    activation = "scalar"
    pool = "gpsimd"
    sync = "sync"
    dma = "dma"


class reduce_cmd:
    idle = "idle"
    reset = "reset"
    reduce = "reduce"
    reset_reduce = "reset_reduce"
    load_reduce = "load_reduce"


class oob_mode:
    error = "error"
    skip = "skip"


class dge_mode:
    unknown = "unknown"
    none = "none"
    swdge = "swdge"
    hwdge = "hwdge"


class nc_version:
    gen2 = "NC-v2"
    gen3 = "NC-v3"
    gen4 = "NC-v4"


def get_nc_version() -> str:
    """NeuronCore version of the current target ("NC-v2" for trn1/inf2, "NC-v3" trn2, "NC-v4" trn3)."""
    return current().limits.neuroncore_version


__all__ = ["engine", "reduce_cmd", "oob_mode", "dge_mode", "nc_version", "get_nc_version"]
