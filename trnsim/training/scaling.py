"""Per-layer compute and communication for each kind of parallelism, and when it stays compute bound.

The arithmetic of "How to Scale Your Model" (Austin et al. 2025, the "scaling book"), written out
for one transformer layer of a catalog model, per device and per training step:

* compute: ``6 x P_layer x T`` FLOPs for ``T`` tokens through a layer of ``P_layer`` matmul weights
  (forward 2, backward 4 FLOPs per weight per token; attention-score FLOPs are left out, as the
  scaling book does for its conditions), divided by the number of devices that split the layer;
* communication: bytes each rank sends, using the ring volumes ``(N - 1)/N x n`` for an all-gather or
  a reduce-scatter of ``n`` bytes and ``2 (N - 1)/N x n`` for an all-reduce;
* times: FLOPs / peak FLOP/s and bytes / bus bandwidth (NCCL-tests' busbw, the per-rank rate a ring
  achieves; :func:`ring_busbw_bytes_per_s` gets it from :mod:`trnsim.cluster` for an instance).

Strategies and their per-layer volume per rank (gradients and parameters in 16-bit, 2 bytes):

=============  ====================================================  ==========================
strategy       communication per layer per step                       compute bound when
=============  ====================================================  ==========================
DP, ZeRO-1/2   all-reduce (= reduce-scatter + all-gather) of grads   T >= 2/3 (N-1)/N C/W
ZeRO-3 / FSDP  all-gather params twice + reduce-scatter grads         T >= (N-1)/N C/W
TP             2 all-reduces fwd + 2 bwd of T x d activations         P_layer/d >= 8/3 (t-1) C/W
TP + SP (NxD)  4 fwd + 6 bwd all-gathers/reduce-scatters of T x d     P_layer/d >= 4 (t-1) C/W
PP             one send fwd + one bwd of T x d per stage boundary     L_stage P_layer/d >= 2/3 C/W
=============  ====================================================  ==========================

(C: peak FLOP/s per device, W: bus bandwidth per rank in bytes/s, T: tokens per device per step, or
per micro-batch for TP and PP.) Megatron's TP with sequence parallelism replaces each all-reduce by a
reduce-scatter and an all-gather: the same bytes, with the replicated activations sharded
(Korthikanti et al. 2022); NxD's recipe also gathers the input again in the backward pass and
reduce-scatters gradients in fp32, which is 1.5 x the bytes (``data/training.json``).
ZeRO stages from Rajbhandari et al. 2020.
"""
from __future__ import annotations

from dataclasses import dataclass
import math
import numbers
from typing import Any, Sequence

ACT_BYTES = 2  # bf16 activations on the wire: the 16-bit format's size, not a hardware figure
ZERO_STAGES = (0, 1, 2, 3)


class ScalingError(ValueError):
    """A bad argument to a scaling formula; the message names it, its valid range and the fix."""


def _precision(dtype: str = "bf16") -> dict[str, float]:
    """Bytes per parameter of mixed-precision Adam (``data/training.json``, ZeRO paper): weight, grad, optimizer."""
    from trnsim.training._data import load, value

    rec = load("training.json")["precision"][dtype]
    return {k: float(value(rec[k])) for k in ("weight_bytes", "grad_bytes", "optimizer_bytes")}


def check_count(name: str, value: Any, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum`` (bools and non-integral numbers refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
            or int(value) != value:
        raise ScalingError(f"{name}={value!r} must be a whole number >= {minimum}")
    if value < minimum:
        raise ScalingError(f"{name}={value!r} must be >= {minimum}")
    return int(value)


def check_positive(name: str, value: Any) -> float:
    """``value`` as a finite float > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise ScalingError(f"{name}={value!r} must be a finite number > 0")
    return float(value)


def _model(model: Any) -> Any:
    from trnsim.training.models import model as get_model

    return get_model(model)


@dataclass(frozen=True)
class LayerCosts:
    """Per device, one transformer layer, one training step (or one micro-batch for TP/PP)."""

    strategy: str
    flops: float
    comm_bytes: float
    peak_flops_per_s: float
    busbw_bytes_per_s: float

    @property
    def compute_s(self) -> float:
        return self.flops / self.peak_flops_per_s

    @property
    def comm_s(self) -> float:
        return self.comm_bytes / self.busbw_bytes_per_s

    @property
    def intensity_flops_per_byte(self) -> float:
        """FLOPs per communicated byte (inf when nothing is communicated)."""
        return self.flops / self.comm_bytes if self.comm_bytes else math.inf

    @property
    def compute_bound(self) -> bool:
        """True when the layer's communication can hide behind its compute (comm time <= compute time)."""
        return self.comm_s <= self.compute_s

    def summary(self) -> str:
        return (f"{self.strategy}: {self.flops / 1e12:.3g} TFLOP ({self.compute_s * 1e3:.3g} ms), "
                f"{self.comm_bytes / 2**20:.4g} MiB sent ({self.comm_s * 1e3:.3g} ms) -> "
                f"{'compute' if self.compute_bound else 'communication'} bound")


def layer_train_flops(model: Any, tokens: float) -> float:
    """Training FLOPs of one layer for ``tokens`` tokens: 6 x matmul weights x tokens."""
    m = _model(model)
    return 6.0 * m.matmul_params_per_layer * check_positive("tokens", tokens)


def dp_layer_costs(model: Any, tokens_per_device: float, dp: int, peak_flops_per_s: float,
                   busbw_bytes_per_s: float, *, zero_stage: int = 0) -> LayerCosts:
    """Data parallel (optionally ZeRO stage 1, 2 or 3 / FSDP) over ``dp`` ranks.

    Stages 0-2 move one all-reduce of the layer's 16-bit gradients, 2 (N-1)/N x 2 P_layer bytes
    (ZeRO-1/2 do it as a reduce-scatter of gradients then an all-gather of updated parameters: the
    same volume). Stage 3 gathers the parameters before the forward and again before the backward
    and reduce-scatters the gradients: 3 (N-1)/N x 2 P_layer bytes.
    """
    m = _model(model)
    n = check_count("dp", dp)
    if zero_stage not in ZERO_STAGES:
        raise ScalingError(f"zero_stage={zero_stage!r} must be one of {ZERO_STAGES} (0 = plain data parallel)")
    flops = layer_train_flops(m, tokens_per_device)
    passes = 3 if zero_stage == 3 else 2
    comm = passes * (n - 1) / n * _precision()["grad_bytes"] * m.matmul_params_per_layer
    label = "DP" if zero_stage == 0 else ("FSDP/ZeRO-3" if zero_stage == 3 else f"ZeRO-{zero_stage}")
    return LayerCosts(f"{label} x{n}", flops, comm, check_positive("peak_flops_per_s", peak_flops_per_s),
                      check_positive("busbw_bytes_per_s", busbw_bytes_per_s))


def tp_wire_bytes_per_element(sequence_parallel: bool = True) -> float:
    """Bytes a TP rank sends per layer per token per model-width element, divided by (t-1)/t.

    Without sequence parallelism: 2 all-reduces forward + 2 backward of 16-bit activations, each
    2 passes: 4 x 2 x 2 = 16. With it, the collective list NxD issues per layer (``data/training.json``,
    ``sp_collectives_per_layer``: 2 all-gathers + 2 reduce-scatters forward; 4 all-gathers and 2
    reduce-scatters in fp32 backward, the input gathered again for the weight gradients):
    (2 + 2 + 4) x 2 + 2 x 4 = 24.
    """
    if not sequence_parallel:
        return 4 * 2 * ACT_BYTES
    from trnsim.training.recipes import recipe

    r = recipe("neuron")
    per = r["sp_collectives_per_layer"]
    fp32_rs = float(r["sp_backward_reduce_scatter_bytes_per_element"])
    return float((per["forward"]["all_gather"] + per["forward"]["reduce_scatter"] + per["backward"]["all_gather"])
                 * ACT_BYTES + per["backward"]["reduce_scatter"] * fp32_rs)


def tp_layer_costs(model: Any, tokens: float, tp: int, peak_flops_per_s: float, busbw_bytes_per_s: float,
                   *, sequence_parallel: bool = True) -> LayerCosts:
    """Megatron tensor parallelism over ``tp`` ranks for ``tokens`` tokens (one micro-batch).

    Compute is 6 x P_layer x T / t. Communication per rank is k x (t-1)/t x T x d bytes with
    k = :func:`tp_wire_bytes_per_element`: 16 for plain TP (an all-reduce after attention and after
    the MLP, forward and backward), 24 for NxD's sequence-parallel collective list.
    """
    m = _model(model)
    t = check_count("tp", tp)
    tok = check_positive("tokens", tokens)
    flops = layer_train_flops(m, tok) / t
    comm = tp_wire_bytes_per_element(sequence_parallel) * (t - 1) / t * tok * m.d_model
    label = f"TP x{t}" + (" + SP" if sequence_parallel else "")
    return LayerCosts(label, flops, comm, check_positive("peak_flops_per_s", peak_flops_per_s),
                      check_positive("busbw_bytes_per_s", busbw_bytes_per_s))


def pp_stage_costs(model: Any, tokens: float, pp: int, peak_flops_per_s: float,
                   link_bytes_per_s: float) -> LayerCosts:
    """One pipeline stage (n_layers / pp layers) for one micro-batch of ``tokens`` tokens.

    Communication: the stage's output activations go forward (T x d x 2 bytes) and their gradient
    comes back (the same again): 2 x T x d x 2 bytes point to point per micro-batch.
    """
    m = _model(model)
    p = check_count("pp", pp)
    if m.n_layers % p:
        raise ScalingError(f"pp={p} must divide the {m.n_layers} layers of {m.name}")
    tok = check_positive("tokens", tokens)
    flops = layer_train_flops(m, tok) * (m.n_layers // p)
    comm = 2.0 * tok * m.d_model * ACT_BYTES if p > 1 else 0.0
    return LayerCosts(f"PP x{p} (stage of {m.n_layers // p} layers)", flops, comm,
                      check_positive("peak_flops_per_s", peak_flops_per_s),
                      check_positive("link_bytes_per_s", link_bytes_per_s))


def dp_critical_tokens(dp: int, peak_flops_per_s: float, busbw_bytes_per_s: float, *, zero_stage: int = 0) -> float:
    """Tokens per device per step above which DP (or ZeRO) communication hides behind compute.

    6 P T / C >= k (N-1)/N x 2 P / W  =>  T >= k/3 (N-1)/N x C/W, with k = 2 (all-reduce) or 3 (ZeRO-3).
    The model size cancels: both sides scale with the parameters.
    """
    n = check_count("dp", dp)
    if zero_stage not in ZERO_STAGES:
        raise ScalingError(f"zero_stage={zero_stage!r} must be one of {ZERO_STAGES}")
    k = 3 if zero_stage == 3 else 2
    c = check_positive("peak_flops_per_s", peak_flops_per_s)
    w = check_positive("busbw_bytes_per_s", busbw_bytes_per_s)
    return k / 3.0 * (n - 1) / n * c / w


def tp_max_compute_bound(model: Any, peak_flops_per_s: float, busbw_bytes_per_s: float, *,
                         sequence_parallel: bool = True) -> int:
    """Largest TP degree t whose per-layer communication still hides behind compute.

    6 P_layer T / (t C) >= k (t-1)/t x T d / W  =>  t - 1 <= 6 P_layer W / (k d C); tokens cancel.
    k = 24 with NxD's sequence parallelism, 16 without (:func:`tp_wire_bytes_per_element`).
    """
    m = _model(model)
    c = check_positive("peak_flops_per_s", peak_flops_per_s)
    w = check_positive("busbw_bytes_per_s", busbw_bytes_per_s)
    k = tp_wire_bytes_per_element(sequence_parallel)
    return 1 + int(math.floor(6.0 * m.matmul_params_per_layer * w / (k * m.d_model * c) + 1e-12))


def pp_min_layers_per_stage(model: Any, peak_flops_per_s: float, link_bytes_per_s: float) -> float:
    """Fewest layers per pipeline stage for which a stage's compute outlasts its point-to-point traffic.

    6 L P_layer T / C >= 2 x T d x 2 / W  =>  L >= 2/3 x d C / (P_layer W); tokens cancel. Usually far
    below one layer: pipeline parallelism pays in bubbles, not bytes.
    """
    m = _model(model)
    c = check_positive("peak_flops_per_s", peak_flops_per_s)
    w = check_positive("link_bytes_per_s", link_bytes_per_s)
    return 2.0 / 3.0 * m.d_model * c / (m.matmul_params_per_layer * w)


def zero_state_bytes_per_device(params: float, dp: int, zero_stage: int, *, weight_bytes: float | None = None,
                                grad_bytes: float | None = None, optimizer_bytes: float | None = None) -> float:
    """Model-state bytes per device under ZeRO stage 0-3 (Rajbhandari et al. 2020, mixed-precision Adam).

    Stage 1 shards the optimizer state, stage 2 also the gradients, stage 3 also the weights.
    Bytes left as None come from ``data/training.json`` (bf16): 2 + 2 + 12 = 16 per parameter (bf16
    weight and gradient; fp32 master copy, momentum, variance).
    """
    prec = _precision()
    weight_bytes = prec["weight_bytes"] if weight_bytes is None else weight_bytes
    grad_bytes = prec["grad_bytes"] if grad_bytes is None else grad_bytes
    optimizer_bytes = prec["optimizer_bytes"] if optimizer_bytes is None else optimizer_bytes
    p = check_positive("params", params)
    n = check_count("dp", dp)
    if zero_stage not in ZERO_STAGES:
        raise ScalingError(f"zero_stage={zero_stage!r} must be one of {ZERO_STAGES}")
    w, g, o = (check_positive(k, v) for k, v in (("weight_bytes", weight_bytes), ("grad_bytes", grad_bytes),
                                                  ("optimizer_bytes", optimizer_bytes)))
    shard = {k: (n if zero_stage >= k else 1) for k in (1, 2, 3)}  # stage k shards optimizer, +gradient, +weight
    return p * (w / shard[3] + g / shard[2] + o / shard[1])


def ring_busbw_bytes_per_s(instance: str, ranks: int, message_bytes: float = 2**30) -> float:
    """The bus bandwidth (bytes/s) the simulator's ring all-reduce of ``message_bytes`` reaches over
    the first ``ranks`` ranks of ``instance`` (enough nodes are added when ``ranks`` exceeds one)."""
    from trnsim import cluster

    r = check_count("ranks", ranks, minimum=2)
    per_node = cluster.topology(instance).size
    nodes = -(-r // per_node)
    topo = cluster.topology(instance, nodes=nodes)
    if r < topo.size:
        topo = topo.group(r)
    timing = cluster.collective_time("all_reduce", check_positive("message_bytes", message_bytes), topo, "ring")
    return timing.busbw_gbytes_per_s * 1e9


@dataclass(frozen=True)
class OverlapTimeline:
    """Backward pass of a data-parallel step with each layer's gradient collective launched as soon as
    that layer's backward ends. Intervals are (layer, start_s, end_s); layers run last to first."""

    compute: tuple[tuple[int, float, float], ...]
    comm: tuple[tuple[int, float, float], ...]

    @property
    def compute_end_s(self) -> float:
        return self.compute[-1][2]

    @property
    def step_end_s(self) -> float:
        return max(self.compute_end_s, self.comm[-1][2])

    @property
    def exposed_comm_s(self) -> float:
        """Communication time not hidden behind compute (what overlap cannot save)."""
        return self.step_end_s - self.compute_end_s

    @property
    def serial_s(self) -> float:
        """The same work without overlap: all compute, then all communication."""
        return self.compute_end_s + sum(e - s for _, s, e in self.comm)


def overlap_timeline(backward_s_per_layer: Sequence[float], comm_s_per_layer: Sequence[float]) -> OverlapTimeline:
    """Schedule a backward pass (layers last to first) on a compute stream and each layer's gradient
    collective on one communication stream, started when the layer's backward ends and the stream is free.

    Both sequences are indexed by layer (0 = first layer) in seconds and must have the same length.
    """
    bwd = [check_positive(f"backward_s_per_layer[{i}]", x) for i, x in enumerate(backward_s_per_layer)]
    com = [float(x) for x in comm_s_per_layer]
    if not bwd:
        raise ScalingError("backward_s_per_layer is empty: give one backward time per layer")
    if len(com) != len(bwd):
        raise ScalingError(f"comm_s_per_layer has {len(com)} entries but backward_s_per_layer has {len(bwd)}; "
                           f"give one of each per layer")
    for i, x in enumerate(com):
        if not math.isfinite(x) or x < 0:
            raise ScalingError(f"comm_s_per_layer[{i}]={x!r} must be a finite number >= 0")
    t = 0.0
    stream = 0.0
    compute, comm = [], []
    for layer in reversed(range(len(bwd))):
        compute.append((layer, t, t + bwd[layer]))
        t += bwd[layer]
        start = max(t, stream)
        stream = start + com[layer]
        comm.append((layer, start, stream))
    return OverlapTimeline(tuple(compute), tuple(comm))
