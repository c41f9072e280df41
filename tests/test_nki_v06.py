"""NKI 0.6 semantics on trnsim: own kernels written the ways of the current tutorials, checked against numpy,
and the 0.4-0.6 rules (each a KernelError naming the rule and the fix)."""
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
import trnsim.nki.typing as nt
from trnsim.nki import KernelError

rng = np.random.default_rng(6)


# ------------------------------------------------------------------------------------- kernels

@nki.jit
def add_tiles(a, b):
    """Tensor addition, destination passing, tiles allocated inside the loops (tensor-addition tutorial style)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, cols = a.shape
    for m in nl.affine_range(rows // 128):
        for n in nl.affine_range(cols // 256):
            rs, cs = slice(m * 128, (m + 1) * 128), slice(n * 256, (n + 1) * 256)
            x = nl.ndarray((128, 256), dtype=a.dtype, buffer=nl.sbuf)
            y = nl.ndarray((128, 256), dtype=b.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=x, src=a[rs, cs])
            nisa.dma_copy(dst=y, src=b[rs, cs])
            z = nl.ndarray((128, 256), dtype=a.dtype, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=z, data1=x, data2=y, op=nl.add)
            nisa.dma_copy(dst=out[rs, cs], src=z)
    return out


@nki.jit
def add_two_cores(a, b):
    """LNC=2: each physical core adds its half of the rows (program_id 0 / 1)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    half = a.shape[0] // nl.num_programs()
    r0 = nl.program_id(0) * half
    for m in nl.affine_range(half // 128):
        rs = slice(r0 + m * 128, r0 + (m + 1) * 128)
        x = nl.load(a[rs, :])
        y = nl.load(b[rs, :])
        nl.store(out[rs, :], nl.add(x, y))
    return out


def test_tensor_addition_matches_numpy():
    a, b = rng.standard_normal((256, 512)).astype(np.float32), rng.standard_normal((256, 512)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate(add_tiles)(a, b), a + b, rtol=1e-6)
    trace = add_tiles.last_trace
    assert trace.target == "trn2" and trace.lnc == 1 and {i.core for i in trace.instructions} == {0}


def test_lnc2_launch_runs_each_half_on_its_own_physical_core():
    a, b = rng.standard_normal((512, 256)).astype(np.float32), rng.standard_normal((512, 256)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate(add_two_cores[2])(a, b), a + b, rtol=1e-6)
    np.testing.assert_allclose(nki.simulate(add_two_cores)(a, b), a + b, rtol=1e-6)   # LNC=1: one core, all rows
    out = add_two_cores[2](a, b)                                                     # direct call simulates too
    np.testing.assert_allclose(out, a + b, rtol=1e-6)
    trace = add_two_cores.last_trace if add_two_cores.last_trace is not None else None
    k2 = add_two_cores[2]
    _, trace = nki.trace_kernel(k2, a, b)
    assert trace.lnc == 2
    per_core = {c: sum(1 for i in trace.instructions if i.core == c) for c in (0, 1)}
    assert per_core[0] == per_core[1] > 0
    assert {i.program_id for i in trace.instructions if i.core == 1} == {(1,)}


@nki.jit
def transpose_tile(x):
    """2-D transpose of a [128, 96] tile on the Tensor Engine (PSUM), copied back to SBUF."""
    P, F = x.shape
    out = nl.ndarray((F, P), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    tp = nl.ndarray((F, P), dtype=x.dtype, buffer=nl.psum)
    nisa.nc_transpose(dst=tp, data=t)
    ts = nl.ndarray((F, P), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=ts, src=tp)
    nisa.dma_copy(dst=out, src=ts)
    return out


def test_transpose2d():
    x = rng.standard_normal((128, 96)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate(transpose_tile)(x), x.T)


@nki.jit
def avg_pool2(img):
    """2x2 average pool of [C, H, W] with a strided 5-D access pattern over the SBUF tile (average-pool style)."""
    C, H, W = img.shape
    out = nl.ndarray((C, H // 2, W // 2), dtype=img.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((C, H, W), dtype=img.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=img)
    windows = t.ap([[H * W, C], [2 * W, H // 2], [2, W // 2], [W, 2], [1, 2]])
    s = nl.ndarray((C, H // 2, W // 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=s, op=nl.add, data=windows, axis=(3, 4))
    r = nl.ndarray((C, H // 2, W // 2), dtype=img.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=r, data=s, op0=nl.multiply, operand0=0.25)
    nisa.dma_copy(dst=out, src=r)
    return out


def test_average_pool_with_access_pattern():
    img = rng.standard_normal((16, 8, 12)).astype(np.float32)
    ref = img.reshape(16, 4, 2, 6, 2).mean(axis=(2, 4))
    np.testing.assert_allclose(nki.simulate(avg_pool2)(img), ref, rtol=1e-5, atol=1e-6)


@nki.jit
def matmul_hoisted(lhsT, rhs):
    """lhsT.T @ rhs with the lhsT tiles loaded once into a Python list before the matmul loops (the matmul
    tutorial's "hoist load" stage: tiles made in a loop stay valid after it)."""
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    lhs_tiles = []
    for k in nl.affine_range(K // 128):
        t = nl.ndarray((128, M), dtype=lhsT.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=lhsT[k * 128:(k + 1) * 128, :])
        lhs_tiles.append(t)
    for n in nl.affine_range(N // 512):
        acc = nl.ndarray((M, 512), dtype=nl.float32, buffer=nl.psum)
        for k in nl.sequential_range(K // 128):
            r = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=r, src=rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
            nisa.nc_matmul(dst=acc, stationary=lhs_tiles[k], moving=r)
        res = nl.ndarray((M, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out[:, n * 512:(n + 1) * 512], src=res)
    return out


def test_matmul_keeps_loop_tiles_in_a_python_list():
    lhsT = rng.standard_normal((512, 128)).astype(np.float32)
    rhs = rng.standard_normal((512, 1024)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate(matmul_hoisted)(lhsT, rhs), lhsT.T @ rhs, rtol=1e-4, atol=1e-3)
    trace = matmul_hoisted.last_trace
    assert sum(i.opcode == "nc_matmul" for i in trace.instructions) == 2 * 4


@nki.compiler.skip_middle_end_transformations
@nki.jit
def attention_tile(q, k, v):
    """softmax(q.T k) v.T for one 128-row query tile, destination passing, the exp/sum in a no_reorder block and
    the score buffer placed explicitly (attention-forward tutorial style)."""
    d, sq = q.shape
    _, skv = k.shape
    out = nl.ndarray((sq, d), dtype=nl.float32, buffer=nl.shared_hbm)
    qs = nl.ndarray((d, sq), dtype=q.dtype, buffer=nl.sbuf)
    ks = nl.ndarray((d, skv), dtype=k.dtype, buffer=nl.sbuf)
    vs = nl.ndarray((d, skv), dtype=v.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=qs, src=q)
    nisa.dma_copy(dst=ks, src=k)
    nisa.dma_copy(dst=vs, src=v)
    s_ps = nl.ndarray((sq, skv), dtype=nl.float32, buffer=nki.compiler.psum.mod_alloc(base_bank=0))
    nisa.nc_matmul(dst=s_ps, stationary=qs, moving=ks)
    scores = nl.ndarray((sq, skv), dtype=nl.float32, buffer=nki.compiler.sbuf.mod_alloc(base_addr=0))
    nisa.tensor_copy(dst=scores, src=s_ps)
    row_max = nl.ndarray((sq, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=row_max, op=nl.maximum, data=scores, axis=1, negate=True)
    probs = nl.ndarray((sq, skv), dtype=nl.float32, buffer=nl.sbuf)
    row_sum = nl.ndarray((sq, 1), dtype=nl.float32, buffer=nl.sbuf)
    with nl.no_reorder():
        nisa.activation(dst=probs, op=nl.exp, data=scores, bias=row_max, reduce_op=nl.add, reduce_res=row_sum,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        inv = nl.ndarray((sq, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv, data=row_sum)
    # probs.T tiles (kv on partitions) for the second matmul
    acc = nl.ndarray((sq, d), dtype=nl.float32, buffer=nl.psum)
    for j in nl.affine_range(skv // 128):
        pt_ps = nl.ndarray((128, sq), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_transpose(dst=pt_ps, data=probs[:, j * 128:(j + 1) * 128])
        pt = nl.ndarray((128, sq), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=pt, src=pt_ps)
        vt_ps = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_transpose(dst=vt_ps, data=vs[:, j * 128:(j + 1) * 128])
        vt = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=vt, src=vt_ps)
        nisa.nc_matmul(dst=acc, stationary=pt, moving=vt)
    o = nl.ndarray((sq, d), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=o, data=acc, op0=nl.multiply, operand0=inv)
    nisa.dma_copy(dst=out, src=o)
    return out


def test_attention_with_compiler_directives_recorded_in_the_trace():
    q, k, v = (rng.standard_normal((64, 128)).astype(np.float32) * 0.5 for _ in range(3))
    s = q.T @ k
    p = np.exp(s - s.max(axis=1, keepdims=True))
    ref = (p / p.sum(axis=1, keepdims=True)) @ v.T
    np.testing.assert_allclose(nki.simulate(attention_tile)(q, k, v), ref, rtol=1e-4, atol=1e-5)
    trace = attention_tile.last_trace
    assert trace.directives == {"skip_middle_end_transformations": True}
    blocks = [i.attrs.get("no_reorder") for i in trace.instructions]
    ordered = [i.opcode for i in trace.instructions if i.attrs.get("no_reorder")]
    assert ordered == ["activation", "reciprocal"] and len({b for b in blocks if b}) == 1
    placed = {a.buffer: a.placement for a in trace.allocations if a.placement}
    assert placed["sbuf"]["base_addr"] == 0 and placed["psum"]["base_bank"] == 0


@nki.jit
def selective_scan(deltaA, deltaBu):
    """h[t] = deltaA[t] * h[t-1] + deltaBu[t] along the free axis (the fused-mamba tutorial's scan)."""
    out = nl.ndarray(deltaA.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.load(deltaA)
    b = nl.load(deltaBu)
    h = nl.ndarray(deltaA.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor_scan(dst=h, data0=a, data1=b, initial=0.0, op0=nl.multiply, op1=nl.add)
    nl.store(out, h)
    return out


def test_mamba_scan():
    a = rng.uniform(0.5, 1.0, (128, 64)).astype(np.float32)
    b = rng.standard_normal((128, 64)).astype(np.float32)
    ref = np.zeros_like(a)
    h = np.zeros(128, np.float32)
    for t in range(64):
        h = a[:, t] * h + b[:, t]
        ref[:, t] = h
    np.testing.assert_allclose(nki.simulate(selective_scan)(a, b), ref, rtol=1e-5, atol=1e-5)


def test_iota_and_affine_select_patterns():
    @nki.jit
    def causal(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        m = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        # keep x[p, f] where p - f >= 0 (lower triangle)
        nisa.affine_select(dst=m, pattern=[[-1, x.shape[1]]], channel_multiplier=1, on_true_tile=t,
                           on_false_value=-9.0, cmp_op=nl.greater_equal)
        idx = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
        nisa.iota(dst=idx, pattern=[[1, x.shape[1]]], offset=3, channel_multiplier=100)
        both = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=both, data1=m, data2=idx, op=nl.add)
        nl.store(out, both)
        return out
    x = rng.standard_normal((8, 8)).astype(np.float32)
    p, f = np.mgrid[0:8, 0:8]
    ref = np.where(p - f >= 0, x, -9.0) + (3 + 100 * p + f)
    np.testing.assert_allclose(nki.simulate(causal)(x), ref, rtol=1e-6)


# ----------------------------------------------------------------------------- rules and targets

def test_default_target_is_trn2_and_the_platform_override_is_honoured(monkeypatch):
    a = np.ones((128, 256), np.float32)
    nki.simulate(add_tiles)(a, a)
    assert add_tiles.last_trace.target == "trn2"
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "gen4")
    nki.simulate(add_tiles)(a, a)
    assert add_tiles.last_trace.target == "trn3"
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")
    with pytest.raises(KernelError, match="err_invalid_lnc"):
        nki.simulate(add_two_cores[2])(np.ones((256, 128), np.float32), np.ones((256, 128), np.float32))


def test_lnc_degree_must_be_1_or_2():
    with pytest.raises(KernelError, match="err_invalid_lnc"):
        add_two_cores[3]


def test_platform_target_argument_is_refused():
    with pytest.raises(KernelError, match="NEURON_PLATFORM_TARGET_OVERRIDE"):
        nki.jit(platform_target="trn2")


def _run(body, *arrays):
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        body(a, out)
        return out
    return nki.simulate(k)(*arrays)


X = np.ones((128, 64), np.float32)


def test_instructions_need_a_destination():
    def body(a, out):
        t = nl.load(a)
        nisa.tensor_scalar(t, nl.multiply, 2.0)     # Beta 1 value-returning form
    with pytest.raises(KernelError, match="err_missing_argument") as exc:
        _run(body, X)
    assert "nisa.tensor_scalar(dst, data, op0, operand0" in str(exc.value) and "destination first" in str(exc.value)


def test_mask_argument_was_removed():
    def body(a, out):
        t = nl.load(a)
        d = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=d, src=t, mask=None)
    with pytest.raises(KernelError, match="mask= was removed"):
        _run(body, X)


def test_beta1_index_expressions_in_a_06_kernel_name_the_slice_form():
    import trnsim.neuronxcc.nki.language as beta1_nl

    def body(a, out):
        i = beta1_nl.arange(128)[:, None]
        j = beta1_nl.arange(64)[None, :]
        nl.store(out, nl.load(a[i, j]))
    with pytest.raises(KernelError, match="err_removed_api") as exc:
        _run(body, X)
    assert "x[i * 128:(i + 1) * 128" in str(exc.value) and ".ap(" in str(exc.value)


def test_block_dimensions_were_removed():
    import trnsim.neuronxcc.nki.language as beta1_nl

    def body(a, out):
        nl.ndarray((4, beta1_nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    with pytest.raises(KernelError, match="err_block_dimension_removed"):
        _run(body, X)


def test_reshape_checks_the_element_count():
    def body(a, out):
        a.reshape((128, 32))
    with pytest.raises(KernelError, match="element count"):
        _run(body, X)


def test_rsqrt_runs_on_gpsimd_and_refuses_psum():
    def body(a, out):
        ps = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
        nisa.tensor_copy(dst=ps, src=nl.load(a))
        nl.rsqrt(ps)
    with pytest.raises(KernelError, match="GpSimd") as exc:
        _run(body, X)
    assert "nisa.activation" in str(exc.value)

    def ok(a, out):
        nl.store(out, nl.rsqrt(nl.load(a)))
    np.testing.assert_allclose(_run(ok, X * 4), np.full_like(X, 0.5), rtol=1e-6)


def test_memset_value_must_match_the_dtype():
    def body(a, out):
        t = nl.ndarray((128, 64), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=2.0)
    with pytest.raises(KernelError, match="err_memset_value_type"):
        _run(body, X)


def test_loop_step_zero_is_a_kernel_error():
    def body(a, out):
        for _ in nl.affine_range(0, 4, 0):
            pass
    with pytest.raises(KernelError, match="step 0"):
        _run(body, X)


def test_explicit_placement_must_fit_the_partition():
    def body(a, out):
        nl.ndarray((128, 64), dtype=nl.float32, buffer=nki.compiler.sbuf.mod_alloc(base_addr=10 ** 7))
    with pytest.raises(KernelError, match="err_allocation_out_of_range"):
        _run(body, X)

    def addr(a, out):
        nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf, address=(0, 1024))
        nl.store(out, nl.load(a))
    _run(addr, X)


def test_access_pattern_rules():
    def bad_partition_step(a, out):
        t = nl.load(a)
        t.ap([[1, 128], [1, 64]])
    with pytest.raises(KernelError, match="partitions must be read contiguously"):
        _run(bad_partition_step, X)

    def out_of_bounds(a, out):
        t = nl.load(a)
        t.ap([[64, 128], [1, 64]], offset=1)
    with pytest.raises(KernelError, match="err_tensor_access_out_of_bound"):
        _run(out_of_bounds, X)


# ------------------------------------------------------------------- silent wrong answers (issue 11 item 6)

def test_psum_accumulation_keeps_a_value_not_written_by_a_matmul():
    import trnsim.neuronxcc.nki as bnki
    import trnsim.neuronxcc.nki.language as bnl

    def k(a, b):
        out = bnl.ndarray((128, 64), dtype=bnl.float32, buffer=bnl.shared_hbm)
        acc = bnl.full((128, 64), 2.0, dtype=bnl.float32, buffer=bnl.psum)
        acc += bnl.matmul(bnl.load(a), bnl.load(b), transpose_x=True)
        bnl.store(out, bnl.copy(acc))
        return out
    a = rng.standard_normal((128, 128)).astype(np.float32)
    b = rng.standard_normal((128, 64)).astype(np.float32)
    np.testing.assert_allclose(bnki.simulate_kernel(k, a, b), a.T @ b + 2.0, rtol=1e-5, atol=1e-4)


def test_nc_matmul_accumulates_onto_a_copied_psum_value_on_nc_v4():
    @nki.jit(target="trn3")
    def k(a, b, c):
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        ps = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
        nisa.tensor_copy(dst=ps, src=nl.load(c))
        nisa.nc_matmul(dst=ps, stationary=nl.load(a), moving=nl.load(b))   # accumulate=None: location written
        nl.store(out, nl.copy(ps))
        return out
    a = rng.standard_normal((128, 128)).astype(np.float32)
    b = rng.standard_normal((128, 64)).astype(np.float32)
    c = rng.standard_normal((128, 64)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate(k)(a, b, c), a.T @ b + c, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("target", ["trn1", "trn2"])
@pytest.mark.parametrize("init", ["tensor_copy", "memset", "nl.full"])
@pytest.mark.parametrize("numerics", [True, False])
def test_nc_matmul_onto_a_non_matmul_psum_value_is_refused_before_nc_v4(target, init, numerics):
    """nki.isa.nc_matmul: "On NeuronCore-v2 and NeuronCore-v3, matmul accumulating into a PSUM location that was
    value-initialized by a non-matmul instruction (e.g., memset, tensor_copy) is not supported"."""
    def k(a, b, c):
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        if init == "nl.full":
            ps = nl.full((128, 64), 2.0, dtype=nl.float32, buffer=nl.psum)
        else:
            ps = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
            if init == "tensor_copy":
                nisa.tensor_copy(dst=ps, src=nl.load(c))
            else:
                nisa.memset(dst=ps, value=2.0)
        nisa.nc_matmul(dst=ps, stationary=nl.load(a), moving=nl.load(b), accumulate=True)
        nl.store(out, nl.copy(ps))
        return out
    a = nt.tensor[[128, 128], nl.float32]
    b = nt.tensor[[128, 64], nl.float32]
    c = nt.tensor[[128, 64], nl.float32]
    with pytest.raises(nki.KernelError, match="err_matmul_accumulate_onto_non_matmul_value") as err:
        nki.trace_kernel(k, a, b, c, numerics=numerics, target=target)
    assert "accumulate=False" in str(err.value) and target in str(err.value)


def test_nc_matmul_onto_a_zero_psum_fill_still_accumulates():
    @nki.jit
    def k(a, b):
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        ps = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.psum)      # a zero fill folds into the first matmul
        nisa.nc_matmul(dst=ps, stationary=nl.load(a), moving=nl.load(b))
        nisa.nc_matmul(dst=ps, stationary=nl.load(a), moving=nl.load(b))
        nl.store(out, nl.copy(ps))
        return out
    a = rng.standard_normal((128, 128)).astype(np.float32)
    b = rng.standard_normal((128, 64)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate(k)(a, b), 2 * (a.T @ b), rtol=1e-5, atol=1e-4)


def test_transpose_mode_matmul_is_stationary_transposed():
    @nki.jit
    def k(x, eye):
        out = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        ps = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=nl.load(x), moving=nl.load(eye), is_transpose=True)
        nl.store(out, nl.copy(ps))
        return out
    x = rng.standard_normal((128, 64)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate(k)(x, np.eye(128, dtype=np.float32)), x.T)


def test_store_does_not_reshape_a_tile_into_a_same_size_destination():
    @nki.jit
    def k(a):
        out = nl.ndarray((64, 128), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a))          # [128, 64] into [64, 128]
        return out
    with pytest.raises(KernelError, match="err_shape_mismatch") as exc:
        nki.simulate(k)(X)
    assert "does not reshape" in str(exc.value)


def test_scalar_type_not_value_sets_the_result_dtype():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.copy(nl.divide(nl.load(a), 2.0), dtype=nl.float32))
        return out
    ints = np.arange(128 * 4, dtype=np.int32).reshape(128, 4)
    np.testing.assert_allclose(nki.simulate(k)(ints), ints / 2.0)


def test_dst_rmw_op_checks_bounds():
    import trnsim.neuronxcc.nki as bnki
    import trnsim.neuronxcc.nki.isa as bnisa
    import trnsim.neuronxcc.nki.language as bnl

    def k(a):
        out = bnl.ndarray((128, 64), dtype=bnl.float32, buffer=bnl.shared_hbm)
        t = bnl.load(a)
        bnl.store(out, t)
        bnisa.dma_copy(dst=out[64:192, :], src=t, dst_rmw_op=np.add)
        return out
    with pytest.raises(KernelError, match="err_tensor_access_out_of_bound"):
        bnki.simulate_kernel(k, X)


def test_none_operand_is_refused():
    def body(a, out):
        nl.store(out, nl.add(nl.load(a), None))
    with pytest.raises(KernelError, match="err_operand_type"):
        _run(body, X)


def test_reading_memory_nothing_wrote_warns_with_the_line():
    def body(a, out):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nl.store(out, t)
    with pytest.warns(nki.UninitializedReadWarning, match="before anything wrote it"):
        _run(body, X)


def test_a_python_list_input_asks_for_a_numpy_array():
    with pytest.raises(KernelError, match="pass a numpy array"):
        nki.simulate(add_tiles)([[1.0] * 256] * 128, X)


@pytest.mark.parametrize("shape", [(0, 64), (128, -1), ()])
def test_zero_and_negative_shapes_are_kernel_errors(shape):
    def body(a, out):
        nl.ndarray(shape, dtype=nl.float32, buffer=nl.sbuf)
    with pytest.raises(KernelError, match="err_invalid_shape"):
        _run(body, X)


def test_empty_input_array_is_a_kernel_error():
    with pytest.raises(KernelError, match="err_invalid_shape"):
        nki.simulate(add_tiles)(np.zeros((0, 256), np.float32), np.zeros((0, 256), np.float32))


def test_unsupported_dtype_objects_are_kernel_errors():
    def body(a, out):
        nl.ndarray((128, 64), dtype=object, buffer=nl.sbuf)
    with pytest.raises(KernelError, match="err_unsupported_dtype"):
        _run(body, X)


def test_where_shapes_must_match():
    def body(a, out):
        t = nl.load(a)
        nl.store(out, nl.where(t, t[:, 0:32], 0.0))
    with pytest.raises(KernelError, match="err_shape_mismatch"):
        _run(body, X)


def test_hbm_capacity_comes_from_the_target_catalog():
    import trnsim
    import trnsim.nki.typing as nt
    cap = trnsim.target("trn2").chip.device_memory_gib * 2 ** 30
    rows = int(cap // (2 ** 20 * 4)) + 128          # a float32 [rows, 2**20] input just over the device memory
    with pytest.raises(KernelError, match="err_hbm_over_capacity") as exc:
        nki.trace_kernel(add_tiles, nt.tensor[[rows, 2 ** 20], nl.float32], nt.tensor[[128, 256], nl.float32])
    assert f"{trnsim.target('trn2').chip.device_memory_gib:.0f} GiB" in str(exc.value)

    def body(a, out):
        nl.ndarray((2 ** 22, 2 ** 20), dtype=nl.float32, buffer=nl.hbm)   # 16 TiB scratch
    with pytest.raises(KernelError, match="err_hbm_over_capacity"):
        _run(body, X)


def test_spmd_dim_with_nc2_spreads_one_grid_axis_over_two_physical_cores():
    @nki.jit
    def add_block(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        i, j = nl.program_id(0), nl.program_id(1)
        rs, cs = slice(i * 128, (i + 1) * 128), slice(j * 256, (j + 1) * 256)
        nl.store(out[rs, cs], nl.add(nl.load(a[rs, cs]), nl.load(b[rs, cs])))
        return out
    a, b = rng.standard_normal((512, 512)).astype(np.float32), rng.standard_normal((512, 512)).astype(np.float32)
    launch = add_block[nl.spmd_dim(2, nl.nc(2)), 2]
    np.testing.assert_allclose(nki.simulate(launch)(a, b), a + b, rtol=1e-6)
    trace = add_block.last_trace if launch.last_trace is None else launch.last_trace
    assert trace.lnc == 2 and trace.grid == (4, 2)
    assert all(ins.core == ins.program_id[0] % 2 for ins in trace.instructions)


def _load_rows(x, use_ap: bool):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    src = x.ap([[x.shape[1], 128], [1, x.shape[1]]], offset=0) if use_ap else x[0:128, 0:x.shape[1]]
    nisa.dma_copy(dst=t, src=src)
    nisa.dma_copy(dst=out[0:128, 0:x.shape[1]], src=t)
    return out


def test_ap_access_costs_like_the_same_slice():
    """An HBM .ap() access whose rows are contiguous moves whole rows, not element-sized pieces: the trace records
    the same contiguous run as the equivalent slice, so the DMA model prices both alike."""
    from trnsim.perf import profile
    x = rng.standard_normal((128, 1024)).astype(np.float32)
    runs, times = [], []
    for use_ap in (False, True):
        k = nki.jit(lambda a, u=use_ap: _load_rows(a, u))
        np.testing.assert_array_equal(nki.simulate(k)(x), x)
        load = k.last_trace.instructions[0]
        runs.append(load.reads[0].contiguous_bytes)
        times.append(profile(k, x, target="trn2").latency_us)
    assert runs == [4096, 4096]
    assert times[1] == pytest.approx(times[0], rel=1e-9)


def test_ap_contiguous_run_stops_at_a_gap():
    from trnsim.nki.tensors import _ap_contiguous_run
    assert _ap_contiguous_run([(512, 128), (64, 8), (1, 64)]) == 512
    assert _ap_contiguous_run([(512, 128), (128, 4), (1, 64)]) == 64     # rows of 64 with a 64-element gap
    assert _ap_contiguous_run([(512, 128), (2, 64)]) == 1                  # every other element
    assert _ap_contiguous_run([(512, 128)]) == 1


def test_store_of_a_psum_tile_is_refused_in_0_6():
    """nki.language.store takes an SBUF value; a PSUM tile must be copied out first (Beta 1 copied it silently)."""
    def k(a):
        out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.transpose(nl.load(a)))
        return out
    x = rng.standard_normal((32, 16)).astype(np.float32)
    with pytest.raises(KernelError) as exc:
        nki.simulate(nki.jit(k))(x)
    assert exc.value.rule == "err_unsupported_memory" and "PSUM" in str(exc.value)
    assert "nisa.tensor_copy" in str(exc.value)
    from trnsim.neuronxcc import nki as beta1
    np.testing.assert_array_equal(beta1.simulate_kernel(beta1.jit(k), x), x.T)
