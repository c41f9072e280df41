"""trnsim.nki: NKI 0.6 (``import nki``) with a functional CPU simulator.

Write kernels as for a real NeuronCore; only the import lines differ from the NKI 0.6 documentation::

    import trnsim.nki as nki                 # import nki
    import trnsim.nki.isa as nisa            # import nki.isa as nisa
    import trnsim.nki.language as nl         # import nki.language as nl

    @nki.jit
    def add_kernel(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        a_t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        b_t = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a_t, src=a)
        nisa.dma_copy(dst=b_t, src=b)
        nisa.tensor_tensor(dst=a_t, data1=a_t, data2=b_t, op=nl.add)
        nisa.dma_copy(dst=out, src=a_t)
        return out

    c = nki.simulate(add_kernel)(a, b)       # numpy in, numpy out; nki.simulate(add_kernel[2]) for LNC=2

Layers (each imports only the ones before it; no cycles, and never ``trnsim.perf``):
``dtypes``/``rules``/``trace`` -> ``tensors`` (tensors, views, access patterns) -> ``context`` (the
tracing state) -> ``isa`` (instructions, one family per module) -> ``language`` (built on
instructions) -> ``lnc`` (the two cores of an LNC=2 launch, run interleaved) -> ``runtime`` (launching,
``jit``, ``simulate``) -> this package. ``compiler`` holds the
NKI compiler directives. NKI Beta 1 (``neuronxcc.nki``) lives outside, in :mod:`trnsim.neuronxcc.nki`.

The public NKI 0.6 top level is ``jit`` and ``simulate``. trnsim adds ``KernelError`` (every broken
rule), ``trace_kernel`` (outputs and the instruction :class:`Trace` that ``trnsim.perf`` schedules),
``Kernel``, ``default_target``, and ``simulate_ranks`` / ``trace_ranks`` (one kernel instance per rank,
``nki.collectives`` exchanging data between them; :mod:`trnsim.nki.ranks`). Beta 1 names
(``simulate_kernel``, ``profile``, ``benchmark``, ``baremetal``) raise an error naming their current form.
"""
from __future__ import annotations

from trnsim.nki import isa, language, typing  # noqa: F401
from trnsim.nki import compiler  # noqa: F401
from trnsim.nki import collectives  # noqa: F401
from trnsim.nki.ranks import simulate_ranks, trace_ranks  # noqa: F401
from trnsim.nki.rules import TARGETS, KernelError, RemovedApiError, limits_for, removed_api  # noqa: F401
from trnsim.nki.runtime import Kernel, default_target, jit, simulate, trace_kernel  # noqa: F401
from trnsim.nki.trace import Allocation, Instruction, Operand, Region, Trace  # noqa: F401
from trnsim.nki.context import AccumulatorIdleWarning, ActivationRangeWarning, UninitializedReadWarning  # noqa: F401
from trnsim.nki.tensors import ApOffsetWarning  # noqa: F401

_REMOVED = {
    "simulate_kernel": "nki.simulate(kernel)(*arrays)",
    "baremetal": "@nki.jit (and nki.simulate(kernel)(*arrays) to run it on the simulator)",
    "profile": "trnsim.perf.profile(kernel, *arrays) (simulated profile)",
    "benchmark": "trnsim.perf.benchmark(kernel) (simulated latency)",
}


def __getattr__(name: str):
    if name in _REMOVED:
        raise removed_api(f"nki.{name}", "use " + _REMOVED[name])
    raise AttributeError(f"module 'trnsim.nki' has no attribute {name!r}")


__all__ = ["jit", "simulate", "trace_kernel", "Kernel", "KernelError", "Trace", "Instruction", "Operand", "Region",
           "Allocation", "isa", "language", "typing", "compiler", "collectives", "simulate_ranks", "trace_ranks",
           "default_target", "limits_for", "UninitializedReadWarning", "ActivationRangeWarning", "AccumulatorIdleWarning", "ApOffsetWarning", "RemovedApiError"]
