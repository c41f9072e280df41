"""The kernel puzzle ladder (notebook 04b): every checker passes its worked solution (numerics and time budget),
fails a typical wrong answer with that mistake's specific hint, and answers a blank with "not answered yet"."""
from __future__ import annotations

import math

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.collectives as ncc
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.catalog import target
from trnsim.course.exercises import puzzles as pz
from trnsim.course.exercises.puzzle_solutions import SOLUTIONS

# ------------------------------------------------------------------------------ typical wrong answers


@nki.jit
def bias_forgotten(x, b):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        nl.store(out[i * 128:(i + 1) * 128, :], nl.load(x[i * 128:(i + 1) * 128, :]))
    return out


@nki.jit
def copy_not_transpose(x):
    P, F = x.shape
    out = nl.ndarray((F, P), dtype=x.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(F // 128):
        nl.store(out[j * 128:(j + 1) * 128, :], nl.load(x[:, j * 128:(j + 1) * 128]))
    return out


@nki.jit
def column_mean(x):
    P, C = x.shape
    out = nl.ndarray((1, C), dtype=x.dtype, buffer=nl.shared_hbm)
    w = nl.full((P, 1), 1.0 / P, dtype=x.dtype)
    acc = nl.ndarray((1, C), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=w, moving=nl.load(x))
    nl.store(out, nl.copy(acc))
    return out


@nki.jit
def mask_default_cmp(s):
    """cmp_op left at its default (nl.equal): only the diagonal survives."""
    P, F = s.shape
    out = nl.ndarray((P, F), dtype=s.dtype, buffer=nl.shared_hbm)
    m = nl.ndarray((P, F), dtype=s.dtype, buffer=nl.sbuf)
    nisa.affine_select(dst=m, pattern=[[-1, F]], channel_multiplier=1, on_true_tile=nl.load(s),
                       on_false_value=pz.MASK_VALUE)
    nl.store(out, m)
    return out


@nki.jit
def mask_keeps_future(s):
    P, F = s.shape
    out = nl.ndarray((P, F), dtype=s.dtype, buffer=nl.shared_hbm)
    m = nl.ndarray((P, F), dtype=s.dtype, buffer=nl.sbuf)
    nisa.affine_select(dst=m, pattern=[[1, F]], channel_multiplier=-1, on_true_tile=nl.load(s),
                       on_false_value=pz.MASK_VALUE, cmp_op=nl.greater_equal)
    nl.store(out, m)
    return out


@nki.jit
def softmax_without_max(x):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(R // 128):
        e = nl.exp(nl.load(x[i * 128:(i + 1) * 128, :]))
        nl.store(out[i * 128:(i + 1) * 128, :], nl.multiply(e, nl.reciprocal(nl.sum(e, axis=1, keepdims=True))))
    return out


@nki.jit
def rmsnorm_without_gamma(x, gamma):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(R // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        ms = nl.multiply(nl.sum(nl.square(t), axis=1, keepdims=True), 1.0 / C)
        nl.store(out[i * 128:(i + 1) * 128, :], nl.multiply(t, nl.rsqrt(nl.add(ms, pz.RMS_EPS))))
    return out


@nki.jit
def rmsnorm_without_eps(x, gamma):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.load(gamma)
    for i in nl.affine_range(R // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        ms = nl.multiply(nl.sum(nl.square(t), axis=1, keepdims=True), 1.0 / C)
        y = nl.multiply(t, nl.rsqrt(ms))
        nl.store(out[i * 128:(i + 1) * 128, :], nl.multiply(y, g.broadcast_to((128, C))))
    return out


@nki.jit
def matmul_psum_per_k(lhsT, rhs):
    """A fresh PSUM tile inside the K loop: only the last K tile survives."""
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for n in nl.affine_range(N // 512):
        for k in nl.sequential_range(K // 128):
            acc = nl.ndarray((M, 512), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=acc, stationary=nl.load(lhsT[k * 128:(k + 1) * 128, :]),
                           moving=nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512]))
        nl.store(out[:, n * 512:(n + 1) * 512], nl.copy(acc))
    return out


@nki.jit
def single_buffer(x):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    b = nl.ndarray((128, C), dtype=x.dtype, buffer=nl.sbuf)
    for i in nl.sequential_range(R // 128):
        nisa.dma_copy(dst=b, src=x[i * 128:(i + 1) * 128, :])
        nisa.activation(dst=b, op=nl.exp, data=b)
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=b)
    return out


@nki.jit
def tiles_in_the_loop(x):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(R // 128):
        nl.store(out[i * 128:(i + 1) * 128, :], nl.exp(nl.load(x[i * 128:(i + 1) * 128, :])))
    return out


def _online_lse(x, *, rescale: bool, zero_sum: bool):
    """An online logsumexp over 512-column chunks with one slip switched on: no rescaling of the running sum when
    the max grows (rescale=False), or a running sum never zeroed (zero_sum=False)."""
    P, C = x.shape
    out = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    neg_m = nl.full((P, 1), 1e30, dtype=nl.float32)
    l_sum = nl.zeros((P, 1), dtype=nl.float32) if zero_sum else nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    for j in nl.sequential_range(C // pz.ONLINE_CHUNK):
        t = nl.load(x[:, j * pz.ONLINE_CHUNK:(j + 1) * pz.ONLINE_CHUNK])
        new = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=new, data=nl.max(t, axis=1, keepdims=True), op0=nl.multiply, operand0=-1.0,
                           op1=nl.minimum, operand1=neg_m)
        e = nl.ndarray((P, pz.ONLINE_CHUNK), dtype=nl.float32, buffer=nl.sbuf)
        s = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=t, bias=new, reduce_op=nl.add, reduce_res=s,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        if rescale:
            corr = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=corr, op=nl.exp, data=neg_m, bias=new, scale=-1.0)
            nisa.tensor_scalar(dst=l_sum, data=l_sum, op0=nl.multiply, operand0=corr, op1=nl.add, operand1=s)
        else:
            nisa.tensor_tensor(dst=l_sum, data1=l_sum, data2=s, op=nl.add)
        nisa.tensor_copy(dst=neg_m, src=new)
    nl.store(out, nl.subtract(nl.log(l_sum), neg_m))
    return out


@nki.jit
def logsumexp_no_rescale(x):
    return _online_lse(x, rescale=False, zero_sum=True)


@nki.jit
def logsumexp_whole_row(x):
    P, C = x.shape
    out = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    neg_m = nl.multiply(nl.max(t, axis=1, keepdims=True), -1.0)
    e = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
    s = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=e, op=nl.exp, data=t, bias=neg_m, reduce_op=nl.add, reduce_res=s,
                    reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nl.store(out, nl.subtract(nl.log(s), neg_m))
    return out


def _flash(q_t, k_t, v, *, scale, reload_kv):
    d, Sq = q_t.shape
    _, Sk = k_t.shape
    out = nl.ndarray((Sq, d), dtype=nl.float32, buffer=nl.shared_hbm)
    if not reload_kv:
        k_sb = nl.load(k_t)
        v_sb = [nl.load(v[j * 128:(j + 1) * 128, :]) for j in range(Sk // 128)]
    for i in nl.affine_range(Sq // 128):
        if reload_kv:
            k_sb = nl.load(k_t)
            v_sb = [nl.load(v[j * 128:(j + 1) * 128, :]) for j in range(Sk // 128)]
        q = nl.load(q_t[:, i * 128:(i + 1) * 128])
        s = nl.ndarray((128, Sk), dtype=nl.float32, buffer=nl.sbuf)   # all scores, one PSUM bank at a time
        for b in range(Sk // 512):
            s_ps = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=s_ps, stationary=q, moving=k_sb[:, b * 512:(b + 1) * 512])
            nisa.tensor_copy(dst=s[:, b * 512:(b + 1) * 512], src=s_ps)
        neg_m = nl.multiply(nl.max(s, axis=1, keepdims=True), -scale)
        p = nl.ndarray((128, Sk), dtype=nl.float32, buffer=nl.sbuf)
        rs = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=p, op=nl.exp, data=s, bias=neg_m, scale=scale, reduce_op=nl.add, reduce_res=rs,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        acc = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.psum)
        for j in nl.sequential_range(Sk // 128):
            p_ps = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_transpose(dst=p_ps, data=p[:, j * 128:(j + 1) * 128])
            nisa.nc_matmul(dst=acc, stationary=nl.copy(p_ps), moving=v_sb[j])
        nl.store(out[i * 128:(i + 1) * 128, :], nl.multiply(acc, nl.reciprocal(rs)))
    return out


@nki.jit
def attention_no_rescale(q_t, k_t, v):
    """Online over 512-key blocks, but the running sum and accumulator are never rescaled by exp(m_old - m_new)."""
    d, Sq = q_t.shape
    _, Sk = k_t.shape
    scale = 1.0 / math.sqrt(d)
    out = nl.ndarray((Sq, d), dtype=nl.float32, buffer=nl.shared_hbm)
    k_sb = nl.load(k_t)
    v_sb = [nl.load(v[j * 128:(j + 1) * 128, :]) for j in range(Sk // 128)]
    for i in range(Sq // 128):
        q = nl.load(q_t[:, i * 128:(i + 1) * 128])
        neg_m = nl.full((128, 1), 1e30, dtype=nl.float32)
        l_sum = nl.zeros((128, 1), dtype=nl.float32)
        acc = nl.zeros((128, d), dtype=nl.float32)
        for j in range(Sk // 512):
            s = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=s, stationary=q, moving=k_sb[:, j * 512:(j + 1) * 512])
            new = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=new, data=nl.max(s, axis=1, keepdims=True), op0=nl.multiply, operand0=-scale,
                               op1=nl.minimum, operand1=neg_m)
            p = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
            rs = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=p, op=nl.exp, data=s, bias=new, scale=scale, reduce_op=nl.add, reduce_res=rs,
                            reduce_cmd=nisa.reduce_cmd.reset_reduce)
            nisa.tensor_tensor(dst=l_sum, data1=l_sum, data2=rs, op=nl.add)
            pv = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.psum)
            for c in range(4):
                p_ps = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
                nisa.nc_transpose(dst=p_ps, data=p[:, c * 128:(c + 1) * 128])
                nisa.nc_matmul(dst=pv, stationary=nl.copy(p_ps), moving=v_sb[j * 4 + c])
            nisa.tensor_tensor(dst=acc, data1=acc, data2=pv, op=nl.add)
            nisa.tensor_copy(dst=neg_m, src=new)
        nl.store(out[i * 128:(i + 1) * 128, :], nl.multiply(acc, nl.reciprocal(l_sum)))
    return out


@nki.jit
def logsumexp_two_pass(x):
    """Right values, but x is read twice (a max pass, then a sum pass): not online."""
    P, C = x.shape
    out = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    m = nl.full((P, 1), -1e30, dtype=nl.float32)
    for j in range(C // pz.ONLINE_CHUNK):
        m = nl.maximum(m, nl.max(nl.load(x[:, j * pz.ONLINE_CHUNK:(j + 1) * pz.ONLINE_CHUNK]), axis=1, keepdims=True))
    l_sum = nl.zeros((P, 1), dtype=nl.float32)
    for j in range(C // pz.ONLINE_CHUNK):
        t = nl.load(x[:, j * pz.ONLINE_CHUNK:(j + 1) * pz.ONLINE_CHUNK])
        l_sum = nl.add(l_sum, nl.sum(nl.exp(nl.subtract(t, m)), axis=1, keepdims=True))
    nl.store(out, nl.add(nl.log(l_sum), m))
    return out


@nki.jit
def logsumexp_sum_uninitialised(x):
    """The running sum is allocated but never zeroed: the first add reads undefined memory."""
    return _online_lse(x, rescale=True, zero_sum=False)


@nki.jit
def attention_unscaled(q_t, k_t, v):
    return _flash(q_t, k_t, v, scale=1.0, reload_kv=False)


@nki.jit
def attention_reloads_kv(q_t, k_t, v):
    return _flash(q_t, k_t, v, scale=1.0 / math.sqrt(q_t.shape[0]), reload_kv=True)


@nki.jit
def gelu_same_half(x):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    half = R // nl.num_programs()
    for i in nl.affine_range(half // 128):
        rows = slice(i * 128, (i + 1) * 128)
        nl.store(out[rows, :], nl.gelu(nl.load(x[rows, :])))
    return out


@nki.jit
def gelu_one_core(x):
    """Numerically right, but core 0 does every row and core 1 nothing."""
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    if nl.program_id(0) == 0:
        for i in nl.affine_range(R // 128):
            rows = slice(i * 128, (i + 1) * 128)
            nl.store(out[rows, :], nl.gelu(nl.load(x[rows, :])))
    return out


@nki.jit
def sum_not_mean(g):
    out = nl.ndarray(g.shape, dtype=g.dtype, buffer=nl.shared_hbm)
    s = nl.ndarray(g.shape, dtype=g.dtype, buffer=nl.sbuf)
    ncc.all_reduce(srcs=[nl.load(g)], dsts=[s], replica_group=ncc.ReplicaGroup([list(range(pz.WORLD))]), op=nl.add)
    nl.store(out, s)
    return out


WRONG = {
    "broadcast_add": [(bias_forgotten, "the bias was never added", "broadcast")],
    "transpose_te": [(copy_not_transpose, "untransposed", "nc_transpose")],
    "column_sum": [(column_mean, "factor of 128", "ones column")],
    "causal_mask": [(mask_keeps_future, "upper triangle", "q - k >= 0"),
                    (mask_default_cmp, "only the diagonal was kept", "cmp_op=nl.greater_equal")],
    "row_softmax": [(softmax_without_max, "exp overflowed", "maximum")],
    "rmsnorm": [(rmsnorm_without_gamma, "gamma is missing", "broadcast"),
                (rmsnorm_without_eps, "eps is missing", "add eps before the square root")],
    "tiled_matmul": [(matmul_psum_per_k, "only K tile 3 of 4", "accumulate")],
    "double_buffer": [(single_buffer, "too slow", "two buffers"),
                      (tiles_in_the_loop, "allows 4,096", "at most two")],
    "online_logsumexp": [(logsumexp_no_rescale, "not rescaled", "exp(m_old - m_new)"),
                         (logsumexp_whole_row, "bytes per partition live in SBUF", "stream 512-column chunks"),
                         (logsumexp_two_pass, "2.0x the 4,194,816", "x is read twice"),
                         (logsumexp_sum_uninitialised, "reads memory before anything wrote it", "nl.zeros")],
    "flash_attention": [(attention_unscaled, "not scaled", "sqrt(d)"),
                        (attention_no_rescale, "not rescaled when the running max grew", "corr = exp(m_old - m_new)"),
                        (attention_reloads_kv, "the 655,360 it must", "before the query loop")],
    "two_core_gelu": [(gelu_same_half, "only the first half", "program_id"),
                      (gelu_one_core, "too slow", "one core does almost all the work")],
    "mean_all_reduce": [(sum_not_mean, "factor of 4", "divide")],
}


def test_every_puzzle_has_a_solution_and_a_wrong_answer():
    assert list(SOLUTIONS) == list(pz.PUZZLES) == list(WRONG)
    assert len(pz.PUZZLES) == 12


@pytest.mark.parametrize("name", list(pz.PUZZLES))
def test_worked_solution_passes_numerics_and_budget(name):
    res = pz.check_puzzle(name, SOLUTIONS[name])
    assert res.passed, str(res)
    assert "matches numpy" in res.message and "budget: within" in res.message
    # the budget is 1.2x the solution's own time, so the solution sits at 1/1.2 of it
    kept: list = []
    pz.check_puzzle(name, SOLUTIONS[name], keep=kept)
    assert kept[0].latency_us == pytest.approx(pz.budget_us(name) / pz.SLACK, rel=1e-9)
    assert pz.budget_factor(name) > pz.SLACK     # no solution beats its roofline floor


@pytest.mark.parametrize("name,kernel,msg,hint",
                         [(n, k, m, h) for n, cases in WRONG.items() for k, m, h in cases],
                         ids=[f"{n}-{k.__name__ if hasattr(k, '__name__') else k.func.__name__}"
                              for n, cases in WRONG.items() for k, _, _ in cases])
def test_typical_wrong_answer_gets_its_specific_hint(name, kernel, msg, hint):
    res = pz.check_puzzle(name, kernel)
    assert not res.passed
    assert msg in res.message, str(res)
    assert any(hint in h for h in res.hints), str(res)


@pytest.mark.parametrize("name", list(pz.PUZZLES))
@pytest.mark.parametrize("blank", [None, ...])
def test_blank_answer_is_not_answered(name, blank):
    res = pz.check_puzzle(name, blank)
    assert not res.passed and res.message == "not answered yet"
    assert "replace the ..." in res.hints[0]


def test_kernel_error_is_shown_with_its_rule_and_fix():
    @nki.jit
    def whole_tensor(x, b):          # 512 rows in one tile: breaks the 128-partition rule
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.add(nl.load(x), nl.load(b)))
        return out
    res = pz.check_puzzle("broadcast_add", whole_tensor)
    assert not res.passed
    assert "KernelError [err_num_partition_exceed_arch_limit]" in res.message and "fix:" in res.message
    assert "128 partitions" in res.hints[0]


def test_python_error_and_non_kernel_are_reported_not_raised():
    def broken(x, b):
        raise ZeroDivisionError("oops")
    res = pz.check_puzzle("broadcast_add", broken)
    assert not res.passed and "ZeroDivisionError" in res.message
    res = pz.check_puzzle("broadcast_add", 3)
    assert not res.passed and "expected a kernel function" in res.message
    with pytest.raises(ValueError, match="unknown puzzle"):
        pz.check_puzzle("no_such_puzzle", SOLUTIONS["broadcast_add"])


def test_floor_comes_from_the_catalog():
    t = target("trn2")
    core = t.core
    # the streaming rate: the DMA engines' 368 GB/s capped by the core's 362.5 GB/s share of HBM
    rate = min(core.dma_engines * core.dma_engine_gbytes_per_s, t.chip.hbm_gbytes_per_s_per_core) * 1e9
    assert rate == pytest.approx(362.5e9)
    x, b = pz.PUZZLES["broadcast_add"].inputs()
    assert pz.floor("broadcast_add").dma_us == pytest.approx((x.nbytes * 2 + b.nbytes) / rate * 1e6)
    lhsT, rhs = pz.PUZZLES["tiled_matmul"].inputs()
    f = pz.floor("tiled_matmul")
    assert f.tensor_us == pytest.approx(2 * 128 * 1024 * 512 / (core.tensor_peak_tflops("fp32") * 1e12) * 1e6)
    assert pz.floor("two_core_gelu").dma_us == pytest.approx(x.nbytes * 2 * 2 / (2 * rate) * 1e6)
    coll = pz.floor("mean_all_reduce")
    assert coll.collective_us > 0 and coll.limiter == "DMA + all-reduce"


def test_two_cores_are_timed_separately_and_halve_the_time():
    one = pz.run("two_core_gelu", nki.jit(SOLUTIONS["two_core_gelu"].func)).latency_us
    import trnsim.perf as perf
    x, = pz.PUZZLES["two_core_gelu"].inputs()
    lnc1 = perf.profile(SOLUTIONS["two_core_gelu"], x, target="trn2").latency_us
    two = pz.run("two_core_gelu", SOLUTIONS["two_core_gelu"])
    assert len(two.core_latency_us) == 2 and two.core_latency_us[0] == pytest.approx(two.core_latency_us[1])
    assert two.latency_us < 0.7 * lnc1
    assert one == pytest.approx(two.latency_us)      # the checker launches [2] itself


def test_leaderboard_rows_and_table():
    rows = pz.leaderboard({"broadcast_add": SOLUTIONS["broadcast_add"], "causal_mask": mask_keeps_future})
    by = {r.name: r for r in rows}
    assert len(rows) == 12
    assert by["broadcast_add"].passed and by["broadcast_add"].time_us < by["broadcast_add"].budget_us
    assert not by["causal_mask"].passed and by["causal_mask"].time_us is None
    assert by["tiled_matmul"].time_us is None and by["tiled_matmul"].floor_us > 0
    text = pz.leaderboard_table(rows)
    assert text.count("solved") == 1 and text.count("open") == 11
    # right values but too slow: its time is shown, not "-" (it was dropped like a wrong answer)
    slow = {r.name: r for r in pz.leaderboard({"double_buffer": single_buffer})}["double_buffer"]
    assert not slow.passed and slow.time_us is not None and slow.time_us > slow.budget_us
    assert "right values, not accepted" in pz.leaderboard_table([slow])


def test_leaderboard_figure_draws_solved_bars_and_every_budget():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from trnsim.course.viz.puzzles import plot_leaderboard

    rows = pz.leaderboard({"broadcast_add": SOLUTIONS["broadcast_add"], "rmsnorm": SOLUTIONS["rmsnorm"]})
    fig, ax = plt.subplots()
    assert plot_leaderboard(ax, rows) is ax
    assert len(ax.patches) == 2                                  # one bar per solved puzzle
    widths = sorted(p.get_width() for p in ax.patches)
    want = sorted(r.time_us / r.floor_us for r in rows if r.passed)
    assert widths == pytest.approx(want)
    budgets = ax.collections[0].get_offsets()[:, 0]
    assert len(budgets) == 12 and np.all(budgets > 1)
    assert "2 of 12 solved" in ax.get_title()
    plt.close(fig)


def test_student_stub_body_counts_as_not_answered():
    @nki.jit
    def broadcast_add(x, b):
        """x [R, C] + b [1, C]."""
        raise NotImplementedError()
    res = pz.check_puzzle("broadcast_add", broadcast_add)
    assert not res.passed and res.message == "not answered yet"
    assert "raise NotImplementedError()" in res.hints[1]


@nki.jit
def _transpose_into_sbuf(x):
    P, F = x.shape
    out = nl.ndarray((F, P), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    for j in range(F // 128):
        tp = nl.ndarray((128, P), dtype=x.dtype, buffer=nl.sbuf)     # should be PSUM
        nisa.nc_transpose(dst=tp, data=t[:, j * 128:(j + 1) * 128])
        nl.store(out[j * 128:(j + 1) * 128, :], tp)
    return out


@nki.jit
def _column_sum_swapped(x):
    R, C = x.shape
    out = nl.ndarray((1, C), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    acc = nl.ndarray((C, 1), dtype=nl.float32, buffer=nl.psum)            # x stationary: C partitions
    nisa.nc_matmul(dst=acc, stationary=t, moving=nl.ones((128, 1), dtype=x.dtype))
    return out


def test_kernel_error_hints_name_the_actual_mistake():
    """A PSUM-only destination in SBUF and swapped matmul operands get hints about what went wrong,
    not the generic 'load first' / 'slice 128 rows' advice."""
    r = pz.check_puzzle("transpose_te", _transpose_into_sbuf)
    assert not r.passed and "buffer=nl.psum" in "\n".join(r.hints) and "load first" not in "\n".join(r.hints)
    assert "allocate dst in PSUM" in r.message
    r = pz.check_puzzle("column_sum", _column_sum_swapped)
    assert not r.passed and "stationary" in "\n".join(r.hints) and "slice 128 rows" not in "\n".join(r.hints)


@nki.jit
def column_sum_on_gpsimd(x):
    """Right values through GpSimd's partition reduce, an instruction with no documented cycle formula."""
    P, C = x.shape
    out = nl.ndarray((1, C), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.ndarray((1, C), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_partition_reduce(dst=s, op=nl.add, data=nl.load(x))
    nl.store(out, s)
    return out


def test_a_time_resting_on_an_undocumented_cost_says_so():
    res = pz.check_puzzle("column_sum", column_sum_on_gpsimd)
    assert "this time is not a hardware claim" in res.message and "tensor_partition_reduce" in res.message
    assert "not a hardware claim" not in pz.check_puzzle("column_sum", SOLUTIONS["column_sum"]).message


@pytest.mark.parametrize("block", [128, 256, 512])
def test_no_rescale_diagnosis_for_any_key_block(block):
    """A kernel that walks the keys in 128-, 256- or 512-key blocks without rescaling is named as such."""
    q_t, k_t, v = pz._flash_inputs(np.random.default_rng(3))
    out = pz._attention_no_rescale(q_t, k_t, v, block)
    want = pz._attention(q_t, k_t, v)
    assert not np.allclose(out, want, rtol=1e-3, atol=1e-3)
    diag = pz._d_attention(q_t, k_t, v, out, want)
    assert diag is not None and "not rescaled" in diag[0]


def test_no_rescale_diagnosis_not_given_for_right_answer():
    q_t, k_t, v = pz._flash_inputs(np.random.default_rng(3))
    want = pz._attention(q_t, k_t, v)
    assert pz._d_attention(q_t, k_t, v, want + 1.0, want) is None
