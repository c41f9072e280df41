"""Beta 1 ``nki.isa`` (``import trnsim.neuronxcc.nki.isa as nisa``): the instructions of :mod:`trnsim.nki.isa`,
which accept both the Beta 1 value-returning forms (``t = nisa.nc_matmul(stationary, moving)``) and the
destination-first forms.

Some instructions that NKI 0.6 defines with ``dst`` as their first parameter (``max8``, ``dropout``,
``local_gather``, ``dma_transpose``, ...: ``_VALUE_RETURNING``) were value-returning in Beta 1:
``b = nisa.dropout(a, prob=0.2)``. Called without a destination they make and return their result tile; the
destination-first form (``dst=``, or all of NKI 0.6's required arguments in order) still writes into ``dst``.
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


# NKI 0.6 instructions with ``dst`` first that Beta 1 called value-returning (the nki/test examples:
# ``b = nisa.max8(src=a)``, ``c = nisa.dropout(a, prob=0.2)``, ...): (arguments the NKI 0.6 signature requires, dst
# included; the position that holds a tile in the NKI 0.6 form but not in the Beta 1 form, where both forms can take
# that many positional arguments). Signatures from the nki.isa reference.
_VALUE_RETURNING = {"max8": (2, None), "nc_find_index8": (3, None), "nc_match_replace8": (4, 2), "dropout": (3, None),
                    "local_gather": (3, 2), "range_select": (6, 1), "tensor_partition_reduce": (3, 0),
                    "sequence_bounds": (2, None), "nc_n_gather": (3, None)}


def _value_returning(fn, required: int, tile_at: int | None):
    """``fn(dst, ...)`` callable as Beta 1's ``fn(...)``: the call is the destination-first NKI 0.6 form when it
    passes ``dst=``, or ``required`` positional arguments with a tile at ``tile_at``; otherwise the instruction makes
    its result tile and returns it."""
    from trnsim.nki.isa.common import is_tile

    @functools.wraps(fn)
    def beta1_form(*args, **kwargs):
        if "dst" in kwargs or (len(args) >= required and (tile_at is None or is_tile(args[tile_at]))):
            return fn(*args, **kwargs)   # the destination-first form
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


for _name, (_required, _tile_at) in _VALUE_RETURNING.items():
    if _dst_first(_name):
        globals()[_name] = _value_returning(getattr(_isa, _name), _required, _tile_at)
del _name, _required, _tile_at


def dma_transpose(src, axes=None, *args, dst=None, **kwargs):
    """Beta 1 ``b = nisa.dma_transpose(src, axes=None, ...)``: the transposed SBUF tile. The NKI 0.6 form
    ``dma_transpose(dst, src, ...)`` (two tiles first) writes ``dst``."""
    from trnsim.nki.isa.common import is_tile
    if dst is None and is_tile(axes):   # dma_transpose(dst, src, axes, ...): destination first
        dst, src, axes = src, axes, (args[0] if args else kwargs.pop("axes", None))
        args = args[1:]
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
