"""Discrete-event serving simulation: determinism, queueing behaviour, batching modes, capacity planning."""
import numpy as np
import pytest

from trnsim.serving import ServingError, instances_needed, service_times, simulate
from trnsim.serving.des import capacity_rps

ARGS = ("llama3.1-8b", "inf2.xlarge", 2, 8, 512, 128)


@pytest.fixture(scope="module")
def st():
    return service_times(*ARGS)


def test_seeded_and_reproducible(st):
    a = simulate(*ARGS, rate_rps=1.0, seed=3, times=st)
    b = simulate(*ARGS, rate_rps=1.0, seed=3, times=st)
    c = simulate(*ARGS, rate_rps=1.0, seed=4, times=st)
    assert np.array_equal(a.latencies_ms, b.latencies_ms)
    assert not np.array_equal(a.latencies_ms, c.latencies_ms)


def test_light_load_latency_is_the_unloaded_service_time(st):
    r = simulate(*ARGS, rate_rps=0.01, n_requests=200, times=st)
    alone = st.prefill_ms[1] + 127 * st.decode_ms[1]
    assert r.latency_p50_ms == pytest.approx(alone, rel=1e-6)
    assert r.ttft_p50_ms == pytest.approx(st.prefill_ms[1], rel=1e-6)


def test_latency_grows_with_load_and_overload_is_flagged(st):
    cap = capacity_rps(st, 8, 128)
    low = simulate(*ARGS, rate_rps=0.3 * cap, times=st)
    high = simulate(*ARGS, rate_rps=0.9 * cap, times=st)
    over = simulate(*ARGS, rate_rps=1.5 * cap, times=st)
    assert low.latency_p99_ms < high.latency_p99_ms < over.latency_p99_ms
    assert low.stable and not over.stable
    assert over.throughput_rps < 1.1 * cap  # cannot serve more than the full-batch capacity
    assert "OVERLOADED" in over.summary()
    # the summary names both rates: what arrived (a random draw near the asked rate) and what completed (lower:
    # the span includes draining the last requests), so "served 9.6 of 10" is not read as dropped requests
    text = low.summary()
    assert f"{low.offered_rps:.2f} req/s arrived" in text and f"{low.throughput_rps:.2f} completed" in text
    assert low.throughput_rps < low.offered_rps


def test_continuous_batching_cuts_time_to_first_token(st):
    rate = 0.5 * capacity_rps(st, 8, 128)
    s = simulate(*ARGS, rate_rps=rate, mode="static", times=st)
    c = simulate(*ARGS, rate_rps=rate, mode="continuous", times=st)
    assert c.ttft_p50_ms < 0.5 * s.ttft_p50_ms  # newcomers join between decode steps
    assert c.latency_p50_ms < s.latency_p50_ms


def test_more_instances_more_capacity(st):
    one = simulate(*ARGS, rate_rps=2.0, instances=1, times=st)
    three = simulate(*ARGS, rate_rps=2.0, instances=3, times=st)
    assert three.replicas == 3 * one.replicas
    assert three.latency_p99_ms < one.latency_p99_ms


def test_instances_needed_meets_objective(st):
    n, res = instances_needed(*ARGS, rate_rps=5.0, p99_latency_ms=4000.0, n_requests=400)
    assert n is not None and res.latency_p99_ms <= 4000.0 and res.stable
    if n > 1:
        fewer = simulate(*ARGS, rate_rps=5.0, instances=n - 1, n_requests=400, times=st)
        assert not (fewer.stable and fewer.latency_p99_ms <= 4000.0)
    none, _ = instances_needed(*ARGS, rate_rps=1.0, p99_latency_ms=100.0)
    assert none is None  # one request alone takes longer than 100 ms


def test_errors(st):
    with pytest.raises(ServingError, match="mode"):
        simulate(*ARGS, rate_rps=1.0, mode="fifo", times=st)
    with pytest.raises(ServingError, match="rate_rps"):
        simulate(*ARGS, rate_rps=0.0, times=st)
    with pytest.raises(ServingError, match="does not fit"):
        service_times("llama3.1-8b", "inf2.xlarge", 2, 10_000, 512, 128)


def test_benchmark_widget_default(benchmark):
    """The batching-simulation widget's default run (tables cached by the panel)."""
    st = service_times(*ARGS)
    res = benchmark(lambda: simulate(*ARGS, rate_rps=2.0, mode="continuous", n_requests=1000, times=st))
    assert res.n_requests == 1000
