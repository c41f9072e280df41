"""Checkers of notebooks 05 and 06: pass on right answers, specific hints on typical wrong ones."""
from __future__ import annotations

import numpy as np

import trnsim.neuronxcc.nki as nki
import trnsim.neuronxcc.nki.isa as nisa
import trnsim.neuronxcc.nki.language as nl
from trnsim.exercises import kernels_perf as kp
from trnsim.kernels import reference, softmax


def test_two_pass_softmax_is_correct():
    x = np.random.default_rng(1).standard_normal((256, 384)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate_kernel(kp.softmax_two_pass, x), reference.softmax(x), rtol=1e-5, atol=1e-7)


def test_fused_reference_passes():
    res = kp.check_fused_softmax(softmax)
    assert res and "less HBM traffic" in res.message


def test_two_pass_fails_on_traffic_and_reduction():
    res = kp.check_fused_softmax(kp.softmax_two_pass)
    assert not res and "not fused" in res.message
    assert any("keep exp(x - max) in SBUF" in h for h in res.hints)
    assert any("reduce_op=np.add" in h for h in res.hints)


@nki.jit
def _separate_sum(x):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(R // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        neg = nl.multiply(nl.max(t, axis=1, keepdims=True, dtype=nl.float32), -1.0)
        e = nisa.activation(op=nl.exp, data=t, bias=neg, dtype=nl.float32)
        s = nl.sum(e, axis=1, keepdims=True, dtype=nl.float32)
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.multiply(e, nl.reciprocal(s), dtype=x.dtype))
    return out


@nki.jit
def _no_division(x):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(R // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        neg = nl.multiply(nl.max(t, axis=1, keepdims=True, dtype=nl.float32), -1.0)
        nl.store(out[i * 128:(i + 1) * 128, :], value=nisa.activation(op=nl.exp, data=t, bias=neg, dtype=x.dtype))
    return out


@nki.jit
def _too_many_partitions(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.exp(nl.load(x)))
    return out


def test_separate_sum_gets_the_activation_hint():
    res = kp.check_fused_softmax(_separate_sum)
    assert not res and len(res.hints) == 1 and "reduce_res=row_sum" in res.hints[0]


def test_wrong_values_and_kernel_errors_get_hints():
    res = kp.check_fused_softmax(_no_division)
    assert not res and "wrong values" in res.message and "reciprocal" in res.hints[0]
    res = kp.check_fused_softmax(_too_many_partitions)
    assert not res and "rejected" in res.message and "partition" in res.hints[0]


def test_unanswered_and_not_a_function():
    assert "not answered" in str(kp.check_fused_softmax(None))
    assert "not answered" in str(kp.check_fused_softmax(...))
    res = kp.check_fused_softmax(42)
    assert not res and "without calling it" in res.hints[0]
