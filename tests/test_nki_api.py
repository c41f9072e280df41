"""Each trnsim.nki API element against a numpy reference (both API generations)."""
import math

import ml_dtypes
import numpy as np
import pytest

import trnsim.neuronxcc.nki as nki
import trnsim.neuronxcc.nki.isa as nisa
import trnsim.neuronxcc.nki.language as nl
import trnsim.neuronxcc.nki.typing as nt
from trnsim.nki import KernelError

rng = np.random.default_rng(1)
X = rng.standard_normal((128, 256)).astype(np.float32)
Y = rng.standard_normal((128, 256)).astype(np.float32)
POS = (np.abs(X) + 0.1).astype(np.float32)


def unary_kernel(fn):
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, fn(nl.load(a)))
        return out
    return k


def binary_kernel(fn):
    @nki.jit
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, fn(nl.load(a), nl.load(b)))
        return out
    return k


def _erf(x):
    return np.vectorize(math.erf)(x.astype(np.float64))


ACTS = {
    "exp": (nl.exp, np.exp, X), "log": (nl.log, np.log, POS), "tanh": (nl.tanh, np.tanh, X),
    "sigmoid": (nl.sigmoid, lambda x: 1 / (1 + np.exp(-x)), X), "relu": (nl.relu, lambda x: np.maximum(x, 0), X),
    "gelu": (nl.gelu, lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))), X),
    "gelu_apprx_tanh": (nl.gelu_apprx_tanh,
                        lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))), X),
    "silu": (nl.silu, lambda x: x / (1 + np.exp(-x)), X), "sqrt": (nl.sqrt, np.sqrt, POS),
    "rsqrt": (nl.rsqrt, lambda x: 1 / np.sqrt(x), POS), "square": (nl.square, np.square, X),
    "abs": (nl.abs, np.abs, X), "sign": (nl.sign, np.sign, X), "sin": (nl.sin, np.sin, X),
    "erf": (nl.erf, _erf, X), "softplus": (nl.softplus, lambda x: np.log1p(np.exp(x)), X),
    "reciprocal": (nl.reciprocal, lambda x: 1 / x, POS), "negative": (nl.negative, np.negative, X),
    "arctan": (nl.arctan, np.arctan, X), "cos": (nl.cos, np.cos, X),
}


@pytest.mark.parametrize("name", sorted(ACTS))
def test_activations(name):
    fn, ref, x = ACTS[name]
    got = nki.simulate_kernel(unary_kernel(fn), x)
    np.testing.assert_allclose(got, ref(x), rtol=2e-6, atol=1e-6)


BINS = {
    "add": (nl.add, np.add), "subtract": (nl.subtract, np.subtract), "multiply": (nl.multiply, np.multiply),
    "divide": (nl.divide, np.divide), "maximum": (nl.maximum, np.maximum), "minimum": (nl.minimum, np.minimum),
    "greater": (nl.greater, lambda a, b: (a > b).astype(np.float32)),
    "less_equal": (nl.less_equal, lambda a, b: (a <= b).astype(np.float32)),
    "equal": (nl.equal, lambda a, b: (a == b).astype(np.float32)),
}


@pytest.mark.parametrize("name", sorted(BINS))
def test_binary_ops(name):
    fn, ref = BINS[name]
    got = nki.simulate_kernel(binary_kernel(fn), X, Y)
    np.testing.assert_allclose(got, ref(X, Y), rtol=1e-6)


def test_operator_sugar_and_scalars():
    @nki.jit
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        x, y = nl.load(a), nl.load(b)
        z = (x + y) * 2 - y / 4.0
        z = 1.0 - z
        nl.store(out, z)
        return out
    got = nki.simulate_kernel(k, X, Y)
    np.testing.assert_allclose(got, 1.0 - ((X + Y) * 2 - Y / 4.0), rtol=1e-6, atol=1e-6)
    _, tr = nki.trace_kernel(k, X, Y)
    ops = [(i.opcode, i.engine) for i in tr.instructions if i.engine != "dma"]
    assert ops == [("tensor_tensor", "vector"), ("tensor_scalar", "vector"), ("tensor_scalar", "vector"),
                   ("tensor_tensor", "vector"), ("tensor_scalar", "vector")]


@pytest.mark.parametrize("red,ref", [(nl.sum, np.sum), (nl.max, np.max), (nl.min, np.min), (nl.mean, np.mean),
                                     (nl.prod, np.prod), (nl.var, np.var)])
def test_reductions(red, ref):
    x = rng.uniform(0.5, 1.5, (128, 4, 32)).astype(np.float32)

    @nki.jit
    def k(a):
        out = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, red(nl.load(a), axis=[1, 2]))
        return out
    np.testing.assert_allclose(nki.simulate_kernel(k, x)[:, 0], ref(x, axis=(1, 2)), rtol=2e-5)


def test_keepdims_and_last_axis_reduce():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 4, 1), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.sum(nl.load(a), axis=2, keepdims=True))
        return out
    x = rng.standard_normal((128, 4, 32)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate_kernel(k, x), x.sum(axis=2, keepdims=True), rtol=1e-5, atol=1e-5)


def test_nl_transpose_and_nc_transpose_engines():
    x = rng.standard_normal((64, 128)).astype(np.float32)
    s = rng.standard_normal((32, 16)).astype(np.float32)

    @nki.jit
    def k(a, b):
        o1 = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
        o2 = nl.ndarray((16, 32), dtype=b.dtype, buffer=nl.shared_hbm)
        nl.store(o1, nl.copy(nl.transpose(nl.load(a))))
        nl.store(o2, nisa.nc_transpose(nl.load(b), engine=nisa.engine.vector))
        return o1, o2
    o1, o2 = nki.simulate_kernel(k, x, s)
    np.testing.assert_array_equal(o1, x.T)
    np.testing.assert_array_equal(o2, s.T)
    _, tr = nki.trace_kernel(k, x, s)
    assert [i.engine for i in tr.instructions if i.opcode == "nc_transpose"] == ["tensor", "vector"]


def test_vector_transpose_limit():
    @nki.jit
    def k(a):
        nisa.nc_transpose(nl.load(a), engine=nisa.engine.vector)
    with pytest.raises(KernelError, match="limitation of 32"):
        nki.trace_kernel(k, np.ones((64, 16), np.float32))


def test_matmul_without_transpose_x():
    x = rng.standard_normal((128, 128)).astype(np.float32)
    y = rng.standard_normal((128, 512)).astype(np.float32)

    @nki.jit
    def k(a, b):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.copy(nl.matmul(nl.load(a), nl.load(b))))
        return out
    np.testing.assert_allclose(nki.simulate_kernel(k, x, y), x @ y, rtol=1e-4, atol=1e-4)


def test_nc_matmul_classic_and_dst_forms_accumulate():
    a = rng.standard_normal((256, 64)).astype(np.float32)
    b = rng.standard_normal((256, 384)).astype(np.float32)

    @nki.jit
    def k(s, m):
        out = nl.ndarray((64, 384), dtype=nl.float32, buffer=nl.shared_hbm)
        out2 = nl.ndarray((64, 384), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((64, 384), nl.float32, buffer=nl.psum)
        acc2 = nl.ndarray((64, 384), nl.float32, buffer=nl.psum)
        for kk in nl.sequential_range(2):
            st = nl.load(s[kk * 128:(kk + 1) * 128, :])
            mv = nl.load(m[kk * 128:(kk + 1) * 128, :])
            acc += nisa.nc_matmul(st, mv)
            nisa.nc_matmul(acc2, st, mv)          # accumulate=None: first write overwrites, then accumulates
        nl.store(out, nl.copy(acc))
        nl.store(out2, nl.copy(acc2))
        return out, out2
    o1, o2 = nki.simulate_kernel(k, a, b)
    np.testing.assert_allclose(o1, a.T @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(o2, a.T @ b, rtol=1e-4, atol=1e-4)


def test_activation_scale_bias_reduce():
    x = rng.standard_normal((128, 64)).astype(np.float32)
    bias = rng.standard_normal((128, 1)).astype(np.float32)

    @nki.jit
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        red = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.shared_hbm)
        r = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        y = nisa.activation(op=nl.exp, data=nl.load(a), bias=nl.load(b), scale=0.5, reduce_op=nl.add, reduce_res=r)
        nl.store(out, y)
        nl.store(red, r)
        return out, red
    y, r = nki.simulate_kernel(k, x, bias)
    want = np.exp(x * 0.5 + bias)
    np.testing.assert_allclose(y, want, rtol=1e-6)
    np.testing.assert_allclose(r, want.sum(axis=1, keepdims=True), rtol=1e-5)


def test_tensor_scalar_two_ops_and_vector_operand():
    x = rng.standard_normal((128, 64)).astype(np.float32)
    v = rng.standard_normal((128, 1)).astype(np.float32)

    @nki.jit
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nisa.tensor_scalar(nl.load(a), np.multiply, nl.load(b), op1=np.add, operand1=3.0)
        t2 = nisa.tensor_scalar(t, nl.subtract, 1.0, reverse0=True)
        nl.store(out, t2)
        return out
    np.testing.assert_allclose(nki.simulate_kernel(k, x, v), 1.0 - (x * v + 3.0), rtol=1e-6, atol=1e-6)


def test_tensor_tensor_reduce_copy_memset_iota_new_forms():
    x = rng.standard_normal((128, 64)).astype(np.float32)

    @nki.jit
    def k(a):
        o1 = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
        o2 = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.shared_hbm)
        o3 = nl.ndarray((128, 64), dtype=nl.int32, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        s = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=s, data1=t, data2=t, op=nl.multiply)
        r = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=r, op=nl.maximum, data=s, axis=1)
        c = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.sbuf)
        nisa.memset(dst=c, value=0.0)
        nisa.tensor_copy(dst=c[:, 0:32], src=s[:, 0:32])
        i = nisa.iota(nl.arange(64)[None, :] + 64 * nl.arange(128)[:, None], dtype=nl.int32)
        nisa.dma_copy(dst=o1, src=c)
        nl.store(o2, r)
        nl.store(o3, i)
        return o1, o2, o3
    o1, o2, o3 = nki.simulate_kernel(k, x)
    want = np.zeros_like(x)
    want[:, :32] = (x * x)[:, :32]
    np.testing.assert_array_equal(o1, want)
    np.testing.assert_array_equal(o2[:, 0], (x * x).max(axis=1))
    np.testing.assert_array_equal(o3, np.arange(128 * 64).reshape(128, 64))


def test_memset_classic_and_full_zeros_ones():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nisa.memset((128, 8), 2.5, nl.float32)
        z = nl.zeros((128, 8), nl.float32)
        o = nl.ones((128, 8), nl.float32)
        f = nl.full((128, 8), 3.0, nl.float32)
        nl.store(out, t + z + o * f)
        return out
    np.testing.assert_array_equal(nki.simulate_kernel(k, X), np.full((128, 8), 5.5, np.float32))


def test_bn_stats_aggr():
    x = rng.standard_normal((128, 1024)).astype(np.float32)

    @nki.jit
    def k(a):
        out = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        stats = nl.ndarray((128, 12), dtype=nl.float32)
        for j in nl.affine_range(2):
            stats[:, j * 6:(j + 1) * 6] = nisa.bn_stats(t[:, j * 512:(j + 1) * 512])
        nl.store(out, nisa.bn_aggr(stats))
        return out
    got = nki.simulate_kernel(k, x)
    np.testing.assert_allclose(got[:, 0], x.mean(axis=1), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got[:, 1], x.var(axis=1), rtol=1e-4)


def test_bn_stats_limit():
    @nki.jit
    def k(a):
        nisa.bn_stats(nl.load(a))
    with pytest.raises(KernelError, match="limitation of 512"):
        nki.trace_kernel(k, np.ones((128, 1024), np.float32))


def test_where_and_affine_select_causal_mask():
    x = rng.standard_normal((64, 64)).astype(np.float32)

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        out2 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        i = nl.mgrid[0:64, 0:64]
        t = nl.load(a)
        nl.store(out, nisa.affine_select(i.p >= i.x, t, -9984.0))
        nl.store(out2, nl.where(nl.greater(t, 0.0), t, 0.0))
        return out, out2
    o1, o2 = nki.simulate_kernel(k, x)
    np.testing.assert_array_equal(o1, np.where(np.tril(np.ones((64, 64), bool)), x, -9984.0))
    np.testing.assert_array_equal(o2, np.maximum(x, 0))


def test_mgrid_ds_slices_and_block_dims():
    x = rng.standard_normal((256, 512)).astype(np.float32)

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        buf = nl.ndarray((2, nl.par_dim(128), 512), dtype=a.dtype, buffer=nl.sbuf)
        i = nl.mgrid[0:128, 0:512]
        for b in nl.static_range(2):
            buf[b] = nl.load(a[b * 128 + i.p, i.x])
        for b in nl.affine_range(2):
            nl.store(out[nl.ds(b * 128, 128), :], buf[b] * 2.0)
        return out
    np.testing.assert_array_equal(nki.simulate_kernel(k, x), x * 2)


def test_partition_broadcast_and_free_broadcast():
    row = rng.standard_normal((1, 64)).astype(np.float32)
    col = rng.standard_normal((128, 1)).astype(np.float32)

    @nki.jit
    def k(r, c, a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        u = nl.multiply(t, nl.load(r).broadcast_to((128, 64)))
        nl.store(out, nl.add(u, nl.load(c)))
        return out
    x = rng.standard_normal((128, 64)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate_kernel(k, row, col, x), x * row + col, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2",
                                   "tfloat32",
                                   "int8", "int16", "int32", "uint8", "uint16", "uint32"])
def test_every_dtype_roundtrip_and_cast(dtype):
    x = rng.uniform(-3, 3, (128, 32)).astype(np.float32)
    if dtype.startswith("uint"):
        x = np.abs(x)

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a, dtype=getattr(nl, dtype))
        nl.store(out, nl.copy(t, dtype=nl.float32))
        return out
    got = nki.simulate_kernel(k, x)
    want = nl.static_cast(x, getattr(nl, dtype)).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    if dtype in ("bfloat16", "float16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2"):
        np.testing.assert_array_equal(got, x.astype(getattr(ml_dtypes, dtype, np.float16)).astype(np.float32))
    if dtype.startswith(("int", "uint")):
        np.testing.assert_array_equal(got, np.rint(x))


def test_compute_in_fp32_round_on_store():
    x = np.full((128, 4), 1.0, dtype=ml_dtypes.bfloat16)
    y = np.full((128, 4), 2 ** -9, dtype=ml_dtypes.bfloat16)

    @nki.jit
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        s = nl.add(nl.load(a), nl.load(b), dtype=nl.float32)     # 1 + 2^-9 exact in fp32
        nl.store(out, s)
        return out
    assert nki.simulate_kernel(k, x, y)[0, 0] == np.float32(1 + 2 ** -9)


def test_promotion_rules():
    from trnsim.nki.dtypes import promote
    assert promote("float16", "bfloat16") == "float32"
    assert promote("float8_e4m3", "float8_e5m2") == "bfloat16"
    assert promote("int8", "uint8") == "int16"
    assert promote("int32", "uint32") == "float32"
    assert promote("bfloat16", "int32") == "bfloat16"


def test_tile_size_per_target_and_program_ids():
    seen = []

    @nki.jit
    def k(a):
        seen.append((nl.tile_size.pmax, nl.tile_size.gemm_moving_fmax, nl.tile_size.psum_num_banks,
                     nl.program_id(0), nl.program_id(1), nl.num_programs(0), nl.num_programs(1)))
    nki.trace_kernel(k[2, 3], X, target="trn3")
    assert len(seen) == 6
    assert seen[0][:3] == (128, 512, 8)   # the tiling constant (nc_matmul itself accepts 4096 on trn3)
    assert seen[-1][3:] == (1, 2, 2, 3)
    assert nl.tile_size.gemm_moving_fmax == 512  # outside a kernel: trn1


def test_shape_only_specs_trace_without_data():
    from nki_tutorial_kernels import matmul_tiled
    out, tr = nki.trace_kernel(matmul_tiled, nt.tensor[[256, 128], nl.bfloat16], nt.tensor[[256, 512], nl.bfloat16])
    assert out is None and tr.numerics is False
    assert sum(i.opcode == "nc_matmul" for i in tr.instructions) == 2
    a = np.ones((256, 128), ml_dtypes.bfloat16)
    b = np.ones((256, 512), ml_dtypes.bfloat16)
    _, tr2 = nki.trace_kernel(matmul_tiled, a, b)
    assert [(i.opcode, i.deps, i.attrs.get("group_start")) for i in tr.instructions] == \
        [(i.opcode, i.deps, i.attrs.get("group_start")) for i in tr2.instructions]
    with pytest.raises(KernelError):
        nki.simulate_kernel(matmul_tiled, nt.tensor[[256, 128], nl.bfloat16], nt.tensor[[256, 512], nl.bfloat16])


def test_trace_records_operands_bytes_and_allocations():
    from nki_tutorial_kernels import tensor_add
    _, tr = nki.trace_kernel(tensor_add, X, Y)
    load0, load1, add, store = tr.instructions
    assert (load0.engine, load0.bytes_moved, load0.attrs["api"]) == ("dma", 128 * 256 * 4, "load")
    assert load0.reads[0].buffer == "hbm" and load0.writes[0].buffer == "sbuf"
    assert load0.writes[0].region.partitions == 128 and load0.writes[0].region.byte_stop == 1024
    assert load0.reads[0].contiguous_bytes == 1024
    assert add.deps == (0, 1) and add.flops == 128 * 256 and add.free_elements == 256 and add.partitions == 128
    assert store.deps == (2,)
    assert store.source_line.startswith("nki_tutorial_kernels.py:")
    io = [a for a in tr.allocations if a.is_kernel_io]
    assert len(io) == 3 and all(a.buffer == "hbm" for a in io)
    sb = [a for a in tr.allocations if a.buffer == "sbuf"]
    assert all(a.bytes_per_partition == 1024 and a.partitions == 128 for a in sb)
    assert tr.target == "trn1" and tr.kernel_name == "tensor_add"


def test_war_dependency_on_reused_buffer():
    @nki.jit
    def k(a):
        out = nl.ndarray((256, 256), dtype=a.dtype, buffer=nl.shared_hbm)
        buf = nl.ndarray((128, 256), dtype=a.dtype)
        for i in nl.sequential_range(2):
            buf[...] = nl.load(a[i * 128:(i + 1) * 128, :])
            nl.store(out[i * 128:(i + 1) * 128, :], buf)
        return out
    x = rng.standard_normal((256, 256)).astype(np.float32)
    got, tr = nki.trace_kernel(k, x)
    np.testing.assert_array_equal(got, x)
    ld0, st0, ld1, st1 = tr.instructions
    assert ld1.deps == (0, 1)  # WAW on the load, WAR on the store that read buf
    assert st1.deps == (2,)


def test_profile_and_benchmark_wrappers():
    from nki_tutorial_kernels import matmul_tiled
    a = np.ones((256, 128), ml_dtypes.bfloat16)
    b = np.ones((256, 512), ml_dtypes.bfloat16)
    prof = nki.profile(matmul_tiled, a, b)
    assert prof.latency_us > 0
    bench = nki.benchmark(warmup=1, iters=2)(matmul_tiled)
    bench(a, b)
    assert bench.benchmark_result.nc_latency.get_latency_percentile(99) == pytest.approx(prof.latency_us)


def test_masked_op_assigned_into_buffer_keeps_unmasked_elements():
    x = rng.standard_normal((128, 16)).astype(np.float32)

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        i = nl.arange(128)[:, None]
        buf = nl.load(a)
        buf[...] = nl.multiply(buf, 2.0, mask=(i < 100))       # rows >= 100 keep their value
        tile = nl.zeros((128, 16), nl.float32)
        tile[...] = nl.load(a, mask=(i < 64))                  # rows >= 64 stay zero
        nl.store(out, nl.add(buf, tile))
        return out
    want = np.where(np.arange(128)[:, None] < 100, 2 * x, x) + np.where(np.arange(128)[:, None] < 64, x, 0)
    np.testing.assert_allclose(nki.simulate_kernel(k, x), want, rtol=1e-6)


def test_store_from_psum_inserts_copy_and_load_transpose2d():
    x = rng.standard_normal((64, 128)).astype(np.float32)

    @nki.jit
    def k(a):
        out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.transpose(nl.load(a)))                 # PSUM value: copied to SBUF first
        out2 = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out2, nl.load_transpose2d(a))
        return out, out2
    (o1, o2), tr = nki.trace_kernel(k, x)
    np.testing.assert_array_equal(o1, x.T)
    np.testing.assert_array_equal(o2, x.T)
    assert [i.opcode for i in tr.instructions][:4] == ["dma_copy", "nc_transpose", "tensor_copy", "dma_copy"]


def test_softmax_helper_and_fp8_e4m3fn():
    x = rng.standard_normal((128, 32)).astype(np.float32)

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.softmax(nl.load(a), axis=1))
        return out
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(nki.simulate_kernel(k, x), e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(nl.static_cast(np.array([1.1, 300.0], np.float32), nl.float8_e4m3fn),
                                  np.array([1.125, 288.0], ml_dtypes.float8_e4m3fn))


def test_augmented_assignment_on_subscript_records_one_instruction():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
        buf = nl.zeros((2, nl.par_dim(128), 64), nl.float32)
        t = nl.load(a)
        buf[1] += t
        buf[1] *= 3.0
        nl.store(out, buf[1])
        return out
    x = rng.standard_normal((128, 64)).astype(np.float32)
    got, tr = nki.trace_kernel(k, x)
    np.testing.assert_allclose(got, 3 * x, rtol=1e-6)
    assert [i.opcode for i in tr.instructions] == ["memset", "dma_copy", "tensor_tensor", "tensor_scalar", "dma_copy"]


def test_scalar_tensor_tensor_tensor_scalar_reduce_and_scan():
    x = rng.standard_normal((128, 16)).astype(np.float32)
    y = rng.standard_normal((128, 16)).astype(np.float32)

    @nki.jit
    def k(a, b):
        o1 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        o2 = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.shared_hbm)
        o3 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        ta, tb = nl.load(a), nl.load(b)
        nl.store(o1, nisa.scalar_tensor_tensor(data=ta, op0=nl.subtract, operand0=1.0, op1=nl.multiply, operand1=tb))
        r = nl.ndarray((128, 1), dtype=nl.float32)
        nisa.tensor_scalar_reduce(data=ta, op0=nl.multiply, operand0=2.0, reduce_op=nl.add, reduce_res=r)
        nl.store(o2, r)
        nl.store(o3, nisa.tensor_tensor_scan(ta, tb, 0.0, nl.multiply, nl.add))
        return o1, o2, o3
    o1, o2, o3 = nki.simulate_kernel(k, x, y)
    np.testing.assert_allclose(o1, (x - 1.0) * y, rtol=1e-6)
    np.testing.assert_allclose(o2[:, 0], (2 * x).sum(axis=1), rtol=1e-5, atol=1e-5)
    r = np.zeros(128, np.float32)
    want = np.empty_like(x)
    for i in range(16):
        r = x[:, i] * r + y[:, i]
        want[:, i] = r
    np.testing.assert_allclose(o3, want, rtol=1e-5, atol=1e-6)


def test_private_hbm_scratch_and_jit_target(monkeypatch):
    x = rng.standard_normal((128, 64)).astype(np.float32)

    @nki.jit(target="trn2")
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        scratch = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.hbm)
        nl.store(scratch, nl.load(a) * 2.0)
        nl.store(out, nl.load(scratch) + 1.0)
        return out
    np.testing.assert_allclose(k(x), 2 * x + 1, rtol=1e-6)
    assert k.last_trace.target == "trn2"
    dmas = [i for i in k.last_trace.instructions if i.engine == "dma"]
    assert [(i.attrs["src"], i.attrs["dst"]) for i in dmas] == [("hbm", "sbuf"), ("sbuf", "hbm"), ("hbm", "sbuf"),
                                                                 ("sbuf", "hbm")]
    assert dmas[2].deps == (dmas[1].index,)   # the reload waits for the scratch store (RAW through HBM)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "gen4")
    assert nki.default_target() == "trn3"
    _, tr = nki.trace_kernel(tensor_add_kernel(), x, x)
    assert tr.target == "trn3"


def tensor_add_kernel():
    from nki_tutorial_kernels import tensor_add
    return tensor_add.func


def test_grid_launch_forms_and_program_queries():
    seen = []

    def k(a):
        seen.append((nl.program_ndim(), nl.num_programs(), nl.program_id(0)))
    nki.simulate_kernel(nki.jit(k)[3], X)
    assert seen == [(1, 3, 0), (1, 3, 1), (1, 3, 2)]
    seen.clear()
    nki.simulate_kernel(k, X)
    assert seen == [(0, 1, 0)]


def test_trace_reports_peak_on_chip_usage():
    from nki_tutorial_kernels import matmul_tiled
    _, tr = nki.trace_kernel(matmul_tiled, nt.tensor[[256, 128], nl.bfloat16], nt.tensor[[256, 512], nl.bfloat16])
    # lhsT tile (128 x 2 B) + rhs tile (512 x 2 B); load temporaries go straight into them; PSUM: one accumulator
    assert tr.peak_sbuf_bytes_per_partition == 128 * 2 + 512 * 2
    assert tr.peak_psum_banks == 1
