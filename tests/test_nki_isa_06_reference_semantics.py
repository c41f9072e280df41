"""nki.isa semantics and rules from the NKI 0.6 reference (nki/api/nki/isa, nki/api/nki.api.shared.rst) that a
review against the reference found missing: integer bit patterns, bit-accurate copies, the documented reduction
operators, unary ALU operators, scalar activation bias from NeuronCore-v3, the bn_stats even/odd layout, the
implicit flattening of nc_transpose, and rules that used to pass silently. Kernels are written for this file."""
import numpy as np
import pytest

import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import KernelError
from nki06_helpers import broken, hbm, new, sb, sim

rng = np.random.default_rng(606)
BIG = np.array([[16777217, 2 ** 30 + 1, 123456789, -123456789, -8, -1, 2 ** 31 - 1, -2 ** 31]], np.int32)


# ------------------------------------------------------------------ bitvec operators: bit patterns, no float

@pytest.mark.parametrize("op,ref", [
    (nl.bitwise_and, lambda a, b: a & b), (nl.bitwise_or, lambda a, b: a | b), (nl.bitwise_xor, lambda a, b: a ^ b),
    (nl.left_shift, lambda a, b: (a.view(np.uint32) << np.uint32(b)).view(np.int32)),
    (nl.right_shift, lambda a, b: (a.view(np.uint32) >> np.uint32(b)).view(np.int32)),   # logical shift
])
@pytest.mark.parametrize("scalar", [0x0F0F0F0F, 3])
def test_tensor_scalar_bitvec_is_exact_on_int32(op, ref, scalar):
    def k(a):
        o = new(a.shape, nl.int32)
        nisa.tensor_scalar(dst=o, data=sb(a), op0=op, operand0=scalar)
        return hbm(o)
    np.testing.assert_array_equal(sim(k, BIG), ref(BIG, scalar))


def test_tensor_scalar_two_bitvec_ops_with_a_vector_operand_and_reverse():
    a = rng.integers(-2 ** 31, 2 ** 31 - 1, (4, 16), dtype=np.int64).astype(np.int32)
    m = rng.integers(0, 2 ** 31 - 1, (4, 1), dtype=np.int64).astype(np.int32)

    def k(x, mv):
        o = new(x.shape, nl.int32)
        nisa.tensor_scalar(dst=o, data=sb(x), op0=nl.bitwise_and, operand0=sb(mv), op1=nl.bitwise_xor, operand1=-1)
        return hbm(o)
    np.testing.assert_array_equal(sim(k, a, m), (a & m) ^ -1)


def test_tensor_tensor_bitvec_and_int32_arithmetic_are_exact():
    b = np.array([[1, 1, 2, 3, 0, 0, 1, 0]], np.int32)

    def k(x, y, op):
        o = new(x.shape, nl.int32)
        nisa.tensor_tensor(dst=o, data1=sb(x), data2=sb(y), op=op)
        return hbm(o)
    np.testing.assert_array_equal(sim(lambda x, y: k(x, y, nl.bitwise_xor), BIG, b), BIG ^ b)
    # int32 in and out: the GpSimd Engine's native integer arithmetic (wraps like int32)
    np.testing.assert_array_equal(sim(lambda x, y: k(x, y, nl.add), BIG, b), (BIG.astype(np.int64) + b).astype(np.int32))
    np.testing.assert_array_equal(sim(lambda x, y: k(x, y, nl.multiply), BIG, b),
                                  (BIG.astype(np.int64) * b).astype(np.int32))


def test_bitvec_rules():
    def float_data(a):
        o = new(a.shape, nl.float32)
        nisa.tensor_scalar(dst=o, data=sb(a), op0=nl.bitwise_and, operand0=1)
        return hbm(o)
    assert "float32" in broken(float_data, np.ones((2, 4), np.float32), rule="err_unsupported_dtype")

    def mixed(a):
        o = new(a.shape, nl.int32)
        nisa.tensor_scalar(dst=o, data=sb(a), op0=nl.add, operand0=1, op1=nl.bitwise_and, operand1=3)
        return hbm(o)
    assert "same type" in broken(mixed, np.ones((2, 4), np.int32), rule="err_unsupported_op")

    def on_gpsimd(a):
        o = new(a.shape, nl.int32)
        nisa.tensor_scalar(dst=o, data=sb(a), op0=nl.bitwise_or, operand0=1, engine=nisa.engine.gpsimd)
        return hbm(o)
    assert "Vector Engine" in broken(on_gpsimd, np.ones((2, 4), np.int32), rule="err_unsupported_engine")

    def tt_float(a):
        o = new(a.shape, nl.float32)
        nisa.tensor_tensor(dst=o, data1=sb(a), data2=sb(a), op=nl.bitwise_or)
        return hbm(o)
    broken(tt_float, np.ones((2, 4), np.float32), rule="err_unsupported_dtype")


# ------------------------------------------------------------------ tensor_scalar: unary ops and operand rules

@pytest.mark.parametrize("op,ref", [(nl.abs, np.abs), (nl.square, np.square), (nl.relu, lambda x: np.maximum(x, 0)),
                                    (nl.reciprocal, lambda x: 1 / x), (nl.rsqrt, lambda x: 1 / np.sqrt(np.abs(x)))])
def test_tensor_scalar_unary_operators(op, ref):
    a = rng.uniform(0.5, 2, (8, 16)).astype(np.float32) * np.where(op is nl.rsqrt, 1, rng.choice([-1, 1], (8, 16)))
    a = a.astype(np.float32)

    def k(x):
        o = new(x.shape, nl.float32)
        nisa.tensor_scalar(dst=o, data=sb(x), op0=op, operand0=None, op1=nl.multiply, operand1=2.0)
        return hbm(o)
    np.testing.assert_allclose(sim(k, a), 2 * ref(a), rtol=1e-6)

    def bad(x):
        o = new(x.shape, nl.float32)
        nisa.tensor_scalar(dst=o, data=sb(x), op0=op, operand0=3.0)
        return hbm(o)
    assert "None or 0" in broken(bad, a, rule="err_invalid_arguments")


def test_tensor_scalar_operand_rules():
    a = np.ones((4, 8), np.float32)

    def operand1_without_op1(x):
        o = new(x.shape, nl.float32)
        nisa.tensor_scalar(dst=o, data=sb(x), op0=nl.add, operand0=1.0, operand1=2.0)
        return hbm(o)
    broken(operand1_without_op1, a, rule="err_invalid_arguments")

    def int_vector_operand(x, v):
        o = new(x.shape, nl.float32)
        nisa.tensor_scalar(dst=o, data=sb(x), op0=nl.add, operand0=sb(v))
        return hbm(o)
    assert "int32" in broken(int_vector_operand, a, np.ones((4, 1), np.int32), rule="err_unsupported_dtype")

    def scalar_engine_subtract(x):
        o = new(x.shape, nl.float32)
        nisa.tensor_scalar(dst=o, data=sb(x), op0=nl.subtract, operand0=1.0, engine=nisa.engine.scalar)
        return hbm(o)
    assert "trn2" in broken(scalar_engine_subtract, a, rule="err_unsupported_op")
    # multiply then add is one of the trn2 Scalar Engine's combinations
    def scalar_engine_fma(x):
        o = new(x.shape, nl.float32)
        nisa.tensor_scalar(dst=o, data=sb(x), op0=nl.multiply, operand0=3.0, op1=nl.add, operand1=1.0,
                           engine=nisa.engine.scalar)
        return hbm(o)
    np.testing.assert_array_equal(sim(scalar_engine_fma, a), 4 * a)


# ------------------------------------------------------------------ bit-accurate copies and transposes

def test_same_dtype_copy_and_vector_transpose_are_bit_accurate():
    def copy(a, eng):
        o = new(a.shape, nl.int32)
        nisa.tensor_copy(dst=o, src=sb(a), engine=eng)
        return hbm(o)
    for eng in (nisa.engine.vector, nisa.engine.gpsimd):
        np.testing.assert_array_equal(sim(lambda a: copy(a, eng), BIG), BIG)

    def transpose(a):
        o = new((a.shape[1], a.shape[0]), nl.int32)
        nisa.nc_transpose(dst=o, data=sb(a), engine=nisa.engine.vector)
        return hbm(o)
    np.testing.assert_array_equal(sim(transpose, BIG), BIG.T)


def test_nc_transpose_flattens_free_axes_and_keeps_the_dtype():
    a = rng.standard_normal((16, 4, 8)).astype(np.float32)

    def k(x):
        p = new((32, 16), nl.float32, nl.psum)
        nisa.nc_transpose(dst=p, data=sb(x), engine=nisa.engine.tensor)
        o = new((32, 16), nl.float32)
        nisa.tensor_copy(dst=o, src=p)
        return hbm(o)
    np.testing.assert_array_equal(sim(k, a), a.reshape(16, 32).T)

    def other_dtype(x):
        o = new((x.shape[1], x.shape[0]), nl.bfloat16)
        nisa.nc_transpose(dst=o, data=sb(x), engine=nisa.engine.vector)
        return hbm(o)
    assert "bfloat16" in broken(other_dtype, np.ones((4, 8), np.float32), rule="err_unsupported_dtype")


# ------------------------------------------------------------------ tensor_reduce: every legal reduction operator

@pytest.mark.parametrize("op,ref,dtype", [
    (nl.bitwise_and, lambda x: np.bitwise_and.reduce(x, axis=1), np.int32),
    (nl.bitwise_or, lambda x: np.bitwise_or.reduce(x, axis=1), np.int32),
    (nl.bitwise_xor, lambda x: np.bitwise_xor.reduce(x, axis=1), np.int32),
    (nl.subtract, lambda x: x[:, 0] - x[:, 1:].sum(axis=1), np.float32),
    (nl.logical_xor, lambda x: (np.count_nonzero(x, axis=1) % 2).astype(np.float32), np.float32),
])
def test_tensor_reduce_documented_operators(op, ref, dtype):
    if dtype == np.int32:
        x = rng.integers(-2 ** 31, 2 ** 31 - 1, (8, 12), dtype=np.int64).astype(np.int32)
    else:
        x = rng.integers(-3, 4, (8, 12)).astype(np.float32)

    def k(a):
        o = new((a.shape[0], 1), a.dtype)
        nisa.tensor_reduce(dst=o, op=op, data=sb(a), axis=1)
        return hbm(o)
    np.testing.assert_array_equal(sim(k, x).ravel(), ref(x))


def test_tensor_reduce_bitvec_needs_integers():
    def k(a):
        o = new((a.shape[0], 1), nl.float32)
        nisa.tensor_reduce(dst=o, op=nl.bitwise_or, data=sb(a), axis=1)
        return hbm(o)
    broken(k, np.ones((2, 4), np.float32), rule="err_unsupported_dtype")


# ------------------------------------------------------------------ activation bias and reduce rules

def test_activation_scalar_bias_from_neuroncore_v3_and_any_bias_dtype():
    a = rng.standard_normal((8, 16)).astype(np.float32)

    def scalar_bias(x):
        o = new(x.shape, nl.float32)
        nisa.activation(dst=o, op=nl.copy, data=sb(x), bias=0.25, scale=2.0)
        return hbm(o)
    for target in ("trn2", "trn3"):
        np.testing.assert_allclose(sim(scalar_bias, a, target=target), 2 * a + 0.25, rtol=1e-6)
    assert "NeuronCore-v3" in broken(scalar_bias, a, rule="err_activation_bias_invalid_type", target="trn1")

    def int_bias(x, b):
        o = new(x.shape, nl.float32)
        nisa.activation(dst=o, op=nl.copy, data=sb(x), bias=sb(b))
        return hbm(o)
    b = np.arange(8, dtype=np.int32).reshape(8, 1)
    np.testing.assert_allclose(sim(int_bias, a, b), a + b, rtol=1e-6)

    def max_reduce(x):
        o = new(x.shape, nl.float32)
        r = new((x.shape[0], 1), nl.float32)
        nisa.activation(dst=o, op=nl.copy, data=sb(x), reduce_op=nl.maximum, reduce_res=r)
        return hbm(r)
    assert "nl.add" in broken(max_reduce, a, rule="err_unsupported_op")


# ------------------------------------------------------------------ bn_stats / bn_aggr

def test_bn_stats_even_odd_layout_and_bn_aggr_triples():
    x = np.array([[1., 2., 3., 4., 10., 20.]], np.float32)

    def stats(a):
        s = new((a.shape[0], 6), nl.float32)
        nisa.bn_stats(dst=s, data=sb(a))
        return hbm(s)
    ev, od = x[0, 0::2], x[0, 1::2]
    np.testing.assert_allclose(sim(stats, x)[0], [3, ev.mean(), ev.var() * 3, 3, od.mean(), od.var() * 3], rtol=1e-6)

    def aggr(a):
        s = new((a.shape[0], a.shape[1]), nl.float32)
        nisa.dma_copy(dst=s, src=a)
        r = new((a.shape[0], 2), nl.float32)
        nisa.bn_aggr(dst=r, data=s)
        return hbm(r)
    # three (count, mean, variance * count) triples: 9 values per partition
    y = rng.standard_normal((4, 30)).astype(np.float64)
    parts = np.split(y, [10, 17], axis=1)
    trip = np.concatenate([np.stack([np.full(4, p.shape[1]), p.mean(1), p.var(1) * p.shape[1]], 1) for p in parts], 1)
    np.testing.assert_allclose(sim(aggr, trip.astype(np.float32)), np.stack([y.mean(1), y.var(1)], 1), rtol=1e-5)
    broken(aggr, np.ones((2, 4), np.float32), rule="err_shape_mismatch")


# ------------------------------------------------------------------ rules that used to pass silently

def test_dma_copy_and_memset_option_rules():
    a = np.ones((4, 8), np.float32)

    def copy(x, **kw):
        o = new(x.shape, nl.float32)
        nisa.dma_copy(dst=o, src=x, **kw)
        return hbm(o)
    assert "NeuronCore-v3" in broken(lambda x: copy(x, dge_mode=nisa.dge_mode.hwdge), a, target="trn1",
                                     rule="err_unsupported_dge_mode")
    np.testing.assert_array_equal(sim(lambda x: copy(x, dge_mode=nisa.dge_mode.hwdge, engine=nisa.engine.scalar), a), a)
    broken(lambda x: copy(x, engine=nisa.engine.scalar), a, rule="err_invalid_arguments")
    assert "NeuronCore-v4" in broken(lambda x: copy(x, priority=1), a, rule="err_invalid_arguments")
    np.testing.assert_array_equal(sim(lambda x: copy(x, priority=1), a, target="trn3"), a)

    def memset_tensor(x):
        o = new(x.shape, nl.float32)
        nisa.memset(dst=o, value=0.0, engine=nisa.engine.tensor)
        return hbm(o)
    broken(memset_tensor, a, rule="err_unsupported_engine")


def test_tensor_scalar_cumulative_rules():
    a = np.ones((4, 8), np.float32)

    def bitvec_op0(x):
        o = new(x.shape, nl.float32)
        nisa.tensor_scalar_cumulative(dst=o, src=sb(x), op0=nl.bitwise_and, op1=nl.add, imm0=1.0)
        return hbm(o)
    broken(bitvec_op0, a, rule="err_unsupported_op")

    def int_imm0(x, v):
        o = new(x.shape, nl.float32)
        nisa.tensor_scalar_cumulative(dst=o, src=sb(x), op0=nl.multiply, op1=nl.add, imm0=sb(v))
        return hbm(o)
    broken(int_imm0, a, np.ones((4, 1), np.int32), rule="err_unsupported_dtype")


def test_memset_of_packed_x4_words_names_the_only_legal_value():
    def k(a):
        o = new((4, 4), nl.float8_e4m3fn_x4)
        nisa.memset(dst=o, value=1.0)
        return hbm(sb(a))
    assert "only be memset to 0" in broken(k, np.ones((4, 4), np.float32), rule="err_memset_value_type")


# ------------------------------------------------------------------ tensor_scalar_reduce

def test_tensor_scalar_reduce_unary_op0_and_its_rules():
    x = rng.standard_normal((8, 6)).astype(np.float32)

    def k(a, op0=nl.abs, operand0=None, reduce_op=nl.add, **kw):
        d = new(a.shape, nl.float32)
        r = new((a.shape[0], 1), nl.float32)
        nisa.tensor_scalar_reduce(dst=d, data=sb(a), op0=op0, operand0=operand0, reduce_op=reduce_op, reduce_res=r,
                                  **kw)
        return hbm(r)
    np.testing.assert_allclose(sim(k, x).ravel(), np.abs(x).sum(axis=1), rtol=1e-6)
    # "The reduce_op can be any of nl.add, nl.multiply, nl.max or nl.min": a KernelError, not a TypeError
    broken(lambda a: k(a, nl.add, 1.0, nl.subtract), x, rule="err_unsupported_op")
    broken(lambda a: k(a, nl.bitwise_and, 1), x.astype(np.int32), rule="err_unsupported_op")
    broken(lambda a: k(a, nl.subtract, 1.0, reverse0=True), x, rule="err_invalid_arguments")


# ------------------------------------------------------------------ nc_matmul transpose mode

def _pe_transpose(dtype_psum):
    def k(x, eye):
        d = new((x.shape[1], x.shape[0]), dtype_psum, nl.psum)
        nisa.nc_matmul(dst=d, stationary=sb(x), moving=sb(eye), is_transpose=True)
        o = new(d.shape, dtype_psum)
        nisa.tensor_copy(dst=o, src=d)
        return hbm(o)
    return k


def test_transpose_mode_is_bit_accurate_from_neuroncore_v3():
    x = rng.standard_normal((16, 8)).astype(np.float32)
    x[3, 2], x[7, 5] = np.nan, np.inf
    eye = np.eye(16, dtype=np.float32)
    np.testing.assert_array_equal(sim(_pe_transpose(nl.float32), x, eye, target="trn2"), x.T)
    # NeuronCore-v2 has no transpose mode: the identity matmul spreads NaN/Inf along the output row (reference note)
    got = sim(_pe_transpose(nl.float32), x, eye, target="trn1")
    assert np.isnan(got[2]).all() and np.isfinite(got[0]).all()


def test_transpose_mode_writes_16_bit_psum_on_trn2():
    import ml_dtypes
    x = rng.standard_normal((8, 4)).astype(ml_dtypes.bfloat16)
    eye = np.eye(8).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(sim(_pe_transpose(nl.bfloat16), x, eye, target="trn2"), x.T)

    def plain(a, e):
        d = new((4, 8), nl.bfloat16, nl.psum)
        nisa.nc_matmul(dst=d, stationary=sb(a), moving=sb(e))
        return hbm(sb(a))
    broken(plain, x, eye, rule="err_unsupported_dtype")      # a plain matmul still writes fp32 PSUM on trn2


# ------------------------------------------------------------------ dma_compute

def test_dma_compute_runtime_index_out_of_range():
    table = np.arange(32 * 6, dtype=np.float32).reshape(32, 6)
    idx = np.array([[1], [40], [3], [5]], np.uint32)
    base = np.full((4, 6), 100.0, np.float32)

    def k(t, i, b, mode):
        d = sb(b)
        src = t.ap(pattern=[[6, 4], [1, 6]], vector_offset=sb(i), indirect_dim=0)
        nisa.dma_compute(dst=d, srcs=[src, d], reduce_op=nl.add, oob_mode=mode)
        return hbm(d)
    assert "40" in broken(lambda t, i, b: k(t, i, b, nisa.oob_mode.error), table, idx, base,
                          rule="err_tensor_access_out_of_bound")
    got = sim(lambda t, i, b: k(t, i, b, nisa.oob_mode.skip), table, idx, base)
    want = base + table[[1, 0, 3, 5]]
    want[1] = base[1]                                        # the skipped row keeps dst's values
    np.testing.assert_array_equal(got, want)


def test_a_numpy_array_inside_a_kernel_is_not_a_dma_source():
    const = np.ones((4, 6), np.float32)

    def k(a):
        d = new((4, 6), nl.float32)
        nisa.dma_compute(dst=d, srcs=[sb(a), const], reduce_op=nl.add)
        return hbm(d)
    assert "ndarray" in broken(k, const, rule="err_expected_tile")


# ------------------------------------------------------------------ more rules from the reference

def test_scan_and_scalar_tensor_tensor_rules():
    a = np.ones((4, 8), np.int32)

    def stt_bitvec(x):
        o = new(x.shape, nl.int32)
        nisa.scalar_tensor_tensor(dst=o, data=sb(x), op0=nl.bitwise_and, operand0=3, op1=nl.add, operand1=sb(x))
        return hbm(o)
    broken(stt_bitvec, a, rule="err_unsupported_op")

    def scan_psum(x):
        p0, p1 = new(x.shape, nl.float32, nl.psum), new(x.shape, nl.float32, nl.psum)
        nisa.tensor_copy(dst=p0, src=sb(x))
        nisa.tensor_copy(dst=p1, src=sb(x))
        o = new(x.shape, nl.float32)
        nisa.tensor_tensor_scan(dst=o, data0=p0, data1=p1, initial=0.0, op0=nl.multiply, op1=nl.add)
        return hbm(o)
    broken(scan_psum, a.astype(np.float32), rule="err_unsupported_memory")


def test_version_and_fp32_operand_rules():
    def nonzero(x):
        o = new((x.shape[0], x.shape[1] + 1), nl.int32)
        nisa.nonzero_with_count(dst=o, src=sb(x))
        return hbm(o)
    assert "NeuronCore-v3" in broken(nonzero, np.ones((16, 4), np.float32), target="trn1",
                                     rule="err_unsupported_instruction")

    def rand_bf16_min(x):
        o = new(x.shape, nl.float32)
        nisa.rand2(dst=o, min=sb(x[:, 0:1], nl.bfloat16), max=1.0)
        return hbm(o)
    broken(rand_bf16_min, np.zeros((4, 8), np.float32), target="trn3", rule="err_unsupported_dtype")

    def exp_bf16_max(x):
        o = new(x.shape, nl.float32)
        nisa.exponential(dst=o, src=sb(x), max_value=sb(x[:, 0:1], nl.bfloat16))
        return hbm(o)
    broken(exp_bf16_max, np.zeros((4, 8), np.float32), target="trn3", rule="err_unsupported_dtype")


def test_integer_all_reduce_is_exact_and_channels_are_limited():
    import trnsim.nki as nki
    import trnsim.nki.collectives as ncc

    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=src, src=x)
        ncc.all_reduce(srcs=[src], dsts=[out], replica_group=ncc.ReplicaGroup([[0, 1]]), op=nl.maximum)
        return out
    xs = [np.full((2, 3), 2 ** 30 + 7, np.int32), np.full((2, 3), 2 ** 30 + 8, np.int32)]
    for o in nki.simulate_ranks(nki.jit(kern), 2, [(x,) for x in xs]):
        np.testing.assert_array_equal(o, xs[1])            # float32 would give 2**30

    def ring(x):
        rg = ncc.ReplicaGroup([[0, 1], [2, 3]])
        outs = [nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm) for _ in range(3)]
        ncc.collective_permute_implicit(srcs_by_channel=[[x]] * 3, dsts_by_channel=[[o] for o in outs],
                                        replica_group=rg, channel_ids=[0, 1, 2])
        return outs[0]
    with pytest.raises(KernelError) as exc:
        nki.simulate_ranks(nki.jit(ring), 4, [(np.ones((2, 3), np.float32),)] * 4)
    assert exc.value.rule == "err_invalid_channel_ids" and "at most 2" in str(exc.value)


# ------------------------------------------------------------------ nc_matmul performance and tiling modes

def _fp8(x):
    from trnsim.nki import dtypes as dt
    return dt.cast(x, "float8_e4m3").astype(np.float64)


def test_double_row_contracts_over_partitions_and_the_first_free_dim():
    a = rng.standard_normal((128, 2, 8)).astype(np.float32)
    b = rng.standard_normal((128, 2, 16)).astype(np.float32)

    def k(x, y, dtype=nl.float8_e4m3):
        s, m = new(x.shape, dtype), new(y.shape, dtype)
        nisa.dma_copy(dst=s, src=x)
        nisa.dma_copy(dst=m, src=y)
        d = new((x.shape[2], y.shape[2]), nl.float32, nl.psum)
        nisa.nc_matmul(dst=d, stationary=s, moving=m, perf_mode=nisa.matmul_perf_mode.double_row)
        o = new(d.shape, nl.float32)
        nisa.tensor_copy(dst=o, src=d)
        return hbm(o)
    want = _fp8(a).reshape(256, 8).T @ _fp8(b).reshape(256, 16)
    np.testing.assert_allclose(sim(k, a, b), want, rtol=1e-5, atol=1e-5)
    assert "NeuronCore-v2" in broken(k, a, b, target="trn1", rule="err_unsupported_perf_mode")
    assert "float8" in broken(lambda x, y: k(x, y, nl.bfloat16), a, b, rule="err_unsupported_dtype")
    broken(k, a[:, :1], b[:, :1], rule="err_shape_mismatch")


def test_tiling_mode_rules():
    a = rng.standard_normal((64, 32)).astype(np.float32)
    b = rng.standard_normal((64, 16)).astype(np.float32)

    def k(x, y, **tiling):
        d = new((x.shape[1], y.shape[1]), nl.float32, nl.psum)
        nisa.nc_matmul(dst=d, stationary=sb(x), moving=sb(y), **tiling)
        o = new(d.shape, nl.float32)
        nisa.tensor_copy(dst=o, src=d)
        return hbm(o)
    np.testing.assert_allclose(sim(lambda x, y: k(x, y, tile_position=(64, 0), tile_size=(64, 128)), a, b), a.T @ b,
                               rtol=1e-5, atol=1e-5)
    broken(lambda x, y: k(x, y, tile_position=(64, 0)), a, b, rule="err_invalid_arguments")
    broken(lambda x, y: k(x, y, tile_position=(16, 0), tile_size=(32, 128)), a, b, rule="err_invalid_tile_position")
    broken(lambda x, y: k(x, y, tile_position=(0, 0), tile_size=(48, 128)), a, b, rule="err_invalid_tile_size")
    broken(lambda x, y: k(x, y, tile_position=(0, 0), tile_size=(32, 128)), a, b, rule="err_invalid_tile_size")
    broken(lambda x, y: k(x, y, tile_position=(0, 0), tile_size=(32, 128)), a[:32], b[:32], target="trn1",
           rule="err_invalid_tile_size")


# ------------------------------------------------------------------ activation valid input ranges

def test_activation_outside_its_valid_input_range_warns():
    import trnsim.nki as nki

    def act(op):
        def k(a):
            e = new(a.shape, nl.float32)
            nisa.activation(dst=e, op=op, data=sb(a))
            return hbm(e)
        return k
    with pytest.warns(nki.ActivationRangeWarning, match=r"sin: inputs span \[1, 9\].*27\.65"):
        got = sim(act(nl.sin), np.array([[9.0, 1.0]], np.float32))
    np.testing.assert_allclose(got, np.sin([[9.0, 1.0]]), rtol=1e-6)     # exact in the simulator, said so
    with pytest.warns(nki.ActivationRangeWarning, match="reciprocal"):
        sim(act(nl.reciprocal), np.array([[1e-15, 2.0]], np.float32))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", nki.ActivationRangeWarning)
        sim(act(nl.sin), np.array([[3.0, -3.0]], np.float32))          # inside [-pi, pi]: silent
        sim(act(nl.exp), np.array([[50.0, -50.0]], np.float32))        # exp: valid everywhere

        @nki.jit
        def lang_sin(x):
            o = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            nl.store(o, nl.sin(nl.load(x)))
            return o
        nki.simulate(lang_sin)(np.array([[9.0, 1.0]], np.float32))     # nl.sin range-reduces: silent


def test_dma_compute_read_modify_write_takes_dst_and_one_source():
    table = np.arange(32 * 6, dtype=np.float32).reshape(32, 6)
    idx = np.array([[1], [2], [3], [5]], np.uint32)
    base = np.ones((4, 6), np.float32)

    def three(t, i, b):
        d = sb(b)
        src = t.ap(pattern=[[6, 4], [1, 6]], vector_offset=sb(i), indirect_dim=0)
        nisa.dma_compute(dst=d, srcs=[src, d, sb(b)], reduce_op=nl.add)
        return hbm(d)
    broken(three, table, idx, base, rule="err_invalid_arguments")

    def not_dst(t, i, b):
        d = sb(b)
        src = t.ap(pattern=[[6, 4], [1, 6]], vector_offset=sb(i), indirect_dim=0)
        nisa.dma_compute(dst=d, srcs=[src, sb(b)], reduce_op=nl.add)
        return hbm(d)
    assert "none of them dst" in broken(not_dst, table, idx, base, rule="err_invalid_arguments")


def test_an_on_chip_slice_past_the_tile_end_is_out_of_bounds():
    x = rng.standard_normal((32, 24)).astype(np.float32)

    def read_past(a):
        t = sb(a)
        e = new((32, 10), nl.float32)
        nisa.activation(dst=e, op=nl.exp, data=t[:, 20:30])
        return hbm(e)
    assert "[20, 29]" in broken(read_past, x, rule="err_tensor_access_out_of_bound")

    def write_past(a):
        t = sb(a)
        o = new((32, 24), nl.float32)
        nisa.tensor_copy(dst=o[:, 20:30], src=t[:, 0:10])
        return hbm(o)
    broken(write_past, x, rule="err_tensor_access_out_of_bound")
