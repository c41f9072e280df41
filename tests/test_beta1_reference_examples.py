"""The Beta 1 forms that the NKI reference's own example tests (aws-neuron-sdk ``nki/test``, run by
``tests/run_sdk_example_tests.py``) rely on, written here as our own kernels, plus the NKI 0.6 rules that changed with
them. Each is checked against numpy, and the refusals name their rule."""
import ml_dtypes
import numpy as np
import pytest

import trnsim.neuronxcc.nki as bnki
import trnsim.neuronxcc.nki.compiler as bncc
import trnsim.neuronxcc.nki.isa as bnisa
import trnsim.neuronxcc.nki.language as bnl
import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.neuronxcc.nki.isa.constants import dge_mode, oob_mode
from trnsim.nki import KernelError

rng = np.random.default_rng(7)


# ----------------------------------------------------------------------------- indirect rows: hbm[idx_tile, i_f]

def _gather(step, mode, fill=-1.0):
    @bnki.jit
    def k(table):
        n, m = table.shape
        out = bnl.ndarray((32, m), dtype=table.dtype, buffer=bnl.shared_hbm)
        i_f = bnl.arange(m)[None, :]
        idx = bnisa.iota(step * bnl.arange(32)[:, None], dtype=np.int32)
        got = bnisa.memset(shape=(32, m), value=fill, dtype=table.dtype)
        bnisa.dma_copy(dst=got, src=table[idx, i_f], oob_mode=mode)
        bnl.store(out, value=got)
        return out
    return k


def test_an_index_tile_selects_the_rows_of_an_hbm_tensor():
    table = rng.standard_normal((100, 48)).astype(np.float32)
    np.testing.assert_array_equal(_gather(3, oob_mode.error)(table), table[3 * np.arange(32)])


def test_out_of_range_rows_are_skipped_with_oob_mode_skip_and_refused_by_default():
    table = rng.standard_normal((64, 16)).astype(np.float32)
    got = _gather(3, oob_mode.skip)(table)
    rows = 3 * np.arange(32)
    keep = rows < 64
    np.testing.assert_array_equal(got[keep], table[rows[keep]])
    assert np.all(got[~keep] == -1.0)
    with pytest.raises(KernelError, match="err_tensor_access_out_of_bound") as exc:
        _gather(3, oob_mode.error)(table)
    assert "partition 22 of the index tile holds 66" in str(exc.value)


def test_an_indirect_store_with_dst_rmw_op_adds_into_the_selected_rows():
    @bnki.jit
    def k(vals):
        out = bnl.ndarray((64, 8), dtype=vals.dtype, buffer=bnl.shared_hbm)
        ones = bnisa.memset(shape=(64, 8), value=1.0, dtype=vals.dtype)
        bnl.store(out, value=ones)
        v = bnl.load(vals)
        idx = bnisa.iota(2 * bnl.arange(32)[:, None], dtype=np.int32)
        bnisa.dma_copy(dst=out[idx, bnl.arange(8)[None, :]], src=v, dst_rmw_op=np.add)
        return out
    vals = rng.standard_normal((32, 8)).astype(np.float32)
    want = np.ones((64, 8), np.float32)
    want[2 * np.arange(32)] += vals
    np.testing.assert_allclose(k(vals), want, rtol=1e-6)


def test_an_index_tile_must_be_an_sbuf_integer_column():
    @bnki.jit
    def k(table):
        out = bnl.ndarray((32, 16), dtype=table.dtype, buffer=bnl.shared_hbm)
        idx = bnisa.memset(shape=(32, 2), value=0, dtype=np.int32)
        bnl.store(out, value=bnl.load(table[idx, bnl.arange(16)[None, :]]))
        return out
    with pytest.raises(KernelError, match="err_invalid_index") as exc:
        k(np.zeros((64, 16), np.float32))
    assert "[P, 1]" in str(exc.value)


# ----------------------------------------------------------------------------- value-returning instructions

def test_dst_first_instructions_return_their_result_under_beta1():
    @bnki.jit(target="trn2")
    def k(a):
        t = bnl.load(a)
        top = bnisa.max8(src=t)                    # NKI 0.6: nisa.max8(dst=..., src=...)
        same = bnisa.dropout(t, prob=0.0)          # NKI 0.6: nisa.dropout(dst, data, prob)
        tr = bnisa.dma_transpose(a[0:32, 0:64])    # NKI 0.6: nisa.dma_transpose(dst, src)
        o1 = bnl.ndarray((32, 8), dtype=a.dtype, buffer=bnl.shared_hbm)
        o2 = bnl.ndarray((32, 64), dtype=a.dtype, buffer=bnl.shared_hbm)
        o3 = bnl.ndarray((64, 32), dtype=a.dtype, buffer=bnl.shared_hbm)
        bnl.store(o1, value=top)
        bnl.store(o2, value=same)
        bnl.store(o3, value=tr)
        return o1, o2, o3
    a = rng.standard_normal((32, 64)).astype(np.float32)
    top, same, tr = k(a)
    np.testing.assert_array_equal(top, -np.sort(-a, axis=1)[:, :8])
    np.testing.assert_array_equal(same, a)
    np.testing.assert_array_equal(tr, a.T)


def test_beta1_double_row_matmul_takes_its_perf_mode_string():
    @bnki.jit(target="trn2")
    def k(a, b, mode):
        out = bnl.ndarray((a.shape[2], b.shape[2]), dtype=bnl.float32, buffer=bnl.shared_hbm)
        bnl.store(out, value=bnisa.nc_matmul(bnl.load(a), bnl.load(b), perf_mode=mode))
        return out
    a = rng.standard_normal((128, 2, 16)).astype(ml_dtypes.float8_e5m2)
    b = rng.standard_normal((128, 2, 64)).astype(ml_dtypes.float8_e5m2)
    want = np.einsum("kli,klj->ij", a.astype(np.float32), b.astype(np.float32))
    np.testing.assert_allclose(k(a, b, "double_row_gen3"), want, rtol=1e-5, atol=1e-4)
    with pytest.raises(KernelError, match="err_unsupported_perf_mode"):
        k(a, b, "quad_row")


# ----------------------------------------------------------------------------- Beta 1 names

def test_beta1_language_names_fp32_rand_trace_and_isa_constants():
    assert bnl.fp32.min == float(np.finfo(np.float32).min) and bnl.fp32.max == float(np.finfo(np.float32).max)
    assert dge_mode is nisa.dge_mode and bnisa.constants.oob_mode is nisa.oob_mode

    @bnki.trace
    def k(out):
        r = bnl.rand((16, 32))                     # Beta 1: dtype defaults to float32
        bnl.store(out, value=r)
    out = np.zeros((16, 32), np.float32)
    bnki.simulate_kernel(k, out)
    assert np.all((out >= 0) & (out < 1)) and out.std() > 0.1


def test_beta1_shared_identity_matrix_lives_in_hbm():
    @bnki.jit
    def k():
        eye = bnl.shared_identity_matrix(n=64, dtype=bnl.bfloat16)
        out = bnl.ndarray((64, 64), dtype=bnl.float32, buffer=bnl.shared_hbm)
        bnl.store(out, value=bnl.load(eye, dtype=bnl.float32))
        return out
    np.testing.assert_array_equal(k(), np.eye(64, dtype=np.float32))


def test_beta1_store_of_a_number_fills_the_hbm_tensor_and_nki06_asks_for_a_tile():
    @bnki.jit
    def k(a):
        out = bnl.ndarray(a.shape, dtype=a.dtype, buffer=bnl.shared_hbm)
        bnl.store(out, 7)
        return out
    np.testing.assert_array_equal(k(np.zeros((8, 16), np.float32)), np.full((8, 16), 7, np.float32))
    np.testing.assert_array_equal(k(np.zeros((300, 16), np.float32)), np.full((300, 16), 7, np.float32))

    @nki.jit
    def k06(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, 7)
        return out
    with pytest.raises(KernelError, match="err_expected_tile") as exc:
        nki.simulate(k06)(np.zeros((8, 16), np.float32))
    assert "nl.full" in exc.value.fix


def test_beta1_integer_indices_write_one_element():
    @bnki.jit
    def k():
        t = bnl.zeros((4, 6), dtype=bnl.int32)
        for i in bnl.static_range(4):
            t[i, 2] = i + 10
        out = bnl.ndarray((4, 6), dtype=bnl.int32, buffer=bnl.shared_hbm)
        bnl.store(out, value=t)
        return out
    want = np.zeros((4, 6), np.int32)
    want[:, 2] = np.arange(4) + 10
    np.testing.assert_array_equal(k(), want)


# ----------------------------------------------------------------------------- allocation callbacks

def _placements(kernel, *arrays):
    _, trace = bnki.trace_kernel(kernel, *arrays)
    return [a.placement for a in trace.allocations if getattr(a, "placement", None)]


def test_allocation_callbacks_place_every_block():
    def rotate(base, n):
        def place(idx, partitions, bytes_per_partition):
            return 0, base + (idx[0] % n) * bytes_per_partition
        return place

    @bnki.jit
    def k(a):
        out = bnl.ndarray(a.shape, dtype=a.dtype, buffer=bnl.shared_hbm)
        t = bnl.ndarray((4, bnl.par_dim(128), 64), dtype=a.dtype, buffer=bncc.sbuf.alloc(rotate(1024, 2)))
        ps = bnl.ndarray((bnl.par_dim(128), 64), dtype=bnl.float32,
                         buffer=bncc.psum.alloc(lambda idx, p, f: (3, 0, 0)))
        for i in bnl.sequential_range(4):
            t[i] = bnl.load(a[i * 128:(i + 1) * 128, :])
            ps[...] = bnl.copy(t[i])
            bnl.store(out[i * 128:(i + 1) * 128, :], value=bnl.copy(ps))
        return out
    a = rng.standard_normal((512, 64)).astype(np.float32)
    np.testing.assert_array_equal(bnki.simulate_kernel(k, a), a)
    places = _placements(k, a)
    assert {"base_partition": 0, "base_addr": 1024, "num_free_tiles": (2,)} in places
    assert any(p.get("base_bank") == 3 for p in places)


def test_an_allocation_callback_that_does_not_fit_is_refused():
    @bnki.jit
    def k(a):
        t = bnl.ndarray((bnl.par_dim(128), 64), dtype=a.dtype, buffer=bncc.sbuf.alloc(lambda idx, p, f: (0, 10**7)))
        t[...] = bnl.load(a)
        out = bnl.ndarray(a.shape, dtype=a.dtype, buffer=bnl.shared_hbm)
        bnl.store(out, value=t)
        return out
    with pytest.raises(KernelError, match="err_allocation_out_of_range"):
        k(np.zeros((128, 64), np.float32))

    @bnki.jit
    def k2(a):
        bnl.ndarray((128, 64), dtype=a.dtype, buffer=bncc.sbuf.alloc(lambda idx, p, f: (0,)))
    with pytest.raises(KernelError, match="err_invalid_allocation") as exc:
        k2(np.zeros((128, 64), np.float32))
    assert "returns 2 integers" in str(exc.value) or "returned (0,)" in str(exc.value)
    with pytest.raises(KernelError, match="err_invalid_allocation"):
        bncc.psum.alloc(3)


# ----------------------------------------------------------------------------- NKI 0.6 rules that moved with them

def test_an_optional_hbm_argument_can_be_tested_with_if_but_tile_data_cannot():
    @nki.jit
    def k(a, bias):
        t = nl.load(a)
        if bias:                                   # an HBM tensor was passed (None otherwise)
            nisa.tensor_tensor(dst=t, data1=t, data2=nl.load(bias), op=nl.add)
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, t)
        return out
    a = rng.standard_normal((8, 16)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate(k)(a, a), 2 * a)
    np.testing.assert_array_equal(nki.simulate(k)(a, None), a)

    @nki.jit
    def branchy(a):
        t = nl.load(a)
        if t:
            pass
        return a
    with pytest.raises(KernelError, match="err_ambiguous_tensor_truth_value"):
        nki.simulate(branchy)(a)


def test_a_bool_predicate_is_a_uint8_predicate():
    @nki.jit
    def k(pred, a):
        p = nl.load(pred)
        t = nl.load(a)
        dst = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.memset(dst=dst, value=0.0)
        nisa.tensor_copy_predicated(dst=dst, src=t, predicate=p)
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, dst)
        return out
    a = rng.standard_normal((16, 32)).astype(np.float32)
    pred = a > 0.3
    np.testing.assert_array_equal(nki.simulate(k)(pred, a), np.where(pred, a, 0.0))


def test_a_dtype_class_is_a_compile_time_parameter():
    @nki.jit
    def k(a, dtype):
        t = nl.ndarray(a.shape, dtype=dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        out = nl.ndarray(a.shape, dtype=dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    a = rng.standard_normal((8, 16)).astype(np.float32)
    got = nki.simulate(k)(a, np.float16)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, a.astype(np.float16))


def test_a_dma_regroups_the_free_dimensions_of_each_partition():
    @nki.jit
    def k(a):
        t = nl.ndarray((128, 64, 4), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        out = nl.ndarray((128, 4, 16, 4), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)              # same partitions, same elements per partition
        return out
    a = rng.standard_normal((128, 64, 4)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate(k)(a), a.reshape(128, 4, 16, 4))


# ----------------------------------------------------------------------------- Neuron 2.26's examples (general/nki/test)

def test_atomic_rmw_adds_every_row_even_when_indices_repeat():
    @bnki.jit
    def k(table, rows, vals):
        out = bnl.ndarray(table.shape, dtype=table.dtype, buffer=bnl.shared_hbm)
        bnl.store(out, bnl.load(table))
        idx = bnl.load(rows)
        bnl.atomic_rmw(out[idx, bnl.arange(table.shape[1])[None, :]], value=bnl.load(vals), op=np.add)
        return out
    rng_ = np.random.default_rng(11)
    table = rng_.standard_normal((16, 8)).astype(np.float32)
    rows = np.array([[3], [5], [3], [0]], np.int32)            # row 3 twice: both updates land
    vals = rng_.standard_normal((4, 8)).astype(np.float32)
    want = table.copy()
    np.add.at(want, rows[:, 0], vals)
    np.testing.assert_allclose(k(table, rows, vals), want, rtol=1e-6)


def test_removed_beta1_instructions_and_names_say_what_to_write_instead():
    with pytest.raises(KernelError, match="err_unsupported_api") as exc:
        bnisa.tensor_copy_dynamic_src
    assert "scalar_offset" in exc.value.fix
    with pytest.raises(KernelError, match="err_removed_api") as exc:
        nl.atomic_rmw
    assert "dma_compute" in exc.value.fix


def test_a_result_that_fits_once_its_operands_are_released_is_not_an_over_capacity_error():
    # a * g + b on tiles near SBUF capacity (the classic layernorm tutorial at 8192 columns): the product is
    # released by the add, so the add's result fits in the space it leaves
    @bnki.jit
    def k(x, g, b):
        out = bnl.ndarray(x.shape, dtype=x.dtype, buffer=bnl.shared_hbm)
        gt, bt, xt = bnl.load(g), bnl.load(b), bnl.load(x)
        s = xt * 2.0
        y = s * gt + bt
        bnl.store(out, y)
        return out
    cols = 8192   # 32 KiB per partition in float32: four live tiles and the product fill 160 KiB of trn1's 176 KiB;
    #               the add's result fits only once the product is released
    x, g, b = (np.full((128, cols), v, np.float32) for v in (1.0, 3.0, 0.5))
    np.testing.assert_array_equal(k(x, g, b), np.full((128, cols), 6.5, np.float32))


def _ragged_chunks(op_masked: bool):
    @bnki.jit
    def k(x):
        out = bnl.ndarray((128, 1000), dtype=np.float32, buffer=bnl.shared_hbm)
        stats = bnl.ndarray((128, 12), dtype=np.float32)
        t = bnl.load(x)
        i_p, i_f = bnl.arange(128)[:, None], bnl.arange(512)[None, :]
        for j in bnl.affine_range(2):
            inside = j * 512 + i_f < 1000
            e = bnl.exp(t[i_p, j * 512 + i_f], mask=inside if op_masked else None)
            bnl.store(out[i_p, j * 512 + i_f], e, mask=inside)
            stats[i_p, j * 6 + bnl.arange(6)[None, :]] = bnisa.bn_stats(t[i_p, j * 512 + i_f], mask=inside,
                                                                      dtype=np.float32)
        mv = bnl.ndarray((128, 2), dtype=np.float32, buffer=bnl.shared_hbm)
        bnl.store(mv, bnisa.bn_aggr(stats))
        return out, mv
    return k


def test_a_mask_covers_a_ragged_on_chip_read_of_element_wise_instructions_and_bn_stats():
    x = np.random.default_rng(2).standard_normal((128, 1000)).astype(np.float32)
    out, mv = _ragged_chunks(True)(x)
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(mv, np.stack([x.mean(1), x.var(1)], axis=1), rtol=1e-5, atol=1e-6)


def test_an_unmasked_read_past_an_on_chip_tile_names_the_mask_rule():
    with pytest.raises(KernelError, match="err_tensor_access_out_of_bound") as exc:
        _ragged_chunks(False)(np.ones((128, 1000), np.float32))
    assert "mask=" in exc.value.fix and "matmuls do not" in exc.value.fix


def test_the_profile_decorator_form_returns_the_simulated_profile():
    import trnsim.neuronxcc.nki.typing as bnt

    @bnki.profile(working_directory="/nonexistent", save_neff_name="file.neff", save_trace_name="p.ntff",
                  profile_nth=2)
    def k(x):
        out = bnl.ndarray(x.shape, dtype=x.dtype, buffer=bnl.shared_hbm)
        bnl.store(out, bnl.exp(bnl.load(x)))
        return out
    prof = k(bnt.tensor[[128, 512], bnl.float32])
    assert prof is k.last_profile and prof.kernel_name == "k" and prof.latency_us > 0
    assert prof.instructions_by_engine["scalar"] == 1 and prof.dma_transfers == 2   # exp; the load and the store
    with pytest.raises(KernelError, match="err_invalid_arguments"):
        bnki.profile(save_neff_name="f.neff", colour="red")


def test_a_masked_reduction_reads_a_ragged_last_chunk():
    # the mask ranges over the input's axes (NKI API Masking): the clamped edge values it masks off are left out of
    # the sum, so the read past the tile is valid; without the mask it is refused
    def make(masked):
        @bnki.jit
        def k(x):
            out = bnl.ndarray((128, 1), dtype=np.float32, buffer=bnl.shared_hbm)
            t = bnl.load(x)
            i_p, i_f = bnl.arange(128)[:, None], bnl.arange(512)[None, :]
            bnl.store(out, bnl.sum(t[i_p, 512 + i_f], axis=1, mask=(512 + i_f < 1000) if masked else None))
            return out
        return k
    x = np.random.default_rng(3).random((128, 1000), dtype=np.float32)
    np.testing.assert_allclose(make(True)(x)[:, 0], x[:, 512:].sum(axis=1), rtol=1e-5)
    with pytest.raises(KernelError, match="err_tensor_access_out_of_bound"):
        make(False)(x)


# ----------------------------------------------------------------------------- review of the above

def test_a_masked_atomic_rmw_with_repeated_rows_changes_only_masked_in_elements():
    @bnki.jit
    def k(table, rows, vals):
        out = bnl.ndarray(table.shape, dtype=table.dtype, buffer=bnl.shared_hbm)
        bnl.store(out, bnl.load(table))
        i_f = bnl.arange(8)[None, :]
        bnl.atomic_rmw(out[bnl.load(rows), i_f], value=bnl.load(vals), op=np.add, mask=(i_f < 4))
        return out
    rows = np.array([[3], [5], [3], [0]], np.int32)
    got = k(np.zeros((16, 8), np.float32), rows, np.ones((4, 8), np.float32))
    want = np.zeros((16, 8), np.float32)
    np.add.at(want[:, :4], rows[:, 0], 1.0)
    np.testing.assert_array_equal(got, want)


def test_bn_stats_leaves_a_masked_out_partition_as_it_was():
    @bnki.jit
    def k(x):
        out = bnl.ndarray((128, 6), dtype=np.float32, buffer=bnl.shared_hbm)
        t = bnl.load(x)
        i_p, i_f = bnl.arange(128)[:, None], bnl.arange(64)[None, :]
        st = bnisa.memset(shape=(128, 6), value=5.0, dtype=np.float32)
        st[i_p, bnl.arange(6)[None, :]] = bnisa.bn_stats(t[i_p, i_f], mask=(i_p < 100), dtype=np.float32)
        bnl.store(out, st)
        return out
    got = k(np.ones((128, 64), np.float32))
    np.testing.assert_array_equal(got[:100], np.tile([32.0, 1.0, 0.0, 32.0, 1.0, 0.0], (100, 1)))
    np.testing.assert_array_equal(got[100:], 5.0)


def test_destination_first_calls_still_work_under_beta1():
    @bnki.jit(target="trn2")
    def k(a, p):
        t = bnl.load(a)
        r = bnisa.register_alloc()
        bnisa.register_load(r, bnisa.memset(shape=(1, 1), value=3, dtype=np.int32))
        d = bnl.ndarray((32, 32), dtype=a.dtype, buffer=bnl.sbuf)
        bnisa.dma_transpose(d, t)                                   # NKI 0.6 order: dst, src
        z = bnisa.memset(shape=(32, 32), value=0.0, dtype=a.dtype)
        bnisa.tensor_copy_predicated(z, d, bnl.load(p))             # dst, src, predicate
        m = bnl.ndarray((32, 8), dtype=a.dtype, buffer=bnl.sbuf)
        bnisa.max8(m, t)                                            # dst, src
        o1 = bnl.ndarray((32, 32), dtype=a.dtype, buffer=bnl.shared_hbm)
        o2 = bnl.ndarray((32, 8), dtype=a.dtype, buffer=bnl.shared_hbm)
        bnl.store(o1, z)
        bnl.store(o2, m)
        return o1, o2
    a = rng.standard_normal((32, 32)).astype(np.float32)
    pred = (a.T > 0).astype(np.uint8)
    o1, o2 = k(a, pred)
    np.testing.assert_array_equal(o1, np.where(pred == 1, a.T, 0.0))
    np.testing.assert_array_equal(o2, -np.sort(-a, axis=1)[:, :8])


def test_a_masked_ragged_read_can_be_broadcast():
    @bnki.jit
    def k(x, y):
        out = bnl.ndarray((128, 4), dtype=np.float32, buffer=bnl.shared_hbm)
        col, u = bnl.load(x), bnl.load(y)
        i_p = bnl.arange(128)[:, None]
        r = bnl.add(col[64 + i_p, bnl.arange(1)[None, :]].broadcast_to((128, 4)), u, mask=(64 + i_p < 128))
        bnl.store(out[0:64, :], r[0:64, :])
        return out
    x = np.arange(128, dtype=np.float32).reshape(128, 1)
    got = k(x, np.ones((128, 4), np.float32))
    np.testing.assert_array_equal(got[:64], np.repeat(x[64:] + 1.0, 4, axis=1))


def test_atomic_rmw_operands_must_be_tiles():
    @bnki.jit
    def k(t):
        out = bnl.ndarray(t.shape, dtype=t.dtype, buffer=bnl.shared_hbm)
        bnl.atomic_rmw(out, value=1.0, op=np.add)
        return out
    with pytest.raises(KernelError, match="err_expected_tile"):
        k(np.zeros((4, 8), np.float32))


def test_beta1_positional_optional_arguments_are_not_taken_for_a_destination():
    # Beta 1 local_gather(src_buffer, index, num_elem_per_idx, num_valid_indices): four positional arguments, the
    # third an int; NKI 0.6's local_gather(dst, src_buffer, index, ...) has a tile there
    @bnki.jit(target="trn2")
    def k(src, index):
        s, i = bnl.load(src), bnl.load(index)
        a = bnisa.local_gather(s, i, 1, 16)
        b = bnisa.local_gather(src_buffer=s, index=i, num_elem_per_idx=1, num_valid_indices=16)
        o1 = bnl.ndarray(a.shape, dtype=a.dtype, buffer=bnl.shared_hbm)
        o2 = bnl.ndarray(b.shape, dtype=b.dtype, buffer=bnl.shared_hbm)
        bnl.store(o1, a)
        bnl.store(o2, b)
        return o1, o2
    src = rng.standard_normal((16, 32)).astype(np.float32)
    index = np.random.default_rng(4).integers(0, 32, (16, 1)).astype(np.uint16)
    a, b = k(src, index)
    assert a.shape == (16, 16, 1)   # [partitions, valid indices, elements per index]
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[0, :, 0], src[0, index[:, 0]])   # partition 0 gathers the group's 16 indices
