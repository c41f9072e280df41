"""Third fuzz of nki.isa against the NKI 0.6 reference (docstrings of nki/api/nki/isa/__init__.py): each confirmed
problem as a test (numpy reference, or the rule a wrong call must raise)."""
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from nki06_helpers import broken, hbm, sb, sim
from trnsim.nki import KernelError


def test_hardware_dge_transpose_needs_neuroncore_v3():
    def k(a):
        d = nl.ndarray((8, 16), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=d, src=a, dge_mode=nisa.dge_mode.hwdge)
        return hbm(d)
    import ml_dtypes
    a = np.arange(128, dtype=np.float32).reshape(16, 8).astype(ml_dtypes.bfloat16)
    broken(k, a, rule="err_unsupported_dge_mode", target="trn1")
    np.testing.assert_array_equal(sim(k, a, target="trn2"), a.T)


def test_sequence_bounds_compares_int32_ids_exactly():
    def k(a):
        d = nl.ndarray((1, 2, a.shape[1]), dtype=nl.int32, buffer=nl.sbuf)
        nisa.sequence_bounds(dst=d, segment_ids=sb(a))
        return hbm(d)
    ids = np.array([[16777216, 16777217, 16777217, 0, 5]], np.int32)
    np.testing.assert_array_equal(sim(k, ids), [[[0, 1, 1, 5, 4], [1, 3, 3, -1, 5]]])


def _range_select(cmd, on_false=float(np.finfo(np.float32).min)):
    def k(a, b0, b1):
        d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.range_select(dst=d, on_true_tile=sb(a), comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=sb(b0),
                          bound1=sb(b1), reduce_cmd=cmd, reduce_res=r, on_false_value=on_false)
        return hbm(r)
    return k


def test_range_select_has_nothing_to_load_into_the_accumulator():
    x = -1 - np.arange(32, dtype=np.float32).reshape(4, 8)
    b0, b1 = np.zeros((4, 1), np.float32), np.full((4, 1), 8, np.float32)
    np.testing.assert_array_equal(sim(_range_select(nisa.reduce_cmd.reset_reduce), x, b0, b1).ravel(), x.max(axis=1))
    broken(_range_select(nisa.reduce_cmd.load_reduce), x, b0, b1, rule="err_invalid_arguments")
    broken(_range_select(nisa.reduce_cmd.reset_reduce, on_false=None), x, b0, b1, rule="err_invalid_on_false_value")


def _exchange(shape_differs: bool):
    def k(a):
        me = nl.program_id(0)
        dt = nl.float32 if me == 0 else nl.bfloat16
        P = 64 if shape_differs and me == 1 else 32
        t = nl.ndarray((P, 64), dtype=nl.float32 if shape_differs else dt, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[0:P, :])
        d = nl.ndarray((P, 64), dtype=t.dtype, buffer=nl.sbuf)
        nisa.sendrecv(src=t, dst=d, send_to_rank=1 - me, recv_from_rank=1 - me, pipe_id=0)
        o = nl.ndarray((32, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        if me == 0:
            nisa.dma_copy(dst=o, src=d[0:32, :])
        return o
    return k


@pytest.mark.parametrize("shape_differs, rule", [(False, "err_dtype_mismatch"), (True, "err_shape_mismatch")])
def test_sendrecv_partners_must_agree_on_shape_and_dtype(shape_differs, rule):
    x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    with pytest.raises(KernelError) as exc:
        nki.simulate(nki.jit(_exchange(shape_differs), target="trn2")[2])(x)
    assert exc.value.rule == rule and "both sides" in str(exc.value)


def test_register_load_refuses_a_non_finite_value():
    def k(a):
        t = sb(a)
        r = nisa.register_alloc()
        nisa.register_load(r, t)
        o = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.register_store(o, r)
        return hbm(o)
    broken(k, np.array([[np.nan]], np.float32), rule="err_invalid_value")
    np.testing.assert_array_equal(sim(k, np.array([[7.9]], np.float32)), [[7]])


@pytest.mark.parametrize("what", ["dma_compute_scales", "topk_n", "barrier_cores", "barrier_data", "barrier_private"])
def test_wrong_argument_types_are_kernel_errors(what):
    def k(a):
        t = sb(a)
        if what == "dma_compute_scales":
            nisa.dma_compute(dst=nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.sbuf), srcs=[t], reduce_op=nl.add,
                             scales=1.0)
        elif what == "topk_n":
            nisa.topk(val_dst=nl.ndarray((32, 8), dtype=nl.bfloat16, buffer=nl.sbuf),
                      idx_dst=nl.ndarray((32, 8), dtype=nl.uint32, buffer=nl.sbuf),
                      src=nl.ndarray((32, 4), dtype=nl.bfloat16, buffer=nl.sbuf), n=None)
        elif what == "barrier_cores":
            nisa.core_barrier(data=a, cores=0)
        elif what == "barrier_data":
            nisa.core_barrier(data=3, cores=(0, 1))
        else:
            priv = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.hbm)
            nisa.dma_copy(dst=priv, src=t)
            nisa.core_barrier(data=priv, cores=(0, 1))
        return hbm(t)
    launch = nki.jit(k, target="trn2")[2 if what.startswith("barrier") else 1]
    with pytest.raises(KernelError) as exc:
        nki.simulate(launch)(np.zeros((32, 16), np.float32))
    assert exc.value.rule in ("err_invalid_arguments", "err_expected_tile", "err_unsupported_memory")
    assert exc.value.fix


def test_tensor_tensor_scan_runs_over_every_free_element_of_a_partition():
    def k(a, b):
        d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor_scan(dst=d, data0=sb(a), data1=sb(b), initial=0.5, op0=nl.multiply, op1=nl.add)
        return hbm(d)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((4, 2, 3)).astype(np.float32), rng.standard_normal((4, 2, 3)).astype(np.float32)
    x, y = a.reshape(4, 6), b.reshape(4, 6)
    r, want = np.full(4, 0.5, np.float32), np.empty((4, 6), np.float32)
    for i in range(6):
        r = x[:, i] * r + y[:, i]
        want[:, i] = r
    np.testing.assert_allclose(sim(k, a, b), want.reshape(4, 2, 3), rtol=1e-6)


def test_iota_offset_and_multiplier_are_int32():
    def k():
        d = nl.ndarray((2, 4), dtype=nl.int32, buffer=nl.sbuf)
        nisa.iota(dst=d, pattern=[[1, 4]], offset=2 ** 33 + 5, channel_multiplier=1)
        return hbm(d)
    broken(k, rule="err_invalid_arguments")


def test_fp8_formats_without_zero_or_inf_say_nan():
    def e8m0(value):
        def k():
            s = nl.ndarray((4, 4), dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
            nisa.memset(dst=s, value=value)
            return hbm(s)
        return k
    broken(e8m0(0.0), rule="err_memset_value_out_of_range", target="trn3")
    with pytest.raises(KernelError) as exc:
        sim(e8m0(0.0), target="trn3")
    assert "stored as NaN" in str(exc.value) and "powers of two" in exc.value.fix

    def e4m3fn():
        s = nl.ndarray((4, 4), dtype=nl.float8_e4m3fn, buffer=nl.sbuf)
        nisa.memset(dst=s, value=1e6)
        return hbm(s)
    with pytest.raises(KernelError) as exc:
        sim(e4m3fn, target="trn3")
    assert "no inf" in str(exc.value)


def test_the_bit_operation_hint_names_a_method_that_exists():
    def k(a):
        t = sb(a)
        nisa.tensor_tensor(dst=t, data1=t, data2=t, op=nl.bitwise_and)
        return hbm(t)
    with pytest.raises(KernelError) as exc:
        sim(k, np.ones((4, 4), np.float32))
    assert ".view(nl.int32)" in exc.value.fix

    def viewed(a):
        t = sb(a)
        v = t.view(nl.int32)
        o = nl.ndarray((4, 4), dtype=nl.int32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=v)
        return o
    np.testing.assert_array_equal(sim(viewed, np.ones((4, 4), np.float32)), np.ones((4, 4), np.float32).view(np.int32))
