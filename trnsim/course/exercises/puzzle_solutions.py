"""Worked solutions to the kernel puzzle ladder (notebook 04b), in NKI 0.6 (trnsim.nki).

One kernel per puzzle in :mod:`trnsim.course.exercises.puzzles`, in ladder order. The tests run each through its
checker, and each puzzle's timing budget is calibrated on its solution here (1.2x the solution's simulated
time over the roofline floor), so a learner's kernel passes when it is about as good as this one.
The notebook's answer cells hold the same code (tagged ``solution`` for nbgrader).
"""
from __future__ import annotations

import trnsim.nki as nki
import trnsim.nki.collectives as ncc
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.course.exercises.puzzle_spec import MASK_VALUE, ONLINE_CHUNK, RMS_EPS, WORLD


@nki.jit
def broadcast_add(x, b):
    """out[r, c] = x[r, c] + b[0, c]; b is loaded once and broadcast across the 128 partitions."""
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    bias = nl.broadcast_to(nl.load(b), (128, C))
    for i in range(R // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], nl.add(t, bias))
    return out


@nki.jit
def transpose_te(x):
    """out = x.T for x [128, F]: one Tensor Engine transpose per 128-column block, through PSUM."""
    P, F = x.shape
    out = nl.ndarray((F, P), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    for j in range(F // 128):
        tp = nl.ndarray((128, P), dtype=x.dtype, buffer=nl.psum)
        nisa.nc_transpose(dst=tp, data=t[:, j * 128:(j + 1) * 128])
        ts = nl.ndarray((128, P), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=ts, src=tp)
        nl.store(out[j * 128:(j + 1) * 128, :], ts)
    return out


@nki.jit
def column_sum(x):
    """out[0, c] = sum over rows of x [128, C]: a matmul with a ones column as the stationary operand."""
    P, C = x.shape
    out = nl.ndarray((1, C), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    ones = nl.ones((P, 1), dtype=x.dtype)
    acc = nl.ndarray((1, C), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=ones, moving=t)
    res = nl.ndarray((1, C), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nl.store(out, res)
    return out


@nki.jit
def causal_mask(s):
    """Keep s[q, k] where k <= q (the key is not in the query's future), else MASK_VALUE; one affine_select."""
    P, F = s.shape
    out = nl.ndarray((P, F), dtype=s.dtype, buffer=nl.shared_hbm)
    t = nl.load(s)
    m = nl.ndarray((P, F), dtype=s.dtype, buffer=nl.sbuf)
    # keep where 1 * q + (-1) * k >= 0
    nisa.affine_select(dst=m, pattern=[[-1, F]], channel_multiplier=1, on_true_tile=t,
                       on_false_value=MASK_VALUE, cmp_op=nl.greater_equal)
    nl.store(out, m)
    return out


@nki.jit
def row_softmax(x):
    """Numerically stable softmax of each row of x [R, C]: max, exp(x - max) with its row sum, one multiply."""
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(R // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        neg_max = nl.multiply(nl.max(t, axis=1, keepdims=True), -1.0)
        e = nl.ndarray((128, C), dtype=nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=t, bias=neg_max, reduce_op=nl.add, reduce_res=total,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nl.store(out[i * 128:(i + 1) * 128, :], nl.multiply(e, nl.reciprocal(total)))
    return out


@nki.jit
def rmsnorm(x, gamma):
    """x / sqrt(mean(x**2, axis=1) + eps) * gamma, gamma [1, C] loaded once and broadcast."""
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.broadcast_to(nl.load(gamma), (128, C))
    eps = nl.full((128, 1), RMS_EPS, dtype=nl.float32)
    for i in range(R // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        sq = nl.ndarray((128, C), dtype=nl.float32, buffer=nl.sbuf)
        ss = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=sq, op=nl.square, data=t, reduce_op=nl.add, reduce_res=ss,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        inv = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=inv, op=nl.rsqrt, data=ss, scale=1.0 / C, bias=eps)
        nl.store(out[i * 128:(i + 1) * 128, :], nl.multiply(nl.multiply(t, inv), g))
    return out


@nki.jit
def tiled_matmul(lhsT, rhs):
    """out [M, N] = lhsT.T @ rhs for lhsT [K, M], rhs [K, N]: 128-row K tiles accumulate in one PSUM tile per
    512-column N block; the lhsT tiles are loaded once (outside the N loop)."""
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    a = [nl.load(lhsT[k * 128:(k + 1) * 128, :]) for k in range(K // 128)]
    for n in range(N // 512):
        acc = nl.ndarray((M, 512), dtype=nl.float32, buffer=nl.psum)
        for k in range(K // 128):
            r = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
            nisa.nc_matmul(dst=acc, stationary=a[k], moving=r)
        res = nl.ndarray((M, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nl.store(out[:, n * 512:(n + 1) * 512], res)
    return out


@nki.jit
def double_buffer(x):
    """out = exp(x) over x [R, C] with exactly two SBUF tiles: tile i loads into buffer i % 2 while the
    Scalar Engine works on the other buffer."""
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    bufs = [nl.ndarray((128, C), dtype=x.dtype, buffer=nl.sbuf) for _ in range(2)]
    for i in range(R // 128):
        b = bufs[i % 2]
        nisa.dma_copy(dst=b, src=x[i * 128:(i + 1) * 128, :])
        nisa.activation(dst=b, op=nl.exp, data=b)
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=b)
    return out


@nki.jit
def online_logsumexp(x):
    """log(sum(exp(x), axis=1)) of x [128, C] streamed in 512-column chunks with a running max m and a running
    sum l rescaled by exp(m_old - m_new) whenever the max grows (the online softmax normaliser)."""
    P, C = x.shape
    out = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    neg_m = nl.full((P, 1), 1e30, dtype=nl.float32)     # -(running max)
    l_sum = nl.zeros((P, 1), dtype=nl.float32)
    for j in range(C // ONLINE_CHUNK):
        t = nl.load(x[:, j * ONLINE_CHUNK:(j + 1) * ONLINE_CHUNK])
        chunk_max = nl.max(t, axis=1, keepdims=True)
        new = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=new, data=chunk_max, op0=nl.multiply, operand0=-1.0, op1=nl.minimum, operand1=neg_m)
        corr = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=corr, op=nl.exp, data=neg_m, bias=new, scale=-1.0)   # exp(m_old - m_new)
        e = nl.ndarray((P, ONLINE_CHUNK), dtype=nl.float32, buffer=nl.sbuf)
        s = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=t, bias=new, reduce_op=nl.add, reduce_res=s,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nisa.tensor_scalar(dst=l_sum, data=l_sum, op0=nl.multiply, operand0=corr, op1=nl.add, operand1=s)
        nisa.tensor_copy(dst=neg_m, src=new)
    res = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=res, op=nl.log, data=l_sum)
    nl.store(out, nl.subtract(res, neg_m))
    return out


KEY_BLOCK = 512
"""Keys per step of the flash-attention solution: a [128, 512] fp32 score tile fills one PSUM bank."""


@nki.jit
def flash_attention(q_t, k_t, v):
    """softmax(Q K^T / sqrt(d)) V for q_t [d, Sq], k_t [d, Sk], v [Sk, d]: K and V are loaded into SBUF once
    and reused by every 128-query tile; keys stream in 512-wide blocks (one PSUM bank of scores) through an
    online softmax, and P^T V accumulates over the block's four 128-key slices in PSUM."""
    d, Sq = q_t.shape
    _, Sk = k_t.shape
    scale = 1.0 / float(d) ** 0.5
    out = nl.ndarray((Sq, d), dtype=nl.float32, buffer=nl.shared_hbm)
    k_sb = nl.load(k_t)
    v_sb = [nl.load(v[j * 128:(j + 1) * 128, :]) for j in range(Sk // 128)]
    for i in range(Sq // 128):
        q = nl.load(q_t[:, i * 128:(i + 1) * 128])
        neg_m = nl.full((128, 1), 1e30, dtype=nl.float32)         # -(running max)
        l_sum = nl.zeros((128, 1), dtype=nl.float32)
        acc = nl.zeros((128, d), dtype=nl.float32)
        for j in range(Sk // KEY_BLOCK):
            s = nl.ndarray((128, KEY_BLOCK), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=s, stationary=q, moving=k_sb[:, j * KEY_BLOCK:(j + 1) * KEY_BLOCK])
            new = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=new, data=nl.max(s, axis=1, keepdims=True), op0=nl.multiply, operand0=-scale,
                               op1=nl.minimum, operand1=neg_m)
            corr = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=corr, op=nl.exp, data=neg_m, bias=new, scale=-1.0)     # exp(m_old - m_new)
            p = nl.ndarray((128, KEY_BLOCK), dtype=nl.float32, buffer=nl.sbuf)
            rs = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=p, op=nl.exp, data=s, bias=new, scale=scale, reduce_op=nl.add, reduce_res=rs,
                            reduce_cmd=nisa.reduce_cmd.reset_reduce)
            nisa.tensor_scalar(dst=l_sum, data=l_sum, op0=nl.multiply, operand0=corr, op1=nl.add, operand1=rs)
            pv = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.psum)
            for c in range(KEY_BLOCK // 128):
                p_ps = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
                nisa.nc_transpose(dst=p_ps, data=p[:, c * 128:(c + 1) * 128])
                p_t = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
                nisa.tensor_copy(dst=p_t, src=p_ps)
                nisa.nc_matmul(dst=pv, stationary=p_t, moving=v_sb[j * (KEY_BLOCK // 128) + c])
            nisa.tensor_scalar(dst=acc, data=acc, op0=nl.multiply, operand0=corr)
            nisa.tensor_tensor(dst=acc, data1=acc, data2=pv, op=nl.add)
            nisa.tensor_copy(dst=neg_m, src=new)
        nl.store(out[i * 128:(i + 1) * 128, :], nl.multiply(acc, nl.reciprocal(l_sum)))
    return out


@nki.jit
def two_core_gelu(x):
    """gelu(x) over x [R, C] launched as two_core_gelu[2]: physical core nl.program_id(0) takes half the rows."""
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    half = R // nl.num_programs()
    r0 = nl.program_id(0) * half
    for i in range(half // 128):
        rows = slice(r0 + i * 128, r0 + (i + 1) * 128)
        nl.store(out[rows, :], nl.gelu(nl.load(x[rows, :])))
    return out


@nki.jit
def mean_all_reduce(g):
    """Every rank ends with the mean of all ranks' g [128, C]: load, all-reduce (sum) in SBUF, scale by 1/world."""
    out = nl.ndarray(g.shape, dtype=g.dtype, buffer=nl.shared_hbm)
    t = nl.load(g)
    s = nl.ndarray(g.shape, dtype=g.dtype, buffer=nl.sbuf)
    ncc.all_reduce(srcs=[t], dsts=[s], replica_group=ncc.ReplicaGroup([list(range(WORLD))]), op=nl.add)
    nl.store(out, nl.multiply(s, 1.0 / WORLD))
    return out


SOLUTIONS = {
    "broadcast_add": broadcast_add,
    "transpose_te": transpose_te,
    "column_sum": column_sum,
    "causal_mask": causal_mask,
    "row_softmax": row_softmax,
    "rmsnorm": rmsnorm,
    "tiled_matmul": tiled_matmul,
    "double_buffer": double_buffer,
    "online_logsumexp": online_logsumexp,
    "flash_attention": flash_attention,
    "two_core_gelu": two_core_gelu,
    "mean_all_reduce": mean_all_reduce,
}
"""Puzzle name -> worked solution kernel."""
