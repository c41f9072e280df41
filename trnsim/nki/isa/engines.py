"""Engine constants and target queries of ``nki.isa``: ``tensor_engine`` ... ``unknown_engine``,
``dma_engine`` (sendrecv transfer mode), ``matmul_perf_mode``, ``get_nc_sub_version``, and the two
reference classes ``NkiInstruction`` (a handle on a traced instruction, ``.depends_on``) and
``NkiValidationError`` (what a broken hardware rule raises: trnsim's :class:`KernelError`)."""
from __future__ import annotations

from trnsim.nki.context import current
from trnsim.nki.isa.enums import engine
from trnsim.nki.rules import KernelError

tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown

#: Raised when a kernel violates a hardware rule. trnsim raises :class:`trnsim.nki.KernelError` (rule name,
#: message with the shape/value, fix) for every such rule, so ``except nisa.NkiValidationError`` catches it.
NkiValidationError = KernelError


class dma_engine:
    """Transfer mechanism of ``sendrecv``: the shared DMA queues (any trigger engine) or GpSimd's internal
    DMA (low latency SBUF-to-SBUF swaps in LNC=2, small per-partition sizes only)."""
    dma = "dma"
    gpsimd_dma = "gpsimd_dma"


class matmul_perf_mode:
    """``nc_matmul(perf_mode=)``: ``double_row`` packs two fp8 row pairs per PE (2x fp8 throughput)."""
    none = "none"
    double_row = "double_row"


def get_nc_sub_version() -> int:
    """Silicon revision within the current target's ``nc_version`` generation (0 = first revision).

    trnsim models the first revision of every target (``limits.nc_sub_version`` when a target defines it)."""
    return int(getattr(current().limits, "nc_sub_version", 0))


class NkiInstruction:
    """Handle on one traced instruction (its index in the kernel's trace).

    ``c.depends_on(a, b)`` adds scheduling edges: ``c`` starts after ``a`` and ``b`` complete (the trace
    record's ``deps``, which the performance model's scheduler honours). Returns ``c`` so calls chain."""

    def __init__(self, handle: int):
        self.handle = int(handle)
        self._ctx = current()

    def depends_on(self, *producers: "NkiInstruction") -> "NkiInstruction":
        ins = self._ctx.instructions[self.handle]
        deps = set(ins.deps)
        for p in producers:
            if not isinstance(p, NkiInstruction):
                raise KernelError("err_invalid_arguments",
                                  f"depends_on takes NkiInstruction handles, got {type(p).__name__}",
                                  "pass the value an nki.isa call returned")
            if p._ctx is not self._ctx:
                raise KernelError("err_invalid_arguments", "depends_on across two different kernel traces",
                                  "add dependencies between instructions of the same kernel")
            if p.handle >= self.handle:
                raise KernelError("err_invalid_dependency",
                                  f"instruction #{self.handle} cannot depend on #{p.handle}, which is issued after it",
                                  "make the later instruction depend on the earlier one")
            deps.add(p.handle)
        ins.deps = tuple(sorted(deps))
        return self

    def __repr__(self) -> str:
        ins = self._ctx.instructions[self.handle]
        return f"NkiInstruction(#{self.handle} {ins.opcode} on {ins.engine})"


__all__ = ["tensor_engine", "vector_engine", "scalar_engine", "gpsimd_engine", "unknown_engine", "dma_engine",
           "matmul_perf_mode", "get_nc_sub_version", "NkiInstruction", "NkiValidationError"]
