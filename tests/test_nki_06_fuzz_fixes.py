"""Fixes for bugs a fuzzing run found in the NKI 0.6 instructions: integer data kept exact (iota, affine_select,
nl.gather_flattened, nl.where), required numeric operands given as None, float fills of integer tiles rounded like
the engine's output conversion, and the cmp_op / prob rules. Kernels are written for this file."""
import numpy as np
import pytest

import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from nki06_helpers import broken, hbm, new, sb, sim

BIG = np.array([[16777217, 16777219, 123456789, 2 ** 31 - 1, -2 ** 31, -16777217, -1, 0]], np.int32)


# ------------------------------------------------------------------ iota: 32-bit integer arithmetic

@pytest.mark.parametrize("offset,cm", [(16777217, 0), (2 ** 31 - 2, 0), (-2 ** 31 + 1, -3), (2 ** 30, 2 ** 30)])
def test_iota_into_32_bit_integer_tiles_is_exact_and_wraps_like_int32(offset, cm):
    def k(a, dtype):
        t = new((3, 4), dtype)
        nisa.iota(t, [[1, 4]], offset=offset, channel_multiplier=cm)
        return hbm(t)
    want = (offset + cm * np.arange(3, dtype=np.int64)[:, None] + np.arange(4, dtype=np.int64)[None, :]) % 2 ** 32
    x = np.zeros((1, 1), np.float32)
    np.testing.assert_array_equal(sim(lambda a: k(a, nl.uint32), x), want.astype(np.uint32))
    np.testing.assert_array_equal(sim(lambda a: k(a, nl.int32), x), want.astype(np.uint32).view(np.int32))
    # a float dst receives the int32 value converted to float32
    np.testing.assert_array_equal(sim(lambda a: k(a, nl.float32), x),
                                  want.astype(np.uint32).view(np.int32).astype(np.float32))


# ------------------------------------------------------------------ affine_select: same dtype is a bit copy

def test_affine_select_copies_same_dtype_elements_exactly():
    def k(a, dtype):
        d = new(a.shape, dtype)
        # affine value = i - 3: select on_true_tile where i >= 3, else on_false_value
        nisa.affine_select(d, [[1, a.shape[1]]], 0, sb(a), -5.0, cmp_op=nl.greater_equal, offset=-3)
        return hbm(d)
    keep = np.arange(BIG.shape[1]) >= 3
    np.testing.assert_array_equal(sim(lambda a: k(a, nl.int32), BIG), np.where(keep, BIG, -5))
    # a differing dtype goes through FP32
    np.testing.assert_array_equal(sim(lambda a: k(a, nl.float32), BIG),
                                  np.where(keep, BIG.astype(np.float32), np.float32(-5.0)))


def test_affine_select_cmp_op_must_be_a_comparison():
    def k(a):
        d = new(a.shape, nl.float32)
        nisa.affine_select(d, [[1, 4]], 0, sb(a), -1.0, cmp_op=nl.add)
        return hbm(d)
    msg = broken(k, np.zeros((1, 4), np.float32), rule="err_unsupported_op")
    assert "cmp_op=add" in msg and "nl.greater_equal" in msg


# ------------------------------------------------------------------ nl.gather_flattened / nl.where on integers

def test_gather_flattened_returns_exact_int32_values():
    idx = np.arange(BIG.shape[1] - 1, -1, -1, dtype=np.uint32).reshape(BIG.shape)

    def k(a, i):
        g = nl.gather_flattened(sb(a), sb(i))
        return hbm(g)
    np.testing.assert_array_equal(sim(k, BIG, idx), BIG[:, ::-1])


def test_where_selects_integer_tiles_exactly():
    cond = (np.arange(BIG.shape[1]) % 2).astype(np.float32).reshape(BIG.shape)
    other = BIG[:, ::-1].copy()

    def k(c, x, y):
        return hbm(nl.where(sb(c), sb(x), sb(y)))
    np.testing.assert_array_equal(sim(k, cond, BIG, other), np.where(cond != 0, BIG, other))

    def with_scalar(c, x):
        return hbm(nl.where(sb(c), sb(x), 2 ** 30 + 1))
    np.testing.assert_array_equal(sim(with_scalar, cond, BIG), np.where(cond != 0, BIG, 2 ** 30 + 1))


# ------------------------------------------------------------------ None for a required numeric operand

def _ts(x):
    nisa.tensor_scalar(dst=new(x.shape, nl.float32), data=x, op0=nl.add, operand0=None)


def _ts_op1(x):
    nisa.tensor_scalar(dst=new(x.shape, nl.float32), data=x, op0=nl.add, operand0=1.0, op1=nl.multiply,
                       operand1=None)


def _cumulative(x):
    nisa.tensor_scalar_cumulative(dst=new(x.shape, nl.float32), src=x, op0=nl.add, op1=nl.add, imm0=None)


def _scan(x):
    nisa.tensor_tensor_scan(dst=new(x.shape, nl.float32), data0=x, data1=x, initial=None, op0=nl.multiply,
                            op1=nl.add)


def _stt(x):
    nisa.scalar_tensor_tensor(dst=new(x.shape, nl.float32), data=x, op0=nl.add, operand0=None, op1=nl.add,
                              operand1=x)


def _tsr(x):
    nisa.tensor_scalar_reduce(dst=new(x.shape, nl.float32), data=x, op0=nl.add, operand0=None, reduce_op=nl.add,
                              reduce_res=new((x.shape[0], 1), nl.float32))


def _select_reduce(x):
    p = new(x.shape, nl.uint8)
    nisa.memset(dst=p, value=1)
    nisa.select_reduce(dst=new(x.shape, nl.float32), predicate=p, on_true=x, on_false=None)


def _exponential(x):
    nisa.exponential(dst=new(x.shape, nl.float32), src=x, max_value=None)


def _prelu(x):
    nisa.activate2(dst=new(x.shape, nl.float32), op=nl.prelu, data=x, imm0=None, imm1=None, op0=nl.bypass,
                   op1=nl.bypass, relu_param=None)


@pytest.mark.parametrize("call,arg", [(_ts, "operand0"), (_ts_op1, "operand1"), (_cumulative, "imm0"),
                                      (_scan, "initial"), (_stt, "operand0"), (_tsr, "operand0"),
                                      (_select_reduce, "on_false"), (_exponential, "max_value"),
                                      (_prelu, "relu_param")])
def test_none_for_a_required_operand_is_an_operand_type_error(call, arg):
    def k(a):
        x = sb(a)
        call(x)
        return hbm(x)
    msg = broken(k, np.ones((2, 4), np.float32), rule="err_operand_type", target="trn3")
    assert f"'{arg}'" in msg and "None" in msg


def test_none_for_an_unused_operand_is_still_accepted():
    x = np.array([[-1.5, 2.0, -3.0, 4.0]], np.float32)

    def k(a):
        d = new(a.shape, nl.float32)
        nisa.tensor_scalar(dst=d, data=sb(a), op0=nl.abs, operand0=None)
        e = new(a.shape, nl.float32)
        nisa.activation(dst=e, op=nl.copy, data=d, bias=None)
        f = new(a.shape, nl.float32)      # relu_param is only the slope of prelu
        nisa.activate2(dst=f, op=nl.copy, data=e, imm0=None, imm1=None, op0=nl.bypass, op1=nl.bypass,
                       relu_param=None)
        return hbm(f)
    np.testing.assert_array_equal(sim(k, x, target="trn3"), np.abs(x))


def test_dropout_prob_none_is_an_operand_type_error():
    def k(a, prob):
        d = new(a.shape, nl.float32)
        nisa.dropout(dst=d, data=sb(a), prob=prob)
        return hbm(d)
    x = np.ones((2, 4), np.float32)
    assert "'prob'" in broken(lambda a: k(a, None), x, rule="err_operand_type")
    broken(lambda a: k(a, "0.5"), x, rule="err_operand_type")


# ------------------------------------------------------------------ float fills of integer tiles

@pytest.mark.parametrize("value", [-3.7, 3.7, 2.5, -2.5, 3.5, 0.5, -0.5, 126.6])
def test_float_fill_of_an_integer_tile_rounds_to_nearest_even(value):
    def k(a):
        f = nl.full((1, 2), value, dtype=nl.int8)
        t = new((1, 2), nl.int32)
        t[...] = value
        return hbm(f), hbm(t)
    f, t = sim(k, np.zeros((1, 1), np.float32))
    np.testing.assert_array_equal(f, np.full((1, 2), np.rint(value), np.int8))
    np.testing.assert_array_equal(t, np.full((1, 2), np.rint(value), np.int32))


def test_a_float_fill_in_range_after_rounding_is_accepted_and_integer_fills_stay_exact():
    def k(a):
        lo = nl.full((1, 1), -128.4, dtype=nl.int8)          # rounds to -128: in range
        big = nl.full((1, 1), 16777217, dtype=nl.int32)
        top = nl.full((1, 1), 2 ** 32 - 1, dtype=nl.uint32)
        return hbm(lo), hbm(big), hbm(top)
    lo, big, top = sim(k, np.zeros((1, 1), np.float32))
    assert lo.item() == -128 and big.item() == 16777217 and top.item() == 2 ** 32 - 1

    def over(a):
        return hbm(nl.full((1, 1), 127.5, dtype=nl.int8))      # rounds to 128: outside int8
    broken(over, np.zeros((1, 1), np.float32), rule="err_memset_value_out_of_range")


# ------------------------------------------------------------------ partition access is contiguous (nki-aps.rst)

@pytest.mark.parametrize("view", [lambda t: t[0:16:2, :], lambda t: t[::-1, :], lambda t: t.slice(0, 0, 16, 2),
                                  lambda t: t.permute((0, 1))[0:16:2]])
def test_a_strided_partition_slice_is_an_invalid_access_pattern(view):
    """On SBUF / PSUM an access reads its partitions contiguously, in order; a step on the partition dimension is
    refused as the same pattern through .ap() already was (free-dimension steps stay legal)."""
    def k(a):
        v = view(sb(a))
        d = new(v.shape, a.dtype)
        nisa.tensor_copy(dst=d, src=v)
        return hbm(d)
    msg = broken(k, np.arange(64, dtype=np.float32).reshape(16, 4), rule="err_invalid_access_pattern")
    assert "partition dimension" in msg

    def ok(a):
        v = sb(a)[0:16, 0:4:2]
        d = new(v.shape, a.dtype)
        nisa.tensor_copy(dst=d, src=v)
        return hbm(d)
    x = np.arange(64, dtype=np.float32).reshape(16, 4)
    np.testing.assert_array_equal(sim(ok, x), x[:, ::2])


def test_tensor_indirection_is_refused_with_the_simulated_alternatives():
    """NkiTensor.indirect exists (a documented NKI 0.6 name) but is not simulated: a clear KernelError, not an
    AttributeError and not a guessed answer."""
    def k(a):
        t = sb(a)
        idx = new((32, 1), nl.int32)
        nisa.iota(idx, [[1, 1]], 0, 0)
        v = t.indirect(idx)
        d = new(v.shape, a.dtype)
        nisa.tensor_copy(dst=d, src=v)
        return hbm(d)
    msg = broken(k, np.zeros((32, 8), np.float32), rule="err_unsupported_feature", target="trn3")
    assert "vector_select" in msg


def test_gather_flattened_into_a_narrower_integer_type_saturates():
    """Integer data gathered into a different integer dtype converts like the engines' output (nl.copy): it
    saturates at the destination's range, never wraps."""
    a = np.array([[300, -300, 200, 5]], np.int32)
    idx = np.arange(4, dtype=np.uint32).reshape(1, 4)
    for dtype, want in ((nl.int8, [[127, -128, 127, 5]]), (nl.uint32, [[300, 0, 200, 5]]),
                        (nl.int32, [[300, -300, 200, 5]])):
        got = sim(lambda x, i: hbm(nl.gather_flattened(sb(x), sb(i), dtype=dtype)), a, idx)
        np.testing.assert_array_equal(got, np.array(want))


def test_an_empty_slice_of_a_permuted_view_and_a_zero_step_ds():
    def k(x):
        v = x.permute((1, 0))[2:2, :]
        assert v.shape == (0, 64)
        return hbm(sb(x))
    x = np.zeros((64, 128), np.float32)
    np.testing.assert_array_equal(sim(k, x), x)

    def zero_step(x):
        x[:, nl.ds(0, 4, 0)]
        return hbm(sb(x))
    assert "step cannot be 0" in broken(zero_step, x, rule="err_invalid_slice")
