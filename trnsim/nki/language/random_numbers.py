"""Random numbers: ``nl.random_seed``, ``nl.rand`` and ``nl.dropout``.

The simulated core keeps one random-number state per kernel run (``ctx.rng_state``, a numpy PCG64
generator). ``nl.random_seed(seed_tile)`` resets it from a [1, 1] 32-bit seed in SBUF/PSUM, so equal
seeds give equal sequences, as the reference promises; a kernel that never seeds starts from seed 0.
The hardware's generator is not published: the simulator reproduces the distribution (uniform on
[0, 1)) and the seeding contract, not the hardware's bit stream.
"""
from __future__ import annotations

import numpy as np

from trnsim.nki import dtypes as _dt
from trnsim.nki.context import current, read
from trnsim.nki.isa import common as _common
from trnsim.nki.language.buffers import sbuf
from trnsim.nki.language.creation import _alloc_args
from trnsim.nki.rules import KernelError, fmt_shape

_DEFAULT_SEED = 0


def _rng(ctx) -> np.random.Generator:
    gen = getattr(ctx, "rng_state", None)
    if gen is None:
        gen = ctx.rng_state = np.random.Generator(np.random.PCG64(_DEFAULT_SEED))
    return gen


def random_seed(seed, **kwargs) -> None:
    """Seed the random-number state from ``seed``, a [1, 1] tile in SBUF or PSUM holding a 32-bit value."""
    ctx = current()
    v = _common.tile_arg(seed, "random_seed", "seed")
    if tuple(v.shape) != (1, 1):
        raise KernelError("err_invalid_shape", f"nl.random_seed expects a [1, 1] seed tile, got {fmt_shape(v.shape)}",
                          "put the seed in nl.full((1, 1), seed, dtype=nl.int32, buffer=nl.sbuf)")
    if _dt.itemsize(v.tensor.dtype_name) != 4:
        raise KernelError("err_unsupported_dtype", f"nl.random_seed seed has dtype {v.tensor.dtype_name}; it must be "
                          "a 32-bit value", "create the seed tile as nl.int32 or nl.uint32")
    if ctx.numerics:
        raw = read(v, raw=True).reshape(())
        value = int(np.asarray(raw).view(np.uint32)) if raw.dtype.kind == "f" else int(raw) & 0xFFFFFFFF
        ctx.rng_state = np.random.Generator(np.random.PCG64(value))
    ctx.emit("set_rng_seed", "gpsimd", (v,), (), {"api": "random_seed"}, 0, 0, 1, 1)
    _common.finish(ctx, None)


def rand(shape, dtype, buffer=sbuf, name: str = "", **kwargs):
    """A new tile of ``shape`` filled with values uniform on [0, 1) (GpSimd random-number generator).

    On-chip buffers only (SBUF by default, or PSUM): HBM tensors cannot be filled by an engine."""
    ctx = current()
    shp, pd, bname, _kind, dname = _alloc_args(shape, dtype, buffer)
    if bname == "hbm":
        raise KernelError("err_hbm_tensor_with_init_value_not_supported",
                          f"nl.rand cannot create the HBM tensor {name or 'rand'}{fmt_shape(shp)}: engines fill "
                          "on-chip tiles", "generate into SBUF (buffer=nl.sbuf) and store the tile to HBM")
    t = ctx.new_tensor(shp, dname, bname, name, pdim=pd, api="rand")
    view = t.full_view()
    if ctx.numerics:
        vals = _rng(ctx).random(size=view.shape, dtype=np.float32)
        _common.store_result(ctx, view, vals, None)
    n = _common.free_size(view.shape)
    ctx.emit("rand", "gpsimd", (), (view,), {"api": "rand", "min": 0.0, "max": 1.0}, 0, 0, n, view.shape[0])
    _common.finish(ctx, None)
    return t


def dropout(x, rate, dtype=None, *, mask=None, **kwargs):
    """Zero each element of ``x`` with probability ``rate`` (a scalar in [0, 1], or a [P, 1] tile of
    per-partition rates); kept elements pass unchanged (no rescaling). Vector Engine."""
    ctx = current()
    v = _common.tile_arg(x, "dropout", "x")
    P = v.shape[0]
    reads = [v]
    if not _common.is_tile(rate):
        try:
            r = float(rate)
        except (TypeError, ValueError):
            raise KernelError("err_operand_type", f"nl.dropout rate must be a number or a [{P}, 1] tile, "
                              f"got {type(rate).__name__}", "pass e.g. rate=0.1") from None
        if not 0.0 <= r <= 1.0:
            raise KernelError("err_invalid_arguments", f"nl.dropout rate={rate} is a probability and must be in "
                              "[0, 1]", "pass the fraction of elements to drop, e.g. 0.1")
        rv, is_vec = r, False
    else:
        rv, is_vec = _common.scalar_or_vector(rate, P, "dropout", "rate", reads)
    shape = tuple(v.shape)
    dview, out_t = _common.out_tile(shape, _common.dtype_or(dtype, v.tensor.dtype_name), "sbuf", "dropout")
    res = None
    if ctx.numerics:
        u = _rng(ctx).random(size=shape, dtype=np.float32)
        thr = _common.bcast_free(read(rv), len(shape)) if is_vec else np.float32(rv)
        res = np.where(u < thr, np.float32(0), read(v)).astype(np.float32)
        _common.store_result(ctx, dview, res, None)
    n = _common.free_size(shape)
    ctx.emit("dropout", "vector", reads, (dview,), {"api": "dropout", "rate_is_vector": is_vec}, n * P, 0, n, P)
    _common.finish(ctx, out_t, res)
    return out_t


__all__ = ["random_seed", "rand", "dropout"]
