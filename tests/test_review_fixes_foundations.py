"""Fixes from the learner review of notebooks 00-02: checker hints for the usual slips, either matmul orientation
counted right, rounded answers accepted, clear errors for bad panel input, and a require() failure shown without
trnsim's own frames."""
import math

import pytest

from trnsim.course.check import CheckResult, ExerciseNotPassed
from trnsim.course.exercises import foundations as fx
from trnsim.course.exercises import single_core as ex
from trnsim.models.engines import PRESETS, SequenceError, run_sequence


def test_peak_tflops_slips_are_named():
    assert "multiply-add counts as two FLOPs" in str(fx.check_peak_tflops(45.875))
    assert "that is FLOP/s" in str(fx.check_peak_tflops(91.75e12))


@pytest.mark.parametrize("answer,words", [
    ((1024 + 160) / 1.4, "dependent instruction"), (1024 * 1.4, "a time is cycles / clock"),
    (16 / 1.4, "MIN_II floor applies")])
def test_instruction_time_slips_are_named(answer, words):
    free = 16 if words.startswith("MIN_II") else 1024
    res = ex.check_instruction_ns("activation", "scalar", free, answer)
    assert not res and words in str(res)


def test_engine_names_from_the_nki_docs_and_bound_spellings_pass():
    assert ex.check_engine_for("exp", "ScalarE") and ex.check_engine_for("matmul", "TensorE")
    assert ex.check_bound(16, 8192, 8192, "bfloat16", "trn2", "memory_bound")


def test_inverted_fusion_ratio_is_named():
    res = ex.check_fusion_speedup(1024, 0.5)
    assert not res and "upside down" in str(res)


def test_rounded_matmul_counts_pass_and_mib_for_bytes_is_named():
    # notebook 01 prints 2.147e+09 FLOPs and 14.0 MiB: the printed, rounded answer passes (it was rejected at 1e-6)
    assert ex.check_matmul_counts(2048, 1024, 512, "float32", 2.147e9, 14.68e6, 146.3)
    mib = ex.check_matmul_counts(2048, 1024, 512, "float32", 2.147e9, 14.0, 146.3)
    assert not mib and "answer in MiB" in str(mib)


def test_run_sequence_refuses_non_counts_with_its_own_error():
    for bad in (math.nan, 1.7, "x", True):
        with pytest.raises(SequenceError, match="must be a whole number"):
            run_sequence(PRESETS["fused: one activation"], 128, bad)


def test_a_failed_require_renders_only_the_result_in_ipython():
    lines = ExerciseNotPassed(CheckResult(False, "title", "you have 1, expected 2", ("a hint",)))._render_traceback_()
    assert lines[0].startswith("ExerciseNotPassed") and "   hint: a hint" in lines
    assert not any("check.py" in line for line in lines)
