"""Row softmax, RMSNorm and LayerNorm in trnsim.nki (NKI 0.6): rows on partitions, one pass over HBM."""
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

    Demonstrates instruction fusion across engines (perf guide Opt #3, #6): the row max on the
    Vector Engine; ``exp(x - max)`` AND the row sum in a single ScalarE ``activation`` (bias = -max,
    reduce_op = add), so the subtraction and the sum cost nothing extra; the division becomes one
    reciprocal of a [128, 1] column and a ``tensor_scalar`` multiply. Rows of different tiles are
    independent, so loads, ScalarE and VectorE work of consecutive tiles overlap.
    """
    R, C = _rows_check("softmax", x)
    P = nl.tile_size.pmax
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(R // P):
        t = nl.load(x[i * P:(i + 1) * P, :])
        neg_max = nl.max(t, axis=1, keepdims=True, dtype=nl.float32)
        neg_max = nl.multiply(neg_max, -1.0)
        row_sum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        e = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=t, bias=neg_max, reduce_op=nl.add, reduce_res=row_sum)
        inv = nl.reciprocal(row_sum)
        nl.store(out[i * P:(i + 1) * P, :], value=nl.multiply(e, inv, dtype=x.dtype))
    return out


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
    g_b = nl.broadcast_to(nl.load(gamma[0:1, :]), (P, C))
    eps_t = nl.full((P, 1), eps, dtype=nl.float32)
    for i in nl.affine_range(R // P):
        t = nl.load(x[i * P:(i + 1) * P, :])
        sq_sum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        sq = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=sq, op=nl.square, data=t, reduce_op=nl.add, reduce_res=sq_sum)
        rms_inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=rms_inv, op=nl.rsqrt, data=sq_sum, scale=1.0 / C, bias=eps_t)
        y = nl.multiply(t, rms_inv, dtype=nl.float32)
        nl.store(out[i * P:(i + 1) * P, :], value=nl.multiply(y, g_b, dtype=x.dtype))
    return out


@nki.jit
def layernorm(x, gamma, beta, eps: float = 1e-5):
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` over rows of x [R, C]; gamma, beta [1, C].

    Demonstrates the NKI LayerNorm tutorial's VectorE statistics: ``bn_stats`` on chunks of at most
    ``nl.tile_size.bn_stats_fmax`` (512) elements and ``bn_aggr`` to combine them into mean and
    variance in one pass over SBUF; then one ``tensor_scalar`` with TWO operators
    ((x - mean) * rstd - "performing one operator has the same cost as two") and the gamma/beta
    affine on full tiles.
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
    g_b = nl.broadcast_to(nl.load(gamma[0:1, :]), (P, C))
    b_b = nl.broadcast_to(nl.load(beta[0:1, :]), (P, C))
    for i in nl.affine_range(R // P):
        t = nl.load(x[i * P:(i + 1) * P, :])
        stats = nl.ndarray((P, 6 * n_chunks), dtype=nl.float32, buffer=nl.sbuf)
        for c in nl.affine_range(n_chunks):
            nisa.bn_stats(dst=stats[:, 6 * c:6 * (c + 1)], data=t[:, c * chunk:(c + 1) * chunk])
        mv = nl.ndarray((P, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(dst=mv, data=stats)                    # [P, 2]: mean, variance
        rstd = nl.rsqrt(nl.add(mv[:, 1:2], eps))
        y = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y, data=t, op0=nl.subtract, operand0=mv[:, 0:1], op1=nl.multiply, operand1=rstd)
        y = nl.multiply(y, g_b, dtype=nl.float32)
        nl.store(out[i * P:(i + 1) * P, :], value=nl.add(y, b_b, dtype=x.dtype))
    return out


__all__ = ["softmax", "rmsnorm", "layernorm"]
