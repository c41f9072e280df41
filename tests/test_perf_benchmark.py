"""nki.benchmark with NKI's result path, nki.profile integration, targets."""
import numpy as np
import pytest

import trnsim.neuronxcc.nki as nki
import trnsim.neuronxcc.nki.language as nl
import trnsim.neuronxcc.nki.typing as nt
from trnsim.kernels import matmul_tiled, tensor_add
from trnsim.perf.benchmark import PERCENTILES, BenchmarkError, benchmark


def test_benchmark_result_path_like_nki_tutorial():
    bench = nki.benchmark(warmup=5, iters=10)(matmul_tiled)
    assert bench(nt.tensor[[512, 256], nl.bfloat16], nt.tensor[[512, 1024], nl.bfloat16]) is None
    res = bench.benchmark_result
    p99 = res.nc_latency.get_latency_percentile(99)
    assert p99 == pytest.approx(res.profile.latency_us)
    # deterministic simulator: every percentile equal, iters samples
    assert {res.nc_latency.get_latency_percentile(p) for p in PERCENTILES} == {p99}
    assert len(res.nc_latency.latencies_us) == 10 and res.warmup == 5


def test_benchmark_with_arrays_equals_profile():
    a = np.ones((256, 2048), np.float32)
    bench = benchmark(tensor_add, warmup=0, iters=1)
    bench(a, a)
    assert bench.benchmark_result.nc_latency.get_latency_percentile(50) == \
        pytest.approx(nki.profile(tensor_add, a, a).latency_us)


def test_benchmark_bad_arguments_are_clear():
    with pytest.raises(BenchmarkError, match="iters must be an integer >= 1"):
        benchmark(iters=0)
    bench = benchmark(warmup=1, iters=2)(tensor_add)
    with pytest.raises(BenchmarkError, match="call the benchmarked kernel"):
        _ = bench.benchmark_result
    a = np.ones((128, 512), np.float32)
    bench(a, a)
    with pytest.raises(BenchmarkError, match="percentiles"):
        bench.benchmark_result.nc_latency.get_latency_percentile(95)


def test_benchmark_target_changes_latency():
    # tensor_add moves [128, 2048] fp32 tiles (8 KiB per partition): bandwidth-bound transfers, so the faster DMA
    # engines of newer generations (17 -> 23 -> 33 B/ns per engine) show. (Kernels of many small transfers are
    # bound by the per-transfer fixed cost and the generation's DMA queue rule instead, perf_model.json.)
    spec = (nt.tensor[[1024, 4096], nl.float32], nt.tensor[[1024, 4096], nl.float32])
    lat = {}
    for tgt in ("trn1", "trn2", "trn3"):
        b = benchmark(warmup=1, iters=1, target=tgt)(tensor_add)
        b(*spec)
        lat[tgt] = b.benchmark_result.nc_latency.get_latency_percentile(50)
    assert lat["trn1"] > lat["trn2"] > lat["trn3"]


def test_numerics_false_computes_no_data_but_same_timing():
    a = np.random.default_rng(0).standard_normal((256, 1024)).astype(np.float32)
    with_data = nki.profile(tensor_add, a, a, numerics=True)
    shape_only = nki.profile(tensor_add, a, a, numerics=False)
    assert shape_only.outputs is None
    np.testing.assert_array_equal(with_data.outputs, a + a)
    assert shape_only.latency_us == pytest.approx(with_data.latency_us)
    assert shape_only.instructions == with_data.instructions


def test_spmd_grid_profile_and_benchmark():
    @nki.jit
    def add_rows(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        i = nl.program_id(0)
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.add(nl.load(a[i * 128:(i + 1) * 128, :]),
                                                            nl.load(b[i * 128:(i + 1) * 128, :])))
        return out

    a = np.arange(512 * 256, dtype=np.float32).reshape(512, 256)
    p = nki.profile(add_rows[4], a, a)
    np.testing.assert_array_equal(p.outputs, a + a)
    assert p.dma_transfers == 12 and p.hbm_bytes == 3 * a.nbytes
    bench = nki.benchmark(warmup=1, iters=3)(add_rows)
    bench[4](a, a)
    assert bench.benchmark_result.nc_latency.get_latency_percentile(50) == pytest.approx(p.latency_us)
