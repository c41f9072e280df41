"""``nl.shared_constant``: constant data embedded in the kernel and placed in shared HBM.

The compiled binary carries the data and the runtime copies it to HBM when the model loads, so the
kernel sees an HBM tensor that no instruction wrote and that the kernel must not modify. The
simulator records it as a kernel-level HBM allocation (like an input) and emits no instruction.
"""
from __future__ import annotations

import os

import numpy as np

from trnsim.nki import dtypes as _dt
from trnsim.nki.language._arguments import refuse_extras
from trnsim.nki.context import current
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.tensors import Tensor

# element types the reference lists as supported for shared constants
SUPPORTED = ("float32", "float16", "bfloat16", "int32", "int16", "int8", "uint32", "uint16", "uint8", "float8_e4m3fn",
             "float8_e5m2", "float8_e8m0fnu")


def shared_constant(constant, **kwargs) -> Tensor:
    """An immutable shared-HBM tensor holding ``constant`` (a numpy array, or the path of a ``.npy`` file)."""
    if kwargs:
        refuse_extras('shared_constant', shared_constant, None, kwargs)
    ctx = current()
    if isinstance(constant, (str, os.PathLike)):
        path = os.fspath(constant)
        if not path.endswith(".npy") or not os.path.isfile(path):
            raise KernelError("err_invalid_constant", f"shared_constant({path!r}): not an existing .npy file",
                              "pass a numpy array or the path of a file written with numpy.save")
        constant = np.load(path, allow_pickle=False)
    if not isinstance(constant, np.ndarray):
        raise KernelError("err_invalid_constant", f"shared_constant expects a numpy array, got "
                          f"{type(constant).__name__}", "wrap the data with numpy.asarray(..., dtype=...) first")
    try:
        dname = _dt.dtype_name(constant.dtype)
    except TypeError:
        dname = str(constant.dtype)
    if dname not in SUPPORTED or constant.ndim == 0:
        raise KernelError("err_unsupported_dtype",
                          f"shared_constant of {fmt_shape(constant.shape)} {constant.dtype}: supported element types "
                          f"are {', '.join(SUPPORTED)} (at least 1-D)",
                          "convert on the host, e.g. constant.astype(np.float32)")
    t = Tensor(ctx, constant.shape, dname, "hbm", "shared_constant", kind="input",
               data=np.array(constant, copy=True) if ctx.numerics else None)
    t.alloc_id = ctx.new_alloc("shared_constant", "hbm", t.shape, dname, t.bytes_per_partition, 1, True)
    t.mutable = False
    t.written = True
    return t


__all__ = ["shared_constant"]
