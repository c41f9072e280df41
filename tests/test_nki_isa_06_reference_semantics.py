"""nki.isa semantics and rules from the NKI 0.6 reference (nki/api/nki/isa, nki/api/nki.api.shared.rst) that a
review against the reference found missing: integer bit patterns, bit-accurate copies, the documented reduction
operators, unary ALU operators, scalar activation bias from NeuronCore-v3, the bn_stats even/odd layout, the
implicit flattening of nc_transpose, and rules that used to pass silently. Kernels are written for this file."""
import numpy as np
import pytest

import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
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
