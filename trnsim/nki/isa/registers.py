"""Virtual registers: 32-bit scalars on the engine sequencers (``register_alloc``, ``register_move``,
``register_load``, ``register_store``), simulated as Python integers.

A register's value is known whenever the trace computes numerics, so ``while reg:``, ``range(reg)`` and
``int(reg)`` work (what the NKI *parser* frontend allows). In a timing-only trace a value loaded from
memory is unknown and using it in Python control flow raises a KernelError. Values wrap to 32-bit
two's complement, as a 32-bit register does.
"""
from __future__ import annotations

import numpy as np

from trnsim.nki.context import as_view, current, read, write
from trnsim.nki.isa.common import is_tile
from trnsim.nki.isa.engines import NkiInstruction
from trnsim.nki.rules import KernelError, fmt_shape

_UNSET = object()


def _wrap32(x: int) -> int:
    return ((int(x) + 2 ** 31) % 2 ** 32) - 2 ** 31


class VirtualRegister:
    """A 32-bit register of an engine sequencer (allocate with ``nisa.register_alloc``)."""

    _count = 0

    def __init__(self, state=_UNSET, frozen: bool = False):
        VirtualRegister._count += 1
        self.id = VirtualRegister._count
        self.frozen = bool(frozen)
        self._value = _UNSET if state is _UNSET or state is None else _wrap32(state)

    @property
    def value(self) -> int:
        if self._value is _UNSET:
            raise KernelError("err_register_uninitialized",
                              f"virtual register r{self.id} is read before any value was moved or loaded into it",
                              "initialise it: nisa.register_alloc(0), nisa.register_move(reg, 0) or "
                              "nisa.register_load(reg, tile)")
        if self._value is None:
            raise KernelError("err_register_value_unknown",
                              f"virtual register r{self.id} holds a value loaded from memory in a timing-only trace "
                              "(no numerics), so Python control flow cannot branch on it",
                              "simulate the kernel with numerics (nki.simulate) or use a compile-time bound")
        return self._value

    def __bool__(self) -> bool:
        return self.value != 0

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        v = "unset" if self._value is _UNSET else ("unknown" if self._value is None else self._value)
        return f"VirtualRegister(r{self.id}={v})"


def _reg(x, api: str, arg: str) -> VirtualRegister:
    if not isinstance(x, VirtualRegister):
        raise KernelError("err_invalid_arguments", f"'{arg}' of '{api}' must be a VirtualRegister, got "
                          f"{type(x).__name__}", "allocate one with reg = nisa.register_alloc()")
    if x.frozen and arg == "dst":
        raise KernelError("err_register_frozen", f"register r{x.id} is frozen (read-only) and cannot be written by "
                          f"'{api}'", "allocate a new register with nisa.register_alloc()")
    return x


def _scalar_tile(x, api: str, arg: str):
    if not is_tile(x):
        raise KernelError("err_expected_tile", f"'{arg}' of '{api}' must be a tensor with one element, got "
                          f"{type(x).__name__}", "pass a [1, 1] (or [1]) tensor in SBUF or HBM")
    v = as_view(x)
    if int(np.prod(v.shape)) != 1:
        raise KernelError("err_register_tensor_shape",
                          f"'{arg}' of '{api}' must hold exactly one element, got {fmt_shape(v.shape)}",
                          "slice it down to one element, e.g. t[0:1, 0:1]")
    if v.tensor.buffer not in ("sbuf", "hbm"):
        raise KernelError("err_unsupported_memory", f"'{arg}' of '{api}' must be in SBUF or HBM, got "
                          f"{v.tensor.buffer}", "copy the value to SBUF first")
    if v.tensor.itemsize > 4:
        raise KernelError("err_unsupported_dtype", f"registers are 32-bit; '{arg}' has dtype {v.tensor.dtype_name}",
                          "use an int32/uint32/float32 tensor")
    return v


def register_alloc(x: int | None = None) -> VirtualRegister:
    """A new virtual register, uninitialised (``None``) or holding the integer ``x``."""
    if x is not None and not isinstance(x, (int, np.integer)):
        raise KernelError("err_invalid_arguments", f"register_alloc takes an int or None, got {type(x).__name__}",
                          "pass an integer immediate, or None and then register_load a runtime value")
    ctx = current()
    reg = VirtualRegister(x)
    if x is not None:
        ctx.emit("register_move", "sync", (), (), {"imm": int(x), "reg": reg.id}, 0, 0, 1, 1)
    return reg


def register_move(dst, src) -> NkiInstruction:
    """``dst = src`` for a register ``dst`` and an integer or register ``src``."""
    ctx = current()
    d = _reg(dst, "register_move", "dst")
    if isinstance(src, VirtualRegister):
        d._value = src._value if src._value is not _UNSET else src.value   # .value raises for unset
        attrs = {"src_reg": src.id, "reg": d.id}
    elif isinstance(src, (int, np.integer)) and not isinstance(src, bool):
        d._value = _wrap32(src)
        attrs = {"imm": int(src), "reg": d.id}
    else:
        raise KernelError("err_invalid_arguments", f"register_move src must be an int or a VirtualRegister, got "
                          f"{type(src).__name__}", "pass a compile-time integer or another register")
    return NkiInstruction(ctx.emit("register_move", "sync", (), (), attrs, 0, 0, 1, 1))


def register_load(dst, src) -> NkiInstruction:
    """Load the single (<= 32-bit) value of tensor ``src`` (SBUF or HBM) into register ``dst``."""
    ctx = current()
    d = _reg(dst, "register_load", "dst")
    v = _scalar_tile(src, "register_load", "src")
    if ctx.numerics:
        raw = np.asarray(read(v, raw=True)).reshape(-1)[0]
        if raw.dtype.kind == "f" or raw.dtype.kind not in "iu":
            f = float(raw)
            if not np.isfinite(f):
                raise KernelError("err_invalid_value", f"register_load reads {f} from `{v.tensor.name or 'tile'}`: a "
                                  "register holds a 32-bit integer, and a non-finite value has no integer form "
                                  "(reading memory nothing wrote gives NaN)",
                                  "load an integer tile (nl.int32), or write the value before loading it")
        d._value = _wrap32(int(np.trunc(float(raw))) if np.issubdtype(np.asarray(raw).dtype, np.floating) or
                           raw.dtype.kind not in "iu" else int(raw))
    else:
        d._value = None
    return NkiInstruction(ctx.emit("register_load", "sync", (v,), (), {"reg": d.id}, 0, v.tensor.itemsize, 1, 1))


def register_store(dst, src) -> NkiInstruction:
    """Store register ``src`` into the single element of tensor ``dst`` (SBUF or HBM)."""
    ctx = current()
    s = _reg(src, "register_store", "src")
    v = _scalar_tile(dst, "register_store", "dst")
    if ctx.numerics:
        write(v, np.full(v.shape, s.value, dtype=np.float64).astype(np.float32) if v.tensor.dtype_name.startswith(
            "float") else np.full(v.shape, s.value).astype(v.tensor.data.dtype))
    return NkiInstruction(ctx.emit("register_store", "sync", (), (v,), {"reg": s.id}, 0, v.tensor.itemsize, 1, 1))


__all__ = ["VirtualRegister", "register_alloc", "register_move", "register_load", "register_store"]
