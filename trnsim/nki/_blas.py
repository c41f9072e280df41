"""Run numpy's BLAS single-threaded while a kernel is simulated.

Kernel tiles are small (a matmul tile is at most 128 x 128 x 512), and on a busy machine a
multi-threaded BLAS spends far more time waking threads than multiplying (measured here: 10x slower
for the 1024^3 tiled matmul). We call OpenBLAS's thread-local setter through ctypes when numpy
bundles OpenBLAS, and do nothing otherwise (no extra dependency).
"""
from __future__ import annotations

import ctypes
import glob
import os
from contextlib import contextmanager

import numpy as np

_SETTER = None
_SEARCHED = False


def _find_setter():
    global _SETTER, _SEARCHED
    if _SEARCHED:
        return _SETTER
    _SEARCHED = True
    base = os.path.dirname(os.path.dirname(np.__file__))
    for path in sorted(glob.glob(os.path.join(base, "numpy.libs", "*openblas*"))):
        try:
            lib = ctypes.CDLL(path)
            fn = lib.openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        fn.argtypes = [ctypes.c_int]
        fn.restype = ctypes.c_int
        _SETTER = fn
        break
    return _SETTER


@contextmanager
def single_thread_blas():
    """Context manager: numpy BLAS calls in this thread use one thread (no-op without bundled OpenBLAS)."""
    fn = _find_setter()
    if fn is None:
        yield
        return
    old = fn(1)
    try:
        yield
    finally:
        fn(old if old > 0 else 1)
