"""The cost model's error, at the bottom of :mod:`trnsim.perf` so every perf module can raise it."""
from __future__ import annotations


class CostModelError(ValueError):
    """An instruction the cost model cannot price (unknown engine, malformed operands)."""


CostModelError.__module__ = "trnsim.perf"
