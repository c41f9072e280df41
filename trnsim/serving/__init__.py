"""LLM serving on Inferentia/Trainium (and the L4 GPUs of g6) from specifications.

``estimate(model, instance, tp, batch, input_tokens, output_tokens, dtype)`` gives TTFT, TPOT,
throughput, memory per device, cost per million output tokens and the binding limit;
``simulate(...)`` (module :mod:`trnsim.serving.des`) runs a seeded discrete-event simulation of
Poisson arrivals under static or continuous batching for capacity planning.
"""
from trnsim.serving.estimate import (
    DTYPE_BYTES,
    ModelLike,
    PhaseTime,
    ServingEstimate,
    compute_bound_batch,
    estimate,
    kv_bytes_per_token,
    max_batch,
    valid_tp,
)
from trnsim.serving.hardware import ServingError, ServingHardware, serving_hardware

__all__ = [
    "DTYPE_BYTES", "ModelLike", "compute_bound_batch", "PhaseTime", "ServingEstimate", "ServingError", "ServingHardware",
    "estimate", "kv_bytes_per_token", "max_batch", "serving_hardware", "valid_tp",
]

from trnsim.serving.des import ServiceTimes, SimResult, instances_needed, service_times, simulate  # noqa: E402

__all__ += ["ServiceTimes", "SimResult", "instances_needed", "service_times", "simulate"]
