"""Two-core synchronisation and exchange inside a logical NeuronCore (LNC=2, NeuronCore-v3+):
``core_barrier`` and ``sendrecv``.

The two physical cores of an LNC=2 launch run interleaved (:mod:`trnsim.nki.lnc`): a core that reaches a
``sendrecv`` posts its ``src`` and waits until the other core's matching ``sendrecv`` (same ``pipe_id``, same
position in that pipe) has posted its data; a core that reaches a ``core_barrier`` waits until the other core
reaches its barrier of the same count. Data therefore flows both ways, and writes before a barrier are seen
by the other core's reads after it. A wait that can never end is a KernelError (``err_lnc_deadlock``).
Both instructions are traced for the performance model.
"""
from __future__ import annotations

import numpy as np

from trnsim.nki.context import as_view, current, read, write
from trnsim.nki.isa.common import free_size, tile_arg
from trnsim.nki.isa.engines import NkiInstruction, dma_engine as _dma_engine
from trnsim.nki.isa.enums import engine as _engine
from trnsim.nki.rules import KernelError, fmt_shape

# largest sendrecv transfer per partition over GpSimd's internal DMA (bytes by element width; reference)
_GPSIMD_DMA_BYTES = {4: 1024, 2: 512, 1: 256}


def _state(ctx) -> dict:
    st = getattr(ctx, "_isa_lnc_sync", None)
    if st is None:
        st = {"barriers": {}, "mail": {}, "counts": {}}
        ctx._isa_lnc_sync = st
    return st


def _need_lnc2(ctx, api: str) -> None:
    if int(str(ctx.limits.neuroncore_version).split("v")[-1]) < 3:
        raise KernelError("err_unsupported_on_target", f"'{api}' needs NeuronCore-v3+ (LNC); {ctx.target} is "
                          f"{ctx.limits.neuroncore_version}", "target trn2 or trn3")
    if getattr(ctx, "lnc", 1) != 2:
        raise KernelError("err_requires_lnc2",
                          f"'{api}' synchronises the two physical cores of a logical NeuronCore, but this launch "
                          f"runs on LNC={getattr(ctx, 'lnc', 1)}", "launch the kernel as kernel[2](...) "
                          "(nki.simulate(kernel[2])(...)) so both cores run it")


def _instance(ctx) -> tuple:
    """(program instance of the LNC pair, core): instances 2i and 2i+1 along the nc axis are one pair."""
    pid = tuple(ctx.program_id)
    if not pid:
        return (), ctx.core
    ax = min(getattr(ctx, "lnc_axis", 0), len(pid) - 1)
    return pid[:ax] + (pid[ax] // 2,) + pid[ax + 1:], ctx.core


def _wait(ctx, ready, what: str) -> None:
    run = getattr(ctx, "lnc_run", None)
    if run is not None:
        run.wait(ready, what)
    elif not ready():   # not reached: LNC=2 launches always run through trnsim.nki.lnc
        raise KernelError("err_lnc_deadlock", f"{what} waits for the other core, which is not running",
                          "launch the kernel as kernel[2](...)")


def _where() -> str:
    from trnsim.nki.rules import short_location
    return short_location() or "kernel"


def core_barrier(data, cores, engine=_engine.gpsimd, name=None) -> NkiInstruction:
    """Barrier between the two cores of an LNC=2 launch on shared HBM ``data`` (``cores=(0, 1)``): neither core
    passes until both arrived. The barrier blocks only ``engine`` (default GpSimd)."""
    ctx = current()
    api = "core_barrier"
    _need_lnc2(ctx, api)
    if not isinstance(cores, (tuple, list)) or tuple(cores) != (0, 1):
        raise KernelError("err_invalid_arguments", f"cores={cores!r} of '{api}': only (0, 1) is supported (the "
                          "two cores of an LNC=2 logical core)", "pass cores=(0, 1)")
    eng = {None: "gpsimd", _engine.unknown: "gpsimd"}.get(engine, engine)
    if eng not in ("gpsimd", "vector", "scalar", "tensor", "sync"):
        raise KernelError("err_unsupported_engine", f"engine={engine!r} of '{api}'", "pass nisa.engine.gpsimd")
    v = as_view(data)
    if not hasattr(v, "tensor"):
        raise KernelError("err_expected_tile", f"data of '{api}' must be a shared HBM tensor, got "
                          f"{type(data).__name__}", "pass the nl.shared_hbm tensor both cores write")
    if v.tensor.buffer != "hbm" or v.tensor.kind == "private":
        got = "a private HBM tensor (nl.hbm)" if v.tensor.buffer == "hbm" else f"a {v.tensor.buffer} tile"
        raise KernelError("err_unsupported_memory", f"data of '{api}' must be a shared HBM tensor, got {got}",
                          "pass the nl.shared_hbm tensor both cores write (or a kernel input)")
    st = _state(ctx)
    inst, core = _instance(ctx)
    idx = ctx.emit(api, eng, (v,), (), {"cores": (0, 1)}, 0, 0, 1, 1)
    mine = st["barriers"].setdefault((inst, core), [])
    mine.append(idx)
    other = st["barriers"].setdefault((inst, 1 - core), [])
    n = len(mine)
    _wait(ctx, lambda: len(other) >= n, f"core_barrier #{n - 1} (instruction {idx}, {_where()})")
    # the performance model: each barrier passes only when its partner on the other core has arrived
    ctx.instructions[idx].attrs["partner"] = other[n - 1]
    return NkiInstruction(idx)


def sendrecv(src, dst, send_to_rank, recv_from_rank, pipe_id, dma_engine=_dma_engine.dma, name=None):
    """Send SBUF tile ``src`` to core ``send_to_rank``'s ``dst`` while receiving core ``recv_from_rank``'s ``src``
    into this core's ``dst`` (LNC=2; ranks 0 or 1). Calls with one ``pipe_id`` pair up in order."""
    ctx = current()
    api = "sendrecv"
    _need_lnc2(ctx, api)
    s = tile_arg(src, api, "src", ("sbuf",))
    d = tile_arg(dst, api, "dst", ("sbuf",))
    if s.tensor.dtype_name != d.tensor.dtype_name:
        raise KernelError("err_dtype_mismatch", f"'{api}' src dtype {s.tensor.dtype_name} and dst dtype "
                          f"{d.tensor.dtype_name} must be equal", "allocate dst like src")
    if tuple(s.shape) != tuple(d.shape):
        raise KernelError("err_shape_mismatch", f"'{api}' src{fmt_shape(s.shape)} and dst{fmt_shape(d.shape)} must "
                          "have the same shape", "allocate dst like src")
    for r, arg in ((send_to_rank, "send_to_rank"), (recv_from_rank, "recv_from_rank")):
        if r not in (0, 1):
            raise KernelError("err_invalid_arguments", f"{arg}={r!r} of '{api}': ranks of an LNC=2 core are 0 and 1",
                              "pass 0 or 1 (e.g. 1 - nl.program_id(0))")
    if dma_engine not in (_dma_engine.dma, _dma_engine.gpsimd_dma):
        raise KernelError("err_invalid_arguments", f"dma_engine={dma_engine!r} of '{api}'",
                          "pass nisa.dma_engine.dma or nisa.dma_engine.gpsimd_dma")
    bpp = free_size(s.shape) * s.tensor.itemsize
    if dma_engine == _dma_engine.gpsimd_dma:
        cap = _GPSIMD_DMA_BYTES.get(s.tensor.itemsize, 1024)
        if bpp > cap:
            raise KernelError("err_size_of_dimension_exceed_arch_limit",
                              f"'{api}' over GpSimd DMA moves {bpp} bytes per partition; the limit for "
                              f"{8 * s.tensor.itemsize}-bit data is {cap}",
                              f"split the exchange into chunks of {cap // s.tensor.itemsize} elements per partition, "
                              "or use dma_engine=nisa.dma_engine.dma")
    st = _state(ctx)
    inst, core = _instance(ctx)
    k = st["counts"].get((inst, core, pipe_id), 0)
    st["counts"][(inst, core, pipe_id)] = k + 1
    eng = "gpsimd" if dma_engine == _dma_engine.gpsimd_dma else "dma"
    attrs = {"api": api, "partitions": int(s.shape[0]), "bytes_per_partition": bpp, "src": "sbuf", "dst": "sbuf",
             "send_to_rank": int(send_to_rank), "recv_from_rank": int(recv_from_rank), "pipe_id": pipe_id}
    idx = ctx.emit(api, eng, (s,), (d,), attrs, 0, bpp * s.shape[0], free_size(s.shape), s.shape[0])
    payload = np.array(read(s, raw=True), copy=True) if ctx.numerics else None
    st["mail"][(inst, pipe_id, core, int(send_to_rank), k)] = (payload, idx, tuple(s.shape), s.tensor.dtype_name)
    in_key = (inst, pipe_id, int(recv_from_rank), core, k)
    _wait(ctx, lambda: in_key in st["mail"],
          f"sendrecv pipe {pipe_id!r} #{k} from core {int(recv_from_rank)} (instruction {idx}, {_where()})")
    msg, sender, shape, dtype = st["mail"].pop(in_key)
    if shape != tuple(d.shape) or dtype != d.tensor.dtype_name:
        raise KernelError("err_shape_mismatch" if shape != tuple(d.shape) else "err_dtype_mismatch",
                          f"'{api}' pipe {pipe_id!r} #{k}: core {int(recv_from_rank)} sends {fmt_shape(shape)} {dtype}, "
                          f"core {core} receives into dst{fmt_shape(d.shape)} {d.tensor.dtype_name}: both sides must "
                          "use the same shape, layout and dtype", "allocate src and dst alike on both cores")
    # the performance model: the receive completes only after the sending core posted (its sendrecv started)
    ctx.instructions[idx].attrs["partner"] = sender
    if ctx.numerics:
        write(d, msg.reshape(d.shape))
    return dst


__all__ = ["core_barrier", "sendrecv"]
