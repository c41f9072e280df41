"""Matmul journey kernels: numerics vs numpy, analytic FLOP/byte counts, each stage faster than the last."""
import ml_dtypes
import numpy as np
import pytest

import trnsim.nki as nki
from trnsim.perf.profile import profile
import trnsim.nki.language as nl
import trnsim.nki.typing as nt
from trnsim.kernels import MATMUL_JOURNEY, matmul_fully_blocked, matmul_tiled, reference

BF16 = ml_dtypes.bfloat16


def _inputs(K, M, N, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((K, M)).astype(BF16), rng.standard_normal((K, N)).astype(BF16))


@pytest.mark.parametrize("kernel", MATMUL_JOURNEY, ids=lambda k: k.__name__)
def test_matmul_stage_matches_numpy(kernel):
    lhsT, rhs = _inputs(384, 256, 1024)
    out = nki.simulate(kernel)(lhsT, rhs)
    ref = reference.matmul(lhsT, rhs)
    assert out.shape == (256, 1024) and out.dtype == BF16
    # fp32 accumulation, one bf16 rounding of the result
    np.testing.assert_allclose(out.astype(np.float32), ref, rtol=1e-2, atol=1e-2 * np.abs(ref).max())


def test_fully_blocked_with_explicit_blocks_and_k_blocks():
    lhsT, rhs = _inputs(512, 256, 1024, seed=1)
    out = nki.simulate(matmul_fully_blocked)(lhsT, rhs, tiles_in_block_m=2, tiles_in_block_n=1,
                              tiles_in_block_k=2)
    ref = reference.matmul(lhsT, rhs)
    np.testing.assert_allclose(out.astype(np.float32), ref, rtol=1e-2, atol=1e-2 * np.abs(ref).max())


def test_uneven_size_is_a_clear_error():
    lhsT, rhs = _inputs(128, 128, 700)
    with pytest.raises(Exception, match="N=700 is not a multiple of"):
        nki.simulate(matmul_tiled)(lhsT, rhs)


M, K, N = 1024, 2048, 2048


def _spec():
    return nt.tensor[[K, M], nl.bfloat16], nt.tensor[[K, N], nl.bfloat16]


@pytest.fixture(scope="module")
def journey():
    return [profile(k, *_spec(), numerics=False) for k in MATMUL_JOURNEY]


def test_each_stage_is_faster_than_the_one_before(journey):
    lat = [p.latency_us for p in journey]
    assert all(b < a for a, b in zip(lat, lat[1:])), lat
    assert lat[-1] < 0.4 * lat[0]


def test_flops_equal_analytic_count(journey):
    for p in journey:
        assert p.tensor_flops == 2 * M * N * K


def test_hbm_bytes_equal_analytic_count(journey):
    b = 2  # bf16
    store = M * N * b
    tiled = (M // 128) * (N // 512) * (K // 128) * (128 * 128 + 128 * 512) * b + store
    hoisted = M * K * b + (M // 128) * K * N * b + store
    block_free = M * K * b + (M // 256) * K * N * b + store
    bm, bn = 128 * 8, 512 * 2                           # default blocks clipped to M = 1024
    fully = (N // bn) * M * K * b + (M // bm) * K * N * b + store
    assert [p.hbm_bytes for p in journey] == [tiled, hoisted, block_free, fully]
    assert all(p.dma_bytes == p.hbm_bytes for p in journey)


def test_stages_move_from_dma_bound_to_tensor_bound(journey):
    assert journey[0].bottleneck == "dma" and "DMA-bound" in journey[0].summary()
    assert journey[-1].bottleneck == "tensor"
    assert journey[-1].pct_of_tensor_peak > 50
    # never faster than the Tensor Engine floor
    floor_us = 2 * M * N * K / (journey[-1].tensor_peak_tflops * 1e12) * 1e6
    assert journey[-1].latency_us >= floor_us


def test_fully_blocked_overlaps_dma_with_compute(journey):
    p = journey[-1]
    tl = p.timeline
    dma = tl.engine == 4
    mm = tl.engine == 0
    # some load runs while the Tensor Engine is busy with an earlier block
    overlap = 0.0
    for s, e in zip(tl.start_ns[dma], tl.end_ns[dma]):
        busy = np.clip(np.minimum(tl.end_ns[mm], e) - np.maximum(tl.start_ns[mm], s), 0, None).sum()
        overlap += busy
    assert overlap > 0.25 * p.engine_busy_us["dma"] * 1e3
