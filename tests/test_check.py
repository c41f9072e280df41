"""The shared checker helpers: pass/fail, specific hints, and stubs that are not answered yet."""
import numpy as np
import pytest

from trnsim.course.check import combine, expect_close, expect_equal, not_answered


def test_close_scalar_pass_and_fail_with_factor_hints():
    assert expect_close("x", 1.004, 1.0)
    r = expect_close("x", 1000.0, 1.0, hint="base hint")
    assert not r and "factor of 1,000" in str(r) and "base hint" in str(r) and "units" in str(r)
    r2 = expect_close("flops", 8.0, 16.0, factor_hints={2: "a multiply-add is two FLOPs"})
    assert "factor of 2: a multiply-add is two FLOPs" in str(r2)
    assert "factor" not in str(expect_close("bytes", 8.0, 16.0))  # no invented reason without a factor hint


def test_close_arrays_report_first_mismatch():
    r = expect_close("arr", np.array([1.0, 2.0, 5.0]), np.array([1.0, 2.0, 3.0]))
    assert not r and "1 of 3 values differ" in str(r) and "index (2,)" in str(r)
    assert "expected shape (2,)" in str(expect_close("arr", [1, 2, 3], [1, 2]))


def test_stubs_are_not_answered_yet():
    for stub in (None, ...):
        r = expect_close("x", stub, 1.0, hint="compare 1.0 with 2.0")
        # a blank answer gets no hint derived from the answer (it would give the answer away)
        assert not r and "not answered yet" in str(r) and "compare 1.0" not in str(r)
        r = expect_equal("y", stub, "memory", hint="intensity 15.9 is below the ridge 217")
        assert "not answered yet" in str(r) and "15.9" not in str(r) and "memory" not in str(r)
    assert not not_answered("z")


@pytest.mark.parametrize("got, what", [(0, "zero"), (-1, "negative"), (float("nan"), "not a number")])
def test_zero_negative_answers_say_what_is_wrong(got, what):
    r = expect_close("HBM traffic", got, 48.0, unit="MiB", hint="lhsT once, rhs per block")
    text = str(r)
    assert not r and what in text and "positive" in text
    assert "1e+09" not in text and "1/-" not in text and "factor" not in text


def test_non_numbers_and_combine():
    assert "expected a number" in str(expect_close("x", "abc", 1.0))
    assert expect_equal("label", "dma", "dma")
    both = combine("two", [expect_equal("a", 1, 1), expect_equal("b", 2, 3)])
    assert not both and "1 of 2 parts" in str(both)
    assert combine("ok", [expect_equal("a", 1, 1)])


def test_accepts_stubs_decorator_and_course_checkers():
    from trnsim.course.check import accepts_stubs, CheckResult

    @accepts_stubs
    def check_sum(a, b=1):
        """Sum of two numbers."""
        return expect_close("sum", a + b, 3)

    assert check_sum(2)
    r = check_sum(...)
    assert isinstance(r, CheckResult) and not r and "not answered yet" in str(r) and "Sum of two numbers" in str(r)
    from trnsim.course.exercises.deploy import check_rtt_floor_ms
    from trnsim.course.exercises.serving import check_decode_floor_ms, check_kv_bytes_per_token
    from trnsim.course.exercises.training import check_days, check_model_state_gib

    for result in (check_rtt_floor_ms(...), check_kv_bytes_per_token(...), check_decode_floor_ms(...),
                   check_model_state_gib(...), check_days(..., 6e9, 1e12, 64, 190.0)):
        assert "not answered yet" in str(result)
