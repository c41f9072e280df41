"""LLM inference on one instance from specifications: prefill, decode, KV cache, TP, cost.

Formulas (scaling-book ``inference.md`` as summarised in training.md 5.1; Megatron TP):

* weights held per device: ``params x bytes / tp``; weights *read* per forward pass: every
  layer plus the output head (``layers x layer params + vocab x d_model``); the input
  embedding table is only indexed, one row per token;
* KV cache per token: ``2 x layers x kv_heads x head_dim x bytes`` (kv heads split over TP,
  replicated when tp > kv_heads);
* decode step = ``max(T_compute, T_hbm) + T_collective``, with
  ``T_hbm = (weights read + batch x context x kv_per_token) / HBM bandwidth``,
  ``T_compute = batch x (2 x matmul params + 4 x layers x context x q_dim) / tp / peak`` and
  ``T_collective = 2 x layers x allreduce(batch x d_model x bytes)`` (one after attention, one
  after the MLP; on the critical path, so added, with their latency, not only bandwidth);
* prefill of ``batch`` prompts of S tokens: compute ``2 x matmul params x batch x S + 2 x layers x
  batch x S^2 x q_dim`` (causal attention), same max(.,.) + collectives form; TTFT = prefill time;
* peak figures are vendor dense peaks, so times are lower bounds (no efficiency is fitted).

Nothing here is fitted to published inference tables.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Protocol

from trnsim.serving import collectives
from trnsim.serving.checks import check_estimate_args, check_instance, check_model_like, check_shape
from trnsim.serving.hardware import GIB, ServingError, ServingHardware, serving_hardware

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
"""Bytes per element of each storage dtype (a definition, not a measured constant)."""


class ModelLike(Protocol):
    """What the estimator needs from a model (``trnsim.training.ModelSpec`` satisfies it)."""

    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_ff: int
    vocab_size: int

    @property
    def params(self) -> int: ...


@dataclass(frozen=True)
class PhaseTime:
    """One phase's time split (milliseconds): compute, HBM traffic and collectives."""

    compute_ms: float
    hbm_ms: float
    collective_ms: float
    collective_latency_ms: float

    @property
    def total_ms(self) -> float:
        return max(self.compute_ms, self.hbm_ms) + self.collective_ms

    @property
    def binding(self) -> str:
        """Which limit dominates: 'compute', 'HBM bandwidth', 'collective latency' or 'collective bandwidth'."""
        parts = {"compute": self.compute_ms, "HBM bandwidth": self.hbm_ms, "collective": self.collective_ms}
        top = max(parts, key=parts.get)
        if top != "collective":
            return top
        return "collective latency" if self.collective_latency_ms >= 0.5 * self.collective_ms else "collective bandwidth"


@dataclass(frozen=True)
class ServingEstimate:
    """Result of :func:`estimate`. Times in ms, memory in GiB per device, money in USD."""

    model: str
    instance: str
    tp: int
    batch: int
    input_tokens: int
    output_tokens: int
    dtype: str
    replicas: int
    prefill: PhaseTime
    decode: PhaseTime
    ttft_ms: float
    tpot_ms: float
    request_latency_ms: float
    tokens_per_s: float
    weights_gib_per_device: float
    kv_cache_gib_per_device: float
    device_memory_gib: float
    fits: bool
    usd_per_hour: float | None
    cost_per_million_output_tokens_usd: float | None
    price_note: str
    collective_model: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def memory_gib_per_device(self) -> float:
        return self.weights_gib_per_device + self.kv_cache_gib_per_device

    @property
    def binding(self) -> str:
        """The limit that binds decode (where the serving time goes)."""
        return self.decode.binding

    @property
    def requests_per_s(self) -> float:
        return self.tokens_per_s / self.output_tokens

    def summary(self) -> str:
        cost = (f"${self.cost_per_million_output_tokens_usd:,.2f} per 1M output tokens"
                if self.cost_per_million_output_tokens_usd is not None else "no public price")
        fit = "fits" if self.fits else "DOES NOT FIT"
        return (
            f"{self.model} on {self.instance} (tp={self.tp}, batch={self.batch}, {self.replicas} replica(s), {self.dtype}): "
            f"TTFT {self.ttft_ms:,.1f} ms, TPOT {self.tpot_ms:,.2f} ms, {self.tokens_per_s:,.0f} tok/s; "
            f"memory/device {self.memory_gib_per_device:.2f} of {self.device_memory_gib:.1f} GiB ({fit}); "
            f"decode bound by {self.binding}; {cost}"
        )


def _model(model: Any) -> Any:
    check_model_like(model)
    if isinstance(model, str):
        from trnsim.training import model as lookup

        try:
            return lookup(model)
        except KeyError as exc:
            raise ServingError(f"unknown model {model!r}: {exc}") from None
    for attr in ("n_layers", "d_model", "n_heads", "n_kv_heads", "params"):
        if not hasattr(model, attr):
            raise ServingError(f"model {model!r} lacks {attr!r}; pass a trnsim.training.ModelSpec or its name")
    return model


def head_dim(model: Any) -> int:
    return int(getattr(model, "head_dim", None) or model.d_model // model.n_heads)


def q_dim(model: Any) -> int:
    """Width of the query projection (``model.q_dim`` when the model defines it)."""
    return int(getattr(model, "q_dim", None) or model.n_heads * head_dim(model))


def matmul_params(model: Any) -> float:
    """Parameters a forward pass multiplies per token: all layers' matmul weights + the output head.

    Falls back to ``params`` for a model record that does not break its parameters down.
    """
    per_layer = getattr(model, "matmul_params_per_layer", None)
    if per_layer is None:
        return float(model.params)
    return float(model.n_layers * per_layer + model.vocab_size * model.d_model)


def weights_read_params(model: Any) -> float:
    """Parameters read from HBM per forward pass: all layer parameters + the output head.

    The input embedding table is only indexed (one row per token), so it is not streamed.
    Falls back to ``params`` for a model record that does not break its parameters down.
    """
    layers = getattr(model, "params_without_embeddings", None)
    if layers is None:
        return float(model.params)
    return float(layers + model.vocab_size * model.d_model)


def kv_bytes_per_token(model: Any, tp: int = 1, dtype: str = "bf16") -> float:
    """KV-cache bytes per token per device: 2 x layers x kv_heads_on_device x head_dim x bytes."""
    check_model_like(model)
    check_shape(tp, 1, 1, 1, dtype)
    model = _model(model)
    kv_dev = math.ceil(model.n_kv_heads / tp) if tp <= model.n_kv_heads else 1
    return 2.0 * model.n_layers * kv_dev * head_dim(model) * DTYPE_BYTES[dtype]


def _validate(model: Any, hw: ServingHardware, tp: int, batch: int, input_tokens: int, output_tokens: int, dtype: str) -> None:
    if dtype not in DTYPE_BYTES:
        raise ServingError(f"dtype {dtype!r} unknown: use one of {tuple(DTYPE_BYTES)}")
    if dtype not in hw.device_tflops:
        raise ServingError(f"{hw.instance} has no {dtype} peak in the data (has {tuple(hw.device_tflops)}); use bf16")
    for name, v in (("tp", tp), ("batch", batch), ("input_tokens", input_tokens), ("output_tokens", output_tokens)):
        if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 1:
            raise ServingError(f"{name} must be a positive integer (got {v!r})")
    if tp > hw.devices:
        raise ServingError(
            f"tp={tp} exceeds the {hw.devices} {hw.device_label}s of {hw.instance}; use tp <= {hw.devices} "
            "or a larger instance"
        )
    if model.n_heads % tp:
        raise ServingError(
            f"tp={tp} must divide the model's {model.n_heads} attention heads (each device holds whole heads); "
            f"try tp in {[d for d in range(1, hw.devices + 1) if model.n_heads % d == 0]}"
        )
    max_seq = getattr(model, "max_seq_len", None)
    if max_seq and input_tokens + output_tokens > max_seq:
        raise ServingError(
            f"input_tokens + output_tokens = {input_tokens + output_tokens} exceeds the model's context "
            f"window of {max_seq} tokens; shorten the prompt or the answer"
        )


def _phase(model, hw, tp, dtype, tokens, attn_flops, weights_dev, kv_read_dev) -> PhaseTime:
    """Time of one forward pass over ``tokens`` new tokens (summed over the batch).

    ``weights_dev``: weight bytes read per device; ``kv_read_dev``: KV-cache bytes read or written.
    """
    peak = hw.device_tflops[dtype] * 1e12
    flops_dev = (2.0 * matmul_params(model) * tokens + attn_flops) / tp
    bytes_dev = weights_dev + kv_read_dev
    compute_ms = flops_dev / peak * 1e3
    hbm_ms = bytes_dev / hw.device_hbm_bytes_per_s * 1e3
    if tp > 1:
        msg = tokens * model.d_model * DTYPE_BYTES[dtype]
        one, alpha = collectives.allreduce_parts(hw.instance, tp, msg)
        n_ar = 2 * model.n_layers
        return PhaseTime(compute_ms, hbm_ms, n_ar * one / 1e3, n_ar * alpha / 1e3)
    return PhaseTime(compute_ms, hbm_ms, 0.0, 0.0)


def estimate(
    model: ModelLike | str,
    instance: str,
    tp: int = 1,
    batch: int = 1,
    input_tokens: int = 512,
    output_tokens: int = 128,
    dtype: str = "bf16",
) -> ServingEstimate:
    """Serving estimate for ``model`` (ModelSpec or name) on ``instance`` with TP degree ``tp``.

    ``batch`` requests are served together (static batching): TTFT is the prefill of the whole
    batch; TPOT is one decode step at the mean context ``input + output/2``; memory must hold
    the weights and the KV cache at the full context ``input + output``. The instance runs
    ``devices // tp`` independent replicas; throughput and cost count all of them.
    """
    check_estimate_args(model, instance, tp, batch, input_tokens, output_tokens, dtype)
    model = _model(model)
    hw = serving_hardware(instance)
    _validate(model, hw, tp, batch, input_tokens, output_tokens, dtype)
    b = DTYPE_BYTES[dtype]
    weights_dev = model.params * b / tp  # resident
    read_dev = weights_read_params(model) * b / tp  # streamed per forward pass
    kv_tok_dev = kv_bytes_per_token(model, tp, dtype)
    qd = q_dim(model)
    L = model.n_layers

    s = input_tokens
    prefill_attn = 2.0 * L * batch * s * s * qd
    prefill = _phase(model, hw, tp, dtype, batch * s, prefill_attn, read_dev, batch * s * kv_tok_dev)

    ctx_mean = input_tokens + output_tokens / 2.0
    decode_attn = 4.0 * L * batch * ctx_mean * qd
    decode = _phase(model, hw, tp, dtype, batch, decode_attn, read_dev, batch * ctx_mean * kv_tok_dev)

    ttft = prefill.total_ms
    tpot = decode.total_ms
    latency = ttft + (output_tokens - 1) * tpot
    replicas = hw.devices // tp
    tok_s = replicas * batch * output_tokens / (latency / 1e3)
    kv_dev = batch * (input_tokens + output_tokens) * kv_tok_dev
    mem = hw.device_memory_bytes
    fits = weights_dev + kv_dev <= mem
    cost = hw.usd_per_hour / (tok_s * 3600.0) * 1e6 if hw.usd_per_hour is not None else None
    notes = []
    if tp > model.n_kv_heads:
        notes.append(f"tp={tp} > {model.n_kv_heads} KV heads: KV heads are replicated across devices")
    if replicas * tp < hw.devices:
        notes.append(f"{hw.devices - replicas * tp} {hw.device_label}(s) idle: {hw.devices} is not a multiple of tp={tp}")
    return ServingEstimate(
        model=getattr(model, "name", "model"), instance=instance, tp=tp, batch=batch,
        input_tokens=input_tokens, output_tokens=output_tokens, dtype=dtype, replicas=replicas,
        prefill=prefill, decode=decode, ttft_ms=ttft, tpot_ms=tpot, request_latency_ms=latency,
        tokens_per_s=tok_s, weights_gib_per_device=weights_dev / GIB, kv_cache_gib_per_device=kv_dev / GIB,
        device_memory_gib=mem / GIB, fits=fits, usd_per_hour=hw.usd_per_hour,
        cost_per_million_output_tokens_usd=cost, price_note=hw.price_note,
        collective_model=collectives.method() if tp > 1 else "none (tp=1)", notes=tuple(notes),
    )


def max_batch(model: Any, instance: str, tp: int, input_tokens: int, output_tokens: int, dtype: str = "bf16") -> int:
    """Largest batch whose weights + KV cache fit per device (0 if the weights alone do not fit)."""
    check_estimate_args(model, instance, tp, 1, input_tokens, output_tokens, dtype)
    model = _model(model)
    hw = serving_hardware(instance)
    _validate(model, hw, tp, 1, input_tokens, output_tokens, dtype)
    free = hw.device_memory_bytes - model.params * DTYPE_BYTES[dtype] / tp
    per_req = (input_tokens + output_tokens) * kv_bytes_per_token(model, tp, dtype)
    return max(0, int(free // per_req))


def valid_tp(model: Any, instance: str) -> list[int]:
    """TP degrees allowed for ``model`` on ``instance`` (divide the heads; GPUs: 1 only)."""
    check_model_like(model)
    check_instance(instance)
    model = _model(model)
    hw = serving_hardware(instance)
    if hw.kind != "neuron":
        return [1]
    return [d for d in range(1, hw.devices + 1) if model.n_heads % d == 0]
