"""trnsim.nki: an NKI-style kernel language with a functional simulator.

Write kernels as for a real NeuronCore (classic NKI tutorials run with only the imports changed)::

    import trnsim.nki as nki
    import trnsim.nki.language as nl

    @nki.jit
    def add_kernel(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.add(nl.load(a), nl.load(b)))
        return out

    c = nki.simulate_kernel(add_kernel, a, b)     # numpy in, numpy out

Every instruction is recorded in a :class:`~trnsim.nki.trace.Trace` (``trace_kernel``) that
``trnsim.perf`` schedules for timing (``nki.profile`` / ``nki.benchmark``). Rule violations raise
:class:`KernelError` pointing at the kernel line.
"""
from __future__ import annotations

import os
from typing import Any, Callable

from trnsim.nki import isa, language, typing  # noqa: F401
from trnsim.nki.rules import TARGETS, KernelError, limits_for  # noqa: F401
from trnsim.nki.trace import Allocation, Instruction, Operand, Region, Trace  # noqa: F401

_PLATFORM = {"trn1": "trn1", "gen2": "trn1", "inf2": "inf2", "trn2": "trn2", "gen3": "trn2", "trn3": "trn3",
             "gen4": "trn3"}


def default_target() -> str:
    """Kernel target: NEURON_PLATFORM_TARGET_OVERRIDE (trn1|gen2, trn2|gen3, trn3|gen4) or "trn1"."""
    env = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "").strip().lower()
    return _PLATFORM.get(env, "trn1")


class Kernel:
    """An ``@nki.jit`` kernel. Call it with numpy arrays to simulate it; ``kernel[g0, g1](...)`` launches
    an SPMD grid. ``last_trace`` holds the trace of the latest call."""

    def __init__(self, func: Callable, grid: tuple[int, ...] | None = None, target: str | None = None,
                 options: dict | None = None):
        self.func = func
        self.grid = grid
        self.target = target
        self.options = options or {}
        self.last_trace: Trace | None = None
        self.__name__ = getattr(func, "__name__", "kernel")
        self.__doc__ = getattr(func, "__doc__", None)
        self.__wrapped__ = func

    def __getitem__(self, grid) -> "Kernel":
        g = grid if isinstance(grid, tuple) else (grid,)
        return Kernel(self.func, tuple(int(x) for x in g), self.target, self.options)

    def __call__(self, *args, **kwargs):
        from trnsim.nki import runtime
        if runtime._CURRENT is not None:
            if self.grid:
                raise KernelError("err_nested_kernel_with_spmd_grid",
                                  "a kernel called from inside another kernel cannot have an SPMD grid",
                                  "call the inner kernel without [grid] (it runs inline)")
            return self.func(*args, **kwargs)
        outputs, trace = runtime.run_kernel(self.func, args, kwargs, target=self.target or default_target(),
                                            grid=self.grid, name=self.__name__)
        self.last_trace = trace
        return outputs

    def __repr__(self) -> str:
        return f"<nki kernel {self.__name__}" + (f"[{', '.join(map(str, self.grid))}]" if self.grid else "") + ">"


def jit(func: Callable | None = None, mode: str = "auto", *, target: str | None = None, **kwargs) -> Any:
    """Decorate a kernel (``@nki.jit`` or ``@nki.jit(target="trn2")``). ``mode`` and NKI compile options
    are accepted and ignored (there is no compiler); ``platform_target`` is an alias of ``target``."""
    target = target or kwargs.pop("platform_target", None)
    if target is not None and target not in TARGETS:
        target = _PLATFORM.get(str(target).lower(), target)

    def wrap(f: Callable) -> Kernel:
        if isinstance(f, Kernel):
            return Kernel(f.func, f.grid, target or f.target, f.options)
        return Kernel(f, None, target, dict(kwargs))

    return wrap(func) if func is not None else wrap


def _split(kernel) -> tuple[Callable, tuple[int, ...] | None, str | None, str]:
    if isinstance(kernel, Kernel):
        return kernel.func, kernel.grid, kernel.target, kernel.__name__
    k = getattr(kernel, "kernel", None)   # e.g. a perf BenchmarkKernel
    if k is not None and callable(k):
        return _split(k)
    if not callable(kernel):
        raise TypeError(f"expected a kernel function, got {type(kernel).__name__}")
    return kernel, None, None, getattr(kernel, "__name__", "kernel")


def simulate_kernel(kernel, *args, **kwargs):
    """Run ``kernel(*args)`` on the CPU simulator; numpy inputs, numpy output(s).

    ``kernel`` may be an ``@nki.jit`` kernel, a grid launch ``kernel[g0, g1]`` or a plain function.
    Kernels in the older style (output passed as an argument, nothing returned) write the numpy
    output arguments in place and return None.
    """
    from trnsim.nki import runtime
    from trnsim.nki import typing as nt
    if any(isinstance(a, nt.TensorSpec) for a in list(args) + list(kwargs.values())):
        raise KernelError("err_no_data", "simulate_kernel needs numpy arrays; nt.tensor specs carry no data",
                          "pass numpy arrays, or time the kernel with nki.profile(kernel, spec, ...)", location="")
    func, grid, target, name = _split(kernel)
    outputs, trace = runtime.run_kernel(func, args, kwargs, target=target or default_target(), grid=grid,
                                        name=name)
    if isinstance(kernel, Kernel):
        kernel.last_trace = trace
    return outputs


def trace_kernel(kernel, *args, target: str | None = None, numerics: bool = True, grid=None, **kwargs):
    """Run ``kernel`` and return ``(outputs, Trace)``.

    ``args`` are numpy arrays or ``nt.tensor[[shape], dtype]`` specs (specs imply numerics=False).
    With ``numerics=False`` no data is computed and outputs are None. ``grid`` overrides the kernel's SPMD grid.
    """
    from trnsim.nki import runtime
    func, kgrid, ktarget, name = _split(kernel)
    if grid is not None and not isinstance(grid, tuple):
        grid = tuple(grid) if isinstance(grid, list) else (int(grid),)
    return runtime.run_kernel(func, args, kwargs, target=target or ktarget or default_target(),
                              numerics=numerics, grid=grid if grid is not None else kgrid, name=name)


def profile(kernel=None, *args, target: str | None = None, numerics: bool = True, grid=None, **kwargs):
    """Simulated profile of ``kernel(*args)`` on ``target`` (a ``trnsim.perf`` Profile).

    Thin wrapper around ``trnsim.perf.profile`` (imported lazily: nki does not depend on perf).
    """
    try:
        from trnsim.perf.profile import profile as _profile
    except ImportError as exc:  # pragma: no cover - perf ships with trnsim
        raise ImportError("nki.profile needs trnsim.perf (the performance model), which is not installed") from exc
    func, kgrid, ktarget, _ = _split(kernel)
    return _profile(kernel if isinstance(kernel, Kernel) else func, *args,
                    target=target or ktarget or default_target(), numerics=numerics,
                    grid=grid if grid is not None else kgrid, **kwargs)


def benchmark(kernel=None, **kwargs):
    """NKI's ``nki.benchmark`` decorator (simulated latency): after ``bench(*inputs)``, read
    ``bench.benchmark_result.nc_latency.get_latency_percentile(99)`` (microseconds)."""
    try:
        from trnsim.perf.benchmark import benchmark as _benchmark
    except ImportError as exc:  # pragma: no cover
        raise ImportError("nki.benchmark needs trnsim.perf (the performance model), which is not installed") from exc
    return _benchmark(kernel, **kwargs)


baremetal = jit

__all__ = ["jit", "simulate_kernel", "trace_kernel", "profile", "benchmark", "baremetal", "Kernel", "KernelError",
           "Trace", "Instruction", "Operand", "Region", "Allocation", "isa", "language", "typing",
           "default_target", "limits_for"]
