"""Tracer speed figures of issue 11 item 7 (run: ``python tests/bench_nki.py``; not part of the unit suite).

Every figure is the median of ``REPEATS`` runs after one untimed warm-up run (first-call costs such as imports
and caches are paid once per session, not per kernel).

1. Timing-only trace (``numerics=False``, shape-only inputs) of the tutorial-size matmul, stage 1 of the
   journey (``trnsim.kernels.matmul_tiled``), lhsT [8192, 4096] and rhs [8192, 8192] bf16: instructions per
   second of wall time and of process CPU time (the machine is shared; CPU time is the steadier figure); then
   the same for each of the four journey stages (99,328 / 68,608 / 52,224 / 40,192 instructions), since the
   blocked stages spend more per instruction (``--no-stages`` skips these). A machine-reference figure comes
   first: a fixed pure-Python workload's time, since tracer figures from different machines compare only with it.
2. Numerics-on simulation of the four journey stages at 2048^3 fp32 against numpy's ``a.T @ b`` in the same
   process (wall and CPU seconds; numpy's BLAS may use several threads, the simulator runs its tile matmuls
   single-threaded, see ``trnsim.nki._blas``), and against the same product on one BLAS thread. A floor comes
   with it: the tile products every stage performs (128 x 128 stationary by 128 x 512 moving, accumulated
   over K in place), done directly in numpy on one BLAS thread with no simulator and no tile copies. No
   simulator that runs the kernel's own tile matmuls can be faster than that floor.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import trnsim.nki as nki
import trnsim.nki.language as nl
import trnsim.nki.typing as nt
from trnsim.kernels import MATMUL_JOURNEY, matmul_tiled
from trnsim.nki._blas import single_thread_blas


REPEATS = 3


def _median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


class _Record:
    __slots__ = ("index", "reads", "deps")


def machine_reference_ms() -> float:
    """Wall milliseconds (median of 5) of a fixed pure-Python workload shaped like the tracer's (slotted records,
    small tuples, dict lookups, list appends): shared machines differ by 2x or more, so tracer figures taken on
    different machines compare only together with this figure."""
    def work() -> int:
        table: dict[int, list] = {}
        out = []
        for i in range(100_000):
            r = _Record()
            r.index = i
            r.reads = (i & 255, (i >> 8) & 255, i & 7)
            lst = table.get(r.reads[0])
            if lst is None:
                table[r.reads[0]] = [(i, i + 1)]
                r.deps = ()
            else:
                r.deps = tuple(e[0] for e in lst[-2:] if e[1] > r.reads[1])
                lst.append((i, i + 1))
            out.append(r)
        return len(out)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        work()
        times.append(time.perf_counter() - t0)
    return 1000 * _median(times)


def timing_only(k: int = 8192, m: int = 4096, n: int = 8192, target: str = "trn1", kernel=matmul_tiled) -> dict:
    """Median of REPEATS traces, after one small untimed trace (imports, caches: what a session pays once)."""
    nki.trace_kernel(kernel, nt.tensor[[2048, 2048], nl.bfloat16], nt.tensor[[2048, 2048], nl.bfloat16],
                     numerics=False, target=target)
    a, b = nt.tensor[[k, m], nl.bfloat16], nt.tensor[[k, n], nl.bfloat16]
    walls, cpus, count = [], [], 0
    for _ in range(REPEATS):
        t0, c0 = time.perf_counter(), time.process_time()
        _, trace = nki.trace_kernel(kernel, a, b, numerics=False, target=target)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        count = len(trace.instructions)
        del trace
    wall_s, cpu_s = _median(walls), _median(cpus)
    return {"instructions": count, "wall_s": wall_s, "cpu_s": cpu_s, "instructions_per_s": count / wall_s,
            "instructions_per_cpu_s": count / cpu_s}


def _timed(fn) -> tuple[float, float, object]:
    """Median wall and CPU seconds of REPEATS calls after one untimed warm-up call, and the last result."""
    fn()
    walls, cpus, out = [], [], None
    for _ in range(REPEATS):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return _median(walls), _median(cpus), out


def tile_products_floor(a: np.ndarray, b: np.ndarray, tile_k: int = 128, tile_m: int = 128,
                        tile_n: int = 512) -> np.ndarray:
    """``a.T @ b`` as the journey kernels compute it, in numpy alone: one ``tile_k x tile_m`` by ``tile_k x tile_n``
    product per (m, n, k), accumulated over k into one fp32 tile (PSUM), then written out. No loads are copied."""
    k_total, m_total = a.shape
    n_total = b.shape[1]
    out = np.empty((m_total, n_total), dtype=np.float32)
    acc = np.empty((tile_m, tile_n), dtype=np.float32)
    for m in range(0, m_total, tile_m):
        for n in range(0, n_total, tile_n):
            for k in range(0, k_total, tile_k):
                prod = a[k:k + tile_k, m:m + tile_m].T @ b[k:k + tile_k, n:n + tile_n]
                if k == 0:
                    acc[...] = prod
                else:
                    acc += prod
            out[m:m + tile_m, n:n + tile_n] = acc
    return out


def numerics(size: int = 2048) -> list[dict]:
    """Each journey stage and numpy's ``a.T @ b`` (its default threads), each warmed up once, medians of REPEATS."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    np_wall, np_cpu, ref = _timed(lambda: a.T @ b)
    with single_thread_blas():   # the same product on one BLAS thread, as the simulator runs its tile matmuls
        np1_wall, _, _ = _timed(lambda: a.T @ b)
        floor_wall, _, floor_out = _timed(lambda: tile_products_floor(a, b))
    assert np.allclose(floor_out, ref, rtol=1e-4, atol=1e-2), "tile_products_floor does not compute a.T @ b"
    rows = []
    for kernel in MATMUL_JOURNEY:
        wall_s, cpu_s, out = _timed(lambda: nki.simulate(kernel)(a, b))
        rows.append({"kernel": kernel.__name__, "wall_s": wall_s, "cpu_s": cpu_s, "numpy_wall_s": np_wall,
                     "numpy_cpu_s": np_cpu, "x_numpy_wall": wall_s / np_wall, "x_numpy_cpu": cpu_s / np_cpu,
                     "numpy_1thread_wall_s": np1_wall, "x_numpy_1thread_wall": wall_s / np1_wall,
                     "floor_wall_s": floor_wall, "x_floor_wall": wall_s / floor_wall,
                     "max_abs_err": float(np.abs(out - ref).max())})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="quick run: 2048^3 timing-only, 1024^3 numerics")
    ap.add_argument("--no-stages", action="store_true", help="skip the timing-only figure of each journey stage")
    args = ap.parse_args()
    size = (2048, 2048, 2048) if args.small else (8192, 4096, 8192)
    print(f"machine reference (pure-Python workload, lower is faster): {machine_reference_ms():.0f} ms")
    r = timing_only(*size)
    print(f"timing-only matmul_tiled: {r['instructions']:,} instructions in {r['wall_s']:.2f} s wall / "
          f"{r['cpu_s']:.2f} s CPU = {r['instructions_per_s']:,.0f} instr/s wall, "
          f"{r['instructions_per_cpu_s']:,.0f} instr/s CPU")
    for kernel in ([] if args.no_stages else MATMUL_JOURNEY):
        r = timing_only(*size, kernel=kernel)
        print(f"  timing-only {kernel.__name__:22s} {r['instructions']:>7,} instructions: "
              f"{r['instructions_per_s']:>8,.0f} instr/s wall, {r['instructions_per_cpu_s']:>8,.0f} instr/s CPU")
    rows = numerics(1024 if args.small else 2048)
    r0 = rows[0]
    print(f"floor: the tile products alone in numpy (one BLAS thread, no simulator) take {r0['floor_wall_s']:.2f} s = "
          f"{r0['floor_wall_s'] / r0['numpy_wall_s']:.1f}x numpy's a.T @ b wall, "
          f"{r0['floor_wall_s'] / r0['numpy_1thread_wall_s']:.1f}x on one BLAS thread")
    for row in rows:
        print(f"numerics {row['kernel']}: {row['wall_s']:.2f} s wall ({row['x_numpy_wall']:.1f}x numpy's "
              f"{row['numpy_wall_s']:.2f} s), {row['cpu_s']:.2f} s CPU ({row['x_numpy_cpu']:.1f}x numpy's "
              f"{row['numpy_cpu_s']:.2f} s), {row['x_numpy_1thread_wall']:.1f}x numpy on one BLAS thread "
              f"({row['numpy_1thread_wall_s']:.2f} s), {row['x_floor_wall']:.1f}x the floor, max |error| "
              f"{row['max_abs_err']:.1e}")


if __name__ == "__main__":
    main()
