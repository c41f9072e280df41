"""Beta 1 ``nki.isa`` (``import trnsim.neuronxcc.nki.isa as nisa``): the instructions of :mod:`trnsim.nki.isa`,
which accept both the Beta 1 value-returning forms (``t = nisa.nc_matmul(stationary, moving)``) and the
destination-first forms.

Instructions that NKI 0.6 defines with ``dst`` as their first parameter (``max8``, ``dropout``, ``local_gather``,
...) were value-returning in Beta 1: ``b = nisa.dropout(a, prob=0.2)``. Their Beta 1 names here take the Beta 1
arguments (everything after ``dst``) and return the new tile; passing ``dst=`` still writes into it.
``nisa.constants`` holds the enum namespaces (``dge_mode``, ``oob_mode``, ...), as in ``neuronxcc.nki.isa.constants``.
"""
from __future__ import annotations

import functools
import inspect

import trnsim.nki.isa as _isa
from trnsim.nki.isa import *  # noqa: F401,F403
from trnsim.nki.isa import __all__ as _isa_all
from trnsim.nki.isa.enums import engine as _engine
from trnsim.neuronxcc.nki.isa import constants  # noqa: F401

# Beta 1 spelled the engine selectors as module constants
tensor_engine = _engine.tensor
vector_engine = _engine.vector
scalar_engine = _engine.scalar
gpsimd_engine = _engine.gpsimd
unknown_engine = _engine.unknown


def _value_returning(fn):
    """``fn(dst, ...)`` callable as Beta 1's ``fn(...)``: without ``dst=`` the instruction makes its result tile."""
    @functools.wraps(fn)
    def beta1_form(*args, **kwargs):
        if "dst" in kwargs:
            return fn(*args, **kwargs)
        return fn(None, *args, **kwargs)
    return beta1_form


def _dst_first(name: str) -> bool:
    fn = getattr(_isa, name)
    if not callable(fn) or isinstance(fn, type):
        return False
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return False
    return bool(params) and params[0] == "dst"


for _name in _isa_all:
    if _dst_first(_name):
        globals()[_name] = _value_returning(getattr(_isa, _name))
del _name

def dma_transpose(src, axes=None, *args, dst=None, **kwargs):
    """Beta 1 ``b = nisa.dma_transpose(src, axes=None, ...)``: the transposed SBUF tile (NKI 0.6 passes ``dst``)."""
    if dst is None:
        from trnsim.nki.context import as_view
        from trnsim.nki.isa.dma_transform import _PERMS
        from trnsim.nki.language import ndarray, sbuf
        s = as_view(src)
        shape = tuple(getattr(s, "shape", ()))
        if len(shape) in _PERMS:
            perm = _PERMS[len(shape)] if axes is None else tuple(int(a) for a in axes)
            if sorted(perm) == list(range(len(shape))):
                dst = ndarray(tuple(shape[a] for a in perm), dtype=s.tensor.dtype_name, buffer=sbuf)
    _isa.dma_transpose(dst, src, axes, *args, **kwargs)
    return dst


def __getattr__(name: str):
    if name == "tensor_copy_dynamic_src":
        from trnsim.nki.rules import KernelError
        raise KernelError("err_unsupported_api",
                          f"nisa.{name} (Beta 1, Neuron 2.26 and earlier: a copy whose free-dimension index is read "
                          "from SBUF at run time) is not simulated by trnsim",
                          "write it in NKI 0.6: a view with a runtime index, src.ap(pattern, scalar_offset=offset_tile)"
                          " or src.select(dim, offset_tile), copied with nisa.tensor_copy", location="")
    raise AttributeError(f"module 'trnsim.neuronxcc.nki.isa' has no attribute {name!r}")


__all__ = list(_isa_all) + ["tensor_engine", "vector_engine", "scalar_engine", "gpsimd_engine", "unknown_engine",
                            "constants"]
