"""DMA instructions: ``dma_copy`` (HBM <-> SBUF, SBUF <-> SBUF) on the DMA queues."""
from __future__ import annotations

import math

import numpy as np

from trnsim.nki import dtypes as dt
from trnsim.nki.context import _index_arrays, as_view, check_assign_shape, current, read, write
from trnsim.nki.isa.common import finish, free_size
from trnsim.nki.isa.ops import ALU, op_name
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.tensors import Broadcast, Tensor, View, check_bounds, mask_array
from trnsim.nki.isa.common import REQUIRED, two_forms


def _squeezed(shape) -> tuple:
    """``shape`` without its size-1 dimensions (a [128, 1] column and a [128] vector are the same data)."""
    return tuple(int(x) for x in shape if x != 1)


def check_oob_mode(oob_mode, api: str) -> None:
    if oob_mode not in ("error", "skip"):
        raise KernelError("err_invalid_arguments", f"oob_mode={oob_mode!r} of '{api}'",
                          "pass nisa.oob_mode.error or nisa.oob_mode.skip")


def check_hwdge_target(dge_mode, api: str,
                       fix: str = "drop dge_mode= (the compiler picks) or use nisa.dge_mode.swdge / none") -> None:
    """err_unsupported_dge_mode: hardware DGE (``dge_mode=hwdge``) exists on NeuronCore-v3 and newer only."""
    ctx = current()
    if dge_mode == "hwdge" and ctx.limits.neuroncore_version == "NC-v2":
        raise KernelError("err_unsupported_dge_mode",
                          f"{api}(dge_mode=hwdge) on {ctx.target}: hardware DGE needs NeuronCore-v3 or newer", fix)


def _oob_rows_mask(d: View, s: View, oob_mode: str, api: str, mask: np.ndarray | None = None) -> np.ndarray | None:
    """Runtime-indexed accesses (View.runtime_index): rows whose index leaves the tensor raise with
    ``oob_mode="error"`` (the default) and are skipped with ``oob_mode="skip"`` (nki.isa dma_copy). Returns the
    rows to copy as a boolean mask over ``d.shape`` (None: copy everything). ``mask`` (Beta 1 ``mask=``, over
    ``d.shape``): a row it masks off entirely is not accessed, so its index is not checked."""
    check_oob_mode(oob_mode, api)
    off: set[int] = set()
    if mask is not None and len(d.shape) > 0:
        m2 = np.broadcast_to(mask, d.shape).reshape(d.shape[0], -1)
        off = {int(r) for r in np.flatnonzero(~m2.any(axis=1))}
    bad: set[int] = set()
    for v, arg in ((s, "src"), (d, "dst")):
        ind = getattr(v, "runtime_index", None)
        if ind is None or not ind.oob_rows:
            continue
        if oob_mode == "error" and not set(ind.oob_rows) <= off:
            t = v.tensor
            raise KernelError("err_tensor_access_out_of_bound",
                              f"'{api}' {'reads' if arg == 'src' else 'writes'} outside `{t.name or 'tensor'}`"
                              f"{fmt_shape(t.shape)} through its runtime index ({arg}): {ind.describe()} "
                              "(oob_mode=error, the default)",
                              "keep the indices inside the tensor, or pass oob_mode=nisa.oob_mode.skip to skip "
                              "those rows")
        bad.update(ind.oob_rows)
    if not bad:
        return None
    rows = np.ones(d.shape[0], dtype=bool)
    rows[sorted(r for r in bad if r < d.shape[0])] = False
    return np.broadcast_to(rows.reshape((-1,) + (1,) * (len(d.shape) - 1)), d.shape)


def _write_selected(d: View, vals: np.ndarray, keep: np.ndarray) -> None:
    """Write only the elements of ``d`` where ``keep`` is true (skipped rows of an indirect access stay as they
    were, even when a skipped row's placeholder address equals a written one)."""
    t = d.tensor
    vals = dt.cast(np.broadcast_to(vals, d.shape), t.dtype_name)
    idx = _index_arrays(d)
    sel = tuple(i[keep] if isinstance(i, np.ndarray) else i for i in idx)
    t.data[sel] = vals[keep]


def _rmw_rows_in_order(d: View, src: np.ndarray, op: str, keep: np.ndarray | None) -> None:
    """Read-modify-write through a runtime row index that names some HBM row more than once: the rows are
    applied one after another, so every update lands (an atomic RMW; a gathered read, one combine and a
    scattered write would keep only the last of the duplicates)."""
    t = d.tensor
    idx = _index_arrays(d)
    for p in range(d.shape[0]):
        if keep is not None and not keep[p].any():
            continue
        row = slice(None) if keep is None else keep[p]   # the element mask: only masked-in elements change
        sel = tuple(i[p][row] if isinstance(i, np.ndarray) else i for i in idx)
        cur = np.asarray(t.data[sel], dtype=np.float32) if dt.is_float(t.dtype_name) else np.asarray(t.data[sel])
        t.data[sel] = dt.cast(np.asarray(ALU[op](cur, src[p][row])), t.dtype_name)


def _index_reads(*views) -> tuple:
    """The index tiles behind runtime-indexed views: the DMA reads them too (a dependency in the trace)."""
    out = []
    for v in views:
        ind = getattr(v, "runtime_index", None)
        if ind is not None and ind.index is not None:
            out.append(ind.index)
    return tuple(out)


def _same_rows(ds: tuple, ss: tuple) -> bool:
    """Same partition (first) dimension and the same elements per partition: the DMA copies each row's elements in
    row-major order, so only the free dimensions are regrouped ("the total number of data elements in src must match
    that of dst", nki.isa dma_copy; the official local_gather example stores a [128, 64, 4] tile into [128, 4, 16, 4]).
    A copy that would move elements across partitions ([128, 512] into [512, 128]) stays an error."""
    return len(ds) >= 2 and len(ss) >= 2 and ds[0] == ss[0] and math.prod(ds[1:]) == math.prod(ss[1:])


def _refuse_broadcast_dst(d, what: str, fix: str) -> None:
    """A broadcast view is read-only: several of its elements share one address, so no DMA may write it."""
    if isinstance(d, Broadcast):
        raise KernelError("err_unsupported_view", f"the destination of {what} is a broadcast view "
                          f"{fmt_shape(d.shape)}: a broadcast view is read-only (several elements share one address)",
                          fix)


def _refuse_broadcast_src_beta1() -> None:
    """Beta 1 DMAs do not read broadcast views (NKI 0.6 reads them as stride-0 access patterns)."""
    raise KernelError("err_unsupported_memory", "DMA source cannot be a broadcast view",
                      "materialise the broadcast into an SBUF tile with nl.copy first")


def _dma(dst, src, mask, api: str = "dma_copy", dtype=None, oob_mode: str = "error"):
    ctx = current()
    for v, arg in ((dst, "dst"), (src, "src")):
        if not isinstance(v, (Tensor, View, Broadcast)):
            raise KernelError("err_expected_tile", f"operand '{arg}' of '{api}' must be a tensor or tile, got "
                              f"{type(v).__name__}", "pass an HBM tensor (a kernel input, or nl.ndarray(..., "
                              "buffer=nl.shared_hbm)) or an SBUF tile")
    d = as_view(dst)
    s = as_view(src)
    _refuse_broadcast_dst(d, f"'{api}'", "write to the tensor itself, or to a slice of it")
    if isinstance(s, Broadcast):
        if ctx.dialect == "beta1":
            _refuse_broadcast_src_beta1()
        s = s.as_access()   # NKI 0.6: the stride-0 access pattern a broadcast view is (nki-aps.rst)
    dt_, st_ = d.tensor, s.tensor
    dbuf, sbuf_ = dt_.buffer, st_.buffer
    if dbuf == "psum" or sbuf_ == "psum":
        for v, arg in ((d, "dst"), (s, "src")):
            if v.tensor.buffer == "psum":
                raise KernelError("err_unsupported_memory",
                                  f"Expected operand '{arg}' of '{api}' to be in address space 'hbm|sbuf', but got "
                                  "a tile in 'psum' instead.",
                                  "copy PSUM results to SBUF (nisa.tensor_copy, or nl.copy) before moving them with DMA")
    ds, ss = d.shape, s.shape
    m = mask_array(mask, ds) if mask is not None else None
    if type(s) is not View or s.adv is not None or s.ranges is not st_._full_ranges:
        check_bounds(s, m if ss == ds else None)
    if type(d) is not View or d.adv is not None or d.ranges is not dt_._full_ranges:
        check_bounds(d, m)
    if ds != ss and _squeezed(ds) != _squeezed(ss) and not _same_rows(ds, ss):
        if math.prod(ds) == math.prod(ss):
            raise KernelError("err_shape_mismatch",
                              f"'{api}' moves {fmt_shape(ss)} into {fmt_shape(ds)}: same element count, different shape "
                              "(a DMA copies element for element; it does not reshape across partitions, only the free dimensions of each partition may be regrouped)",
                              "index the destination to the source's shape, or reshape the HBM tensor explicitly "
                              "(t.reshape(...))")
        check_assign_shape(d, ss, api)
    keep = _oob_rows_mask(d, s, oob_mode, api, m) if (getattr(s, "runtime_index", None) is not None
                                                      or getattr(d, "runtime_index", None) is not None) else None
    if keep is not None:
        m = keep if m is None else (m & keep)
    if ctx.numerics:
        if m is not None and ss == ds:
            vals = read(s, m, raw=True)
        else:
            vals = read(s, raw=True)
        packed_bits = (dt.is_packed(d.tensor.dtype_name) or dt.is_packed(s.tensor.dtype_name)) and \
            d.tensor.data.dtype == vals.dtype      # MX packed words move bit for bit (uint32 <-> fp8 x4)
        if (d.tensor.dtype_name != s.tensor.dtype_name or (dtype is not None)) and not packed_bits:
            vals = vals.astype(np.float32)
        if vals.shape != ds:
            vals = vals.reshape(ds) if vals.size == math.prod(ds) else np.broadcast_to(vals, ds)
        if keep is not None:
            _write_selected(d, vals, m)
        else:
            write(d, vals, m)
    ctx.last_mask = m
    n = math.prod(ds) if m is None else int(m.sum())
    onchip = d if dbuf != "hbm" else (s if sbuf_ != "hbm" else None)
    if onchip is not None:
        parts = onchip.shape[0] if onchip.shape else 1
        if m is not None:
            parts = int(m.reshape(m.shape[0], -1).any(axis=1).sum()) if m.ndim > 0 else parts
    else:
        parts = ds[0] if ds else 1
    nbytes = n * st_.itemsize
    attrs = {"api": api, "partitions": int(parts), "bytes_per_partition": nbytes // max(1, parts),
             "src": sbuf_, "dst": dbuf}
    if dt_.dtype_name != st_.dtype_name:
        attrs["cast"] = f"{st_.dtype_name}->{dt_.dtype_name}"
    if getattr(s, "runtime_index", None) is not None or getattr(d, "runtime_index", None) is not None:
        attrs["indirect"] = (s.runtime_index or d.runtime_index).kind
        if keep is not None:
            attrs["oob_rows_skipped"] = int(ds[0] - keep.reshape(ds[0], -1)[:, 0].sum())
    ctx.emit("dma_copy", "dma", (s,) + _index_reads(s, d), (d,), attrs, 0, nbytes, free_size(ds), parts)
    finish(ctx, None)


def _dma_copy_beta1(*args, dst=None, src=None, mask=None, dst_rmw_op=None, oob_mode=None, dge_mode=None, **kw):
    """Copy ``src`` to ``dst`` with a DMA engine (casts if dtypes differ). ``dst_rmw_op=np.add`` accumulates."""
    if args:
        if len(args) == 2 and dst is None and src is None:
            dst, src = args
        else:
            raise KernelError("err_invalid_arguments", "dma_copy takes dst= and src=",
                              "call nisa.dma_copy(dst=tile, src=tensor)")
    if dst is None or src is None:
        raise KernelError("err_invalid_arguments", "dma_copy needs both dst= and src=",
                          "call nisa.dma_copy(dst=tile, src=tensor)")
    oob_mode = "error" if oob_mode is None else oob_mode
    check_hwdge_target(dge_mode, "dma_copy")
    if dst_rmw_op is not None:
        ctx = current()
        for v, arg in ((dst, "dst"), (src, "src")):
            if not isinstance(v, (Tensor, View, Broadcast)):
                raise KernelError("err_expected_tile", f"operand '{arg}' of a read-modify-write DMA must be a tensor or "
                                  f"tile, got {type(v).__name__}",
                                  "pass an HBM tensor (or an indirect access of one) as dst and an SBUF tile as the "
                                  "value")
        d, s = as_view(dst), as_view(src)
        _refuse_broadcast_dst(d, "a read-modify-write DMA", "accumulate into the tensor itself, or into a slice of it")
        if isinstance(s, Broadcast):
            _refuse_broadcast_src_beta1()
        name = op_name(dst_rmw_op)
        check_bounds(s, None)
        check_bounds(d, None)
        if _squeezed(d.shape) != _squeezed(s.shape):
            raise KernelError("err_shape_mismatch", f"dma_copy(dst_rmw_op=...) source {fmt_shape(s.shape)} and "
                              f"destination {fmt_shape(d.shape)} differ", "copy between accesses of the same shape")
        keep = _oob_rows_mask(d, s, oob_mode, "dma_copy") if (getattr(s, "runtime_index", None) is not None
                                                              or getattr(d, "runtime_index", None) is not None) \
            else check_oob_mode(oob_mode, "dma_copy")
        if ctx.numerics:
            m = mask_array(mask, tuple(d.shape)) if mask is not None else None
            if keep is not None:
                m = keep if m is None else (m & keep)
            ind = getattr(d, "runtime_index", None)
            if ind is not None and ind.values is not None and len(set(ind.values)) < len(ind.values):
                _rmw_rows_in_order(d, read(s).reshape(d.shape), name, m)
            else:
                vals = ALU[name](read(d), read(s).reshape(d.shape))
                if keep is not None:
                    _write_selected(d, vals, m)
                else:
                    write(d, vals, m)
        attrs = {"api": "dma_copy", "dst_rmw_op": name, "partitions": d.shape[0],
                 "bytes_per_partition": free_size(s.shape) * s.tensor.itemsize, "src": s.tensor.buffer,
                 "dst": d.tensor.buffer}
        if getattr(s, "runtime_index", None) is not None or getattr(d, "runtime_index", None) is not None:
            attrs["indirect"] = (s.runtime_index or d.runtime_index).kind
        ctx.emit("dma_copy", "dma", (s, d) + _index_reads(s, d), (d,), attrs, free_size(d.shape) * d.shape[0],
                 math.prod(s.shape) * s.tensor.itemsize, free_size(d.shape), d.shape[0])
        return None
    _dma(dst, src, mask, "dma_copy", oob_mode=oob_mode)
    return None


def _dma_copy_06(dst, src, priority, oob_mode, dge_mode, engine, name):
    """Copy ``src`` into ``dst`` with a DMA engine (casts if the dtypes differ; PSUM is not a DMA endpoint).
    A ``src`` or ``dst`` view with a runtime index (``.ap(vector_offset=...)``, ``vector_select``) gathers or
    scatters rows; ``oob_mode`` says what an out-of-range index does ("error" or "skip")."""
    ctx = current()
    nc = ctx.limits.neuroncore_version
    check_hwdge_target(dge_mode, "dma_copy")
    if engine not in (None, "unknown") and dge_mode != "hwdge":
        raise KernelError("err_invalid_arguments",
                          f"dma_copy(engine={engine}) names the engine that generates hardware-DGE descriptors; it is "
                          f"only valid with dge_mode=nisa.dge_mode.hwdge (got dge_mode={dge_mode})",
                          "pass dge_mode=nisa.dge_mode.hwdge with engine=, or drop engine=")
    if engine not in (None, "unknown", "sync", "scalar"):
        raise KernelError("err_invalid_arguments", f"dma_copy(engine={engine}): hardware-DGE descriptors are generated "
                          "by the Sync or the Scalar engine", "pass engine=nisa.engine.sync or nisa.engine.scalar")
    if priority is not None:
        if nc in ("NC-v2", "NC-v3"):
            raise KernelError("err_invalid_arguments",
                              f"dma_copy(priority={priority!r}) on {ctx.target}: DMA priority levels exist on "
                              "NeuronCore-v4 and newer only", "drop priority=")
        if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= 3:
            raise KernelError("err_invalid_arguments", f"dma_copy(priority={priority!r}) must be an int 0-3 (lower is "
                              "higher priority)", "pass priority=0, 1, 2 or 3")
    _dma(dst, src, None, "dma_copy", oob_mode=oob_mode)


dma_copy = two_forms("dma_copy", [("dst", REQUIRED), ("src", REQUIRED), ("priority", None), ("oob_mode", "error"),
                                  ("dge_mode", "unknown"), ("engine", "unknown"), ("name", None)],
                     _dma_copy_beta1, _dma_copy_06)


__all__ = ["dma_copy"]
