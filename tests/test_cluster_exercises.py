"""Exercise checkers give a pass for the right answer and a specific hint for each usual slip."""
import pytest

from trnsim.course.exercises.cluster import RING_EXERCISE, RingExercise, check_busbw, check_ring_allreduce_time


def _parts(ex: RingExercise):
    p, a, n, B = ex.ranks, ex.hop_latency_us, ex.message_bytes, ex.link_gbytes_per_s
    return p, a, n / (B * 1e3)


def test_right_answer_passes_and_equals_formula():
    p, a, nb = _parts(RING_EXERCISE)
    right = 2 * (p - 1) * a + 2 * (p - 1) / p * nb
    assert RING_EXERCISE.simulated_time_us() == pytest.approx(right, rel=1e-9)
    assert check_ring_allreduce_time(right)
    assert "is right" in str(check_ring_allreduce_time(right))


@pytest.mark.parametrize("wrong,needle", [
    (lambda p, a, nb: (p - 1) * a + (p - 1) / p * nb, "factor 2"),
    (lambda p, a, nb: 2 * p * a + 2 * nb, "p-1"),
    (lambda p, a, nb: 2 * (p - 1) / p * nb, "latency term"),
    (lambda p, a, nb: 2 * (p - 1) * a + 8 * 2 * (p - 1) / p * nb, "bits vs bytes"),
    (lambda p, a, nb: (2 * (p - 1) * a + 2 * (p - 1) / p * nb) / 1e3, "milliseconds"),
])
def test_specific_hints(wrong, needle):
    res = check_ring_allreduce_time(wrong(*_parts(RING_EXERCISE)))
    assert not res.passed
    assert any(needle in h for h in res.hints), res.hints


def test_garbage_and_unknown_mistake():
    assert not check_ring_allreduce_time("fast")
    res = check_ring_allreduce_time(12345.0)
    assert not res.passed and "2(p-1)" in res.hints[0]


def test_busbw_checker():
    t_us, S, p = 1000.0, 100_000_000, 8
    algbw = S / (t_us * 1e3)
    assert check_busbw(algbw * 2 * 7 / 8, t_us, S, p)
    res = check_busbw(algbw, t_us, S, p)
    assert not res.passed and "algorithm bandwidth" in res.hints[0]
    res = check_busbw(algbw * 2, t_us, S, p)
    assert not res.passed and "2(p-1)/p" in res.hints[0]
    assert check_busbw(algbw * 7 / 8, t_us, S, p, op="all_gather")
