"""Benchmarks of the simulator itself (run: pytest tests/bench_perf.py --benchmark-enable).

- timing-only profile of matmul journey stage 1 at lhsT [8192, 4096] @ rhs [8192, 8192] bf16 on trn1
  (~99k instructions): tracing + scheduling, and scheduling alone (instructions per second);
- numerics on: simulation of a 1024^3 bf16 matmul kernel vs plain numpy on the same data.
"""
import time

import ml_dtypes
import numpy as np
import pytest

import trnsim.neuronxcc.nki as nki
import trnsim.neuronxcc.nki.language as nl
import trnsim.neuronxcc.nki.typing as nt
from trnsim.kernels import matmul_fully_blocked, matmul_tiled
from trnsim.perf.profile import profile_trace
from trnsim.perf.schedule import schedule

BIG = (nt.tensor[[8192, 4096], nl.bfloat16], nt.tensor[[8192, 8192], nl.bfloat16])


@pytest.fixture(scope="module")
def big_trace():
    _, trace = nki.trace_kernel(matmul_tiled, *BIG, numerics=False)
    return trace


def test_bench_schedule_stage1_big(benchmark, big_trace):
    tl = benchmark.pedantic(schedule, args=(big_trace, "trn1"), rounds=3, iterations=1)
    n = len(big_trace.instructions)
    assert n > 90_000 and tl.latency_ns > 0
    t0 = time.perf_counter()
    schedule(big_trace, "trn1")
    rate = n / (time.perf_counter() - t0)
    benchmark.extra_info["instructions"] = n
    benchmark.extra_info["instructions_per_s"] = round(rate)


def test_bench_profile_trace_stage1_big(benchmark, big_trace):
    p = benchmark.pedantic(profile_trace, args=(big_trace, "trn1"), rounds=3, iterations=1)
    assert p.tensor_flops == 2 * 4096 * 8192 * 8192


def test_bench_full_timing_only_profile_stage1_big(benchmark):
    p = benchmark.pedantic(nki.profile, args=(matmul_tiled, *BIG), kwargs={"numerics": False}, rounds=1,
                           iterations=1)
    benchmark.extra_info["instructions"] = p.instructions
    benchmark.extra_info["simulated_latency_us"] = round(p.latency_us, 1)


def _inputs():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((1024, 1024)).astype(ml_dtypes.bfloat16),
            rng.standard_normal((1024, 1024)).astype(ml_dtypes.bfloat16))


def test_bench_numpy_matmul_1024(benchmark):
    a, b = _inputs()
    af, bf = a.astype(np.float32), b.astype(np.float32)
    out = benchmark(lambda: (af.T @ bf).astype(ml_dtypes.bfloat16))
    assert out.shape == (1024, 1024)


def test_bench_simulate_matmul_1024_numerics(benchmark):
    a, b = _inputs()
    out = benchmark.pedantic(nki.simulate_kernel, args=(matmul_fully_blocked, a, b), rounds=3, iterations=1)
    ref = a.astype(np.float32).T @ b.astype(np.float32)
    np.testing.assert_allclose(out.astype(np.float32), ref, rtol=1e-2, atol=1e-2 * np.abs(ref).max())
