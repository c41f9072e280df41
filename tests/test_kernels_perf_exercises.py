"""Checkers of notebooks 05 and 06: pass on right answers, specific hints on typical wrong ones."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.course.exercises import kernels_perf as kp
from trnsim.models.journey import softmax_two_pass
from trnsim.kernels import reference, softmax


def test_two_pass_softmax_is_correct():
    x = np.random.default_rng(1).standard_normal((256, 384)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate(softmax_two_pass)(x), reference.softmax(x), rtol=1e-5, atol=1e-7)


def test_fused_reference_passes():
    res = kp.check_fused_softmax(softmax)
    assert res and "less HBM traffic" in res.message


def test_two_pass_fails_on_traffic_and_reduction():
    res = kp.check_fused_softmax(softmax_two_pass)
    assert not res and "not fused" in res.message
    assert any("keep exp(x - max) in SBUF" in h for h in res.hints)
    assert any("reduce_op=nl.add" in h for h in res.hints)


def _load(x, i):
    t = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[i * 128:(i + 1) * 128, :])
    return t


def _neg_row_max(t):
    neg = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=neg, op=nl.maximum, data=t, axis=1, negate=True)
    return neg


@nki.jit
def _separate_sum(x):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(R // 128):
        t = _load(x, i)
        e = nl.ndarray((128, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=t, bias=_neg_row_max(t))
        s = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=s, op=nl.add, data=e, axis=1)
        inv = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv, data=s)
        y = nl.ndarray((128, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y, data=e, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=y)
    return out


@nki.jit
def _no_division(x):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(R // 128):
        t = _load(x, i)
        e = nl.ndarray((128, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=t, bias=_neg_row_max(t))
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=e)
    return out


@nki.jit
def _too_many_partitions(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def _beta1_activation(x):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(R // 128):
        t = _load(x, i)
        e = nisa.activation(op=nl.exp, data=t, bias=_neg_row_max(t), dtype=nl.float32)   # Beta 1: no dst
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=e)
    return out


@nki.jit
def _blank(x):
    # YOUR CODE HERE
    raise NotImplementedError()


def test_separate_sum_gets_the_activation_hint():
    res = kp.check_fused_softmax(_separate_sum)
    assert not res and len(res.hints) == 1 and "reduce_res=row_sum" in res.hints[0]
    assert "nisa.activation(dst=e" in res.hints[0] and "reduce_cmd=nisa.reduce_cmd.reset_reduce" in res.hints[0]
    # one pass over HBM is fused as far as traffic goes: the message names what is actually missing
    assert "one pass over HBM" in res.message and "not fused yet" not in res.message


def test_wrong_values_and_kernel_errors_get_hints():
    res = kp.check_fused_softmax(_no_division)
    assert not res and "wrong values" in res.message and "reciprocal" in res.hints[0]
    res = kp.check_fused_softmax(_too_many_partitions)
    assert not res and "rejected" in res.message and "partition" in res.hints[0]


def test_beta1_value_returning_instruction_names_the_destination_first_form():
    res = kp.check_fused_softmax(_beta1_activation)
    assert not res and "rejected" in res.message
    assert "dst" in res.hints[0] and "activation" in res.hints[0]


def test_blank_student_kernel_reads_as_not_answered():
    res = kp.check_fused_softmax(_blank)
    assert not res and "not answered" in str(res) and "NotImplementedError" in str(res)


def test_unanswered_and_not_a_function():
    assert "not answered" in str(kp.check_fused_softmax(None))
    assert "not answered" in str(kp.check_fused_softmax(...))
    res = kp.check_fused_softmax(42)
    assert not res and "without calling it" in res.hints[0]


def _softmax_exp(bias: str):
    """One-pass softmax whose exp uses ``bias``: "neg_max" (right), "none" (exp(x)) or "max" (exp(x + max))."""
    @nki.jit
    def kernel(x):
        R, C = x.shape
        P = nl.tile_size.pmax
        out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
        for i in range(R // P):
            t = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[i * P:(i + 1) * P, :])
            row_sum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            e = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
            if bias == "none":
                nisa.activation(dst=e, op=nl.exp, data=t, reduce_op=nl.add, reduce_res=row_sum,
                                reduce_cmd=nisa.reduce_cmd.reset_reduce)
            else:
                m = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
                nisa.tensor_reduce(dst=m, op=nl.maximum, data=t, axis=1, negate=bias == "neg_max")
                nisa.activation(dst=e, op=nl.exp, data=t, bias=m, reduce_op=nl.add, reduce_res=row_sum,
                                reduce_cmd=nisa.reduce_cmd.reset_reduce)
            inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.reciprocal(dst=inv, data=row_sum)
            y = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=y, data=e, op0=nl.multiply, operand0=inv)
            nisa.dma_copy(dst=out[i * P:(i + 1) * P, :], src=y)
        return out
    return kernel


@pytest.mark.parametrize("bias", ["none", "max"])
def test_softmax_without_the_row_max_fails_on_large_logits(bias):
    kernel = _softmax_exp(bias)
    x = np.random.default_rng(0).standard_normal(kp.FUSION_CHECK_SHAPE).astype(np.float32) * 4
    np.testing.assert_allclose(nki.simulate(kernel)(x), reference.softmax(x), rtol=1e-3, atol=1e-6)  # fine at x 4
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)          # the overflow is reported, not warned about
        res = kp.check_fused_softmax(kernel)
    assert not res and "large logits" in res.message and "inf or NaN" in res.message
    assert res.hints[0].startswith("subtract each row's max before the exp (exp overflows to inf for large logits)")


def test_notebook_06_solution_passes_with_unchanged_speed_feedback():
    import trnsim.nki.typing as nt
    from trnsim.perf import profile

    kernel = _softmax_exp("neg_max")      # the worked solution of notebook 06 cell 21, instruction for instruction
    res = kp.check_fused_softmax(kernel)
    spec = nt.tensor[list(kp.FUSION_PROFILE_SHAPE), "float32"]
    mine, base = (profile(kernel, spec, numerics=False, target="trn1"),
                  profile(softmax_two_pass, spec, numerics=False, target="trn1"))
    assert res and res.message == (f"right numbers; {base.hbm_bytes / mine.hbm_bytes:.1f}x less HBM traffic and "
                                   f"{base.latency_us / mine.latency_us:.1f}x faster than two passes "
                                   f"({mine.latency_us:.0f} us vs {base.latency_us:.0f} us on "
                                   f"{kp.FUSION_PROFILE_SHAPE})")
