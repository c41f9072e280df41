"""The NKI 0.6 argument rule of ``nki.language`` functions.

Beta 1's functions took ``mask=`` and swallowed any other keyword (``**kwargs``). NKI 0.2 removed ``mask=``
(slice the tiles instead) and the 0.6 functions take only their documented parameters
(aws-neuron-sdk ``nki/api/nki/language``): on the device's toolchain a typo such as ``dtpye=`` is an error, so
here it is a KernelError naming the argument and the documented signature, never a silently ignored
keyword. Beta 1 kernels (``import trnsim.neuronxcc.nki``) keep the old leniency.
"""
from __future__ import annotations

import inspect

from trnsim.nki.rules import KernelError
from trnsim.nki.tensors import DIALECT


def refuse_extras(api: str, fn, mask, kwargs: dict) -> None:
    """Raise for ``mask=`` or an undocumented keyword given to ``nl.<api>`` (the function ``fn``) in an NKI 0.6
    kernel (no-op in Beta 1). Callers test ``mask is not None or kwargs`` first, so the common call costs nothing."""
    if DIALECT.beta1:
        return
    if mask is not None:
        raise KernelError("err_invalid_arguments", f"nl.{api} has no argument mask= in NKI 0.6",
                          "mask= was removed in NKI 0.2: slice the tiles to the valid region instead "
                          "(x[0:n, 0:m]), or run Beta 1 code with import trnsim.neuronxcc.nki")
    if kwargs:
        k = next(iter(kwargs))
        raise KernelError("err_invalid_arguments", f"nl.{api} has no argument {k}= in NKI 0.6",
                          f"call nl.{api}{documented_signature(fn)}")


def documented_signature(fn) -> str:
    """``(x, y, dtype=None)``: the parameters of ``fn`` without the Beta 1 ``mask`` / ``**kwargs`` and the private
    ones."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return "(...)"
    keep = [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) if p.kind is inspect.Parameter.KEYWORD_ONLY
            else p for p in sig.parameters.values()
            if p.name != "mask" and not p.name.startswith("_") and p.kind is not inspect.Parameter.VAR_KEYWORD]
    return str(sig.replace(parameters=keep, return_annotation=inspect.Signature.empty))


__all__: list[str] = []
