"""Pipeline schedules: step lists, dependencies and bubbles against the closed forms."""
import pytest

from trnsim.training import pipeline as pl
from trnsim.training.scaling import ScalingError


@pytest.mark.parametrize("kind, p, m, v", [("gpipe", 4, 8, 1), ("1f1b", 4, 8, 1), ("1f1b", 8, 16, 1),
                                           ("interleaved", 4, 8, 2), ("interleaved", 4, 8, 4),
                                           ("interleaved", 2, 6, 3), ("gpipe", 1, 3, 1)])
def test_bubble_matches_closed_form(kind, p, m, v):
    s = pl.schedule(kind, p, m, v)
    assert s.bubble_fraction == pytest.approx(pl.bubble_fraction_formula(kind, p, m, v))
    assert len(s.steps) == 2 * p * m * v


def test_hand_worked_gpipe_makespan():
    # p=4, m=8, tF=1, tB=2: (m + p - 1) x (tF + tB) = 11 x 3 = 33; bubble 3/11
    s = pl.schedule("gpipe", 4, 8)
    assert s.makespan == 33.0
    assert s.bubble_fraction == pytest.approx(3 / 11)


def test_dependencies_hold():
    s = pl.schedule("interleaved", 4, 8, 2)
    end = {(x.kind, x.microbatch, x.chunk * 4 + x.device): x.end for x in s.steps}
    for x in s.steps:
        vs = x.chunk * 4 + x.device
        if x.kind == "F" and vs > 0:
            assert x.start >= end[("F", x.microbatch, vs - 1)] - 1e-12
        if x.kind == "B" and vs < 7:
            assert x.start >= end[("B", x.microbatch, vs + 1)] - 1e-12
    for d in range(4):
        steps = s.device_steps(d)
        assert all(a.end <= b.start + 1e-12 for a, b in zip(steps, steps[1:]))


def test_1f1b_holds_fewer_activations_than_gpipe():
    g, o = pl.schedule("gpipe", 4, 8), pl.schedule("1f1b", 4, 8)
    assert g.max_in_flight() == 8      # every micro-batch's activations
    assert o.max_in_flight() == 4      # at most p on the first device
    assert g.makespan == o.makespan


@pytest.mark.parametrize("args, match", [
    (("pipedream", 4, 8), "kind='pipedream' is not a schedule"),
    (("1f1b", 0, 8), "stages=0 must be >= 1"),
    (("1f1b", 4, 8.5), "microbatches=8.5 must be a whole number"),
    (("1f1b", 4, 8, 2), "chunks=2: only the interleaved"),
    (("interleaved", 4, 6, 2), "microbatches=6: .* multiple of 4"),
    (("interleaved", 4, 8, 1), "at least 2 model chunks"),
])
def test_bad_arguments(args, match):
    with pytest.raises(ScalingError, match=match):
        pl.schedule(*args)


def test_bad_times():
    with pytest.raises(ScalingError, match="forward_time=0"):
        pl.schedule("1f1b", 4, 8, forward_time=0)
