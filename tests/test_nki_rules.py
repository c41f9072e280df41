"""Every documented kernel rule raises KernelError naming the rule, value, limit and fix, at the kernel line."""
import numpy as np
import pytest

import trnsim.neuronxcc.nki as nki
import trnsim.neuronxcc.nki.isa as nisa
import trnsim.neuronxcc.nki.language as nl
from trnsim.nki import KernelError

A = np.ones((256, 1024), dtype=np.float32)


def run(kernel, *args, target="trn1"):
    return nki.trace_kernel(kernel, *args, target=target)


def err(kernel, *args, target="trn1") -> KernelError:
    with pytest.raises(KernelError) as ei:
        run(kernel, *args, target=target)
    e = ei.value
    assert isinstance(e, ValueError)
    return e


def test_partition_dim_over_128_points_at_kernel_line():
    def k(a):
        t = nl.load(a[0:256, 0:512])  # the offending line
        return t
    e = err(k, A)
    assert e.rule == "err_num_partition_exceed_arch_limit"
    assert "number of partitions 256 exceed architecture limitation of 128" in str(e)
    assert "test_nki_rules.py" in e.location and "the offending line" in e.source
    assert "fix:" in str(e)


def test_psum_tile_wider_than_bank():
    def k(a):
        nl.zeros((128, 1024), nl.float32, buffer=nl.psum)
    e = err(k, A)
    assert e.rule == "err_psum_tile_exceeds_bank"
    assert "4096 bytes" in str(e) and "2048 bytes" in str(e) and "512" in str(e)


def test_too_many_psum_banks_live():
    def k(a):
        tiles = [nl.zeros((128, 512), nl.float32, buffer=nl.psum) for _ in range(9)]
        assert tiles
    e = err(k, A)
    assert e.rule == "err_psum_banks_exhausted"
    assert "8 of 8" in str(e)


def test_psum_banks_released_each_iteration():
    def k(a):
        for i in nl.affine_range(20):
            t = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    run(k, A)  # no error: each iteration's tile is released at its end


def test_sbuf_over_capacity_reports_usage():
    def k(a):
        keep = [nl.ndarray((128, 16384), nl.float32) for _ in range(3)]  # 3 x 64 KiB per partition
        assert keep
    e = err(k, A)
    assert e.rule == "err_sbuf_over_capacity"
    msg = str(e)
    assert "65536 bytes per partition" in msg and "131072 bytes per partition are already used" in msg
    assert "180224" in msg  # trn1 usable SBUF per partition from the catalog


def test_sbuf_capacity_is_per_target():
    def k(a):
        keep = [nl.ndarray((128, 16384), nl.float32) for _ in range(3)]
        assert keep
    run(k, A, target="trn2")  # 224 KiB partitions: 192 KiB fits


def test_matmul_from_hbm():
    def k(a):
        nl.matmul(a[0:128, 0:128], a[0:128, 0:512], transpose_x=True)
    e = err(k, A)
    assert e.rule == "err_unsupported_memory"
    assert "Expected operand 'stationary' of 'matmul' to be in address space 'sbuf', but got a tile in 'hbm'" in str(e)


def test_matmul_output_not_psum():
    def k(a):
        x = nl.load(a[0:128, 0:128])
        y = nl.load(a[0:128, 0:512])
        out = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
        nisa.nc_matmul(out, x, y)
    e = err(k, A)
    assert e.rule == "err_unsupported_memory" and "'dst' of 'nc_matmul'" in str(e) and "psum" in str(e)


def test_matmul_free_size_limits():
    def k(a):
        x = nl.load(a[0:128, 0:256])
        y = nl.load(a[0:128, 0:512])
        nisa.nc_matmul(x, y)
    e = err(k, A)
    assert e.rule == "err_size_of_dimension_exceed_arch_limit" and "limitation of 128" in str(e)

    def k2(a):
        x = nl.load(a[0:128, 0:128])
        y = nl.load(a[0:128, 0:1024])
        nisa.nc_matmul(x, y)
    e = err(k2, A)
    assert "limitation of 512" in str(e)
    run(k2, A, target="trn3")  # NC-v4 moving free size goes to 4096


def test_matmul_contraction_mismatch():
    def k(a):
        x = nl.load(a[0:128, 0:128])
        y = nl.load(a[0:64, 0:512])
        nisa.nc_matmul(x, y)
    e = err(k, A)
    assert e.rule == "err_num_partition_mismatch" and "stationary[128, 128]" in str(e)


def test_matmul_dtype_mix():
    def k(a):
        x = nl.load(a[0:128, 0:128])
        y = nl.load(a[0:128, 0:512], dtype=nl.bfloat16)
        nisa.nc_matmul(x, y)
    e = err(k, A)
    assert e.rule == "err_matmul_dtype_mismatch" and "float32" in str(e) and "bfloat16" in str(e)

    def k2(a):
        x = nl.load(a[0:128, 0:128], dtype=nl.int32)
        y = nl.load(a[0:128, 0:512], dtype=nl.int32)
        nisa.nc_matmul(x, y)
    assert err(k2, A).rule == "err_unsupported_dtype"


def test_reduction_over_partition_axis():
    def k(a):
        nl.sum(nl.load(a[0:128, 0:512]), axis=0)
    e = err(k, A)
    assert e.rule == "err_reduce_partition_axis" and "[128, 512]" in str(e)


def test_out_of_bounds_load_message():
    def k(a):
        i = nl.arange(128)[:, None]
        j = nl.arange(4096)[None, :]
        nl.load(a[i, j])
    e = err(k, np.ones((128, 4000), np.float32))
    assert e.rule == "err_tensor_access_out_of_bound"
    assert "Out-of-bound access for tensor `a` on dimension 1: index range [0, 4095] exceed dimension size of 4000" \
        in str(e)


def test_out_of_bounds_masked_is_fine():
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        i = nl.arange(128)[:, None]
        j = nl.arange(4096)[None, :]
        nl.store(out[i, j], nl.load(a[i, j], mask=(j < 4000)), mask=(j < 4000))
        return out
    x = np.arange(128 * 4000, dtype=np.float32).reshape(128, 4000)
    got, _ = run(k, x)
    np.testing.assert_array_equal(got, x)


def test_store_out_of_bounds_slice():
    def k(a):
        out = nl.ndarray((100, 64), a.dtype, buffer=nl.shared_hbm)
        nl.store(out[0:128, 0:64], nl.load(a[0:128, 0:64]))
        return out
    assert err(k, A).rule == "err_tensor_access_out_of_bound"


def test_writing_a_kernel_input():
    def k(a):
        t = nl.load(a[0:128, 0:512])
        nl.store(a[0:128, 0:512], t)
        return t
    e = err(k, A)
    assert e.rule == "err_cannot_update_immutable_parameter" and "`a`" in str(e)


def test_elementwise_shape_mismatch():
    def k(a):
        x = nl.load(a[0:128, 0:512])
        y = nl.load(a[0:128, 0:256])
        nl.add(x, y)
    e = err(k, A)
    assert e.rule == "err_shape_mismatch" and "[128, 512]" in str(e) and "[128, 256]" in str(e)


def test_tensor_tensor_partition_mismatch():
    def k(a):
        x = nl.load(a[0:128, 0:512])
        y = nl.load(a[0:1, 0:512])
        nisa.tensor_tensor(x, y, op=nl.add)
    e = err(k, A)
    assert e.rule == "err_num_partition_mismatch"
    assert "(data1[128, 512], data2[1, 512]) of 'tensor_tensor'" in str(e)


def test_compute_on_hbm():
    def k(a):
        nl.exp(a[0:128, 0:512])
    e = err(k, A)
    assert "Expected operand 'data' of 'exp' to be in address space 'sbuf|psum', but got a tile in 'hbm'" in str(e)


def test_transpose_too_big():
    def k(a):
        nl.transpose(nl.load(a[0:128, 0:512]))
    e = err(k, A)
    assert "size of dimension 1 in 'x[128, 512]' of 'transpose' exceed architecture limitation of 128." in str(e)


def test_local_variable_out_of_scope():
    def k(a):
        for i in nl.affine_range(2):
            t = nl.load(a[0:128, 0:512])
        nl.exp(t)
    e = err(k, A)
    assert e.rule == "err_local_variable_used_out_of_scope"


def test_output_never_written():
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        return out
    assert err(k, A).rule == "err_tensor_output_not_written_to"


def test_mixing_basic_and_advanced_indexing():
    def k(a):
        nl.load(a[nl.arange(128)[:, None], 0:512])
    assert err(k, A).rule == "err_unsupported_mixing_basic_advanced_tensor_indexing"


def test_control_flow_on_arange():
    def k(a):
        i = nl.arange(128)[:, None]
        if i < 5:
            pass
    assert err(k, A).rule == "err_control_flow_condition_depending_on_arange"


def test_api_outside_kernel():
    with pytest.raises(KernelError) as ei:
        nl.zeros((128, 1), nl.float32)
    assert ei.value.rule == "err_nki_api_outside_of_nki_kernel"


def test_unknown_target():
    def k(a):
        pass
    with pytest.raises(KernelError) as ei:
        run(k, A, target="trn9")
    assert "trn1" in str(ei.value)


def test_unsupported_input_dtype():
    def k(a):
        pass
    with pytest.raises(KernelError) as ei:
        run(k, np.ones((4, 4)))
    assert "float64" in str(ei.value) and "astype" in str(ei.value)


def test_full_psum_still_accepts_accumulating_matmul():
    def k(a):
        x = nl.load(a[0:128, 0:128])
        y = nl.load(a[0:128, 0:512])
        accs = [nl.zeros((128, 512), nl.float32, buffer=nl.psum) for _ in range(8)]
        accs[0] += nl.matmul(x, y, transpose_x=True)   # the result goes straight into a live bank
        assert accs
    run(k, A)


def test_keeping_a_matmul_result_with_psum_full_fails_at_its_line():
    def k(a):
        x = nl.load(a[0:128, 0:128])
        y = nl.load(a[0:128, 0:512])
        accs = [nl.zeros((128, 512), nl.float32, buffer=nl.psum) for _ in range(8)]
        r = nl.matmul(x, y, transpose_x=True)   # a ninth bank
        nl.copy(r)
        assert accs
    e = err(k, A)
    assert e.rule == "err_psum_banks_exhausted" and "a ninth bank" in e.source


def test_affine_range_iterations_writing_same_location():
    def k(a):
        buf = nl.ndarray((4, nl.par_dim(128), 512), nl.float32, buffer=nl.sbuf)
        for i in nl.affine_range(4):
            buf[0] = 0.0  # every iteration writes buf[0]
    e = err(k, A)
    assert e.rule == "err_unexpected_output_dependencies" and "iterations 0 and 1" in str(e)
    assert "every iteration writes" in e.source

    def ok(a):
        buf = nl.ndarray((4, nl.par_dim(128), 512), nl.float32, buffer=nl.sbuf)
        for i in nl.affine_range(4):
            buf[i] = 0.0          # disjoint per iteration
        for i in nl.sequential_range(4):
            buf[0] = 1.0          # loop-carried: fine in sequential_range
        acc = nl.zeros((128, 512), nl.float32)
        for i in nl.affine_range(4):
            acc[...] = nl.add(acc, buf[i])   # associative accumulation is not a loop-carried dependency
    run(ok, A)


def test_store_shape_mismatch_messages():
    def small_dst(a):
        out = nl.ndarray((128, 256), a.dtype, buffer=nl.shared_hbm)
        nl.store(out[0:128, 0:128], nl.load(a[0:128, 0:256]))
        return out
    e = err(small_dst, A)
    assert e.rule == "err_store_dst_shape_smaller_than_other_shape" and "[128, 128]" in str(e)

    def big_dst(a):
        out = nl.ndarray((128, 512), a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a[0:128, 0:256]))
        return out
    e = err(big_dst, A)
    assert e.rule == "err_shape_mismatch" and "does not fill the destination [128, 512]" in str(e)
