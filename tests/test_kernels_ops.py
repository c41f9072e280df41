"""Tensor add, transpose, softmax, norms and attention kernels: numerics vs numpy and what they demonstrate."""
import ml_dtypes
import numpy as np
import pytest

import trnsim.nki as nki
from trnsim.perf.profile import profile
from trnsim.kernels import (
    attention, flash_attention, layernorm, reference, rmsnorm, softmax, tensor_add, transpose2d,
)

BF16 = ml_dtypes.bfloat16
rng = np.random.default_rng(0)


def test_tensor_add_exact_and_counts():
    a = rng.standard_normal((256, 4096)).astype(np.float32)
    b = rng.standard_normal((256, 4096)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate(tensor_add)(a, b), a + b)
    p = profile(tensor_add, a, b)
    assert p.hbm_bytes == 3 * a.nbytes
    assert p.dma_transfers == 3 * 2 * 2            # (2 loads + 1 store) per [128, 2048] tile, 4 tiles
    assert p.dma_bytes_per_partition_median == 2048 * 4


def test_tensor_add_bigger_tiles_are_faster():
    a = np.ones((512, 4096), np.float32)
    small = profile(tensor_add, a, a, tile_free=64, numerics=False)
    big = profile(tensor_add, a, a, tile_free=2048, numerics=False)
    assert big.latency_us < 0.5 * small.latency_us
    assert "larger tiles" in small.summary()


def test_transpose2d_exact():
    x = rng.standard_normal((256, 384)).astype(BF16)
    out = nki.simulate(transpose2d)(x)
    np.testing.assert_array_equal(out.astype(np.float32), x.astype(np.float32).T)
    p = profile(transpose2d, x)
    assert p.instructions_by_engine["tensor"] == (256 // 128) * (384 // 128)


def test_softmax_matches_numpy():
    x = (rng.standard_normal((256, 1024)) * 4).astype(np.float32)
    out = nki.simulate(softmax)(x)
    np.testing.assert_allclose(out, reference.softmax(x), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)


def test_rmsnorm_matches_numpy():
    x = rng.standard_normal((256, 512)).astype(np.float32)
    g = rng.standard_normal((1, 512)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate(rmsnorm)(x, g), reference.rmsnorm(x, g), rtol=1e-5, atol=1e-5)


def test_layernorm_matches_numpy_with_several_bn_stats_chunks():
    x = (rng.standard_normal((128, 1536)) + 3).astype(np.float32)
    g = rng.standard_normal((1, 1536)).astype(np.float32)
    b = rng.standard_normal((1, 1536)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate(layernorm)(x, g, b), reference.layernorm(x, g, b),
                               rtol=1e-4, atol=1e-4)
    p = profile(layernorm, x, g, b)
    assert sum(1 for i in p.trace.instructions if i.opcode == "bn_stats") == 3


def test_norm_shape_errors_are_clear():
    x = np.ones((128, 64), np.float32)
    with pytest.raises(Exception, match=r"gamma must have shape \[1, 64\]"):
        nki.simulate(rmsnorm)(x, np.ones((64,), np.float32))
    with pytest.raises(Exception, match="rows=100 is not a multiple of 128"):
        nki.simulate(softmax)(np.ones((100, 64), np.float32))


def _qkv(d=64, sq=256, sk=1024):
    q = rng.standard_normal((sq, d)).astype(BF16)
    k = rng.standard_normal((sk, d)).astype(BF16)
    v = rng.standard_normal((sk, d)).astype(BF16)
    return np.ascontiguousarray(q.T), np.ascontiguousarray(k.T), v


@pytest.mark.parametrize("kernel", [attention, flash_attention], ids=lambda k: k.__name__)
def test_attention_matches_numpy(kernel):
    q_t, k_t, v = _qkv()
    out = nki.simulate(kernel)(q_t, k_t, v).astype(np.float32)
    ref = reference.attention(q_t, k_t, v)
    np.testing.assert_allclose(out, ref, atol=2e-2 * np.abs(ref).max())


def test_flash_attention_is_faster_and_moves_only_qkvo():
    q_t, k_t, v = _qkv(d=128, sq=512, sk=2048)
    unfused = profile(attention, q_t, k_t, v, numerics=False)
    fused = profile(flash_attention, q_t, k_t, v, numerics=False)
    assert fused.latency_us < unfused.latency_us
    sq, sk, d = 512, 2048, 128
    # flash: Q once, K and V once per 128-query tile, O once (bf16)
    assert fused.hbm_bytes == 2 * (d * sq + (sq // 128) * 2 * sk * d + sq * d)
    # unfused moves the same Q/K/V/O plus S written and re-read (fp32) and P written and re-read (bf16)
    assert unfused.hbm_bytes == fused.hbm_bytes + sq * sk * (4 + 4 + 2 + 2)
