"""Property-based tests: random shapes/dtypes either match numpy within the dtype's tolerance or raise KernelError
for a documented rule - never any other exception."""
import ml_dtypes
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trnsim.neuronxcc.nki as nki
import trnsim.neuronxcc.nki.language as nl
from trnsim.nki import KernelError
from trnsim.nki.dtypes import cast, storage_dtype

FLOATS = ["float32", "bfloat16", "float16", "float8_e4m3", "float8_e5m2"]
INTS = ["int8", "int32", "uint8"]
EPS = {"float32": 1e-6, "bfloat16": 2 ** -7, "float16": 2 ** -10, "float8_e4m3": 2 ** -3, "float8_e5m2": 2 ** -2,
       "int8": 0, "int32": 0, "uint8": 0}
RULES = {"err_num_partition_exceed_arch_limit", "err_size_of_dimension_exceed_arch_limit",
         "err_psum_tile_exceeds_bank", "err_tensor_access_out_of_bound", "err_sbuf_over_capacity",
         "err_num_partition_mismatch", "err_matmul_dtype_mismatch", "err_unsupported_dtype"}

UNARY = {"exp": (nl.exp, np.exp), "tanh": (nl.tanh, np.tanh), "square": (nl.square, np.square),
         "relu": (nl.relu, lambda x: np.maximum(x, 0)), "abs": (nl.abs, np.abs)}
BINARY = {"add": (nl.add, np.add), "multiply": (nl.multiply, np.multiply), "maximum": (nl.maximum, np.maximum),
          "subtract": (nl.subtract, np.subtract)}

NKI_SETTINGS = settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def _data(rng, shape, dtype):
    if dtype in INTS:
        lo = 0 if dtype.startswith("u") else -8
        return rng.integers(lo, 8, shape).astype(storage_dtype(dtype))
    return rng.uniform(-2, 2, shape).astype(np.float32).astype(storage_dtype(dtype))


@NKI_SETTINGS
@given(p=st.integers(1, 160), f=st.integers(1, 700), dtype=st.sampled_from(FLOATS + INTS),
       op=st.sampled_from(sorted(UNARY) + sorted(BINARY)), seed=st.integers(0, 2 ** 16))
def test_load_compute_store(p, f, dtype, op, seed):
    rng = np.random.default_rng(seed)
    a = _data(rng, (p, f), dtype)
    b = _data(rng, (p, f), dtype)
    unary = op in UNARY
    fn, ref = UNARY[op] if unary else BINARY[op]

    @nki.jit
    def k(x, y):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        tx = nl.load(x)
        r = fn(tx) if unary else fn(tx, nl.load(y))
        nl.store(out, r)
        return out
    try:
        got = nki.simulate_kernel(k, a, b)
    except KernelError as e:
        assert e.rule in RULES, e
        assert p > 128 and e.rule == "err_num_partition_exceed_arch_limit"
        return
    assert p <= 128
    af, bf = a.astype(np.float32), b.astype(np.float32)
    with np.errstate(all="ignore"):
        want = ref(af) if unary else ref(af, bf)
    # integer tiles: unary activations produce the promoted/int output rounded to nearest
    want = cast(want.astype(np.float32), dtype).astype(np.float32)
    got = got.astype(np.float32)
    finite = np.isfinite(want)
    assert np.array_equal(np.isfinite(got), finite)
    np.testing.assert_allclose(got[finite], want[finite], rtol=EPS[dtype] * 2 + 1e-6, atol=EPS[dtype] * 2 + 1e-6)


@NKI_SETTINGS
@given(k_=st.integers(1, 160), m=st.integers(1, 160), n=st.integers(1, 640),
       dtype=st.sampled_from(["float32", "bfloat16", "float16", "float8_e4m3"]),
       dtype2=st.sampled_from(["same", "bfloat16", "float32"]), seed=st.integers(0, 2 ** 16))
def test_matmul_tile(k_, m, n, dtype, dtype2, seed):
    rng = np.random.default_rng(seed)
    d2 = dtype if dtype2 == "same" else dtype2
    s = _data(rng, (k_, m), dtype)
    mv = _data(rng, (k_, n), d2)

    @nki.jit
    def kern(x, y):
        out = nl.ndarray((x.shape[1], y.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
        res = nl.matmul(nl.load(x), nl.load(y), transpose_x=True)
        nl.store(out, nl.copy(res))
        return out
    wide = {"float32"}
    expect_err = None
    if k_ > 128:
        expect_err = "err_num_partition_exceed_arch_limit"
    elif m > 128 or n > 512:
        expect_err = "err_size_of_dimension_exceed_arch_limit"
    elif (dtype in wide) != (d2 in wide):
        expect_err = "err_matmul_dtype_mismatch"
    try:
        got = nki.simulate_kernel(kern, s, mv)
    except KernelError as e:
        assert e.rule == expect_err, e
        return
    assert expect_err is None
    want = s.astype(np.float64).T @ mv.astype(np.float64)
    scale = np.abs(s.astype(np.float64)).T @ np.abs(mv.astype(np.float64))
    # fp32 accumulation of exact products: error bounded by k * eps32 * sum|a||b|
    np.testing.assert_array_less(np.abs(got - want), k_ * 2 ** -23 * scale + 1e-30 + 1e-6)


@NKI_SETTINGS
@given(rows=st.integers(1, 400), cols=st.integers(1, 300), r0=st.integers(0, 400), c0=st.integers(0, 300),
       h=st.integers(1, 140), w=st.integers(1, 300), masked=st.booleans())
def test_tile_access_bounds(rows, cols, r0, c0, h, w, masked):
    a = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)

    @nki.jit
    def k(x):
        out = nl.ndarray((h, w), dtype=x.dtype, buffer=nl.shared_hbm)
        i = nl.arange(h)[:, None]
        j = nl.arange(w)[None, :]
        m = ((r0 + i) < rows) & ((c0 + j) < cols) if masked else None
        t = nl.load(x[r0 + i, c0 + j], mask=m)
        nl.store(out[i, j], t, mask=m)
        return out
    fits_p = h <= 128
    in_bounds = r0 + h <= rows and c0 + w <= cols
    try:
        got = nki.simulate_kernel(k, a)
    except KernelError as e:
        if not fits_p:
            assert e.rule == "err_num_partition_exceed_arch_limit"
        else:
            assert e.rule == "err_tensor_access_out_of_bound" and not in_bounds and not masked, e
        return
    assert fits_p and (in_bounds or masked)
    rr, cc = min(h, max(0, rows - r0)), min(w, max(0, cols - c0))
    np.testing.assert_array_equal(got[:rr, :cc], a[r0:r0 + rr, c0:c0 + cc])
    if masked:
        assert np.isnan(got[rr:, :]).all() and np.isnan(got[:, cc:]).all()
