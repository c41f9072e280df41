"""expect_close names the slip when an answer asked in bytes comes in KiB or MiB, and prints exact factors."""
from trnsim.course.check import expect_close
from trnsim.course.exercises.training import check_dp_allreduce_bytes


def _hints(r):
    return " | ".join(r.hints)


def test_kib_answer_to_a_bytes_question_is_named():
    r = expect_close("buffer", 111.5, 114_176, unit="B")
    assert not r.passed and "in KiB" in _hints(r) and "1,024" in _hints(r)


def test_mib_answer_is_named_with_an_integer_factor():
    r = expect_close("buffer", 114_176 / 2**20, 114_176, unit="B")
    assert "in MiB" in _hints(r) and "1,048,576" in _hints(r) and "e+06" not in _hints(r)


def test_decimal_kilo_still_gets_the_units_hint():
    r = expect_close("buffer", 114.176, 114_176, unit="B")
    assert "check your units" in _hints(r) and "KiB" not in _hints(r)


def test_prefix_hints_only_for_plain_bytes():
    r = expect_close("rate", 1.0, 1024.0, unit="GB/s")
    assert "in KiB" not in _hints(r)
    r = expect_close("time", 1.0, 1024.0, unit="us")
    assert "in KiB" not in _hints(r)


def test_dp_bytes_exercise_in_kib():
    r = check_dp_allreduce_bytes(112)
    assert not r.passed and "in KiB" in _hints(r)
