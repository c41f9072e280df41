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


def test_latency_slips_are_rejected_with_their_own_hint():
    p, a, nb = _parts(RING_EXERCISE)
    bw = 2 * (p - 1) / p * nb
    half_latency = check_ring_allreduce_time((p - 1) * a + bw)       # 0.6% low: was accepted at rtol 0.01
    assert not half_latency.passed
    assert half_latency.hints == ("the latency term is missing its factor 2: there are 2(p-1) steps, p-1 per half",)
    no_latency = check_ring_allreduce_time(bw)                        # nearest slip, not the first within 1%
    assert not no_latency.passed and no_latency.hints == ("the latency term 2(p-1)*alpha is missing",)
    two_p = check_ring_allreduce_time(2 * p * a + bw)
    assert not two_p.passed and "2p" in two_p.hints[0]


def test_right_answer_rounded_to_three_significant_figures_passes():
    want = RING_EXERCISE.simulated_time_us()
    for digits in (3, 4, 5):
        rounded = float(f"{want:.{digits}g}")
        assert check_ring_allreduce_time(rounded), (digits, rounded)
    assert check_ring_allreduce_time(f"{want:.3g}")


def test_every_slip_is_rejected_and_named():
    from trnsim.course.exercises.cluster import _mistakes

    for hint, value in _mistakes(RING_EXERCISE).items():
        res = check_ring_allreduce_time(value)
        assert not res.passed, hint
        assert res.hints == (hint,)


def test_every_slip_rounded_to_three_significant_figures_is_still_rejected():
    """The default exercise's numbers keep every slip apart from the right answer even after rounding to 3
    significant figures (with n = 100 MB the latency was 1% of the total, and a 2p-step slip rounded to the
    right answer)."""
    from trnsim.course.exercises.cluster import _mistakes
    for hint, v in _mistakes(RING_EXERCISE).items():
        rounded = float(f"{v:.3g}")
        assert not check_ring_allreduce_time(rounded), (hint, v, rounded)
