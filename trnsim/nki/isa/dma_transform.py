"""DMA instructions that transform data on the way: ``dma_transpose`` (permute axes while copying into
SBUF) and ``dma_compute`` (element-wise scaled sum of several tensors computed by the DMA engines).

Both are traced like ``dma_copy`` (engine "dma", bytes and bytes per partition for the DMA cost model).
``dma_transpose`` also has the indirect form (a gather-transpose: the source is an HBM access pattern with a
``vector_offset`` of row indices, read column by column), with the reference's software-DGE limits."""
from __future__ import annotations

import math

import numpy as np

from trnsim.nki.context import as_view, current, read, write
from trnsim.nki.isa.dma import _index_reads, _oob_rows_mask, _write_selected, check_hwdge_target, check_oob_mode
from trnsim.nki.isa.common import finish, free_size
from trnsim.nki.isa.enums import dge_mode as _dge, oob_mode as _oob
from trnsim.nki.isa.ops import op_name
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.tensors import Broadcast, View

_PERMS = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}
_MAX_SRCS = 16


def _dma_view(x, api: str, arg: str, buffers=("hbm", "sbuf")):
    v = as_view(x)
    if not isinstance(v, (View, Broadcast)):
        raise KernelError("err_expected_tile", f"'{arg}' of '{api}' must be a tensor, got {type(x).__name__}",
                          "pass a kernel input or a tile (nl.ndarray); a numpy array becomes a tensor when it is "
                          "passed to the kernel as an argument")
    if isinstance(v, Broadcast):
        raise KernelError("err_unsupported_memory", f"'{arg}' of '{api}' cannot be a broadcast view",
                          "materialise it into a tile first")
    if v.tensor.buffer not in buffers:
        raise KernelError("err_unsupported_memory",
                          f"Expected operand '{arg}' of '{api}' to be in address space '{'|'.join(buffers)}', but got "
                          f"a tile in '{v.tensor.buffer}' instead.",
                          "copy PSUM results to SBUF (nisa.tensor_copy) before a DMA")
    return v


def _dma_attrs(api: str, d, s_list, nbytes: int) -> dict:
    onchip = d if d.tensor.buffer != "hbm" else next((s for s in s_list if s.tensor.buffer != "hbm"), d)
    parts = int(onchip.shape[0]) if onchip.shape else 1
    return {"api": api, "partitions": parts, "bytes_per_partition": nbytes // max(1, parts),
            "src": s_list[0].tensor.buffer, "dst": d.tensor.buffer}


def dma_transpose(dst, src, axes=None, priority=None, dge_mode=_dge.unknown, oob_mode=_oob.error, name=None):
    """``dst = src.transpose(axes)`` by DMA into SBUF. ``axes`` (default by rank): (1, 0), (2, 1, 0) or
    (3, 1, 2, 0). ``dge_mode=hwdge`` adds the hardware DGE limits (2-byte dtype, ``src.shape[-1] <= 128``,
    partition-count rules). ``src`` may be runtime-indexed: ``.ap(vector_offset=...)`` is the software-DGE
    gather-transpose (its own limits); ``.ap(scalar_offset=...)`` shifts the whole read by a runtime scalar, and
    with ``oob_mode=skip`` an offset outside the source skips the transfer (NKI 0.5.0 release notes)."""
    ctx = current()
    api = "dma_transpose"
    s = _dma_view(src, api, "src")
    d = _dma_view(dst, api, "dst", ("sbuf",))
    nd = len(s.shape)
    if nd not in _PERMS:
        raise KernelError("err_exceed_max_supported_dimension", f"'{api}' transposes 2-D to 4-D tensors; src is "
                          f"{nd}-D {fmt_shape(s.shape)}", "reshape the source to 2, 3 or 4 dimensions")
    perm = _PERMS[nd] if axes is None else tuple(int(a) for a in axes)
    if perm != _PERMS[nd]:
        raise KernelError("err_unsupported_transpose_axes",
                          f"axes={perm} of '{api}' for a {nd}-D source; the DMA engines support {_PERMS[nd]}",
                          f"pass axes={_PERMS[nd]} (or transpose on the Tensor Engine: nisa.nc_transpose)")
    if d.tensor.dtype_name != s.tensor.dtype_name:
        raise KernelError("err_dtype_mismatch", f"'{api}' dst dtype {d.tensor.dtype_name} must equal src dtype "
                          f"{s.tensor.dtype_name}", "transpose first, then cast with nisa.tensor_copy")
    want = tuple(s.shape[a] for a in perm)
    if tuple(d.shape) != want:
        raise KernelError("err_shape_mismatch", f"'{api}' dst{fmt_shape(d.shape)} must be the transposed source "
                          f"shape {fmt_shape(want)} (src{fmt_shape(s.shape)}, axes {perm})",
                          f"allocate dst as {want}")
    indirect = getattr(s, "runtime_index", None)
    if indirect is not None and indirect.kind == "vector":
        _check_gather_transpose(ctx, s, indirect, dge_mode)
    elif dge_mode not in (_dge.unknown, _dge.hwdge):
        # direct, or shifted by a runtime scalar (.ap(scalar_offset=...), NKI 0.5+ with oob_mode.skip)
        raise KernelError("err_invalid_dge_mode", f"dge_mode={dge_mode!r}: a direct dma_transpose runs with "
                          "dge_mode unknown or hwdge (swdge is the indirect gather-transpose)",
                          "drop dge_mode (the compiler chooses) or pass nisa.dge_mode.hwdge")
    if oob_mode == _oob.skip and indirect is None:
        raise KernelError("err_invalid_arguments", f"oob_mode=skip of '{api}' is valid only when src uses indirect "
                          "indexing (.ap(vector_offset=...) or .ap(scalar_offset=...))", "drop oob_mode")
    if priority is not None:
        if int(str(ctx.limits.neuroncore_version).split("v")[-1]) < 4:
            raise KernelError("err_unsupported_on_target", f"DMA priority is NeuronCore-v4+ ({ctx.target} is "
                              f"{ctx.limits.neuroncore_version})", "drop priority=")
        if priority not in (0, 1, 2, 3):
            raise KernelError("err_invalid_arguments", f"priority={priority} must be 0..3 (0 highest)",
                              "pass 0, 1, 2 or 3")
    check_hwdge_target(dge_mode, api, "drop dge_mode= (the compiler picks) or target trn2 / trn3")
    if dge_mode == _dge.hwdge:
        ok0 = s.shape[0] == 16 if nd == 2 else (s.shape[0] in (1, 2, 4, 8, 16) and s.shape[0] * s.shape[-2] % 16 == 0)
        if not ok0 or s.shape[-1] > 128 or s.tensor.itemsize != 2:
            raise KernelError("err_hwdge_transpose_limits",
                              f"hardware-DGE transpose of src{fmt_shape(s.shape)} {s.tensor.dtype_name}: needs a "
                              "2-byte dtype, src.shape[-1] <= 128, and src.shape[0] == 16 (2-D) or in {1, 2, 4, 8, 16} "
                              "with src.shape[0] * src.shape[-2] a multiple of 16 (3-D/4-D)",
                              "tile the transpose into blocks that meet the limits, or leave dge_mode unset")
    keep = None
    if indirect is not None:
        rows = _oob_rows_mask(s, s, oob_mode, api)     # over src's shape: rows of the gathered source
        keep = None if rows is None else np.ascontiguousarray(np.transpose(rows, perm))
    if ctx.numerics:
        vals = np.ascontiguousarray(np.transpose(np.asarray(read(s, raw=True)), perm))
        if keep is not None:
            _write_selected(d, vals, keep)
        else:
            write(d, vals)
    nbytes = math.prod(s.shape) * s.tensor.itemsize
    attrs = _dma_attrs(api, d, [s], nbytes)
    attrs["axes"] = perm
    if indirect is not None:
        attrs["indirect"] = indirect.kind
    ctx.emit(api, "dma", (s,) + _index_reads(s), (d,), attrs, 0, nbytes, free_size(d.shape), d.shape[0])
    finish(ctx, None)
    return dst


def _check_gather_transpose(ctx, s, indirect, dge_mode) -> None:
    """The software-DGE limits of an indirect (gather) dma_transpose (nki.isa dma_transpose reference)."""
    api = "dma_transpose"
    idx = indirect.index
    fix = "see the indirect-transpose limits in the nki.isa.dma_transpose reference"
    if idx is None:
        raise KernelError("err_invalid_access_pattern", f"an indirect '{api}' gathers rows with a vector_offset "
                          "index tile", "use src.ap(pattern, vector_offset=indices, indirect_dim=0)")
    if dge_mode not in (_dge.unknown, _dge.swdge):
        raise KernelError("err_invalid_dge_mode", f"dge_mode={dge_mode!r}: the indirect dma_transpose is a "
                          "software-DGE gather-transpose", "drop dge_mode or pass nisa.dge_mode.swdge")
    if int(str(ctx.limits.neuroncore_version).split("v")[-1]) < 3:
        raise KernelError("err_unsupported_on_target", f"the indirect dma_transpose is Trn2+ ({ctx.target} is "
                          f"{ctx.limits.neuroncore_version})", "gather with dma_copy, then transpose")
    pi, ncol = idx.shape
    rules = [
        (len(s.shape) != 4 or s.shape[1] == 1 or s.shape[2] == 1, f"a 4-D src needs dim 1 or 2 of size 1, src is "
         f"{fmt_shape(s.shape)}"),
        (s.shape[-1] <= 128, f"src.shape[-1] = {s.shape[-1]} must be <= 128"),
        (s.tensor.itemsize == 2, f"src dtype {s.tensor.dtype_name} must be 2 bytes"),
        (s.shape[0] % 16 == 0, f"src.shape[0] = {s.shape[0]} must be divisible by 16"),
        (16 <= pi <= 128 and pi % 16 == 0, f"indices.shape[0] = {pi} must be in [16, 128] and divisible by 16"),
        (ncol == 1 or pi == 128, f"indices {fmt_shape(idx.shape)}: with more than one column, indices.shape[0] "
         "must be 128"),
        (idx.tensor.dtype_name == "uint32", f"indices dtype {idx.tensor.dtype_name} must be uint32"),
    ]
    for ok, what in rules:
        if not ok:
            raise KernelError("err_indirect_transpose_limits", f"indirect '{api}': {what}", fix)


def dma_compute(dst, srcs, reduce_op, scales=None, unique_indices=True, oob_mode=_oob.error, name=None):
    """``dst = srcs[0] * scales[0] + srcs[1] * scales[1] + ...`` computed by the DMA engines in fp32 and cast to
    ``dst``'s dtype. Only ``reduce_op=nl.add`` and unit scales are supported (reference); up to 16 sources,
    each with ``dst``'s element count; HBM or SBUF."""
    ctx = current()
    api = "dma_compute"
    d = _dma_view(dst, api, "dst")
    if not isinstance(srcs, (list, tuple)) or not srcs:
        raise KernelError("err_invalid_arguments", f"srcs of '{api}' must be a non-empty list of tensors",
                          "pass srcs=[a, b]")
    if len(srcs) > _MAX_SRCS:
        raise KernelError("err_invalid_arguments", f"'{api}' takes at most {_MAX_SRCS} sources, got {len(srcs)}",
                          "combine the sources in several dma_compute calls")
    ss = [_dma_view(x, api, f"srcs[{i}]") for i, x in enumerate(srcs)]
    if op_name(reduce_op) != "add":
        raise KernelError("err_unsupported_op", f"reduce_op={op_name(reduce_op)} of '{api}': the DMA engines "
                          "support only nl.add", "pass reduce_op=nl.add (use the Vector Engine for other ops)")
    if scales is not None:
        if not isinstance(scales, (list, tuple)) or \
                any(isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)) for x in scales):
            raise KernelError("err_invalid_arguments", f"scales of '{api}' must be a list of numbers, one per source, "
                              f"got {scales!r}", f"pass scales=[1.0] * {len(ss)}, or drop scales")
        if len(scales) != len(ss) or any(float(x) != 1.0 for x in scales):
            raise KernelError("err_unsupported_scale", f"scales={list(scales)} of '{api}': every scale must be 1.0 "
                              f"(one per source)", "drop scales, or scale the sources on the Vector Engine first")
    if not unique_indices:
        raise KernelError("err_invalid_arguments", f"'{api}' supports unique_indices=True only",
                          "make the scatter indices unique")
    n = math.prod(d.shape)
    for i, s in enumerate(ss):
        if math.prod(s.shape) != n:
            raise KernelError("err_shape_mismatch", f"srcs[{i}]{fmt_shape(s.shape)} of '{api}' has "
                              f"{math.prod(s.shape)} elements; dst{fmt_shape(d.shape)} has {n}",
                              "pass sources with dst's element count")
    # runtime-indexed (.ap(vector_offset=...)) sources or destination: out-of-range rows raise (oob_mode=error,
    # the default) or are skipped, leaving dst's row as it was (oob_mode=skip), as for dma_copy
    if any(getattr(v, "runtime_index", None) is not None for v in ss + [d]):
        # read-modify-write through a runtime index (scatter: dst[indices] += src; gather: dst += src[indices]):
        # "Exactly 2 source tensors", one of which is dst itself (nki.isa.dma_compute)
        if len(ss) != 2 or not any(x.tensor is d.tensor for x in ss):
            raise KernelError("err_invalid_arguments",
                              f"'{api}' with a runtime-indexed access is a read-modify-write: exactly 2 sources, one of "
                              f"them dst itself (got {len(ss)} sources"
                              + ("" if any(x.tensor is d.tensor for x in ss) else ", none of them dst") + ")",
                              "pass srcs=[dst_view, data] (scatter) or srcs=[table.ap(..., vector_offset=idx), dst] "
                              "(gather)")
    check_oob_mode(oob_mode, api)
    keep = None
    for s in ss:
        if getattr(s, "runtime_index", None) is not None or getattr(d, "runtime_index", None) is not None:
            k = _oob_rows_mask(d, s, oob_mode, api)
            if k is not None:
                keep = k if keep is None else (keep & k)
    if ctx.numerics:
        acc = np.zeros(n, dtype=np.float32)
        for s in ss:
            acc += (read(s, keep) if keep is not None and tuple(s.shape) == tuple(d.shape) else read(s)).reshape(n)
        if keep is not None:
            _write_selected(d, acc.reshape(d.shape), keep)
        else:
            write(d, acc.reshape(d.shape))
    nbytes = sum(math.prod(s.shape) * s.tensor.itemsize for s in ss)
    attrs = _dma_attrs(api, d, ss, nbytes)
    attrs["n_srcs"] = len(ss)
    ctx.emit(api, "dma", tuple(ss), (d,), attrs, n * (len(ss) - 1), nbytes, free_size(d.shape), d.shape[0])
    finish(ctx, None)
    return dst


__all__ = ["dma_transpose", "dma_compute"]
