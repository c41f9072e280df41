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
from trnsim.serving.hardware import DTYPE_BYTES, GIB, ServingError, ServingHardware, serving_hardware
from trnsim.training.recipes import kv_heads_per_device, padded_heads, supported_tp


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
    engine_ms: float = 0.0  # softmax on the Scalar/Vector engines (Neuron)
    fixed_ms: float = 0.0  # per-operator fixed costs (one DMA start per dependent operator)
    residual: float = 1.0  # calibrated framework factor (1.0 = physics only)

    @property
    def physics_ms(self) -> float:
        return max(self.compute_ms, self.hbm_ms) + self.engine_ms + self.collective_ms + self.fixed_ms

    @property
    def total_ms(self) -> float:
        return self.physics_ms * self.residual

    @property
    def binding(self) -> str:
        """Which limit dominates: 'compute', 'HBM bandwidth', 'collective latency' or 'collective bandwidth'."""
        parts = {"compute": self.compute_ms, "HBM bandwidth": self.hbm_ms, "collective": self.collective_ms,
                 "per-operator overhead": self.fixed_ms, "softmax engines": self.engine_ms}
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
        if not self.fits:   # a plan that cannot run has no cost per token to quote
            cost = "no cost per token (it does not fit)"
        elif self.cost_per_million_output_tokens_usd is None:
            cost = "no price in the sources"
        else:
            cost = f"${self.cost_per_million_output_tokens_usd:,.2f} per 1M output tokens ({self.price_note})"
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
    kv_dev = kv_heads_per_device(model.n_kv_heads, tp)
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
    if hw.kind != "neuron" and tp > 1:
        raise ServingError(
            f"tp={tp} on {hw.instance}: the project has no sourced GPU interconnect figures, so trnsim models "
            "GPU serving with tp=1 only (one model copy per GPU). Use tp=1, or a Neuron instance for TP."
        )
    allowed = valid_tp(model, hw.instance)
    if tp not in allowed:
        raise ServingError(
            f"tp={tp} is not a TP degree the runtime supports on {hw.instance} (data/training.json "
            f"neuron_tp_degrees); use one of {allowed}"
        )


def context_warning(model: Any, input_tokens: int, output_tokens: int) -> str | None:
    """A warning when prompt + answer exceed the model's trained context (a warning, not an error)."""
    max_seq = getattr(model, "max_seq_len", None)
    if max_seq and input_tokens + output_tokens > max_seq:
        return (f"context {input_tokens + output_tokens} tokens exceeds {getattr(model, 'name', 'the model')}'s "
                f"maximum of {max_seq}: the runs time it, the model's quality there is not guaranteed")
    return None


def padded_q_dim(model: Any, tp: int) -> int:
    """Query width after padding the heads to a multiple of ``tp`` (transformers-neuronx)."""
    return padded_heads(model.n_heads, tp) * head_dim(model)


def _neuron_layer(model: Any, hw: ServingHardware, tp: int, dtype: str, tokens: int, batch: int,
                  ctx: float, prefill: bool) -> PhaseTime:
    """One forward pass (all layers + head) on a Neuron device, as transformers-neuronx runs it.

    Weights per device: padded Q and output projections (heads rounded up to a multiple of
    tp), K/V projections for the replicated KV heads, MLP / tp, head / tp; streamed at
    min(HBM share, DMA ceiling). KV cache read (decode) or written (prefill). Softmax on the
    Scalar/Vector engines: scores are [heads x batch partitions, context] per pass. Two
    all-reduces per layer at the collective model's latency; 14 dependent operators per layer,
    each paying one DMA fixed cost; one logits all-gather.
    """
    from trnsim.training.recipes import core_engines, kv_heads_per_device

    eng = core_engines(hw.core_version or "", hw.lnc)
    facts = _serving_facts()
    b = DTYPE_BYTES[dtype]
    L = model.n_layers
    d = model.d_model
    hd = head_dim(model)
    qd_dev = padded_q_dim(model, tp) / tp
    kvd_dev = kv_heads_per_device(model.n_kv_heads, tp) * hd
    n_mlp = getattr(model, "n_mlp_matrices", 3)
    layer_w = d * (2 * qd_dev + 2 * kvd_dev) + n_mlp * d * model.d_ff / tp
    head_w = model.vocab_size * d / tp
    weights = (L * layer_w + head_w) * b
    kv_tok = 2.0 * L * kvd_dev * b
    kv_bytes = batch * ctx * kv_tok if not prefill else tokens * kv_tok
    stream = min(hw.device_hbm_bytes_per_s, eng.dma_bytes_per_s) if eng else hw.device_hbm_bytes_per_s
    peak = hw.device_tflops[dtype] * 1e12
    if prefill:
        attn_flops = 2.0 * L * tokens * ctx * qd_dev  # causal: half of 4 * s * q per token
    else:
        attn_flops = 4.0 * L * tokens * ctx * qd_dev
    flops = 2.0 * tokens * (L * layer_w + head_w) + attn_flops
    compute_ms = flops / peak * 1e3
    hbm_ms = (weights + kv_bytes) / stream * 1e3
    heads_dev = qd_dev / hd
    rows = heads_dev * (tokens if prefill else batch)
    passes = facts["softmax_passes"]
    score_cols = ctx / 2 if prefill else ctx
    engine_ms = 0.0
    fixed_ms = 0.0
    if eng is not None:
        tiles = max(1.0, math.ceil(rows / 128))
        engine_ms = L * tiles * score_cols * (passes["scalar"] / (eng.scalar_elements_per_s / 128)
                                              + passes["vector"] / (eng.vector_elements_per_s / 128)) * 1e3
        fixed_ms = L * facts["dependent_ops_per_layer"] * eng.dma_fixed_s * 1e3
    coll_ms = coll_lat_ms = 0.0
    if tp > 1:
        msg = tokens * d * b
        one, alpha = collectives.allreduce_parts(hw.instance, tp, msg)
        n_ar = facts["all_reduces_per_layer"] * L
        coll_ms, coll_lat_ms = n_ar * one / 1e3, n_ar * alpha / 1e3
        if facts["logits_all_gather"]:
            ag, ag_alpha = collectives.collective_parts(hw.instance, tp, "all_gather",
                                                        batch * model.vocab_size * b)
            coll_ms += ag / 1e3
            coll_lat_ms += ag_alpha / 1e3
    return PhaseTime(compute_ms, hbm_ms, coll_ms, coll_lat_ms, engine_ms, fixed_ms,
                     1.0 if prefill else decode_residual(hw))


def _serving_facts() -> dict[str, Any]:
    from trnsim.catalog.datafiles import load_json

    return {k: r["value"] for k, r in load_json("serving.json")["decode_layer"].items()}


def decode_residual(hw: ServingHardware) -> float:
    """The calibrated decode framework factor for ``hw``'s NeuronCore version (``data/serving.json``), 1.0 if none.

    It multiplies the decode step's physics time (prefill keeps physics only)."""
    from trnsim.catalog.datafiles import load_json

    rec = load_json("serving.json")["residuals"].get(hw.core_version or "")
    return 1.0 if rec is None else float(rec["value"])


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


def step_times(model: Any, hw: ServingHardware, tp: int, dtype: str, batch: int, input_tokens: int,
               output_tokens: int) -> tuple[PhaseTime, PhaseTime]:
    """(prefill of ``batch`` prompts, one decode step at the mean context) on one replica.

    The one place both :func:`estimate` and the discrete-event simulator get their times from.
    """
    b = DTYPE_BYTES[dtype]
    s = input_tokens
    ctx_mean = input_tokens + output_tokens / 2.0
    if hw.kind == "neuron":
        return (_neuron_layer(model, hw, tp, dtype, batch * s, batch, s, prefill=True),
                _neuron_layer(model, hw, tp, dtype, batch, batch, ctx_mean, prefill=False))
    read_dev = weights_read_params(model) * b / tp
    kv_tok_dev = kv_bytes_per_token(model, tp, dtype)
    qd, L = q_dim(model), model.n_layers
    prefill = _phase(model, hw, tp, dtype, batch * s, 2.0 * L * batch * s * s * qd, read_dev, batch * s * kv_tok_dev)
    decode = _phase(model, hw, tp, dtype, batch, 4.0 * L * batch * ctx_mean * qd, read_dev,
                    batch * ctx_mean * kv_tok_dev)
    return prefill, decode


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
    held = _neuron_weights_params(model, tp) if hw.kind == "neuron" else model.params / tp  # padded, replicated KV
    weights_dev = held * b  # resident
    kv_tok_dev = kv_bytes_per_token(model, tp, dtype)
    prefill, decode = step_times(model, hw, tp, dtype, batch, input_tokens, output_tokens)

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
    warn = context_warning(model, input_tokens, output_tokens)
    if warn:
        notes.append(warn)
    if tp > model.n_kv_heads:
        notes.append(f"tp={tp} > {model.n_kv_heads} KV heads: KV heads are replicated across devices")
    if hw.kind == "neuron" and model.n_heads % tp:
        notes.append(f"{model.n_heads} heads padded to {padded_heads(model.n_heads, tp)} for tp={tp} "
                     f"(transformers-neuronx pads when TP does not divide the heads)")
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
    held = _neuron_weights_params(model, tp) if hw.kind == "neuron" else model.params / tp
    free = hw.device_memory_bytes - held * DTYPE_BYTES[dtype]
    per_req = (input_tokens + output_tokens) * kv_bytes_per_token(model, tp, dtype)
    return max(0, int(free // per_req))


def valid_tp(model: Any, instance: str) -> list[int]:
    """TP degrees allowed on ``instance``: the runtime's supported degrees (``data/training.json``
    neuron_tp_degrees, shared with training) up to the instance's devices; heads are padded
    when the degree does not divide them. GPUs: 1 only."""
    check_model_like(model)
    check_instance(instance)
    model = _model(model)
    hw = serving_hardware(instance)
    if hw.kind != "neuron":
        return [1]
    degrees = supported_tp(hw.accelerator)
    if degrees is None:
        return [d for d in range(1, hw.devices + 1) if hw.devices % d == 0]
    return [d for d in degrees if d <= hw.devices]


def _neuron_weights_params(model: Any, tp: int) -> float:
    """Parameters one device holds: padded Q/O projections, replicated K/V, MLP / tp, embeddings / tp."""
    d, hd = model.d_model, head_dim(model)
    q_dev = padded_heads(model.n_heads, tp) * hd / tp
    kv_dev = kv_heads_per_device(model.n_kv_heads, tp) * hd
    n_mlp = getattr(model, "n_mlp_matrices", 3)
    layer = d * (2 * q_dev + 2 * kv_dev) + n_mlp * d * model.d_ff / tp
    emb = getattr(model, "embedding_params", 2 * model.vocab_size * d)
    return model.n_layers * layer + emb / tp


def compute_bound_batch(model: Any, instance: str, tp: int, context_tokens: int, dtype: str = "bf16") -> int | None:
    """Smallest decode batch at which compute time reaches streaming time, KV bytes included (None: never).

    Decode at batch B reads the weights once and B x context KV entries: compute grows as
    B x 2 x matmul params, streaming as weights + B x context x KV bytes per token. With the
    KV term per request costing more time than its FLOPs, decode stays memory-bound at any batch.
    """
    model = _model(model)
    hw = serving_hardware(instance)
    _validate(model, hw, tp, 1, context_tokens, 1, dtype)
    from trnsim.training.recipes import core_engines

    eng = core_engines(hw.core_version or "", hw.lnc) if hw.kind == "neuron" else None
    stream = min(hw.device_hbm_bytes_per_s, eng.dma_bytes_per_s) if eng else hw.device_hbm_bytes_per_s
    peak = hw.device_tflops[dtype] * 1e12
    w_s = weights_read_params(model) * DTYPE_BYTES[dtype] / tp / stream
    flops_per_req_s = 2.0 * matmul_params(model) / tp / peak
    kv_per_req_s = context_tokens * kv_bytes_per_token(model, tp, dtype) / stream
    if flops_per_req_s <= kv_per_req_s:
        return None
    return int(math.ceil(w_s / (flops_per_req_s - kv_per_req_s)))
