"""Fixes from the learner review of notebooks 07 and 10: one validator for every tiny-GPT run, exercise checkers
that take a number written as a string and name the usual slips."""
import math

import pytest

import trnsim.training.tinygpt as tg
from trnsim.course.exercises.training import check_dp_allreduce_bytes, check_tp_allreduces_per_step
from trnsim.course.ui.training import ParallelStepPanel
from trnsim.training.parallel import simulated_step_time
from trnsim.training.systems import PlanError


@pytest.mark.parametrize("mode,cores,batch,words", [
    ("dp", 8, 4, "not divisible by 8"), ("dp", 8, 0, "batch=0"), ("single", 1, -8, "batch=-8"),
    ("single", 1, math.nan, "batch=nan"), ("tp", 3, 8, "4 heads are not divisible by tp=3"),
    ("tp", 8, 8, "tp=8"), ("single", 8, 8, "runs on 1 core"), ("dp", 0, 8, "cores=0"), ("dp", 8, 2.5, "batch=2.5")])
def test_simulated_step_time_refuses_what_train_refuses(mode, cores, batch, words):
    # it returned a half-sequence step, a zero-compute step, a negative time, NaN or a TP split the model cannot have
    with pytest.raises(PlanError, match=words.replace("(", r"\(")):
        simulated_step_time(mode, cores, batch)


def test_the_panel_shows_the_same_refusal():
    panel = ParallelStepPanel(draw=False)
    panel.mode.value, panel.cores.value = "tp", 8
    assert panel.result is None and "heads are not divisible by tp=8" in panel.error


def test_dp_bytes_hints_name_ring_traffic_elements_and_sum_over_ranks():
    want = tg.n_params(tg.init_params(tg.TinyConfig.from_spec("tinygpt"), 0)) * 4
    assert check_dp_allreduce_bytes(want)
    for factor, words in ((1.75, "each of 8 ranks sends over a ring"), (0.25, "counts parameters"),
                          (8.0, "sums the buffer over the 8 ranks")):
        res = check_dp_allreduce_bytes(want * factor)
        assert not res and words in str(res)


def test_tp_allreduces_for_a_deeper_model_and_a_string_answer():
    deep = tg.TinyConfig.from_spec("tinygpt", n_layers=12)
    assert check_tp_allreduces_per_step(48, config=deep) and check_tp_allreduces_per_step("48", config=deep)
    one_layer = check_tp_allreduces_per_step(4, config=deep)
    assert not one_layer and "one layer's count" in str(one_layer)
    assert "expected a number" in str(check_tp_allreduces_per_step([8]))
