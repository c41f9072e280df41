"""Tensor add and 2-D transpose, written in trnsim.nki (NKI 0.6)."""
from __future__ import annotations

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl


def _divisible(name: str, what: str, size: int, tile: int) -> None:
    if size % tile:
        raise ValueError(f"{name}: {what}={size} is not a multiple of {tile}; pad it to a multiple of {tile} "
                         "(these reference kernels need even tiling)")


@nki.jit
def tensor_add(a, b, tile_free: int = 2048):
    """``a + b`` for [R, C] arrays, R a multiple of 128: load -> add -> store per [128, F] tile.

    Demonstrates the basic NKI pattern and *partition vectorisation*: every instruction uses all 128
    partitions and F = ``min(C, tile_free)`` elements per partition, so the per-instruction and
    per-DMA fixed costs are amortised (perf guide Opt #5 and #9). The two loads of a tile are
    independent and go to different DMA queues; each add on the Vector Engine costs ``2F`` cycles.
    """
    R, C = a.shape
    if tuple(b.shape) != (R, C):
        raise ValueError(f"tensor_add: shapes differ: a{list(a.shape)} vs b{list(b.shape)}")
    P = nl.tile_size.pmax
    F = min(C, tile_free)
    _divisible("tensor_add", "rows", R, P)
    _divisible("tensor_add", "columns", C, F)
    out = nl.ndarray((R, C), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(R // P):
        for j in nl.affine_range(C // F):
            a_tile = nl.load(a[i * P:(i + 1) * P, j * F:(j + 1) * F])
            b_tile = nl.load(b[i * P:(i + 1) * P, j * F:(j + 1) * F])
            nl.store(out[i * P:(i + 1) * P, j * F:(j + 1) * F], value=nl.add(a_tile, b_tile))
    return out


@nki.jit
def transpose2d(x):
    """``x.T`` for [R, C] arrays (R, C multiples of 128) using the Tensor Engine.

    Demonstrates perf guide Opt #10: instead of a DMA transpose (``nl.load_transpose2d``, which
    degrades DMA bandwidth), load full-width [128, 128] blocks, transpose each on the otherwise idle
    Tensor Engine (an identity matmul into PSUM, ``max(P, min(64, F))`` cycles), copy PSUM -> SBUF
    and store the block at its transposed position.
    """
    R, C = x.shape
    P = nl.tile_size.pmax
    _divisible("transpose2d", "rows", R, P)
    _divisible("transpose2d", "columns", C, P)
    out = nl.ndarray((C, R), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(R // P):
        row = nl.load(x[i * P:(i + 1) * P, :])
        for j in nl.affine_range(C // P):
            t_psum = nl.ndarray((P, P), dtype=x.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=t_psum, data=row[:, j * P:(j + 1) * P])
            t_sb = nl.ndarray((P, P), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=t_sb, src=t_psum)
            nl.store(out[j * P:(j + 1) * P, i * P:(i + 1) * P], value=t_sb)
    return out


__all__ = ["tensor_add", "transpose2d"]
