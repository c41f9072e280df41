"""Argument checks at the boundary of trnsim.serving's public functions (raise :class:`ServingError`).

Upper bounds are this simulator's limits (what it holds and computes in seconds), not
hardware facts; each error says which limit was hit and what to do.
"""
from __future__ import annotations

from typing import Any

from trnsim.serving.hardware import DTYPE_BYTES, MODES, ServingError
from trnsim.catalog.validation import (
    check_choice,
    check_int,
    check_number,
    check_positive,
    check_str,
    type_error,
)

MAX_TP = 1024
MAX_BATCH = 100_000
"""Simulator limit on requests served together (service-time tables have one row per batch size)."""
MAX_TOKENS = 10_000_000
"""Simulator limit on prompt or answer length in tokens."""
MAX_REQUESTS = 1_000_000
"""Simulator limit on simulated requests."""
MAX_INSTANCES = 4096
"""Simulator limit on instances in one simulated fleet."""
MAX_REPLICA_EVENTS = 4_000_000
"""Simulator limit on n_requests x replicas: idle replicas wake at every arrival, so the work grows with both."""
MAX_RATE_RPS = 1e7


def check_instance(instance: Any) -> str:
    return check_str("instance", instance, error=ServingError, what="an instance name such as 'inf2.48xlarge'")


def check_model_like(model: Any) -> None:
    """A model object's dimensions are positive whole numbers (a name is looked up elsewhere)."""
    if isinstance(model, str):
        return
    for attr in ("n_layers", "d_model", "n_heads", "n_kv_heads", "vocab_size"):
        if not hasattr(model, attr):
            raise type_error(ServingError)(
                f"model={model!r} lacks {attr!r}; pass a trnsim.training.ModelSpec or its name")
        check_int(f"model.{attr}", getattr(model, attr), error=ServingError, min_value=1, max_value=10**9,
                  fix="model dimensions are positive counts")
    params = getattr(model, "params", None)
    if params is None:
        raise type_error(ServingError)(f"model={model!r} lacks 'params'; pass a trnsim.training.ModelSpec or its name")
    check_positive("model.params", params, error=ServingError, max_value=1e15)


def check_shape(tp: Any, batch: Any, input_tokens: Any, output_tokens: Any, dtype: Any, *,
                batch_name: str = "batch") -> None:
    """tp, batch and token counts are whole numbers in range; dtype is a string."""
    check_int("tp", tp, error=ServingError, min_value=1, max_value=MAX_TP, allow_integral_float=False,
              fix="the number of devices one model copy is split over")
    check_int(batch_name, batch, error=ServingError, min_value=1, max_value=MAX_BATCH, allow_integral_float=False,
              fix=f"requests served together; the simulator holds at most {MAX_BATCH}")
    check_int("input_tokens", input_tokens, error=ServingError, min_value=1, max_value=MAX_TOKENS,
              allow_integral_float=False, fix="prompt length in tokens")
    check_int("output_tokens", output_tokens, error=ServingError, min_value=1, max_value=MAX_TOKENS,
              allow_integral_float=False, fix="answer length in tokens")
    check_choice("dtype", dtype, tuple(DTYPE_BYTES), error=ServingError)


def check_estimate_args(model: Any, instance: Any, tp: Any, batch: Any, input_tokens: Any, output_tokens: Any,
                        dtype: Any, *, batch_name: str = "batch") -> None:
    check_model_like(model)
    check_instance(instance)
    check_shape(tp, batch, input_tokens, output_tokens, dtype, batch_name=batch_name)


def check_simulate_args(model: Any, instance: Any, tp: Any, max_batch: Any, input_tokens: Any, output_tokens: Any,
                        rate_rps: Any, mode: Any, *, instances: Any, n_requests: Any, seed: Any,
                        warmup_fraction: Any, dtype: Any) -> None:
    """Arguments of :func:`trnsim.serving.simulate` (its ``times`` table is checked by the simulator, which owns it)."""
    check_choice("mode", mode, MODES, error=ServingError)
    check_estimate_args(model, instance, tp, max_batch, input_tokens, output_tokens, dtype, batch_name="max_batch")
    check_positive("rate_rps", rate_rps, error=ServingError, max_value=MAX_RATE_RPS, fix="requests per second")
    check_int("instances", instances, error=ServingError, min_value=1, max_value=MAX_INSTANCES,
              allow_integral_float=False, fix=f"the simulator holds at most {MAX_INSTANCES} instances")
    check_int("n_requests", n_requests, error=ServingError, min_value=10, max_value=MAX_REQUESTS,
              allow_integral_float=False, fix="at least 10 for percentiles")
    check_seed(seed)
    check_number("warmup_fraction", warmup_fraction, error=ServingError, min_value=0.0, max_value=0.9, max_open=True)


def check_seed(seed: Any) -> None:
    check_int("seed", seed, error=ServingError, min_value=0, max_value=2**63 - 1, allow_integral_float=False,
              fix="any non-negative integer; the same seed gives the same result")


def check_work(n_requests: int, replicas: int) -> None:
    if n_requests * replicas > MAX_REPLICA_EVENTS:
        raise ServingError(
            f"n_requests x replicas = {n_requests:,} x {replicas:,} = {n_requests * replicas:,} exceeds the "
            f"simulator limit of {MAX_REPLICA_EVENTS:,}; simulate fewer requests or fewer instances "
            "(percentiles settle after a few thousand requests)")


def check_instances_needed_args(model: Any, instance: Any, tp: Any, max_batch: Any, input_tokens: Any,
                                output_tokens: Any, rate_rps: Any, p99_latency_ms: Any, mode: Any, *, metric: Any,
                                max_instances: Any, n_requests: Any, seed: Any, dtype: Any) -> None:
    check_choice("mode", mode, MODES, error=ServingError)
    check_choice("metric", metric, ("latency", "ttft"), error=ServingError)
    check_estimate_args(model, instance, tp, max_batch, input_tokens, output_tokens, dtype, batch_name="max_batch")
    check_positive("rate_rps", rate_rps, error=ServingError, max_value=MAX_RATE_RPS, fix="requests per second")
    check_positive("p99_latency_ms", p99_latency_ms, error=ServingError, fix="the latency objective in ms")
    check_int("max_instances", max_instances, error=ServingError, min_value=1, max_value=MAX_INSTANCES,
              allow_integral_float=False)
    check_int("n_requests", n_requests, error=ServingError, min_value=10, max_value=MAX_REQUESTS,
              allow_integral_float=False)
    check_seed(seed)

