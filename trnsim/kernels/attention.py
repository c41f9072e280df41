"""Single-head attention ``softmax(Q K^T / sqrt(d)) V`` in trnsim.nki: unfused vs flash (fused).

Inputs follow NKI's fused self-attention tutorial: ``q_t [d, Sq]`` and ``k_t [d, Sk]`` with the head
dimension d (<= 128) on the partitions (the matmul contraction axis), ``v [Sk, d]``; the output is
``[Sq, d]``. Sq and Sk must be multiples of 128.
"""
from __future__ import annotations

import math


import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl

_NEG_LARGE = -3.0e38


def _shapes(name: str, q_t, k_t, v) -> tuple[int, int, int]:
    d, Sq = q_t.shape
    d_k, Sk = k_t.shape
    if d != d_k or tuple(v.shape) != (Sk, d):
        raise ValueError(f"{name}: expected q_t [d, Sq], k_t [d, Sk], v [Sk, d]; got q_t{list(q_t.shape)}, "
                         f"k_t{list(k_t.shape)}, v{list(v.shape)}")
    if d > 128:
        raise ValueError(f"{name}: head dim d={d} exceeds 128 partitions; split heads so d <= 128")
    for nm, s in (("Sq", Sq), ("Sk", Sk)):
        if s % 128:
            raise ValueError(f"{name}: {nm}={s} is not a multiple of 128; pad the sequence")
    return d, Sq, Sk


@nki.jit
def attention(q_t, k_t, v):
    """Unfused attention: three passes with the full score matrix going through HBM.

    Demonstrates why fusion matters (perf guide Opt #2): pass 1 writes S = Q K^T (fp32, Sq x Sk) to
    an HBM scratch tensor, pass 2 reads it back for a row softmax and writes P, pass 3 reads P back
    (transposing 128 x 128 blocks on the Tensor Engine) for O = P V. The HBM traffic of S and P
    grows with Sq * Sk and usually dominates: compare ``flash_attention``.
    """
    d, Sq, Sk = _shapes("attention", q_t, k_t, v)
    P = 128
    KC = min(512, Sk) if Sk % min(512, Sk) == 0 else 128
    scale = 1.0 / math.sqrt(d)
    scores = nl.ndarray((Sq, Sk), dtype=nl.float32, buffer=nl.hbm, name="scores")
    probs = nl.ndarray((Sq, Sk), dtype=q_t.dtype, buffer=nl.hbm, name="probs")
    out = nl.ndarray((Sq, d), dtype=q_t.dtype, buffer=nl.shared_hbm)
    # pass 1: S = scale * Q K^T -> HBM
    for i in range(Sq // P):
        q_tile = nl.ndarray((d, P), dtype=q_t.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=q_tile, src=q_t[:, i * P:(i + 1) * P])
        for j in range(Sk // KC):
            k_tile = nl.ndarray((d, KC), dtype=k_t.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=k_tile, src=k_t[:, j * KC:(j + 1) * KC])
            s = nl.ndarray((P, KC), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=s, stationary=q_tile, moving=k_tile)
            s_sb = nl.ndarray((P, KC), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=s_sb, op=nl.copy, data=s, scale=scale)
            nisa.dma_copy(dst=scores[i * P:(i + 1) * P, j * KC:(j + 1) * KC], src=s_sb)
    # pass 2: read S back, row softmax, P -> HBM
    for i in range(Sq // P):
        t = nl.ndarray((P, Sk), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=scores[i * P:(i + 1) * P, :])
        neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=t, axis=1, negate=True)
        e = nl.ndarray((P, Sk), dtype=nl.float32, buffer=nl.sbuf)
        row_sum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=t, bias=neg_max, reduce_op=nl.add, reduce_res=row_sum,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv, data=row_sum)
        p = nl.ndarray((P, Sk), dtype=q_t.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=p, data=e, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=probs[i * P:(i + 1) * P, :], src=p)
    # pass 3: read P back, O = P V (P^T blocks from Tensor Engine transposes)
    for i in range(Sq // P):
        acc = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.psum)
        for j in range(Sk // P):
            p_tile = nl.ndarray((P, P), dtype=q_t.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=p_tile, src=probs[i * P:(i + 1) * P, j * P:(j + 1) * P])
            p_ps = nl.ndarray((P, P), dtype=q_t.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=p_ps, data=p_tile)
            p_t = nl.ndarray((P, P), dtype=q_t.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=p_t, src=p_ps)
            v_tile = nl.ndarray((P, d), dtype=v.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=v_tile, src=v[j * P:(j + 1) * P, :])
            nisa.nc_matmul(dst=acc, stationary=p_t, moving=v_tile)
        o = nl.ndarray((P, d), dtype=q_t.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=acc)
        nisa.dma_copy(dst=out[i * P:(i + 1) * P, :], src=o)
    return out


@nki.jit
def flash_attention(q_t, k_t, v):
    """Fused attention with an online softmax (FlashAttention): scores never leave the chip.

    Demonstrates fusion and cross-engine pipelining (perf guide Opt #2, #3, #6): for each 128-query
    tile, K/V stream through in chunks of 512 keys. Per chunk the Tensor Engine computes S = Q K^T
    into PSUM; the Vector Engine takes the row max and updates the running (negated) max with ONE
    two-operator ``tensor_scalar``; ONE ScalarE activation computes ``exp(scale*S - m)`` and its row
    sum; ScalarE also evacuates the Tensor Engine transposes of P, which the Tensor Engine then
    multiplies by V; the running sum and output are rescaled by ``exp(m_old - m_new)``. The running
    max ping-pongs between two [128, 1] buffers instead of being copied, and the division by the row
    sum is delayed to the end (as in the NKI fused self-attention tutorial). HBM traffic is just
    Q, K, V and O.
    """
    d, Sq, Sk = _shapes("flash_attention", q_t, k_t, v)
    P = 128
    KC = min(512, Sk) if Sk % min(512, Sk) == 0 else 128
    scale = 1.0 / math.sqrt(d)
    out = nl.ndarray((Sq, d), dtype=q_t.dtype, buffer=nl.shared_hbm)
    for i in range(Sq // P):
        q_tile = nl.ndarray((d, P), dtype=q_t.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=q_tile, src=q_t[:, i * P:(i + 1) * P])
        neg_m = [nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf),      # -running max, ping-pong
                 nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)]
        nisa.memset(dst=neg_m[0], value=-_NEG_LARGE)
        l_sum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=l_sum, value=0.0)
        acc = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=acc, value=0.0)
        for j in range(Sk // KC):
            old, new = neg_m[j % 2], neg_m[(j + 1) % 2]
            k_tile = nl.ndarray((d, KC), dtype=k_t.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=k_tile, src=k_t[:, j * KC:(j + 1) * KC])
            v_tiles = []
            for c in range(KC // P):
                vt = nl.ndarray((P, d), dtype=v.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=vt, src=v[j * KC + c * P:j * KC + (c + 1) * P, :])
                v_tiles.append(vt)
            s = nl.ndarray((P, KC), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=s, stationary=q_tile, moving=k_tile)             # [P, KC] fp32 PSUM
            row_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_reduce(dst=row_max, op=nl.maximum, data=s, axis=1)
            # -m_new = min(-m_old, -scale * rowmax): one instruction, two operators
            nisa.tensor_scalar(dst=new, data=row_max, op0=nl.multiply, operand0=-scale, op1=nl.minimum,
                               operand1=old)
            row_sum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            p = nl.ndarray((P, KC), dtype=q_t.dtype, buffer=nl.sbuf)
            nisa.activation(dst=p, op=nl.exp, data=s, bias=new, scale=scale, reduce_op=nl.add, reduce_res=row_sum,
                            reduce_cmd=nisa.reduce_cmd.reset_reduce)
            corr = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=corr, op=nl.exp, data=old, bias=new, scale=-1.0)  # exp(m_old - m_new)
            nisa.tensor_scalar(dst=l_sum, data=l_sum, op0=nl.multiply, operand0=corr, op1=nl.add, operand1=row_sum)
            pv = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.psum)
            for c in range(KC // P):
                p_ps = nl.ndarray((P, P), dtype=p.dtype, buffer=nl.psum)
                nisa.nc_transpose(dst=p_ps, data=p[:, c * P:(c + 1) * P])
                p_t = nl.ndarray((P, P), dtype=q_t.dtype, buffer=nl.sbuf)
                nisa.activation(dst=p_t, op=nl.copy, data=p_ps)   # PSUM -> SBUF on ScalarE (NC-v2 has no ScalarE tensor_copy)
                nisa.nc_matmul(dst=pv, stationary=p_t, moving=v_tiles[c])
            nisa.tensor_scalar(dst=acc, data=acc, op0=nl.multiply, operand0=corr)
            nisa.tensor_tensor(dst=acc, data1=acc, data2=pv, op=nl.add)
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv, data=l_sum)
        o = nl.ndarray((P, d), dtype=q_t.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=o, data=acc, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=out[i * P:(i + 1) * P, :], src=o)
    return out


__all__ = ["attention", "flash_attention"]
