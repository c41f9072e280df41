"""Random numbers: ``nl.random_seed``, ``nl.rand`` and ``nl.dropout``, on the same generators as ``nki.isa``.

Each simulated core keeps per-lane XORWOW generators for the GpSimd and Vector engines
(:mod:`trnsim.nki.isa.random`). ``nl.rand`` draws from GpSimd's (the engine it runs on), ``nl.dropout`` from the
Vector Engine's, so mixing ``nl`` and ``nisa`` random instructions advances one shared state, as on the device.
``nl.random_seed(seed_tile)`` reseeds both engines' generators from a [1, 1] 32-bit value, so equal seeds give
equal sequences, as the reference promises; ``nisa.set_rng_seed`` reseeds the Vector Engine's only. The
hardware's bit stream is not published: the simulator reproduces the distributions and the seeding contract.
"""
from __future__ import annotations

import numpy as np

from trnsim.nki import dtypes as _dt
from trnsim.nki.language._arguments import refuse_extras
from trnsim.nki.context import current, read
from trnsim.nki.isa import common as _common
from trnsim.nki.isa.random import _seeded_state, _state, _states, _xorwow
from trnsim.nki.language.buffers import sbuf
from trnsim.nki.language.creation import _alloc_args
from trnsim.nki.rules import KernelError, fmt_shape

def _uniform(ctx, engine: str, shape: tuple) -> np.ndarray:
    """float32 uniform on [0, 1) from ``engine``'s lane generators: the top 24 bits of each 32-bit draw times
    2**-24 (exactly representable, never 1.0). Partition p draws from lane p."""
    P = shape[0] if shape else 1
    n = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    bits = _xorwow(_state(ctx, engine), P, n)
    return ((bits >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24)).reshape(shape)


def random_seed(seed, **kwargs) -> None:
    """Seed the random-number state from ``seed``, a [1, 1] tile in SBUF or PSUM holding a 32-bit value."""
    if kwargs:
        refuse_extras('random_seed', random_seed, None, kwargs)
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
        core = getattr(ctx, "core", 0)
        _states(ctx)[(core, "vector")] = _seeded_state(value, "vector")
        _states(ctx)[(core, "gpsimd")] = _seeded_state(value + 1, "gpsimd")
    ctx.emit("set_rng_seed", "gpsimd", (v,), (), {"api": "random_seed"}, 0, 0, 1, 1)
    _common.finish(ctx, None)


def rand(shape, dtype, buffer=sbuf, name: str = "", **kwargs):
    """A new tile of ``shape`` filled with values uniform on [0, 1) (GpSimd random-number generator).

    On-chip buffers only (SBUF by default, or PSUM): HBM tensors cannot be filled by an engine."""
    if kwargs:
        refuse_extras('rand', rand, None, kwargs)
    ctx = current()
    shp, pd, bname, _kind, dname = _alloc_args(shape, dtype, buffer)
    if bname == "hbm":
        raise KernelError("err_hbm_tensor_with_init_value_not_supported",
                          f"nl.rand cannot create the HBM tensor {name or 'rand'}{fmt_shape(shp)}: engines fill "
                          "on-chip tiles", "generate into SBUF (buffer=nl.sbuf) and store the tile to HBM")
    t = ctx.new_tensor(shp, dname, bname, name, pdim=pd, api="rand")
    view = t.full_view()
    if ctx.numerics:
        vals = _uniform(ctx, "gpsimd", tuple(view.shape))
        _common.store_result(ctx, view, vals, None)
    n = _common.free_size(view.shape)
    ctx.emit("rand", "gpsimd", (), (view,), {"api": "rand", "min": 0.0, "max": 1.0}, 0, 0, n, view.shape[0])
    _common.finish(ctx, None)
    return t


def dropout(x, rate, dtype=None, *, mask=None, **kwargs):
    """Zero each element of ``x`` with probability ``rate`` (a scalar in [0, 1], or a [P, 1] tile of
    per-partition rates); kept elements pass unchanged (no rescaling). Vector Engine."""
    if mask is not None or kwargs:
        refuse_extras('dropout', dropout, mask, kwargs)
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
        u = _uniform(ctx, "vector", shape)
        thr = _common.bcast_free(read(rv), len(shape)) if is_vec else np.float32(rv)
        res = np.where(u < thr, np.float32(0), read(v)).astype(np.float32)
        _common.store_result(ctx, dview, res, None)
    n = _common.free_size(shape)
    ctx.emit("dropout", "vector", reads, (dview,), {"api": "dropout", "rate_is_vector": is_vec}, n * P, 0, n, P)
    _common.finish(ctx, out_t, res)
    return out_t


__all__ = ["random_seed", "rand", "dropout"]
