"""Selection and search: ``max8``, ``nc_find_index8``, ``nc_match_replace8`` (Vector Engine, 8 values per
partition), ``topk`` and ``nonzero_with_count`` (GpSimd). Values are compared in fp32."""
from __future__ import annotations

import numpy as np

from trnsim.nki.context import current, read, write
from trnsim.nki.isa._result import done, dst_or_new
from trnsim.nki.isa.common import finish, free_size, tile_arg
from trnsim.nki.dtypes import dtype_name as _dtname
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.tensors import mask_array

_MIN_ELEMS, _MAX_ELEMS = 8, 16384      # elements per partition max8 / find_index8 read (reference)
_GPSIMD_GROUP = 16


def _src8(x, api: str, arg: str):
    v = tile_arg(x, api, arg)
    n = free_size(v.shape)
    if len(v.shape) > 3:
        raise KernelError("err_exceed_max_supported_dimension", f"'{arg}' of '{api}' is {len(v.shape)}-D "
                          f"{fmt_shape(v.shape)}; at most 3-D", "reshape the tile to [P, F] or [P, A, B]")
    if not _MIN_ELEMS <= n <= _MAX_ELEMS:
        raise KernelError("err_size_of_dimension_exceed_arch_limit",
                          f"'{api}' reads {n} elements per partition of '{arg}'{fmt_shape(v.shape)}; it needs "
                          f"{_MIN_ELEMS}..{_MAX_ELEMS}", "pad to 8 elements, or split the free axis into chunks of "
                          "16384 and combine the partial results")
    return v, n


def _dst8(x, P: int, api: str, arg: str = "dst", dtype_name: str = "float32"):
    if x is None and arg == "dst":
        return dst_or_new(None, (P, 8), dtype_name, api)[1].full_view()
    d = tile_arg(x, api, arg)
    if len(d.shape) != 2 or tuple(d.shape) != (P, 8):
        raise KernelError("err_shape_mismatch", f"'{arg}' of '{api}' must be [{P}, 8], got {fmt_shape(d.shape)}",
                          f"allocate it as nl.ndarray(({P}, 8), ...)")
    return d


def max8(dst=None, src=None, name=None, dtype=None, mask=None):
    """The 8 largest values of each partition of ``src`` in descending order, into ``dst`` [P, 8]."""
    ctx = current()
    v, n = _src8(src, "max8", "src")
    P = v.shape[0]
    d = _dst8(dst, P, "max8", dtype_name=v.tensor.dtype_name if dtype is None else _dtname(dtype))
    if ctx.numerics:
        x = _masked(read(v), mask, v.shape, -np.inf).reshape(P, n)      # Beta 1 mask=: skipped elements
        write(d, -np.sort(-x, axis=1)[:, :8])
    ctx.emit("max8", "vector", (v,), (d,), {}, P * n, 0, n, P)
    return done(ctx, dst, None if dst is not None else d.tensor)


def _masked(x: np.ndarray, mask, shape, fill) -> np.ndarray:
    """``x`` with the elements a Beta 1 ``mask=`` excludes replaced by ``fill``."""
    m = mask_array(mask, tuple(shape))
    return x if m is None else np.where(m, x, np.float32(fill))


def _match(data_row: np.ndarray, vals_row: np.ndarray, order) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the first still-unclaimed occurrence of each value (in ``order``); -1 when absent."""
    pos = np.full(len(vals_row), -1, dtype=np.int64)
    claimed = np.zeros(data_row.shape[0], dtype=bool)
    for i in order:
        hit = np.flatnonzero((data_row == vals_row[i]) & ~claimed)
        if hit.size:
            pos[i] = hit[0]
            claimed[hit[0]] = True
    return pos


def _index_dst(x, P: int, api: str, arg: str, dtype_name: str = "uint32"):
    d = _dst8(x, P, api, arg, dtype_name)
    if d.tensor.dtype_name not in ("uint16", "uint32"):
        raise KernelError("err_unsupported_dtype", f"'{arg}' of '{api}' holds indices: uint16 or uint32, got "
                          f"{d.tensor.dtype_name}", "allocate it as nl.uint32")
    return d


def _write_index(d, pos: np.ndarray) -> None:
    st = d.tensor.data.dtype
    sentinel = np.iinfo(st).max
    write(d, np.where(pos < 0, sentinel, pos).astype(st))


def nc_find_index8(dst=None, data=None, vals=None, name=None, dtype=None, mask=None):
    """Index of the first occurrence in each partition of ``data`` of each of the 8 ``vals`` (all-ones if absent;
    repeated vals take successive occurrences in ascending order). ``dst`` [P, 8] uint16/uint32."""
    ctx = current()
    v, n = _src8(data, "nc_find_index8", "data")
    P = v.shape[0]
    vv = tile_arg(vals, "nc_find_index8", "vals")
    if vv.shape[0] != P or free_size(vv.shape) != 8:
        raise KernelError("err_shape_mismatch", f"vals of 'nc_find_index8' must hold 8 values per partition "
                          f"[{P}, 8], got {fmt_shape(vv.shape)}", "pass e.g. the output of nisa.max8")
    d = _index_dst(dst, P, "nc_find_index8", "dst", "uint32" if dtype is None else _dtname(dtype))
    if ctx.numerics:
        x = _masked(read(v), mask, v.shape, np.nan).reshape(P, n)      # masked data never matches
        w = read(vv).reshape(P, 8)
        _write_index(d, np.stack([_match(x[p], w[p], range(8)) for p in range(P)]))
    ctx.emit("nc_find_index8", "vector", (v, vv), (d,), {}, 8 * P * n, 0, n, P)
    return done(ctx, dst, None if dst is not None else d.tensor)


def nc_match_replace8(dst=None, data=None, vals=None, imm=None, dst_idx=None, name=None, dtype=None, mask=None):
    """``dst = data`` with the first occurrence of each of the 8 ``vals`` replaced by ``imm`` (vals processed
    from the last to the first, so repeated vals claim occurrences in descending slot order); optional
    ``dst_idx`` [P, 8] receives the matched positions (all-ones if a value is absent). Vector Engine."""
    ctx = current()
    api = "nc_match_replace8"
    v, n = _src8(data, api, "data")
    P = v.shape[0]
    vv = tile_arg(vals, api, "vals")
    if vv.shape[0] != P or free_size(vv.shape) != 8:
        raise KernelError("err_shape_mismatch", f"vals of '{api}' must hold 8 values per partition [{P}, 8], got "
                          f"{fmt_shape(vv.shape)}", "pass e.g. the output of nisa.max8")
    d, out_t = dst_or_new(dst, v.shape, v.tensor.dtype_name if dtype is None else _dtname(dtype), api)
    if d.shape[0] != P or free_size(d.shape) != n:
        raise KernelError("err_shape_mismatch", f"dst{fmt_shape(d.shape)} of '{api}' must match data"
                          f"{fmt_shape(v.shape)}", "allocate dst like data")
    if not isinstance(imm, (int, float, np.integer, np.floating)):
        raise KernelError("err_operand_type", f"imm of '{api}' must be a number, got {type(imm).__name__}",
                          "pass a Python float, e.g. -inf to knock out the maxima")
    writes = [d]
    di = _index_dst(dst_idx, P, api, "dst_idx") if dst_idx is not None else None
    if di is not None:
        writes.append(di)
    if ctx.numerics:
        x = read(v).reshape(P, n).copy()
        w = read(vv).reshape(P, 8)
        xm = _masked(x.reshape(v.shape), mask, v.shape, np.nan).reshape(P, n)   # masked data never matches
        pos = np.stack([_match(xm[p], w[p], range(7, -1, -1)) for p in range(P)])
        rows, slots = np.nonzero(pos >= 0)
        x[rows, pos[rows, slots]] = np.float32(imm)
        write(d, x.reshape(d.shape))
        if di is not None:
            _write_index(di, pos)
    ctx.emit(api, "vector", (v, vv), writes, {}, 8 * P * n, 0, n, P)
    return done(ctx, dst, out_t)


def topk(val_dst, idx_dst, src, n, name=None):
    """Top-K of a 16-partition "snake" on GpSimd.

    Each group of 16 partitions holds one sequence of ``n`` bf16 values, element j at partition
    ``16g + j % 16``, column ``j // 16``. K = ``val_dst``'s free size. Every partition of the group receives the
    group's K largest values in ascending order (``val_dst``, bf16) and their snake positions j (``idx_dst``,
    uint32). trnsim's reading of the reference: the hardware's placement of results across the 16 partitions
    is not documented, so trnsim writes the same K results to each partition of the group."""
    ctx = current()
    api = "topk"
    s = tile_arg(src, api, "src", ("sbuf",))
    vd = tile_arg(val_dst, api, "val_dst", ("sbuf",))
    idd = tile_arg(idx_dst, api, "idx_dst", ("sbuf",))
    if s.tensor.dtype_name != "bfloat16" or vd.tensor.dtype_name != "bfloat16":
        raise KernelError("err_unsupported_dtype", f"'{api}' takes and writes bfloat16 values; src is "
                          f"{s.tensor.dtype_name}, val_dst {vd.tensor.dtype_name}",
                          "cast src and val_dst to nl.bfloat16")
    if idd.tensor.dtype_name != "uint32":
        raise KernelError("err_unsupported_dtype", f"idx_dst of '{api}' must be uint32, got {idd.tensor.dtype_name}",
                          "allocate idx_dst as nl.uint32")
    P, X = s.shape[0], free_size(s.shape)
    if P % _GPSIMD_GROUP:
        raise KernelError("err_num_partition_mismatch", f"'{api}' src has {P} partitions; it must be a multiple of 16",
                          "lay the input out over 16, 32, ..., 128 partitions")
    if len(vd.shape) != 2 or tuple(vd.shape) != tuple(idd.shape) or vd.shape[0] != P:
        raise KernelError("err_shape_mismatch", f"val_dst{fmt_shape(vd.shape)} and idx_dst{fmt_shape(idd.shape)} of "
                          f"'{api}' must both be [{P}, K]", f"allocate both as ({P}, K)")
    K = vd.shape[1]
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise KernelError("err_invalid_arguments", f"n of '{api}' must be a compile-time int, got {n!r}",
                          "pass the number of valid elements in the snake as a Python int")
    n = int(n)
    if not 8 <= n < 65536:
        raise KernelError("err_invalid_arguments", f"n={n} of '{api}' must be in [8, 65536)",
                          "pass the number of valid elements in the snake")
    if not 1 <= K <= n or K >= 32768:
        # "1 <= K < 32768 and K <= n" (nki.isa.topk)
        raise KernelError("err_invalid_arguments", f"'{api}' selects K={K} of n={n}: need 1 <= K <= n and K < 32768",
                          "make val_dst's free size at most n and below 32768")
    if X < -(-n // 16):
        raise KernelError("err_shape_mismatch", f"'{api}' src holds {X} columns; n={n} needs ceil(n/16)="
                          f"{-(-n // 16)}", "widen src or lower n")
    if ctx.numerics:
        x = read(s).reshape(P, X)
        vals = np.empty((P, K), dtype=np.float32)
        idx = np.empty((P, K), dtype=np.uint32)
        j = np.arange(n)
        for g in range(P // 16):
            snake = x[16 * g + j % 16, j // 16]
            top = np.argsort(-snake, kind="stable")[:K][::-1]      # ascending values
            vals[16 * g:16 * g + 16] = snake[top]
            idx[16 * g:16 * g + 16] = top.astype(np.uint32)
        write(vd, vals)
        write(idd, idx)
    ctx.emit(api, "gpsimd", (s,), (vd, idd), {"n": n, "k": K}, 0, 0, 4 * n + K, P)
    finish(ctx, None)
    return val_dst, idx_dst


def nonzero_with_count(dst=None, src=None, index_offset=0, padding_val=-1, name=None):
    """On partitions 0, 16, ..., 112 only (each GpSimd core's first partition): ``dst[p]`` = positions of the
    nonzero elements of ``src[p]`` (+ ``index_offset``), then ``padding_val``, then the count in the last slot."""
    ctx = current()
    api = "nonzero_with_count"
    if ctx.limits.neuroncore_version == "NC-v2":
        # "Available only on NeuronCore-v3 and newer." (nki.isa.nonzero_with_count)
        raise KernelError("err_unsupported_instruction", f"'{api}' is not available on {ctx.target} (NeuronCore-v2); "
                          "it needs NeuronCore-v3 or newer", "target trn2 or trn3")
    s = tile_arg(src, api, "src", ("sbuf",))
    d, out_t = dst_or_new(dst, (s.shape[0], free_size(s.shape) + 1), "int32", api, ("sbuf",))
    if s.tensor.dtype_name not in ("float32", "int32"):
        raise KernelError("err_unsupported_dtype", f"src of '{api}' must be float32 or int32, got "
                          f"{s.tensor.dtype_name}", "cast src first")
    if d.tensor.dtype_name != "int32":
        raise KernelError("err_unsupported_dtype", f"dst of '{api}' must be int32, got {d.tensor.dtype_name}",
                          "allocate dst as nl.int32")
    P, T = s.shape[0], free_size(s.shape)
    if d.shape[0] != P or free_size(d.shape) != T + 1:
        raise KernelError("err_shape_mismatch", f"dst{fmt_shape(d.shape)} of '{api}' must be [{P}, {T + 1}] (src"
                          f"{fmt_shape(s.shape)} plus one count slot)", f"allocate dst as ({P}, {T + 1})")
    for val, arg in ((index_offset, "index_offset"), (padding_val, "padding_val")):
        if not isinstance(val, (int, np.integer)) or not -2 ** 31 <= int(val) < 2 ** 31:
            raise KernelError("err_invalid_arguments", f"{arg}={val!r} of '{api}' must be an int32",
                              "pass a Python int")
    if ctx.numerics:
        x = read(s).reshape(P, T)
        out = np.zeros((P, T + 1), dtype=np.int32)
        rows = np.zeros((P, T + 1), dtype=bool)
        rows[::_GPSIMD_GROUP] = True            # the other partitions of dst are left unmodified
        for p in range(0, P, _GPSIMD_GROUP):
            nz = np.flatnonzero(x[p] != 0)
            row = np.full(T + 1, int(padding_val), dtype=np.int64)
            row[:nz.size] = nz + int(index_offset)
            row[T] = nz.size
            out[p] = row.astype(np.int32)
        write(d, out.reshape(d.shape), rows.reshape(d.shape))
    ctx.emit(api, "gpsimd", (s,), (d,), {}, 0, 0, T, P)
    return done(ctx, dst, out_t)


__all__ = ["max8", "nc_find_index8", "nc_match_replace8", "topk", "nonzero_with_count"]
