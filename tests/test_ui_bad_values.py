"""Bad or extreme values found by a fuzz run of the panels and planners: each gets a clear message, none a silent
wrong answer (notebooks 02, 03, 07, 11, 12)."""
import math
import warnings

import matplotlib
import pytest

matplotlib.use("Agg")


def test_engine_panel_overflow_is_not_reported_as_a_mismatch():
    """exp(2x + 0.5) chained overflows fp32 in the simulator and in numpy alike: the panel says so instead of
    'result DIFFERS from numpy' (inf - inf was nan)."""
    from trnsim.course.ui.engines import EnginePanel
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        p = EnginePanel()
        p.kind[0].value = "fused"
    assert p.error == ""
    last = p.summary.splitlines()[-1]
    assert "matches numpy" in last and "overflow fp32" in last


@pytest.mark.parametrize("field", ["increment", "start"])
def test_accumulation_panel_refuses_non_finite_values(field):
    from trnsim.course.ui.numerics import AccumulationPanel, run_sums
    with pytest.raises(ValueError, match=f"{field} must be a finite number"):
        run_sums(100, math.nan if field == "increment" else 1.0, math.nan if field == "start" else 0.0, "bf16")
    p = AccumulationPanel(acc="fp32")
    getattr(p, field).value = float("nan")
    assert "must be a finite number" in p.error


def test_training_planner_refuses_non_finite_and_absurd_token_counts():
    from trnsim import training
    from trnsim.course.ui.training import PlannerPanel
    from trnsim.training.systems import PlanError
    p = PlannerPanel(draw=False)
    for bad in (float("nan"), float("inf"), 1e30, -5.0):
        p.train_tokens_b.value = bad
        assert p.error and "must be a finite number" in p.error, bad
    p.train_tokens_b.value = 100.0
    assert p.error is None and "100B tokens" in p.summary
    e = training.estimate("llama2-7b", "trn1.32xlarge", 4, 8, 1, seq_len=4096, global_batch=1024)
    for bad in (-1e9, float("nan"), float("inf"), "many"):
        with pytest.raises(PlanError):
            e.days_to_train(bad)
        with pytest.raises(PlanError):
            e.usd_to_train(bad)


@pytest.mark.parametrize("call", [
    lambda mm: mm.plan_tiles(4096, 4096, partitions=1.5), lambda mm: mm.plan_tiles(4096, 4096, free=1.5),
    lambda mm: mm.plan_tiles(4096, 4096, buffers="8"), lambda mm: mm.plan_tiles(4096, 4096, buffers=float("inf")),
    lambda mm: mm.estimate(float("inf"), 8, 8), lambda mm: mm.estimate(float("nan"), 8, 8),
    lambda mm: mm.estimate("8", 8, 8), lambda mm: mm.plan_tiles("x", 8), lambda mm: mm.dma_load_cost(128, 1e30)])
def test_matmul_planners_refuse_non_whole_and_impossible_sizes(call):
    import trnsim.models.matmul_math as mm
    with pytest.raises(ValueError, match="whole number|cannot fit"):
        call(mm)


def test_serving_estimator_panel_shows_the_estimates_notes():
    from trnsim.course.ui.serving import EstimatorPanel
    p = EstimatorPanel(model="gpt2-small", instance="inf2.48xlarge", tp=2, draw=False)
    p.input_tokens.value = 8192
    p.output_tokens.value = 2048
    assert "note: context 10240 tokens exceeds gpt2-small's maximum of 1024" in p.summary
