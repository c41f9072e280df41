"""``nki.typing``: shape-only tensor types (``import trnsim.nki.typing as nt``).

``nt.tensor[[128, 512], nl.bfloat16]`` (or ``nt.tensor[(128, 512), "bfloat16"]``) describes a kernel
input by shape and dtype only; it is accepted wherever a kernel input is and makes the run
timing-only (no data, ``numerics=False``). ``nt.mutable_tensor`` annotates a parameter the kernel may
write (it must then be returned, SDK-legacy ``nki.errors.rst``).
"""
from __future__ import annotations

from dataclasses import dataclass

from trnsim.nki import dtypes as dt


@dataclass(frozen=True)
class TensorSpec:
    """Shape and dtype of a kernel input without data."""
    shape: tuple[int, ...]
    dtype_name: str

    @property
    def dtype(self):
        return dt.dtype_object(self.dtype_name)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        n = dt.itemsize(self.dtype_name)
        for s in self.shape:
            n *= s
        return n


class _TensorType:
    def __getitem__(self, key) -> TensorSpec:
        if not isinstance(key, tuple) or len(key) != 2:
            raise TypeError("use nt.tensor[[d0, d1, ...], dtype]")
        shape, dtype = key
        if isinstance(shape, int):
            shape = (shape,)
        shape = tuple(int(s) for s in shape)
        if not shape or any(s < 1 for s in shape):
            raise ValueError(f"nt.tensor shape {list(shape)} has a size below 1; every dimension must be >= 1")
        return TensorSpec(shape, dt.dtype_name(dtype))

    def __repr__(self) -> str:
        return "nt.tensor"


class MutableTensorType(_TensorType):
    def __repr__(self) -> str:
        return "nt.mutable_tensor"


tensor = _TensorType()
mutable_tensor = MutableTensorType()

__all__ = ["tensor", "mutable_tensor", "TensorSpec", "MutableTensorType"]
