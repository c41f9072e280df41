"""Argument checks shared by trnsim's public functions: one place, one message style.

Every check takes the argument's ``name``, its ``value`` and the calling module's own error
class (``PlanError``, ``ServingError``, ``TopologyError``, ``DeployError``, ``CatalogError``,
all subclasses of ``ValueError``). A value of the wrong *type* raises a subclass of that
error which is also a ``TypeError`` (see :func:`type_error`), so ``except PlanError`` and
``except TypeError`` both catch ``estimate(zero1="no")``. Messages name the argument, the
value, the valid range and what to do, e.g.::

    PlanError: nodes=0: must be an integer in [1, 4096]; use at least one instance

Bounds marked "simulator limit" in the callers are the sizes this numpy simulator can hold
in memory and time on a laptop, not hardware facts; they are stated in the error so the
learner knows why a larger value is refused.
"""
from __future__ import annotations

import math
import numbers
from functools import lru_cache
from typing import Any, Iterable, TypeVar

E = TypeVar("E", bound=Exception)


@lru_cache(maxsize=None)
def type_error(error: type[Exception]) -> type[Exception]:
    """``error`` mixed with ``TypeError``: raised for an argument of the wrong type.

    The subclass keeps the module error's name, so a learner reads ``PlanError: ...``,
    and ``except <ModuleError>`` still catches it.
    """
    if issubclass(error, TypeError):
        return error
    return type(error.__name__, (error, TypeError), {"__module__": error.__module__, "__doc__": error.__doc__})


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) >= 1e6:
        return f"{v:.6g}"
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10**6:
        return f"{v:,}"
    return repr(v)


def _range_text(min_value: float | None, max_value: float | None, *, min_open: bool = False,
                max_open: bool = False) -> str:
    lo = "-inf" if min_value is None else _fmt(min_value)
    hi = "inf" if max_value is None else _fmt(max_value)
    return f"{'(' if min_open or min_value is None else '['}{lo}, {hi}{')' if max_open or max_value is None else ']'}"


def _hint(fix: str) -> str:
    return f"; {fix}" if fix else ""


def is_int(value: Any) -> bool:
    """True for Python and numpy integers (bool is not an integer here)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value: Any) -> bool:
    """True for Python and numpy real numbers (bool is not a number here)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_int(name: str, value: Any, *, error: type[Exception], min_value: int | None = None,
              max_value: int | None = None, fix: str = "", allow_integral_float: bool = True) -> int:
    """``value`` as an ``int`` within ``[min_value, max_value]``.

    A float with an integral value (``8.0``) is accepted when ``allow_integral_float`` (sliders
    and arithmetic produce them); ``8.5``, NaN, inf, strings and bools are refused.
    """
    rng = _range_text(min_value, max_value)
    kind = {0: "a non-negative integer", 1: "a positive integer"}.get(min_value, "an integer")  # type: ignore[arg-type]
    if is_int(value):
        out = int(value)
    elif allow_integral_float and is_real(value) and math.isfinite(float(value)) and float(value).is_integer():
        out = int(value)
    else:
        cls = error if is_real(value) else type_error(error)
        raise cls(f"{name}={_fmt(value)}: must be a whole number ({kind} in {rng}){_hint(fix)}")
    if (min_value is not None and out < min_value) or (max_value is not None and out > max_value):
        raise error(f"{name}={_fmt(value)}: must be {kind} in {rng}{_hint(fix)}")
    return out


def check_number(name: str, value: Any, *, error: type[Exception], min_value: float | None = None,
                 max_value: float | None = None, min_open: bool = False, max_open: bool = False,
                 fix: str = "") -> float:
    """``value`` as a finite ``float`` within the range (``min_open``: strictly above ``min_value``)."""
    rng = _range_text(min_value, max_value, min_open=min_open, max_open=max_open)
    if not is_real(value):
        raise type_error(error)(f"{name}={_fmt(value)}: must be a finite number in {rng}{_hint(fix)}")
    v = float(value)
    if not math.isfinite(v):
        raise error(f"{name}={_fmt(value)}: must be a finite number in {rng}{_hint(fix)}")
    below = min_value is not None and (v <= min_value if min_open else v < min_value)
    above = max_value is not None and (v >= max_value if max_open else v > max_value)
    if below or above:
        raise error(f"{name}={_fmt(value)}: must be in {rng}{_hint(fix)}")
    return v


def check_positive(name: str, value: Any, *, error: type[Exception], max_value: float | None = None,
                   fix: str = "") -> float:
    """A finite number > 0 (and <= ``max_value`` if given)."""
    return check_number(name, value, error=error, min_value=0.0, min_open=True, max_value=max_value, fix=fix)


def check_bool(name: str, value: Any, *, error: type[Exception]) -> bool:
    """``True`` or ``False`` only (numpy bools too): ``"no"``, ``0`` or ``None`` do not mean False."""
    if isinstance(value, bool):
        return value
    try:
        import numpy as np

        if isinstance(value, np.bool_):
            return bool(value)
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    raise type_error(error)(f"{name}={_fmt(value)}: must be True or False (a bool), not {type(value).__name__}")


def check_str(name: str, value: Any, *, error: type[Exception], what: str = "a name") -> str:
    """A non-empty string."""
    if not isinstance(value, str):
        raise type_error(error)(f"{name}={_fmt(value)}: must be {what} (a string), not {type(value).__name__}")
    if not value.strip():
        raise error(f"{name}={value!r}: must be {what}, not an empty string")
    return value


def check_choice(name: str, value: Any, choices: Iterable[Any], *, error: type[Exception], fix: str = "") -> Any:
    """``value`` must be one of ``choices`` (compared with ==; unhashable values are refused)."""
    options = tuple(choices)
    try:
        ok = any(value is o or (isinstance(value, bool) == isinstance(o, bool) and bool(value == o)) for o in options)
    except (TypeError, ValueError):  # e.g. a numpy array compared with a string
        ok = False
    if not ok:
        cls = error if isinstance(value, type(options[0])) or value is None else type_error(error)
        raise cls(f"{name}={_fmt(value)}: must be one of {options}{_hint(fix)}")
    return value


def check_optional(check, name: str, value: Any, **kw: Any) -> Any:
    """Run ``check(name, value, **kw)`` unless ``value`` is None."""
    return None if value is None else check(name, value, **kw)


def check_result(name: str, value: float, *, error: type[Exception], min_value: float | None = 0.0,
                 context: str = "") -> float:
    """Guard an *output*: finite and >= ``min_value``; otherwise the inputs were out of the model's domain."""
    v = float(value)
    if not math.isfinite(v) or (min_value is not None and v < min_value):
        raise error(f"{name} came out as {v!r} (must be finite and >= {min_value}){': ' + context if context else ''}; "
                    "the inputs are outside the range the model handles, use realistic sizes")
    return v
