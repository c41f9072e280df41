"""Tensor Engine matrix multiply: ``nc_matmul`` (stationary.T @ moving into PSUM, fp32 accumulation)."""
from __future__ import annotations

import numpy as np

from trnsim.nki.context import as_view, current, read, write
from trnsim.nki.isa.common import check_accumulate, check_explicit_accumulate, finish, out_tile, result_of, tile_arg
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.tensors import Broadcast, mask_array
from trnsim.nki.isa.common import REQUIRED, two_forms


_WIDE = frozenset({"float32", "tfloat32"})


_MM_DTYPES = {"float8_e4m3", "float8_e4m3fn", "float8_e5m2", "bfloat16", "float16", "tfloat32", "float32"}


_CHECKED: set = set()   # (operand types, shapes, dtypes, target, dst) combinations that passed _check_matmul


def _moving_fmax(lim, d) -> int:
    """Largest moving free size: gemm_moving_fmax, doubled for a bfloat16 PSUM destination on NeuronCore-v4+, where
    the limit is the whole PSUM (8 banks) counted in dst elements: 4096 fp32 or 8192 bf16 (nki.isa.nc_matmul)."""
    if d is not None and d.tensor.dtype_name == "bfloat16" and lim.neuroncore_version not in ("NC-v2", "NC-v3"):
        return 2 * lim.gemm_moving_fmax
    return lim.gemm_moving_fmax


def _check_matmul(s, m, d, lim, api: str, transpose_mode: bool = False) -> None:
    """The nc_matmul rules on operand shapes, dtypes and the destination (raise KernelError)."""
    if isinstance(s, Broadcast) or isinstance(m, Broadcast):
        raise KernelError("err_unsupported_memory", f"'{api}' operands cannot be broadcast views",
                          "materialise the tile first")
    if len(s.shape) != 2 or len(m.shape) != 2:
        raise KernelError("err_exceed_max_supported_dimension",
                          f"'{api}' takes 2-D tiles: stationary{fmt_shape(s.shape)}, moving{fmt_shape(m.shape)}",
                          "index the tiles down to [K, M] and [K, N]")
    K, M = s.shape
    K2, N = m.shape
    if K != K2:
        raise KernelError("err_num_partition_mismatch",
                          f"number of partitions (dimension 0 size of a tile) mismatch in parameters "
                          f"(stationary{fmt_shape(s.shape)}, moving{fmt_shape(m.shape)}) of '{api}': the contraction "
                          "dimension K must be the partition dimension of both operands [LC#1]",
                          "put K on the partition axis of both tiles (pass x transposed: nl.matmul(x_T, y, "
                          "transpose_x=True) or nisa.nc_matmul(x_T, y))")
    if M > lim.gemm_stationary_fmax:
        raise KernelError("err_size_of_dimension_exceed_arch_limit",
                          f"size of dimension 1 in 'stationary{fmt_shape(s.shape)}' of '{api}' exceed architecture "
                          f"limitation of {lim.gemm_stationary_fmax}. [TC#3 gemm_stationary_fmax on {lim.target}]",
                          f"tile M into chunks of {lim.gemm_stationary_fmax} (nl.tile_size.gemm_stationary_fmax)")
    n_max = _moving_fmax(lim, d)
    if N > n_max:
        raise KernelError("err_size_of_dimension_exceed_arch_limit",
                          f"size of dimension 1 in 'moving{fmt_shape(m.shape)}' of '{api}' exceed architecture "
                          f"limitation of {n_max}. [TC#3 gemm_moving_fmax on {lim.target}"
                          f"{', bfloat16 dst' if n_max != lim.gemm_moving_fmax else ''}]",
                          f"tile N into chunks of {n_max} (nl.tile_size.gemm_moving_fmax)")
    sd, md = s.tensor.dtype_name, m.tensor.dtype_name
    for d_, arg in ((sd, "stationary"), (md, "moving")):
        if d_ not in _MM_DTYPES:
            raise KernelError("err_unsupported_dtype",
                              f"operand '{arg}' of '{api}' has dtype {d_}; the Tensor Engine takes "
                              "fp8_e4m3/fp8_e5m2/bfloat16/float16/tfloat32/float32",
                              "cast the tile (nl.copy(x, dtype=nl.bfloat16)) before the matmul")
    if "float8_e4m3fn" in (sd, md):
        # "Starting NeuronCore-v4, float8_e4m3fn (OCP FP8) is also supported; float8_e4m3 (legacy) and
        # float8_e4m3fn cannot be mixed in the same matmul" (nki.isa.nc_matmul)
        if lim.neuroncore_version in ("NC-v2", "NC-v3"):
            raise KernelError("err_unsupported_dtype",
                              f"'{api}' operand dtype float8_e4m3fn (OCP FP8) needs NeuronCore-v4 (trn3); "
                              f"{lim.target} ({lim.neuroncore_version}) takes float8_e4m3 / float8_e5m2",
                              "use nl.float8_e4m3 (or nl.float8_e5m2) on this target, or target trn3")
        if {sd, md} == {"float8_e4m3", "float8_e4m3fn"}:
            raise KernelError("err_matmul_dtype_mismatch",
                              f"'{api}' mixes legacy float8_e4m3 with OCP float8_e4m3fn (stationary {sd}, moving "
                              f"{md}): the two FP8 formats cannot be mixed in one matmul",
                              "cast one operand so both are float8_e4m3fn (or both float8_e4m3)")
    if (sd in _WIDE) != (md in _WIDE):
        raise KernelError("err_matmul_dtype_mismatch",
                          f"'{api}' mixes {sd} stationary with {md} moving: if one operand is float32/tfloat32 the "
                          "other must be too",
                          "cast both operands to the same precision class (e.g. both bfloat16)")
    if d is not None:
        if d.tensor.buffer != "psum":
            raise KernelError("err_unsupported_memory",
                              f"Expected operand 'dst' of '{api}' to be in address space 'psum', but got a tile in "
                              f"'{d.tensor.buffer}' instead. (the Tensor Engine writes PSUM only)",
                              "allocate the result with nl.ndarray((M, N), nl.float32, buffer=nl.psum)")
        okd = {"float32"} if lim.neuroncore_version in ("NC-v2", "NC-v3") else {"float32", "bfloat16"}
        if transpose_mode and lim.neuroncore_version != "NC-v2" and s.tensor.dtype_name in ("bfloat16", "float16"):
            # NeuronCore-v3 transpose mode: "FP16/BF16 PSUM output for FP16/BF16 transpose" (trainium2_arch)
            okd = okd | {s.tensor.dtype_name}
        if d.tensor.dtype_name not in okd:
            raise KernelError("err_unsupported_dtype",
                              f"matmul destination dtype {d.tensor.dtype_name}: PSUM matmul results are "
                              f"{'/'.join(sorted(okd))} on {lim.target}",
                              "use an nl.float32 PSUM tile and cast when copying to SBUF")
        if tuple(d.shape) != (s.shape[1], m.shape[1]):
            raise KernelError("err_shape_mismatch",
                              f"matmul destination {fmt_shape(d.shape)} does not match stationary.T @ moving = "
                              f"[{s.shape[1]}, {m.shape[1]}]", "allocate the PSUM tile as [M, N]")


_FP8 = frozenset({"float8_e4m3", "float8_e5m2", "float8_e4m3fn"})


def _check_double_row(s, m, d, lim, api: str) -> None:
    """nc_matmul(perf_mode=double_row): NeuronCore-v3+, fp8 operands, [P, 2, M] stationary and [P, 2, N] moving
    (the contraction split between the partition dim and a first free dim of 2; nki.isa.nc_matmul)."""
    if lim.neuroncore_version == "NC-v2":
        raise KernelError("err_unsupported_perf_mode", f"'{api}' perf_mode=double_row on {lim.target}: NeuronCore-v2 "
                          "has no performance mode", "drop perf_mode (or target trn2 / trn3)")
    ok = {"float8_e4m3", "float8_e5m2"} | ({"float8_e4m3fn"} if lim.neuroncore_version != "NC-v3" else set())
    sd, md = s.tensor.dtype_name, m.tensor.dtype_name
    if sd not in ok or md not in ok or {sd, md} == {"float8_e4m3", "float8_e4m3fn"}:
        raise KernelError("err_unsupported_dtype", f"'{api}' perf_mode=double_row takes float8 operands "
                          f"({'/'.join(sorted(ok))}; legacy e4m3 and OCP e4m3fn not mixed), got {sd} and {md}",
                          "cast both operands to an fp8 format, or drop perf_mode")
    if len(s.shape) != 3 or len(m.shape) != 3 or s.shape[1] != 2 or m.shape[1] != 2:
        raise KernelError("err_shape_mismatch", f"'{api}' perf_mode=double_row splits the contraction over the "
                          f"partitions and a first free dimension of 2: stationary [K, 2, M] and moving [K, 2, N], got "
                          f"stationary{fmt_shape(s.shape)}, moving{fmt_shape(m.shape)}",
                          "reshape the tiles to [128, 2, M] and [128, 2, N]")
    if s.shape[0] != m.shape[0]:
        raise KernelError("err_num_partition_mismatch", f"'{api}' stationary{fmt_shape(s.shape)} and "
                          f"moving{fmt_shape(m.shape)} have different partition counts", "use the same K")
    n_max = _moving_fmax(lim, d)
    if s.shape[2] > lim.gemm_stationary_fmax or m.shape[2] > n_max:
        raise KernelError("err_size_of_dimension_exceed_arch_limit", f"'{api}' double_row M={s.shape[2]}, "
                          f"N={m.shape[2]} exceed {lim.gemm_stationary_fmax} / {n_max}",
                          "tile M and N")
    if d is not None:
        if d.tensor.buffer != "psum" or tuple(d.shape) != (s.shape[2], m.shape[2]):
            raise KernelError("err_shape_mismatch", f"'{api}' double_row writes a [{s.shape[2]}, {m.shape[2]}] PSUM "
                              f"tile, got {d.tensor.buffer} {fmt_shape(d.shape)}", "allocate dst as [M, N] in PSUM")


def _matmul(stationary, moving, dst=None, accumulate=None, mask=None, api: str = "nc_matmul",
            extra_attrs: dict | None = None, transpose_mode: bool = False, double_row: bool = False):
    """``transpose_mode``: nc_matmul(is_transpose=True); from NeuronCore-v3 a bit-accurate data transpose of
    ``stationary`` routed by the identity (or permutation) ``moving`` tile, NaN/Inf included."""
    ctx = current()
    lim = ctx.limits
    s = tile_arg(stationary, api, "stationary", ("sbuf",))
    m = tile_arg(moving, api, "moving", ("sbuf",))
    d = as_view(dst) if dst is not None else None
    key = (type(s), type(m), s.shape, m.shape, s.tensor.dtype_name, m.tensor.dtype_name, lim.target,
           None if d is None else (type(d), d.tensor.buffer, d.tensor.dtype_name, tuple(d.shape)), transpose_mode)
    if double_row:
        _check_double_row(s, m, d, lim, api)
        K, M, N = s.shape[0], s.shape[2], m.shape[2]
    else:
        if key not in _CHECKED:   # the shape / dtype rules depend on these only: checked once per combination
            _check_matmul(s, m, d, lim, api, transpose_mode)
            if len(_CHECKED) < 4096:
                _CHECKED.add(key)
        K, M = s.shape
        N = m.shape[1]
    sd, md = s.tensor.dtype_name, m.tensor.dtype_name
    out_dtype = "float32"
    if dst is not None:
        dview, out_t = d, None
    else:
        dview, out_t = out_tile((M, N), out_dtype, "psum", api)
    msk = mask_array(mask, (M, N)) if mask is not None else None
    ctx.last_mask = msk
    group_start = True
    reads = [s, m]
    res = None
    if ctx.numerics:
        a = read(s)
        b = read(m)
        res = None
        if transpose_mode and lim.neuroncore_version != "NC-v2":
            # bit-accurate: each output column j is the stationary row selected by moving's one 1.0 in column j
            ones = b == 1
            if bool(np.all(ones | (b == 0))) and bool(np.all(ones.sum(axis=0) == 1)):
                res = a.T[:, np.argmax(ones, axis=0)]
        if res is None:
            with np.errstate(invalid="ignore", over="ignore"):
                # double_row: the contraction runs over the partitions and the first free dim (2 rows per PE)
                res = (a[:, 0, :].T @ b[:, 0, :] + a[:, 1, :].T @ b[:, 1, :]) if double_row else a.T @ b
        if dst is not None:
            old_acc = dview.tensor.acc[dview.npkey()]
            if accumulate is None:
                acc_mask = old_acc
            else:
                acc_mask = np.full((M, N), bool(accumulate))
            group_start = not bool(np.any(acc_mask))
            dt_ = dview.tensor
            if msk is None and dview.adv is None and dt_.data.dtype == np.float32 and \
                    (group_start or bool(acc_mask.all())):
                # fast path (whole tile overwritten or accumulated): in place on the fp32 PSUM storage
                tgt = dt_.data[dview.npkey()]
                if group_start:
                    tgt[...] = res.reshape(tgt.shape)
                else:
                    tgt += res.reshape(tgt.shape)
            else:
                if not group_start:
                    old = read(dview)
                    res_w = np.where(acc_mask, old + res, res)
                else:
                    res_w = res
                write(dview, res_w, msk)
            dview.tensor.acc[dview.npkey()] = True if msk is None else (msk | old_acc)
        else:
            write(dview, res, msk)
            dview.tensor.acc[...] = True
    elif dst is not None:
        group_start = accumulate is False or (accumulate is None and not dview.tensor.mm_open)
    if not group_start and dst is not None:
        if accumulate is True:
            check_explicit_accumulate(ctx, dview.tensor, api)
        check_accumulate(ctx, dview.tensor, api)
    dview.tensor.mm_open = True
    if not group_start:
        reads.append(dview)
    attrs = {"accumulate": not group_start, "group_start": group_start, "stationary_free": M, "moving_free": N,
             "dtype": sd if sd == md else f"{sd}x{md}"}
    if extra_attrs:
        attrs.update(extra_attrs)
    # double_row: 2K-deep contraction in the time of a K-row pass (fp8 double performance mode)
    ctx.emit("nc_matmul", "tensor", reads, (dview,), attrs, 2 * K * M * N * (2 if double_row else 1), 0, N, K)
    finish(ctx, out_t, res)
    return result_of(dst, out_t, dview)


def _nc_matmul_beta1(*args, mask=None, accumulate=None, is_stationary_onezero=False, is_moving_onezero=False,
              is_transpose=False, tile_position=(), tile_size=(), perf_mode=None, name=None, **kw):
    """``stationary.T @ moving`` into PSUM (fp32). Classic: ``nc_matmul(stationary, moving)`` returns a PSUM
    tile; new: ``nc_matmul(dst, stationary, moving, accumulate=None|True|False)`` (``None``: first write to a
    PSUM location overwrites, later writes accumulate)."""
    dst = kw.pop("dst", None)
    stationary = kw.pop("stationary", None)
    moving = kw.pop("moving", None)
    if kw:
        raise KernelError("err_invalid_arguments", f"unexpected arguments {sorted(kw)} to nc_matmul",
                          "nc_matmul(stationary, moving) or nc_matmul(dst, stationary, moving)")
    pos = list(args)
    if len(pos) == 3:
        dst, stationary, moving = pos
    elif len(pos) == 2:
        if dst is not None:
            stationary, moving = pos
        else:
            stationary, moving = pos
    elif len(pos) == 1:
        if stationary is None:
            stationary = pos[0]
        else:
            dst = pos[0]
    if stationary is None or moving is None:
        raise KernelError("err_invalid_arguments", "nc_matmul needs stationary and moving tiles",
                          "nc_matmul(stationary, moving) or nc_matmul(dst, stationary, moving)")
    pm = perf_mode if perf_mode not in (None, "none") else None
    if pm not in (None, "double_row", "double_row_gen3"):
        raise KernelError("err_unsupported_perf_mode", f"nc_matmul perf_mode={perf_mode!r}",
                          "pass perf_mode='double_row_gen3' (fp8 double-row mode) or leave perf_mode unset")
    attrs = {"is_transpose": True} if is_transpose else {}
    if pm:
        attrs["perf_mode"] = "double_row"
    return _matmul(stationary, moving, dst, accumulate, mask, extra_attrs=attrs or None, double_row=pm is not None)


def _nc_matmul_06(dst, stationary, moving, is_stationary_onezero, is_moving_onezero, is_transpose, accumulate,
                  tile_position, tile_size, perf_mode, name):
    """``dst (+)= stationary.T @ moving`` in PSUM (fp32). ``accumulate=None``: the first write to a PSUM location
    overwrites, later writes accumulate; True / False force it. ``is_transpose=True`` is the Tensor Engine's
    transpose mode: still ``stationary.T @ moving`` (``moving`` an identity gives ``stationary.T``), recorded in the
    trace as ``attrs["is_transpose"]``."""
    ctx = current()
    pm = perf_mode if perf_mode not in (None, "none") else None
    if pm not in (None, "double_row"):
        raise KernelError("err_unsupported_perf_mode", f"nc_matmul perf_mode={perf_mode!r}",
                          "pass nisa.matmul_perf_mode.double_row or leave perf_mode unset")
    _check_tiling(tile_position, tile_size, stationary, pm, ctx)
    attrs = {"is_transpose": True} if is_transpose else {}
    if pm:
        attrs["perf_mode"] = pm
    return _matmul(stationary, moving, dst, accumulate, None, extra_attrs=attrs or None,
                   transpose_mode=bool(is_transpose), double_row=pm == "double_row")


def _check_tiling(tile_position, tile_size, stationary, perf_mode, ctx) -> None:
    """Tensor Engine row / column tiling mode (nki.isa.nc_matmul "Tiling mode"): both tuples or neither; tile sizes
    128 or 64 (and 32 from NeuronCore-v3); start positions multiples of the size inside the 128 x 128 array; the
    stationary tile within the chosen tile; no column tiling with double_row."""
    tp, ts = tuple(tile_position or ()), tuple(tile_size or ())
    if not tp and not ts:
        return
    if not tp or not ts:
        raise KernelError("err_invalid_arguments", "nc_matmul tile_position and tile_size must both be set to enable "
                          f"tiling mode (got tile_position={tile_position!r}, tile_size={tile_size!r})",
                          "pass both, e.g. tile_position=(64, 0), tile_size=(64, 128), or neither")
    if len(tp) != 2 or len(ts) != 2 or not all(isinstance(x, (int, np.integer)) for x in tp + ts):
        return   # affine expressions: not checkable here
    sizes = (128, 64) if ctx.limits.neuroncore_version == "NC-v2" else (128, 64, 32)
    (r0, c0), (rs, cs) = tp, ts
    for what, size, start in (("row", rs, r0), ("column", cs, c0)):
        if size not in sizes:
            raise KernelError("err_invalid_tile_size", f"nc_matmul {what} tile size {size} on {ctx.target}: "
                              f"{'/'.join(map(str, sizes))} only", f"use a {what} tile size of {sizes[0]} or {sizes[1]}")
        if start % size or start + size > 128 or start < 0:
            raise KernelError("err_invalid_tile_position", f"nc_matmul {what} start {start} with {what} size {size}: "
                              "the start must be a multiple of the size inside the 128 x 128 array",
                              f"use a start in {list(range(0, 128, size))}")
    v = as_view(stationary)
    K = v.shape[0]
    M = v.shape[-1]
    if K > rs or M > cs:
        raise KernelError("err_invalid_tile_size", f"nc_matmul stationary{fmt_shape(v.shape)} does not fit the "
                          f"({rs}, {cs}) tile: K <= row size and M <= column size", "shrink the stationary tile or "
                          "enlarge tile_size")
    if perf_mode == "double_row" and cs < 128:
        raise KernelError("err_unsupported_perf_mode", "nc_matmul perf_mode=double_row cannot be combined with "
                          "column tiling", "use a column tile size of 128, or drop perf_mode")


nc_matmul = two_forms("nc_matmul", [("dst", REQUIRED), ("stationary", REQUIRED), ("moving", REQUIRED),
                                    ("is_stationary_onezero", False), ("is_moving_onezero", False),
                                    ("is_transpose", False), ("accumulate", None), ("tile_position", ()),
                                    ("tile_size", ()), ("perf_mode", None), ("name", None)],
                      _nc_matmul_beta1, _nc_matmul_06)


__all__ = ["nc_matmul"]
