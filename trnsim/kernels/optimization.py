"""The four kernels of NKI's current kernel-optimization tutorial, written for trnsim.nki in NKI 0.6 style.

The tutorial (aws-neuron-sdk ``nki/guides/tutorials/kernel-optimization.rst``) profiles a float32
``result[M, N] = lhsT.T @ rhs`` at lhsT [8192, 4096], rhs [8192, 8192] on one Trn2 NeuronCore and improves
it in four steps. These are trnsim's own kernels taking the same steps, in the destination-passing
``nisa`` style (``nisa.dma_copy(dst=, src=)``, ``nisa.nc_matmul(dst, stationary, moving)``,
``nisa.tensor_copy(dst=, src=)``, ``nisa.tensor_tensor(dst=, data1=, data2=, op=)``,
``nisa.memset(dst=, value=)``), with every on-chip buffer allocated explicitly by ``nl.ndarray``. Where the
tutorial keeps tiles in Python lists across loop iterations, these kernels allocate one wide tile before
the loop (e.g. ``nl.ndarray((128, (K // 128) * 128), ...)``, partition dimension first) and fill it slice by
slice: the same tiles side by side along the free dimension, a form every NKI version accepts.

1. ``opt_tiled``: for every [128, 512] output tile, load both operand tiles for each K step.
2. ``opt_hoisted``: load a column of lhsT tiles once per M tile and the rhs column once per N tile.
3. ``opt_block_free``: block M and N by 2 tiles each, so each loaded tile feeds two output tiles.
4. ``opt_block_all``: block M, N and K; each DMA moves a [128, BLOCK] row of a block (>= 4 KiB per
   partition in fp32); partial sums are accumulated in SBUF on the Vector Engine.

Published latencies of the tutorial's own kernels are validation rows in
``data/kernel_validation.json`` (never inputs to the cost model). Sizes must tile evenly; a clear
``ValueError`` names the dimension that does not.
"""
from __future__ import annotations

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl


def _dims(lhsT, rhs, name: str, **multiples: int) -> tuple[int, int, int]:
    """(K, M, N) after checking the contraction dims agree and that each of M/N/K is a multiple of its block."""
    K, M = lhsT.shape
    K2, N = rhs.shape
    if K != K2:
        raise ValueError(f"{name}: lhsT is [K={K}, M={M}] but rhs is [K={K2}, N={N}]; the contraction dimension "
                         "must be the first (partition) dimension of both operands")
    sizes = {"M": M, "N": N, "K": K}
    for dim, block in multiples.items():
        if sizes[dim] % block:
            raise ValueError(f"{name}: {dim}={sizes[dim]} is not a multiple of {block}; pad {dim} to a multiple "
                             f"of {block} or choose smaller blocks")
    return K, M, N


def _tiles():
    """(TILE_M, TILE_K, TILE_N): stationary free max, partition max, moving free max of the target."""
    return nl.tile_size.gemm_stationary_fmax, nl.tile_size.pmax, nl.tile_size.gemm_moving_fmax


@nki.jit
def opt_tiled(lhsT, rhs):
    """Step 1: plain tiling. Each (m, n) output tile accumulates K/128 matmuls in one PSUM tile; both operand
    tiles are loaded right before every matmul, so every input tile is fetched once per output tile using it."""
    TM, TK, TN = _tiles()
    K, M, N = _dims(lhsT, rhs, "opt_tiled", M=TM, N=TN, K=TK)
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for mi in nl.affine_range(M // TM):
        for ni in nl.affine_range(N // TN):
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for ki in nl.affine_range(K // TK):
                a = nl.ndarray((TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[ki * TK:(ki + 1) * TK, mi * TM:(mi + 1) * TM])
                nisa.dma_copy(dst=b, src=rhs[ki * TK:(ki + 1) * TK, ni * TN:(ni + 1) * TN])
                nisa.nc_matmul(acc, a, b)
            staged = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=staged, src=acc)
            nisa.dma_copy(dst=out[mi * TM:(mi + 1) * TM, ni * TN:(ni + 1) * TN], src=staged)
    return out


@nki.jit
def opt_hoisted(lhsT, rhs):
    """Step 2: hoisted loads. The K column of lhsT tiles for one M tile is loaded once and reused for every
    N tile; the K column of rhs tiles is loaded once per (m, n) and consumed by K/128 back-to-back matmuls."""
    TM, TK, TN = _tiles()
    K, M, N = _dims(lhsT, rhs, "opt_hoisted", M=TM, N=TN, K=TK)
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for mi in nl.affine_range(M // TM):
        a_col = nl.ndarray((TK, (K // TK) * TM), dtype=lhsT.dtype, buffer=nl.sbuf)     # K/128 tiles side by side
        for ki in nl.affine_range(K // TK):
            nisa.dma_copy(dst=a_col[:, ki * TM:(ki + 1) * TM], src=lhsT[ki * TK:(ki + 1) * TK, mi * TM:(mi + 1) * TM])
        for ni in nl.affine_range(N // TN):
            b_col = nl.ndarray((TK, (K // TK) * TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for ki in nl.affine_range(K // TK):
                nisa.dma_copy(dst=b_col[:, ki * TN:(ki + 1) * TN], src=rhs[ki * TK:(ki + 1) * TK, ni * TN:(ni + 1) * TN])
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for ki in nl.affine_range(K // TK):
                nisa.nc_matmul(acc, a_col[:, ki * TM:(ki + 1) * TM], b_col[:, ki * TN:(ki + 1) * TN])
            staged = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=staged, src=acc)
            nisa.dma_copy(dst=out[mi * TM:(mi + 1) * TM, ni * TN:(ni + 1) * TN], src=staged)
    return out


@nki.jit
def opt_block_free(lhsT, rhs, tiles_m: int = 2, tiles_n: int = 2):
    """Step 3: block the free dimensions. ``tiles_m`` lhsT columns and ``tiles_n`` rhs columns stay in SBUF for
    the whole K range, and all ``tiles_m x tiles_n`` output tiles of the block are computed from them."""
    TM, TK, TN = _tiles()
    BM, BN = TM * tiles_m, TN * tiles_n
    K, M, N = _dims(lhsT, rhs, "opt_block_free", M=BM, N=BN, K=TK)
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for mb in nl.affine_range(M // BM):
        KT = K // TK
        a_blk = nl.ndarray((TK, tiles_m * KT * TM), dtype=lhsT.dtype, buffer=nl.sbuf)   # tile (bm, ki) at bm*KT+ki
        for bm in nl.affine_range(tiles_m):
            c0 = (mb * tiles_m + bm) * TM
            for ki in nl.affine_range(KT):
                j = bm * KT + ki
                nisa.dma_copy(dst=a_blk[:, j * TM:(j + 1) * TM], src=lhsT[ki * TK:(ki + 1) * TK, c0:c0 + TM])
        for nb in nl.affine_range(N // BN):
            for bn in nl.affine_range(tiles_n):
                # one rhs column at a time: at fp32 and K = 8192 a whole [2 x K x 512] rhs block (256 KiB per
                # partition) does not fit in trn2's SBUF next to the lhsT block; the traffic is the same
                c0 = (nb * tiles_n + bn) * TN
                b_col = nl.ndarray((TK, KT * TN), dtype=rhs.dtype, buffer=nl.sbuf)
                for ki in nl.affine_range(KT):
                    nisa.dma_copy(dst=b_col[:, ki * TN:(ki + 1) * TN], src=rhs[ki * TK:(ki + 1) * TK, c0:c0 + TN])
                for bm in nl.affine_range(tiles_m):
                    acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                    for ki in nl.affine_range(KT):
                        j = bm * KT + ki
                        nisa.nc_matmul(acc, a_blk[:, j * TM:(j + 1) * TM], b_col[:, ki * TN:(ki + 1) * TN])
                    staged = nl.ndarray((TM, TN), dtype=out.dtype, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=staged, src=acc)
                    r0 = (mb * tiles_m + bm) * TM
                    nisa.dma_copy(dst=out[r0:r0 + TM, c0:c0 + TN], src=staged)
    return out


@nki.jit
def opt_block_all(lhsT, rhs, tiles_m: int = 16, tiles_n: int = 2, tiles_k: int = 8):
    """Step 4: block M, N and K. For each N block the fp32 partial sums of the whole M range live in SBUF
    (zeroed with memset); each K block loads ``tiles_k`` [128, BLOCK_N] rhs rows and, per M block, ``tiles_k``
    [128, BLOCK_M] lhsT rows (large transfers), runs the matmuls of every output tile into PSUM and adds the
    PSUM tile into its SBUF partial sum on the Vector Engine. Output rows are packed to [128, BLOCK_N] per store."""
    TM, TK, TN = _tiles()
    BM, BN, BK = TM * tiles_m, TN * tiles_n, TK * tiles_k
    K, M, N = _dims(lhsT, rhs, "opt_block_all", M=BM, N=BN, K=BK)
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for nb in nl.affine_range(N // BN):
        # fp32 partial sums of all M rows of this N block: one [128, 512] tile per (M tile, N tile)
        # tile (mt, bn) of the partial sums sits at free offset (mt * tiles_n + bn) * TN
        partial = nl.ndarray((TM, (M // TM) * tiles_n * TN), dtype=nl.float32, buffer=nl.sbuf)
        for mt in nl.affine_range(M // TM):
            for bn in nl.affine_range(tiles_n):
                j = mt * tiles_n + bn
                nisa.memset(dst=partial[:, j * TN:(j + 1) * TN], value=0.0)
        for kb in nl.sequential_range(K // BK):
            b_rows = nl.ndarray((TK, tiles_k * BN), dtype=rhs.dtype, buffer=nl.sbuf)     # row bk at bk * BN
            for bk in nl.affine_range(tiles_k):
                r0 = (kb * tiles_k + bk) * TK
                nisa.dma_copy(dst=b_rows[:, bk * BN:(bk + 1) * BN], src=rhs[r0:r0 + TK, nb * BN:(nb + 1) * BN])
            for mb in nl.affine_range(M // BM):
                a_rows = nl.ndarray((TK, tiles_k * BM), dtype=lhsT.dtype, buffer=nl.sbuf)  # row bk at bk * BM
                for bk in nl.affine_range(tiles_k):
                    r0 = (kb * tiles_k + bk) * TK
                    nisa.dma_copy(dst=a_rows[:, bk * BM:(bk + 1) * BM], src=lhsT[r0:r0 + TK, mb * BM:(mb + 1) * BM])
                for bn in nl.affine_range(tiles_n):
                    for bm in nl.affine_range(tiles_m):
                        acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                        for bk in nl.affine_range(tiles_k):
                            a0, b0 = bk * BM + bm * TM, bk * BN + bn * TN
                            nisa.nc_matmul(acc, a_rows[:, a0:a0 + TM], b_rows[:, b0:b0 + TN])
                        j = (mb * tiles_m + bm) * tiles_n + bn
                        dst = partial[:, j * TN:(j + 1) * TN]
                        nisa.tensor_tensor(dst=dst, data1=dst, data2=acc, op=nl.add)
        for mb in nl.affine_range(M // BM):
            for bm in nl.affine_range(tiles_m):
                packed = nl.ndarray((TM, BN), dtype=nl.float32, buffer=nl.sbuf)
                for bn in nl.affine_range(tiles_n):
                    j = (mb * tiles_m + bm) * tiles_n + bn
                    nisa.tensor_copy(dst=packed[0:TM, bn * TN:(bn + 1) * TN], src=partial[:, j * TN:(j + 1) * TN])
                r0 = (mb * tiles_m + bm) * TM
                nisa.dma_copy(dst=out[r0:r0 + TM, nb * BN:(nb + 1) * BN], src=packed[0:TM, 0:BN])
    return out


OPTIMIZATION_STEPS = (opt_tiled, opt_hoisted, opt_block_free, opt_block_all)

__all__ = ["opt_tiled", "opt_hoisted", "opt_block_free", "opt_block_all", "OPTIMIZATION_STEPS"]
