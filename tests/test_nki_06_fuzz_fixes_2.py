"""Second fuzz round against the NKI 0.6 reference (nki/api/nki/isa/__init__.py, nki/api/nki/language/__init__.py,
nki.api.shared.rst): each test was a silent wrong answer or a missing rule before its fix."""
import warnings

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl

from nki06_helpers import broken, hbm as _hbm, sb as _sb, sim as _sim


def test_int32_tensor_tensor_on_gpsimd_is_exact_integer_arithmetic():
    a = np.array([[16777217, 123456789]], np.int32)
    b = np.array([[1, 987654321]], np.int32)
    for engine in (None, nisa.engine.gpsimd):
        def k(x, y):
            d = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
            kw = {} if engine is None else {"engine": engine}
            nisa.tensor_tensor(dst=d, data1=_sb(x), data2=_sb(y), op=nl.add, **kw)
            return _hbm(d)
        np.testing.assert_array_equal(_sim(k, a, b), a.astype(np.int64) + b)   # was 16777216, 1111111168


@pytest.mark.parametrize("case", ["tensor_tensor gpsimd", "tensor_tensor power", "tensor_scalar gpsimd",
                                  "memset gpsimd"])
def test_gpsimd_cannot_touch_psum(case):
    x = np.full((2, 4), 2.0, np.float32)

    def k(a):
        p = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.psum)
        d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        if case == "tensor_tensor gpsimd":
            nisa.tensor_copy(dst=p, src=_sb(a))
            nisa.tensor_tensor(dst=d, data1=p, data2=_sb(a), op=nl.add, engine=nisa.engine.gpsimd)
        elif case == "tensor_tensor power":
            nisa.tensor_copy(dst=p, src=_sb(a))
            nisa.tensor_tensor(dst=d, data1=p, data2=_sb(a), op=nl.power)
        elif case == "tensor_scalar gpsimd":
            nisa.tensor_scalar(dst=p, data=_sb(a), op0=nl.rsqrt, operand0=None, engine=nisa.engine.gpsimd)
        else:
            nisa.memset(dst=p, value=0.0, engine=nisa.engine.gpsimd)
        nisa.tensor_copy(dst=d, src=p)
        return _hbm(d)
    msg = broken(k, x, rule="err_unsupported_memory")
    assert "GpSimd" in msg and "PSUM" in msg


def test_power_on_sbuf_runs_on_gpsimd():
    x = np.full((2, 4), 3.0, np.float32)

    def k(a):
        d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=d, data1=_sb(a), data2=_sb(a), op=nl.power)
        return _hbm(d)
    np.testing.assert_allclose(_sim(k, x), 27.0)
    _, trace = nki.trace_kernel(nki.jit(k, target="trn2"), x)
    assert [i.engine for i in trace.instructions if i.opcode == "tensor_tensor"] == ["gpsimd"]


def test_bitvec_results_keep_the_low_bits_of_a_narrower_destination():
    xs8 = np.array([[-1, -128, 5]], np.int8)

    def k8(a):
        d = nl.ndarray(a.shape, dtype=nl.uint8, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=d, data=_sb(a), op0=nl.bitwise_and, operand0=255)
        return _hbm(d)
    np.testing.assert_array_equal(_sim(k8, xs8), xs8.view(np.uint8))        # was 0, 0, 5 (saturated)
    x32 = np.array([[0x12345678, 0x00018000]], np.int32)

    def k16(a):
        d = nl.ndarray(a.shape, dtype=nl.int16, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=d, data1=_sb(a), data2=_sb(a), op=nl.bitwise_or)
        return _hbm(d)
    np.testing.assert_array_equal(_sim(k16, x32), x32.astype(np.int16))     # was 32767, 32767

    def kr(a):
        d = nl.ndarray((1, 1), dtype=nl.int16, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=d, op=nl.bitwise_or, data=_sb(a), axis=1)
        return _hbm(d)
    assert int(_sim(kr, x32)[0, 0]) == int(np.array(0x12345678 | 0x00018000, np.int32).astype(np.int16))


def test_negate_with_a_bitvec_reduction_is_refused():
    x = np.array([[1, 2, 4]], np.int32)

    def k(a):
        d = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=d, op=nl.bitwise_or, data=_sb(a), axis=1, negate=True)
        return _hbm(d)
    assert "negate" in broken(k, x, rule="err_invalid_arguments")


def _fp8_matmul(a, b):
    p = nl.ndarray((16, 8), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=_sb(a), moving=_sb(b))
    d = nl.ndarray((16, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=d, src=p)
    return _hbm(d)


@pytest.mark.parametrize("target, s_dtype, m_dtype, rule", [
    ("trn2", "float8_e4m3fn", "float8_e4m3fn", "err_unsupported_dtype"),
    ("trn1", "float8_e4m3fn", "bfloat16", "err_unsupported_dtype"),
    ("trn3", "float8_e4m3", "float8_e4m3fn", "err_matmul_dtype_mismatch")])
def test_fp8_e4m3fn_matmul_rules(target, s_dtype, m_dtype, rule):
    import ml_dtypes
    s = np.ones((128, 16), getattr(ml_dtypes, s_dtype))
    m = np.ones((128, 8), getattr(ml_dtypes, m_dtype))
    broken(_fp8_matmul, s, m, rule=rule, target=target)


def test_fp8_e4m3fn_matmul_runs_on_trn3():
    import ml_dtypes
    s = np.ones((128, 16), ml_dtypes.float8_e4m3fn)
    m = np.ones((128, 8), ml_dtypes.float8_e4m3fn)
    np.testing.assert_allclose(_sim(_fp8_matmul, s, m, target="trn3"), 128.0)


def test_nc_transpose_on_the_nc_v2_tensor_engine_is_a_matmul_with_the_identity():
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    x[1, 2] = np.nan

    def k(a):
        p = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_transpose(dst=p, data=_sb(a), engine=nisa.engine.tensor)
        d = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=d, src=p)
        return _hbm(d)
    got = _sim(k, x, target="trn1")
    assert np.isnan(got[2]).all() and np.isfinite(np.delete(got, 2, axis=0)).all()   # column 2 of x -> row 2
    exact = _sim(k, x, target="trn2")                                  # bit-accurate from NeuronCore-v3
    np.testing.assert_array_equal(np.isnan(exact), np.isnan(x.T))


def test_empty_like_defaults_to_the_buffer_of_its_argument():
    x = np.ones((4, 6), np.float32)

    def k(a):
        out = nl.empty_like(a)                                         # HBM like a: returnable
        nisa.dma_copy(dst=out, src=_sb(a))
        t = nl.empty_like(_sb(a))
        assert t.buffer == "sbuf"
        return out
    np.testing.assert_array_equal(_sim(k, x), x)


def test_reciprocal_activation_takes_no_bias_on_nc_v2():
    x = np.full((4, 8), 2.0, np.float32)
    bias = np.ones((4, 1), np.float32)

    def k(a, b):
        d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=d, op=nl.reciprocal, data=_sb(a), bias=_sb(b))
        return _hbm(d)
    broken(k, x, bias, rule="err_activation_bias_invalid_type", target="trn1")
    np.testing.assert_allclose(_sim(k, x, bias, target="trn2"), 1 / 3, rtol=1e-6)


def test_activation_reduce_res_with_the_default_idle_command_reads_the_accumulator():
    """reduce_cmd=idle leaves the accumulator alone and reduce_res = reduce_regs (nki.isa.activation pseudo-code)."""
    x = np.arange(32, dtype=np.float32).reshape(4, 8) / 8

    def unset(a):
        d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((4, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=d, op=nl.exp, data=_sb(a), reduce_op=nl.add, reduce_res=r)
        return _hbm(r)
    assert "reset_reduce" in broken(unset, x, rule="err_accumulator_uninitialized")

    def stale(a):
        d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        r1 = nl.ndarray((4, 1), dtype=nl.float32, buffer=nl.sbuf)
        r2 = nl.ndarray((4, 1), dtype=nl.float32, buffer=nl.sbuf)
        t = _sb(a)
        nisa.activation(dst=d, op=nl.copy, data=t, reduce_op=nl.add, reduce_res=r1,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nisa.activation(dst=d, op=nl.exp, data=t, reduce_op=nl.add, reduce_res=r2)   # idle: r2 = r1's sums
        out = nl.ndarray((4, 2), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out[:, 0:1], src=r1)
        nisa.dma_copy(dst=out[:, 1:2], src=r2)
        return out
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = _sim(stale, x)
    assert any(issubclass(x_.category, nki.AccumulatorIdleWarning) for x_ in w)
    np.testing.assert_allclose(got[:, 0], x.sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(got[:, 1], got[:, 0])                   # not the exp sums

    def reduce_(a):
        d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((4, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=d, op=nl.exp, data=_sb(a), reduce_op=nl.add, reduce_res=r)
        return _hbm(r)
    np.testing.assert_allclose(_sim(reduce_, x)[:, 0], np.exp(x).sum(axis=1), rtol=1e-5)


def test_idle_read_out_of_more_lanes_than_were_set_is_refused():
    x = np.ones((128, 8), np.float32)

    def k(a):
        t = _sb(a)
        d = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        r4 = nl.ndarray((4, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=d[0:4, :], op=nl.copy, data=t[0:4, :], reduce_op=nl.add, reduce_res=r4,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        r = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=d, op=nl.copy, data=t, reduce_res=r)      # idle: reads 128 lanes, 4 were set
        return _hbm(r)
    assert "only 4 were set" in broken(k, x, rule="err_accumulator_uninitialized")
