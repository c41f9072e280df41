"""Written-from-scratch versions of NKI's classic tutorial kernels, in trnsim.nki (used by tests and benchmarks)."""
import math

import numpy as np

import trnsim.neuronxcc.nki as nki
import trnsim.neuronxcc.nki.isa as nisa
import trnsim.neuronxcc.nki.language as nl


@nki.jit
def tensor_add(a_input, b_input):
    """c = a + b for one [128, F] tile."""
    c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
    a_tile = nl.load(a_input)
    b_tile = nl.load(b_input)
    nl.store(c_output, value=a_tile + b_tile)
    return c_output


@nki.jit
def spmd_add(a_input, b_input):
    """c = a + b; each SPMD program handles one [128, 512] block: launch as spmd_add[rows // 128, cols // 512]."""
    c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
    ix = nl.program_id(0) * 128 + nl.arange(128)[:, None]
    iy = nl.program_id(1) * 512 + nl.arange(512)[None, :]
    a_tile = nl.load(a_input[ix, iy])
    b_tile = nl.load(b_input[ix, iy])
    c_tile = nl.add(a_tile, b_tile)
    nl.store(c_output[ix, iy], value=c_tile)
    return c_output


@nki.jit
def transpose2d(in_tensor, shape2d):
    """Transpose the two free axes [F1, F2] -> [F2, F1] inside each partition (P rows stay put)."""
    out_tensor = nl.ndarray(in_tensor.shape, dtype=in_tensor.dtype, buffer=nl.shared_hbm)
    sz_p, _ = in_tensor.shape
    sz_f1, sz_f2 = shape2d
    i_p, i_f1, i_f2 = nl.mgrid[0:sz_p, 0:sz_f1, 0:sz_f2]
    in_tile = nl.load(in_tensor)
    out_tile = nl.ndarray((sz_p, sz_f2 * sz_f1), dtype=in_tensor.dtype)
    out_tile[i_p, i_f2 * sz_f1 + i_f1] = nl.copy(in_tile[i_p, i_f1 * sz_f2 + i_f2])
    nl.store(out_tensor, value=out_tile)
    return out_tensor


@nki.jit
def matmul_tiled(lhsT, rhs):
    """result[M, N] = lhsT.T @ rhs with lhsT [K, M], rhs [K, N]; K, M multiples of 128, N of 512."""
    K, M = lhsT.shape
    K_, N = rhs.shape
    assert K == K_
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    TILE_M = nl.tile_size.gemm_stationary_fmax
    TILE_K = nl.tile_size.pmax
    TILE_N = nl.tile_size.gemm_moving_fmax
    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            res_psum = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                lhsT_tile = nl.ndarray((TILE_K, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
                rhs_tile = nl.ndarray((TILE_K, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                lhsT_tile[...] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
                rhs_tile[...] = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                res_psum += nl.matmul(lhsT_tile[...], rhs_tile[...], transpose_x=True)
            res_sb = nl.copy(res_psum, dtype=result.dtype)
            nl.store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=res_sb)
    return result


@nki.jit
def matmul_isa(lhsT, rhs):
    """Same product with the destination-first ISA forms (nisa.dma_copy / nc_matmul(dst, ...) / tensor_copy)."""
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                a = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                nisa.dma_copy(dst=b, src=rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                nisa.nc_matmul(acc, a, b, accumulate=(k != 0))
            out = nl.ndarray((128, 512), dtype=result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out, src=acc)
            nisa.dma_copy(dst=result[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], src=out)
    return result


@nki.jit
def rmsnorm(a_tensor, g_tensor):
    """out = a / sqrt(mean(a^2, axis=1)) * g, rows tiled by 128 with a masked ragged last tile."""
    out_tensor = nl.ndarray(a_tensor.shape, dtype=a_tensor.dtype, buffer=nl.shared_hbm)
    assert a_tensor.shape[1] == g_tensor.shape[0]
    ix = nl.arange(128)[:, None]
    iw = nl.arange(1)[:, None]
    iy = nl.arange(a_tensor.shape[1])[None, :]
    num_rows = a_tensor.shape[0]
    g_tile = nl.load(g_tensor.reshape((1, g_tensor.shape[0]))[iw, iy])
    for i in nl.affine_range(math.ceil(a_tensor.shape[0] / 128)):
        a_tile = nl.load(a_tensor[i * 128 + ix, iy], mask=(i * 128 + ix < num_rows))
        in_square = nl.square(a_tile)
        square_sum = nl.sum(in_square, axis=[1])
        mean = square_sum / a_tensor.shape[1]
        rms_reciprocal = nl.rsqrt(mean)
        out_tile = nl.multiply(a_tile, rms_reciprocal)
        g_bcast = g_tile.broadcast_to((128, g_tensor.shape[0]))
        out_tile[...] = nl.multiply(out_tile, g_bcast, mask=(i * 128 + ix < num_rows))
        nl.store(out_tensor[i * 128 + ix, iy], value=out_tile, mask=(i * 128 + ix < num_rows))
    return out_tensor


@nki.jit
def softmax(x):
    """Row softmax of x [R, C] (C fits one tile), rows tiled by 128 with a masked last tile."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows, cols = x.shape
    ip = nl.arange(128)[:, None]
    jf = nl.arange(cols)[None, :]
    for i in nl.affine_range((rows + 127) // 128):
        msk = i * 128 + ip < rows
        t = nl.load(x[i * 128 + ip, jf], mask=msk)
        m = nl.max(t, axis=1, keepdims=True)
        neg_m = nl.multiply(m, -1.0)
        e = nisa.activation(op=nl.exp, data=t, bias=neg_m, scale=1.0)
        s = nl.sum(e, axis=1, keepdims=True)
        r = nl.reciprocal(s)
        y = nl.multiply(e, r, dtype=x.dtype)
        nl.store(out[i * 128 + ip, jf], value=y, mask=msk)
    return out


@nki.jit
def avgpool2d(in_tensor, pool_size):
    """Average pooling with a pool_size x pool_size window and stride pool_size over [C, H, W] (C <= 128)."""
    sz_cin, sz_hin, sz_win = in_tensor.shape
    sz_hout = sz_hin // pool_size
    sz_wout = sz_win // pool_size
    out_tensor = nl.ndarray((sz_cin, sz_hout, sz_wout), dtype=in_tensor.dtype, buffer=nl.shared_hbm)
    sz_p = sz_cin
    i0, i1, i2, i3, i4 = nl.mgrid[0:sz_p, 0:sz_hout, 0:pool_size, 0:sz_wout, 0:pool_size]
    in_tile = nl.load(in_tensor)
    out_tile = nl.sum(in_tile[i0, pool_size * i1 + i2, pool_size * i3 + i4], axis=[2, 4]) / (pool_size * pool_size)
    nl.store(out_tensor, value=out_tile)
    return out_tensor


def tensor_add_legacy_out(a_input, b_input, c_output):
    """Older convention (SDK <= 2.20): the output is an argument, nothing is returned."""
    ix = nl.arange(128)[:, None]
    iy = nl.arange(a_input.shape[1])[None, :]
    nl.store(c_output[ix, iy], value=nl.load(a_input[ix, iy]) + nl.load(b_input[ix, iy]))


@nki.jit
def matmul_block_free(lhsT, rhs):
    """Tiled matmul reusing SBUF blocks: 2 M-tiles and 2 N-tiles per block, block dims with nl.par_dim,
    PSUM results stored straight to HBM, and an SBUF accumulator over K halves (5-D block tensor)."""
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    TILE_M = nl.tile_size.gemm_stationary_fmax
    TILE_K = nl.tile_size.pmax
    TILE_N = nl.tile_size.gemm_moving_fmax
    BM, BN = 2, 2
    NK = K // TILE_K
    acc = nl.zeros((M // (TILE_M * BM), BM, BN, nl.par_dim(TILE_M), TILE_N), dtype=nl.float32, buffer=nl.sbuf)
    for m in nl.affine_range(M // (TILE_M * BM)):
        lhsT_tiles = nl.ndarray((BM, NK, nl.par_dim(TILE_K), TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
        for bm in nl.affine_range(BM):
            for k in nl.affine_range(NK):
                lhsT_tiles[bm, k] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K,
                                                 (m * BM + bm) * TILE_M:(m * BM + bm + 1) * TILE_M])
        for n in nl.sequential_range(N // (TILE_N * BN)):  # acc is reused across n: loop-carried
            rhs_tiles = nl.ndarray((BN, NK, nl.par_dim(TILE_K), TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
            for bn in nl.affine_range(BN):
                for k in nl.affine_range(NK):
                    rhs_tiles[bn, k] = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K,
                                                   (n * BN + bn) * TILE_N:(n * BN + bn + 1) * TILE_N])
            for bm in nl.affine_range(BM):
                for bn in nl.affine_range(BN):
                    for half in nl.sequential_range(2):
                        res = nl.zeros((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
                        for k in nl.affine_range(half * NK // 2, (half + 1) * NK // 2):
                            res += nl.matmul(lhsT_tiles[bm, k], rhs_tiles[bn, k], transpose_x=True)
                        acc[m, bm, bn] += res
                    nl.store(result[(m * BM + bm) * TILE_M:(m * BM + bm + 1) * TILE_M,
                                    (n * BN + bn) * TILE_N:(n * BN + bn + 1) * TILE_N], value=acc[m, bm, bn])
                    acc[m, bm, bn] = 0.0
    return result
