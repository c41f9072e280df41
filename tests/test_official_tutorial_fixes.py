"""trnsim bugs found by running the official NKI tutorial kernels (tests/run_official_tutorials.py), each pinned
with a kernel written for this file in the same style (never the tutorials' code)."""
import numpy as np
import pytest

import trnsim.neuronxcc.nki as nki1
import trnsim.neuronxcc.nki.isa as nisa1
import trnsim.neuronxcc.nki.language as nl1
import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki import KernelError

rng = np.random.default_rng(7)


# ---- reduce_res given as one column of a wider tile, t[:, j] (shape [P], one element per partition)
# Beta 1 tutorials write row statistics into column j of a [P, n] tile inside a loop; the column view is [P],
# which holds exactly one element per partition like [P, 1], and the instructions accepted it.

@nki1.jit
def _beta1_row_stats(x):
    """out[:, 0:4] = per-block row max of x (4 blocks of 64 columns, tensor_scalar_reduce into column j),
    out[:, 4:8] = per-block row sum of exp(x) (activation with reduce_cmd into column j)."""
    P, F = x.shape
    out = nl1.ndarray((P, 8), dtype=nl1.float32, buffer=nl1.shared_hbm)
    xt = nl1.load(x)
    stats = nl1.ndarray((P, 8), dtype=nl1.float32, buffer=nl1.sbuf)
    for j in nl1.affine_range(4):
        _ = nisa1.tensor_scalar_reduce(data=xt[:, nl1.ds(j * 64, 64)], op0=nl1.multiply, operand0=1.0,
                                       reduce_op=nl1.max, reduce_res=stats[:, j])
        _ = nisa1.activation(op=nl1.exp, data=xt[:, nl1.ds(j * 64, 64)], reduce_op=nl1.add,
                             reduce_res=stats[:, 4 + j], reduce_cmd=nisa1.reduce_cmd.reset_reduce)
    nl1.store(out, value=stats)
    return out


def test_reduce_res_may_be_a_column_view_beta1():
    x = rng.standard_normal((128, 256)).astype(np.float32)
    out = nki1.simulate_kernel(_beta1_row_stats, x)
    blocks = x.reshape(128, 4, 64)
    np.testing.assert_allclose(out[:, 0:4], blocks.max(axis=2), rtol=1e-6)
    np.testing.assert_allclose(out[:, 4:8], np.exp(blocks).sum(axis=2), rtol=1e-5)


def _stats_06(x):
    P, F = x.shape
    out = nl.ndarray((P, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=xt, src=x)
    stats = nl.ndarray((P, 4), dtype=nl.float32, buffer=nl.sbuf)
    for j in nl.affine_range(2):
        junk = nl.ndarray((P, F // 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_reduce(dst=junk, data=xt[:, j * (F // 2):(j + 1) * (F // 2)], op0=nl.add, operand0=0.0,
                                  reduce_op=nl.max, reduce_res=stats[:, j])
        junk2 = nl.ndarray((P, F // 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=junk2, op=nl.exp, data=xt[:, j * (F // 2):(j + 1) * (F // 2)], reduce_op=nl.add,
                        reduce_res=stats[:, 2 + j], reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.dma_copy(dst=out, src=stats)
    return out


def test_reduce_res_may_be_a_column_view_06():
    x = rng.standard_normal((128, 128)).astype(np.float32)
    out = nki.simulate(nki.jit(_stats_06))(x)
    halves = x.reshape(128, 2, 64)
    np.testing.assert_allclose(out[:, 0:2], halves.max(axis=2), rtol=1e-6)
    np.testing.assert_allclose(out[:, 2:4], np.exp(halves).sum(axis=2), rtol=1e-5)


def test_reduce_res_with_two_elements_per_partition_is_still_refused():
    def k(x):
        xt = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x)
        r = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=xt, op=nl.exp, data=xt, reduce_op=nl.add, reduce_res=r,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=xt)
        return out
    with pytest.raises(KernelError) as exc:
        nki.simulate(nki.jit(k))(np.ones((128, 64), np.float32))
    assert exc.value.rule == "err_shape_mismatch" and "[128, 2]" in str(exc.value) and exc.value.fix


# ---- .ap(dtype=...) reinterprets the bytes of a tensor (the MX deep-dive passes packed words as uint32 / uint8)

def test_ap_dtype_reinterprets_hbm_words_as_x4_elements():
    from trnsim.nki.packed import pack_x4, unpack_x4
    vals = rng.choice(np.array([0.5, 1.0, -2.0, 0.25, 3.0], np.float32), size=(8, 32))
    words = pack_x4(vals, "float8_e4m3fn_x4")            # uint32 [8, 8]: four fp8 lanes per word

    def k(w):
        x4 = w.ap(dtype=nl.float8_e4m3fn_x4, pattern=[[8, 8], [1, 8]], offset=0)
        t = nl.ndarray((8, 8), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x4)
        back = t.ap(dtype=nl.uint32, pattern=[[8, 8], [1, 8]], offset=0)   # and back to words, on SBUF
        out = nl.ndarray((8, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=back)
        return out
    got = nki.simulate(nki.jit(k, target="trn3"))(words)
    np.testing.assert_array_equal(got, words)
    np.testing.assert_array_equal(unpack_x4(got, "float8_e4m3fn_x4"), vals)

    # fp4 x4 words are 16 bits: two packed bytes of a uint8 tensor make one element
    b = np.arange(64, dtype=np.uint8).reshape(4, 16)

    def k2(w):
        x4 = w.ap(dtype=nl.float4_e2m1fn_x4, pattern=[[8, 4], [1, 8]], offset=0)
        t = nl.ndarray((4, 8), dtype=nl.float4_e2m1fn_x4, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x4)
        out = nl.ndarray((4, 8), dtype=nl.float4_e2m1fn_x4, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    got2 = nki.simulate(nki.jit(k2, target="trn3"))(b)
    np.testing.assert_array_equal(got2, b.view(np.uint16))


def test_ap_dtype_needs_a_whole_number_of_new_elements():
    def k(w):
        x4 = w.ap(dtype=nl.float8_e5m2_x4, pattern=[[1, 1], [1, 1]], offset=0)
        out = nl.ndarray((1, 1), dtype=nl.float8_e5m2_x4, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=x4)
        return out
    with pytest.raises(KernelError) as exc:
        nki.simulate(nki.jit(k, target="trn3"))(np.zeros((3, 2), np.uint8))
    assert exc.value.rule == "err_invalid_access_pattern" and "6 bytes" in str(exc.value) and exc.value.fix


# ---- t.buffer compares equal to the nl memory regions (NKI: `assert t.buffer == nl.sbuf`)

def test_buffer_equals_the_memory_region_objects():
    def k(a):
        assert a.buffer == nl.hbm and a.buffer != nl.sbuf
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        p = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        assert t.buffer == nl.sbuf and t.buffer != nl.psum and p.buffer == nl.psum and t[0:2, :].buffer == nl.sbuf
        nisa.dma_copy(dst=t, src=a)
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        assert out.buffer == nl.shared_hbm
        nisa.dma_copy(dst=out, src=t)
        return out
    x = np.ones((4, 4), np.float32)
    np.testing.assert_array_equal(nki.simulate(nki.jit(k))(x), x)
    assert {nl.sbuf: 1}[nl.sbuf] == 1 and nl.sbuf != nl.psum


# ---- nl.tile_size.gemm_moving_fmax is the 512-wide tiling constant on trn3 too; nc_matmul accepts up to 4096

def test_trn3_tile_size_gemm_moving_fmax_is_the_tiling_constant():
    import trnsim
    seen = []

    def k(a):
        seen.append(nl.tile_size.gemm_moving_fmax)
        s = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=s, value=1.0)
        m = nl.ndarray((128, 1024), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=m, value=2.0)
        acc = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=s, moving=m)       # 1024 > 512: fine on NeuronCore-v4
        r = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=r, src=acc)
        out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=r)
        return out
    got = nki.simulate(nki.jit(k, target="trn3"))(np.zeros((1, 1), np.float32))
    assert seen == [512] and trnsim.target("trn3").core.tile.gemm_moving_fmax == 4096
    np.testing.assert_array_equal(got, np.full((128, 1024), 256.0, np.float32))


# ---- explicit SBUF placements are absolute: one kernel fits, a module-level allocator reused by a second call
# does not (the attention tutorial's v9/v10 share such an allocator; trnsim counts base_addr + size exactly)

class _BumpAllocator:
    def __init__(self):
        self.offset = 0

    def take(self, nbytes):
        addr = self.offset
        self.offset += nbytes
        return nki.compiler.sbuf.mod_alloc(base_addr=addr, num_free_tiles=(1,))


_ALLOC = _BumpAllocator()


@nki1.jit
def _placed_copy(a):
    out = nl1.ndarray(a.shape, dtype=a.dtype, buffer=nl1.shared_hbm)
    big = nl1.ndarray((128, 30000), dtype=nl1.float32, buffer=_ALLOC.take(30000 * 4))   # 120,000 B per partition
    big[:, 0:8] = nl1.load(a)
    nl1.store(out, value=big[:, 0:8])
    return out


def test_explicit_placements_are_absolute_and_a_shared_allocator_keeps_counting():
    import trnsim.nki.rules as rules
    x = rng.standard_normal((128, 8)).astype(np.float32)
    _ALLOC.offset = 0
    np.testing.assert_array_equal(nki1.simulate_kernel(_placed_copy, x), x)     # 0 .. 120,000: fits
    with pytest.raises(KernelError) as exc:
        nki1.simulate_kernel(_placed_copy, x)                                     # 120,000 .. 240,000: does not
    usable = rules.limits_for("trn1").sbuf_bytes_per_partition
    assert exc.value.rule == "err_allocation_out_of_range"
    assert "placed at byte 120000 ends at byte 240000" in str(exc.value) and str(usable) in str(exc.value)
    assert "module-level" in exc.value.fix
