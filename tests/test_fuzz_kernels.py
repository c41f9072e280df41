"""Property-based fuzzing of kernels written with the public trnsim.nki API (issue 16, kernel part).

Complements tests/test_nki_properties.py with reductions, transposes and tiled loops over HBM
tensors. Property: a legal kernel matches numpy; an illegal one raises KernelError naming an
``err_*`` rule; no other exception escapes. Example counts are bounded to keep the suite fast.
"""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trnsim.nki as nki
import trnsim.nki.language as nl
from trnsim.nki import KernelError

KERNEL_FUZZ = settings(max_examples=80, deadline=None, database=None, derandomize=True,
                       suppress_health_check=[HealthCheck.too_slow])

REDUCE = {"sum": (nl.sum, np.sum), "max": (nl.max, np.max), "min": (nl.min, np.min), "mean": (nl.mean, np.mean)}


def _run(kernel, *arrays):
    """Simulate; return (output, None) or (None, rule) for a KernelError. Anything else propagates."""
    try:
        return nki.simulate(kernel)(*arrays), None
    except KernelError as e:
        assert isinstance(e.rule, str) and e.rule.startswith("err_"), e
        return None, e.rule


@KERNEL_FUZZ
@given(p=st.integers(1, 160), f=st.integers(1, 1024), op=st.sampled_from(sorted(REDUCE)), seed=st.integers(0, 999))
def test_free_axis_reduction(p, f, op, seed):
    x = np.random.default_rng(seed).uniform(-2, 2, (p, f)).astype(np.float32)
    fn, ref = REDUCE[op]

    @nki.jit
    def k(a):
        out = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, fn(nl.load(a), axis=1, keepdims=True))
        return out

    got, rule = _run(k, x)
    if p > 128:
        assert rule == "err_num_partition_exceed_arch_limit"
        return
    if rule is not None:
        assert f > 512, rule  # small tiles are always legal
        return
    np.testing.assert_allclose(got, ref(x.astype(np.float64), axis=1, keepdims=True), rtol=1e-5, atol=1e-5 * f)


@KERNEL_FUZZ
@given(p=st.integers(1, 140), f=st.integers(1, 140), seed=st.integers(0, 999))
def test_transpose(p, f, seed):
    x = np.random.default_rng(seed).uniform(-2, 2, (p, f)).astype(np.float32)

    @nki.jit
    def k(a):
        out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.copy(nl.transpose(nl.load(a))))   # nl.transpose gives PSUM; store takes SBUF
        return out

    got, rule = _run(k, x)
    if rule is not None:
        assert p > 32 or f > 32, rule  # 32 x 32 fits every transpose limit
        return
    np.testing.assert_array_equal(got, x.T)


@KERNEL_FUZZ
@given(tiles=st.integers(1, 6), f=st.integers(1, 600), seed=st.integers(0, 999))
def test_tiled_add_over_hbm(tiles, f, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-2, 2, (128 * tiles, f)).astype(np.float32)
    b = rng.uniform(-2, 2, (128 * tiles, f)).astype(np.float32)

    @nki.jit
    def k(x, y):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for t in nl.affine_range(x.shape[0] // 128):
            rows = slice(t * 128, (t + 1) * 128)
            s = nl.add(nl.load(x[rows, :]), nl.load(y[rows, :]))
            nl.store(out[rows, :], s)
        return out

    got, rule = _run(k, a, b)
    if rule is not None:
        assert f > 512, rule
        return
    np.testing.assert_array_equal(got, a + b)
