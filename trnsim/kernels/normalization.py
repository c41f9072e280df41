"""Row softmax, RMSNorm and LayerNorm in trnsim.nki (NKI 0.6): rows on partitions, one pass over HBM.

Written as the NKI 0.6 tutorials write kernels: tiles allocated with ``nl.ndarray``, moved with
``nisa.dma_copy`` and computed by ``nki.isa`` instructions that name their destination first; tile loops
are plain Python ``range`` loops (``nl.affine_range`` is deprecated in 0.6; its reference recommends ``range``).
"""
from __future__ import annotations


import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl


def _rows_check(name: str, x) -> tuple[int, int]:
    R, C = x.shape
    if R % 128:
        raise ValueError(f"{name}: rows={R} is not a multiple of 128 (one row per partition per tile); "
                         "pad the rows to a multiple of 128")
    return R, C


@nki.jit
def softmax(x):
    """Row-wise softmax of [R, C] (R a multiple of 128), numerically stable, in one HBM read and write.

    Demonstrates instruction fusion across engines (perf guide Opt #3, #6): minus the row max in one
    Vector Engine ``tensor_reduce`` (``negate=True``); ``exp(x - max)`` AND the row sum in a single
    ScalarE ``activation`` (bias = -max, reduce_op = add), so the subtraction and the sum cost nothing
    extra; the division becomes one ``reciprocal`` of a [128, 1] column and a ``tensor_scalar``
    multiply. Rows of different tiles are independent, so loads, ScalarE and VectorE work of
    consecutive tiles overlap.
    """
    R, C = _rows_check("softmax", x)
    P = nl.tile_size.pmax
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(R // P):
        t = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * P:(i + 1) * P, :])
        neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=t, axis=1, negate=True)
        e = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        row_sum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=t, bias=neg_max, reduce_op=nl.add, reduce_res=row_sum,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv, data=row_sum)
        y = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y, data=e, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=out[i * P:(i + 1) * P, :], src=y)
    return out


def _broadcast_row(row, P: int, C: int):
    """Load a [1, C] parameter row once and view it across the P partitions (no copy per tile)."""
    r = nl.ndarray((1, C), dtype=row.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=r, src=row[0:1, :])
    return nl.broadcast_to(r, (P, C))


@nki.jit
def rmsnorm(x, gamma, eps: float = 1e-6):
    """``x / sqrt(mean(x**2, axis=1) + eps) * gamma`` for x [R, C], gamma [1, C].

    Demonstrates the NKI RMSNorm tutorial's structure: gamma is loaded once and broadcast across
    the 128 partitions (hoisted out of the row loop); the sum of squares comes free with the
    ``square`` activation (reduce_op=add); ``rsqrt(sum/C + eps)`` is one ScalarE activation with
    scale and bias; the two multiplies are a ``tensor_scalar`` (per-row factor) and a
    ``tensor_tensor`` (gamma).
    """
    R, C = _rows_check("rmsnorm", x)
    if tuple(gamma.shape) != (1, C):
        raise ValueError(f"rmsnorm: gamma must have shape [1, {C}], got {list(gamma.shape)}")
    P = nl.tile_size.pmax
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    g_b = _broadcast_row(gamma, P, C)
    eps_t = nl.full((P, 1), eps, dtype=nl.float32, buffer=nl.sbuf)
    for i in range(R // P):
        t = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * P:(i + 1) * P, :])
        sq = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        sq_sum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=sq, op=nl.square, data=t, reduce_op=nl.add, reduce_res=sq_sum,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        rms_inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=rms_inv, op=nl.rsqrt, data=sq_sum, scale=1.0 / C, bias=eps_t)
        y = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y, data=t, op0=nl.multiply, operand0=rms_inv)
        o = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=o, data1=y, data2=g_b, op=nl.multiply)
        nisa.dma_copy(dst=out[i * P:(i + 1) * P, :], src=o)
    return out


@nki.jit
def layernorm(x, gamma, beta, eps: float = 1e-5):
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` over rows of x [R, C]; gamma, beta [1, C].

    Demonstrates the NKI LayerNorm tutorial's VectorE statistics: ``bn_stats`` on chunks of at most
    ``nl.tile_size.bn_stats_fmax`` (512) elements and ``bn_aggr`` to combine them into mean and
    variance in one pass over SBUF; ``(var + eps) ** -0.5`` as one two-operator ``tensor_scalar``;
    then one ``tensor_scalar`` with TWO operators ((x - mean) * rstd - "performing one operator has
    the same cost as two") and the gamma/beta affine on full tiles.
    """
    R, C = _rows_check("layernorm", x)
    for nm, v in (("gamma", gamma), ("beta", beta)):
        if tuple(v.shape) != (1, C):
            raise ValueError(f"layernorm: {nm} must have shape [1, {C}], got {list(v.shape)}")
    P = nl.tile_size.pmax
    FMAX = nl.tile_size.bn_stats_fmax
    chunk = min(C, FMAX)
    if C % chunk:
        raise ValueError(f"layernorm: C={C} must be a multiple of bn_stats_fmax={FMAX} when larger than it")
    n_chunks = C // chunk
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    g_b = _broadcast_row(gamma, P, C)
    b_b = _broadcast_row(beta, P, C)
    for i in range(R // P):
        t = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * P:(i + 1) * P, :])
        stats = nl.ndarray((P, 6 * n_chunks), dtype=nl.float32, buffer=nl.sbuf)
        for c in range(n_chunks):
            nisa.bn_stats(dst=stats[:, 6 * c:6 * (c + 1)], data=t[:, c * chunk:(c + 1) * chunk])
        mv = nl.ndarray((P, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(dst=mv, data=stats)                    # [P, 2]: mean, variance
        rstd = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rstd, data=mv[:, 1:2], op0=nl.add, operand0=eps, op1=nl.power, operand1=-0.5)
        y = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y, data=t, op0=nl.subtract, operand0=mv[:, 0:1], op1=nl.multiply, operand1=rstd)
        nisa.tensor_tensor(dst=y, data1=y, data2=g_b, op=nl.multiply)
        o = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=o, data1=y, data2=b_b, op=nl.add)
        nisa.dma_copy(dst=out[i * P:(i + 1) * P, :], src=o)
    return out


__all__ = ["softmax", "rmsnorm", "layernorm"]
