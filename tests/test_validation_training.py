"""Training throughput vs AWS's published trn1 pre-training runs (validation, never inputs).

Prints every row's published and predicted sequences/s and its cross-validated error
(the compiled-matmul efficiency fitted on the other six rows). Run with ``-s`` to see the table.
"""
import pytest

from trnsim.training import validation as V
from trnsim.training._data import load
from trnsim.models.calibration import median_abs_error, table


@pytest.fixture(scope="module")
def loo():
    return V.validate()


def test_every_published_run_is_predicted_and_printed(loo):
    rows, _ = loo
    print("\n" + table(rows, "sequences/s"))
    assert len(rows) == len(V.published_runs()) == 7
    assert all(r.predicted > 0 and r.physics > 0 for r in rows)


def test_cross_validated_median_error_within_20_percent(loo):
    rows, _ = loo
    assert median_abs_error(rows) <= 0.20


def test_stored_residual_is_the_procedure_result(loo):
    _, fitted = loo
    stored = float(load("training.json")["residuals"]["NC-v2"]["value"])
    assert stored == pytest.approx(fitted, abs=5e-4)
    assert stored == pytest.approx(V.calibrate_residual(), abs=5e-4)
    assert 0.1 < stored <= 1.0  # an efficiency: compiled matmuls never beat the Tensor Engine peak


def test_physics_alone_is_optimistic_and_the_residual_helps(loo):
    rows, _ = loo
    assert median_abs_error(rows) < median_abs_error(rows, physics=True)
    assert sum(r.physics > r.published for r in rows) >= 4


def test_published_plans_fit_in_memory():
    for run in V.published_runs():
        assert V.predict(run).fits, run.label
