"""Classic NKI tutorial kernels (written from scratch in tests/nki_tutorial_kernels.py) against numpy."""
import ml_dtypes
import numpy as np
import pytest

import trnsim.neuronxcc.nki as nki
from nki_tutorial_kernels import (avgpool2d, matmul_isa, matmul_tiled, rmsnorm, softmax, spmd_add, tensor_add,
                                  tensor_add_legacy_out, transpose2d)

rng = np.random.default_rng(0)


def test_tensor_add():
    a = rng.standard_normal((128, 512)).astype(np.float32)
    b = rng.standard_normal((128, 512)).astype(np.float32)
    c = nki.simulate_kernel(tensor_add, a, b)
    np.testing.assert_array_equal(c, a + b)
    # calling the jit kernel directly also simulates
    np.testing.assert_array_equal(tensor_add(a, b), a + b)


def test_spmd_add_grid():
    a = rng.standard_normal((256, 1024)).astype(np.float32)
    b = rng.standard_normal((256, 1024)).astype(np.float32)
    c = nki.simulate_kernel(spmd_add[2, 2], a, b)
    np.testing.assert_array_equal(c, a + b)
    tr = spmd_add.last_trace if spmd_add.last_trace else None
    out, tr = nki.trace_kernel(spmd_add[2, 2], a, b)
    assert tr.grid == (2, 2)
    assert {i.program_id for i in tr.instructions} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert len(tr.instructions) == 4 * 4


def test_spmd_partial_grid_leaves_nan():
    a = rng.standard_normal((256, 1024)).astype(np.float32)
    c = nki.simulate_kernel(spmd_add[1, 2], a, a)
    np.testing.assert_array_equal(c[:128], 2 * a[:128])
    assert np.isnan(c[128:]).all()  # unwritten output reads as NaN (as NKI's simulator)


def test_transpose2d():
    p, f1, f2 = 16, 8, 4
    x = rng.standard_normal((p, f1 * f2)).astype(np.float32)
    y = nki.simulate_kernel(transpose2d, x, (f1, f2))
    want = x.reshape(p, f1, f2).transpose(0, 2, 1).reshape(p, f2 * f1)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("kernel", [matmul_tiled, matmul_isa])
@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_tiled_matmul(kernel, dtype):
    K, M, N = 384, 256, 1024
    lhsT = rng.standard_normal((K, M)).astype(dtype)
    rhs = rng.standard_normal((K, N)).astype(dtype)
    got = nki.simulate_kernel(kernel, lhsT, rhs).astype(np.float32)
    want = (lhsT.astype(np.float64).T @ rhs.astype(np.float64))
    # fp32 accumulation; result rounded to the output dtype
    rtol = 1e-5 if dtype == np.float32 else 2 ** -8
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())
    assert got.dtype == np.float32


def test_matmul_trace_accumulation_groups():
    lhsT = rng.standard_normal((384, 128)).astype(np.float32)
    rhs = rng.standard_normal((384, 512)).astype(np.float32)
    _, tr = nki.trace_kernel(matmul_tiled, lhsT, rhs)
    mms = [i for i in tr.instructions if i.opcode == "nc_matmul"]
    assert [m.attrs["group_start"] for m in mms] == [True, False, False]
    assert all(m.flops == 2 * 128 * 128 * 512 for m in mms)
    # each accumulating matmul depends on the previous one (same PSUM bank)
    assert mms[0].index in mms[1].deps and mms[1].index in mms[2].deps


@pytest.mark.parametrize("rows", [128, 300])
def test_rmsnorm_ragged(rows):
    a = rng.standard_normal((rows, 256)).astype(np.float32)
    g = rng.standard_normal((256,)).astype(np.float32)
    got = nki.simulate_kernel(rmsnorm, a, g)
    want = a / np.sqrt(np.mean(a * a, axis=1, keepdims=True)) * g
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-5)


def test_softmax():
    x = (rng.standard_normal((200, 384)) * 4).astype(np.float32)
    got = nki.simulate_kernel(softmax, x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_avgpool2d():
    x = rng.standard_normal((32, 16, 24)).astype(np.float32)
    got = nki.simulate_kernel(avgpool2d, x, 2)
    want = x.reshape(32, 8, 2, 12, 2).mean(axis=(2, 4))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_legacy_output_argument():
    a = rng.standard_normal((128, 64)).astype(np.float32)
    b = rng.standard_normal((128, 64)).astype(np.float32)
    c = np.zeros_like(a)
    assert nki.simulate_kernel(tensor_add_legacy_out, a, b, c) is None
    np.testing.assert_array_equal(c, a + b)


def test_block_free_matmul_with_block_dims():
    from nki_tutorial_kernels import matmul_block_free
    K, M, N = 512, 256, 2048
    lhsT = rng.standard_normal((K, M)).astype(np.float32)
    rhs = rng.standard_normal((K, N)).astype(np.float32)
    got = nki.simulate_kernel(matmul_block_free, lhsT, rhs)
    np.testing.assert_allclose(got, lhsT.T @ rhs, rtol=1e-4, atol=1e-3)
