"""Tensor creation: ``ndarray``, ``zeros``, ``ones``, ``full`` and the ``*_like`` forms."""
from __future__ import annotations

import inspect
import operator

import numpy as np

from trnsim.nki import dtypes as _dt
from trnsim.nki.language._arguments import refuse_extras
from trnsim.nki.context import Placement, current
from trnsim.nki.isa import fill as _fill  # noqa: F401
from trnsim.nki.rules import KernelError, fmt_shape
from trnsim.nki.tensors import ParDim, Tensor
from trnsim.nki.language.buffers import _Buffer


# ----------------------------------------------------------------------------- creation

def _shape_pdim(shape) -> tuple[tuple[int, ...], int]:
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(shape)
    pd = [k for k, s in enumerate(shape) if isinstance(s, ParDim)]
    # operator.index: integers only (a float size such as n / 2 raises TypeError rather than being truncated)
    return tuple(operator.index(s) for s in shape), (pd[0] if pd else 0)


def _buf(buffer) -> tuple[str, str]:
    if buffer is None:
        return "sbuf", "local"
    if isinstance(buffer, Placement):
        return buffer.buffer, "local"
    if isinstance(buffer, _Buffer):
        return ("hbm", buffer.kind) if buffer.kind in ("private", "shared") else (buffer.kind, "local")
    if isinstance(buffer, str) and buffer in ("sbuf", "psum", "hbm", "shared_hbm", "private_hbm"):
        return {"sbuf": ("sbuf", "local"), "psum": ("psum", "local"), "hbm": ("hbm", "private"),
                "shared_hbm": ("hbm", "shared"), "private_hbm": ("hbm", "private")}[buffer]
    raise KernelError("err_unsupported_buffer", f"unknown buffer {buffer!r}",
                      "use nl.sbuf, nl.psum, nl.hbm, nl.private_hbm or nl.shared_hbm")


def ndarray(shape, dtype, buffer=None, name: str = "", address=None, **kwargs) -> Tensor:
    """Allocate an uninitialised tensor (SBUF by default; floats read as NaN until written).

    ``address=(partition_offset, free_offset)`` (bytes per partition) requests an explicit on-chip placement;
    like ``buffer=nki.compiler.sbuf.mod_alloc(...)`` it is recorded in the trace's ``Allocation.placement``."""
    if kwargs:
        refuse_extras('ndarray', ndarray, None, kwargs)
    t = _alloc(shape, dtype, buffer, name, "uninit", "ndarray")
    place = None
    if address is not None:
        try:
            p0, f0 = (int(a) for a in address)
        except (TypeError, ValueError):
            raise KernelError("err_invalid_allocation", f"address={address!r} is not (partition_offset, free_offset)",
                              "pass address=(partition, byte offset), e.g. address=(0, 1024)") from None
        place = {"base_partition": p0, "base_addr": f0}
    if place is not None and not current().directives.get("force_auto_alloc"):
        _check_placement(t, place)
    return t


def _check_placement(t: Tensor, place: dict) -> None:
    """Record an explicit placement of ``t`` and check it fits the target (err_allocation_out_of_range)."""
    ctx = current()
    lim = ctx.limits
    if t.buffer == "hbm":
        raise KernelError("err_invalid_allocation", f"explicit placement of HBM tensor {t.name or 'tensor'}",
                          "place SBUF or PSUM tensors only")
    p0 = place.get("base_partition", 0)
    if p0 < 0 or p0 + t.partitions > lim.pmax:
        raise KernelError("err_allocation_out_of_range",
                          f"tensor {fmt_shape(t.shape)} placed at partition {p0} spans partitions {p0}.."
                          f"{p0 + t.partitions - 1}; {ctx.target} has {lim.pmax}", "lower base_partition")
    nblocks = 1
    for k in range(t.pdim):
        nblocks *= t.shape[k]
    if t.buffer == "sbuf":
        copies = 1
        for n in place.get("num_free_tiles", ()) or ():
            copies *= n
        # num_free_tiles=(n,): the tensor's tiles (its block dims, else its first free dim) rotate over n buffers.
        # With block dims and no count (or 1) every block maps to one physical tile (the modulo rule,
        # nki.compiler.sbuf.mod_alloc: byte_addr = base + (block % n) * tile bytes)
        tiles = nblocks if t.pdim > 0 else (t.shape[1] if len(t.shape) > 1 else 1)
        if t.pdim > 0:
            physical = (t.bytes_per_partition // max(1, tiles)) * max(1, copies)
        else:
            physical = t.bytes_per_partition if copies <= 1 else (t.bytes_per_partition // max(1, tiles)) * copies
        end = place.get("base_addr", 0) + physical
        if place.get("base_addr", 0) < 0 or end > lim.sbuf_bytes_per_partition:
            raise KernelError("err_allocation_out_of_range",
                              f"SBUF tensor {t.name or 'tile'}{fmt_shape(t.shape)} placed at byte "
                              f"{place.get('base_addr', 0)} ends at byte {end} of a partition; {ctx.target} has "
                              f"{lim.sbuf_bytes_per_partition} usable bytes per partition",
                              "lower base_addr or use fewer / smaller buffers (placements are absolute byte "
                              "addresses: a Python allocator object kept between kernel calls, e.g. a module-level "
                              "one, keeps counting up from the last call; create or reset it inside the kernel)")
    else:
        banks = 1
        for n in place.get("num_bank_tiles", ()) or (1,):
            banks *= n
        b0 = place.get("base_bank", 0)
        if b0 < 0 or b0 + banks > lim.psum_banks:
            raise KernelError("err_allocation_out_of_range",
                              f"PSUM tensor {t.name or 'tile'}{fmt_shape(t.shape)} placed in banks {b0}..{b0 + banks - 1}; "
                              f"{ctx.target} has {lim.psum_banks} banks", "lower base_bank or num_bank_tiles")
    ctx.placements[t.alloc_id] = place


_ALLOC_ARGS: dict = {}   # (shape, dtype, buffer) -> (shape, pdim, buffer name, kind, dtype name), plain-int shapes


def _alloc_args(shape, dtype, buffer):
    """Normalised (shape, pdim, buffer name, kind, dtype name) of an allocation call (memoised when the shape is a
    tuple of plain ints: ``nl.par_dim`` entries compare equal to ints, so they never use the memo)."""
    key = None
    if type(shape) is tuple:
        for s in shape:
            if type(s) is not int:
                break
        else:
            key = (shape, dtype, buffer)
            try:
                hit = _ALLOC_ARGS.get(key)
            except TypeError:
                key = hit = None
            if hit is not None:
                return hit
    try:
        shape, pd = _shape_pdim(shape)
    except (TypeError, ValueError):
        raise KernelError("err_invalid_shape", f"tensor shape {shape!r} is not a tuple of integers",
                          "pass the shape as a tuple of ints, e.g. (128, 512) (use // for integer division)") from None
    if not shape or any(s < 1 for s in shape):
        raise KernelError("err_invalid_shape", f"tensor shape {fmt_shape(shape) if shape else '[]'} has a size below 1",
                          "every dimension must be >= 1")
    bname, kind = _buf(buffer)
    try:
        dname = _dt.dtype_name(dtype)
    except TypeError as exc:
        raise KernelError("err_unsupported_dtype", f"dtype {dtype!r} is not an NKI dtype ({exc})",
                          "use nl.float32, nl.bfloat16, nl.float16, nl.int32, ... (or the matching numpy dtype)") \
            from None
    res = (shape, pd, bname, kind, dname)
    if key is not None and len(_ALLOC_ARGS) < 4096:
        _ALLOC_ARGS[key] = res
    return res


def _alloc(shape, dtype, buffer, name, fill, api) -> Tensor:
    ctx = current()
    shape, pd, bname, kind, dname = _alloc_args(shape, dtype, buffer)
    if pd != 0 and ctx.dialect == "nki":
        raise KernelError("err_block_dimension_removed",
                          f"tensor {name or api}{fmt_shape(shape)} has its partition dimension at position {pd} (a block "
                          "dimension); NKI 0.2+ removed block dimensions: the partition dimension is always the first",
                          "allocate one tile per block, e.g. tiles = [nl.ndarray((128, 512), ...) for _ in range(n)]")
    if bname == "hbm":
        if fill != "uninit":
            raise KernelError("err_hbm_tensor_with_init_value_not_supported",
                              f"HBM tensor {name or api}{fmt_shape(shape)} cannot be created with an init value",
                              "create it with nl.ndarray(..., buffer=nl.shared_hbm) and store data into it")
        if kind == "shared":
            if len(ctx.scopes) > 1:
                raise KernelError("err_shared_hbm_must_in_kernel_level",
                                  "nl.shared_hbm tensors must be allocated at kernel level, not inside a loop",
                                  "move the nl.ndarray(..., buffer=nl.shared_hbm) call before the loops")
            pos = ctx.shared_pos
            ctx.shared_pos += 1
            if pos < len(ctx.shared):
                t = ctx.shared[pos]
                if t.shape != shape or t.dtype_name != dname:
                    raise KernelError("err_spmd_shared_mismatch",
                                      f"SPMD instances allocate different shared_hbm tensors ({fmt_shape(t.shape)} "
                                      f"{t.dtype_name} vs {fmt_shape(shape)} {dname})",
                                      "every program instance must allocate the same shared outputs")
                return t
        t = Tensor(ctx, shape, dname, "hbm", name, kind="shared" if kind == "shared" else "private")
        ctx.charge_hbm(name, shape, dname, t.bytes_per_partition)
        t.depth = len(ctx.loops)
        t.alloc_id = ctx.new_alloc(name, "hbm", shape, dname, t.bytes_per_partition, 1, kind == "shared")
        if ctx.numerics:
            t.data = np.full(shape, np.nan if _dt.is_float(dname) else 0, dtype=_dt.storage_dtype(dname))
        if kind == "shared":
            ctx.shared.append(t)
        return t
    if fill != "uninit":
        fill = _fill.fill_value(fill, dname, shape, api)
    copies = None
    if isinstance(buffer, Placement) and ctx.directives.get("force_auto_alloc"):
        buffer = buffer.buffer   # Beta 1 @nki.compiler.force_auto_alloc: direct allocations become automatic
    if isinstance(buffer, Placement) and "alloc_func" in buffer.fields:
        buffer = _resolve_alloc_func(buffer, shape, pd, dname, name or api)
    if isinstance(buffer, Placement):
        copies = 1
        for c in buffer.fields.get("num_bank_tiles" if bname == "psum" else "num_free_tiles", ()) or ():
            copies *= c
    t = ctx.new_tensor(shape, dname, bname, name, pdim=pd, fill=fill, api=api, copies=copies)
    if isinstance(buffer, Placement):
        _check_placement(t, dict(buffer.fields))
    if fill != "uninit" and bname == "sbuf":
        _fill._memset_into(t.full_view(), float(fill))
    return t


def _resolve_alloc_func(place: Placement, shape: tuple, pd: int, dname: str, what: str) -> Placement:
    """The placement a Beta 1 allocation callback (``ncc.sbuf.alloc(func)`` / ``ncc.psum.alloc(func)``) asks for.

    The callback gets each block's index (a tuple over the block dimensions, ``()`` without any), the block's
    partition count and its bytes per partition, and returns ``(partition, byte address)`` for SBUF or
    ``(bank, partition, byte address)`` for PSUM. The blocks' lowest partition, address and bank become the base of
    the placement; the number of distinct addresses (SBUF) or banks (PSUM) the blocks rotate over becomes
    ``num_free_tiles`` / ``num_bank_tiles``."""
    func = place.fields["alloc_func"]
    blocks = shape[:pd]
    nblocks = 1
    for b in blocks:
        nblocks *= b
    if nblocks > 4096:
        raise KernelError("err_invalid_allocation", f"{what}{fmt_shape(shape)} has {nblocks} blocks; an allocation "
                          "callback is evaluated once per block (at most 4096 here)",
                          "use fewer blocks, or ncc.sbuf.mod_alloc(...) / ncc.psum.mod_alloc(...)")
    pdim_size = shape[pd]
    fdim_bytes = _dt.itemsize(dname)
    for s_ in shape[pd + 1:]:
        fdim_bytes *= s_
    want = 3 if place.buffer == "psum" else 2
    # the reference names the callback's parameters idx, pdim_size and fdim_size: a callback with those names is
    # called by keyword (so functools.partial may bind a leading parameter of its own), any other positionally
    try:
        inspect.signature(func).bind(idx=(), pdim_size=0, fdim_size=0)
        by_name = True
    except (TypeError, ValueError):
        by_name = False
    spots = []
    for idx in np.ndindex(*blocks) if blocks else [()]:
        try:
            key = tuple(int(i) for i in idx)
            got = tuple(int(x) for x in (func(idx=key, pdim_size=pdim_size, fdim_size=fdim_bytes) if by_name else
                                         func(key, pdim_size, fdim_bytes)))
        except KernelError:
            raise
        except Exception as exc:
            raise KernelError("err_invalid_allocation", f"the allocation callback of {what}{fmt_shape(shape)} failed "
                              f"for block {tuple(idx)}: {type(exc).__name__}: {exc}",
                              "the callback takes (block index tuple, partitions, bytes per partition) and returns "
                              "(partition, address) for SBUF, (bank, partition, address) for PSUM") from None
        if len(got) != want:
            raise KernelError("err_invalid_allocation", f"the allocation callback of {what}{fmt_shape(shape)} "
                              f"returned {got} for block {tuple(idx)}; a {place.buffer} callback returns {want} "
                              "integers", "return (partition, address) for SBUF, (bank, partition, address) for PSUM")
        spots.append(got)
    if place.buffer == "psum":
        banks = sorted({g[0] for g in spots})
        return Placement("psum", base_bank=banks[0], base_partition=min(g[1] for g in spots),
                         base_addr=min(g[2] for g in spots), num_bank_tiles=(len(banks),) if len(banks) > 1 else ())
    addrs = sorted({g[1] for g in spots})
    return Placement("sbuf", base_partition=min(g[0] for g in spots), base_addr=addrs[0],
                     num_free_tiles=(len(addrs),) if len(addrs) > 1 else ())


def zeros(shape, dtype, buffer=None, name: str = "", **kwargs) -> Tensor:
    """Allocate a zero-filled tensor (SBUF memset; a PSUM accumulator's zero fill is folded into its
    first matmul, as the compiler does, and records no instruction)."""
    if kwargs:
        refuse_extras('zeros', zeros, None, kwargs)
    return _alloc(shape, dtype, buffer, name, 0.0, "zeros")


def ones(shape, dtype, buffer=None, name: str = "", **kwargs) -> Tensor:
    if kwargs:
        refuse_extras('ones', ones, None, kwargs)
    return _alloc(shape, dtype, buffer, name, 1.0, "ones")


def full(shape, fill_value, dtype, buffer=None, name: str = "", **kwargs) -> Tensor:
    if kwargs:
        refuse_extras('full', full, None, kwargs)
    return _alloc(shape, dtype, buffer, name, fill_value, "full")


def zeros_like(x, dtype=None, buffer=None, name: str = "", **kwargs) -> Tensor:
    if kwargs:
        refuse_extras('zeros_like', zeros_like, None, kwargs)
    return zeros(x.shape, dtype or x.dtype, buffer=buffer, name=name)


def empty_like(x, dtype=None, buffer=None, name: str = "", **kwargs) -> Tensor:
    if kwargs:
        refuse_extras('empty_like', empty_like, None, kwargs)
    if buffer is None:   # "default: same as x" (nki.language.empty_like; zeros_like & co. default to sbuf)
        t = x if isinstance(x, Tensor) else getattr(x, "tensor", None)
        if t is not None:
            buffer = t.buffer if t.buffer != "hbm" else \
                ("shared_hbm" if t.kind in ("input", "output", "shared") else "private_hbm" if t.kind == "private"
                 else "hbm")
    return ndarray(x.shape, dtype or x.dtype, buffer=buffer, name=name)


def ones_like(x, dtype=None, buffer=None, name: str = "", **kwargs) -> Tensor:
    if kwargs:
        refuse_extras('ones_like', ones_like, None, kwargs)
    return ones(x.shape, dtype or x.dtype, buffer=buffer, name=name)


def full_like(x, fill_value, dtype=None, buffer=None, name: str = "", **kwargs) -> Tensor:
    if kwargs:
        refuse_extras('full_like', full_like, None, kwargs)
    return full(x.shape, fill_value, dtype or x.dtype, buffer=buffer, name=name)


__all__ = ["ndarray", "zeros", "ones", "full", "zeros_like", "empty_like", "ones_like", "full_like"]
