"""Build single instructions by hand (for notebooks and tests): "what does one matmul cost?".

These construct the same ``trnsim.nki.trace`` records a traced kernel produces, with fresh
allocation ids, so they can be priced with ``instruction_cost_ns`` or scheduled directly.
"""
from __future__ import annotations

import itertools
import math

from trnsim.nki.trace import Instruction, Operand, Region

_ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2, "tfloat32": 4, "float8_e4m3": 1, "float8_e5m2": 1,
             "int32": 4, "int8": 1, "uint8": 1, "int16": 2}
_ids = itertools.count(1_000_000)


def operand(shape: tuple[int, ...], dtype: str = "bfloat16", buffer: str = "sbuf", *, alloc_id: int | None = None,
            name: str = "", byte_start: int = 0, partition_start: int = 0, contiguous_bytes: int | None = None) -> Operand:
    """An operand covering a whole tile (partition dim first for sbuf/psum)."""
    if dtype not in _ITEMSIZE:
        raise ValueError(f"operand dtype {dtype!r} unknown; use one of {sorted(_ITEMSIZE)}")
    item = _ITEMSIZE[dtype]
    if buffer == "hbm":
        parts, per = 1, int(math.prod(shape)) * item
    else:
        parts, per = int(shape[0]), int(math.prod(shape[1:])) * item
    region = Region(buffer, next(_ids) if alloc_id is None else alloc_id, partition_start, parts,
                    byte_start, byte_start + per)
    if contiguous_bytes is None:
        contiguous_bytes = int(shape[-1]) * item if buffer == "hbm" else per
    return Operand(name, buffer, tuple(shape), dtype, item, region, contiguous_bytes)


def instruction(opcode: str, engine: str, reads: tuple[Operand, ...] = (), writes: tuple[Operand, ...] = (), *,
                index: int = 0, deps: tuple[int, ...] = (), attrs: dict | None = None, flops: int = 0,
                bytes_moved: int = 0, free_elements: int | None = None, partitions: int | None = None) -> Instruction:
    """An Instruction; ``free_elements``/``partitions`` default to those of the first read (or write)."""
    ref = (reads or writes or (None,))[0]
    if free_elements is None:
        free_elements = int(math.prod(ref.shape[1:])) if ref is not None and len(ref.shape) > 1 else 1
    if partitions is None:
        partitions = int(ref.shape[0]) if ref is not None else 1
    return Instruction(index, opcode, engine, tuple(reads), tuple(writes), dict(attrs or {}), int(flops),
                       int(bytes_moved), tuple(deps), int(free_elements), int(partitions), None)


def matmul(k: int, m: int, n: int, dtype: str = "bfloat16", **kw) -> Instruction:
    """``nc_matmul(stationary[k, m], moving[k, n]) -> psum[m, n]`` with 2*k*m*n FLOPs."""
    stat, mov = operand((k, m), dtype), operand((k, n), dtype)
    out = operand((m, n), "float32", "psum")
    return instruction("nc_matmul", "tensor", (stat, mov), (out,), flops=2 * k * m * n, free_elements=n, **kw)


def load(partitions: int, free: int, dtype: str = "bfloat16", *, hbm_row_bytes: int | None = None,
         hbm_alloc_id: int | None = None, **kw) -> Instruction:
    """``nl.load`` of a [partitions, free] tile from HBM into SBUF (one dma_copy).

    Loads that pass the same ``hbm_alloc_id`` read one HBM tensor and so share one DMA queue (the queue
    rule of trnsim.perf.schedule); by default every load reads its own tensor."""
    item = _ITEMSIZE[dtype]
    bpp = free * item
    src = operand((partitions, free), dtype, "hbm", contiguous_bytes=hbm_row_bytes or bpp, alloc_id=hbm_alloc_id)
    dst = operand((partitions, free), dtype, "sbuf")
    attrs = {"api": "load", "partitions": partitions, "bytes_per_partition": bpp, "src": "hbm", "dst": "sbuf"}
    attrs.update(kw.pop("attrs", {}) or {})
    return instruction("dma_copy", "dma", (src,), (dst,), attrs=attrs, bytes_moved=partitions * bpp,
                       free_elements=free, partitions=partitions, **kw)


def elementwise(opcode: str, engine: str, partitions: int, free: int, dtype: str = "float32", n_inputs: int = 1,
                in_buffer: str = "sbuf", attrs: dict | None = None, **kw) -> Instruction:
    """A Vector/Scalar/GpSimd instruction over [partitions, free] tiles."""
    reads = tuple(operand((partitions, free), dtype, in_buffer) for _ in range(n_inputs))
    out = operand((partitions, free), dtype, "sbuf")
    return instruction(opcode, engine, reads, (out,), attrs=attrs, flops=partitions * free,
                       free_elements=free, partitions=partitions, **kw)


__all__ = ["operand", "instruction", "matmul", "load", "elementwise"]
