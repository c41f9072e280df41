"""NKI Beta 1 (``neuronxcc.nki``) on trnsim: ``import trnsim.neuronxcc.nki as nki``.

The Beta 1 adapter over :mod:`trnsim.nki` (NKI 0.6): kernels written for ``neuronxcc.nki`` (value-
returning ``nisa`` calls, ``nl.arange`` / ``nl.mgrid`` indexing, ``mask=``, block dimensions with
``nl.par_dim``, tiles released at the end of the loop iteration that made them) run with only the
import lines changed::

    import trnsim.neuronxcc.nki as nki
    import trnsim.neuronxcc.nki.language as nl

    c = nki.simulate_kernel(add_kernel, a, b)     # numpy in, numpy out

``nki.profile`` / ``nki.benchmark`` run the kernel on the simulated timeline of :mod:`trnsim.perf`.
Kernels of this layer default to target trn1 (the Beta 1 generation); NEURON_PLATFORM_TARGET_OVERRIDE
overrides it.
"""
from __future__ import annotations

import os
from typing import Any, Callable

from trnsim.neuronxcc.nki import isa, language, typing  # noqa: F401
from trnsim.nki.rules import TARGETS, KernelError, limits_for  # noqa: F401
from trnsim.nki.runtime import Kernel, as_kernel, platform_target, run_kernel
from trnsim.nki.trace import Allocation, Instruction, Operand, Region, Trace  # noqa: F401
from trnsim.nki.language.types import NkiTensor as tensor  # Beta 1 ``nki.tensor``: the tensor type (annotations, isinstance)

DIALECT = "beta1"
BETA1_DEFAULT_TARGET = "trn1"


def default_target() -> str:
    """Beta 1 kernel target: NEURON_PLATFORM_TARGET_OVERRIDE (trn1|gen2, trn2|gen3, trn3|gen4) or "trn1"."""
    env = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "").strip()
    return platform_target(env) if env else BETA1_DEFAULT_TARGET


class _Beta1Kernel(Kernel):
    """A Beta 1 kernel: ``kernel[g0, g1](...)`` launches an SPMD grid (never an LNC degree)."""

    def __getitem__(self, grid) -> "_Beta1Kernel":
        g = grid if isinstance(grid, tuple) else (grid,)
        for x in g:
            if int(x) < 1:
                raise KernelError("err_invalid_grid", f"SPMD grid {tuple(int(v) for v in g)} has a size below 1",
                                  "every grid dimension must be >= 1", location="")
        lnc = max([int(getattr(x, "lnc", 1)) for x in g] + [1])
        axis = next((k for k, x in enumerate(g) if int(getattr(x, "lnc", 1)) > 1), 0)
        return _Beta1Kernel(self.func, tuple(int(x) for x in g), self.target, self.options, DIALECT, lnc, axis)

    def __call__(self, *args, **kwargs):
        if self.target is None:
            return _Beta1Kernel(self.func, self.grid, _launch_target(self), self.options, DIALECT, self.lnc,
                                self.lnc_axis)(*args, **kwargs)
        out = super().__call__(*args, **kwargs)
        return out


def _launch_target(k: Kernel) -> str:
    """A Beta 1 launch's target: the kernel's, else NEURON_PLATFORM_TARGET_OVERRIDE, else trn1 -- except that an
    ``nl.nc(2)`` launch (two physical cores, which only NeuronCore-v3+ has) defaults to trn2."""
    if k.target:
        return k.target
    if k.lnc > 1 and not os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "").strip():
        return "trn2"
    return default_target()


def _beta1(kernel) -> Kernel:
    """``kernel`` as a Kernel: plain functions become Beta 1 kernels; ``@nki.jit`` kernels of either generation
    keep their own dialect (an NKI 0.6 kernel runs with the 0.6 rules under simulate_kernel / profile too)."""
    return as_kernel(kernel, DIALECT)


def jit(func: Callable | None = None, mode: str = "auto", *, target: str | None = None, **kwargs) -> Any:
    """Beta 1 ``@nki.jit`` (``@nki.jit(target="trn2")``; ``platform_target`` is an alias of ``target``;
    ``mode`` and compile options are accepted and ignored)."""
    target = target or kwargs.pop("platform_target", None)
    target = platform_target(target) if target is not None else None

    def wrap(f: Callable) -> Kernel:
        if isinstance(f, Kernel):
            return _Beta1Kernel(f.func, f.grid, target or f.target, f.options, DIALECT, f.lnc, f.lnc_axis)
        return _Beta1Kernel(f, None, target, dict(kwargs), DIALECT)

    return wrap(func) if func is not None else wrap


baremetal = jit


def trace(func: Callable | None = None, **kwargs) -> Any:
    """Beta 1 ``@nki.trace``: mark a kernel for ``simulate_kernel`` (outputs passed as arguments); the same as
    ``@nki.jit`` here."""
    return jit(func, **kwargs)


def simulate_kernel(kernel, *args, **kwargs):
    """Run ``kernel(*args)`` on the CPU simulator; numpy inputs, numpy output(s).

    ``kernel`` may be an ``@nki.jit`` kernel, a grid launch ``kernel[g0, g1]`` or a plain function.
    Kernels in the older style (output passed as an argument, nothing returned) write the numpy
    output arguments in place and return None.
    """
    from trnsim.nki import typing as nt
    if any(isinstance(a, nt.TensorSpec) for a in list(args) + list(kwargs.values())):
        raise KernelError("err_no_data", "simulate_kernel needs numpy arrays; nt.tensor specs carry no data",
                          "pass numpy arrays, or time the kernel with nki.profile(kernel, spec, ...)", location="")
    k = _beta1(kernel)
    outputs, trace = run_kernel(k.func, args, kwargs, target=_launch_target(k), grid=k.grid,
                                name=k.__name__, dialect=k.dialect, lnc=k.lnc, lnc_axis=k.lnc_axis)
    if isinstance(kernel, Kernel):
        kernel.last_trace = trace
    return outputs


def trace_kernel(kernel, *args, target: str | None = None, numerics: bool = True, grid=None, **kwargs):
    """Run a Beta 1 ``kernel`` and return ``(outputs, Trace)`` (see :func:`trnsim.nki.trace_kernel`)."""
    from trnsim.nki.runtime import trace_kernel as _trace
    k = _beta1(kernel)
    return _trace(k, *args, target=target or _launch_target(k), numerics=numerics, grid=grid,
                  dialect=k.dialect, **kwargs)


# nki.profile's options for the files neuron-profile writes on a device; trnsim writes no files
_PROFILE_FILE_OPTIONS = ("working_directory", "save_neff_name", "save_trace_name", "profile_nth", "overwrite",
                         "additional_compile_opt")


class _ProfileDecorator:
    """``@nki.profile(working_directory=..., save_neff_name=..., ...)``: calling the decorated kernel returns its
    simulated Profile (kept as ``.last_profile``) instead of writing NEFF / NTFF files."""

    def __init__(self, kernel, target):
        self.kernel, self.target, self.last_profile = kernel, target, None
        self.__name__ = getattr(kernel, "__name__", "kernel")

    def __call__(self, *args, **kwargs):
        self.last_profile = profile(self.kernel, *args, target=self.target, **kwargs)
        return self.last_profile


def profile(kernel=None, *args, target: str | None = None, numerics: bool = True, grid=None, **kwargs):
    """Simulated profile of ``kernel(*args)`` on ``target`` (a ``trnsim.perf`` Profile). With only options
    (``@nki.profile(working_directory=..., save_neff_name=..., profile_nth=2)``) it is Beta 1's decorator form; the
    file options are accepted and nothing is written."""
    if kernel is None and not args:
        extra = sorted(k for k in kwargs if k not in _PROFILE_FILE_OPTIONS)
        if extra:
            raise KernelError("err_invalid_arguments", f"nki.profile got unexpected options {extra}",
                              f"pass only {', '.join(_PROFILE_FILE_OPTIONS)} (and target=)", location="")
        return lambda k: _ProfileDecorator(k, target)
    from trnsim.perf.profile import profile as _profile
    k = _beta1(kernel)
    return _profile(k, *args, target=target or k.target or default_target(), numerics=numerics,
                    grid=grid if grid is not None else k.grid, **kwargs)


def benchmark(kernel=None, **kwargs):
    """NKI's ``nki.benchmark`` decorator (simulated latency): after ``bench(*inputs)``, read
    ``bench.benchmark_result.nc_latency.get_latency_percentile(99)`` (microseconds)."""
    from trnsim.perf.benchmark import benchmark as _benchmark
    if kernel is not None:
        return _benchmark(_beta1(kernel), **kwargs)
    return lambda k: _benchmark(_beta1(k), **kwargs)


__all__ = ["tensor", "jit", "trace", "simulate_kernel", "trace_kernel", "profile", "benchmark", "baremetal", "Kernel", "KernelError",
           "Trace", "Instruction", "Operand", "Region", "Allocation", "isa", "language", "typing",
           "default_target", "limits_for"]
from trnsim.neuronxcc.nki import compiler  # noqa: F401,E402
