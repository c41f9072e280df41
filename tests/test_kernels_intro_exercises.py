"""Notebook 04's kernel checker (NKI 0.6): a right kernel passes; each typical mistake gets its own hint."""
import math

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.course.exercises.kernels_intro import CASES, check_grid, check_relu_kernel, relu_reference, run_case


def _relu(clip=True, moving=True, compute=True, store=True, offset=0, whole=False, ret=True, round_down=False,
          full_tile=False, loop=range):
    """A ReLU kernel in the 0.6 idiom (Python loop over row tiles, dma_copy, activation), one mistake switched on."""
    def kernel(x):
        R, C = x.shape
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        if whole:
            nl.store(out, nl.maximum(nl.load(x), 0.0))
            return out
        n_tiles = R // 128 if round_down else math.ceil(R / 128)
        for i in loop(n_tiles):
            lo = i * 128 if moving else 0
            hi = min(lo + 128, R - offset) if clip else lo + 128
            n = hi - lo
            t = nl.ndarray((128, C), dtype=x.dtype, buffer=nl.sbuf)
            y = nl.ndarray((128, C), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t if full_tile else t[0:n, :], src=x[lo:hi, :])
            if compute:
                nisa.activation(dst=y[0:n, :], op=nl.relu, data=t[0:n, :])
            else:
                nisa.tensor_copy(dst=y[0:n, :], src=t[0:n, :])
            if store:
                nisa.dma_copy(dst=out[lo:hi, :], src=y[0:n, :])
        return out if ret else None
    return nki.jit(kernel)


@nki.jit
def _relu_load_store(x):
    """The same kernel with the nl.load / nl.store convenience calls."""
    R = x.shape[0]
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(math.ceil(R / 128)):
        rows = slice(i * 128, min((i + 1) * 128, R))
        nl.store(out[rows, :], value=nl.maximum(nl.load(x[rows, :]), 0.0))
    return out


def test_correct_kernels_pass_and_match_numpy():
    for k in (_relu(), _relu_load_store):
        assert check_relu_kernel(k)
        x, out = run_case(k, (300, 512))
        np.testing.assert_array_equal(out, relu_reference(x))


def test_plain_function_is_accepted():
    assert check_relu_kernel(_relu().func)


@pytest.mark.parametrize("kwargs, words", [
    (dict(whole=True), ["err_num_partition_exceed_arch_limit", "at most 128 partitions", "for i in range("]),
    (dict(clip=False), ["err_tensor_access_out_of_bound", "clip its slice", "min((i + 1) * 128, x.shape[0])"]),
    (dict(full_tile=True), ["err_shape_mismatch", "tile[0:n, :]"]),
    (dict(store=False), ["err_tensor_output_not_written_to", "dma_copy(dst=out[lo:hi, :]"]),
    (dict(moving=False), ["rows 128..383 were never written", "move with the loop index"]),
    (dict(moving=False, loop=nl.affine_range), ["rows 128..383 were never written", "move with the loop index"]),
    (dict(round_down=True), ["rows 256..299 were never written", "rounds down", "math.ceil"]),
    (dict(offset=1), ["row 127 was never written", "off-by-one", "min((i + 1) * 128, x.shape[0])"]),
    (dict(compute=False), ["equals the input", "op=nl.relu"]),
    (dict(ret=False), ["returned nothing", "return out"]),
])
def test_each_mistake_gets_a_specific_hint(kwargs, words):
    res = check_relu_kernel(_relu(**kwargs))
    assert not res.passed
    text = str(res)
    for w in words:
        assert w in text, (w, text)
    assert "mask" not in text                                 # Beta 1 advice never appears
    assert ".py" not in text and "/tmp" not in text and "/work" not in text   # no machine-specific file paths


def test_unclipped_tile_error_names_the_min_fix():
    text = str(check_relu_kernel(_relu(clip=False)))
    assert "index range [256, 383] exceed dimension size of 300" in text
    assert "fix: shrink the index range: clip" in text


def test_compute_on_hbm_gets_the_sbuf_hint():
    @nki.jit
    def relu_on_hbm(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in range(math.ceil(x.shape[0] / 128)):
            rows = slice(i * 128, min((i + 1) * 128, x.shape[0]))
            nisa.activation(dst=out[rows, :], op=nl.relu, data=x[rows, :])   # engines cannot read HBM
        return out
    res = check_relu_kernel(relu_on_hbm)
    assert not res.passed and "err_unsupported_memory" in str(res)
    assert "copy the input into SBUF first (nisa.dma_copy or nl.load)" in str(res)


def test_beta1_grid_launch_is_explained():
    @nki.jit
    def relu_spmd(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        i = nl.program_id(0)
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.maximum(nl.load(x[i * 128:(i + 1) * 128, :]), 0.0))
        return out
    res = check_relu_kernel(relu_spmd)             # run once: only program 0's tile is written
    assert not res.passed and "rows 128..383 were never written" in str(res)
    with pytest.raises(nki.KernelError) as info:
        relu_spmd[3]
    assert info.value.rule == "err_invalid_lnc"


def test_python_errors_and_non_answers():
    def broken(x):
        raise RuntimeError("boom")

    @nki.jit
    def blank(x):
        """The student version of the exercise: nbgrader leaves the body as raise NotImplementedError()."""
        raise NotImplementedError()
    res = check_relu_kernel(blank)
    assert not res.passed and "not answered" in str(res) and "NotImplementedError" in str(res)
    res = check_relu_kernel(broken)
    assert not res.passed and "RuntimeError" in str(res) and "boom" in str(res)
    assert "not answered" in str(check_relu_kernel(None))
    assert "not answered" in str(check_relu_kernel(...))
    assert "without calling it" in str(check_relu_kernel(np.zeros(3)))


def test_cases_include_a_ragged_tile():
    assert any(r % 128 for r, _ in CASES) and any(r > 128 for r, _ in CASES)


def test_check_grid():
    assert check_grid(1000, 128, 8, 104)
    res = check_grid(1000, 128, 7, 0)
    assert not res.passed and "ceil(1000 / 128)" in str(res)
    # a learner who misses both parts is not handed either answer by the other part's hint
    hints = " ".join(h for part in res.hints for h in part.splitlines() if "hint:" in h)
    assert "104" not in hints and "8 x" not in hints and "last 104" not in hints
    assert check_grid(256, 128, 2, 128)
    assert "not answered" in str(check_grid(1000, 128, None, None)).lower() or not check_grid(1000, 128, None, None)


def test_out_of_bound_fix_text_follows_the_dialect():
    """NKI 0.6 kernels are told to clip with min(); Beta 1 kernels keep the mask advice of their own API."""
    import trnsim.neuronxcc.nki as beta1
    import trnsim.neuronxcc.nki.language as bl

    @nki.jit
    def store_past_end(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out[256:384, :], value=nl.load(x[0:128, :]))
        return out
    with pytest.raises(nki.KernelError) as info:
        nki.simulate(store_past_end)(np.zeros((300, 4), np.float32))
    text = str(info.value)
    assert "min(lo + tile, 300)" in text and "mask" not in text
    assert "the HBM tensor [300, 4] made in the kernel" in text      # the unnamed output is not called a tile

    def beta1_past_end(x):
        out = bl.ndarray(x.shape, dtype=x.dtype, buffer=bl.shared_hbm)
        rows, cols = 256 + bl.arange(128)[:, None], bl.arange(4)[None, :]
        bl.store(out[rows, cols], value=bl.load(x[rows, cols]))
        return out
    with pytest.raises(beta1.KernelError) as info:
        beta1.simulate_kernel(beta1_past_end, np.zeros((300, 4), np.float32))
    assert "mask=(index < size)" in str(info.value)


def test_a_result_left_in_psum_gets_the_psum_hint_not_the_input_one():
    """Review of notebook 04: the ReLU written to a PSUM tile and DMA'd to HBM was told to copy the *input* to SBUF."""
    @nki.jit
    def relu_via_psum(x):
        R, C = x.shape
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in range(math.ceil(R / 128)):
            lo, hi = i * 128, min((i + 1) * 128, R)
            t = nl.ndarray((hi - lo, C), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[lo:hi, :])
            y = nl.ndarray((hi - lo, C), dtype=x.dtype, buffer=nl.psum)
            nisa.activation(dst=y, op=nl.relu, data=t)
            nisa.dma_copy(dst=out[lo:hi, :], src=y)   # a DMA cannot read PSUM
        return out
    res = check_relu_kernel(relu_via_psum)
    assert not res.passed and "err_unsupported_memory" in str(res)
    assert "a DMA cannot read PSUM" in str(res) and "copy the input into SBUF" not in str(res)


def test_relu_with_one_iteration_past_the_end_is_refused():
    # the extra iteration reads x[R:R, :]: an empty access, refused like nl.ndarray((0, C)) (it was accepted
    # silently: a zero-row tile loaded, computed and stored)
    @nki.jit
    def relu_one_extra(x):
        R, C = x.shape
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in range(math.ceil(R / 128) + 1):
            lo, hi = i * 128, min((i + 1) * 128, R)
            t = nl.load(x[lo:hi, :])
            nl.store(out[lo:hi, :], value=nl.maximum(t, 0.0))
        return out
    res = check_relu_kernel(relu_one_extra)
    assert not res.passed and "err_invalid_shape" in res.message and "empty slice" in res.message
    with pytest.raises(nki.KernelError, match=r"result of 'load' would have shape \[0, 64\]"):
        nki.simulate(relu_one_extra)(np.ones((128, 64), np.float32))
