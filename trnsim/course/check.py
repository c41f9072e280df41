"""Checkers for the course's "check yourself" exercises.

A checker compares a learner's answer with the simulator's own answer and returns
a :class:`CheckResult`. The result prints as one line that starts with a tick or a
cross; on failure it carries a *specific* hint (what was expected, how far off the
answer is, and which idea to revisit), never just "wrong".

Topic modules build their exercise checkers from :func:`expect_close`,
:func:`expect_equal` and :func:`combine`.

Autograder test cells (nbgrader, see :mod:`trnsim.course.grading`) wrap a checker call in
:func:`require`: it prints the result when the answer is right and raises
:class:`ExerciseNotPassed` (an ``AssertionError`` carrying the checker's hints) when it
is not, so nbgrader scores the cell zero and its feedback shows what to fix.
"""
from __future__ import annotations

import math

from dataclasses import dataclass, field
import functools
import inspect
from typing import Any, Callable, Iterable, Mapping, TypeVar

import numpy as np

PASS_MARK = "\u2705"  # white heavy check mark
FAIL_MARK = "\u274c"  # cross mark


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one exercise check."""

    passed: bool
    title: str
    message: str = ""
    hints: tuple[str, ...] = field(default_factory=tuple)

    def __bool__(self) -> bool:  # lets tests write ``assert check(...)``
        return self.passed

    def __str__(self) -> str:
        mark = PASS_MARK if self.passed else FAIL_MARK
        lines = [f"{mark} {self.title}" + (f": {self.message}" if self.message else "")]
        lines += [f"   hint: {h}" for h in self.hints]
        return "\n".join(lines)

    __repr__ = __str__


class ExerciseNotPassed(AssertionError):
    """Raised by :func:`require` for a failed check; the message is the checker's full
    result line with its hints. An ``AssertionError``, so nbgrader scores the test cell 0."""

    def __init__(self, result: CheckResult) -> None:
        super().__init__(str(result))
        self.result = result

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for this exception (its hook for custom tracebacks): the result and its hints only,
        without the frames of ``require`` (``__tracebackhide__`` is not honoured by every IPython version)."""
        return [f"{type(self).__name__}: the check did not pass", *str(self.result).splitlines()]


def require(result: CheckResult) -> None:
    """Autograder form of a check: print ``result`` when it passed (returning nothing, so a
    notebook cell shows the line once), raise
    :class:`ExerciseNotPassed` (message: the result and its hints) when it did not.

    ``result`` must be what an exercise checker returns; anything else (a learner who
    replaced the checker call, a checker bug) is refused with a ``TypeError`` naming it.
    """
    __tracebackhide__ = True  # IPython and pytest hide this frame: the learner sees the hint, not our code
    if not isinstance(result, CheckResult):
        raise TypeError(f"require() takes the result of an exercise checker (a CheckResult), got "
                        f"{type(result).__name__} {result!r:.80}; call it as require(check_...(your answer))")
    if not result.passed:
        raise ExerciseNotPassed(result)
    print(result)


def _names_bytes(unit: str) -> bool:
    """True for a byte unit or byte rate ("B", "KiB", "GB/s", "bytes"), not for "FLOP/B"-style ratios per byte."""
    u = unit.strip()
    return bool(u) and "/B" not in u and ("B" in u.replace("FLOP", "") or "byte" in u.lower())


def expect_close(
    title: str,
    got: Any,
    want: Any,
    *,
    rtol: float = 1e-2,
    atol: float = 0.0,
    unit: str = "",
    hint: str = "",
    factor_hints: Mapping[float, str] | None = None,
    byte_units: bool | None = None,
) -> CheckResult:
    """Pass when ``got`` is within ``rtol``/``atol`` of ``want`` (scalars or arrays).

    A scalar answer off by a power of 1000 gets a units hint. ``factor_hints`` adds
    hints for other ratios that mean a specific slip in this exercise, e.g.
    ``{2: "a multiply-add is two FLOPs"}`` or ``{8: "bits versus bytes"}``.
    ``byte_units``: the answer counts bytes or depends on a byte rate, so MiB versus MB and GiB versus GB are
    likely slips too (default: when ``unit`` names bytes, e.g. "B", "GiB", "GB/s"); never for other quantities,
    where a ratio near 1.05 or 1.07 means something else.
    """
    if _unanswered(got):
        return not_answered(title)
    try:
        g = np.asarray(got, dtype=np.float64)
        w = np.asarray(want, dtype=np.float64)
    except (TypeError, ValueError):
        return CheckResult(False, title, f"expected a number, got {got!r}", (hint,) if hint else ())
    if g.shape != w.shape:
        return CheckResult(
            False, title, f"expected shape {w.shape}, got shape {g.shape}", (hint,) if hint else ()
        )
    if np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=False):
        shown = _fmt(w, unit)
        return CheckResult(True, title, f"{shown} is right")
    if g.ndim == 0 and float(w) > 0 and not float(g) > 0:
        # zero, negative or NaN: a ratio would read "off by 1e+09" or "1/-48 of it"; say what is wrong instead
        what = "zero" if float(g) == 0 else ("negative" if float(g) < 0 else "not a number")
        msg = f"you have {_fmt(g, unit)}, which is {what}, but this quantity must be positive"
        return CheckResult(False, title, msg, ((hint,) if hint else ()) + (
            "fill in the calculation that gives it (a zero or a sign error usually means a missing term)",))
    if g.ndim == 0:
        ratio = float(g) / float(w) if float(w) != 0 else float("inf")
        msg = f"you have {_fmt(g, unit)}, expected about {_fmt(w, unit)} ({_ratio(ratio)})"
        hints = [hint] if hint else []
        known = {1e3: "check your units (kilo, mega, giga; ms versus us)", 1e6: "check your units",
                 1e9: "check your units", **dict(factor_hints or {})}
        # binary versus decimal prefixes: exact ratios, matched tightly (1.5%), and only where the answer counts
        # bytes or comes from a byte rate (elsewhere a ratio near 1.05 or 1.07 means something else)
        prefixes = {}
        if byte_units if byte_units is not None else _names_bytes(unit):
            if "G" not in unit:
                prefixes[2.0**20 / 1e6] = "MiB versus MB (2^20 versus 10^6 bytes)"
            if "M" not in unit:
                prefixes[2.0**30 / 1e9] = "GiB versus GB (2^30 versus 10^9 bytes)"
            if unit == "B":   # an answer in bytes given in KiB or MiB (114 for 117,000 B): name the prefix
                prefixes[1024.0] = "that is the size in KiB; the question asks for bytes (1 KiB = 1024 B)"
                prefixes[2.0**20] = "that is the size in MiB; the question asks for bytes (1 MiB = 2^20 B)"
        # the known slip closest to the ratio (either way round) within its window: several slips lie within 5%
        # of each other (32/31 = 1.032, MiB/MB = 1.049, GiB/GB = 1.074)
        best = None
        if ratio > 0 and np.isfinite(ratio):
            for table, window in ((known, 1.05), (prefixes, 1.015)):
                for factor, why in table.items():
                    dist = abs(abs(math.log(ratio)) - abs(math.log(factor)))
                    if dist <= math.log(window) and (best is None or dist < best[0]):
                        best = (dist, factor, why)
        if best is not None:
            f = best[1]
            shown_f = f"{int(f):,}" if f == int(f) and f < 1e15 else f"{f:,g}"   # 1,048,576, not 1.04858e+06
            hints.append(f"off by a factor of {shown_f}: {best[2]}")
    else:
        bad = ~np.isclose(g, w, rtol=rtol, atol=atol)
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        msg = (
            f"{int(bad.sum())} of {bad.size} values differ; first at index {idx}: "
            f"got {g[idx]:.6g}, expected {w[idx]:.6g}"
        )
        hints = [hint] if hint else []
    return CheckResult(False, title, msg, tuple(hints))


def expect_equal(title: str, got: Any, want: Any, *, hint: str = "") -> CheckResult:
    """Pass when ``got == want`` (exact, for labels, counts and choices).

    A blank answer (``None`` / ``...``) gets only the "fill it in" hint: the exercise's own hint is
    computed from the answer (the ridge point, the leftover rows) and would give it away.
    """
    if _unanswered(got):
        return not_answered(title)
    if got == want:
        return CheckResult(True, title, f"{want!r} is right")
    return CheckResult(False, title, f"you have {got!r}, expected {want!r}", (hint,) if hint else ())


def with_slip_hint(result: CheckResult, answer: Any, slips: Mapping[float, tuple[str, ...]],
                   rtol: float) -> CheckResult:
    """``result``, plus the hints of the slip a wrong answer most likely came from: the entry of ``slips`` (the
    value a slip gives -> its hints) whose value is nearest ``answer`` in relative terms, when within ``rtol``.
    A passed result, a non-numeric or non-positive answer, or no slip that close leaves ``result`` as it is."""
    if result.passed or not slips:
        return result
    try:
        got = float(answer)
    except (TypeError, ValueError):
        return result
    if not got > 0:
        return result
    value = min(slips, key=lambda v: abs(got / v - 1))
    if abs(got / value - 1) >= rtol:
        return result
    return CheckResult(False, result.title, result.message, result.hints + tuple(slips[value]))


def not_answered(title: str, hint: str = "") -> CheckResult:
    """The result for a stub that has not been filled in yet (``None`` or ``...``).

    ``hint`` must be a method, never a value derived from the answer.
    """
    hints = ("replace the ... (or None) with your answer and run the cell again",) + ((hint,) if hint else ())
    return CheckResult(False, title, "not answered yet", hints)


def _unanswered(value: Any) -> bool:
    return value is None or value is Ellipsis


def as_number(answer: Any) -> float | None:
    """``answer`` as a finite float (a number, or a string that holds one, as a learner may type "256"); None for
    anything else (a list, a word, a bool, NaN): checkers then say "expected a number" instead of raising."""
    if isinstance(answer, bool):
        return None
    try:
        x = float(answer)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


F = TypeVar("F", bound=Callable[..., CheckResult])


def accepts_stubs(func: F) -> F:
    """Decorate an exercise checker so an unfilled stub (``None`` or ``...``) in any argument
    returns a "not answered yet" result instead of crashing inside the arithmetic.

    The title is the checker's docstring's first line (or its name).
    """
    title = (inspect.getdoc(func) or func.__name__).splitlines()[0].rstrip(".")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> CheckResult:
        if any(_unanswered(v) for v in (*args, *kwargs.values())):
            return not_answered(title)
        return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def combine(title: str, results: Iterable[CheckResult]) -> CheckResult:
    """One result for several parts: passes only when every part passes."""
    parts = list(results)
    failed = [r for r in parts if not r.passed]
    if not failed:
        return CheckResult(True, title, f"all {len(parts)} parts correct")
    lines = tuple(str(r).replace("\n", "\n   ") for r in failed)
    return CheckResult(False, title, f"{len(failed)} of {len(parts)} parts need another look", lines)


def _ratio(r: float) -> str:
    if not np.isfinite(r) or r == 0:
        return "not comparable"
    if abs(r) >= 10:
        return f"{r:,.0f} times too large"
    if abs(r) <= 0.1:
        return f"1/{1 / r:,.0f} of it"
    return f"{r:.2f}x"


def _fmt(x: np.ndarray, unit: str) -> str:
    if np.ndim(x) == 0:
        v = float(x)
        s = f"{v:,.0f}" if v.is_integer() and abs(v) < 1e15 else f"{v:,.4g}"
    else:
        s = np.array2string(np.asarray(x), precision=4)
    return f"{s} {unit}".strip()
