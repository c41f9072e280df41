"""Beta 1 features that AWS's classic reference kernels (nki-samples' removed ``reference/`` kernels and its
``contributed/`` kernels) rely on, each checked against numpy with kernels written here.

- an integer index on a free dimension of an on-chip tile keeps a unit dimension ([P, 1], not [P]);
- ``nl.loop_reduce`` (the destination is the reduction's other input);
- a reduction's ``mask=`` ranges over the input tile's axes;
- an arithmetic unary op (``nl.abs``) as ``tensor_scalar_reduce``'s ``op0``;
- allocation callbacks called by keyword (``functools.partial`` binding a leading parameter);
- ``mod_alloc`` blocks without a tile count share one physical tile;
- ``nki.tensor``, ``nl.finfo``, ``ncc.enable_stack_allocator``, ``ncc.force_auto_alloc``, ``ncc.multi_buffer``;
- an indirect row index after integer indices (``hbm[b, idx_tile, i_f]``), and masked-off rows of an indirect
  load that are not bounds-checked.
"""
import functools

import ml_dtypes
import numpy as np
import pytest

import trnsim.neuronxcc.nki as nki
import trnsim.neuronxcc.nki.compiler as ncc
import trnsim.neuronxcc.nki.isa as nisa
import trnsim.neuronxcc.nki.language as nl
from trnsim.nki import KernelError

RNG = np.random.default_rng(7)


# ------------------------------------------------------------------------------------- integer free index

@nki.jit
def _column_plus(a, b):
    out = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.shared_hbm)
    buf = nl.load(a)
    col = buf[:, 1]
    assert tuple(col.shape) == (128, 1)
    nl.store(out, value=nl.add(col, nl.load(b)))
    return out


def test_integer_free_index_keeps_a_unit_dimension():
    a = RNG.random((128, 4), dtype=np.float32)
    b = RNG.random((128, 1), dtype=np.float32)
    np.testing.assert_array_equal(_column_plus(a, b), a[:, 1:2] + b)


@nki.jit
def _block_column(a):
    out = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.shared_hbm)
    buf = nl.ndarray((2, nl.par_dim(128), 4), dtype=a.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(2):
        buf[i] = nl.load(a[i])
    col = buf[1, :, 2]
    assert tuple(col.shape) == (128, 1)
    nl.store(out, value=col)
    return out


def test_integer_index_of_a_block_tile_keeps_a_unit_dimension():
    a = RNG.random((2, 128, 4), dtype=np.float32)
    np.testing.assert_array_equal(_block_column(a), a[1, :, 2:3])


# ------------------------------------------------------------------------------------- loop_reduce

@nki.jit
def _loop_sum(a):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(a.shape[0]):
        acc[...] = nl.loop_reduce(nl.load(a[i]), op=np.add, loop_indices=[i],
                                  dtype=nl.float32)
    nl.store(out, value=acc)
    return out


@nki.jit
def _loop_subtract(a):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.full((128, 64), 10.0, dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.sequential_range(a.shape[0]):
        acc = nl.loop_reduce(nl.load(a[i]), np.subtract, loop_indices=(i,), name="acc")
    nl.store(out, value=acc)
    return out


def test_loop_reduce_adds_into_its_destination():
    a = RNG.random((4, 128, 64), dtype=np.float32)
    np.testing.assert_allclose(_loop_sum(a), a.sum(axis=0), rtol=1e-6)


def test_loop_reduce_destination_is_the_first_operand():
    # the reference's equivalent: b = nisa.tensor_tensor(data1=b, data2=a, op=...)
    a = RNG.random((3, 128, 64), dtype=np.float32)
    np.testing.assert_allclose(_loop_subtract(a), 10.0 - a[0] - a[1] - a[2], rtol=1e-5)


@nki.jit
def _loop_reduce_not_assigned(a):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.loop_reduce(nl.load(a[0]), op=np.add, loop_indices=[0]))
    return out


@nki.jit
def _loop_reduce_undefined(a):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        fresh = nl.loop_reduce(nl.load(a[i]), op=np.add, loop_indices=[i])  # noqa: F841
    return out


def test_loop_reduce_outside_an_assignment_or_into_nothing_is_refused():
    a = RNG.random((2, 128, 64), dtype=np.float32)
    with pytest.raises(KernelError, match="right-hand side of an assignment"):
        _loop_reduce_not_assigned(a)
    with pytest.raises(KernelError, match="`fresh` of nl.loop_reduce is not defined"):
        _loop_reduce_undefined(a)


# ------------------------------------------------------------------------------------- reduction masks

@nki.jit
def _masked_max(a):
    out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(8)[None, :]
    m = nl.max(t, axis=1, mask=(i_f < 5) & (i_p < 100))
    nl.store(out[0:100, :], value=m[0:100, :])
    return out


def test_reduction_mask_ranges_over_the_input_axes():
    a = RNG.standard_normal((128, 8)).astype(np.float32)
    np.testing.assert_array_equal(_masked_max(a)[:100, 0], a[:100, :5].max(axis=1))


@nki.jit
def _masked_window_sum(a):
    out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    i_h = nl.arange(4)[None, :, None]
    i_w = nl.arange(4)[None, None, :]
    nl.store(out, value=nl.sum(t, axis=[-2, -1], mask=(i_h < 3) & (i_w < 2)))
    return out


def test_reduction_mask_over_two_free_axes():
    a = RNG.random((128, 4, 4), dtype=np.float32)
    np.testing.assert_allclose(_masked_window_sum(a)[:, 0], a[:, :3, :2].sum(axis=(1, 2)), rtol=1e-6)


@nki.jit
def _masked_mean(a):
    out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    i_f = nl.arange(6)[None, :]
    nl.store(out, value=nl.mean(t, axis=1, mask=(i_f < 4)))
    return out


def test_masked_mean_counts_only_the_masked_in_elements():
    a = RNG.random((128, 6), dtype=np.float32)
    np.testing.assert_allclose(_masked_mean(a)[:, 0], a[:, :4].mean(axis=1), rtol=1e-6)


# ------------------------------------------------------------------------------------- unary op0

@nki.jit
def _abs_max(a):
    out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    amax = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    t = nl.load(a)
    scaled = nisa.tensor_scalar_reduce(data=t, op0=nl.abs, operand0=0.0, reduce_op=nl.max, reduce_res=amax)
    assert tuple(scaled.shape) == (128, 64)
    nl.store(out, value=amax)
    return out


def test_tensor_scalar_reduce_takes_abs_as_its_alu_op():
    a = RNG.standard_normal((128, 64)).astype(np.float32)
    np.testing.assert_array_equal(_abs_max(a), np.abs(a).max(axis=1, keepdims=True))


# ------------------------------------------------------------------------------------- allocation

def _place(base, idx, pdim_size, fdim_size):
    return (0, base + idx[0] * fdim_size)


def _through_placed_tile(make_buffer, blocks: int, cols: int, block: int):
    """A kernel copying ``a`` [128, cols] through block ``block`` of a [blocks, 128, cols] fp32 SBUF tensor placed
    by ``make_buffer()``."""
    @nki.jit
    def k(a):
        out = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((blocks, nl.par_dim(128), cols), dtype=nl.float32, buffer=make_buffer())
        t[block] = nl.load(a)
        nl.store(out, value=t[block])
        return out
    return k


def test_allocation_callbacks_by_keyword_and_positionally():
    a = RNG.random((128, 64), dtype=np.float32)
    by_name = _through_placed_tile(lambda: ncc.sbuf.alloc(functools.partial(_place, base=4096)), 2, 64, 1)
    out, trace = nki.trace_kernel(by_name, a)
    np.testing.assert_array_equal(out, a)
    assert [al.placement["base_addr"] for al in trace.allocations if al.placement] == [4096]
    positional = _through_placed_tile(lambda: ncc.sbuf.alloc(lambda i, p, f: (0, 1024 + i[0] * f)), 2, 64, 0)
    np.testing.assert_array_equal(positional(a), a)


def test_mod_alloc_blocks_without_a_count_share_one_physical_tile():
    a = RNG.random((128, 128), dtype=np.float32)
    # 128 blocks of 512 B per partition from byte 150000: one physical tile fits, 128 would not
    one = _through_placed_tile(lambda: ncc.sbuf.mod_alloc(base_addr=150000, num_free_tiles=(1,)), 128, 128, 3)
    np.testing.assert_array_equal(one(a), a)
    default = _through_placed_tile(lambda: ncc.sbuf.mod_alloc(base_addr=150000), 128, 128, 0)
    np.testing.assert_array_equal(default(a), a)
    two = _through_placed_tile(lambda: ncc.sbuf.mod_alloc(base_addr=180224 - 700, num_free_tiles=(2,)), 128, 128, 0)
    with pytest.raises(KernelError, match="err_allocation_out_of_range"):   # two 512 B tiles do not fit there
        two(a)


# ------------------------------------------------------------------------------------- names

def test_nki_tensor_is_the_tensor_type():
    seen = {}

    @nki.jit
    def k(a: nki.tensor):
        seen["hbm"] = isinstance(a, nki.tensor)
        t = nl.load(a)
        seen["tile"] = isinstance(t, nki.tensor)
        seen["number"] = isinstance(3.0, nki.tensor)
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=t)
        return out

    k(np.ones((128, 8), np.float32))
    assert seen == {"hbm": True, "tile": True, "number": False}


def test_finfo_of_nki_float_types():
    assert nl.finfo(nl.bfloat16).max == float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    assert nl.finfo(nl.float32).eps == np.finfo(np.float32).eps
    assert nl.finfo(nl.float16).bits == 16
    for bad in (nl.int32, nl.tfloat32, "not a dtype"):
        with pytest.raises(KernelError, match="err_unsupported_dtype"):
            nl.finfo(bad)


@nki.jit
def _fill_lowest_bf16(a):
    out = nl.ndarray((128, 8), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    t = nl.full((128, 8), nl.finfo(nl.bfloat16).min, dtype=nl.bfloat16, buffer=nl.sbuf)   # a bfloat16 scalar
    nl.store(out, value=nl.maximum(t, nl.load(a)))
    return out


def test_a_fill_takes_an_ml_dtypes_scalar():
    a = np.full((128, 8), -np.inf, dtype=ml_dtypes.bfloat16)
    out = _fill_lowest_bf16(a)
    assert np.all(out.astype(np.float32) == float(ml_dtypes.finfo(ml_dtypes.bfloat16).min))


def test_stack_allocator_needs_skip_middle_end_transformations():
    def body(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a))
        return out

    a = RNG.random((128, 8), dtype=np.float32)
    ok = ncc.enable_stack_allocator(log_level=20)(ncc.skip_middle_end_transformations(nki.jit(body)))
    out, trace = nki.trace_kernel(ok, a)
    np.testing.assert_array_equal(out, a)
    assert trace.directives["enable_stack_allocator"] is True
    alone = ncc.enable_stack_allocator(nki.jit(lambda a: body(a)))
    with pytest.raises(KernelError, match="err_invalid_directive"):
        alone(a)
    with pytest.raises(KernelError, match="log_level"):
        ncc.enable_stack_allocator(log_level="INFO")


def test_force_auto_alloc_ignores_direct_allocations():
    def body(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=10 ** 7))  # far out of range
        t[...] = nl.load(a)
        nl.store(out, value=t)
        return out

    a = RNG.random((128, 8), dtype=np.float32)
    with pytest.raises(KernelError, match="err_allocation_out_of_range"):
        nki.jit(body)(a)
    np.testing.assert_array_equal(ncc.force_auto_alloc(nki.jit(body))(a), a)


def test_multi_buffer_directive():
    d = ncc.multi_buffer(4)
    assert d.factor == 4 and ncc.multi_buffer().factor == 2

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.sequential_range(2, directives=ncc.multi_buffer(2)):
            nl.store(out[i], value=nl.load(a[i]))
        return out

    a = RNG.random((2, 128, 8), dtype=np.float32)
    np.testing.assert_array_equal(k(a), a)
    for bad in (0, 1.5, True):
        with pytest.raises(KernelError, match="multi_buffer"):
            ncc.multi_buffer(bad)


# ------------------------------------------------------------------------------------- indirect rows

@nki.jit
def _gather_per_batch(table, rows):
    out = nl.ndarray((table.shape[0], 32, 16), dtype=table.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(32)[:, None]
    i_f = nl.arange(16)[None, :]
    idx = nl.load(rows)
    for b in range(table.shape[0]):
        nl.store(out[b, i_p, i_f], value=nl.load(table[b, idx, i_f]))
    return out


def test_indirect_rows_after_an_integer_index():
    table = RNG.random((2, 64, 16), dtype=np.float32)
    rows = RNG.permutation(64)[:32].astype(np.int32).reshape(32, 1)
    np.testing.assert_array_equal(_gather_per_batch(table, rows), table[:, rows[:, 0]])


def test_indirect_row_outside_its_dimension_is_out_of_bounds_not_the_next_batch():
    table = RNG.random((2, 64, 16), dtype=np.float32)
    rows = np.arange(32, dtype=np.int32).reshape(32, 1)
    rows[5, 0] = 70          # inside the tensor (batch 1's row 6) but outside dimension 1
    with pytest.raises(KernelError, match="err_tensor_access_out_of_bound"):
        _gather_per_batch(table, rows)


@nki.jit
def _masked_gather(table, n_valid):
    out = nl.ndarray((128, 16), dtype=table.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(16)[None, :]
    idx = nisa.iota(i_p, dtype=nl.int32)           # rows 0..127; the table has only 64
    t = nl.load(table[idx, i_f], mask=(i_p < n_valid))
    nl.store(out[i_p, i_f], value=t, mask=(i_p < n_valid))
    return out


def test_masked_off_rows_of_an_indirect_load_are_not_checked():
    table = RNG.random((64, 16), dtype=np.float32)
    np.testing.assert_array_equal(_masked_gather(table, 64)[:64], table)
    with pytest.raises(KernelError, match="err_tensor_access_out_of_bound"):
        _masked_gather(table, 65)                  # row 64 is masked in and does not exist
