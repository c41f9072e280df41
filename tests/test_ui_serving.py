"""Headless tests of the notebook-12 panels: set controls, assert on results."""
import matplotlib

matplotlib.use("Agg")

from trnsim.serving import estimate
from trnsim.course.ui.serving import BatchingPanel, EstimatorPanel


def test_estimator_panel_follows_controls():
    p = EstimatorPanel(draw=False)
    assert p.result == estimate("llama3.1-8b", "inf2.xlarge", 2, 8, 512, 128)
    p.batch.value = 16
    assert p.result.batch == 16 and "batch=16" in p.summary
    p.instance.value = "trn1.32xlarge"  # TP choices follow the instance
    assert tuple(p.tp.options) == (1, 2, 8, 16, 32) and p.result.instance == "trn1.32xlarge"
    p.instance.value = "g6.xlarge"
    assert tuple(p.tp.options) == (1,) and p.result.tp == 1


def test_estimator_panel_reports_errors_in_panel():
    p = EstimatorPanel(draw=False)
    p.model.value = "gpt2-small"  # 1024-token context: a warning, the run is still timed
    p.input_tokens.value = 2048
    assert p.result is not None and any("maximum of 1024" in n for n in p.result.notes)
    p.instance.value = "g6.xlarge"
    p.model.value = "llama3.1-70b"
    assert p.result is None or not p.result.fits


def test_estimator_panel_draws_into_output():
    p = EstimatorPanel()
    assert p.out.outputs and not p.error


def test_batching_panel():
    p = BatchingPanel(draw=False, n_requests=300)
    assert set(p.results) == {"static", "continuous"}
    low = p.results["continuous"].ttft_p99_ms
    p.rate.value = 2.5
    assert p.results["continuous"].ttft_p99_ms > low
    p.instances.value = 4
    assert p.results["continuous"].replicas == 4 and p.results["continuous"].stable
    p.seed.value = 1
    assert "continuous batching" in p.summary
    p.max_batch.value = 32
    p.max_batch.value = 8
    assert len(p._tables) == 2  # service-time tables cached per max_batch


def test_batching_panel_error_shown():
    p = BatchingPanel(draw=False, n_requests=300)
    p.max_batch.value = 32
    assert not p.error
    q = BatchingPanel(model="llama3.1-70b", instance="inf2.48xlarge", tp=8, max_batch=1, draw=False, n_requests=100)
    assert "does not fit" in q.error and q.results == {}  # 70B / 8 cores > 16 GiB per core


def test_benchmark_estimator_callback(benchmark):
    p = EstimatorPanel(draw=False)
    benchmark(p.update)
    assert p.result is not None
