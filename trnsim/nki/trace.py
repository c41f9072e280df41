"""Instruction trace records shared by trnsim.nki (producer) and trnsim.perf (consumer).

The field set follows /work/TRACE_CONTRACT.md exactly; extensions are optional fields only.
Units: bytes for sizes/offsets, elements for shapes, FLOPs counted as 2 per multiply-add.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Region:
    """The memory an operand touches, for dependency tracking and occupancy."""
    buffer: str                  # "sbuf" | "psum" | "hbm"
    alloc_id: int                # identity of the allocation (tensor) it belongs to
    partition_start: int         # first partition (0 for hbm)
    partitions: int              # number of partitions spanned (1 for hbm)
    byte_start: int              # byte offset within a partition (sbuf/psum) or within the hbm tensor
    byte_stop: int               # exclusive


@dataclass(frozen=True, slots=True)
class Operand:
    name: str                    # user-visible tensor name or ""
    buffer: str                  # "sbuf" | "psum" | "hbm"
    shape: tuple[int, ...]       # tile shape; partition dim first for sbuf/psum
    dtype: str                   # numpy-style name: "float32", "bfloat16", ...
    itemsize: int                # bytes per element
    region: Region
    contiguous_bytes: int        # bytes of the innermost contiguous run per partition


@dataclass(slots=True)
class Allocation:
    """One tensor allocation (kernel I/O in HBM, or an on-chip SBUF/PSUM buffer). The tracer fills in
    ``first_use`` / ``last_use`` as instructions access it (the record is its bookkeeping while tracing)."""
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


@dataclass(slots=True)
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
    # optional extension: kind of the innermost NKI loop around the instruction ("affine_range",
    # "sequential_range", "dynamic" for nl.dynamic_range / fori_loop / while_loop bodies; "" outside loops)
    loop: str = ""


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
    # the UninitializedReadWarning messages the kernel raised, in order (for checkers: the cause of NaN outputs)
    uninitialized_reads: tuple[str, ...] = ()

    def summary(self) -> dict:
        """Instruction counts per engine and per opcode (for quick inspection)."""
        by_engine: dict[str, int] = {}
        by_opcode: dict[str, int] = {}
        for ins in self.instructions:
            by_engine[ins.engine] = by_engine.get(ins.engine, 0) + 1
            by_opcode[ins.opcode] = by_opcode.get(ins.opcode, 0) + 1
        return {"instructions": len(self.instructions), "by_engine": by_engine, "by_opcode": by_opcode}


# ---------------------------------------------------------------------------------------------------
# Fast constructors for the tracer's hot path. The records are slotted dataclasses (a few dozen bytes each
# instead of an instance dict: a 100k-instruction trace is several hundred thousand of them, and their memory
# was a quarter of the tracing time). The constructors below build exactly the same instances as the
# generated ``__init__`` (same fields, equality, hash and repr; frozen records stay frozen: their ``__setattr__``
# still refuses): the frozen ones store each field through its slot descriptor, skipping the frozen-dataclass
# ``object.__setattr__`` call per field, the others use plain stores. Field order must match the dataclass
# definitions above (checked in tests/test_bench_nki.py).

_new = object.__new__


def _slot_setters(cls, names: tuple[str, ...]) -> tuple:
    """The ``__set__`` of each named slot descriptor of ``cls`` (in ``names`` order)."""
    return tuple(cls.__dict__[n].__set__ for n in names)


_R_BUF, _R_AID, _R_P0, _R_NP, _R_B0, _R_B1 = _slot_setters(
    Region, ("buffer", "alloc_id", "partition_start", "partitions", "byte_start", "byte_stop"))
_O_NAME, _O_BUF, _O_SHAPE, _O_DT, _O_ITEM, _O_REG, _O_CONTIG = _slot_setters(
    Operand, ("name", "buffer", "shape", "dtype", "itemsize", "region", "contiguous_bytes"))


def make_region(buffer: str, alloc_id: int, partition_start: int, partitions: int, byte_start: int,
                byte_stop: int) -> Region:
    """``Region(...)`` without the frozen-dataclass per-field ``object.__setattr__`` cost."""
    r = _new(Region)
    _R_BUF(r, buffer)
    _R_AID(r, alloc_id)
    _R_P0(r, partition_start)
    _R_NP(r, partitions)
    _R_B0(r, byte_start)
    _R_B1(r, byte_stop)
    return r


def make_operand(name: str, buffer: str, shape: tuple, dtype: str, itemsize: int, region: Region,
                 contiguous_bytes: int) -> Operand:
    """``Operand(...)`` without the frozen-dataclass per-field ``object.__setattr__`` cost."""
    o = _new(Operand)
    _O_NAME(o, name)
    _O_BUF(o, buffer)
    _O_SHAPE(o, shape)
    _O_DT(o, dtype)
    _O_ITEM(o, itemsize)
    _O_REG(o, region)
    _O_CONTIG(o, contiguous_bytes)
    return o


def make_allocation(alloc_id: int, name: str, buffer: str, shape: tuple, dtype: str, bytes_per_partition: int,
                    partitions: int, first_use: int, last_use: int, is_kernel_io: bool,
                    placement: dict | None = None) -> Allocation:
    """``Allocation(...)`` with plain slot stores (no generated ``__init__`` call)."""
    a = _new(Allocation)
    a.alloc_id = alloc_id
    a.name = name
    a.buffer = buffer
    a.shape = shape
    a.dtype = dtype
    a.bytes_per_partition = bytes_per_partition
    a.partitions = partitions
    a.first_use = first_use
    a.last_use = last_use
    a.is_kernel_io = is_kernel_io
    a.placement = placement
    return a


def make_instruction(index: int, opcode: str, engine: str, reads: tuple, writes: tuple, attrs: dict, flops: int,
                     bytes_moved: int, deps: tuple, free_elements: int, partitions: int, source_line: str | None,
                     program_id: tuple = (), core: int = 0, loop: str = "") -> Instruction:
    """``Instruction(...)`` with plain slot stores (no generated ``__init__`` call)."""
    i = _new(Instruction)
    i.index = index
    i.opcode = opcode
    i.engine = engine
    i.reads = reads
    i.writes = writes
    i.attrs = attrs
    i.flops = flops
    i.bytes_moved = bytes_moved
    i.deps = deps
    i.free_elements = free_elements
    i.partitions = partitions
    i.source_line = source_line
    i.program_id = program_id
    i.core = core
    i.loop = loop
    return i


__all__ = ["Region", "Operand", "Allocation", "Instruction", "Trace"]

