"""Keep Python's cyclic garbage collector from rescanning a fresh trace.

A timing-only trace of the tutorial matmul is ~100k instructions and about a million small objects, made while
the runtime pauses the collector (:func:`trnsim.nki.runtime.run_kernel`). Objects allocated while it is paused
still join the youngest generation, so the first collection after the kernel returns would walk all of them
(about a third of the trace time here) only to find them alive.

CPython's ``gc.freeze()`` moves every tracked object into a permanent generation without scanning it and resets
the youngest generation's count; ``gc.unfreeze()`` moves them back into the oldest generation (CPython 3.8+,
``Modules/gcmodule.c``). Together they promote the new objects to where only a full collection looks, which
CPython runs rarely; cycles among them are still collected then, so nothing leaks. Other young objects of the
process are promoted too, which only delays their collection.
"""
from __future__ import annotations

import gc


def promote_to_oldest_generation() -> bool:
    """Move all GC-tracked objects to the oldest generation unscanned (see the module docstring). Does nothing,
    and returns False, when objects are frozen already (``gc.freeze()`` by the application): unfreezing would
    release them."""
    if not hasattr(gc, "freeze") or gc.get_freeze_count():
        return False
    gc.freeze()
    gc.unfreeze()
    return True


__all__ = ["promote_to_oldest_generation"]
