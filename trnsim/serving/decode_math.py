"""The arithmetic of one decode step: weight streaming, KV-cache reads and FLOPs, per device.

A decode step at batch ``B`` with ``S`` tokens of context per request, on one of ``tp`` devices:

* weights: every layer's parameters plus the output head, ``W_params x bytes / tp``, read once;
* KV cache: ``B x S x kv_bytes_per_token(tp)`` bytes read;
* compute: ``2 x matmul_params / tp`` FLOPs per request (2 per multiply-add).

Streaming runs at the device's HBM bandwidth, capped on Neuron by the core's DMA ceiling (the
same rate :func:`trnsim.serving.compute_bound_batch` uses); compute at the dense peak. The step is
*memory bound* while ``weights_s + kv_s > compute_s``. Ignoring the KV term, decode turns compute
bound at the batch where ``B x 2 P / C = P x bytes / W``, about ``C / W`` requests for 2-byte weights
(the scaling book's "critical batch size", ``inference.md``); with the KV term it turns compute bound
only if a request's FLOPs outlast its KV reads, which caps the context (:func:`max_compute_bound_context`).
"""
from __future__ import annotations

from dataclasses import dataclass
import math
from typing import Any

from trnsim.serving.estimate import DTYPE_BYTES, _model, kv_bytes_per_token, matmul_params, weights_read_params
from trnsim.serving.hardware import ServingHardware, serving_hardware
from trnsim.training.scaling import ScalingError, check_count

__all__ = ["DecodeTerms", "critical_batch_weights_only", "decode_terms",
           "max_compute_bound_context", "stream_bytes_per_s", "tp_decode_allreduce_bytes"]


def stream_bytes_per_s(hw: ServingHardware) -> float:
    """Bytes/s one device streams from HBM: its HBM share, capped by the NeuronCore's DMA ceiling."""
    from trnsim.training.recipes import core_engines

    eng = core_engines(hw.core_version or "", hw.lnc) if hw.kind == "neuron" else None
    return min(hw.device_hbm_bytes_per_s, eng.dma_bytes_per_s) if eng else hw.device_hbm_bytes_per_s


def _check(model: Any, instance: str, tp: int, dtype: str) -> tuple[Any, ServingHardware, int]:
    m = _model(model)
    hw = serving_hardware(instance)
    t = check_count("tp", tp)
    if t > hw.devices:
        raise ScalingError(f"tp={t} exceeds the {hw.devices} devices of {instance}; use tp <= {hw.devices}")
    if dtype not in DTYPE_BYTES or dtype not in hw.device_tflops:
        raise ScalingError(f"dtype={dtype!r} is not one {instance} serves; use one of "
                           f"{sorted(set(DTYPE_BYTES) & set(hw.device_tflops))}")
    return m, hw, t


@dataclass(frozen=True)
class DecodeTerms:
    """Physics time of one decode step per device, split into its three terms (seconds)."""

    batch: int
    context_tokens: int
    weights_s: float
    kv_s: float
    compute_s: float

    @property
    def memory_s(self) -> float:
        return self.weights_s + self.kv_s

    @property
    def step_s(self) -> float:
        """Streaming and compute overlap: the step takes the longer of the two."""
        return max(self.memory_s, self.compute_s)

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"


def decode_terms(model: Any, instance: str, tp: int, batch: int, context_tokens: int,
                 dtype: str = "bf16") -> DecodeTerms:
    """Weights, KV-cache and compute time of one decode step (physics only, no residual factor)."""
    m, hw, t = _check(model, instance, tp, dtype)
    b = check_count("batch", batch)
    s = check_count("context_tokens", context_tokens)
    stream = stream_bytes_per_s(hw)
    peak = hw.device_tflops[dtype] * 1e12
    return DecodeTerms(
        batch=b, context_tokens=s,
        weights_s=weights_read_params(m) * DTYPE_BYTES[dtype] / t / stream,
        kv_s=b * s * kv_bytes_per_token(m, t, dtype) / stream,
        compute_s=b * 2.0 * matmul_params(m) / t / peak,
    )


def critical_batch_weights_only(model: Any, instance: str, tp: int, dtype: str = "bf16") -> int:
    """Smallest batch at which decode FLOPs take as long as streaming the weights (KV reads ignored)."""
    m, hw, t = _check(model, instance, tp, dtype)
    w_s = weights_read_params(m) * DTYPE_BYTES[dtype] / t / stream_bytes_per_s(hw)
    per_req_s = 2.0 * matmul_params(m) / t / (hw.device_tflops[dtype] * 1e12)
    return int(math.ceil(w_s / per_req_s - 1e-9))


def max_compute_bound_context(model: Any, instance: str, tp: int, dtype: str = "bf16") -> float:
    """Context length (tokens) at which one request's KV reads take as long as its FLOPs.

    Beyond it decode stays memory bound at any batch (``compute_bound_batch`` returns None).
    """
    m, hw, t = _check(model, instance, tp, dtype)
    per_req_s = 2.0 * matmul_params(m) / t / (hw.device_tflops[dtype] * 1e12)
    return per_req_s * stream_bytes_per_s(hw) / kv_bytes_per_token(m, t, dtype)


def tp_decode_allreduce_bytes(model: Any, batch: int, tp: int, dtype: str = "bf16") -> float:
    """Bytes each rank sends per decode step for TP: two ring all-reduces per layer (after attention
    and after the MLP) of the ``batch x d_model`` activations, 2 (t-1)/t x n bytes each."""
    m = _model(model)
    b = check_count("batch", batch)
    t = check_count("tp", tp)
    if dtype not in DTYPE_BYTES:
        raise ScalingError(f"dtype={dtype!r} must be one of {sorted(DTYPE_BYTES)}")
    return m.n_layers * 2 * 2.0 * (t - 1) / t * b * m.d_model * DTYPE_BYTES[dtype]
