"""Roofline of one NeuronCore: Tensor Engine peak vs memory bandwidth (pure).

Arithmetic intensity is counted against HBM traffic only, as NKI's matmul tutorial and performance
guide do, because SBUF bandwidth (~20x HBM) sustains TensorE peak (nki.md s.4.3). Two memory roofs:
the per-core share of the chip's HBM bandwidth (spec) and the ceiling the model's DMA engines can
reach (16 x achievable per-engine rate, capped by that share), which is what kernels can attain.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from trnsim.perf.cost import tensor_peak_tflops
from trnsim.perf.dma import dma_params
from trnsim.perf.schedule import _resolve_target


@dataclass(frozen=True)
class Roofline:
    target: str
    dtype: str
    peak_tflops: float                   # TensorE peak for dtype (rows x cols x 2 x clock; /4 fp32)
    hbm_gbytes_per_s: float              # per-core share of chip HBM bandwidth
    dma_gbytes_per_s: float              # attainable DMA ceiling per core (model)

    @property
    def ridge_flops_per_byte(self) -> float:
        """Intensity above which the attainable DMA ceiling no longer limits (FLOP/byte)."""
        return self.peak_tflops * 1e3 / self.dma_gbytes_per_s

    @property
    def hbm_ridge_flops_per_byte(self) -> float:
        return self.peak_tflops * 1e3 / self.hbm_gbytes_per_s

    def attainable_tflops(self, intensity: Any, spec_hbm: bool = False) -> Any:
        """min(peak, intensity x bandwidth) in TFLOP/s, elementwise for arrays."""
        bw = self.hbm_gbytes_per_s if spec_hbm else self.dma_gbytes_per_s
        return np.minimum(self.peak_tflops, np.asarray(intensity, dtype=float) * bw / 1e3)


def roofline(target: Any = "trn1", dtype: str = "bfloat16") -> Roofline:
    """Roofline for a target name or TargetSpec and a matmul dtype."""
    tgt = _resolve_target(target)
    if dtype not in ("bfloat16", "float16", "tfloat32", "float8_e4m3", "float8_e5m2", "float32"):
        raise ValueError(f"roofline dtype {dtype!r} is not a TensorE matmul dtype; use bfloat16, float16, "
                         "tfloat32, float8_e4m3, float8_e5m2 or float32")
    p = dma_params(tgt.core, tgt.chip)
    return Roofline(str(tgt.name), dtype, tensor_peak_tflops(tgt.core, fp32=(dtype == "float32")),
                    p.hbm_core_bytes_per_ns, p.peak_bytes_per_ns)


def matmul_intensity(m: int, k: int, n: int, itemsize: int = 2) -> float:
    """Algorithmic intensity of C[m,n] = A[m,k] @ B[k,n] reading A, B and writing C once (FLOP/byte)."""
    return 2.0 * m * n * k / (itemsize * (m * k + k * n + m * n))


__all__ = ["Roofline", "roofline", "matmul_intensity"]
