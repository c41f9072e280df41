"""Data movement inside SBUF and predicated copies: ``nc_n_gather`` and ``local_gather`` (GpSimd),
``nc_stream_shuffle`` (cross-partition within 32-partition quadrants), ``tensor_copy_predicated``,
``range_select`` and ``select_reduce`` (Vector Engine; the last two drive the Vector accumulator)."""
from __future__ import annotations

import numpy as np

from trnsim.nki import dtypes as dt
from trnsim.nki.context import current, read, write
from trnsim.nki.isa import _accum
from trnsim.nki.isa._result import done, dst_or_new
from trnsim.nki.isa.common import finish, free_size, is_tile, scalar_or_vector, tile_arg
from trnsim.nki.isa.enums import reduce_cmd as _rc
from trnsim.nki.isa.ops import ALU, op_name
from trnsim.nki.rules import KernelError, fmt_shape

FP32_MIN = float(np.finfo(np.float32).min)
_QUADRANT = 32          # partitions per SBUF quadrant (cross-partition units; NKI architecture guide)
_GPSIMD_GROUP = 16      # partitions each GpSimd core is wired to (local_gather reference)


def _same_elems(a, b, api: str, an: str, bn: str) -> None:
    if a.shape[0] != b.shape[0] or free_size(a.shape) != free_size(b.shape):
        raise KernelError("err_shape_mismatch",
                          f"'{an}'{fmt_shape(a.shape)} and '{bn}'{fmt_shape(b.shape)} of '{api}' must have the same "
                          "partitions and elements per partition", f"allocate {an} like {bn}")


def _pstart(ctx, v) -> int:
    return ctx.operand(v).region.partition_start


def nc_n_gather(dst=None, data=None, indices=None, name=None):
    """``dst[p, j] = data[p].flatten()[indices[p, j]]`` per partition on GpSimd (all SBUF; uint32 indices)."""
    ctx = current()
    api = "nc_n_gather"
    v = tile_arg(data, api, "data", ("sbuf",))
    ix = tile_arg(indices, api, "indices", ("sbuf",))
    d, out_t = dst_or_new(dst, ix.shape, v.tensor.dtype_name, api, ("sbuf",))
    if ix.tensor.dtype_name != "uint32":
        raise KernelError("err_unsupported_dtype", f"indices of '{api}' must be uint32, got {ix.tensor.dtype_name}",
                          "allocate the index tile as nl.uint32")
    if d.tensor.dtype_name != v.tensor.dtype_name:
        raise KernelError("err_dtype_mismatch", f"dst dtype {d.tensor.dtype_name} of '{api}' must equal data dtype "
                          f"{v.tensor.dtype_name}", "allocate dst with data's dtype (no casting)")
    if not (v.shape[0] == ix.shape[0] == d.shape[0]):
        raise KernelError("err_num_partition_mismatch", f"'{api}' needs one partition count for data"
                          f"{fmt_shape(v.shape)}, indices{fmt_shape(ix.shape)} and dst{fmt_shape(d.shape)}",
                          "gather within the same partitions (use local_gather across partitions)")
    _same_elems(d, ix, api, "dst", "indices")
    P, F, n = v.shape[0], free_size(v.shape), free_size(ix.shape)
    if ctx.numerics:
        idx = np.asarray(read(ix, raw=True)).reshape(P, n).astype(np.int64)
        bad = (idx < 0) | (idx >= F)
        if bad.any():
            p, j = map(int, np.argwhere(bad)[0])
            raise KernelError("err_index_out_of_bounds",
                              f"'{api}' index {int(idx[p, j])} at [{p}, {j}] is outside [0, {F}) (elements per "
                              "partition of data)", "clamp or mask the indices before gathering")
        src = np.asarray(read(v, raw=True)).reshape(P, F)
        write(d, np.take_along_axis(src, idx, axis=1).reshape(d.shape))
    groups = -(-n // 512)       # the reference: n = ceil(elements per partition / 512) ISA instructions
    ctx.emit(api, "gpsimd", (v, ix), (d,), {"isa_groups": groups}, 0, 0, n, P)
    return done(ctx, dst, out_t)


def local_gather(dst=None, src_buffer=None, index=None, num_elem_per_idx=1, num_valid_indices=None, name=None):
    """Gather along the free axis with indices shared by each GpSimd core's 16 partitions.

    Core c (partitions 16c..16c+15) flattens its slice of ``index`` partition-first (column-major) into
    ``idx``; for every partition p of the core, ``dst[p, j, e] = src_buffer[p].flatten()[idx[j] + e]`` for the
    first ``num_valid_indices`` indices and ``e < num_elem_per_idx``. Indices are uint16 element offsets."""
    ctx = current()
    api = "local_gather"
    s = tile_arg(src_buffer, api, "src_buffer", ("sbuf",))
    ix = tile_arg(index, api, "index", ("sbuf",))
    if ix.tensor.dtype_name != "uint16":
        raise KernelError("err_unsupported_dtype", f"index of '{api}' must be uint16, got {ix.tensor.dtype_name}",
                          "allocate the index tile as nl.uint16")
    P = s.shape[0]
    if ix.shape[0] != P or P % _GPSIMD_GROUP:
        raise KernelError("err_num_partition_mismatch",
                          f"'{api}' needs src_buffer and index on the same partitions, a multiple of "
                          f"{_GPSIMD_GROUP}; got src_buffer{fmt_shape(s.shape)}, index{fmt_shape(ix.shape)}",
                          f"use {_GPSIMD_GROUP}, 32, ..., 128 partitions for both")
    if num_elem_per_idx not in (1, 2, 4, 8, 16, 32):
        raise KernelError("err_invalid_arguments", f"num_elem_per_idx={num_elem_per_idx} of '{api}' must be one of "
                          "1, 2, 4, 8, 16, 32", "gather 1..32 (a power of two) contiguous elements per index")
    per_core = _GPSIMD_GROUP * free_size(ix.shape)
    nvalid = per_core if num_valid_indices is None else int(num_valid_indices)
    if not 0 < nvalid <= per_core:
        raise KernelError("err_invalid_arguments", f"num_valid_indices={nvalid} of '{api}' must be in 1..{per_core} "
                          "(the indices in one core's 16-partition index slice)", "lower num_valid_indices")
    if nvalid > 4096:
        raise KernelError("err_size_of_dimension_exceed_arch_limit",
                          f"'{api}' gathers {nvalid} indices per GpSimd core; the limit is 4096",
                          "split the gather into several local_gather calls")
    d, out_t = dst_or_new(dst, (P, nvalid, num_elem_per_idx), s.tensor.dtype_name, api, ("sbuf",))
    if d.tensor.dtype_name != s.tensor.dtype_name:
        raise KernelError("err_dtype_mismatch", f"dst dtype {d.tensor.dtype_name} of '{api}' must equal src_buffer "
                          f"dtype {s.tensor.dtype_name}", "local_gather does not cast: allocate dst like src_buffer")
    if d.shape[0] != P or free_size(d.shape) != nvalid * num_elem_per_idx:
        raise KernelError("err_shape_mismatch",
                          f"dst{fmt_shape(d.shape)} of '{api}' must be [{P}, {nvalid} * {num_elem_per_idx}] elements",
                          f"allocate dst as ({P}, {nvalid}, {num_elem_per_idx})")
    F = free_size(s.shape)
    if ctx.numerics:
        src = np.asarray(read(s, raw=True)).reshape(P, F)
        idx_all = np.asarray(read(ix, raw=True)).reshape(P, -1).astype(np.int64)
        out = np.empty((P, nvalid, num_elem_per_idx), dtype=src.dtype)
        for c in range(P // _GPSIMD_GROUP):
            rows = slice(c * _GPSIMD_GROUP, (c + 1) * _GPSIMD_GROUP)
            idx = idx_all[rows].flatten(order="F")[:nvalid]
            if idx.min() < 0 or idx.max() + num_elem_per_idx > F:
                raise KernelError("err_index_out_of_bounds",
                                  f"'{api}' core {c}: index {int(idx.max())} + {num_elem_per_idx} elements passes the "
                                  f"{F} elements per partition of src_buffer (hardware behaviour is undefined)",
                                  "keep every index below elements_per_partition - num_elem_per_idx")
            cols = idx[:, None] + np.arange(num_elem_per_idx)[None, :]
            out[rows] = src[rows][:, cols]
        write(d, out.reshape(d.shape))
    ctx.emit(api, "gpsimd", (s, ix), (d,), {"num_elem_per_idx": num_elem_per_idx}, 0, 0,
             nvalid * num_elem_per_idx, P)
    return done(ctx, dst, out_t)


def nc_stream_shuffle(dst, src, shuffle_mask, name=None):
    """Cross-partition move inside each 32-partition quadrant: output partition i of a quadrant copies input
    partition ``shuffle_mask[i]`` of the same quadrant (255 leaves it unchanged). Vector Engine."""
    ctx = current()
    api = "nc_stream_shuffle"
    s = tile_arg(src, api, "src")
    d = tile_arg(dst, api, "dst")
    mask = list(shuffle_mask) if isinstance(shuffle_mask, (list, tuple)) else None
    if mask is None or len(mask) != _QUADRANT or not all(isinstance(m, (int, np.integer)) for m in mask):
        raise KernelError("err_invalid_arguments", f"shuffle_mask of '{api}' must be a list of {_QUADRANT} ints",
                          "pass e.g. [(i + 1) % 32 for i in range(32)] (255 = keep the destination partition)")
    if d.tensor.dtype_name != s.tensor.dtype_name:
        raise KernelError("err_dtype_mismatch", f"'{api}' dst dtype {d.tensor.dtype_name} must equal src dtype "
                          f"{s.tensor.dtype_name}", "allocate dst with src's dtype")
    if free_size(d.shape) != free_size(s.shape):
        raise KernelError("err_shape_mismatch", f"'{api}' dst{fmt_shape(d.shape)} and src{fmt_shape(s.shape)} must "
                          "have the same number of elements per partition", "allocate dst like src")
    Ps, Pd = s.shape[0], d.shape[0]
    active = -(-max(Ps, Pd) // _QUADRANT) * _QUADRANT
    allowed = {32: (0, 32, 64, 96), 64: (0, 64), 96: (0,), 128: (0,)}[active]
    for v, arg in ((s, "src"), (d, "dst")):
        st = _pstart(ctx, v)
        if st not in allowed:
            raise KernelError("err_shuffle_start_partition",
                              f"'{api}' {arg} starts at partition {st}; with {active} active partitions the start "
                              f"must be one of {allowed}", "align the tiles to a quadrant boundary the rule allows")
    for i, m in enumerate(mask):
        if m != 255 and not 0 <= m < _QUADRANT:
            raise KernelError("err_invalid_arguments", f"shuffle_mask[{i}]={m} of '{api}' is not a partition of the "
                              "quadrant (0..31) or 255", "use 0..31, or 255 to keep the destination partition")
    if ctx.numerics:
        x = np.asarray(read(s, raw=True)).reshape(Ps, -1)
        out = np.zeros((Pd, x.shape[1]), dtype=x.dtype)
        keep = np.zeros((Pd, x.shape[1]), dtype=bool)    # partitions with mask 255 stay unmodified
        for p in range(Pd):
            q, i = divmod(p, _QUADRANT)
            m = mask[i]
            if m == 255:
                continue
            keep[p] = True
            sp = q * _QUADRANT + m
            if sp >= Ps:
                raise KernelError("err_index_out_of_bounds",
                                  f"'{api}' output partition {p} reads src partition {sp}, but src has {Ps}",
                                  "point the mask at partitions src holds")
            out[p] = x[sp]
        write(d, out.reshape(d.shape), keep.reshape(d.shape))
    n = free_size(d.shape)
    ctx.emit(api, "vector", (s,), (d,), {}, 0, 0, n, Pd)
    finish(ctx, None)
    return dst


_PRED_DTYPES = ("uint8", "uint16", "uint32", "bool")   # nl.bool_ is stored as uint8 (nki.api.shared)


def tensor_copy_predicated(dst, src, predicate, reverse_pred=False, name=None):
    """``dst = src where predicate (!= 0) else dst`` (``reverse_pred`` flips it); ``src`` a tile or a number.
    Vector Engine; predicate uint8/16/32; not both src and predicate in PSUM."""
    ctx = current()
    api = "tensor_copy_predicated"
    d = tile_arg(dst, api, "dst")
    pr = tile_arg(predicate, api, "predicate")
    if pr.tensor.dtype_name not in _PRED_DTYPES:
        raise KernelError("err_unsupported_dtype", f"predicate of '{api}' must be uint8/uint16/uint32 (or bool_), got "
                          f"{pr.tensor.dtype_name}", "build the predicate as an nl.uint8 tile (e.g. a comparison "
                          "written with dtype=nl.uint8)")
    _same_elems(d, pr, api, "dst", "predicate")
    reads = [pr]
    if is_tile(src):
        s = tile_arg(src, api, "src")
        _same_elems(d, s, api, "dst", "src")
        if s.tensor.dtype_name != d.tensor.dtype_name:
            raise KernelError("err_dtype_mismatch", f"'{api}' src dtype {s.tensor.dtype_name} must equal dst dtype "
                              f"{d.tensor.dtype_name}", "cast src first (nisa.tensor_copy) or allocate dst like src")
        if s.tensor.buffer == "psum" and pr.tensor.buffer == "psum":
            raise KernelError("err_unsupported_memory", f"'{api}' cannot read both src and predicate from PSUM",
                              "copy one of them to SBUF first")
        reads.insert(0, s)
    elif not isinstance(src, (int, float, np.integer, np.floating)):
        raise KernelError("err_operand_type", f"src of '{api}' must be a tile or a number, got {type(src).__name__}",
                          "pass a tile or a Python number")
    else:
        s = None
    if ctx.numerics:
        P = d.shape[0]
        p = np.asarray(read(pr, raw=True)).reshape(P, -1) != 0
        if reverse_pred:
            p = ~p
        new = np.asarray(read(s, raw=True)).reshape(P, -1) if s is not None else \
            dt.cast(np.full(p.shape, src, dtype=np.float32), d.tensor.dtype_name)
        write(d, new.reshape(d.shape), p.reshape(d.shape))     # where the predicate is false dst is unmodified
    n = free_size(d.shape)
    ctx.emit(api, "vector", reads, (d,), {"reverse_pred": bool(reverse_pred)}, 0, 0, n, d.shape[0])
    finish(ctx, None)
    return dst


_CMP = ("equal", "less", "less_equal", "greater", "greater_equal")


def _reduce_out(ctx, reduce_res, acc, P: int, api: str, writes: list):
    if reduce_res is None:
        return
    rv = tile_arg(reduce_res, api, "reduce_res")
    if tuple(rv.shape) != (P, 1):
        raise KernelError("err_shape_mismatch", f"reduce_res of '{api}' must be [{P}, 1], got {fmt_shape(rv.shape)}",
                          f"allocate it as nl.ndarray(({P}, 1), nl.float32)")
    if not dt.is_float(rv.tensor.dtype_name):
        raise KernelError("err_unsupported_dtype", f"reduce_res of '{api}' must be a float type, got "
                          f"{rv.tensor.dtype_name}", "use an nl.float32 reduce_res")
    if ctx.numerics and acc is not None:
        write(rv, acc.reshape(P, 1).astype(np.float32))
    writes.append(rv)


def range_select(dst=None, on_true_tile=None, comp_op0=None, comp_op1=None, bound0=None, bound1=None,
                 reduce_cmd=_rc.reset_reduce, reduce_res=None, reduce_op=np.maximum, range_start=0,
                 on_false_value=FP32_MIN, name=None, dtype=None):
    """Keep ``on_true_tile[p, i]`` where ``comp_op0(range_start + i, bound0[p])`` and ``comp_op1(range_start + i,
    bound1[p])`` (fp32 compares), else ``on_false_value`` (must be FP32_MIN); max-reduce into the Vector
    accumulator (``reduce_res`` [P, 1] receives it). NeuronCore-v3+."""
    ctx = current()
    api = "range_select"
    if int(str(ctx.limits.neuroncore_version).split("v")[-1]) < 3:
        raise KernelError("err_unsupported_on_target", f"'{api}' needs NeuronCore-v3+; {ctx.target} is "
                          f"{ctx.limits.neuroncore_version}", "target trn2 or trn3")
    v = tile_arg(on_true_tile, api, "on_true_tile")
    d, out_t = dst_or_new(dst, v.shape, v.tensor.dtype_name if dtype is None else dt.dtype_name(dtype), api)
    _same_elems(d, v, api, "dst", "on_true_tile")
    if not dt.is_float(v.tensor.dtype_name):
        raise KernelError("err_unsupported_dtype", f"on_true_tile of '{api}' must be a float type, got "
                          f"{v.tensor.dtype_name}", "cast the tile to nl.float32 / bfloat16 first")
    c0, c1 = op_name(comp_op0), op_name(comp_op1)
    for c, arg in ((c0, "comp_op0"), (c1, "comp_op1")):
        if c not in _CMP:
            raise KernelError("err_unsupported_op", f"{arg}={c} of '{api}' is not a comparison",
                              "use nl.equal, nl.less, nl.less_equal, nl.greater or nl.greater_equal")
    if op_name(reduce_op, "reduce") != "maximum":
        raise KernelError("err_unsupported_op", f"reduce_op of '{api}' must be nl.maximum", "pass reduce_op=nl.maximum")
    if isinstance(on_false_value, bool) or not isinstance(on_false_value, (int, float, np.integer, np.floating)):
        raise KernelError("err_invalid_on_false_value",
                          f"on_false_value of '{api}' must be a number, got {type(on_false_value).__name__}",
                          "pass on_false_value=-3.4028235e+38 (np.finfo(np.float32).min)")
    if float(on_false_value) != FP32_MIN:
        raise KernelError("err_invalid_on_false_value",
                          f"on_false_value={on_false_value} of '{api}': the hardware fills with FP32_MIN only",
                          "pass on_false_value=-3.4028235e+38 (np.finfo(np.float32).min), or select with "
                          "nisa.select_reduce for another fill value")
    if not isinstance(range_start, (int, np.integer)):
        raise KernelError("err_invalid_arguments", f"range_start of '{api}' must be a compile-time int",
                          "pass a Python int")
    cmd = _accum.check_cmd(reduce_cmd, api)
    if cmd == _rc.load_reduce:
        raise KernelError("err_invalid_arguments", f"reduce_cmd=load_reduce of '{api}': load_reduce loads a value into "
                          "the accumulator, and range_select has no operand that supplies one",
                          "start with reduce_cmd=reset_reduce and continue with reduce_cmd=reduce")
    P, n = v.shape[0], free_size(v.shape)
    if range_start + n > 2 ** 24:
        raise KernelError("err_index_range", f"'{api}' indices up to {range_start + n} pass 2^24 (exact in fp32)",
                          "keep range_start + free size below 16777216")
    reads = [v]
    bounds = []
    for b, arg in ((bound0, "bound0"), (bound1, "bound1")):
        bv = tile_arg(b, api, arg)
        if bv.shape[0] != P or free_size(bv.shape) != 1:
            raise KernelError("err_shape_mismatch", f"{arg} of '{api}' must hold one value per partition [{P}, 1], "
                              f"got {fmt_shape(bv.shape)}", f"pass a [{P}, 1] float32 tile")
        if bv.tensor.dtype_name != "float32":
            raise KernelError("err_unsupported_dtype", f"{arg} of '{api}' must be float32, got {bv.tensor.dtype_name}",
                              "keep the bounds in an nl.float32 tile")
        reads.append(bv)
        bounds.append(bv)
    acc = _accum.start(ctx, "vector", cmd if cmd != _rc.idle else _rc.idle, "maximum", P, api)
    res = None
    if ctx.numerics:
        x = read(v).reshape(P, n)
        i = np.float32(range_start) + np.arange(n, dtype=np.float32)[None, :]
        m = ALU[c0](i, read(bounds[0]).reshape(P, 1)).astype(bool) & \
            ALU[c1](i, read(bounds[1]).reshape(P, 1)).astype(bool)
        res = np.where(m, x, np.float32(FP32_MIN)).astype(np.float32)
        write(d, res.reshape(d.shape))
        if acc is not None and cmd in (_rc.reduce, _rc.reset_reduce, _rc.load_reduce):
            acc = np.maximum(acc, res.max(axis=1))
    writes = [d]
    if cmd == _rc.idle:
        _accum.invalidate(ctx, "vector")
        if reduce_res is not None and ctx.numerics:
            acc = res.max(axis=1)
    else:
        _accum.save(ctx, "vector", acc if ctx.numerics else None)
    _reduce_out(ctx, reduce_res, acc, P, api, writes)
    ctx.emit(api, "vector", reads, writes, {"comp_op0": c0, "comp_op1": c1, "reduce_cmd": cmd}, 3 * P * n, 0, n, P)
    return done(ctx, dst, out_t)


def select_reduce(dst=None, predicate=None, on_true=None, on_false=None, reduce_res=None, reduce_cmd=_rc.idle,
                  reduce_op=np.maximum, reverse_pred=False, name=None, dtype=None):
    """``dst = on_true where predicate else on_false`` (number or [P, 1] tile), with an optional max reduction
    through the Vector accumulator into ``reduce_res`` [P, 1]. With ``reduce_cmd=idle`` and a ``reduce_res``
    trnsim reduces this instruction's result alone."""
    ctx = current()
    api = "select_reduce"
    t = tile_arg(on_true, api, "on_true")
    pr = tile_arg(predicate, api, "predicate")
    d, out_t = dst_or_new(dst, t.shape, t.tensor.dtype_name if dtype is None else dt.dtype_name(dtype), api)
    _same_elems(d, t, api, "dst", "on_true")
    _same_elems(pr, t, api, "predicate", "on_true")
    if t.tensor.dtype_name in ("tfloat32", "int32", "uint32"):
        raise KernelError("err_unsupported_dtype", f"on_true of '{api}' cannot be {t.tensor.dtype_name}",
                          "use a float32/bfloat16/float16/fp8 or 8/16-bit integer tile")
    if pr.tensor.dtype_name not in ("int8", "uint8", "int16", "uint16", "bool"):   # bool_: stored as uint8
        raise KernelError("err_unsupported_dtype", f"predicate of '{api}' must be int8/uint8/int16/uint16, got "
                          f"{pr.tensor.dtype_name}", "build the predicate as an nl.uint8 tile")
    if t.tensor.buffer == "psum" and pr.tensor.buffer == "psum":
        raise KernelError("err_unsupported_memory", f"'{api}' cannot read both on_true and predicate from PSUM",
                          "copy one of them to SBUF first")
    if op_name(reduce_op, "reduce") != "maximum":
        raise KernelError("err_unsupported_op", f"reduce_op of '{api}' must be nl.maximum", "pass reduce_op=nl.maximum")
    cmd = _accum.check_cmd(reduce_cmd, api, (_rc.idle, _rc.reset_reduce, _rc.reduce))
    P, n = t.shape[0], free_size(t.shape)
    reads = [pr, t]
    f, f_vec = scalar_or_vector(on_false, P, api, "on_false", reads)
    acc = _accum.start(ctx, "vector", cmd, "maximum", P, api)
    res = None
    if ctx.numerics:
        p = np.asarray(read(pr, raw=True)).reshape(P, n) != 0
        if reverse_pred:
            p = ~p
        fv = read(f).reshape(P, 1) if f_vec else np.float32(f)
        res = np.where(p, read(t).reshape(P, n), fv).astype(np.float32)
        write(d, res.reshape(d.shape))
        if acc is not None:
            acc = np.maximum(acc, res.max(axis=1))
        elif reduce_res is not None:
            acc = res.max(axis=1)
    writes = [d]
    if cmd == _rc.idle:
        _accum.invalidate(ctx, "vector")
    else:
        _accum.save(ctx, "vector", acc if ctx.numerics else None)
    _reduce_out(ctx, reduce_res, acc, P, api, writes)
    ctx.emit(api, "vector", reads, writes, {"reduce_cmd": cmd, "reverse_pred": bool(reverse_pred)}, 2 * P * n, 0,
             n, P)
    return done(ctx, dst, out_t)


__all__ = ["nc_n_gather", "local_gather", "nc_stream_shuffle", "tensor_copy_predicated", "range_select",
           "select_reduce"]
