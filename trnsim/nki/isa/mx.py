"""Microscaling (OCP MX v1.0) on NeuronCore-v4: ``quantize_mx`` (Vector Engine: bf16/fp16 -> MXFP8 data +
e8m0 block scales) and ``nc_matmul_mx`` (Tensor Engine matmul of MXFP8/MXFP4 operands with the
dequantisation applied in the array, fp32 accumulation in PSUM).

Layout (NKI MXFP matmul deep dive and the ``quantize_mx`` / ``nc_matmul_mx`` reference):

* A 4-packed data tile ``[P, F]`` (``float8_e5m2_x4``, ``float8_e4m3fn_x4``, ``float4_e2m1fn_x4``) holds
  ``[P, F, 4]`` values; value k of element (p, f) is byte k (fp8, uint32 storage) or nibble k (fp4, uint16
  storage). ``quantize_mx`` packs source elements ``src[p, 4f:4f+4]`` into element (p, f). The matmul
  contracts over the partitions and the 4 packed values.
* A scale group is 8 partitions x 1 packed element (32 values). Group g (partitions 8g..8g+7) keeps its
  scales in partition ``32 * (g // 4) + g % 4`` of the scale view (one row per group inside the group's
  32-partition quadrant; the scale view may start 0/4/8/12 partitions into a tile to pack several scale
  sets), column f. A scale byte b means 2**(b - 127) (``float8_e8m0fnu``; ``uint8`` accepted).
* ``quantize_mx`` block scale: ``X = 2**(floor(log2(amax)) - (Emax - 1))`` with Emax = 8 (e4m3fn) or 15
  (e5m2), ``X = 2**-127`` for an all-zero group; values are ``v / X`` rounded to nearest even in the fp8
  format (ml_dtypes casts).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from trnsim.nki import dtypes as dt
from trnsim.nki.context import as_view, current, read, write
from trnsim.nki.isa.common import finish, free_size, tile_arg
from trnsim.nki.rules import KernelError, fmt_shape

_QUAD = 32            # partitions per quadrant
_GROUP_P = 8          # partitions per scale group
_EMAX = {"float8_e4m3fn": 8, "float8_e5m2": 15}     # max unbiased exponent of the element format (reference)
_SCALE_DTYPES = ("float8_e8m0fnu", "uint8")
_TILE_ROWS = (32, 64, 128)


def _version(ctx) -> int:
    return int(str(ctx.limits.neuroncore_version).split("v")[-1])


def _need_v4(ctx, api: str) -> None:
    if _version(ctx) < 4:
        raise KernelError("err_unsupported_on_target", f"'{api}' is a NeuronCore-v4 (trn3) instruction; {ctx.target} "
                          f"is {ctx.limits.neuroncore_version}",
                          "target trn3 (nki.jit(target='trn3')), or use bf16/fp8 nisa.nc_matmul on this target")


def scale_row(g: int) -> int:
    """Partition (relative to the scale view) holding the scales of partition group g."""
    return _QUAD * (g // 4) + g % 4


def _scale_view(x, P: int, F: int, api: str, arg: str):
    v = tile_arg(x, api, arg, ("sbuf",))
    if v.tensor.dtype_name not in _SCALE_DTYPES:
        raise KernelError("err_unsupported_dtype", f"'{arg}' of '{api}' must be float8_e8m0fnu (or uint8), got "
                          f"{v.tensor.dtype_name}", "allocate the scale tile as nl.float8_e8m0fnu")
    G = P // _GROUP_P
    need = scale_row(G - 1) + 1
    if len(v.shape) != 2 or v.shape[0] < need or v.shape[1] != F:
        raise KernelError("err_mx_scale_shape",
                          f"'{arg}'{fmt_shape(v.shape)} of '{api}' cannot hold the scales of a {P}-partition MX tile "
                          f"with {F} packed columns: it needs {F} columns and at least {need} partitions (one row per "
                          "8-partition group, in that group's 32-partition quadrant)",
                          f"allocate it as ({P // _GROUP_P}, {F}) for P <= 32, or ({P}, {F}) when the data spans "
                          "several quadrants")
    return v


def _scale_values(v, G: int) -> np.ndarray:
    """[G, F] float32 scales 2**(b - 127) read from the scale view."""
    raw = np.asarray(read(v, raw=True))
    b = raw.view(np.uint8) if raw.dtype.itemsize == 1 else raw.astype(np.uint8)
    rows = np.array([scale_row(g) for g in range(G)])
    bb = b[rows].astype(np.int32)
    out = np.exp2((bb - 127).astype(np.float32))
    return np.where(bb == 255, np.float32(np.nan), out).astype(np.float32)


def unpack(words: np.ndarray, name: str) -> np.ndarray:
    """Values [..., 4] (float32) of packed words of MX dtype ``name``."""
    p = dt.PACKED[name]
    w = np.asarray(words)
    if p.element_bits == 8:
        b = np.ascontiguousarray(w.astype(np.uint32)).view(np.uint8).reshape(w.shape + (4,))
        return b.view(getattr(ml_dtypes, p.element)).astype(np.float32)
    nib = np.stack([(w.astype(np.uint16) >> (4 * k)) & 0xF for k in range(4)], axis=-1).astype(np.uint8)
    return nib.view(ml_dtypes.float4_e2m1fn).astype(np.float32)


def pack(values: np.ndarray, name: str) -> np.ndarray:
    """Packed words of MX dtype ``name`` for values [..., 4] (rounded to nearest even in the element format)."""
    p = dt.PACKED[name]
    v = np.asarray(values, dtype=np.float32)
    q = v.astype(getattr(ml_dtypes, p.element))
    if p.element_bits == 8:
        return np.ascontiguousarray(q).view(np.uint8).reshape(v.shape).copy().view(np.uint32).reshape(v.shape[:-1])
    nib = q.view(np.uint8).astype(np.uint16) & 0xF
    return sum(nib[..., k] << (4 * k) for k in range(4)).astype(np.uint16)


def quantize_mx(dst, src, dst_scale, name=None):
    """Quantise ``src`` [P, 4F] (bf16/fp16, SBUF) to MXFP8: ``dst`` [P, F] fp8 x4 data and ``dst_scale`` e8m0 block
    scales (one per 8 partitions x 4 elements). P a multiple of 32, at most 128. NeuronCore-v4+."""
    ctx = current()
    api = "quantize_mx"
    _need_v4(ctx, api)
    s = tile_arg(src, api, "src", ("sbuf",))
    d = tile_arg(dst, api, "dst", ("sbuf",))
    if s.tensor.dtype_name not in ("bfloat16", "float16"):
        raise KernelError("err_unsupported_dtype", f"src of '{api}' must be bfloat16 or float16, got "
                          f"{s.tensor.dtype_name}", "cast the source to nl.bfloat16 first")
    if d.tensor.dtype_name not in ("float8_e5m2_x4", "float8_e4m3fn_x4"):
        raise KernelError("err_unsupported_dtype", f"dst of '{api}' must be float8_e5m2_x4 or float8_e4m3fn_x4, got "
                          f"{d.tensor.dtype_name}", "allocate dst as nl.float8_e4m3fn_x4 (quantize_mx has no fp4 "
                          "output)")
    P, Fs = s.shape[0], free_size(s.shape)
    if P % _QUAD or P > 128:
        raise KernelError("err_mx_partitions", f"src of '{api}' spans {P} partitions; MX tiles span a multiple of 32 "
                          "partitions, at most 128", "pad or split the partition dimension to 32, 64, 96 or 128")
    if Fs % 4:
        raise KernelError("err_mx_free_size", f"src of '{api}' has {Fs} elements per partition, not a multiple of 4",
                          "pad the free dimension to a multiple of 4")
    F = Fs // 4
    if d.shape[0] != P or free_size(d.shape) != F:
        raise KernelError("err_shape_mismatch", f"dst{fmt_shape(d.shape)} of '{api}' must be [{P}, {F}] (a quarter of "
                          f"src{fmt_shape(s.shape)}'s free size: four values per packed element)",
                          f"allocate dst as ({P}, {F})")
    sc = _scale_view(dst_scale, P, F, api, "dst_scale")
    elem = dt.PACKED[d.tensor.dtype_name].element
    G = P // _GROUP_P
    if ctx.numerics:
        x = read(s).reshape(G, _GROUP_P, F, 4)
        amax = np.abs(x).max(axis=(1, 3))                                   # [G, F]
        with np.errstate(divide="ignore"):
            e = np.floor(np.log2(np.where(amax > 0, amax, 1.0))).astype(np.int32)
        sexp = np.where(amax > 0, e - (_EMAX[elem] - 1), -127)
        sbyte = np.clip(sexp + 127, 0, 254).astype(np.uint8)
        X = np.exp2((sbyte.astype(np.int32) - 127).astype(np.float64))
        q = (x / X[:, None, :, None]).astype(np.float32)
        write(d, pack(q.reshape(P, F, 4), d.tensor.dtype_name).reshape(d.shape))
        rows = np.array([scale_row(g) for g in range(G)])
        st = sc.tensor.data.dtype
        cur = np.zeros(sc.shape, dtype=np.uint8)
        cur[rows] = sbyte
        m = np.zeros(sc.shape, dtype=bool)
        m[rows] = True
        write(sc, cur.view(st) if st.itemsize == 1 else cur.astype(st), m)   # other scale rows untouched
    ctx.emit(api, "vector", (s,), (d, sc), {"dtype": d.tensor.dtype_name}, 3 * P * Fs, 0, Fs, P)
    finish(ctx, None)
    return dst


def nc_matmul_mx(dst, stationary, moving, stationary_scale, moving_scale, tile_position=None, tile_size=None,
                 accumulate=None, name=None):
    """MX matmul on the Tensor Engine (NeuronCore-v4+): ``dst[M, N] (+)= sum_{p,k} S[p, m, k] sS[g(p), m] *
    V[p, n, k] sV[g(p), n]`` for packed ``stationary`` [K, M] and ``moving`` [K, N] (fp8/fp4 x4, SBUF), e8m0 scale
    tiles, ``dst`` fp32/bf16 in PSUM. K a multiple of 32 (<= 128), M even (<= 128), N <= 4096 (fp32 dst) or 8192
    (bf16). ``accumulate`` as in ``nc_matmul`` (None: first write overwrites, later writes add)."""
    ctx = current()
    api = "nc_matmul_mx"
    _need_v4(ctx, api)
    s = tile_arg(stationary, api, "stationary", ("sbuf",))
    m = tile_arg(moving, api, "moving", ("sbuf",))
    for v, arg in ((s, "stationary"), (m, "moving")):
        if v.tensor.dtype_name not in dt.PACKED:
            raise KernelError("err_unsupported_dtype",
                              f"'{arg}' of '{api}' must be float8_e5m2_x4, float8_e4m3fn_x4 or float4_e2m1fn_x4, got "
                              f"{v.tensor.dtype_name}", "quantise it with nisa.quantize_mx (or load offline-quantised "
                              "MX data), or use nisa.nc_matmul for unscaled operands")
        if len(v.shape) != 2:
            raise KernelError("err_exceed_max_supported_dimension", f"'{arg}' of '{api}' must be 2-D, got "
                              f"{fmt_shape(v.shape)}", "index it down to [K, M] / [K, N]")
    K, M = s.shape
    K2, N = m.shape
    if K != K2:
        raise KernelError("err_num_partition_mismatch", f"stationary{fmt_shape(s.shape)} and moving"
                          f"{fmt_shape(m.shape)} of '{api}' must span the same partitions (the contraction dim)",
                          "put the same K on the partition axis of both")
    if K % _QUAD or K > 128:
        raise KernelError("err_mx_partitions", f"'{api}' contraction partitions K={K} must be a multiple of 32, at "
                          "most 128", "pad K to 32, 64, 96 or 128 partitions")
    if M % 2 or M > 128:
        raise KernelError("err_size_of_dimension_exceed_arch_limit", f"stationary free size M={M} of '{api}' must be "
                          "even and at most 128", "tile M into even chunks of at most 128")
    d = as_view(dst)
    if d.tensor.buffer != "psum":
        raise KernelError("err_unsupported_memory", f"Expected operand 'dst' of '{api}' to be in address space "
                          f"'psum', but got a tile in '{d.tensor.buffer}' instead.",
                          f"allocate dst as nl.ndarray(({M}, {N}), nl.float32, buffer=nl.psum)")
    if d.tensor.dtype_name not in ("float32", "bfloat16"):
        raise KernelError("err_unsupported_dtype", f"dst of '{api}' must be float32 or bfloat16, got "
                          f"{d.tensor.dtype_name}", "use an nl.float32 PSUM tile")
    nmax = 4096 if d.tensor.dtype_name == "float32" else 8192
    if N > nmax:
        raise KernelError("err_size_of_dimension_exceed_arch_limit", f"moving free size N={N} of '{api}' exceeds "
                          f"{nmax} for a {d.tensor.dtype_name} dst (all 8 PSUM banks)", f"tile N into chunks of {nmax}")
    if tuple(d.shape) != (M, N):
        raise KernelError("err_shape_mismatch", f"dst{fmt_shape(d.shape)} of '{api}' must be [M, N] = [{M}, {N}]",
                          f"allocate dst as ({M}, {N})")
    if (tile_position is None) != (tile_size is None) or (tile_position == ()) != (tile_size == ()):
        raise KernelError("err_invalid_tile_position", f"'{api}' needs both tile_position and tile_size (or neither)",
                          "pass tile_position=(row, 0) and tile_size=(rows, 128)")
    if tile_size:
        rows, cols = (int(x) for x in tile_size)
        r0, c0 = (int(x) for x in tile_position)
        if rows not in _TILE_ROWS or cols != 128 or c0 != 0 or r0 % rows or r0 + rows > 128 or K > rows:
            raise KernelError("err_invalid_tile_position",
                              f"'{api}' row tiling tile_position={tuple(tile_position)}, tile_size={tuple(tile_size)} "
                              f"for K={K}: tile_size must be (32|64|128, 128), tile_position (multiple of the row "
                              "size, 0) inside the 128 rows, and K at most the row size",
                              "e.g. tile_position=(64, 0), tile_size=(64, 128) for K <= 64")
    G = K // _GROUP_P
    ss = _scale_view(stationary_scale, K, M, api, "stationary_scale")
    ms = _scale_view(moving_scale, K, N, api, "moving_scale")
    reads = [s, m, ss, ms]
    group_start = True
    res = None
    if ctx.numerics:
        sv = unpack(read(s, raw=True), s.tensor.dtype_name) * \
            np.repeat(_scale_values(ss, G), _GROUP_P, axis=0)[:, :, None]
        mv = unpack(read(m, raw=True), m.tensor.dtype_name) * \
            np.repeat(_scale_values(ms, G), _GROUP_P, axis=0)[:, :, None]
        a = np.ascontiguousarray(sv.transpose(0, 2, 1)).reshape(4 * K, M)
        b = np.ascontiguousarray(mv.transpose(0, 2, 1)).reshape(4 * K, N)
        res = (a.T @ b).astype(np.float32)
        old_acc = d.tensor.acc[d.npkey()]
        acc_mask = old_acc if accumulate is None else np.full((M, N), bool(accumulate))
        group_start = not bool(np.any(acc_mask))
        res_w = np.where(acc_mask, read(d) + res, res) if not group_start else res
        write(d, res_w)
        d.tensor.acc[d.npkey()] = True
    else:
        group_start = accumulate is False or (accumulate is None and not d.tensor.mm_open)
    d.tensor.mm_open = True
    if not group_start:
        reads.append(d)
    attrs = {"accumulate": not group_start, "group_start": group_start, "stationary_free": M, "moving_free": N,
             "dtype": f"{s.tensor.dtype_name}x{m.tensor.dtype_name}"}
    if tile_size:
        attrs["tile_position"], attrs["tile_size"] = tuple(tile_position), tuple(tile_size)
    ctx.emit(api, "tensor", reads, (d,), attrs, 2 * 4 * K * M * N, 0, N, K)
    finish(ctx, None)
    return dst


__all__ = ["quantize_mx", "nc_matmul_mx"]
