"""Two-core synchronisation and exchange inside a logical NeuronCore (LNC=2, NeuronCore-v3+):
``core_barrier`` and ``sendrecv``.

trnsim runs the two physical cores of an LNC=2 launch one after the other (core 0's program, then core
1's; :func:`trnsim.nki.runtime.run_kernel`). Both instructions are traced for the performance model in
every case. Numerically, data flowing from core 0 to core 1 is exact: core 1 runs later and sees what
core 0 wrote or sent. Data flowing from core 1 to core 0 cannot reach core 0 in time: when core 1 reaches
the matching ``sendrecv`` / ``core_barrier``, trnsim checks whether core 0 consumed data it should have
received from core 1 (it read the ``dst`` of its ``sendrecv``, or read after its ``core_barrier`` a part
of ``data`` that core 1 wrote before the barrier) and raises a KernelError instead of a wrong answer.
Interleaving the two cores at these rendezvous points needs runtime support trnsim does not have yet.
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
        st = {"barriers": {}, "mail": {}, "pending": {}, "counts": {}}
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
    """(program instance of the LNC pair, core): instances 2i and 2i+1 are the two cores of one pair."""
    return tuple(ctx.program_id[:-1]) + ((ctx.program_id[-1] // 2,) if ctx.program_id else ()), ctx.core


def _regions(ctx, lo: int, hi: int, pid, alloc_id: int, kind: str) -> list:
    out = []
    for ins in ctx.instructions[lo:hi]:
        if ins.program_id != pid:
            continue
        for op in (ins.reads if kind == "read" else ins.writes):
            r = op.region
            if r.alloc_id == alloc_id:
                out.append((r.partition_start, r.partition_start + r.partitions, r.byte_start, r.byte_stop,
                            ins.index))
    return out


def _overlap(a, b) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]


def core_barrier(data, cores, engine=_engine.gpsimd, name=None) -> NkiInstruction:
    """Barrier between the two cores of an LNC=2 launch on shared HBM ``data`` (``cores=(0, 1)``): neither core
    passes until both arrived. The barrier blocks only ``engine`` (default GpSimd)."""
    ctx = current()
    api = "core_barrier"
    _need_lnc2(ctx, api)
    if tuple(cores) != (0, 1):
        raise KernelError("err_invalid_arguments", f"cores={tuple(cores)} of '{api}': only (0, 1) is supported (the "
                          "two cores of an LNC=2 logical core)", "pass cores=(0, 1)")
    eng = {None: "gpsimd", _engine.unknown: "gpsimd"}.get(engine, engine)
    if eng not in ("gpsimd", "vector", "scalar", "tensor", "sync"):
        raise KernelError("err_unsupported_engine", f"engine={engine!r} of '{api}'", "pass nisa.engine.gpsimd")
    v = as_view(data)
    if v.tensor.buffer != "hbm":
        raise KernelError("err_unsupported_memory", f"data of '{api}' must be a shared HBM tensor, got a "
                          f"{v.tensor.buffer} tile", "pass the nl.shared_hbm tensor both cores write")
    st = _state(ctx)
    inst, core = _instance(ctx)
    idx = ctx.emit(api, eng, (v,), (), {"cores": (0, 1)}, 0, 0, 1, 1)
    mine = st["barriers"].setdefault((inst, core), [])
    mine.append(idx)
    if core == 1 and ctx.numerics:
        other = st["barriers"].get((inst, 0), [])
        k = len(mine) - 1
        if k < len(other):
            b0 = other[k]
            pid0 = ctx.instructions[b0].program_id
            aid = ctx.instructions[idx].reads[0].region.alloc_id
            start1 = min(i for i in range(b0, idx + 1) if ctx.instructions[i].program_id == ctx.program_id)
            reads0 = _regions(ctx, b0 + 1, start1, pid0, aid, "read")
            writes1 = _regions(ctx, start1, idx, ctx.program_id, aid, "write")
            for r in reads0:
                for w in writes1:
                    if _overlap(r, w):
                        raise KernelError(
                            "err_lnc_order_not_simulated",
                            f"core 0 read `{v.tensor.name}` after core_barrier #{k} (instruction {r[4]}) where core 1 "
                            f"writes before that barrier (instruction {w[4]}); trnsim runs core 0 to completion before "
                            "core 1, so core 0 would have read stale data",
                            "simulate the consumer on core 1 only (if nl.program_id(0) == 1: ...), or time the kernel "
                            "with trnsim.perf (timing-only traces are exact for this pattern)")
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
    if ctx.numerics:
        payload = np.array(read(s, raw=True), copy=True)
        out_key = (inst, pipe_id, core, int(send_to_rank), k)
        pending = st["pending"].pop(out_key, None)
        if pending is not None:          # the receiver ran earlier: deliver, unless it already used the data
            pv, pidx, ppid = pending
            aid = ctx.instructions[pidx].writes[0].region.alloc_id
            wreg = ctx.instructions[pidx].writes[0].region
            w = (wreg.partition_start, wreg.partition_start + wreg.partitions, wreg.byte_start, wreg.byte_stop, pidx)
            for r in _regions(ctx, pidx + 1, idx, ppid, aid, "read"):
                if _overlap(r, w):
                    raise KernelError(
                        "err_lnc_order_not_simulated",
                        f"core {int(send_to_rank)} used the tile it receives from core {core} (sendrecv pipe "
                        f"{pipe_id!r}, instruction {r[4]}) before core {core} sent it; trnsim runs the cores one after "
                        "the other, so that data did not exist yet",
                        "consume received data only on core 1 (if nl.program_id(0) == 1: ...), or time the kernel with "
                        "trnsim.perf (timing-only traces are exact for this pattern)")
            write(pv, payload.reshape(pv.shape))
        else:
            st["mail"][out_key] = payload
        in_key = (inst, pipe_id, int(recv_from_rank), core, k)
        msg = st["mail"].pop(in_key, None)
        if msg is not None:
            write(d, msg.reshape(d.shape))
        else:
            st["pending"][in_key] = (d, idx, ctx.program_id)
    return dst


__all__ = ["core_barrier", "sendrecv"]
