"""NKI 0.6 nki.language names added over Beta 1: each against numpy, one rule violation each."""
import ml_dtypes
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import packed
from trnsim.nki.rules import KernelError

RNG = np.random.default_rng(7)


def _run(fn, *arrays, target="trn2"):
    k = nki.jit(fn, target=target)
    return nki.simulate(k)(*arrays), k.last_trace


def _unary_kernel(op):
    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        nl.store(out, op(t))
        return out
    return kern


def _binary_kernel(op):
    def kern(x, y):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, op(nl.load(x), nl.load(y)))
        return out
    return kern


def _rule(exc_info, rule):
    assert exc_info.value.rule == rule
    assert "fix:" in str(exc_info.value)


# ----------------------------------------------------------------------------- math

def test_abs_max_abs_min_signed_and_ties():
    x = RNG.normal(size=(128, 64)).astype(np.float32)
    y = RNG.normal(size=(128, 64)).astype(np.float32)
    y[0, :4] = -x[0, :4]   # ties give y
    got, _ = _run(_binary_kernel(nl.abs_max), x, y, target="trn3")
    np.testing.assert_array_equal(got, np.where(np.abs(x) > np.abs(y), x, y))
    got, _ = _run(_binary_kernel(nl.abs_min), x, y, target="trn3")
    np.testing.assert_array_equal(got, np.where(np.abs(x) < np.abs(y), x, y))
    assert np.all(got[0, :4] == y[0, :4])


def test_abs_max_needs_trn3():
    x = np.ones((4, 4), np.float32)
    with pytest.raises(KernelError) as e:
        _run(_binary_kernel(nl.abs_max), x, x, target="trn2")
    _rule(e, "err_unsupported_on_target")


def test_fmod_sign_of_dividend_and_scalar():
    x = RNG.uniform(-10, 10, size=(64, 32)).astype(np.float32)
    y = RNG.uniform(1, 3, size=(64, 32)).astype(np.float32) * np.sign(RNG.normal(size=(64, 32))).astype(np.float32)
    got, _ = _run(_binary_kernel(nl.fmod), x, y)
    np.testing.assert_allclose(got, np.fmod(x, y), rtol=1e-5, atol=1e-5)
    got, _ = _run(_unary_kernel(lambda t: nl.fmod(t, 3.0)), x)
    np.testing.assert_allclose(got, np.fmod(x, np.float32(3.0)), rtol=1e-5, atol=1e-5)


def test_fmod_shape_rule():
    def kern(x, y):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.fmod(nl.load(x), nl.load(y)))
        return out
    with pytest.raises(KernelError) as e:
        _run(kern, np.ones((8, 4), np.float32), np.ones((8, 3), np.float32))
    _rule(e, "err_shape_mismatch")


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int16])
def test_invert_bitwise_not(dtype):
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, size=(16, 32), endpoint=True).astype(dtype)
    got, tr = _run(_unary_kernel(nl.invert), x)
    np.testing.assert_array_equal(got, np.invert(x))
    assert got.dtype == dtype
    assert any(i.attrs.get("api") == "invert" for i in tr.instructions)


def test_invert_rejects_floats():
    with pytest.raises(KernelError) as e:
        _run(_unary_kernel(nl.invert), np.ones((4, 4), np.float32))
    _rule(e, "err_unsupported_dtype")


def test_tan_and_gelu_sigmoid_against_numpy():
    x = RNG.uniform(-1.2, 1.2, size=(128, 96)).astype(np.float32)
    got, tr = _run(_unary_kernel(nl.tan), x)
    np.testing.assert_allclose(got, np.tan(x), rtol=1e-5, atol=1e-6)
    assert [i.opcode for i in tr.instructions].count("activation") == 1
    s = 1 / (1 + np.exp(-1.702 * x.astype(np.float64)))
    got, _ = _run(_unary_kernel(nl.gelu_apprx_sigmoid), x)
    np.testing.assert_allclose(got, x * s, rtol=1e-5, atol=1e-6)
    got, _ = _run(_unary_kernel(nl.gelu_apprx_sigmoid_dx), x)
    np.testing.assert_allclose(got, s + 1.702 * x * s * (1 - s), rtol=1e-5, atol=1e-6)
    # the derivative matches a finite difference of the function
    h, x64 = 1e-4, x.astype(np.float64)
    fd = ((x64 + h) / (1 + np.exp(-1.702 * (x64 + h))) - (x64 - h) / (1 + np.exp(-1.702 * (x64 - h)))) / (2 * h)
    np.testing.assert_allclose(got, fd, atol=1e-4)


def test_tan_needs_a_tile():
    def kern(x):
        nl.tan(3.0)
        return x
    with pytest.raises(KernelError) as e:
        _run(kern, np.ones((2, 2), np.float32))
    _rule(e, "err_expected_tile")


def test_op_tokens_in_isa_instructions():
    x = RNG.normal(size=(32, 16)).astype(np.float32)

    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=a, op=nl.prelu, data=t)                       # slope 0 below zero
        b = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=b, data=a, op0=nl.multiply, operand0=2.0, op1=nl.bypass, operand1=5.0)
        nl.store(out, b)
        return out
    got, _ = _run(kern, x)
    np.testing.assert_allclose(got, 2 * np.maximum(x, 0), rtol=1e-6)
    with pytest.raises(KernelError) as e:
        _run(lambda x: nl.prelu(x), x)
    _rule(e, "err_unsupported_op")


def test_rms_norm_against_numpy():
    x = RNG.normal(size=(128, 256)).astype(np.float32)
    w = RNG.normal(size=(128, 256)).astype(np.float32)

    def kern(x, w):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.rms_norm(nl.load(x), nl.load(w), axis=1, n=x.shape[1], epsilon=1e-5))
        return out
    got, tr = _run(kern, x, w)
    ref = x / np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=1, keepdims=True) + 1e-5) * w
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5)
    ops = [i.opcode for i in tr.instructions]
    assert ops.count("activation") == 2 and "tensor_reduce" in ops


def test_rms_norm_rejects_bad_n():
    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        nl.store(out, nl.rms_norm(t, t, axis=1, n=0))
        return out
    with pytest.raises(KernelError) as e:
        _run(kern, np.ones((4, 4), np.float32))
    _rule(e, "err_invalid_arguments")


def test_expand_dims_is_a_view():
    x = RNG.normal(size=(8, 6)).astype(np.float32)

    def kern(x):
        out = nl.ndarray((8, 1, 6), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        e = nl.expand_dims(t, 1)
        assert e.shape == (8, 1, 6)
        nl.store(out, nl.copy(e))
        return out
    got, _ = _run(kern, x)
    np.testing.assert_array_equal(got, np.expand_dims(x, 1))
    with pytest.raises(KernelError) as e:
        _run(lambda x: nl.expand_dims(nl.load(x), 0), x)
    _rule(e, "err_partition_dim_must_be_first")


def test_gather_flattened_per_partition():
    data = RNG.normal(size=(16, 4, 8)).astype(np.float32)
    idx = RNG.integers(0, 32, size=(16, 10)).astype(np.int32)

    def kern(d, i):
        out = nl.ndarray(i.shape, dtype=d.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.gather_flattened(nl.load(d), nl.load(i)))
        return out
    got, tr = _run(kern, data, idx)
    np.testing.assert_array_equal(got, np.take_along_axis(data.reshape(16, 32), idx, axis=1))
    assert tr.instructions[-2].engine == "gpsimd"
    bad = idx.copy()
    bad[3, 2] = 32
    with pytest.raises(KernelError) as e:
        _run(kern, data, bad)
    _rule(e, "err_index_out_of_bounds")


def test_shared_identity_matrix():
    def kern(x):
        out = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        ident = nl.shared_identity_matrix(n=64, dtype=nl.float32)
        nl.store(out, ident)
        return out
    got, tr = _run(kern, np.zeros((1, 1), np.float32))
    np.testing.assert_array_equal(got, np.eye(64, dtype=np.float32))
    assert tr.instructions[0].attrs["api"] == "shared_identity_matrix"
    with pytest.raises(KernelError) as e:
        _run(lambda x: nl.shared_identity_matrix(n=129), np.zeros((1, 1), np.float32))
    _rule(e, "err_num_partition_exceed_arch_limit")


# ----------------------------------------------------------------------------- random

def _rand_kernel(seed_value, twice=True):
    def kern(x):
        out = nl.ndarray((2, 64, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        seed = nl.full((1, 1), seed_value, dtype=nl.int32, buffer=nl.sbuf)
        nl.random_seed(seed)
        nl.store(out[0], nl.rand((64, 32), dtype=nl.float32))
        if twice:
            nl.random_seed(seed)
        nl.store(out[1], nl.rand((64, 32), dtype=nl.float32))
        return out
    return kern


def test_rand_uniform_and_seed_reproducible():
    got, _ = _run(_rand_kernel(42), np.zeros((1, 1), np.float32))
    np.testing.assert_array_equal(got[0], got[1])          # same seed -> same values
    assert 0.0 <= got.min() and got.max() < 1.0
    assert abs(float(got.mean()) - 0.5) < 0.02             # 2048 uniform samples: sd of the mean ~0.0064
    other, _ = _run(_rand_kernel(43), np.zeros((1, 1), np.float32))
    assert not np.array_equal(other[0], got[0])
    cont, _ = _run(_rand_kernel(42, twice=False), np.zeros((1, 1), np.float32))
    assert not np.array_equal(cont[0], cont[1])            # the state advances


def test_random_seed_rule():
    def kern(x):
        nl.random_seed(nl.full((2, 1), 1, dtype=nl.int32, buffer=nl.sbuf))
        return x
    with pytest.raises(KernelError) as e:
        _run(kern, np.zeros((1, 1), np.float32))
    _rule(e, "err_invalid_shape")
    with pytest.raises(KernelError) as e:
        _run(lambda x: nl.rand((4, 4), nl.float32, buffer=nl.shared_hbm), np.zeros((1, 1), np.float32))
    _rule(e, "err_hbm_tensor_with_init_value_not_supported")


def test_dropout_rate_scalar_and_vector():
    x = (RNG.normal(size=(128, 512)) + 5).astype(np.float32)

    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.dropout(nl.load(x), 0.25))
        return out
    got, _ = _run(kern, x)
    kept = got != 0
    np.testing.assert_array_equal(got[kept], x[kept])       # kept values unchanged, not rescaled
    assert abs(1 - kept.mean() - 0.25) < 0.01                # 65536 Bernoulli(0.25): sd 0.0017
    rates = np.linspace(0, 1, 128, dtype=np.float32).reshape(128, 1)

    def kern_v(x, r):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.dropout(nl.load(x), nl.load(r)))
        return out
    got, _ = _run(kern_v, x, rates)
    assert np.all(got[0] == x[0]) and np.all(got[-1] == 0)
    with pytest.raises(KernelError) as e:
        _run(lambda x: nl.dropout(nl.load(x), 1.5), x)
    _rule(e, "err_invalid_arguments")


# ----------------------------------------------------------------------------- dynamic loops

def test_dynamic_range_and_fori_loop_match_numpy_and_mark_trace():
    x = RNG.normal(size=(8, 16)).astype(np.float32)

    def kern(x, n_rows):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        acc = nl.zeros((1, 16), dtype=nl.float32, buffer=nl.sbuf)
        for i in nl.dynamic_range(n_rows):
            acc[...] = nl.add(acc, nl.load(x[i:i + 1, :]))
        nl.store(out[0:1, :], acc)

        def body(i):
            nl.store(out[i:i + 1, :], nl.multiply(nl.load(x[i:i + 1, :]), 2.0))
        nl.fori_loop(1, x.shape[0], body, step=2)
        nl.store(out[2:3, :], nl.zeros((1, 16), dtype=nl.float32, buffer=nl.sbuf))
        return out
    k = nki.jit(kern)
    got = nki.simulate(k)(x, 5)
    np.testing.assert_allclose(got[0], x[:5].sum(axis=0), rtol=1e-5)
    for i in range(1, 8, 2):
        np.testing.assert_allclose(got[i], 2 * x[i])
    loops = [i.loop for i in k.last_trace.instructions]
    assert loops.count("dynamic") == 5 * 2 + 4 * 3          # load + add per row; load + multiply + store


def test_while_loop_counts_down():
    x = np.ones((1, 4), np.float32)

    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        acc = nl.zeros((1, 4), dtype=nl.float32, buffer=nl.sbuf)
        t = nl.load(x)

        def body(r):
            acc[...] = nl.add(acc, t)
            return r - 1
        nl.while_loop(3, body)
        nl.while_loop(0, body)   # zero iterations
        nl.store(out, acc)
        return out
    got, _ = _run(kern, x)
    np.testing.assert_array_equal(got, 3 * x)


def test_dynamic_loop_rules():
    with pytest.raises(KernelError) as e:
        _run(lambda x: [None for _ in nl.dynamic_range(0, 4, 0)], np.zeros((1, 1), np.float32))
    _rule(e, "err_invalid_loop_step")
    with pytest.raises(KernelError) as e:
        _run(lambda x: nl.fori_loop(0, 2.5, lambda i: None), np.zeros((1, 1), np.float32))
    _rule(e, "err_invalid_loop_bound")
    with pytest.raises(KernelError) as e:
        _run(lambda x: nl.while_loop(1, lambda r: None), np.zeros((1, 1), np.float32))
    _rule(e, "err_invalid_arguments")


def test_loop_bounds_accept_register_like_values():
    class Reg:   # a register as the simulated nisa.register_* scalars expose it (.value)
        def __init__(self, v):
            self.value = v

    def kern(x):
        out = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((1, 1), dtype=nl.float32, buffer=nl.sbuf)
        one = nl.full((1, 1), 1.0, dtype=nl.float32, buffer=nl.sbuf)
        nl.fori_loop(0, Reg(6), lambda i: acc.__setitem__(Ellipsis, nl.add(acc, one)))
        nl.store(out, acc)
        return out
    got, _ = _run(kern, np.zeros((1, 1), np.float32))
    assert got[0, 0] == 6


# ----------------------------------------------------------------------------- queries, types, dtypes, tile_size

def test_buffer_queries():
    assert nl.is_hbm(nl.hbm) and nl.is_hbm(nl.shared_hbm) and nl.is_hbm(nl.private_hbm)
    assert nl.is_sbuf(nl.sbuf) and not nl.is_sbuf(nl.psum)
    assert nl.is_psum(nl.psum) and nl.is_on_chip(nl.psum) and nl.is_on_chip(nl.sbuf) and not nl.is_on_chip(nl.hbm)
    assert isinstance(nl.sbuf, nl.MemoryRegion) and nl.hbm is nl.MemoryRegion.private_hbm

    def kern(x):
        t = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.psum)
        assert nl.is_psum(t.buffer) and nl.is_hbm(x.buffer) and not nl.is_on_chip(x.buffer)
        return x
    _run(kern, np.zeros((2, 2), np.float32))
    with pytest.raises(KernelError) as e:
        nl.is_sbuf("l2")
    _rule(e, "err_invalid_buffer")


def test_nki_tensor_and_dtype_types():
    def kern(x):
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        assert isinstance(t, nl.NkiTensor) and isinstance(t[0:2, :], nl.NkiTensor) and isinstance(x, nl.NkiTensor)
        u = nl.NkiTensor((2, 3), nl.bfloat16, None, buffer=nl.sbuf)
        assert u.shape == (2, 3) and u.dtype == nl.bfloat16
        return x
    _run(kern, np.zeros((2, 2), np.float32))
    assert isinstance(nl.bfloat16, nl.DType) and isinstance("float32", nl.DType) and not isinstance(3, nl.DType)
    assert nl.DType(nl.float8_e4m3fn_x4) == "float8_e4m3fn_x4"
    obj = nl.NKIObject(a=1, b="x")
    assert obj.a == 1 and obj.b == "x"
    with pytest.raises(KernelError) as e:
        nl.DType("float7")
    _rule(e, "err_unsupported_dtype")


def test_x4_packing_roundtrip_and_layout():
    vals = RNG.normal(size=(4, 16)).astype(np.float32)
    for name, narrow in (("float8_e5m2_x4", ml_dtypes.float8_e5m2), ("float8_e4m3fn_x4", ml_dtypes.float8_e4m3fn),
                         ("float4_e2m1fn_x4", ml_dtypes.float4_e2m1fn)):
        words = packed.pack_x4(vals, name)
        assert words.shape == (4, 4)
        np.testing.assert_array_equal(packed.unpack_x4(words, name), vals.astype(narrow).astype(np.float32))
    # lane j sits in bits [8j, 8j+8): 1.0 in e4m3fn is 0x38, 2.0 is 0x40
    w = packed.pack_x4(np.array([[1.0, 2.0, 0.0, 0.0]], np.float32), "float8_e4m3fn_x4")
    assert int(w[0, 0]) == 0x38 | (0x40 << 8)
    assert nl.float8_e8m0fnu is ml_dtypes.float8_e8m0fnu


def test_x4_tensor_storage_and_float_write_rule():
    words = packed.pack_x4(RNG.normal(size=(8, 16)).astype(np.float32), "float8_e5m2_x4")

    def kern_in(x):   # x holds raw words as uint32; reinterpret via a uint32 -> x4 DMA of the same bytes
        out = nl.ndarray(x.shape, dtype=nl.float8_e5m2_x4, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.dma_copy(dst=out, src=t)
        return out
    got, _ = _run(kern_in, words)
    np.testing.assert_array_equal(got, words)

    def bad(x):
        t = nl.ndarray((4, 4), dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=t, data=nl.load(x), op0=nl.add, operand0=1.0)
        return x
    with pytest.raises(KernelError) as e:
        _run(bad, np.ones((4, 4), np.float32))
    _rule(e, "err_unsupported_dtype")


def test_tile_size_constants_from_catalog():
    import trnsim
    seen = {}

    def kern(x):
        ts = nl.tile_size
        seen.update(sbuf_size_bytes=ts.sbuf_size_bytes, sbuf_fmax=ts.sbuf_fmax, sbuf_fmax_bytes=ts.sbuf_fmax_bytes,
                    psum_bank_fmax_bytes=ts.psum_bank_fmax_bytes, psum_bank_fmax=ts.psum_bank_fmax)
        return x
    _run(kern, np.zeros((1, 1), np.float32))
    core = trnsim.target("trn2").core
    assert seen["sbuf_size_bytes"] == core.sbuf_bytes_per_partition * 128
    assert seen["sbuf_fmax_bytes"] == core.sbuf_usable_bytes_per_partition
    assert seen["sbuf_fmax"] == core.sbuf_usable_bytes_per_partition // 4
    assert seen["psum_bank_fmax_bytes"] == core.psum_bank_bytes_per_partition == 4 * seen["psum_bank_fmax"]


# ----------------------------------------------------------------------------- NkiTensor queries and views

def test_nki_tensor_queries():
    seen = {}

    def kern(x):
        t = nl.ndarray((128, 4, 6), dtype=nl.float32, buffer=nl.sbuf)
        s = t[:, 1:3, 0:6:2]
        seen.update(size=s.size, strides=s.strides, offset=s.offset, pattern=s.get_pattern(),
                    full_contig=t.is_contiguous(), part_contig=s.is_contiguous(), row=t[:, 2, :].is_contiguous(),
                    hbm_pattern=x.get_pattern(), hbm_offset=x[1:3, 2:4].offset, indirect=t.is_indirect())
        return x
    _run(kern, np.zeros((4, 8), np.float32))
    assert seen["size"] == 128 * 2 * 3
    # on-chip: the partition stride is the storage's elements per partition (4 * 6), as in the language guide
    assert seen["strides"] == (24, 6, 2) and seen["pattern"] == [[24, 128], [6, 2], [2, 3]]
    assert seen["offset"] == 6
    assert seen["full_contig"] and not seen["part_contig"] and seen["row"]
    assert seen["hbm_pattern"] == [[8, 4], [1, 8]] and seen["hbm_offset"] == 8 + 2
    assert seen["indirect"] is False


def test_nki_tensor_slice_select_broadcast_against_numpy():
    x = RNG.normal(size=(16, 8, 6)).astype(np.float32)

    def kern(x, idx):
        out = nl.ndarray((16, 3), dtype=x.dtype, buffer=nl.shared_hbm)
        out2 = nl.ndarray((16, 5, 6), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        sel = t.select(1, 4).slice(1, 1, 6, 2)                     # t[:, 4, 1:6:2]
        nl.store(out, nl.copy(sel))
        i = nl.load(idx)
        row = x.select(1, i)                                       # HBM dynamic select: x[:, idx, :]
        one = nl.load(row).expand_dim(1)                           # (16, 1, 6)
        nl.store(out2, nl.copy(one.broadcast(1, 5)))
        return out, out2
    got, got2 = _run(kern, x, np.array([[5]], np.int32))[0]
    np.testing.assert_array_equal(got, x[:, 4, 1:6:2])
    np.testing.assert_array_equal(got2, np.broadcast_to(x[:, 5:6, :], (16, 5, 6)))
    with pytest.raises(KernelError) as e:
        _run(lambda x, i: nl.load(x).select(0, 3), x, np.array([[5]], np.int32))
    _rule(e, "err_partition_dim_must_be_first")
    with pytest.raises(KernelError) as e:
        _run(lambda x, i: nl.load(x).slice(2, 4, 9), x, np.array([[5]], np.int32))
    _rule(e, "err_tensor_access_out_of_bound")


def test_nki_tensor_reshaping_views_share_storage():
    x = RNG.normal(size=(8, 24)).astype(np.float32)

    def kern(x):
        out = nl.ndarray((8, 4, 6), dtype=x.dtype, buffer=nl.shared_hbm)
        out2 = nl.ndarray((8, 24), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        r = t.reshape_dim(1, (4, -1))
        assert r.shape == (8, 4, 6) and r.expand_dim(2).shape == (8, 4, 1, 6)
        assert r.expand_dim(2).squeeze_dim(2).shape == (8, 4, 6)
        nl.store(out, nl.copy(r))
        nisa.tensor_scalar(dst=r, data=r, op0=nl.multiply, operand0=3.0)   # writes through the view
        nl.store(out2, nl.copy(r.flatten_dims(1, 2)))
        return out, out2
    got, got2 = _run(kern, x)[0]
    np.testing.assert_array_equal(got, x.reshape(8, 4, 6))
    np.testing.assert_allclose(got2, 3 * x, rtol=1e-6)
    with pytest.raises(KernelError) as e:
        _run(lambda x: nl.load(x).reshape_dim(1, (5, 5)), x)
    _rule(e, "err_unsupported_reshape")


def test_nki_tensor_view_reinterprets_bytes():
    words = packed.pack_x4(RNG.normal(size=(8, 16)).astype(np.float32), "float8_e4m3fn_x4")
    f = RNG.normal(size=(4, 8)).astype(np.float32)

    def kern(w, f):
        out = nl.ndarray(w.shape, dtype=nl.float8_e4m3fn_x4, buffer=nl.shared_hbm)
        out_u8 = nl.ndarray((4, 32), dtype=nl.uint8, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=w.view(nl.float8_e4m3fn_x4))
        t = nl.load(f)
        assert t.view(nl.uint8).shape == (4, 32) and t.view(nl.bfloat16).shape == (4, 16)
        nisa.dma_copy(dst=out_u8, src=t.view(nl.uint8))
        return out, out_u8
    got, got_u8 = _run(kern, words, f)[0]
    np.testing.assert_array_equal(got, words)
    np.testing.assert_array_equal(got_u8, f.view(np.uint8))
    with pytest.raises(KernelError) as e:
        _run(lambda w, f: nl.load(f)[:, 0:3].view(nl.float32), words, np.zeros((4, 3), np.uint8))
    _rule(e, "err_unsupported_reshape")


def test_x4_fill_only_zero():
    def kern(x):
        out = nl.ndarray((4, 4), dtype=nl.float4_e2m1fn_x4, buffer=nl.shared_hbm)
        nl.store(out, nl.zeros((4, 4), dtype=nl.float4_e2m1fn_x4, buffer=nl.sbuf))
        return out
    got, _ = _run(kern, np.zeros((1, 1), np.float32))
    assert got.dtype == np.uint16 and not got.any()
    with pytest.raises(KernelError) as e:
        _run(lambda x: nl.full((4, 4), 1.0, dtype=nl.float8_e5m2_x4, buffer=nl.sbuf), np.zeros((1, 1), np.float32))
    _rule(e, "err_unsupported_dtype")


def test_shared_constant_array_and_npy(tmp_path):
    table = RNG.normal(size=(4, 8)).astype(np.float32)
    path = tmp_path / "table.npy"
    np.save(path, table)

    def kern(x):
        out = nl.ndarray((2, 4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        c1 = nl.shared_constant(table)
        c2 = nl.shared_constant(str(path))
        nl.store(out[0], nl.add(nl.load(c1), nl.load(x)))
        nisa.dma_copy(dst=out[1], src=c2)
        return out
    x = RNG.normal(size=(4, 8)).astype(np.float32)
    got, tr = _run(kern, x)
    np.testing.assert_allclose(got[0], table + x, rtol=1e-6)
    np.testing.assert_array_equal(got[1], table)
    assert isinstance(nl.tile_size, nl._TileSize)

    def writes_constant(x):
        c = nl.shared_constant(table)
        nisa.dma_copy(dst=c, src=x)
        return x
    with pytest.raises(KernelError) as e:
        _run(writes_constant, x)
    _rule(e, "err_cannot_update_immutable_parameter")
    with pytest.raises(KernelError) as e:
        _run(lambda x: nl.shared_constant(table.astype(np.float64)), x)
    _rule(e, "err_unsupported_dtype")


def test_more_rules_and_e8m0_numerics():
    x = np.ones((4, 4), np.float32)
    with pytest.raises(KernelError) as e:
        _run(_binary_kernel(nl.abs_min), x, x, target="trn2")
    _rule(e, "err_unsupported_on_target")
    with pytest.raises(KernelError) as e:
        _run(lambda x: nl.gelu_apprx_sigmoid(x), x)       # an HBM tensor, not an on-chip tile
    _rule(e, "err_unsupported_memory")
    with pytest.raises(KernelError) as e:
        _run(lambda x: nl.NkiTensor((2, 2), nl.float32, object()), x)
    _rule(e, "err_unsupported_storage")
    with pytest.raises(KernelError) as e:
        _run(lambda x: nl.average(x, x), x)
    _rule(e, "err_unsupported_op")
    # float8_e8m0fnu holds powers of two: storing rounds to a power of two (ml_dtypes rounding)
    v = np.array([[0.3, 1.0, 3.0, 1000.0]], np.float32)

    def kern(x):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
        nisa.tensor_copy(dst=t, src=nl.load(x))
        nl.store(out, nl.copy(t, dtype=nl.float32))
        return out
    got, _ = _run(kern, v)
    np.testing.assert_array_equal(got, v.astype(ml_dtypes.float8_e8m0fnu).astype(np.float32))
    assert np.all(np.log2(got) == np.round(np.log2(got)))


def test_tile_size_alignments_come_from_the_catalog():
    import trnsim
    seen = {}

    def kern(x):
        seen.update(psum=nl.tile_size.psum_min_align, sbuf=nl.tile_size.sbuf_min_align)
        return x
    for target in ("trn1", "trn2", "trn3"):
        _run(kern, np.zeros((1, 1), np.float32), target=target)
        core = trnsim.target(target).core
        assert (seen["psum"], seen["sbuf"]) == (core.psum_min_align_bytes, core.sbuf_min_align_bytes)
        assert core.sources["psum_min_align_bytes"].key == "K-KLR"
    assert seen == {"psum": 4, "sbuf": 1}


def test_nl_and_nisa_random_instructions_share_one_generator_state():
    x = (RNG.normal(size=(128, 256)) + 5).astype(np.float32)

    def seeded(use_isa):
        def kern(x):
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            seed = nl.full((1, 1), 1234, dtype=nl.uint32, buffer=nl.sbuf)
            nisa.set_rng_seed(seed)                     # reseeds the Vector Engine generators
            t = nl.load(x)
            if use_isa:
                d = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
                nisa.dropout(dst=d, data=t, prob=0.5)
            else:
                d = nl.dropout(t, 0.5)
            nl.store(out, d)
            return out
        return kern
    via_nl, _ = _run(seeded(False), x)
    via_isa, _ = _run(seeded(True), x)
    np.testing.assert_array_equal(via_nl, via_isa)     # same lanes, same draws, same p = 0.5 threshold
    assert 0.45 < (via_nl == 0).mean() < 0.55


def test_affine_range_is_an_alias_of_range_in_0_6_but_checked_in_beta1():
    """NKI 0.6: ``nl.affine_range`` is a deprecated alias of ``range()`` (nki.language reference), so a loop that
    overwrites one buffer each iteration is legal; Beta 1 refuses it (err_unexpected_output_dependencies)."""
    import trnsim.neuronxcc.nki as nki_b1
    import trnsim.neuronxcc.nki.language as nl_b1
    x = RNG.normal(size=(512, 64)).astype(np.float32)

    def last_tile(x):
        out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        for i in nl.affine_range(4):
            nisa.dma_copy(dst=acc, src=x[i * 128:(i + 1) * 128])
        nl.store(out, acc)
        return out
    got, _ = _run(last_tile, x)
    np.testing.assert_array_equal(got, x[384:512])

    @nki_b1.jit
    def last_tile_b1(x):
        out = nl_b1.ndarray((128, 64), nl_b1.float32, buffer=nl_b1.shared_hbm)
        acc = nl_b1.ndarray((128, 64), nl_b1.float32, buffer=nl_b1.sbuf)
        for i in nl_b1.affine_range(4):
            acc[...] = nl_b1.load(x[i * 128:(i + 1) * 128])
        nl_b1.store(out, acc)
        return out
    with pytest.raises(KernelError) as e:
        nki_b1.simulate_kernel(last_tile_b1, x)
    _rule(e, "err_unexpected_output_dependencies")


def test_a_0_6_kernel_may_update_its_inputs_in_place():
    """NKI 0.6 (nki_simulator.rst): input arrays are updated in place when the kernel writes them."""
    x = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)

    def bump(x):
        nl.store(x, nl.add(nl.load(x), 1.0))
        return x
    mine = x.copy()
    got, _ = _run(bump, mine)
    np.testing.assert_array_equal(got, x + 1)
    np.testing.assert_array_equal(mine, x + 1)


def test_nki_precise_fp_0_stores_narrow_floats_as_float32(monkeypatch):
    """nki_simulator.rst: NKI_PRECISE_FP=0 keeps bf16/fp8 values in float32 (no rounding), to separate logic
    errors from precision loss; the default rounds like the hardware."""
    import ml_dtypes
    x = (1.0 + RNG.random((128, 64)) * 2 ** -9).astype(ml_dtypes.bfloat16)   # 1 + small: bf16 keeps 8 bits

    def add_third(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        nl.store(out, nl.add(t, 1.0 / 3.0))
        return out
    exact = x.astype(np.float32) + np.float32(1.0 / 3.0)
    monkeypatch.setenv("NKI_PRECISE_FP", "0")
    loose, _ = _run(add_third, x)
    assert loose.dtype == np.float32
    np.testing.assert_allclose(loose, exact, rtol=1e-7)

    def reinterpret(x):
        return x.view(nl.int16)
    with pytest.raises(KernelError) as e:
        _run(reinterpret, x)
    _rule(e, "err_unsupported_dtype")
    monkeypatch.setenv("NKI_PRECISE_FP", "1")
    precise, _ = _run(add_third, x)
    assert precise.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(precise, exact.astype(ml_dtypes.bfloat16))
    assert not np.array_equal(precise.astype(np.float32), loose)


def test_integer_on_the_partition_dim_keeps_a_size_1_partition_on_chip():
    """NkiTensor.__getitem__ (0.6 reference): on SBUF/PSUM an integer on dim 0 keeps a size-1 partition dimension;
    on HBM it removes the dimension."""
    seen = {}
    x = RNG.normal(size=(8, 64)).astype(np.float32)

    def kern(x):
        t = nl.ndarray((8, 64), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        seen.update(sbuf=tuple(t[3].shape), sbuf_neg=tuple(t[-1].shape), hbm=tuple(x[3].shape))
        out = nl.ndarray((1, 64), nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t[3])
        return out
    got, _ = _run(kern, x)
    assert seen == {"sbuf": (1, 64), "sbuf_neg": (1, 64), "hbm": (64,)}
    np.testing.assert_array_equal(got, x[3:4])


def test_on_chip_views_stay_at_least_two_dimensional():
    """nki-language-guide "Tensor Indexing": integers on free dims drop them unless the result would be < 2-D,
    then the last integer-indexed free dim is kept at size 1; t[0, 0, 10] is a (1, 1) view. Beta 1 keeps numpy's
    rank-dropping; HBM drops indexed dims (at least 1-D)."""
    seen = {}
    x = RNG.normal(size=(128, 64)).astype(np.float32)

    def kern(x):
        t = nl.ndarray((64, 64, 64), nl.float32, buffer=nl.sbuf)
        s = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=x)
        h = nl.ndarray((4, 128, 32), nl.float32, buffer=nl.shared_hbm)
        seen.update(point=tuple(t[0, 0, 10].shape), drop_one=tuple(t[:, 0].shape), both=tuple(t[:, 0, 10].shape),
                    sliced=tuple(t[0:64, 0, 0:64].shape), neg=tuple(t[:, -1, -1].shape),
                    column=tuple(s[:, 5].shape), ellipsis=tuple(s[..., 0].shape), view_of_view=tuple(s[:, 2:4][:, 1].shape),
                    hbm=tuple(h[0, :, 0].shape))
        with pytest.raises(KernelError) as e:
            s[:, 64]
        seen["oob"] = e.value.rule
        out = nl.ndarray((128, 1), nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=s[:, 5])    # the [128, 1] column moves into a [128, 1] HBM tensor
        return out
    got, _ = _run(kern, x)
    assert seen == {"point": (1, 1), "drop_one": (64, 64), "both": (64, 1), "sliced": (64, 64), "neg": (64, 1),
                    "column": (128, 1), "ellipsis": (128, 1), "view_of_view": (128, 1), "hbm": (128,),
                    "oob": "err_tensor_access_out_of_bound"}
    np.testing.assert_array_equal(got, x[:, 5:6])


def test_language_rules_and_semantics_from_the_reference():
    """nl.* points a review against the NKI 0.6 reference found: exact int32 arithmetic and fills, tile-only
    comparison / bitwise ops, integer-only bitwise ops, var's kept dims, softmax's default axis, fori_loop's
    documented example (the loop value as scalar_offset) and the dynamic-loop rules."""
    big = np.full((4, 8), 2 ** 24 + 1, np.int32)

    def add_ints(a, b):
        out = nl.ndarray(a.shape, dtype=nl.int32, buffer=nl.shared_hbm)
        nl.store(out, nl.add(nl.load(a), nl.load(b)))
        return out
    got, _ = _run(add_ints, big, np.full((4, 8), 2, np.int32))
    np.testing.assert_array_equal(got, big + 2)                     # GpSimd integer arithmetic, not fp32

    def fill(a):
        out = nl.ndarray((4, 4), dtype=nl.int32, buffer=nl.shared_hbm)
        nl.store(out, nl.full((4, 4), 2 ** 24 + 1, dtype=nl.int32))
        return out
    got, _ = _run(fill, np.zeros((1, 1), np.float32))
    assert (got == 2 ** 24 + 1).all()

    def two_scalars(a):
        nl.equal(2.0, 2.0)
        return a
    with pytest.raises(KernelError) as e:
        _run(two_scalars, np.zeros((1, 1), np.float32))
    _rule(e, "err_operand_type")

    def float_shift(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.left_shift(nl.load(a), 1))
        return out
    with pytest.raises(KernelError) as e:
        _run(float_shift, np.ones((2, 4), np.float32))
    _rule(e, "err_unsupported_dtype")

    x = np.random.default_rng(3).standard_normal((8, 6, 10)).astype(np.float32)

    def var_softmax(a):
        t = nl.load(a)
        v = nl.var(t, axis=2, keepdims=False)                       # keepdims is ignored (reference)
        assert tuple(v.shape) == (8, 6, 1)
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.softmax(t))                               # axis=-1 by default
        return out
    got, _ = _run(var_softmax, x)
    e_ = np.exp(x - x.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(got, e_ / e_.sum(axis=-1, keepdims=True), rtol=1e-5)

    n = 10
    data = np.arange(n, dtype=np.float32).reshape(1, n)

    def fori(d, ub):
        output = nl.ndarray((1, n), dtype=nl.float32, buffer=nl.shared_hbm)
        ub_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=ub_sb, src=ub)
        reg = nisa.register_alloc()
        nisa.register_load(reg, ub_sb)
        nisa.dma_copy(dst=output, src=nl.zeros((1, n), dtype=nl.float32, buffer=nl.sbuf))
        temp = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)

        def body(i):
            nisa.dma_copy(dst=temp, src=d.ap([[1, 1], [1, 1]], scalar_offset=i, indirect_dim=1))
            nisa.dma_copy(dst=output.ap([[1, 1], [1, 1]], scalar_offset=i, indirect_dim=1), src=temp)
        nl.fori_loop(0, reg, body)
        return output
    got, _ = _run(fori, data, np.array([[6]], np.int32))
    np.testing.assert_array_equal(got[0], np.where(np.arange(n) < 6, data[0], 0))

    def returns_value(a):
        nl.fori_loop(0, 2, lambda i: 5)
        return a
    with pytest.raises(KernelError) as e:
        _run(returns_value, np.zeros((1, 1), np.float32))
    _rule(e, "err_invalid_control_flow")

    def in_no_reorder(a):
        with nl.no_reorder():
            nl.fori_loop(0, 2, lambda i: None)
        return a
    with pytest.raises(KernelError) as e:
        _run(in_no_reorder, np.zeros((1, 1), np.float32))
    _rule(e, "err_invalid_control_flow")


def test_signatures_and_comparison_dtypes_follow_the_reference():
    x = np.arange(32, dtype=np.float32).reshape(4, 8)

    def kern(a):
        t = nl.load(a)
        s = nl.add(t, t, nl.float32)                                  # dtype positional, as documented
        e = nl.exp(nl.multiply(s, 0.0, nl.float32), nl.float32)
        r = nl.sum(e, 1, nl.float32)
        z = nl.zeros((4, 8), nl.float32, nl.sbuf)
        c = nl.copy(x=t)
        assert nl.zeros_like(x=t).dtype == t.dtype and nl.broadcast_to(r, (4, 8), dtype=nl.bfloat16).dtype == nl.bfloat16
        ti = nl.copy(t, nl.int32)
        assert nl.equal(ti, 2.5).dtype == nl.int32                    # comparisons default to the tile's dtype
        assert nl.greater(nl.copy(t, nl.bfloat16), 0.0).dtype == nl.bfloat16
        out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.add(nl.add(z, c), nl.broadcast_to(r, (4, 8))))
        return out
    got, _ = _run(kern, x)
    np.testing.assert_allclose(got, x + 8, rtol=1e-6)


def test_hbm_integer_indexing_keeps_at_least_one_dim():
    def kern(a):
        t = nl.ndarray((4, 128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        assert tuple(t[0, 0, 0].shape) == (1,) and tuple(t[1, 2].shape) == (32,) and tuple(a[1, 2].shape) == (1,)
        return a
    got, _ = _run(kern, np.arange(8, dtype=np.float32).reshape(2, 4))
    np.testing.assert_array_equal(got, np.arange(8, dtype=np.float32).reshape(2, 4))


def test_get_pattern_round_trips_through_ap_as_in_the_language_guide():
    x = np.random.default_rng(5).standard_normal((128, 64)).astype(np.float32)
    seen = {}

    def kern(a):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        seen.update(strides=t.strides, offset=t.offset)
        pattern = t.get_pattern()
        pattern[0][1] = 64                     # read 64 partitions instead of 128
        u = t.ap(pattern=pattern)
        out = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=u)
        return out
    got, _ = _run(kern, x)
    assert seen["strides"] == (64, 1) and seen["offset"] == 0
    np.testing.assert_array_equal(got, x[:64])


def test_language_functions_refuse_undocumented_keywords_and_mask():
    """NKI 0.6 functions take only their documented parameters: a typo (dtpye=) or Beta 1's mask= is an error
    naming the argument and the signature, never silently ignored (every nl function that used to swallow
    **kwargs, called with placeholder positional arguments: the rule is checked first)."""
    import inspect

    import trnsim.nki.language as nl06

    lenient = []
    for name in sorted(dir(nl06)):
        fn = getattr(nl06, name)
        if name.startswith("_") or not inspect.isfunction(fn):
            continue
        params = inspect.signature(fn).parameters.values()
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            continue
        lenient.append((name, fn, sum(p.default is inspect.Parameter.empty and p.kind in (
            inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params)))
    assert len(lenient) >= 35
    messages = {}

    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for name, fn, n_required in lenient:
            try:
                fn(*([None] * n_required), bogus_arg=1)
            except KernelError as e:
                messages[name] = str(e)
        t = nl.load(x)
        for call in (lambda: nl.load(x, dtpye=nl.bfloat16), lambda: nl.add(t, t, mask=t),
                     lambda: nl.store(out, value=t, mask=t)):
            try:
                call()
            except KernelError as e:
                messages[len(messages)] = str(e)
        nl.store(out, value=t)
        return out

    nki.simulate(kernel)(np.ones((128, 8), np.float32))
    missing = [name for name, _, _ in lenient if name not in messages]
    assert not missing, f"accepted an unknown keyword silently: {missing}"
    assert all("bogus_arg=" in messages[name] and "err_invalid_arguments" in messages[name] for name, _, _ in lenient)
    extra = [m for k, m in messages.items() if isinstance(k, int)]
    assert "nl.load has no argument dtpye=" in extra[0] and "nl.load(src, dtype=None)" in extra[0]
    assert "nl.add has no argument mask=" in extra[1] and "slice the tiles" in extra[1]
    assert "nl.store has no argument mask=" in extra[2]


def test_beta1_language_keeps_mask():
    """Beta 1 kernels keep mask= (and its leniency): a masked load under trnsim.neuronxcc.nki still works."""
    import trnsim.neuronxcc.nki as b1
    import trnsim.neuronxcc.nki.language as b1l

    @b1.jit
    def kernel(x):
        out = b1l.ndarray(x.shape, dtype=x.dtype, buffer=b1l.shared_hbm)
        i_p = b1l.arange(128)[:, None]
        i_f = b1l.arange(8)[None, :]
        t = b1l.load(x[i_p, i_f], mask=(i_f < 4))
        b1l.store(out[i_p, i_f], value=t, mask=(i_f < 4))
        return out

    x = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    got = b1.simulate_kernel(kernel, x)
    np.testing.assert_array_equal(got[:, :4], x[:, :4])


def test_load_takes_dtype_by_position_as_documented():
    """nki.language.load(src, dtype=None) / load_transpose2d(src, dtype=None): dtype is the second parameter."""
    x = np.linspace(-2, 2, 128 * 8, dtype=np.float32).reshape(128, 8)

    @nki.jit
    def kernel(x):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        out_t = nl.ndarray((8, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x, nl.bfloat16)
        assert t.dtype == nl.bfloat16
        nl.store(out, value=nl.copy(t, nl.float32))
        u = nl.load_transpose2d(x, nl.bfloat16)
        nl.store(out_t, value=nl.copy(u, nl.float32))
        return out, out_t

    got, got_t = nki.simulate(kernel)(x)
    want = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_t, want.T)
