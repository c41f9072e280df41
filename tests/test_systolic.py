"""The systolic-array stepper: dataflow invariants and agreement with numpy's matmul."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trnsim.models.systolic import (MAX_TEACHING_DIM, example_operands, simulate_systolic, systolic_cycles)


def test_example_result_equals_numpy_exactly():
    w, x = example_operands(4, 3, 5, seed=0)
    run = simulate_systolic(w, x)
    np.testing.assert_array_equal(run.out, w.T @ x)
    assert run.cycles == 4 + 3 + 5 - 2 == systolic_cycles(4, 3, 5)


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 8), m=st.integers(1, 8), n=st.integers(1, 8), seed=st.integers(0, 2**31 - 1))
def test_random_shapes_match_numpy(k, m, n, seed):
    rng = np.random.default_rng(seed)
    w, x = rng.standard_normal((k, m)), rng.standard_normal((k, n))
    run = simulate_systolic(w, x)
    np.testing.assert_allclose(run.out, w.T @ x, rtol=1e-12, atol=1e-12)
    assert run.cycles == n + k + m - 2


def test_skew_and_output_timing():
    k, m, n = 3, 4, 5
    run = simulate_systolic(*example_operands(k, m, n))
    # out[m, n] leaves the bottom of column m at the end of cycle n + (K-1) + m
    mm, nn = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    np.testing.assert_array_equal(run.out_cycle, nn + (k - 1) + mm)
    # moving[k, n] sits in PE (k, m) at cycle n + k + m, and nowhere else at that cycle in that row
    for kk in range(k):
        for col in range(n):
            for mi in range(m):
                t = col + kk + mi
                assert run.moving_column[t, kk, mi] == col
                assert run.moving_value[t, kk, mi] == run.moving[kk, col]
    assert run.entry_cycle(2, 1) == 3


def test_each_pe_does_exactly_n_multiply_adds_and_utilisation():
    k, m, n = 4, 3, 6
    run = simulate_systolic(*example_operands(k, m, n))
    busy = (run.moving_column >= 0).sum(axis=0)
    np.testing.assert_array_equal(busy, np.full((k, m), n))
    assert run.utilisation == pytest.approx(k * m * n / (k * m * run.cycles))
    # first and last cycle: only one PE works (the corners), the pipeline fills then drains
    assert run.state(0).active_pes == 1 and run.state(run.cycles - 1).active_pes == 1


def test_state_partial_sums_accumulate_down_the_column():
    w, x = example_operands(4, 2, 3, seed=1)
    run = simulate_systolic(w, x)
    t = 4
    s = run.state(t)
    for kk in range(4):
        for mi in range(2):
            col = s.moving_column[kk, mi]
            if col >= 0:
                assert s.partial_sum[kk, mi] == pytest.approx(w[: kk + 1, mi] @ x[: kk + 1, col])
    assert s.outputs_done.sum() == (run.out_cycle <= t).sum()


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="share the contraction"):
        simulate_systolic(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="teaching limit"):
        simulate_systolic(np.ones((MAX_TEACHING_DIM + 1, 2)), np.ones((MAX_TEACHING_DIM + 1, 2)))
    with pytest.raises(ValueError, match="2-D"):
        simulate_systolic(np.ones(3), np.ones((3, 2)))
    run = simulate_systolic(*example_operands(2, 2, 2))
    with pytest.raises(ValueError, match=r"valid cycles are 0..3"):
        run.state(4)
    with pytest.raises(ValueError, match="K=0"):
        systolic_cycles(0, 1, 1)


def test_plot_draws_every_pe(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from trnsim.course.viz.systolic import plot_pe_activity, plot_systolic_state

    run = simulate_systolic(*example_operands(3, 2, 4))
    fig, ax = plt.subplots()
    plot_systolic_state(run, 3, ax)
    assert "cycle 3 (of 0..6)" in ax.get_title()
    from matplotlib.collections import PatchCollection
    boxes = sum(len(c.get_paths()) for c in ax.collections if isinstance(c, PatchCollection))
    assert boxes >= 3 * 2 + 2 * 4                 # PE boxes + PSUM cells (+ discs), drawn as patch collections
    fig2, ax2 = plt.subplots()
    plot_pe_activity(run, ax2, cycle=3)
    heights = [p.get_height() for p in ax2.patches]
    assert heights == list((run.moving_column >= 0).sum(axis=(1, 2)))
    plt.close("all")
