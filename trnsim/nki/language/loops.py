"""Dynamic loops: ``nl.dynamic_range``, ``nl.fori_loop`` and ``nl.while_loop``.

On the device these loops run with a trip count held in a register at run time (the body is compiled
once and the sequencer branches back), unlike ``affine_range`` / ``sequential_range``, which the compiler
unrolls or pipelines with a trip count known at trace time. The simulator runs the body once per
iteration with the register's current value, so the results are those of the device; every instruction
of the body (innermost loop) carries ``loop == "dynamic"`` in the trace (``Instruction.loop``): the body is one copy
the device executes repeatedly. Bounds are Python ints or registers: any object with
``__index__`` or an integer ``.value`` (the simulated ``nisa.register_*`` scalars). A tile made in an
iteration follows the NKI 0.6 scoping rules of the other loops.
"""
from __future__ import annotations

import operator
from typing import Callable

from trnsim.nki.context import current
from trnsim.nki.language.control import _LOOP_UID
from trnsim.nki.rules import KernelError

LOOP_KIND = "dynamic"
# Simulator guard, not a hardware limit: a while_loop whose condition never reaches 0 would hang the
# simulation, so it stops with an error after this many iterations.
MAX_DYNAMIC_ITERATIONS = 1_000_000


def register_value(x, api: str, arg: str) -> int:
    """The integer value of a loop bound / condition: an int or a register (``__index__`` or ``.value``)."""
    if isinstance(x, bool):
        return int(x)
    try:
        return operator.index(x)
    except TypeError:
        pass
    val = getattr(x, "value", None)
    if val is not None:
        try:
            return operator.index(val)
        except TypeError:
            try:
                return int(val)
            except (TypeError, ValueError):
                pass
    if hasattr(x, "value"):
        raise KernelError("err_dynamic_value_unknown",
                          f"{api}: the register passed as '{arg}' has no value (timing-only traces do not compute "
                          "register contents)", "trace with numerics=True (nki.simulate) or pass a Python int bound")
    raise KernelError("err_invalid_loop_bound", f"{api}: '{arg}' must be an int or a register, got "
                      f"{type(x).__name__}", "pass a Python int or a register from nisa.register_alloc / register_load")


def _not_in_no_reorder(api: str) -> None:
    # "Register-based dynamic loops (nl.fori_loop, nl.while_loop) are not supported inside a no_reorder block"
    attrs = current().directive_attrs
    if attrs and "no_reorder" in attrs:
        raise KernelError("err_invalid_control_flow", f"nl.{api} inside a no_reorder block: register-based dynamic "
                          "loops cannot sit inside nl.no_reorder()", "move the loop outside the no_reorder block, or "
                          "use a static loop (range / nl.static_range) inside it")


def _static_step(step, api: str) -> int:
    if hasattr(step, "_value"):
        raise KernelError("err_invalid_loop_step", f"{api}: step is a register; the step must be a compile-time "
                          "positive int", "pass a Python int step (registers are allowed only for the bounds)")
    if not isinstance(step, int) or isinstance(step, bool):
        try:
            step = operator.index(step)
        except TypeError:
            raise KernelError("err_invalid_loop_step", f"{api}: step must be a compile-time positive int, got "
                              f"{type(step).__name__}", "pass a Python int step (registers are allowed only for the "
                              "bounds)") from None
    if step <= 0:
        raise KernelError("err_invalid_loop_step", f"{api}: step={step} must be a positive int",
                          "count upwards with a positive step")
    return step


def _iterations(values, api: str):
    ctx = current()
    _LOOP_UID[0] += 1
    uid = _LOOP_UID[0]
    try:
        for i in values:
            ctx.push_scope(LOOP_KIND, uid, i)
            try:
                yield i
            finally:
                ctx.pop_scope()
    finally:
        ctx.forget_loop(uid)


def dynamic_range(start, stop=None, step=1):
    """Iterate ``start, start + step, ... < stop`` with bounds known at run time (ints or registers);
    ``dynamic_range(n)`` counts 0..n-1. ``step`` is a compile-time positive int."""
    if stop is None:
        start, stop = 0, start
    lo = register_value(start, "dynamic_range", "start")
    hi = register_value(stop, "dynamic_range", "stop")
    st = _static_step(step, "dynamic_range")
    return _iterations(range(lo, hi, st), "dynamic_range")


def fori_loop(lower, upper, body_fun: Callable, step=1) -> None:
    """Call ``body_fun(i)`` for ``i`` in ``range(lower, upper, step)`` as one dynamic loop (bounds are ints or
    registers, read once when the loop starts; ``step`` is a compile-time positive int). ``i`` is passed by
    value; loop state lives in tensors. Returns None."""
    if not callable(body_fun):
        raise KernelError("err_invalid_arguments", f"fori_loop body_fun must be callable, got "
                          f"{type(body_fun).__name__}", "pass a function body(i) -> None")
    _not_in_no_reorder("fori_loop")
    lo = register_value(lower, "fori_loop", "lower")
    hi = register_value(upper, "fori_loop", "upper")
    st = _static_step(step, "fori_loop")
    for i in _iterations(range(lo, hi, st), "fori_loop"):
        ret = body_fun(i)
        if ret is not None:
            # "The fori_loop body function cannot return a value" (NKI migration guide)
            raise KernelError("err_invalid_control_flow", f"the fori_loop body returned {ret!r}; it cannot return a "
                              "value", "keep loop state in tensors or registers and return nothing")
    return None


def while_loop(init, body_fun: Callable) -> None:
    """``r = init; while r != 0: r = body_fun(r)`` as one dynamic loop: the condition is checked before every
    iteration (zero iterations if ``init`` is 0); the body returns the next condition register. Returns None."""
    if not callable(body_fun):
        raise KernelError("err_invalid_arguments", f"while_loop body_fun must be callable, got "
                          f"{type(body_fun).__name__}", "pass a function body(r) -> register")
    _not_in_no_reorder("while_loop")
    register_value(init, "while_loop", "init")
    ctx = current()
    _LOOP_UID[0] += 1
    uid = _LOOP_UID[0]
    it = 0
    cond = init
    try:
        while register_value(cond, "while_loop", "condition") != 0:
            if it >= MAX_DYNAMIC_ITERATIONS:
                raise KernelError("err_dynamic_loop_limit",
                                  f"while_loop ran {MAX_DYNAMIC_ITERATIONS} iterations and its condition is still "
                                  f"{register_value(cond, 'while_loop', 'condition')}",
                                  "make the body return a register that reaches 0 (e.g. a decremented counter)")
            ctx.push_scope(LOOP_KIND, uid, it)
            try:
                cond = body_fun(cond)
            finally:
                ctx.pop_scope()
            if cond is None:
                raise KernelError("err_invalid_arguments", "while_loop body_fun returned None",
                                  "return the register holding the next condition (0 stops the loop)")
            it += 1
    finally:
        ctx.forget_loop(uid)
    return None


__all__ = ["dynamic_range", "fori_loop", "while_loop"]
