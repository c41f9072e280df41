"""Public type names of ``nki.language``: ``DType``, ``NKIObject``, ``NkiTensor``, and the NKI 0.6 dtypes added
over Beta 1 (``float8_e8m0fnu`` and the x4 packed MX types, see :mod:`trnsim.nki.packed`).

``NkiTensor`` is the public name of trnsim's tensor objects: an allocation
(:class:`~trnsim.nki.tensors.Tensor`) and an access to part of one (:class:`~trnsim.nki.tensors.View`) are both
``NkiTensor`` instances (``isinstance(t, nl.NkiTensor)``). ``DType`` accepts every dtype object the language
takes (``isinstance(nl.bfloat16, nl.DType)``); NKI 0.6 spells dtypes as strings, which trnsim accepts too.
"""
from __future__ import annotations

from abc import ABCMeta
from typing import Any

from trnsim.nki import dtypes as _dt
from trnsim.nki.dtypes import float4_e2m1fn_x4, float8_e4m3fn_x4, float8_e5m2_x4, float8_e8m0fnu  # noqa: F401
from trnsim.nki.rules import KernelError
from trnsim.nki.tensors import Tensor, View


class _DTypeMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        if isinstance(obj, (Tensor, View)):
            return False
        try:
            _dt.dtype_name(obj)
        except TypeError:
            return False
        return True


class DType(metaclass=_DTypeMeta):
    """A data type of the language: ``nl.float32``, ``nl.bfloat16``, ``nl.float8_e4m3fn_x4``, ... or its name as
    a string (``"bfloat16"``). ``DType(x)`` gives the canonical name."""

    def __new__(cls, dtype: Any) -> str:   # type: ignore[misc]
        try:
            return _dt.dtype_name(dtype)
        except TypeError as exc:
            raise KernelError("err_unsupported_dtype", str(exc), "use one of the nl.* dtypes") from None


class NKIObject:
    """Base class of NKI configuration objects and kernel dataclasses: keyword arguments become attributes."""

    def __init__(self, **kwargs: Any) -> None:
        for k, v in kwargs.items():
            setattr(self, k, v)


class NkiTensor(NKIObject, metaclass=ABCMeta):
    """The NKI tensor type: trnsim's tensors (:class:`~trnsim.nki.tensors.Tensor`) and their views
    (:class:`~trnsim.nki.tensors.View`) are registered as ``NkiTensor``. Create tensors with ``nl.ndarray`` (or
    ``NkiTensor(shape, dtype, buffer=...)``, which allocates the same way inside a kernel)."""

    def __new__(cls, shape=None, dtype=None, storage=None, buffer=None, name: str = "", **kwargs):
        if cls is not NkiTensor:
            return super().__new__(cls)
        if storage is not None:
            raise KernelError("err_unsupported_storage",
                              "trnsim tensors own their storage: NkiTensor(..., storage=...) cannot bind an "
                              "external storage handle", "allocate with nl.ndarray(shape, dtype, buffer=...) and "
                              "copy data in with nisa.dma_copy")
        from trnsim.nki.language.creation import ndarray
        return ndarray(shape, dtype, buffer=buffer, name=name)


NkiTensor.register(Tensor)
NkiTensor.register(View)


__all__ = ["DType", "NKIObject", "NkiTensor", "float8_e8m0fnu", "float8_e5m2_x4", "float8_e4m3fn_x4",
           "float4_e2m1fn_x4"]
