"""Instruction trace records shared by trnsim.nki (producer) and trnsim.perf (consumer).

The field set follows /work/TRACE_CONTRACT.md exactly; extensions are optional fields only.
Units: bytes for sizes/offsets, elements for shapes, FLOPs counted as 2 per multiply-add.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Region:
    """The memory an operand touches, for dependency tracking and occupancy."""
    buffer: str                  # "sbuf" | "psum" | "hbm"
    alloc_id: int                # identity of the allocation (tensor) it belongs to
    partition_start: int         # first partition (0 for hbm)
    partitions: int              # number of partitions spanned (1 for hbm)
    byte_start: int              # byte offset within a partition (sbuf/psum) or within the hbm tensor
    byte_stop: int               # exclusive


@dataclass(frozen=True)
class Operand:
    name: str                    # user-visible tensor name or ""
    buffer: str                  # "sbuf" | "psum" | "hbm"
    shape: tuple[int, ...]       # tile shape; partition dim first for sbuf/psum
    dtype: str                   # numpy-style name: "float32", "bfloat16", ...
    itemsize: int                # bytes per element
    region: Region
    contiguous_bytes: int        # bytes of the innermost contiguous run per partition


@dataclass(frozen=True)
class Allocation:
    """One tensor allocation (kernel I/O in HBM, or an on-chip SBUF/PSUM buffer)."""
    alloc_id: int
    name: str
    buffer: str                  # "sbuf" | "psum" | "hbm"
    shape: tuple[int, ...]
    dtype: str
    bytes_per_partition: int     # for hbm: total bytes
    partitions: int              # for hbm: 1
    first_use: int               # instruction index of first access (-1 if never used)
    last_use: int                # instruction index of last access (-1 if never used)
    is_kernel_io: bool
    # optional extension: placement the kernel requested (nki.compiler mod_alloc / nl.ndarray(address=...)),
    # e.g. {"base_addr": 0, "num_free_tiles": (2,)} (bytes per partition), for a scheduler to honour
    placement: dict | None = None


@dataclass
class Instruction:
    index: int
    opcode: str
    engine: str                  # "tensor" | "vector" | "scalar" | "gpsimd" | "dma" | "sync"
    reads: tuple[Operand, ...]
    writes: tuple[Operand, ...]
    attrs: dict
    flops: int
    bytes_moved: int
    deps: tuple[int, ...]
    free_elements: int
    partitions: int
    source_line: str | None
    program_id: tuple[int, ...] = ()
    # optional extension: physical NeuronCore of the program instance within its logical core (LNC=2: 0 or 1)
    core: int = 0


@dataclass
class Trace:
    kernel_name: str
    target: str
    instructions: list[Instruction]
    allocations: list[Allocation]
    grid: tuple[int, ...]
    numerics: bool
    # optional extensions (trnsim.nki): peak live on-chip usage seen by the allocator while tracing
    peak_sbuf_bytes_per_partition: int = 0
    peak_psum_banks: int = 0
    # physical cores of the logical NeuronCore the kernel was launched on (kernel[2]: 2; Instruction.core says which)
    lnc: int = 1
    # kernel-level NKI compiler directives, e.g. {"skip_middle_end_transformations": True}; instruction-level ones
    # are in Instruction.attrs (a ``no_reorder`` block id: attrs["no_reorder"])
    directives: dict | None = None

    def summary(self) -> dict:
        """Instruction counts per engine and per opcode (for quick inspection)."""
        by_engine: dict[str, int] = {}
        by_opcode: dict[str, int] = {}
        for ins in self.instructions:
            by_engine[ins.engine] = by_engine.get(ins.engine, 0) + 1
            by_opcode[ins.opcode] = by_opcode.get(ins.opcode, 0) + 1
        return {"instructions": len(self.instructions), "by_engine": by_engine, "by_opcode": by_opcode}


# ---------------------------------------------------------------------------------------------------
# Fast constructors for the tracer's hot path. They build exactly the same dataclass instances as the
# generated ``__init__`` (same fields, equality, hash and repr; frozen records stay frozen) but set the
# instance ``__dict__`` in one step instead of one ``object.__setattr__`` call per field, which makes
# tracing of tens of thousands of instructions several times cheaper. Field order must match the
# dataclass definitions above (checked in tests/test_bench_nki.py).

_new = object.__new__
_set = object.__setattr__


def make_region(buffer: str, alloc_id: int, partition_start: int, partitions: int, byte_start: int,
                byte_stop: int) -> Region:
    """``Region(...)`` without the frozen-dataclass per-field ``__setattr__`` cost."""
    r = _new(Region)
    _set(r, "__dict__", {"buffer": buffer, "alloc_id": alloc_id, "partition_start": partition_start,
                         "partitions": partitions, "byte_start": byte_start, "byte_stop": byte_stop})
    return r


def make_operand(name: str, buffer: str, shape: tuple, dtype: str, itemsize: int, region: Region,
                 contiguous_bytes: int) -> Operand:
    """``Operand(...)`` without the frozen-dataclass per-field ``__setattr__`` cost."""
    o = _new(Operand)
    _set(o, "__dict__", {"name": name, "buffer": buffer, "shape": shape, "dtype": dtype, "itemsize": itemsize,
                         "region": region, "contiguous_bytes": contiguous_bytes})
    return o


def make_allocation(alloc_id: int, name: str, buffer: str, shape: tuple, dtype: str, bytes_per_partition: int,
                    partitions: int, first_use: int, last_use: int, is_kernel_io: bool,
                    placement: dict | None = None) -> Allocation:
    """``Allocation(...)`` without the frozen-dataclass per-field ``__setattr__`` cost."""
    a = _new(Allocation)
    _set(a, "__dict__", {"alloc_id": alloc_id, "name": name, "buffer": buffer, "shape": shape, "dtype": dtype,
                         "bytes_per_partition": bytes_per_partition, "partitions": partitions,
                         "first_use": first_use, "last_use": last_use, "is_kernel_io": is_kernel_io,
                         "placement": placement})
    return a


def make_instruction(index: int, opcode: str, engine: str, reads: tuple, writes: tuple, attrs: dict, flops: int,
                     bytes_moved: int, deps: tuple, free_elements: int, partitions: int, source_line: str | None,
                     program_id: tuple = (), core: int = 0) -> Instruction:
    """``Instruction(...)`` with one ``__dict__`` assignment instead of 13 attribute stores."""
    i = _new(Instruction)
    i.__dict__ = {"index": index, "opcode": opcode, "engine": engine, "reads": reads, "writes": writes,
                  "attrs": attrs, "flops": flops, "bytes_moved": bytes_moved, "deps": deps,
                  "free_elements": free_elements, "partitions": partitions, "source_line": source_line,
                  "program_id": program_id, "core": core}
    return i


__all__ = ["Region", "Operand", "Allocation", "Instruction", "Trace"]

