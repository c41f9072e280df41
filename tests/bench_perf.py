"""Benchmarks of the simulator itself (run: pytest tests/bench_perf.py --benchmark-enable).

- timing-only profile of matmul journey stage 1 at lhsT [8192, 4096] @ rhs [8192, 8192] bf16 on trn1
  (~99k instructions): tracing + scheduling, and scheduling alone (instructions per second);
- numerics on: simulation of a 1024^3 bf16 matmul kernel vs plain numpy on the same data;
- timing-only costing of every validation kernel (data/kernel_validation.json: the four trn1 matmul
  tutorial stages and the four trn2 kernel-optimization stages at full size): tracing, scheduling
  (instructions per second) and the whole profile, each recorded in extra_info. The perf side
  (schedule + profile) must stay under 10 s per kernel.
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
from trnsim.perf.validation import _kernel, _spec, validation_data

ROWS = validation_data()["rows"]

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


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['target']}-stage{r['stage']}" for r in ROWS])
def test_bench_timing_only_costing_of_validation_kernels(benchmark, row):
    kern = _kernel(row["kernel"])
    t0 = time.perf_counter()
    _, trace = nki.trace_kernel(kern, *_spec(row["dtype"]), target=row["target"], numerics=False,
                                **row.get("kwargs", {}))
    trace_s = time.perf_counter() - t0
    p = benchmark.pedantic(profile_trace, args=(trace, row["target"]), rounds=1, iterations=1)
    t1 = time.perf_counter()
    schedule(trace, row["target"])
    sched_s = time.perf_counter() - t1
    n = len(trace.instructions)
    perf_s = benchmark.stats.stats.max if benchmark.stats else sched_s
    benchmark.extra_info.update({"instructions": n, "trace_s": round(trace_s, 2), "schedule_s": round(sched_s, 2),
                                 "schedule_instructions_per_s": round(n / sched_s),
                                 "simulated_latency_ms": round(p.latency_us / 1e3, 2)})
    print(f"{row['target']} stage {row['stage']}: {n:,} instructions, trace {trace_s:.1f} s, schedule {sched_s:.2f} s "
          f"({n / sched_s:,.0f} instr/s), profile {perf_s:.2f} s")
    assert p.latency_us > 0
    assert sched_s < 10.0
