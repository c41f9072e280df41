"""A weight-stationary systolic array, stepped cycle by cycle (teaching model, pure numpy).

The NeuronCore Tensor Engine is a 128x128 systolic array (N-ARCH2, hardware.md section 3.1).
``nc_matmul(stationary[K, M], moving[K, N])`` writes ``stationary.T @ moving`` ([M, N]) to PSUM:
the contraction dimension K runs down the array's rows (SBUF partitions), the stationary free
dimension M across its columns, and the N columns of the moving tensor stream through.

This module models that dataflow on a small K x M array, one clock cycle at a time:

* **weights stay put**: processing element (PE) ``(k, m)`` holds ``stationary[k, m]``
  (loaded beforehand; on the hardware that is its own LoadStationary instruction);
* **moving data flows right**: ``moving[k, n]`` enters row ``k`` at the left edge at cycle
  ``n + k`` (the *skew*: row k starts k cycles late) and moves one PE to the right per cycle;
* **partial sums flow down**: each cycle a PE adds ``weight x moving value`` to the partial sum
  it received from the PE above and passes it down; the sum leaving the bottom of column ``m``
  is ``out[m, n] = sum_k stationary[k, m] * moving[k, n]``.

Register-transfer rule at cycle t (``a`` = moving register, ``p`` = partial-sum register)::

    a[k, m](t) = a[k, m-1](t-1)             (m > 0);    a[k, 0](t) = moving[k, t-k] if 0 <= t-k < N
    p[k, m](t) = p[k-1, m](t-1) + w[k, m] * a[k, m](t)  (p[-1, m] = 0)

so ``moving[k, n]`` sits in PE ``(k, m)`` at cycle ``n + k + m`` and ``out[m, n]`` leaves the
array at the end of cycle ``n + (K-1) + m``. The whole product takes ``N + K + M - 2`` cycles
(indices 0 .. N+K+M-3): ``N`` to stream the data plus ``K + M - 2`` to fill and drain the pipeline.
Back-to-back matmuls overlap fill and drain, which is why NKI's cost formula charges about
``N_moving`` cycles per instruction (``trnsim.perf.cost.matmul_cycles``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_TEACHING_DIM = 16
"""Largest K, M or N the stepper accepts: it keeps every cycle's state for plotting."""


@dataclass(frozen=True)
class SystolicState:
    """The array at the end of one cycle (arrays are [K, M] unless noted)."""

    cycle: int
    moving_value: np.ndarray       # value in each PE's moving register (0 where empty)
    moving_column: np.ndarray      # which moving column n that value belongs to (-1 = empty)
    partial_sum: np.ndarray        # partial sum each PE passes down
    active: np.ndarray             # bool: the PE did a useful multiply-add this cycle
    outputs_done: np.ndarray       # bool [M, N]: out[m, n] has left the array

    @property
    def active_pes(self) -> int:
        return int(self.active.sum())


@dataclass(frozen=True)
class SystolicRun:
    """Every cycle of ``stationary.T @ moving`` on a K x M weight-stationary array."""

    stationary: np.ndarray         # [K, M] weights held in the PEs
    moving: np.ndarray             # [K, N] data streamed through
    moving_value: np.ndarray       # [T, K, M]
    moving_column: np.ndarray      # [T, K, M] int, -1 = empty
    partial_sum: np.ndarray        # [T, K, M]
    out: np.ndarray                # [M, N] result (what lands in PSUM)
    out_cycle: np.ndarray          # [M, N] int: cycle at whose end out[m, n] leaves the array

    @property
    def k(self) -> int:
        return int(self.stationary.shape[0])

    @property
    def m(self) -> int:
        return int(self.stationary.shape[1])

    @property
    def n(self) -> int:
        return int(self.moving.shape[1])

    @property
    def cycles(self) -> int:
        """Total cycles from the first value entering to the last result leaving: N + K + M - 2."""
        return int(self.moving_value.shape[0])

    @property
    def macs(self) -> int:
        """Useful multiply-adds: K * M * N."""
        return self.k * self.m * self.n

    @property
    def utilisation(self) -> float:
        """Useful multiply-adds / (PEs x cycles): how busy the array was over the whole run."""
        return self.macs / (self.k * self.m * self.cycles)

    def state(self, cycle: int) -> SystolicState:
        """The array at the end of ``cycle`` (0-based); raises ValueError outside the run."""
        if not 0 <= int(cycle) < self.cycles:
            raise ValueError(f"cycle {cycle} is outside this run: valid cycles are 0..{self.cycles - 1} "
                             f"(N + K + M - 2 = {self.cycles} cycles)")
        t = int(cycle)
        col = self.moving_column[t]
        return SystolicState(t, self.moving_value[t], col, self.partial_sum[t], col >= 0, self.out_cycle <= t)

    def entry_cycle(self, k: int, n: int) -> int:
        """Cycle at which moving[k, n] enters row k at the left edge (the skew)."""
        return n + k


def _check_operand(name: str, x: np.ndarray) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 2:
        raise ValueError(f"systolic matmul: {name} must be 2-D [K, free], got shape {a.shape}")
    if min(a.shape) < 1:
        raise ValueError(f"systolic matmul: {name} has an empty dimension {a.shape}")
    if max(a.shape) > MAX_TEACHING_DIM:
        raise ValueError(f"systolic matmul: {name} shape {a.shape} is larger than the teaching limit "
                         f"{MAX_TEACHING_DIM} per dimension (the stepper stores every cycle); use a smaller example, "
                         "or trnsim.models.matmul_math.tile_mapping for real sizes")
    if not np.issubdtype(a.dtype, np.number):
        raise ValueError(f"systolic matmul: {name} must be numeric, got dtype {a.dtype}")
    return a.astype(np.float64)


def simulate_systolic(stationary: np.ndarray, moving: np.ndarray) -> SystolicRun:
    """Run ``stationary.T @ moving`` cycle by cycle. ``stationary`` is [K, M], ``moving`` [K, N].

    Arithmetic is float64 (the teaching model shows the dataflow, not rounding; notebook 07 covers
    bf16 and fp32 PSUM accumulation). Pure: no state outside the returned record.
    """
    w = _check_operand("stationary", stationary)
    x = _check_operand("moving", moving)
    if w.shape[0] != x.shape[0]:
        raise ValueError(f"systolic matmul: stationary [K={w.shape[0]}, M] and moving [K={x.shape[0]}, N] must share "
                         "the contraction (partition) dimension K; transpose or slice one of them")
    k_dim, m_dim = w.shape
    n_dim = x.shape[1]
    cycles = n_dim + k_dim + m_dim - 2
    a_val = np.zeros((cycles, k_dim, m_dim))
    a_col = np.full((cycles, k_dim, m_dim), -1, dtype=np.int64)
    psum = np.zeros((cycles, k_dim, m_dim))
    out = np.zeros((m_dim, n_dim))
    out_cycle = np.full((m_dim, n_dim), -1, dtype=np.int64)
    prev_val = np.zeros((k_dim, m_dim))
    prev_col = np.full((k_dim, m_dim), -1, dtype=np.int64)
    prev_p = np.zeros((k_dim, m_dim))
    rows = np.arange(k_dim)
    for t in range(cycles):
        val = np.empty_like(prev_val)
        col = np.empty_like(prev_col)
        val[:, 1:] = prev_val[:, :-1]                      # moving data hops one PE right
        col[:, 1:] = prev_col[:, :-1]
        n_in = t - rows                                    # skewed feed at the left edge
        feeding = (n_in >= 0) & (n_in < n_dim)
        col[:, 0] = np.where(feeding, n_in, -1)
        val[:, 0] = np.where(feeding, x[rows, np.clip(n_in, 0, n_dim - 1)], 0.0)
        above = np.vstack([np.zeros((1, m_dim)), prev_p[:-1]])   # partial sums hop one PE down
        p = above + w * np.where(col >= 0, val, 0.0)
        bottom = col[-1]
        done = bottom >= 0
        out[np.flatnonzero(done), bottom[done]] = p[-1, done]
        out_cycle[np.flatnonzero(done), bottom[done]] = t
        a_val[t], a_col[t], psum[t] = val, col, p
        prev_val, prev_col, prev_p = val, col, p
    return SystolicRun(w, x, a_val, a_col, psum, out, out_cycle)


def systolic_cycles(k: int, m: int, n: int) -> int:
    """Cycles for one isolated K x M array pass over N moving columns: N + K + M - 2."""
    for name, v in (("K", k), ("M", m), ("N", n)):
        if int(v) < 1:
            raise ValueError(f"systolic_cycles: {name}={v} must be >= 1")
    return int(n) + int(k) + int(m) - 2


def example_operands(k: int = 4, m: int = 3, n: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Small integer operands (values -3..3) that are easy to follow by eye: stationary [K, M], moving [K, N]."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-3, 4, size=(k, m)).astype(np.float64),
            rng.integers(-3, 4, size=(k, n)).astype(np.float64))


__all__ = ["MAX_TEACHING_DIM", "SystolicState", "SystolicRun", "simulate_systolic", "systolic_cycles",
           "example_operands"]
