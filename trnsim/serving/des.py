"""A small discrete-event simulation of an LLM service: Poisson arrivals, static vs continuous batching.

Service times come from the spec-based model in :mod:`trnsim.serving.estimate` (prefill of k
prompts, one decode step with b running requests), so the simulation inherits its assumptions.
Replicas (``devices // tp`` per instance, times ``instances``) pull from one shared FIFO queue.

* **static** batching: an idle replica takes up to ``max_batch`` waiting requests, prefills them
  together and decodes until all of them finish; newcomers wait for the whole batch.
* **continuous** (iteration-level) batching: between decode steps a replica admits waiting
  requests into free slots (one prefill iteration for the newcomers), and a request leaves as
  soon as its last token is produced.

Arrivals are drawn from ``np.random.default_rng(seed)``; the same seed gives the same result.
Consecutive decode steps with nothing to admit are advanced in one jump, so the event count
grows with the number of requests, not with the number of tokens.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trnsim.serving.estimate import (
    DTYPE_BYTES,
    _model,
    _neuron_weights_params,
    _validate,
    kv_bytes_per_token,
    step_times,
)
from trnsim.catalog.validation import check_int, type_error
from trnsim.serving.checks import check_estimate_args, check_instances_needed_args, check_simulate_args, check_work
from trnsim.serving.hardware import MODES, ServingError, serving_hardware


@dataclass(frozen=True)
class ServiceTimes:
    """Lookup tables in ms: ``prefill_ms[k]`` for k prompts, ``decode_ms[b]`` for b running requests."""

    prefill_ms: np.ndarray
    decode_ms: np.ndarray
    replicas_per_instance: int


def _check_service_times(times: Any, max_batch: int) -> None:
    """A ServiceTimes table: finite, non-negative times and at least one replica per instance."""
    if not isinstance(times, ServiceTimes):
        raise type_error(ServingError)(f"times={times!r}: must be a ServiceTimes from service_times() or None")
    for name in ("prefill_ms", "decode_ms"):
        arr = np.asarray(getattr(times, name), dtype=float)
        if arr.ndim != 1 or arr.size < max_batch + 1:
            raise ServingError(f"times.{name} has {arr.size} entries but max_batch={max_batch} needs "
                               f"{max_batch + 1}; rebuild the tables with service_times()")
        used = arr[1:max_batch + 1]
        if not np.all(np.isfinite(used)) or np.any(used <= 0):
            raise ServingError(f"times.{name}[1..{max_batch}] must be finite and > 0 ms (a step takes time), got "
                               f"{used[:4].tolist()}...; rebuild the tables with service_times()")
    check_int("times.replicas_per_instance", times.replicas_per_instance, error=ServingError, min_value=1,
              max_value=10**6)


@dataclass(frozen=True)
class SimResult:
    """Latency percentiles (ms) after warm-up, offered and served rate, full-batch capacity, busy fraction."""

    mode: str
    rate_rps: float
    instances: int
    replicas: int
    n_requests: int
    latency_p50_ms: float
    latency_p99_ms: float
    ttft_p50_ms: float
    ttft_p99_ms: float
    offered_rps: float
    throughput_rps: float
    capacity_rps: float
    output_tokens_per_s: float
    busy_fraction: float
    latencies_ms: np.ndarray = field(repr=False)
    ttft_ms: np.ndarray = field(repr=False)

    @property
    def stable(self) -> bool:
        """False when the arrival rate reaches the fleet's full-batch capacity (the queue then keeps growing)."""
        return self.rate_rps < self.capacity_rps

    def summary(self) -> str:
        flag = "" if self.stable else " (OVERLOADED: queue grows)"
        return (
            f"{self.mode} batching, {self.rate_rps:g} req/s on {self.instances} instance(s) / {self.replicas} replica(s): "
            f"latency p50 {self.latency_p50_ms:,.0f} ms, p99 {self.latency_p99_ms:,.0f} ms; TTFT p50 {self.ttft_p50_ms:,.0f} ms, "
            f"p99 {self.ttft_p99_ms:,.0f} ms; {self.offered_rps:.2f} req/s arrived (random draw), {self.throughput_rps:.2f} "
            f"completed (the run includes draining the last requests) of {self.capacity_rps:.2f} capacity{flag}"
        )


def service_times(model: Any, instance: str, tp: int, max_batch: int, input_tokens: int, output_tokens: int,
                  dtype: str = "bf16") -> ServiceTimes:
    """Prefill and decode-step times for every batch size 1..max_batch (mean decode context)."""
    check_estimate_args(model, instance, tp, max_batch, input_tokens, output_tokens, dtype, batch_name="max_batch")
    model = _model(model)
    hw = serving_hardware(instance)
    _validate(model, hw, tp, max_batch, input_tokens, output_tokens, dtype)
    b = DTYPE_BYTES[dtype]
    w = (_neuron_weights_params(model, tp) if hw.kind == "neuron" else model.params / tp) * b
    kv = kv_bytes_per_token(model, tp, dtype)
    if w + max_batch * (input_tokens + output_tokens) * kv > hw.device_memory_bytes:
        raise ServingError(
            f"max_batch={max_batch} does not fit in {hw.device_memory_bytes / 2**30:.1f} GiB per {hw.device_label} "
            f"of {instance} at tp={tp}; lower max_batch, raise tp, or use a larger instance"
        )
    pre = np.zeros(max_batch + 1)
    dec = np.zeros(max_batch + 1)
    for k in range(1, max_batch + 1):  # the estimator's own step times (one source for both)
        p, d = step_times(model, hw, tp, dtype, k, input_tokens, output_tokens)
        pre[k], dec[k] = p.total_ms, d.total_ms
    return ServiceTimes(pre, dec, hw.devices // tp)


def _run(arrivals_ms: np.ndarray, st: ServiceTimes, replicas: int, max_batch: int, out_tokens: int, mode: str):
    """The event loop, on plain Python floats and lists (numpy scalar indexing costs ~10x a list's in a loop
    like this; the arithmetic is the same float64). Returns (first-token times, completion times, busy ms)."""
    n = arrivals_ms.size
    arrivals = arrivals_ms.tolist()
    prefill_ms = st.prefill_ms.tolist()
    decode_ms = st.decode_ms.tolist()
    first = [math.nan] * n
    done = [math.nan] * n
    busy = 0.0
    nxt = 0  # next arrival not yet queued
    queue: list[int] = []
    qhead = 0
    running: list[list] = [[] for _ in range(replicas)]  # [request, tokens_left]
    heap = [(0.0, r) for r in range(replicas)]
    heapq.heapify(heap)
    completed = 0
    while completed < n:
        t, r = heapq.heappop(heap)
        while nxt < n and arrivals[nxt] <= t:
            queue.append(nxt)
            nxt += 1
        waiting = len(queue) - qhead
        run = running[r]
        if mode == "static":
            if run or waiting == 0:
                if waiting == 0 and not run:
                    heapq.heappush(heap, (arrivals[nxt] if nxt < n else math.inf, r))
                continue
            k = min(max_batch, waiting)
            batch = queue[qhead:qhead + k]
            qhead += k
            t_first = t + prefill_ms[k]
            t_end = t_first + (out_tokens - 1) * decode_ms[k]
            for q in batch:
                first[q] = t_first
                done[q] = t_end
            completed += k
            busy += t_end - t
            heapq.heappush(heap, (t_end, r))
            continue
        # continuous batching
        free = max_batch - len(run)
        if waiting and free:
            k = min(free, waiting)
            new = queue[qhead:qhead + k]
            qhead += k
            dt = prefill_ms[k]
            for q in new:
                first[q] = t + dt
                if out_tokens == 1:
                    done[q] = t + dt
                    completed += 1
                else:
                    run.append([q, out_tokens - 1])
            busy += dt
            heapq.heappush(heap, (t + dt, r))
            continue
        if not run:
            heapq.heappush(heap, (arrivals[nxt] if nxt < n else math.inf, r))
            continue
        b = len(run)
        step = decode_ms[b]
        steps = min(x[1] for x in run)
        if free and nxt < n:  # stop early if a newcomer could be admitted
            steps = max(1, min(steps, math.ceil((arrivals[nxt] - t) / step)))
        t_end = t + steps * step
        keep = []
        for x in run:
            x[1] -= steps
            if x[1] <= 0:
                done[x[0]] = t_end
                completed += 1
            else:
                keep.append(x)
        running[r] = keep
        busy += steps * step
        heapq.heappush(heap, (t_end, r))
    return np.array(first), np.array(done), busy


def capacity_rps(st: ServiceTimes, max_batch: int, output_tokens: int) -> float:
    """Requests/s one instance sustains with every replica running full batches back to back."""
    per_batch_ms = st.prefill_ms[max_batch] + (output_tokens - 1) * st.decode_ms[max_batch]
    return st.replicas_per_instance * max_batch / (per_batch_ms / 1000.0)


def simulate(
    model: Any,
    instance: str,
    tp: int = 2,
    max_batch: int = 8,
    input_tokens: int = 512,
    output_tokens: int = 128,
    rate_rps: float = 1.0,
    mode: str = "continuous",
    *,
    instances: int = 1,
    n_requests: int = 1000,
    seed: int = 0,
    warmup_fraction: float = 0.1,
    dtype: str = "bf16",
    times: ServiceTimes | None = None,
) -> SimResult:
    """Simulate ``n_requests`` Poisson arrivals at ``rate_rps`` on ``instances`` copies of ``instance``.

    Latency is arrival to last token, in ms; the first ``warmup_fraction`` of requests is left
    out of the percentiles. Pass ``times`` (from :func:`service_times`) to reuse the tables.
    """
    check_simulate_args(model, instance, tp, max_batch, input_tokens, output_tokens, rate_rps, mode,
                        instances=instances, n_requests=n_requests, seed=seed, warmup_fraction=warmup_fraction,
                        dtype=dtype)
    if times is not None:
        _check_service_times(times, int(max_batch))
        check_work(int(n_requests), times.replicas_per_instance * int(instances))
    if mode not in MODES:
        raise ServingError(f"mode {mode!r} unknown: use one of {MODES}")
    if not rate_rps > 0:
        raise ServingError(f"rate_rps must be > 0 (got {rate_rps})")
    if instances < 1 or n_requests < 10:
        raise ServingError(f"need instances >= 1 and n_requests >= 10 (got {instances}, {n_requests})")
    if not 0 <= warmup_fraction < 0.9:
        raise ServingError(f"warmup_fraction must be in [0, 0.9) (got {warmup_fraction})")
    st = times or service_times(model, instance, tp, max_batch, input_tokens, output_tokens, dtype)
    check_work(n_requests, st.replicas_per_instance * instances)
    if st.decode_ms.size < max_batch + 1:
        raise ServingError("the service-time tables are shorter than max_batch; rebuild them with service_times()")
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1000.0 / rate_rps, n_requests))  # ms
    replicas = st.replicas_per_instance * instances
    first, done, busy = _run(arrivals, st, replicas, max_batch, output_tokens, mode)
    skip = int(warmup_fraction * n_requests)
    lat = (done - arrivals)[skip:]
    ttft = (first - arrivals)[skip:]
    span_ms = float(done.max() - arrivals[skip]) if n_requests > skip else float("nan")
    served = (n_requests - skip) / (span_ms / 1000.0)
    offered = (n_requests - skip) / max(float(arrivals[-1] - arrivals[skip]) / 1000.0, 1e-9)
    return SimResult(
        mode=mode, rate_rps=float(rate_rps), instances=instances, replicas=replicas, n_requests=n_requests,
        latency_p50_ms=float(np.percentile(lat, 50)), latency_p99_ms=float(np.percentile(lat, 99)),
        ttft_p50_ms=float(np.percentile(ttft, 50)), ttft_p99_ms=float(np.percentile(ttft, 99)),
        offered_rps=float(offered), throughput_rps=float(served), capacity_rps=capacity_rps(st, max_batch, output_tokens) * instances,
        output_tokens_per_s=float(served * output_tokens),
        busy_fraction=float(min(1.0, busy / (replicas * float(done.max())))),
        latencies_ms=lat, ttft_ms=ttft,
    )


def instances_needed(
    model: Any,
    instance: str,
    tp: int,
    max_batch: int,
    input_tokens: int,
    output_tokens: int,
    rate_rps: float,
    p99_latency_ms: float,
    mode: str = "continuous",
    *,
    metric: str = "latency",
    max_instances: int = 64,
    n_requests: int = 1000,
    seed: int = 0,
    dtype: str = "bf16",
) -> tuple[int | None, SimResult | None]:
    """Fewest instances whose simulated p99 meets ``p99_latency_ms`` (None if none up to the cap).

    ``metric='latency'`` checks arrival-to-last-token; ``metric='ttft'`` checks time to first token.
    """
    check_instances_needed_args(model, instance, tp, max_batch, input_tokens, output_tokens, rate_rps, p99_latency_ms,
                                mode, metric=metric, max_instances=max_instances, n_requests=n_requests, seed=seed,
                                dtype=dtype)
    if metric not in ("latency", "ttft"):
        raise ServingError(f"metric must be 'latency' or 'ttft' (got {metric!r})")
    st = service_times(model, instance, tp, max_batch, input_tokens, output_tokens, dtype)
    best = st.prefill_ms[1] + (output_tokens - 1) * st.decode_ms[1] if metric == "latency" else st.prefill_ms[1]
    if best > p99_latency_ms:
        return None, None  # even an idle replica with one request misses the objective
    n = max(1, math.floor(rate_rps / capacity_rps(st, max_batch, output_tokens)) + 1)  # smallest stable fleet
    last = None
    while n <= max_instances:
        res = simulate(model, instance, tp, max_batch, input_tokens, output_tokens, rate_rps, mode,
                       instances=n, n_requests=n_requests, seed=seed, dtype=dtype, times=st)
        last = res
        p99 = res.latency_p99_ms if metric == "latency" else res.ttft_p99_ms
        if res.stable and p99 <= p99_latency_ms:
            return n, res
        n += 1
    return None, last
