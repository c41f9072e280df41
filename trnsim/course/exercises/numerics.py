"""Checkers for notebook 07 (numerics).

Each checker recomputes its answer with :mod:`trnsim.models.numerics` (formats from ml_dtypes, sums
run in the accumulator format), and names the idea behind a typical wrong answer: the implicit
leading bit, round-half-to-even at a tie, the binade an ulp belongs to, fp32 facts used for bf16.
"""
from __future__ import annotations

import math

import numpy as np

from trnsim.course.check import CheckResult, as_number, combine, expect_equal, not_answered
from trnsim.models.numerics import accumulate, float_format, ulp


def largest_exact_integer(fmt: str) -> int:
    """Largest N such that every integer 0..N is representable: 2^p (p = mantissa bits + 1)."""
    return 2 ** float_format(fmt).precision_bits


def sum_of_ones_stalls_at(fmt: str, limit: int = 1 << 20) -> int:
    """Value at which adding 1.0 repeatedly into an accumulator of ``fmt`` (round to nearest) stops growing."""
    f = float_format(fmt)
    n = min(limit, 4 * largest_exact_integer(f))
    total = accumulate(np.ones(n), f).partial
    stuck = np.flatnonzero(np.diff(total) == 0)
    return int(total[stuck[0]]) if stuck.size else int(total[-1])


def _not_a_number(title: str, answer) -> CheckResult:
    return CheckResult(False, title, f"expected a number, got {answer!r}", ("write the number itself, e.g. 42 (not a string or a list)",))


def check_largest_exact_integer(answer: int | None, fmt: str = "bf16") -> CheckResult:
    f = float_format(fmt)
    want = largest_exact_integer(f)
    title = f"largest N with all integers 0..N exact in {f.label}"
    if answer is None or answer is Ellipsis:
        return not_answered(title)
    if as_number(answer) is None:
        return _not_a_number(title, answer)
    answer = as_number(answer)
    if answer == int(answer):
        answer = int(answer)
    hints = []
    if answer == 2 ** f.mantissa_bits:
        hints.append(f"{answer} = 2^{f.mantissa_bits} forgets the implicit leading 1: a normal number has "
                     f"p = {f.mantissa_bits} + 1 significant bits")
    elif answer == 2 ** 24 and f.name != "fp32":
        hints.append(f"2^24 is the fp32 answer; {f.label} keeps only {f.mantissa_bits} of fp32's 23 mantissa bits")
    elif isinstance(answer, (int, float)) and answer > 1e6:
        hints.append(f"{f.label}'s largest number ({f.max_normal:.3g}) is far bigger, but above 2^p the spacing "
                     "between numbers is more than 1, so integers are skipped")
    else:
        hints.append(f"with p significant bits every integer up to 2^p fits; the next one, 2^p + 1, needs p + 1 bits")
    res = expect_equal(title, answer, want)
    return res if res.passed else CheckResult(False, title, res.message, tuple(hints))


def check_stall_point(answer: float | None, fmt: str = "bf16") -> CheckResult:
    f = float_format(fmt)
    want = sum_of_ones_stalls_at(f)
    title = f"where a {f.label} running sum of ones gets stuck"
    if answer is None or answer is Ellipsis:
        return not_answered(title)
    if as_number(answer) is None:
        return _not_a_number(title, answer)
    answer = as_number(answer)
    if answer == want:
        return CheckResult(True, title, f"{want:g} is right")
    hints = []
    if answer == want + 1 or answer == 2 * want:
        hints.append(f"at {want:g} the spacing is 2, so {want:g} + 1 is exactly halfway between {want:g} and "
                     f"{want + 2:g}; round-half-to-even picks {want:g} (even mantissa), and the sum never moves again")
    elif answer == 2 ** f.mantissa_bits:
        hints.append(f"up to {answer:g} the spacing is still 1 (or less), so adding 1 is exact there")
    else:
        hints.append("find the first value where ulp(x) = 2: adding 1 then is a tie that rounds back down")
    return CheckResult(False, title, f"you have {answer:g}, expected {want:g}", tuple(hints))


def check_ulp(x: float, answer: float | None, fmt: str = "bf16") -> CheckResult:
    f = float_format(fmt)
    want = float(ulp(x, f))
    title = f"spacing of {f.label} numbers at {x:g}"
    if answer is None or answer is Ellipsis:
        return not_answered(title)
    e = math.floor(math.log2(abs(x)))
    try:
        got = float(answer)
    except (TypeError, ValueError):
        return CheckResult(False, title, f"expected a number, got {answer!r}")
    if np.isclose(got, want, rtol=1e-9):
        return CheckResult(True, title, f"{want:g} is right")
    hints = []
    if np.isclose(got, f.epsilon * abs(x), rtol=1e-6):
        hints.append("eps x |x| is only a bound: the ulp is a power of two, eps times the power of two at or below |x|")
    elif np.isclose(got, 2 * want):
        hints.append(f"that is the spacing of the next binade up: {abs(x):g} < 2^{e + 1}, so its exponent is {e}")
    elif np.isclose(got, want / 2):
        hints.append(f"that is the spacing of the binade below: {abs(x):g} >= 2^{e}, so its exponent is {e}")
    hints.append(f"{abs(x):g} lies in [2^{e}, 2^{e + 1}); the {2 ** f.mantissa_bits} mantissa steps split that "
                 f"width of 2^{e} into equal parts")
    return CheckResult(False, title, f"you have {got:g}, expected {want:g}", tuple(hints))


def check_format_facts(largest_integer: int | None, stall_point: float | None, ulp_at_1000: float | None,
                       fmt: str = "bf16") -> CheckResult:
    """Notebook 07 exercise: three facts about one format (the notebook works them out for bf16 and asks them for
    fp16), each checked against the simulator's own numbers."""
    f = float_format(fmt)
    return combine(f"{f.label} facts", [check_largest_exact_integer(largest_integer, f.name),
                                        check_stall_point(stall_point, f.name),
                                        check_ulp(1000.0, ulp_at_1000, f.name)])
