"""Notebook 04's kernel checker: a right kernel passes; each typical mistake gets its own hint."""
import numpy as np
import pytest

import trnsim.neuronxcc.nki as nki
import trnsim.neuronxcc.nki.language as nl
from trnsim.exercises.kernels_intro import CASES, check_grid, check_relu_kernel, relu_reference, run_case


def _relu(mask=True, pid=True, compute=True, store=True, offset=0, whole=False, ret=True):
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        if whole:
            nl.store(out, nl.maximum(nl.load(x), 0.0))
            return out
        base = nl.program_id(0) * 128 if pid else 0
        rows = base + nl.arange(128)[:, None]
        cols = nl.arange(x.shape[1])[None, :]
        m = (rows < x.shape[0] - offset) if mask else None
        t = nl.load(x[rows, cols], mask=m)
        y = nl.maximum(t, 0.0) if compute else t
        if store:
            nl.store(out[rows, cols], value=y, mask=m)
        return out if ret else None
    return nki.jit(kernel)


def test_correct_kernel_passes_and_matches_numpy():
    k = _relu()
    assert check_relu_kernel(k)
    x, out = run_case(k, (300, 512))
    np.testing.assert_array_equal(out, relu_reference(x))


def test_plain_function_is_accepted():
    assert check_relu_kernel(_relu().func)


@pytest.mark.parametrize("kwargs, words", [
    (dict(whole=True), ["err_num_partition_exceed_arch_limit", "at most 128 partitions"]),
    (dict(mask=False), ["err_tensor_access_out_of_bound", "mask=(rows < x.shape[0])"]),
    (dict(store=False), ["never written", "nl.store"]),
    (dict(pid=False), ["rows 128..383 were never written", "nl.program_id(0)"]),
    (dict(offset=1), ["row 127 was never written", "off-by-one"]),
    (dict(compute=False), ["equals the input", "nl.maximum"]),
    (dict(ret=False), ["returned nothing", "return out"]),
])
def test_each_mistake_gets_a_specific_hint(kwargs, words):
    res = check_relu_kernel(_relu(**kwargs))
    assert not res.passed
    text = str(res)
    for w in words:
        assert w in text, (w, text)
    assert "/" not in text.split("in kernel line:")[0].replace("x / ", "")  # no machine-specific file paths


def test_python_errors_and_non_answers():
    def broken(x):
        raise RuntimeError("boom")
    res = check_relu_kernel(broken)
    assert not res.passed and "RuntimeError" in str(res) and "boom" in str(res)
    assert "not answered" in str(check_relu_kernel(None))
    assert "without calling it" in str(check_relu_kernel(np.zeros(3)))


def test_cases_include_a_ragged_tile():
    assert any(r % 128 for r, _ in CASES) and any(r > 128 for r, _ in CASES)


def test_check_grid():
    assert check_grid(1000, 128, 8, 104)
    res = check_grid(1000, 128, 7, 0)
    assert not res.passed and "ceil(1000 / 128)" in str(res)
    assert check_grid(256, 128, 2, 128)
