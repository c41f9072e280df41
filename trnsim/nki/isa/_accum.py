"""The engines' internal accumulator registers (one fp32 value per lane) shared by the accumulating
instructions, and the ``reduce_cmd`` protocol that drives them.

Vector Engine: ``exponential``, ``range_select``, ``select_reduce``, ``tensor_scalar_cumulative`` (and
``tensor_scalar_reduce`` in the reference). Scalar Engine: ``activate2`` (and ``activation``). The state
lives on the running kernel's context, per physical core and engine; it starts *unset*: continuing a chain
(``reduce_cmd.reduce``) that nothing reset is a KernelError, because the hardware value is undefined.
"""
from __future__ import annotations

import numpy as np

from trnsim.nki.isa.enums import reduce_cmd as _rc
from trnsim.nki.rules import KernelError

_LANES = 128
_IDENTITY = {"add": 0.0, "subtract": 0.0, "multiply": 1.0, "maximum": -np.inf, "minimum": np.inf,
             "abs_max": 0.0, "abs_min": np.inf}
_CMDS = (_rc.idle, _rc.reset, _rc.reduce, _rc.reset_reduce, _rc.load_reduce)


def _table(ctx) -> dict:
    tab = getattr(ctx, "_isa_accumulators", None)
    if tab is None:
        tab = {}
        ctx._isa_accumulators = tab
    return tab


def check_cmd(cmd, api: str, allowed=_CMDS) -> str:
    """Validate a ``reduce_cmd=`` value (a ``nisa.reduce_cmd`` member)."""
    if cmd not in allowed:
        raise KernelError("err_invalid_reduce_cmd", f"reduce_cmd={cmd!r} is not valid for '{api}'",
                          "use one of " + ", ".join(f"nisa.reduce_cmd.{c}" for c in allowed))
    return cmd


def identity(op: str) -> float:
    return float(_IDENTITY.get(op, 0.0))


def start(ctx, engine: str, cmd: str, op: str, P: int, api: str, init=None):
    """Accumulator values (float32 [P], or None if not accumulating) at the start of an instruction.

    ``reset``/``reset_reduce`` start from the identity of ``op``; ``load_reduce`` from ``init`` ([P] values);
    ``reduce`` continues the stored state (KernelError if nothing initialised it)."""
    tab = _table(ctx)
    key = (getattr(ctx, "core", 0), engine)
    if cmd == _rc.idle:
        return None
    if cmd in (_rc.reset, _rc.reset_reduce):
        return np.full(P, identity(op), dtype=np.float32)
    if cmd == _rc.load_reduce:
        return np.broadcast_to(np.asarray(init, dtype=np.float32), (P,)).copy() if init is not None else \
            np.zeros(P, dtype=np.float32)
    state = tab.get(key)
    if state is None:
        raise KernelError("err_accumulator_uninitialized",
                          f"'{api}' continues the {engine} engine accumulator (reduce_cmd.reduce) but no earlier "
                          f"instruction on this core reset or loaded it; its value is undefined",
                          "start the chain with reduce_cmd.reset_reduce (or load_reduce with an initial value)")
    if state is True:      # timing-only trace: the state exists but has no values
        return np.zeros(P, dtype=np.float32)
    if state.shape[0] < P:
        raise KernelError("err_accumulator_uninitialized",
                          f"'{api}' continues an accumulator of {state.shape[0]} lanes over {P} partitions",
                          "reset the accumulator over all partitions the chain uses (reduce_cmd.reset_reduce)")
    return state[:P].copy()


def save(ctx, engine: str, values) -> None:
    """Store the accumulator state after an instruction (None: a timing-only trace, values unknown)."""
    tab = _table(ctx)
    tab[(getattr(ctx, "core", 0), engine)] = True if values is None else np.asarray(values, dtype=np.float32)


def peek(ctx, engine: str):
    """The accumulator state of ``engine`` on this core without changing it: float32 [P] values, True (set in a
    timing-only trace), or None (nothing reset or loaded it)."""
    return _table(ctx).get((getattr(ctx, "core", 0), engine))


def invalidate(ctx, engine: str) -> None:
    """``idle`` instructions may clobber the accumulator (reference note): later ``reduce`` must reset first."""
    _table(ctx).pop((getattr(ctx, "core", 0), engine), None)
