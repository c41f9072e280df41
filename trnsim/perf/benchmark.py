"""``nki.benchmark`` with NKI's result access path, on simulated time.

    bench = nki.benchmark(warmup=5, iters=10)(kernel)
    bench(a, b)                      # arrays or nt.tensor[[8192, 4096], nl.bfloat16] specs
    bench.benchmark_result.nc_latency.get_latency_percentile(99)   # microseconds

Like NKI's (nki.md s.1.1), the benchmark does not use the input values (outputs are undefined):
the kernel is traced shape-only (numerics=False) and scheduled once. The simulator is
deterministic and models no documented source of run-to-run variation, so every iteration has
the same latency and all percentiles are equal.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

from trnsim.perf.profile import Profile, profile

PERCENTILES: tuple[int, ...] = (0, 1, 10, 25, 50, 90, 99, 100)   # the ones NKI's result accepts (nki.md s.1.1)
_PLATFORM_ALIASES = {"gen2": "trn1", "gen3": "trn2", "gen4": "trn3", "trn1": "trn1", "trn2": "trn2", "trn3": "trn3",
                     "inf2": "inf2"}


class BenchmarkError(ValueError):
    """Bad benchmark arguments or access to a result before running."""


@dataclass(frozen=True)
class LatencyStats:
    """Per-iteration NeuronCore latencies in microseconds (simulated)."""

    latencies_us: tuple[float, ...]

    def get_latency_percentile(self, percentile: int) -> float:
        """Latency at ``percentile`` (one of 0, 1, 10, 25, 50, 90, 99, 100), in microseconds."""
        if percentile not in PERCENTILES:
            raise BenchmarkError(f"get_latency_percentile({percentile!r}): NKI reports percentiles {PERCENTILES} "
                                 "only; pick one of those")
        xs = sorted(self.latencies_us)
        k = round(percentile / 100 * (len(xs) - 1))
        return float(xs[k])

    @property
    def mean_us(self) -> float:
        return sum(self.latencies_us) / len(self.latencies_us)


@dataclass(frozen=True)
class BenchmarkResult:
    nc_latency: LatencyStats
    warmup: int
    iters: int
    profile: Profile


def _default_target() -> str:
    env = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "").strip().lower()
    return _PLATFORM_ALIASES.get(env, "trn1")


class BenchmarkKernel:
    """A kernel wrapped by ``benchmark``; call it to run, then read ``benchmark_result``."""

    def __init__(self, kernel: Callable, warmup: int, iters: int, target: str | None, grid: Any = None,
                 **kwargs: Any):
        self.kernel = kernel
        self.warmup = warmup
        self.iters = iters
        self.target = target
        self.grid = grid
        self.kwargs = kwargs
        self._result: BenchmarkResult | None = None
        self._parent: "BenchmarkKernel | None" = None
        self.__name__ = getattr(kernel, "__name__", "kernel")
        self.__doc__ = getattr(kernel, "__doc__", None)

    def __getitem__(self, grid: Any) -> "BenchmarkKernel":
        """SPMD launch ``bench[g0, g1](...)``."""
        g = grid if isinstance(grid, tuple) else (grid,)
        child = BenchmarkKernel(self.kernel, self.warmup, self.iters, self.target, g, **self.kwargs)
        child._parent = self   # bench[4](a, b) also fills bench.benchmark_result
        return child

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        target = self.target or _default_target()
        prof = profile(self.kernel, *args, target=target, numerics=False, grid=self.grid, **kwargs)
        lat = tuple([prof.latency_us] * self.iters)
        self._result = BenchmarkResult(LatencyStats(lat), self.warmup, self.iters, prof)
        if self._parent is not None:
            self._parent._result = self._result
        return None

    @property
    def benchmark_result(self) -> BenchmarkResult:
        if self._result is None:
            raise BenchmarkError(f"{self.__name__}.benchmark_result is empty: call the benchmarked kernel with its "
                                 "inputs first, e.g. bench(a, b)")
        return self._result


def benchmark(kernel: Callable | None = None, *, warmup: int = 10, iters: int = 100, target: str | None = None,
              **kwargs: Any) -> Any:
    """NKI's ``nki.benchmark``: use as ``benchmark(warmup=5, iters=10)(kernel)`` or ``@benchmark``.

    Defaults follow NKI (warmup 10, iters 100). ``target`` defaults to NEURON_PLATFORM_TARGET_OVERRIDE
    (trn1|gen2, trn2|gen3, trn3|gen4) or trn1. NKI's compile options (save_neff_name, save_trace_name,
    additional_compile_opt, artifacts_dir) are accepted and ignored: there is no compiler here.
    """
    for name, val, lo in (("warmup", warmup, 0), ("iters", iters, 1)):
        if not isinstance(val, int) or isinstance(val, bool) or val < lo:
            raise BenchmarkError(f"benchmark({name}={val!r}): {name} must be an integer >= {lo}")
    for k in ("save_neff_name", "save_trace_name", "additional_compile_opt", "artifacts_dir", "mode"):
        kwargs.pop(k, None)
    if kwargs:
        raise BenchmarkError(f"benchmark() got unexpected options {sorted(kwargs)}; accepted: warmup, iters, target "
                             "(and NKI's ignored compile options)")

    def wrap(k: Callable) -> BenchmarkKernel:
        return BenchmarkKernel(k, warmup, iters, target)

    return wrap(kernel) if kernel is not None else wrap


__all__ = ["benchmark", "BenchmarkKernel", "BenchmarkResult", "LatencyStats", "BenchmarkError", "PERCENTILES"]
