"""The matmul kernel journey of NKI's matrix-multiplication tutorial, written in trnsim.nki.

All four compute ``result[M, N] = lhsT.T @ rhs`` with ``lhsT[K, M]`` (the left operand delivered
transposed, contraction dim K on the partitions) and ``rhs[K, N]``, in NKI 0.6 style
(``nl.load`` / ``nisa.nc_matmul(dst=psum, stationary=, moving=)`` accumulating in PSUM / ``nisa.tensor_copy`` /
``nl.store``; groups of tiles are Python lists of tiles). Tiles: TILE_K = pmax = 128,
TILE_M = gemm_stationary_fmax = 128, TILE_N = min(gemm_moving_fmax, psum_bank_fmax) = 512, so one matmul
output fills one PSUM bank on every generation (NC-v4 would allow a moving free size up to 4096). Each stage removes one
cause of HBM traffic or idle time:

1. ``matmul_tiled``: load both operand tiles inside the K loop - every tile is reloaded for every
   output tile that needs it (HBM traffic ~ (M*K*N/512 + K*N*M/128) elements).
2. ``matmul_hoisted``: hoist the loads out of the inner loops - a column of lhsT is loaded once per
   M tile and reused for every N tile.
3. ``matmul_block_free``: block the free dims M and N - each loaded tile feeds several matmuls.
4. ``matmul_fully_blocked``: block K too, accumulate partial results in SBUF (fp32), and load
   large blocks per DMA into buffers allocated per K step, so the next block's loads overlap the
   current block's matmuls.

Sizes must tile evenly (a clear error says which dimension does not).
"""
from __future__ import annotations

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl


def _check(lhsT, rhs, tile_m: int, tile_n: int, tile_k: int, name: str) -> tuple[int, int, int]:
    K, M = lhsT.shape
    K_, N = rhs.shape
    if K != K_:
        raise ValueError(f"{name}: contraction dims differ: lhsT is [K={K}, M={M}] but rhs is [K={K_}, N={N}]; "
                         "both operands need K on their first (partition) dimension")
    for dim, size, tile in (("M", M, tile_m), ("N", N, tile_n), ("K", K, tile_k)):
        if size % tile:
            raise ValueError(f"{name}: {dim}={size} is not a multiple of its tile/block size {tile}; "
                             f"pad {dim} to a multiple of {tile} (these reference kernels need even tiling)")
    return K, M, N


def tiles_per_block(size: int, tile: int, tiles_in_block: int) -> int:
    """Tiles in one block of ``matmul_fully_blocked`` along a dimension of ``size`` elements: the requested count,
    at least 1 and at most what the dimension holds (a block never outgrows the matrix)."""
    return max(1, min(tiles_in_block, size // tile))


def _tiles():
    """(TILE_M, TILE_K, TILE_N) of the current target: stationary free size, partitions, one PSUM bank of fp32."""
    return (nl.tile_size.gemm_stationary_fmax, nl.tile_size.pmax,
            min(nl.tile_size.gemm_moving_fmax, nl.tile_size.psum_bank_fmax))


def _evacuate(res_psum, dtype, rows: int, cols: int):
    """PSUM -> SBUF copy, cast to ``dtype`` (the Vector Engine reads PSUM)."""
    res_sb = nl.ndarray((rows, cols), dtype=dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res_sb, src=res_psum)
    return res_sb


@nki.jit
def matmul_tiled(lhsT, rhs):
    """Stage 1, basic tiling: for each output tile, loop over K and load BOTH operand tiles each time.

    Demonstrates: tiling to the hardware limits (128 x 128 stationary, 128 x 512 moving, one PSUM
    bank) and accumulation in PSUM over K (``nc_matmul`` accumulates into ``dst`` after its first write).
    Every input tile is reloaded from HBM for every output tile that uses it, so the kernel is DMA-bound
    at any useful size.
    """
    TILE_M, TILE_K, TILE_N = _tiles()
    K, M, N = _check(lhsT, rhs, TILE_M, TILE_N, TILE_K, "matmul_tiled")
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            res_psum = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                lhsT_tile = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
                rhs_tile = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                nisa.nc_matmul(dst=res_psum, stationary=lhsT_tile, moving=rhs_tile)
            res_sb = _evacuate(res_psum, result.dtype, TILE_M, TILE_N)
            nl.store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=res_sb)
    return result


@nki.jit
def matmul_hoisted(lhsT, rhs):
    """Stage 2, hoisted loads: load a whole K-column of lhsT once per M tile and reuse it for every N tile.

    Demonstrates: exploiting temporal locality (perf guide Opt #1). The K-column is a Python list of
    tiles loaded in one loop and used in the next (tiles live as long as the list holds them). lhsT
    traffic drops by a factor N/512; rhs is still reloaded once per M tile. SBUF holds K/128 tiles of
    each operand, so K is limited by SBUF capacity.
    """
    TILE_M, TILE_K, TILE_N = _tiles()
    K, M, N = _check(lhsT, rhs, TILE_M, TILE_N, TILE_K, "matmul_hoisted")
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        lhsT_tiles = [nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
                      for k in nl.affine_range(K // TILE_K)]
        for n in nl.affine_range(N // TILE_N):
            rhs_tiles = [nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                         for k in nl.affine_range(K // TILE_K)]
            res_psum = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                nisa.nc_matmul(dst=res_psum, stationary=lhsT_tiles[k], moving=rhs_tiles[k])
            res_sb = _evacuate(res_psum, result.dtype, TILE_M, TILE_N)
            nl.store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=res_sb)
    return result


@nki.jit
def matmul_block_free(lhsT, rhs, tiles_in_block_m: int = 2, tiles_in_block_n: int = 2):
    """Stage 3, blocked free dimensions: hold ``tiles_in_block_m`` lhsT columns and ``tiles_in_block_n``
    rhs columns in SBUF and compute all their output tiles before moving on.

    Demonstrates: each loaded tile now feeds several matmuls (arithmetic intensity grows with the
    block size); HBM traffic falls by the block factors. SBUF must hold both blocks for all of K.
    """
    TILE_M, TILE_K, TILE_N = _tiles()
    BLOCK_M = TILE_M * tiles_in_block_m
    BLOCK_N = TILE_N * tiles_in_block_n
    K, M, N = _check(lhsT, rhs, BLOCK_M, BLOCK_N, TILE_K, "matmul_block_free")
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // BLOCK_M):
        lhsT_tiles = [[nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K,
                                    (m * tiles_in_block_m + bm) * TILE_M:(m * tiles_in_block_m + bm + 1) * TILE_M])
                       for k in nl.affine_range(K // TILE_K)] for bm in nl.affine_range(tiles_in_block_m)]
        for n in nl.affine_range(N // BLOCK_N):
            rhs_tiles = [[nl.load(rhs[k * TILE_K:(k + 1) * TILE_K,
                                      (n * tiles_in_block_n + bn) * TILE_N:(n * tiles_in_block_n + bn + 1) * TILE_N])
                          for k in nl.affine_range(K // TILE_K)] for bn in nl.affine_range(tiles_in_block_n)]
            for bm in nl.affine_range(tiles_in_block_m):
                for bn in nl.affine_range(tiles_in_block_n):
                    res_psum = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(K // TILE_K):
                        nisa.nc_matmul(dst=res_psum, stationary=lhsT_tiles[bm][k], moving=rhs_tiles[bn][k])
                    res_sb = _evacuate(res_psum, result.dtype, TILE_M, TILE_N)
                    row = (m * tiles_in_block_m + bm) * TILE_M
                    col = (n * tiles_in_block_n + bn) * TILE_N
                    nl.store(result[row:row + TILE_M, col:col + TILE_N], value=res_sb)
    return result


@nki.jit
def matmul_fully_blocked(lhsT, rhs, tiles_in_block_m: int = 16, tiles_in_block_n: int = 2,
                         tiles_in_block_k: int = 8):
    """Stage 4, fully blocked: block M, N and K; accumulate each output block in SBUF (fp32) over K blocks.

    Demonstrates: (a) big DMA transfers - one load moves a [128, BLOCK_M] or [128, BLOCK_N] row of a
    block (>= 2 KiB per partition, perf guide Opt #9); (b) high reuse - every lhsT tile feeds
    ``tiles_in_block_n`` matmuls and every rhs tile ``tiles_in_block_m``; (c) overlap - the operand
    blocks are allocated per K step, so the loads of step k+1 go into fresh buffers while the
    matmuls of step k run (SBUF capacity permitting), and PSUM tiles are evacuated (added into the
    SBUF accumulator on the Vector Engine) while the Tensor Engine fills the next bank.
    Block sizes shrink to the matrix size when the matrix is smaller than a block.
    """
    TILE_M, TILE_K, TILE_N = _tiles()
    K, M, N = lhsT.shape[0], lhsT.shape[1], rhs.shape[1]
    tbm = tiles_per_block(M, TILE_M, tiles_in_block_m)
    tbn = tiles_per_block(N, TILE_N, tiles_in_block_n)
    tbk = tiles_per_block(K, TILE_K, tiles_in_block_k)
    BLOCK_M, BLOCK_N, BLOCK_K = TILE_M * tbm, TILE_N * tbn, TILE_K * tbk
    _check(lhsT, rhs, BLOCK_M, BLOCK_N, BLOCK_K, "matmul_fully_blocked")
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // BLOCK_M):
        for n in nl.affine_range(N // BLOCK_N):
            acc = [[nl.zeros((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.sbuf) for _ in range(tbn)]
                   for _ in range(tbm)]
            for k in nl.sequential_range(K // BLOCK_K):
                lhsT_tiles, rhs_tiles = [], []
                for bk in nl.affine_range(tbk):
                    r0 = (k * tbk + bk) * TILE_K
                    lhsT_tiles.append(nl.load(lhsT[r0:r0 + TILE_K, m * BLOCK_M:(m + 1) * BLOCK_M]))
                    rhs_tiles.append(nl.load(rhs[r0:r0 + TILE_K, n * BLOCK_N:(n + 1) * BLOCK_N]))
                for bm in nl.affine_range(tbm):
                    for bn in nl.affine_range(tbn):
                        res_psum = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
                        for bk in nl.affine_range(tbk):
                            nisa.nc_matmul(dst=res_psum, stationary=lhsT_tiles[bk][:, bm * TILE_M:(bm + 1) * TILE_M],
                                           moving=rhs_tiles[bk][:, bn * TILE_N:(bn + 1) * TILE_N])
                        nisa.tensor_tensor(dst=acc[bm][bn], data1=acc[bm][bn], data2=res_psum, op=nl.add)
            for bm in nl.affine_range(tbm):
                packed = nl.ndarray((TILE_M, BLOCK_N), dtype=result.dtype, buffer=nl.sbuf)
                for bn in nl.affine_range(tbn):
                    nisa.tensor_copy(dst=packed[:, bn * TILE_N:(bn + 1) * TILE_N], src=acc[bm][bn])
                row = m * BLOCK_M + bm * TILE_M
                nl.store(result[row:row + TILE_M, n * BLOCK_N:(n + 1) * BLOCK_N], value=packed)
    return result


MATMUL_JOURNEY = (matmul_tiled, matmul_hoisted, matmul_block_free, matmul_fully_blocked)

__all__ = ["matmul_tiled", "matmul_hoisted", "matmul_block_free", "matmul_fully_blocked", "MATMUL_JOURNEY"]
