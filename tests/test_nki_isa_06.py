"""The NKI 0.6 nki.isa instructions added for issue 11, each against a numpy reference, plus one broken
rule each (KernelError naming the rule, the shape/value and a fix). Kernels are written for this file."""
import ml_dtypes
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import KernelError
from nki06_helpers import broken, hbm, new, sb, sim  # noqa: F401

rng = np.random.default_rng(11)


F32 = rng.standard_normal((128, 64)).astype(np.float32)


# ------------------------------------------------------------------ constants, enums, classes

def test_engine_constants_and_enums():
    assert nisa.tensor_engine == nisa.engine.tensor and nisa.vector_engine == nisa.engine.vector
    assert nisa.scalar_engine == nisa.engine.scalar and nisa.gpsimd_engine == nisa.engine.gpsimd
    assert nisa.unknown_engine == nisa.engine.unknown and nisa.engine.dma == "dma"
    assert {nisa.dma_engine.dma, nisa.dma_engine.gpsimd_dma} == {"dma", "gpsimd_dma"}
    assert nisa.matmul_perf_mode.double_row == "double_row" and nisa.reduce_cmd.load_reduce == "load_reduce"
    assert issubclass(nisa.NkiValidationError, Exception) and nisa.NkiValidationError is KernelError


def test_get_nc_sub_version_is_the_first_revision():
    seen = []

    def k(a):
        seen.append((nisa.get_nc_version(), nisa.get_nc_sub_version()))
        return hbm(sb(a))
    for tgt, ver in (("trn2", "NC-v3"), ("trn3", "NC-v4")):
        sim(k, F32, target=tgt)
        assert seen[-1] == (ver, 0)


def test_nki_instruction_depends_on_adds_a_trace_edge():
    kern = nki.jit(lambda a: _dep_kernel(a))
    nki.simulate(kern)(F32)
    tr = kern.last_trace
    regs = [i for i in tr.instructions if i.opcode == "register_move"]
    assert regs[0].index in regs[1].deps


def _dep_kernel(a):
    r1, r2 = nisa.register_alloc(), nisa.register_alloc()
    i1 = nisa.register_move(r1, 3)
    i2 = nisa.register_move(r2, 4)
    assert i2.depends_on(i1) is i2
    with pytest.raises(KernelError, match="err_invalid_dependency"):
        i1.depends_on(i2)
    return hbm(sb(a))


# ------------------------------------------------------------------ registers

def test_registers_move_load_store_and_control_flow():
    def k(a):
        t = sb(a)
        r = nisa.register_alloc()
        nisa.register_load(r, t[0:1, 0:1])           # 5
        r2 = nisa.register_alloc(0)
        nisa.register_move(r2, r)
        n = 0
        while r2:                                     # a register in a while loop (simulated scalar)
            nisa.register_move(r2, int(r2) - 1)
            n += 1
        out = new((1, 2), nl.int32)
        nisa.register_store(out[0:1, 0:1], r)
        nisa.register_store(out[0:1, 1:2], nisa.register_alloc(n * 10 + len(range(r))))
        return hbm(out)
    a = np.array([[5, 7]], dtype=np.int32)
    np.testing.assert_array_equal(sim(k, a), [[5, 55]])


def test_register_rules():
    def k(a):
        r = nisa.register_alloc()
        nisa.register_load(r, sb(a))                  # a [1, 2] tensor: not one element
        return hbm(sb(a))
    msg = broken(k, np.zeros((1, 2), np.int32), rule="err_register_tensor_shape")
    assert "[1, 2]" in msg

    def k2(a):
        r = nisa.register_alloc()
        if r:                                           # never initialised
            pass
        return hbm(sb(a))
    broken(k2, np.zeros((1, 2), np.int32), rule="err_register_uninitialized")


# ------------------------------------------------------------------ random numbers

def _rng_kernel(a):
    seed = sb(a)
    nisa.set_rng_seed(seed[0:1, 0:1])
    bits = new((128, 256), nl.uint32)
    nisa.rng(dst=bits)
    u = new((128, 256), nl.float32)
    nisa.rand2(dst=u, min=-2.0, max=3.0)
    return hbm(bits), hbm(u)


def test_rng_and_rand2_are_uniform_and_reproducible():
    s = np.array([[1234]], dtype=np.uint32)
    bits, u = sim(_rng_kernel, s, target="trn3")
    bits2, u2 = sim(_rng_kernel, s, target="trn3")
    np.testing.assert_array_equal(bits, bits2)
    np.testing.assert_array_equal(u, u2)
    bits3, _ = sim(_rng_kernel, np.array([[99]], dtype=np.uint32), target="trn3")
    assert np.mean(bits != bits3) > 0.99
    assert u.min() >= -2.0 and u.max() <= 3.0 and abs(u.mean() - 0.5) < 0.05
    assert abs(np.std(u) - 5 / np.sqrt(12)) < 0.05
    # 32 random bits: every bit position is set about half the time
    frac = np.array([np.mean((bits >> b) & 1) for b in range(32)])
    assert np.all(np.abs(frac - 0.5) < 0.02)


def test_rng_truncates_to_the_destination_width():
    def k(a):
        nisa.set_rng_seed(sb(a)[0:1, 0:1])
        w = new((128, 64), nl.uint32)
        nisa.rng(dst=w)
        nisa.set_rng_seed(sb(a)[0:1, 0:1])
        b = new((128, 64), nl.uint8)
        nisa.rng(dst=b)
        return hbm(w), hbm(b)
    w, b = sim(k, np.array([[7]], np.uint32))
    np.testing.assert_array_equal(b, (w & 0xFF).astype(np.uint8))


def test_rng_rules():
    def k(a):
        t = new((128, 8), nl.float32)
        nisa.rng(dst=t)
        return hbm(t)
    assert "float32" in broken(k, F32, rule="err_unsupported_dtype")

    def k2(a):
        t = new((128, 8), nl.float32)
        nisa.rand2(dst=t, min=0.0, max=1.0)
        return hbm(t)
    broken(k2, F32, rule="err_unsupported_on_target", target="trn2")

    def k3(a):
        t = new((128, 8), nl.float32)
        nisa.rand2(dst=t, min=1.0, max=1.0)
        return hbm(t)
    broken(k3, F32, rule="err_invalid_range", target="trn3")


def test_rand_state_roundtrip_replays_the_sequence():
    def k(a):
        st = sb(a)
        nisa.rand_set_state(st)
        x1 = new((128, 32), nl.uint32)
        nisa.rng(dst=x1, engine=nisa.engine.gpsimd)
        saved = new((128, 6), nl.uint32)
        nisa.rand_get_state(saved)
        x2 = new((128, 32), nl.uint32)
        nisa.rng(dst=x2, engine=nisa.engine.gpsimd)
        nisa.rand_set_state(saved)
        x3 = new((128, 32), nl.uint32)
        nisa.rng(dst=x3, engine=nisa.engine.gpsimd)
        return hbm(x1), hbm(x2), hbm(x3), hbm(saved)
    state = rng.integers(1, 2 ** 32, size=(128, 6), dtype=np.uint32)
    x1, x2, x3, saved = sim(k, state)
    np.testing.assert_array_equal(x2, x3)
    assert not np.array_equal(x1, x2) and not np.array_equal(saved, state)
    # XORWOW (Marsaglia 2003) from the loaded state: lane 0's first number
    x, y, z, w, v, d = (int(s) for s in state[0])
    t = x ^ (x >> 2)
    v_new = ((v ^ (v << 4)) ^ (t ^ (t << 1))) & 0xFFFFFFFF
    assert x1[0, 0] == (v_new + d + 362437) & 0xFFFFFFFF


def test_rand_state_rules():
    def k(a):
        nisa.rand_set_state(sb(a))
        return hbm(sb(a))
    msg = broken(k, np.zeros((128, 5), np.uint32), rule="err_shape_mismatch")
    assert "6" in msg

    def k2(a):
        nisa.rand_set_state(sb(a), engine=nisa.engine.vector)
        return hbm(sb(a))
    broken(k2, np.zeros((128, 24), np.uint32), rule="err_unsupported_on_target", target="trn2")


def test_dropout_drops_at_the_given_rate_and_keeps_values():
    def k(a, p):
        x = sb(a)
        o = new(a.shape, a.dtype)
        nisa.dropout(dst=o, data=x, prob=sb(p))
        return hbm(o)
    x = (np.abs(rng.standard_normal((128, 2048))) + 1).astype(np.float32)
    p = np.linspace(0, 1, 128, dtype=np.float32).reshape(128, 1)
    o = sim(k, x, p)
    kept = o != 0
    np.testing.assert_array_equal(o[kept], x[kept])
    assert np.all(kept[0]) and not np.any(kept[-1])
    np.testing.assert_allclose(1 - kept.mean(axis=1), p[:, 0], atol=0.05)


def test_dropout_rules():
    def k(a):
        o = new(a.shape, nl.bfloat16)
        nisa.dropout(dst=o, data=sb(a), prob=0.5)
        return hbm(o)
    assert "bfloat16" in broken(k, F32, rule="err_dtype_mismatch")

    def k2(a):
        o = new(a.shape, a.dtype)
        nisa.dropout(dst=o, data=sb(a), prob=1.5)
        return hbm(o)
    broken(k2, F32, rule="err_invalid_probability")


# ------------------------------------------------------------------ gathers and shuffles

def test_nc_n_gather_per_partition():
    def k(a, idx):
        o = new(idx.shape, a.dtype)
        nisa.nc_n_gather(dst=o, data=sb(a), indices=sb(idx))
        return hbm(o)
    a = rng.standard_normal((128, 4, 16)).astype(np.float32)
    idx = rng.integers(0, 64, size=(128, 40)).astype(np.uint32)
    np.testing.assert_array_equal(sim(k, a, idx), np.take_along_axis(a.reshape(128, 64), idx.astype(int), axis=1))
    msg = broken(k, a, (idx + 64).astype(np.uint32), rule="err_index_out_of_bounds")
    assert "[0, 64)" in msg

    def k2(a, idx):
        o = new(idx.shape, a.dtype)
        nisa.nc_n_gather(dst=o, data=sb(a), indices=sb(idx))
        return hbm(o)
    broken(k2, a, idx.astype(np.int32), rule="err_unsupported_dtype")


def test_local_gather_shares_indices_across_16_partitions():
    def k(src, idx):
        o = new((128, 24, 2), src.dtype)
        nisa.local_gather(dst=o, src_buffer=sb(src), index=sb(idx), num_elem_per_idx=2, num_valid_indices=24)
        return hbm(o)
    src = rng.standard_normal((128, 100)).astype(np.float32)
    idx = rng.integers(0, 98, size=(128, 2)).astype(np.uint16)
    got = sim(k, src, idx)
    ref = np.empty((128, 24, 2), np.float32)
    for c in range(8):
        rows = slice(16 * c, 16 * c + 16)
        flat = np.concatenate([idx[rows, 0], idx[rows, 1]])[:24].astype(int)   # partition-first order
        for j, i in enumerate(flat):
            ref[rows, j, :] = src[rows, i:i + 2]
    np.testing.assert_array_equal(got, ref)

    def k2(src, idx):
        o = new((128, 32, 3), src.dtype)
        nisa.local_gather(dst=o, src_buffer=sb(src), index=sb(idx), num_elem_per_idx=3)
        return hbm(o)
    assert "num_elem_per_idx=3" in broken(k2, src, idx, rule="err_invalid_arguments")


def test_nc_stream_shuffle_within_quadrants():
    mask = [(i + 5) % 32 for i in range(32)]
    mask[3] = 255

    def k(a):
        x = sb(a)
        o = new(a.shape, a.dtype)
        nisa.memset(dst=o, value=-1.0)
        nisa.nc_stream_shuffle(dst=o, src=x, shuffle_mask=mask)
        return hbm(o)
    got = sim(k, F32)
    ref = np.empty_like(F32)
    for p in range(128):
        q, i = divmod(p, 32)
        ref[p] = -1.0 if mask[i] == 255 else F32[32 * q + mask[i]]
    np.testing.assert_array_equal(got, ref)

    def k2(a):
        x = sb(a)
        o = new((32, 64), a.dtype)
        nisa.nc_stream_shuffle(dst=o, src=x[16:48, :], shuffle_mask=list(range(32)))
        return hbm(o)
    assert "partition 16" in broken(k2, F32, rule="err_shuffle_start_partition")


def test_tensor_copy_predicated_and_scalar_source():
    def k(a, b, p):
        d = sb(a)
        nisa.tensor_copy_predicated(dst=d, src=sb(b), predicate=sb(p))
        e = sb(a)
        nisa.tensor_copy_predicated(dst=e, src=7.0, predicate=sb(p), reverse_pred=True)
        return hbm(d), hbm(e)
    b = rng.standard_normal((128, 64)).astype(np.float32)
    p = rng.integers(0, 2, size=(128, 64)).astype(np.uint8)
    d, e = sim(k, F32, b, p)
    np.testing.assert_array_equal(d, np.where(p != 0, b, F32))
    np.testing.assert_array_equal(e, np.where(p == 0, 7.0, F32))
    assert "float32" in broken(k, F32, b, p.astype(np.float32), rule="err_unsupported_dtype")


def test_range_select_with_accumulated_max():
    fmin = np.finfo(np.float32).min

    def k(a, lo, hi):
        d = new(a.shape, a.dtype)
        r = new((128, 1), nl.float32)
        nisa.range_select(dst=d, on_true_tile=sb(a), comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=sb(lo),
                          bound1=sb(hi), reduce_res=r, range_start=10, on_false_value=float(fmin))
        return hbm(d), hbm(r)
    lo = rng.integers(10, 40, size=(128, 1)).astype(np.float32)
    hi = lo + rng.integers(1, 30, size=(128, 1)).astype(np.float32)
    d, r = sim(k, F32, lo, hi)
    i = 10 + np.arange(64)[None, :]
    ref = np.where((i >= lo) & (i < hi), F32, fmin)
    np.testing.assert_array_equal(d, ref)
    np.testing.assert_array_equal(r[:, 0], ref.max(axis=1))

    def k2(a, lo, hi):
        d = new(a.shape, a.dtype)
        nisa.range_select(dst=d, on_true_tile=sb(a), comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=sb(lo),
                          bound1=sb(hi), on_false_value=0.0)
        return hbm(d)
    assert "FP32_MIN" in broken(k2, F32, lo, hi, rule="err_invalid_on_false_value")


def test_select_reduce_chains_the_vector_accumulator():
    def k(a, b, p):
        d1 = new(a.shape, a.dtype)
        d2 = new(a.shape, a.dtype)
        r = new((128, 1), nl.float32)
        nisa.select_reduce(dst=d1, predicate=sb(p), on_true=sb(a), on_false=-100.0,
                           reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nisa.select_reduce(dst=d2, predicate=sb(p), on_true=sb(b), on_false=-100.0, reverse_pred=True,
                           reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=r)
        return hbm(d1), hbm(d2), hbm(r)
    b = rng.standard_normal((128, 64)).astype(np.float32)
    p = rng.integers(0, 2, size=(128, 64)).astype(np.uint8)
    d1, d2, r = sim(k, F32, b, p)
    np.testing.assert_array_equal(d1, np.where(p != 0, F32, -100))
    np.testing.assert_array_equal(d2, np.where(p == 0, b, -100))
    np.testing.assert_array_equal(r[:, 0], np.maximum(d1.max(axis=1), d2.max(axis=1)))

    def k2(a, b, p):
        d = new(a.shape, a.dtype)
        r = new((128, 1), nl.float32)
        nisa.select_reduce(dst=d, predicate=sb(p), on_true=sb(a), on_false=0.0, reduce_res=r,
                           reduce_cmd=nisa.reduce_cmd.reduce)
        return hbm(d)
    assert "reset_reduce" in broken(k2, F32, b, p, rule="err_accumulator_uninitialized")


# ------------------------------------------------------------------ search and selection

def test_max8_find_index8_match_replace8():
    def k(a):
        x = sb(a)
        m = new((128, 8), nl.float32)
        nisa.max8(dst=m, src=x)
        i = new((128, 8), nl.uint32)
        nisa.nc_find_index8(dst=i, data=x, vals=m)
        r = new(a.shape, a.dtype)
        j = new((128, 8), nl.uint16)
        nisa.nc_match_replace8(dst=r, data=x, vals=m, imm=-1e9, dst_idx=j)
        return hbm(m), hbm(i), hbm(r), hbm(j)
    x = rng.permutation(128 * 64).reshape(128, 64).astype(np.float32)
    m, i, r, j = sim(k, x)
    order = np.argsort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(m, np.take_along_axis(x, order, axis=1))
    np.testing.assert_array_equal(i, order)
    np.testing.assert_array_equal(j, order)
    ref = x.copy()
    np.put_along_axis(ref, order, -1e9, axis=1)
    np.testing.assert_array_equal(r, ref)
    msg = broken(k, x[:, :4].copy(), rule="err_size_of_dimension_exceed_arch_limit")
    assert "4 elements" in msg


def test_duplicate_vals_tie_breaks():
    def k(a, v):
        x, w = sb(a), sb(v)
        i = new((1, 8), nl.uint32)
        nisa.nc_find_index8(dst=i, data=x, vals=w)
        r = new(a.shape, a.dtype)
        j = new((1, 8), nl.uint32)
        nisa.nc_match_replace8(dst=r, data=x, vals=w, imm=0.0, dst_idx=j)
        return hbm(i), hbm(j)
    data = np.array([[1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8, 5]], np.float32)
    vals = np.array([[3, 8, 8, 8, 8, 8, 8, 8]], np.float32)
    i, j = sim(k, data, vals)
    np.testing.assert_array_equal(i[0], [2, 4, 5, 6, 7, 8, 9, 10])
    np.testing.assert_array_equal(j[0], [2, 10, 9, 8, 7, 6, 5, 4])
    vals2 = vals.copy()
    vals2[0, 0] = 42                                   # absent: the all-ones sentinel
    i2, _ = sim(k, data, vals2)
    assert i2[0, 0] == 0xFFFFFFFF


def test_topk_over_the_16_partition_snake():
    n, K = 42, 8

    def k(a):
        v = new((32, K), nl.bfloat16)
        i = new((32, K), nl.uint32)
        nisa.topk(val_dst=v, idx_dst=i, src=sb(a), n=n)
        return hbm(v), hbm(i)
    x = rng.permutation(32 * 3).reshape(32, 3).astype(ml_dtypes.bfloat16)
    v, i = sim(k, x)
    for g in range(2):
        snake = np.array([x[16 * g + j % 16, j // 16] for j in range(n)], np.float32)
        top = np.sort(np.argsort(-snake)[:K])
        want = np.sort(snake)[-K:]
        for p in range(16 * g, 16 * g + 16):
            np.testing.assert_array_equal(v[p].astype(np.float32), want)
            np.testing.assert_array_equal(np.sort(i[p]), top)
            np.testing.assert_array_equal(snake[i[p].astype(int)], v[p].astype(np.float32))
    assert "bfloat16" in broken(k, x.astype(np.float32), rule="err_unsupported_dtype")


def test_nonzero_with_count_on_each_cores_first_partition():
    def k(a):
        o = new((128, 17), nl.int32)
        nisa.memset(dst=o, value=99)
        nisa.nonzero_with_count(dst=o, src=sb(a), index_offset=16, padding_val=-1)
        return hbm(o)
    x = (rng.random((128, 16)) < 0.3).astype(np.float32)
    o = sim(k, x)
    for p in range(128):
        if p % 16:
            assert np.all(o[p] == 99)
            continue
        nz = np.flatnonzero(x[p]) + 16
        np.testing.assert_array_equal(o[p, :nz.size], nz)
        assert np.all(o[p, nz.size:16] == -1) and o[p, 16] == nz.size

    def k2(a):
        o = new((128, 16), nl.int32)
        nisa.nonzero_with_count(dst=o, src=sb(a))
        return hbm(o)
    assert "[128, 17]" in broken(k2, x, rule="err_shape_mismatch")


# ------------------------------------------------------------------ scans and partition reductions

def test_tensor_scalar_cumulative_prefix_ops():
    def k(a, init):
        x = sb(a)
        s = new(a.shape, a.dtype)
        nisa.tensor_scalar_cumulative(dst=s, src=x, op0=nl.multiply, op1=nl.add, imm0=2.0)
        m = new(a.shape, a.dtype)
        nisa.tensor_scalar_cumulative(dst=m, src=x, op0=nl.add, op1=nl.maximum, imm0=1.0)
        c = new(a.shape, a.dtype)
        nisa.tensor_scalar_cumulative(dst=c, src=x, op0=nl.multiply, op1=nl.add, imm0=1.0, imm1=sb(init),
                                      reduce_cmd=nisa.reduce_cmd.load_reduce)
        c2 = new(a.shape, a.dtype)
        nisa.tensor_scalar_cumulative(dst=c2, src=x, op0=nl.multiply, op1=nl.add, imm0=1.0,
                                      reduce_cmd=nisa.reduce_cmd.reduce)
        return hbm(s), hbm(m), hbm(c), hbm(c2)
    init = rng.standard_normal((128, 1)).astype(np.float32)
    s, m, c, c2 = sim(k, F32, init)
    np.testing.assert_allclose(s, np.cumsum(2 * F32, axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(m, np.maximum.accumulate(F32 + 1, axis=1))
    np.testing.assert_allclose(c, init + np.cumsum(F32, axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c2, c[:, -1:] + np.cumsum(F32, axis=1), rtol=1e-5, atol=1e-4)

    def k2(a):
        s = new(a.shape, nl.int32)
        nisa.tensor_scalar_cumulative(dst=s, src=sb(a), op0=nl.add, op1=nl.add, imm0=0)
        return hbm(s)
    assert "int32" in broken(k2, F32.astype(np.int32), rule="err_unsupported_dtype")


@pytest.mark.parametrize("op, ref", [(nl.add, np.sum), (nl.maximum, np.max), ("average", np.mean)])
def test_tensor_partition_reduce(op, ref):
    def k(a):
        o = new((1, 64), a.dtype)
        nisa.tensor_partition_reduce(dst=o, op=op, data=sb(a))
        return hbm(o)
    np.testing.assert_allclose(sim(k, F32)[0], ref(F32, axis=0), rtol=1e-5, atol=1e-5)


def test_tensor_partition_reduce_bitwise_and_rule():
    def k(a):
        o = new((1, 8), a.dtype)
        nisa.tensor_partition_reduce(dst=o, op=nl.bitwise_or, data=sb(a))
        return hbm(o)
    x = rng.integers(0, 2 ** 20, size=(128, 8)).astype(np.int32)
    np.testing.assert_array_equal(sim(k, x)[0], np.bitwise_or.reduce(x, axis=0))

    def k2(a):
        o = new((2, 8), a.dtype)
        nisa.tensor_partition_reduce(dst=o, op=nl.add, data=sb(a))
        return hbm(o)
    assert "(1, 8)" in broken(k2, x, rule="err_shape_mismatch")


def test_sequence_bounds():
    def k(a):
        o = new((1, 2, a.shape[1]), a.dtype)
        nisa.sequence_bounds(dst=o, segment_ids=sb(a))
        return hbm(o)
    ids = np.array([[1, 1, 1, 2, 2, 0, 0, 3, 3, 3, 3, 0]], np.int32)
    o = sim(k, ids)
    np.testing.assert_array_equal(o[0, 0], [0, 0, 0, 3, 3, 12, 12, 7, 7, 7, 7, 12])
    np.testing.assert_array_equal(o[0, 1], [3, 3, 3, 5, 5, -1, -1, 11, 11, 11, 11, -1])
    assert "one partition" in broken(k, np.ones((2, 12), np.int32), rule="err_num_partition_mismatch")


# ------------------------------------------------------------------ NeuronCore-v4 fused instructions

def test_activate2_scale_bias_activation_and_reduce():
    def k(a, s):
        x = sb(a)
        d = new(a.shape, a.dtype)
        r = new((128, 1), nl.float32)
        nisa.activate2(dst=d, op=nl.tanh, data=x, imm0=sb(s), imm1=0.25, op0=nl.multiply, op1=nl.subtract,
                       reduce_op=nl.add, reduce_res=r, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        e = new(a.shape, a.dtype)
        nisa.activate2(dst=e, op="prelu", data=x, imm0=1.0, imm1=0.0, op0=nl.subtract, op1="bypass",
                       reverse0=True, relu_param=0.1)
        return hbm(d), hbm(r), hbm(e)
    s = rng.random((128, 1)).astype(np.float32)
    d, r, e = sim(k, F32, s, target="trn3")
    ref = np.tanh(F32 * s - 0.25)
    np.testing.assert_allclose(d, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r[:, 0], ref.sum(axis=1), rtol=1e-4, atol=1e-4)
    y = 1.0 - F32
    np.testing.assert_allclose(e, np.where(y > 0, y, 0.1 * y), rtol=1e-6)

    def k2(a, s):
        d = new(a.shape, a.dtype)
        nisa.activate2(dst=d, op=nl.exp, data=sb(a), imm0=1.0, imm1=1.0, op0=nl.add, op1=nl.multiply)
        return hbm(d)
    assert "op0=add, op1=multiply" in broken(k2, F32, s, rule="err_unsupported_op", target="trn3")
    broken(k2, F32, s, rule="err_unsupported_on_target", target="trn2")


def test_exponential_with_running_sum_over_two_chunks():
    def k(a, m):
        x = sb(a)
        mx = sb(m)
        d1 = new((128, 32), nl.float32)
        d2 = new((128, 32), nl.float32)
        r = new((128, 1), nl.float32)
        nisa.exponential(dst=d1, src=x[:, 0:32], max_value=mx, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nisa.exponential(dst=d2, src=x[:, 32:64], max_value=mx, reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=r)
        return hbm(d1), hbm(d2), hbm(r)
    m = F32.max(axis=1, keepdims=True)
    d1, d2, r = sim(k, F32, m, target="trn3")
    ref = np.exp(F32 - m)
    np.testing.assert_allclose(np.concatenate([d1, d2], axis=1), ref, rtol=1e-6)
    np.testing.assert_allclose(r[:, 0], ref.sum(axis=1), rtol=1e-5)

    def k2(a, m):
        d = new(a.shape, nl.float32)
        nisa.exponential(dst=d, src=sb(a), reduce_init=1.0, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        return hbm(d)
    assert "load_reduce" in broken(k2, F32, m, rule="err_invalid_arguments", target="trn3")


# ------------------------------------------------------------------ DMA transforms

@pytest.mark.parametrize("shape", [(16, 96), (4, 8, 32), (2, 3, 4, 16)])
def test_dma_transpose(shape):
    perm = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}[len(shape)]

    def k(a):
        d = new(tuple(shape[p] for p in perm), a.dtype)
        nisa.dma_transpose(dst=d, src=a)
        return hbm(d)
    x = rng.standard_normal(shape).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(sim(k, x), np.transpose(x, perm))


def test_dma_transpose_rules():
    def k(a):
        d = new((96, 16), a.dtype)
        nisa.dma_transpose(dst=d, src=a, dge_mode=nisa.dge_mode.hwdge)
        return hbm(d)
    assert "2-byte" in broken(k, rng.standard_normal((16, 96)).astype(np.float32), rule="err_hwdge_transpose_limits")

    def k2(a):
        d = new((4, 8, 32), a.dtype)
        nisa.dma_transpose(dst=d, src=a, axes=(0, 2, 1))
        return hbm(d)
    assert "(2, 1, 0)" in broken(k2, np.zeros((4, 32, 8), np.float32), rule="err_unsupported_transpose_axes")


def test_dma_compute_sums_sources_in_fp32():
    def k(a, b, c):
        d = new(a.shape, nl.bfloat16)
        nisa.dma_compute(dst=d, srcs=[a, sb(b), c], reduce_op=nl.add)
        return hbm(d)
    b = rng.standard_normal((128, 64)).astype(np.float32)
    c = rng.standard_normal((128, 64)).astype(ml_dtypes.bfloat16)
    got = sim(k, F32, b, c)
    ref = (F32 + b + c.astype(np.float32)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got, ref)

    def k2(a, b, c):
        d = new(a.shape, a.dtype)
        nisa.dma_compute(dst=d, srcs=[a, b], reduce_op=nl.add, scales=[1.0, 2.0])
        return hbm(d)
    assert "1.0" in broken(k2, F32, b, c, rule="err_unsupported_scale")


# ------------------------------------------------------------------ MX (NeuronCore-v4)

def _mx_ref_quantize(x, elem):
    """Reference MX quantisation of x [P, 4F]: data [P, F, 4] values and scale exponents [P//8, F]."""
    P, F4 = x.shape
    g = x.astype(np.float32).reshape(P // 8, 8, F4 // 4, 4)
    amax = np.abs(g).max(axis=(1, 3))
    emax = {"e4m3fn": 8, "e5m2": 15}[elem]
    e = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1))) - (emax - 1), -127)
    q = (g / np.exp2(e)[:, None, :, None]).astype(getattr(ml_dtypes, "float8_" + elem)).astype(np.float32)
    return q.reshape(P, F4 // 4, 4), e.astype(int)


def _scale_rows(P):
    return [32 * (g // 4) + g % 4 for g in range(P // 8)]


@pytest.mark.parametrize("elem", ["e4m3fn", "e5m2"])
def test_quantize_mx_scales_and_packing(elem):
    dtx4 = getattr(nl, f"float8_{elem}_x4")

    def k(a):
        x = sb(a)
        q = new((128, 16), dtx4)
        s = new((128, 16), nl.float8_e8m0fnu)
        nisa.memset(dst=s, value=1.0)
        nisa.quantize_mx(dst=q, src=x, dst_scale=s)
        return hbm(q), hbm(s)
    x = (rng.standard_normal((128, 64)) * np.exp2(rng.integers(-6, 6, size=(128, 1)))).astype(ml_dtypes.bfloat16)
    x[0:8, 0:4] = 0                                    # an all-zero group: scale 2**-127
    q, s = sim(k, x, target="trn3")
    vals, e = _mx_ref_quantize(x, elem)
    got = q.view(np.uint8).reshape(128, 16, 4).view(getattr(ml_dtypes, "float8_" + elem)).astype(np.float32)
    np.testing.assert_array_equal(got, vals)
    sbits = s.view(np.uint8)
    np.testing.assert_array_equal(sbits[_scale_rows(128)].astype(int) - 127, e)
    others = np.setdiff1d(np.arange(128), _scale_rows(128))
    assert np.all(s[others].astype(np.float32) == 1.0)            # rows that hold no scale are untouched
    assert sbits[0, 0] == 0
    # dequantised values are within half an fp8 step of the group's top binade: |err| <= amax * 2**-(mantissa+1)
    deq = (vals * np.exp2(np.repeat(e, 8, axis=0))[:, :, None]).reshape(128, 16, 4)
    xf = x.astype(np.float32).reshape(128, 16, 4)
    amax = np.repeat(np.abs(xf.reshape(16, 8, 16, 4)).max(axis=(1, 3)), 8, axis=0)[:, :, None]
    half_step = {"e4m3fn": 2.0 ** -4, "e5m2": 2.0 ** -3}[elem]
    assert np.all(np.abs(deq - xf) <= amax * half_step)
    assert np.abs(deq - xf).max() > 0                                # and it did round something


def test_quantize_mx_rules():
    def k(a):
        q = new((24, 16), nl.float8_e4m3fn_x4)
        s = new((3, 16), nl.float8_e8m0fnu)
        nisa.quantize_mx(dst=q, src=sb(a), dst_scale=s)
        return hbm(q)
    x = np.zeros((24, 64), ml_dtypes.bfloat16)
    assert "24 partitions" in broken(k, x, rule="err_mx_partitions", target="trn3")
    broken(k, x, rule="err_unsupported_on_target", target="trn2")

    def k2(a):
        q = new((64, 16), nl.float8_e4m3fn_x4)
        s = new((8, 16), nl.float8_e8m0fnu)             # 64 partitions span 2 quadrants: needs >= 36 rows
        nisa.quantize_mx(dst=q, src=sb(a), dst_scale=s)
        return hbm(q)
    assert "36 partitions" in broken(k2, np.zeros((64, 64), ml_dtypes.bfloat16), rule="err_mx_scale_shape",
                                     target="trn3")


def _mx_matmul_kernel(xs, xm):
    S = sb(xs)
    M = sb(xm)
    qs = new((128, 32), nl.float8_e4m3fn_x4)
    ss = new((128, 32), nl.float8_e8m0fnu)
    nisa.quantize_mx(dst=qs, src=S, dst_scale=ss)
    qm = new((128, 128), nl.float8_e5m2_x4)
    sm = new((128, 128), nl.float8_e8m0fnu)
    nisa.quantize_mx(dst=qm, src=M, dst_scale=sm)
    acc = new((32, 128), nl.float32, nl.psum)
    nisa.nc_matmul_mx(dst=acc, stationary=qs, moving=qm, stationary_scale=ss, moving_scale=sm)
    nisa.nc_matmul_mx(dst=acc, stationary=qs, moving=qm, stationary_scale=ss, moving_scale=sm)   # accumulates
    out = new((32, 128), nl.float32)
    nisa.tensor_copy(dst=out, src=acc)
    return hbm(out)


def test_nc_matmul_mx_matches_dequantised_matmul():
    xs = rng.standard_normal((128, 128)).astype(ml_dtypes.bfloat16)
    xm = rng.standard_normal((128, 512)).astype(ml_dtypes.bfloat16)
    got = sim(_mx_matmul_kernel, xs, xm, target="trn3")
    vs, es = _mx_ref_quantize(xs, "e4m3fn")
    vm, em = _mx_ref_quantize(xm, "e5m2")
    ds = vs * np.exp2(np.repeat(es, 8, axis=0))[:, :, None]           # [128, 32, 4]
    dm = vm * np.exp2(np.repeat(em, 8, axis=0))[:, :, None]           # [128, 128, 4]
    ref = 2 * np.einsum("pmk,pnk->mn", ds.astype(np.float64), dm.astype(np.float64))
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-3)
    # and close to the unquantised product (MX error, not a wiring error)
    exact = 2 * np.einsum("pmk,pnk->mn", xs.astype(np.float32).reshape(128, 32, 4),
                          xm.astype(np.float32).reshape(128, 128, 4))
    assert np.abs(got - exact).max() / np.abs(exact).max() < 0.1


def test_nc_matmul_mx_fp4_operands_from_hbm():
    fp4 = ml_dtypes.float4_e2m1fn
    vals_s = rng.choice([-6, -3, -1, -0.5, 0, 0.5, 1, 1.5, 2, 4, 6], size=(32, 8, 4)).astype(np.float32)
    vals_m = rng.choice([-2, -1, 0, 1, 3, 6], size=(32, 16, 4)).astype(np.float32)

    def pack4(v):
        nib = v.astype(fp4).view(np.uint8).astype(np.uint16) & 0xF
        return (nib[..., 0] | nib[..., 1] << 4 | nib[..., 2] << 8 | nib[..., 3] << 12).astype(np.uint16)
    es = rng.integers(120, 130, size=(4, 8)).astype(np.uint8)
    em = rng.integers(120, 130, size=(4, 16)).astype(np.uint8)

    def k(ws, wm, bs, bm):
        S = new((32, 8), nl.float4_e2m1fn_x4)
        nisa.dma_copy(dst=S, src=ws)                  # packed words move bit for bit
        M = new((32, 16), nl.float4_e2m1fn_x4)
        nisa.dma_copy(dst=M, src=wm)
        acc = new((8, 16), nl.float32, nl.psum)
        nisa.nc_matmul_mx(dst=acc, stationary=S, moving=M, stationary_scale=sb(bs), moving_scale=sb(bm),
                          tile_position=(32, 0), tile_size=(32, 128))
        out = new((8, 16), nl.float32)
        nisa.tensor_copy(dst=out, src=acc)
        return hbm(out)
    got = sim(k, pack4(vals_s), pack4(vals_m), es, em, target="trn3")
    ds = vals_s * np.exp2(np.repeat(es.astype(int) - 127, 8, axis=0))[:, :, None]
    dm = vals_m * np.exp2(np.repeat(em.astype(int) - 127, 8, axis=0))[:, :, None]
    np.testing.assert_allclose(got, np.einsum("pmk,pnk->mn", ds, dm), rtol=1e-6)


def test_nc_matmul_mx_rules():
    def k(a):
        x = sb(a)
        acc = new((32, 32), nl.float32, nl.psum)
        ones = new((128, 32), nl.float8_e8m0fnu)
        nisa.nc_matmul_mx(dst=acc, stationary=x, moving=x, stationary_scale=ones, moving_scale=ones)
        return hbm(x)
    assert "quantize_mx" in broken(k, np.zeros((128, 32), ml_dtypes.bfloat16), rule="err_unsupported_dtype",
                                   target="trn3")

    def k2(w):
        S = new((64, 8), nl.float8_e4m3fn_x4)
        nisa.dma_copy(dst=S, src=w)
        sc = new((64, 8), nl.float8_e8m0fnu)
        nisa.memset(dst=sc, value=1.0)
        acc = new((8, 8), nl.float32, nl.psum)
        nisa.nc_matmul_mx(dst=acc, stationary=S, moving=S, stationary_scale=sc, moving_scale=sc,
                          tile_position=(32, 0), tile_size=(32, 128))
        return hbm(sc)
    msg = broken(k2, np.zeros((64, 8), np.uint32), rule="err_invalid_tile_position", target="trn3")
    assert "K=64" in msg


# ------------------------------------------------------------------ two-core (LNC=2) synchronisation

def _exchange(a):
    """Each core sends its half of `a` to the other; out[my half] = mine - theirs."""
    me = nl.program_id(0)
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    mine = sb(a[64 * me:64 * me + 64, :])
    got = new((64, 64), a.dtype)
    nisa.sendrecv(src=mine, dst=got, send_to_rank=1 - me, recv_from_rank=1 - me, pipe_id=0)
    total = new((64, 64), a.dtype)
    nisa.tensor_tensor(dst=total, data1=mine, data2=got, op=nl.subtract)
    nisa.dma_copy(dst=out[64 * me:64 * me + 64, :], src=total)
    return out


def test_sendrecv_exchanges_data_both_ways():
    x = rng.standard_normal((128, 64)).astype(np.float32)
    k = nki.jit(_exchange)[2]
    got = nki.simulate(k)(x)
    np.testing.assert_array_equal(got[:64], x[:64] - x[64:])    # core 0 consumed what core 1 sent
    np.testing.assert_array_equal(got[64:], x[64:] - x[:64])
    ops = [(i.engine, i.attrs["send_to_rank"], i.bytes_moved, i.core) for i in k.last_trace.instructions
           if i.opcode == "sendrecv"]
    assert ops == [("dma", 1, 64 * 64 * 4, 0), ("dma", 0, 64 * 64 * 4, 1)]


def _ping_pong(a):
    """Core 0 sends a to core 1, core 1 sends 2a back, core 0 stores 2a + 1: core 0 waits for data core 1
    computes from what core 0 sent (the cores must run interleaved)."""
    me = nl.program_id(0)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = sb(a)
    got = new(a.shape, a.dtype)
    nisa.sendrecv(src=t, dst=got, send_to_rank=1 - me, recv_from_rank=1 - me, pipe_id=0)
    if me == 1:
        nisa.tensor_scalar(dst=t, data=got, op0=nl.multiply, operand0=2.0)
    back = new(a.shape, a.dtype)
    nisa.sendrecv(src=t, dst=back, send_to_rank=1 - me, recv_from_rank=1 - me, pipe_id=0)
    if me == 0:
        nisa.tensor_scalar(dst=back, data=back, op0=nl.add, operand0=1.0)
        nisa.dma_copy(dst=out, src=back)
    return out


def test_sendrecv_round_trip_core0_consumes_core1_result():
    x = rng.standard_normal((32, 16)).astype(np.float32)
    k = nki.jit(_ping_pong)[2]
    np.testing.assert_allclose(nki.simulate(k)(x), 2 * x + 1, rtol=1e-6)
    cores = [i.core for i in k.last_trace.instructions if i.opcode == "sendrecv"]
    assert cores == [0, 1, 1, 0]   # core 1 runs between core 0's two sendrecvs


def test_sendrecv_pairs_partners_along_the_nc_axis_of_a_grid():
    """kernel[nl.spmd_dim(4, nl.nc(2)), 3]: programs (2i, j) and (2i + 1, j) are one core pair and exchange."""
    def k(a):
        i, j = nl.program_id(0), nl.program_id(1)
        out = nl.ndarray((8, 3, 4), dtype=a.dtype, buffer=nl.shared_hbm)
        t = new((1, 4), a.dtype)
        nisa.memset(dst=t, value=float(10 * i + j))
        got = new((1, 4), a.dtype)
        nisa.sendrecv(src=t, dst=got, send_to_rank=1 - i % 2, recv_from_rank=1 - i % 2, pipe_id=0)
        nisa.dma_copy(dst=out[i, j:j + 1, :], src=got)
        return out
    got = nki.simulate(nki.jit(k)[nl.spmd_dim(4, nl.nc(2)), 3])(np.zeros((1, 1), np.float32))
    partner = np.array([[10 * (i ^ 1) + j for j in range(3)] for i in range(8)], np.float32)
    np.testing.assert_array_equal(got, np.repeat(partner[:, :, None], 4, axis=2))


def test_sendrecv_timing_only_trace_runs_both_cores():
    from trnsim.nki import typing as nt
    out, tr = nki.trace_kernel(nki.jit(_exchange)[2], nt.tensor[[128, 64], nl.float32])
    assert out is None and sorted(i.core for i in tr.instructions if i.opcode == "sendrecv") == [0, 1]


def test_sendrecv_without_a_peer_is_a_deadlock_error():
    def k(a):
        me = nl.program_id(0)
        t = sb(a)
        d = new(a.shape, a.dtype)
        if me == 0:      # core 1 never makes the matching call
            nisa.sendrecv(src=t, dst=d, send_to_rank=1, recv_from_rank=1, pipe_id=3)
        return hbm(t)
    with pytest.raises(KernelError) as exc:
        nki.simulate(nki.jit(k)[2])(F32)
    msg = str(exc.value)
    assert exc.value.rule == "err_lnc_deadlock", msg
    assert "core 0 waits at sendrecv pipe 3 #0" in msg and "core 1 ended" in msg and "same pipe_id" in exc.value.fix

    def k2(a):
        me = nl.program_id(0)
        t = sb(a)
        d = new(a.shape, a.dtype)
        if me == 0:
            nisa.sendrecv(src=t, dst=d, send_to_rank=1, recv_from_rank=1, pipe_id=0)
        else:
            nisa.core_barrier(data=a, cores=(0, 1))
        return hbm(t)
    with pytest.raises(KernelError) as exc:
        nki.simulate(nki.jit(k2)[2])(F32)
    assert exc.value.rule == "err_lnc_deadlock" and "core 0 at sendrecv" in str(exc.value) \
        and "core 1 at core_barrier #0" in str(exc.value)


def test_sendrecv_rules():
    def k(a):
        t = sb(a)
        nisa.sendrecv(src=t, dst=t, send_to_rank=1, recv_from_rank=1, pipe_id=0)
        return hbm(t)
    assert "LNC=1" in broken(k, F32, rule="err_requires_lnc2")

    def k2(a):
        t = sb(a)
        d = new(a.shape, a.dtype)
        nisa.sendrecv(src=t, dst=d, send_to_rank=1, recv_from_rank=1, pipe_id=0,
                      dma_engine=nisa.dma_engine.gpsimd_dma)
        return hbm(d)
    with pytest.raises(KernelError, match="err_size_of_dimension_exceed_arch_limit") as exc:
        nki.simulate(nki.jit(k2)[2])(rng.standard_normal((128, 512)).astype(np.float32))
    assert "1024" in str(exc.value)


def _halves(a):
    """Core c scales its half by c + 2 and writes it to shared HBM; after the barrier each core reads the
    other's half: out[my half] = other - mine."""
    me = nl.program_id(0)
    shared = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    part = sb(a[64 * me:64 * me + 64, :])
    nisa.tensor_scalar(dst=part, data=part, op0=nl.multiply, operand0=float(me + 2))
    nisa.dma_copy(dst=shared[64 * me:64 * me + 64, :], src=part)
    nisa.core_barrier(data=shared, cores=(0, 1))
    other = sb(shared[64 * (1 - me):64 * (1 - me) + 64, :])
    nisa.tensor_tensor(dst=other, data1=other, data2=part, op=nl.subtract)
    nisa.dma_copy(dst=out[64 * me:64 * me + 64, :], src=other)
    return out


def test_core_barrier_orders_writes_before_reads_on_both_cores():
    x = rng.standard_normal((128, 64)).astype(np.float32)
    k = nki.jit(_halves)[2]
    got = nki.simulate(k)(x)
    np.testing.assert_allclose(got[:64], 3 * x[64:] - 2 * x[:64], rtol=1e-6)   # core 0 read core 1's write
    np.testing.assert_allclose(got[64:], 2 * x[:64] - 3 * x[64:], rtol=1e-6)
    order = [(i.opcode, i.core) for i in k.last_trace.instructions if i.opcode == "core_barrier"]
    assert order == [("core_barrier", 0), ("core_barrier", 1)]

    def k(a):
        nisa.core_barrier(data=a, cores=(0, 2))
        return hbm(sb(a))
    with pytest.raises(KernelError, match=r"cores=\(0, 2\)"):
        nki.simulate(nki.jit(k)[2])(F32)


# ------------------------------------------------------------------ 0.6 forms of instructions that already existed

def test_iota_and_affine_select_access_pattern_forms():
    def k(a):
        t = new((128, 64), nl.int32)
        nisa.iota(t, [[8, 8], [1, 8]], 5, 100)                     # positional 0.6 form
        x = sb(a)
        m = new(a.shape, a.dtype)
        nisa.affine_select(dst=m, pattern=[[-1, 64]], channel_multiplier=1, on_true_tile=x, on_false_value=-9984.0,
                           cmp_op=nl.greater_equal)
        return hbm(t), hbm(m)
    t, m = sim(k, F32)
    p, i = np.arange(128)[:, None], np.arange(64)[None, :]
    np.testing.assert_array_equal(t, 5 + 100 * p + i)
    np.testing.assert_array_equal(m, np.where(p - i >= 0, F32, -9984.0))

    def k2(a):
        t = new((128, 64), nl.int32)
        nisa.iota(dst=t, pattern=[[1, 32]])
        return hbm(t)
    assert "64" in broken(k2, F32, rule="err_shape_mismatch")


def test_tensor_scalar_reduce_accumulates_across_calls_and_negates():
    def k(a):
        x = sb(a)
        d = new(a.shape, a.dtype)
        r = new((128, 1), nl.float32)
        nisa.tensor_scalar_reduce(dst=d[:, 0:32], data=x[:, 0:32], op0=nl.multiply, operand0=2.0, reduce_op=nl.maximum)
        nisa.tensor_scalar_reduce(dst=d[:, 32:64], data=x[:, 32:64], op0=nl.multiply, operand0=2.0,
                                  reduce_op=nl.maximum, reduce_res=r, reduce_cmd=nisa.reduce_cmd.reduce,
                                  reduce_res_negate=True)
        s = new((128, 1), nl.float32)
        nisa.tensor_scalar_reduce(dst=d, data=x, op0=nl.add, operand0=0.0, reduce_op=nl.add, reduce_res=s,
                                  reduce_cmd=nisa.reduce_cmd.load_reduce, reduce_init=10.0)
        return hbm(d), hbm(r), hbm(s)
    d, r, s = sim(k, F32)
    np.testing.assert_array_equal(d, F32)
    np.testing.assert_array_equal(r[:, 0], -(2 * F32).max(axis=1))
    np.testing.assert_allclose(s[:, 0], 10 + F32.sum(axis=1), rtol=1e-5)

    def k2(a):
        d = new(a.shape, a.dtype)
        nisa.tensor_scalar_reduce(dst=d, data=sb(a), op0=nl.add, operand0=0.0, reduce_op=nl.add, reduce_init=1.0)
        return hbm(d)
    assert "load_reduce" in broken(k2, F32, rule="err_invalid_arguments")


def test_activation_reduce_cmd_uses_the_scalar_accumulator():
    def k(a):
        x = sb(a)
        d = new(a.shape, a.dtype)
        r = new((128, 1), nl.float32)
        nisa.activation(dst=d[:, 0:32], op=nl.exp, data=x[:, 0:32], reduce_op=nl.add,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nisa.activation(dst=d[:, 32:64], op=nl.exp, data=x[:, 32:64], reduce_op=nl.add, reduce_res=r,
                        reduce_cmd=nisa.reduce_cmd.reduce)
        return hbm(r)
    np.testing.assert_allclose(sim(k, F32)[:, 0], np.exp(F32).sum(axis=1), rtol=1e-5)

    def k2(a):
        d = new(a.shape, a.dtype)
        nisa.activation(dst=d, op=nl.exp, data=sb(a), reduce_op=nl.add, reduce_cmd=nisa.reduce_cmd.reduce)
        return hbm(d)
    broken(k2, F32, rule="err_accumulator_uninitialized")


def test_positional_dst_forms():
    def k(a):
        x = sb(a)
        r = new(a.shape, a.dtype)
        nisa.reciprocal(r, x)
        st = new((128, 6), nl.float32)
        nisa.bn_stats(st, x)
        mv = new((128, 2), nl.float32)
        nisa.bn_aggr(mv, st)
        sc = new(a.shape, a.dtype)
        nisa.tensor_tensor_scan(sc, x, x, 0.0, nl.multiply, nl.add)
        return hbm(r), hbm(mv), hbm(sc)
    x = (np.abs(F32) + 0.5).astype(np.float32)
    r, mv, sc = sim(k, x)
    np.testing.assert_allclose(r, 1 / x, rtol=1e-6)
    np.testing.assert_allclose(mv, np.stack([x.mean(1), x.var(1)], 1), rtol=1e-4)
    ref = np.zeros_like(x)
    acc = np.zeros(128, np.float32)
    for i in range(64):
        acc = x[:, i] * acc + x[:, i]
        ref[:, i] = acc
    np.testing.assert_allclose(sc, ref, rtol=1e-4)


def test_packed_mx_words_are_not_arithmetic_operands():
    def k(w):
        q = new((32, 8), nl.float8_e4m3fn_x4)
        nisa.dma_copy(dst=q, src=w)
        f = new((32, 8), nl.float32)
        nisa.tensor_copy(dst=f, src=q)
        return hbm(f)
    assert "nc_matmul_mx" in broken(k, np.zeros((32, 8), np.uint32), rule="err_unsupported_dtype", target="trn3")


def test_beta1_value_returning_forms_of_the_new_instructions():
    def k(a, p):
        x = sb(a)
        m = nisa.max8(src=x)
        i = nisa.nc_find_index8(data=x, vals=m)
        r = nisa.nc_match_replace8(data=x, vals=m, imm=0.0)
        s = nisa.select_reduce(predicate=sb(p), on_true=x, on_false=-1.0)
        c = nisa.tensor_partition_reduce(op=nl.add, data=x)
        return hbm(m), hbm(i), hbm(r), hbm(s), hbm(c)
    p = rng.integers(0, 2, size=(128, 64)).astype(np.uint8)
    m, i, r, s, c = sim(k, F32, p)
    order = np.argsort(-F32, axis=1)[:, :8]
    np.testing.assert_array_equal(m, np.take_along_axis(F32, order, 1))
    np.testing.assert_array_equal(i, order)
    assert m.dtype == np.float32 and i.dtype == np.uint32 and np.sum(r == 0) == 128 * 8
    np.testing.assert_array_equal(s, np.where(p != 0, F32, -1.0))
    np.testing.assert_allclose(c[0], F32.sum(0), rtol=1e-5, atol=1e-5)


# the public names of the NKI 0.6 nki.isa reference (aws-neuron-sdk nki/api/nki/isa, Neuron SDK 2.32)
NKI06_ISA_NAMES = """
NkiInstruction NkiValidationError VirtualRegister activate2 activation activation_reduce affine_select bn_aggr
bn_stats core_barrier dge_mode dma_compute dma_copy dma_engine dma_transpose dropout engine exponential
get_nc_sub_version get_nc_version gpsimd_engine iota local_gather matmul_perf_mode max8 memset nc_find_index8
nc_match_replace8 nc_matmul nc_matmul_mx nc_n_gather nc_stream_shuffle nc_transpose nc_version nonzero_with_count
oob_mode quantize_mx rand2 rand_get_state rand_set_state range_select reciprocal reduce_cmd register_alloc
register_load register_move register_store rng scalar_engine scalar_tensor_tensor select_reduce sendrecv
sequence_bounds set_rng_seed tensor_copy tensor_copy_predicated tensor_engine tensor_partition_reduce tensor_reduce
tensor_scalar tensor_scalar_cumulative tensor_scalar_reduce tensor_tensor tensor_tensor_scan topk unknown_engine
vector_engine""".split()


def test_every_nki06_isa_name_exists():
    assert len(NKI06_ISA_NAMES) == 67
    assert [n for n in NKI06_ISA_NAMES if not hasattr(nisa, n)] == []
    assert set(NKI06_ISA_NAMES) <= set(nisa.__all__)


def test_beta1_mask_on_max8_and_find_index8():
    import trnsim.neuronxcc.nki as bnki
    import trnsim.neuronxcc.nki.isa as bisa
    import trnsim.neuronxcc.nki.language as bnl

    @bnki.jit
    def k(a):
        out = bnl.ndarray((128, 8), dtype=a.dtype, buffer=bnl.shared_hbm)
        idx = bnl.ndarray((128, 8), dtype=bnl.uint32, buffer=bnl.shared_hbm)
        x = bnl.load(a)
        i_f = bnl.arange(64)[None, :]
        m = bisa.max8(src=x, mask=(i_f < 32))
        bnl.store(out, m)
        bnl.store(idx, bisa.nc_find_index8(data=x, vals=m, mask=(i_f < 32)))
        return out, idx
    m, idx = bnki.simulate_kernel(k, F32)
    order = np.argsort(-F32[:, :32], axis=1)[:, :8]
    np.testing.assert_array_equal(m, np.take_along_axis(F32[:, :32], order, 1))
    np.testing.assert_array_equal(idx, order)


def test_tensor_copy_on_the_scalar_engine_is_refused_on_neuroncore_v2():
    """nki.isa.tensor_copy: 'On NeuronCore v2, tensor_copy is not supported on the Scalar Engine'."""
    def body(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        u = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=u, src=t, engine=nisa.engine.scalar)
        nisa.dma_copy(dst=out, src=u)
        return out

    x = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    with pytest.raises(KernelError, match="activation") as exc:
        nki.simulate(nki.jit(body, target="trn1"))(x)
    assert exc.value.rule == "err_unsupported_engine"
    np.testing.assert_array_equal(nki.simulate(nki.jit(body, target="trn2"))(x), x)


def test_tensor_tensor_needs_the_same_elements_per_partition():
    """nki.isa.tensor_tensor: "the two tiles must have the same partition axis size and the same number of elements
    per partition". A [P, 1] column is refused (naming tensor_scalar); broadcast explicitly, it is accepted."""
    x = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)

    def kern(x, refuse):
        t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        col = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=col, src=x[:, 0:1])
        o = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        if refuse:
            nisa.tensor_tensor(dst=o, data1=t, data2=col, op=nl.add)
        nisa.tensor_tensor(dst=o, data1=t, data2=nl.broadcast_to(col, (128, 64)), op=nl.add)
        out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=o)
        return out
    got = nki.simulate(nki.jit(kern))(x, False)
    np.testing.assert_array_equal(got, x + x[:, 0:1])
    with pytest.raises(KernelError) as e:
        nki.simulate(nki.jit(kern))(x, True)
    assert e.value.rule == "err_shape_mismatch"
    assert "data2[128, 1] has 1" in str(e.value) and "nisa.tensor_scalar" in str(e.value)


def test_a_result_is_not_broadcast_into_a_wider_dst():
    """0.6 destination passing: a [128, 1] result (a reduction, a column copy) written into a [128, 4] dst is
    refused, not broadcast; the right dst works; a smaller dst keeps its documented error."""
    x = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)

    def kern(x, width, small):
        t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        if small:
            half = nl.ndarray((128, 32), nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=half, src=t)
        r = nl.ndarray((128, width), nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=r, op=nl.add, data=t, axis=1)
        out = nl.ndarray((128, width), nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=r)
        return out
    np.testing.assert_allclose(nki.simulate(nki.jit(kern))(x, 1, False), x.sum(axis=1, keepdims=True), rtol=1e-6)
    with pytest.raises(KernelError) as e:
        nki.simulate(nki.jit(kern))(x, 4, False)
    assert e.value.rule == "err_shape_mismatch" and "produces [128, 1] (1 element per partition)" in str(e.value)
    with pytest.raises(KernelError) as e:
        nki.simulate(nki.jit(kern))(x, 1, True)
    assert e.value.rule == "err_store_dst_shape_smaller_than_other_shape"


def test_two_form_instructions_bind_arguments_as_documented():
    """The 0.6 signature binds: too many positional arguments (even one more, which must not become dtype=), a
    repeated argument, an unknown keyword and a missing dst are each err_invalid_arguments / err_missing_argument;
    dtype= is accepted by keyword only, when it is dst's dtype."""
    def k(a, mode):
        t = sb(a)
        u = new(a.shape, a.dtype)
        if mode == "ok":
            nisa.tensor_copy(u, t, nisa.engine.vector, dtype=nl.float32)
        elif mode == "one_extra":
            nisa.tensor_copy(u, t, nisa.engine.vector, "copy", nl.float32)
        elif mode == "twice":
            nisa.tensor_copy(u, dst=u, src=t)
        elif mode == "unknown":
            nisa.tensor_copy(dst=u, src=t, engnie=nisa.engine.vector)
        elif mode == "missing":
            nisa.tensor_copy(src=t)
        elif mode == "dtype":
            nisa.tensor_copy(dst=u, src=t, dtype=nl.bfloat16)
        return hbm(u)
    np.testing.assert_array_equal(sim(k, F32, "ok"), F32)
    assert "takes at most 4 arguments" in broken(k, F32, "one_extra", rule="err_invalid_arguments")
    assert "got dst twice" in broken(k, F32, "twice", rule="err_invalid_arguments")
    assert "engnie=" in broken(k, F32, "unknown", rule="err_invalid_arguments")
    assert "needs dst=" in broken(k, F32, "missing", rule="err_missing_argument")
    assert "differs from dst's dtype" in broken(k, F32, "dtype", rule="err_invalid_arguments")
