"""Pseudo-random numbers: ``rng`` (raw bits), ``rand2`` (uniform floats), ``dropout``, and the generator
state instructions ``set_rng_seed``, ``rand_set_state``, ``rand_get_state``.

Each compute lane (partition) of the Vector and GpSimd engines runs Marsaglia's XORWOW generator
(the algorithm the reference names; Marsaglia 2003, "Xorshift RNGs", J. Stat. Softw. 8(14)): a state of
six 32-bit words (x, y, z, w, v, d). GpSimd keeps one generator per lane (6 words, as ``rand_set_state``
documents); the Vector Engine keeps four per lane (24 words) and uses them round-robin along the free
axis. Seeding with ``set_rng_seed`` expands the 32-bit seed into the lanes' states with SplitMix32.

The sequences are deterministic and statistically sound, but NOT bit-exact to hardware: the hardware's
seed expansion and the order in which it hands numbers to elements are not documented. Tests and
kernels should rely on distributions and on reproducibility (same seed, same sequence), not on values.
"""
from __future__ import annotations

import numpy as np

from trnsim.nki import dtypes as dt
from trnsim.nki.context import current, read, write
from trnsim.nki.isa._result import done, dst_or_new
from trnsim.nki.isa.common import finish, free_size, is_tile, require_fp32_vector, scalar_or_vector, tile_arg
from trnsim.nki.isa.engines import NkiInstruction
from trnsim.nki.isa.enums import engine as _engine
from trnsim.nki.rules import KernelError, fmt_shape

_WORDS = {"gpsimd": 6, "vector": 24}
_INT_NAMES = ("int8", "int16", "int32", "uint8", "uint16", "uint32")
_DEFAULT_SEED = 0x2545F491    # state of a freshly started core in trnsim (the hardware's is unspecified)


def _splitmix32(seed: np.ndarray, n: int) -> np.ndarray:
    """n SplitMix32 outputs per seed (uint32), a standard way to expand one seed into generator state."""
    s = seed.astype(np.uint64) & 0xFFFFFFFF
    out = np.empty(seed.shape + (n,), dtype=np.uint32)
    for i in range(n):
        s = (s + 0x9E3779B9) & 0xFFFFFFFF
        z = s
        z = ((z ^ (z >> 16)) * 0x85EBCA6B) & 0xFFFFFFFF
        z = ((z ^ (z >> 13)) * 0xC2B2AE35) & 0xFFFFFFFF
        out[..., i] = (z ^ (z >> 16)).astype(np.uint32)
    return out


def _seeded_state(seed: int, eng: str) -> np.ndarray:
    lanes = np.arange(128, dtype=np.uint64) * np.uint64(0x632BE5AB) + np.uint64(seed & 0xFFFFFFFF)
    return _splitmix32(lanes & 0xFFFFFFFF, _WORDS[eng])


def _states(ctx) -> dict:
    st = getattr(ctx, "_isa_rng_state", None)
    if st is None:
        st = {}
        ctx._isa_rng_state = st
    return st


def _state(ctx, eng: str) -> np.ndarray:
    st = _states(ctx)
    key = (getattr(ctx, "core", 0), eng)
    if key not in st:
        st[key] = _seeded_state(_DEFAULT_SEED + 7919 * getattr(ctx, "core", 0) + (eng == "gpsimd"), eng)
    return st[key]


def _xorwow(state: np.ndarray, P: int, n: int) -> np.ndarray:
    """n uint32 numbers for each of the first P lanes; advances ``state`` ([128, 6*g]) in place."""
    g = state.shape[1] // 6
    s = state[:P].reshape(P, g, 6).astype(np.uint32)
    x, y, z, w, v, d = (s[..., k].copy() for k in range(6))
    steps = -(-n // g)
    out = np.empty((P, steps, g), dtype=np.uint32)
    for i in range(steps):
        t = x ^ (x >> np.uint32(2))
        x, y, z, w = y, z, w, v
        v = (v ^ (v << np.uint32(4))) ^ (t ^ (t << np.uint32(1)))
        d = d + np.uint32(362437)
        out[:, i, :] = v + d
    state[:P] = np.stack([x, y, z, w, v, d], axis=-1).reshape(P, 6 * g)
    return out.reshape(P, steps * g)[:, :n]


def _engine_name(eng, api: str, allowed: tuple[str, ...]) -> str:
    name = {None: allowed[0], _engine.unknown: allowed[0]}.get(eng, eng)
    if name not in allowed:
        raise KernelError("err_unsupported_engine", f"'{api}' runs on {' or '.join(allowed)}, not {eng!r}",
                          f"pass engine=nisa.engine.{allowed[0]}")
    return name


def _need_version(api: str, minimum: int, what: str = "") -> None:
    ver = int(str(current().limits.neuroncore_version).split("v")[-1])
    if ver < minimum:
        raise KernelError("err_unsupported_on_target",
                          f"'{api}'{what} needs NeuronCore-v{minimum} or newer; {current().target} is "
                          f"NeuronCore-v{ver}", f"target a NeuronCore-v{minimum}+ device (trn2 = v3, trn3 = v4)")


def _dst(x, api: str, buffers=("sbuf", "psum")):
    v = tile_arg(x, api, "dst", buffers)
    return v


def rng(dst, engine=_engine.vector, name=None):
    """32 random bits per element of ``dst`` (integer dtype), truncated to its width (least significant bits)."""
    ctx = current()
    eng = _engine_name(engine, "rng", ("vector", "gpsimd"))
    if eng == "gpsimd":
        _need_version("rng", 3, " on GpSimd")
    d = _dst(dst, "rng", ("sbuf",) if eng == "gpsimd" else ("sbuf", "psum"))
    if d.tensor.dtype_name not in _INT_NAMES:
        raise KernelError("err_unsupported_dtype", f"rng writes integers; dst has dtype {d.tensor.dtype_name}",
                          "use an int8/16/32 or uint8/16/32 dst and scale it to floats afterwards")
    P, n = d.shape[0], free_size(d.shape)
    if ctx.numerics:
        bits = _xorwow(_state(ctx, eng), P, n)
        st = d.tensor.data.dtype
        low = bits.astype({1: np.uint8, 2: np.uint16, 4: np.uint32}[st.itemsize])   # keeps the LSBs
        write(d, low.view(st).reshape(d.shape))
    ctx.emit("rng", eng, (), (d,), {"dtype": d.tensor.dtype_name}, P * n, 0, n, P)
    finish(ctx, None)
    return dst


def rand2(dst, min, max, name=None):
    """Uniform random floats in [min, max] (fp32, cast to ``dst``'s dtype) from the Vector Engine generators.
    ``min``/``max``: numbers or [P, 1] fp32 tiles. NeuronCore-v4+."""
    ctx = current()
    _need_version("rand2", 4)
    d = _dst(dst, "rand2")
    P, n = d.shape[0], free_size(d.shape)
    reads: list = []
    lo, lo_vec = scalar_or_vector(min, P, "rand2", "min", reads)
    hi, hi_vec = scalar_or_vector(max, P, "rand2", "max", reads)
    require_fp32_vector(lo, lo_vec, "rand2", "min")
    require_fp32_vector(hi, hi_vec, "rand2", "max")
    if not lo_vec and not hi_vec and not lo < hi:
        raise KernelError("err_invalid_range", f"rand2 needs min < max, got min={lo}, max={hi}",
                          "pass a non-empty range, e.g. min=0.0, max=1.0")
    if ctx.numerics:
        a = read(lo).reshape(P, 1) if lo_vec else np.float32(lo)
        b = read(hi).reshape(P, 1) if hi_vec else np.float32(hi)
        if np.any(np.asarray(a) >= np.asarray(b)):
            raise KernelError("err_invalid_range", "rand2 needs min < max in every partition",
                              "check the min/max vectors")
        u = _xorwow(_state(ctx, "vector"), P, n).astype(np.float64) / 4294967295.0
        write(d, (a + u * (b - a)).astype(np.float32).reshape(d.shape))
    ctx.emit("rand2", "vector", reads, (d,), {}, 3 * P * n, 0, n, P)
    finish(ctx, None)
    return dst


def dropout(dst=None, data=None, prob=None, name=None):
    """``dst = data`` with each element replaced by 0 with probability ``prob`` (number or [P, 1] tile),
    drawn from the Vector Engine generators. ``dst`` must have ``data``'s dtype."""
    ctx = current()
    v = tile_arg(data, "dropout", "data")
    d, out_t = dst_or_new(dst, v.shape, v.tensor.dtype_name, "dropout")
    if d.tensor.dtype_name != v.tensor.dtype_name:
        raise KernelError("err_dtype_mismatch", f"dropout dst dtype {d.tensor.dtype_name} must equal data dtype "
                          f"{v.tensor.dtype_name}", "allocate dst with data's dtype")
    if d.shape[0] != v.shape[0] or free_size(d.shape) != free_size(v.shape):
        raise KernelError("err_shape_mismatch", f"dropout dst {fmt_shape(d.shape)} and data {fmt_shape(v.shape)} must "
                          "have the same partitions and elements per partition", "allocate dst like data")
    P, n = v.shape[0], free_size(v.shape)
    reads = [v]
    if is_tile(prob):
        pv = tile_arg(prob, "dropout", "prob")
        if not dt.is_float(v.tensor.dtype_name) and pv.tensor.dtype_name != "float32":
            raise KernelError("err_unsupported_dtype",
                              f"dropout of integer data ({v.tensor.dtype_name}) needs a float32 prob, got "
                              f"{pv.tensor.dtype_name}", "keep the probabilities in an nl.float32 tile")
    p, p_vec = scalar_or_vector(prob, P, "dropout", "prob", reads)
    if not p_vec and not 0.0 <= p <= 1.0:
        raise KernelError("err_invalid_probability", f"dropout prob={p} is outside [0, 1]",
                          "pass a drop probability between 0.0 and 1.0")
    if ctx.numerics:
        pr = read(p).reshape(P, 1) if p_vec else np.float32(p)
        u = (_xorwow(_state(ctx, "vector"), P, n).astype(np.float64) / 4294967296.0).reshape(P, n)
        keep = u >= pr
        x = read(v, raw=True).reshape(P, n)
        write(d, np.where(keep, x, np.zeros((), dtype=x.dtype)).reshape(d.shape))
    ctx.emit("dropout", "vector", reads, (d,), {}, 2 * P * n, 0, n, P)
    return done(ctx, dst, out_t)


def _seed_tile(x, api: str):
    v = tile_arg(x, api, "src_seeds")
    if v.tensor.dtype_name not in ("uint32", "int32", "float32"):
        raise KernelError("err_unsupported_dtype", f"'{api}' seeds are 32-bit values, got {v.tensor.dtype_name}",
                          "store the seed in an nl.uint32 tile")
    return v


def set_rng_seed(src_seeds, name=None) -> NkiInstruction:
    """Seed the Vector Engine generators of every lane from the 32-bit value in the [1, 1] tile ``src_seeds``."""
    ctx = current()
    v = _seed_tile(src_seeds, "set_rng_seed")
    if tuple(v.shape) != (1, 1):
        raise KernelError("err_shape_mismatch", f"set_rng_seed takes a [1, 1] seed tile, got {fmt_shape(v.shape)}",
                          "slice the seed down to seeds[0:1, 0:1]")
    if ctx.numerics:
        raw = np.asarray(read(v, raw=True)).reshape(-1)[:1]
        seed = int(raw.view(np.uint32)[0]) if raw.dtype.itemsize == 4 else int(raw[0])
        _states(ctx)[(getattr(ctx, "core", 0), "vector")] = _seeded_state(seed, "vector")
    return NkiInstruction(ctx.emit("set_rng_seed", "vector", (v,), (), {}, 0, 0, 1, 1))


def rand_set_state(src_seeds, engine=_engine.gpsimd, name=None) -> NkiInstruction:
    """Load the generator state of lane p from row p of the uint32 tile ``src_seeds`` (SBUF):
    6 words per lane on GpSimd, 24 on the Vector Engine (NeuronCore-v4+). NeuronCore-v3+."""
    ctx = current()
    eng = _engine_name(engine, "rand_set_state", ("gpsimd", "vector"))
    _need_version("rand_set_state", 4 if eng == "vector" else 3, f" on {eng}")
    v = tile_arg(src_seeds, "rand_set_state", "src_seeds", ("sbuf",))
    _check_state_tile(v, eng, "rand_set_state", "src_seeds")
    if ctx.numerics:
        P = v.shape[0]
        words = np.asarray(read(v, raw=True)).reshape(P, -1).astype(np.uint32)
        _state(ctx, eng)[:P] = words
    return NkiInstruction(ctx.emit("rand_set_state", eng, (v,), (), {}, 0, 0, free_size(v.shape), v.shape[0]))


def rand_get_state(dst, engine=_engine.gpsimd, name=None):
    """Write the generator state of lane p into row p of the uint32 tile ``dst`` (6 words on GpSimd, 24 on
    the Vector Engine). NeuronCore-v3+; PSUM only from the Vector Engine on NeuronCore-v4+."""
    ctx = current()
    eng = _engine_name(engine, "rand_get_state", ("gpsimd", "vector"))
    _need_version("rand_get_state", 4 if eng == "vector" else 3, f" on {eng}")
    d = _dst(dst, "rand_get_state", ("sbuf", "psum") if eng == "vector" else ("sbuf",))
    _check_state_tile(d, eng, "rand_get_state", "dst")
    if ctx.numerics:
        P = d.shape[0]
        write(d, _state(ctx, eng)[:P].copy().reshape(d.shape))
    ctx.emit("rand_get_state", eng, (), (d,), {}, 0, 0, free_size(d.shape), d.shape[0])
    finish(ctx, None)
    return dst


def _check_state_tile(v, eng: str, api: str, arg: str) -> None:
    if v.tensor.dtype_name != "uint32":
        raise KernelError("err_unsupported_dtype", f"'{arg}' of '{api}' must be uint32, got {v.tensor.dtype_name}",
                          "allocate it as nl.ndarray((P, n), nl.uint32, buffer=nl.sbuf)")
    if free_size(v.shape) != _WORDS[eng]:
        raise KernelError("err_shape_mismatch",
                          f"'{arg}' of '{api}' holds {free_size(v.shape)} words per lane; the XORWOW state of the "
                          f"{eng} engine is {_WORDS[eng]} words per lane", f"use a [P, {_WORDS[eng]}] uint32 tile")


__all__ = ["rng", "rand2", "dropout", "set_rng_seed", "rand_set_state", "rand_get_state"]
