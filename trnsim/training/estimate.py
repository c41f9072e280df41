"""Estimate one parallel training plan: step time and its breakdown, MFU, memory, cost.

Neuron instances take the path of :mod:`trnsim.training.neuron_step`: the NxD / NeMo recipes
as they run (flash attention on the Tensor/Scalar/Vector engines, selective recompute,
sequence parallelism with its 10 collectives per layer, ZeRO-1 after accumulation, the DMA
ceiling) and one calibrated residual, the compiled-matmul efficiency per NeuronCore version
(``data/training.json`` residuals, leave-one-out on published trn1 runs). Options left as
None take the recipe's defaults (:func:`trnsim.training.recipes.recipe`).

The GPU reference systems keep the physics-only model below (all from specifications; see
the module docstrings it calls):

* **Compute** per device per micro-batch is a per-operator roofline: every matmul of a
  transformer layer takes max(FLOPs / peak, bytes / HBM bandwidth) and every non-matmul
  operator (norms, softmax, dropout, activation, residual add, cross-entropy) streams its
  inputs and outputs through HBM at the device's HBM bandwidth. Backward = 2 x forward.
  Recompute adds a forward pass of the layers ("full") or of the attention-score part
  ("selective"). Flash attention removes the s^2 score traffic from HBM and recomputes
  QK^T in the backward pass.
* **Tensor parallel** (Megatron): 2 all-reduces of s*b*h activations per layer forward
  and 2 backward (with sequence parallelism: all-gather + reduce-scatter pairs of the same
  total volume); not overlapped with compute. Full recompute repeats the forward ones.
* **Pipeline** (1F1B, Narayanan et al. 2021): step = (m + (p - 1)/v) x t_microbatch, so the
  bubble is (p - 1)/(v*m) of the work; one activation send per stage boundary each way
  (v of them with interleaving).
* **Data parallel** gradient sync (all-reduce, or ZeRO-1 reduce-scatter + all-gather of the
  same volume), overlapped with the backward pass of the last micro-batch when
  ``overlap_dp=True``; only the excess is exposed.
* **Optimizer** (Adam): streams 28 bytes per locally-updated parameter through HBM (read
  fp32 master, m, v and the 16-bit gradient; write master, m, v and the 16-bit weight).
* **Memory** per device by part (ZeRO paper bytes per parameter from data/training.json;
  activations from Korthikanti et al. 2022, first pipeline stage holding min(p, m)
  micro-batches).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trnsim.training import comm, neuron_step
from trnsim.training._data import load, value
from trnsim.training.checks import check_model_arg, check_plan_args, check_throughput_args, check_world
from trnsim.training.models import RECOMPUTE_MODES, ModelSpec, model as get_model
from trnsim.training.recipes import kv_replication, recipe
from trnsim.training.systems import GIB, PlanError, SystemSpec, system as get_system

ADAM_BYTES_PER_PARAM_UPDATE = neuron_step.ADAM_BYTES_PER_PARAM_UPDATE  # one definition (neuron_step)
SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class Plan:
    """A fully specified parallel plan (degrees are counts of devices)."""

    model: str
    system: str
    nodes: int
    tp: int
    pp: int
    dp: int
    seq_len: int
    global_batch: int
    micro_batch: int = 1
    zero1: bool = True
    sequence_parallel: bool = True
    recompute: str = "none"
    dtype: str = "bf16"
    flash_attention: bool = False
    virtual_stages: int = 1
    overlap_dp: bool = True

    @property
    def world(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def microbatches(self) -> int:
        """Micro-batches per pipeline per step, m = global_batch / (dp * micro_batch)."""
        return self.global_batch // (self.dp * self.micro_batch)

    def label(self) -> str:
        extra = []
        if self.zero1:
            extra.append("ZeRO-1")
        if self.sequence_parallel and self.tp > 1:
            extra.append("SP")
        if self.recompute != "none":
            extra.append(f"{self.recompute} recompute")
        if self.flash_attention:
            extra.append("flash")
        if self.virtual_stages > 1:
            extra.append(f"v={self.virtual_stages}")
        return f"TP{self.tp} PP{self.pp} DP{self.dp} mb{self.micro_batch}" + (f" ({', '.join(extra)})" if extra else "")


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per device (worst pipeline stage) by part, and the device capacity."""

    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    capacity_bytes: float

    @property
    def total_bytes(self) -> float:
        return self.weights_bytes + self.gradients_bytes + self.optimizer_bytes + self.activations_bytes

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.capacity_bytes

    def as_gib(self) -> dict[str, float]:
        return {"weights": self.weights_bytes / GIB, "gradients": self.gradients_bytes / GIB,
                "optimizer": self.optimizer_bytes / GIB, "activations": self.activations_bytes / GIB}


MAX_TRAIN_TOKENS = 1e15
"""Refused above this (a quadrillion tokens, tens of times the largest published training runs): a typo, not a plan."""


def _check_tokens(tokens: float) -> float:
    """``tokens`` as a float, refusing non-numbers, non-finite, negative and absurd counts (PlanError)."""
    try:
        t = float(tokens)
    except (TypeError, ValueError):
        raise PlanError(f"tokens={tokens!r}: must be a number of tokens") from None
    if not (0 <= t <= MAX_TRAIN_TOKENS):
        raise PlanError(f"tokens={tokens!r}: must be a finite number from 0 to {MAX_TRAIN_TOKENS:.0e}")
    return t


@dataclass(frozen=True)
class Estimate:
    """Result of :func:`estimate`. Times in seconds, throughput per second, money in USD."""

    plan: Plan
    model_spec: ModelSpec
    system_spec: SystemSpec
    step_time_s: float
    breakdown_s: dict[str, float]  # compute, tp_comm, pp_comm, bubble, dp_exposed, optimizer
    dp_sync_total_s: float
    seq_per_s: float
    tokens_per_s: float
    mfu: float
    hfu: float
    model_flops_per_step: float
    hardware_flops_per_step: float
    memory: MemoryBreakdown
    usd_per_step: float | None
    usd_per_billion_tokens: float | None
    price_note: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    residual_factor: float = 1.0  # compiled-matmul efficiency applied (1.0 = physics only)

    @property
    def fits(self) -> bool:
        return self.memory.fits

    @property
    def achieved_tflops_per_device(self) -> float:
        """Hardware FLOP/s per device in TFLOPS (recompute counted), as Megatron reports."""
        return self.hardware_flops_per_step / self.step_time_s / self.plan.world / 1e12

    def days_to_train(self, tokens: float) -> float:
        """Wall-clock days to train ``tokens`` tokens at this plan's throughput."""
        return _check_tokens(tokens) / self.tokens_per_s / SECONDS_PER_DAY

    def usd_to_train(self, tokens: float) -> float | None:
        """On-Demand dollars to train ``tokens`` tokens (None without a public price)."""
        tokens = _check_tokens(tokens)
        if self.usd_per_billion_tokens is None:
            return None
        return self.usd_per_billion_tokens * tokens / 1e9

    def summary(self) -> str:
        m, p = self.memory, self.plan
        b = self.breakdown_s
        parts = ", ".join(f"{k} {v:.3g}" for k, v in b.items() if v > 0)
        cost = (f"${self.usd_per_step:.2f}/step, ${self.usd_per_billion_tokens:,.0f} per billion tokens"
                if self.usd_per_step is not None else self.price_note)
        return (
            f"{self.model_spec.display_name} on {p.nodes} x {self.system_spec.name}, {p.label()}\n"
            f"  step {self.step_time_s:.3g} s ({parts} s); {self.tokens_per_s:,.0f} tokens/s; "
            f"MFU {100 * self.mfu:.1f}%\n"
            f"  memory per {self.system_spec.device_name}: {m.total_bytes / GIB:.1f} of {m.capacity_bytes / GIB:.1f} GiB "
            f"({'fits' if m.fits else 'DOES NOT FIT'}); {cost}"
        )


# --------------------------------------------------------------------------- validation
def _precision(dtype: str) -> dict[str, float]:
    table = load("training.json")["precision"]
    if dtype not in table:
        raise PlanError(f"dtype={dtype!r} has no precision recipe; use one of {sorted(table)}")
    return {k: float(value(v)) for k, v in table[dtype].items()}


def _positive_int(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int,)) or v < 1:
        if isinstance(v, float) and v.is_integer() and v >= 1:
            return int(v)
        raise PlanError(f"{name}={v!r}: must be a positive integer")
    return int(v)


def make_plan(
    model: str | ModelSpec, instance: str, nodes: int, tp: int, pp: int, dp: int | None = None, *,
    seq_len: int, global_batch: int, micro_batch: int = 1, zero1: bool = True,
    sequence_parallel: bool = True, recompute: str | None = None, dtype: str = "bf16",
    flash_attention: bool | None = None, virtual_stages: int = 1, overlap_dp: bool | None = None,
) -> tuple[Plan, ModelSpec, SystemSpec, list[str]]:
    """Check a plan against every rule and return it with its model and system records.

    ``recompute``, ``flash_attention`` and ``overlap_dp`` left as None take the published
    recipe's default for the system (``data/training.json`` framework_recipes: NxD on Neuron
    uses selective recompute, flash attention and an optimizer step after accumulation;
    the GPU reference runs use no recompute, no flash attention, overlapped DP).
    """
    check_plan_args(model, instance, nodes, tp, pp, dp, seq_len=seq_len, global_batch=global_batch,
                    micro_batch=micro_batch, zero1=zero1, sequence_parallel=sequence_parallel, recompute=recompute,
                    dtype=dtype, flash_attention=flash_attention, virtual_stages=virtual_stages, overlap_dp=overlap_dp)
    spec = get_model(model)
    sys = get_system(instance)
    check_world(int(nodes), sys.devices_per_node, sys.name)
    rec = recipe(sys.kind)
    if recompute is None:
        recompute = rec["recompute"]
    if flash_attention is None:
        flash_attention = bool(rec["flash_attention"])
    if overlap_dp is None:
        overlap_dp = bool(rec["overlap_dp"])
    nodes = _positive_int("nodes", nodes)
    tp = _positive_int("tp", tp)
    pp = _positive_int("pp", pp)
    seq_len = _positive_int("seq_len", seq_len)
    global_batch = _positive_int("global_batch", global_batch)
    micro_batch = _positive_int("micro_batch", micro_batch)
    virtual_stages = _positive_int("virtual_stages", virtual_stages)
    notes: list[str] = []
    if recompute not in RECOMPUTE_MODES:
        raise PlanError(f"recompute={recompute!r}: use one of {RECOMPUTE_MODES}")
    _precision(dtype)
    sys.peak_flops(dtype)
    world = nodes * sys.devices_per_node
    if tp * pp > world:
        raise PlanError(f"world size: tp*pp = {tp}*{pp} = {tp * pp} exceeds the {world} {sys.device_name}s of "
                        f"{nodes} x {sys.name}; lower tp/pp or add nodes")
    if dp is None:
        if world % (tp * pp):
            raise PlanError(f"world size: {world} {sys.device_name}s ({nodes} x {sys.devices_per_node}) is not divisible "
                            f"by tp*pp = {tp * pp}; pick tp and pp whose product divides {world}")
        dp = world // (tp * pp)
    dp = _positive_int("dp", dp)
    if tp * pp * dp != world:
        raise PlanError(f"world size mismatch: tp*pp*dp = {tp}*{pp}*{dp} = {tp * pp * dp} but {nodes} x {sys.name} has "
                        f"{world} {sys.device_name}s; set dp={world // (tp * pp) if world % (tp * pp) == 0 else '?'} "
                        f"or leave dp=None")
    if tp > sys.devices_per_node:
        raise PlanError(f"tp={tp} exceeds the {sys.devices_per_node} {sys.device_name}s of one {sys.name}: tensor "
                        f"parallelism must stay inside one node; use tp <= {sys.devices_per_node}")
    if sys.supported_tp is not None and tp not in sys.supported_tp:
        raise PlanError(f"tp={tp} is not a supported TP degree on {sys.name}; supported: {list(sys.supported_tp)}")
    if sys.supported_tp is None and sys.devices_per_node % tp:
        raise PlanError(f"tp={tp} does not divide the {sys.devices_per_node} {sys.device_name}s of {sys.name}")
    if spec.n_heads % tp:
        raise PlanError(f"attention heads: {spec.n_heads} heads of {spec.name} are not divisible by tp={tp}; "
                        f"use a tp that divides {spec.n_heads}")
    if spec.n_kv_heads % tp:
        if tp % spec.n_kv_heads:
            raise PlanError(f"KV heads: {spec.n_kv_heads} KV heads of {spec.name} neither divide nor are divisible by "
                            f"tp={tp}; use a tp that divides {spec.n_kv_heads} or is a multiple of it")
        notes.append(f"KV heads replicated {tp // spec.n_kv_heads}x to reach tp={tp} (NxD kv_size_multiplier)")
    if spec.d_ff % tp:
        raise PlanError(f"d_ff={spec.d_ff} of {spec.name} is not divisible by tp={tp}")
    if spec.n_layers % (pp * virtual_stages):
        raise PlanError(f"pipeline stages: {spec.n_layers} layers of {spec.name} are not divisible by "
                        f"pp*virtual_stages = {pp}*{virtual_stages}; use pp dividing {spec.n_layers}")
    if seq_len > spec.max_seq_len:
        raise PlanError(f"seq_len={seq_len} exceeds {spec.name}'s context length {spec.max_seq_len}")
    if sequence_parallel and tp > 1 and seq_len % tp:
        raise PlanError(f"sequence parallelism: seq_len={seq_len} is not divisible by tp={tp}")
    if global_batch % (dp * micro_batch):
        raise PlanError(f"batch: global_batch={global_batch} is not divisible by dp*micro_batch = {dp}*{micro_batch}"
                        f" = {dp * micro_batch}; use a global batch that is a multiple of {dp * micro_batch}")
    if virtual_stages > 1 and (global_batch // (dp * micro_batch)) % pp:
        raise PlanError(f"interleaved schedule: micro-batches per step ({global_batch // (dp * micro_batch)}) must be a "
                        f"multiple of pp={pp}")
    plan = Plan(spec.name, sys.name, nodes, tp, pp, dp, seq_len, global_batch, micro_batch, bool(zero1),
                bool(sequence_parallel), recompute, dtype, bool(flash_attention), virtual_stages, bool(overlap_dp))
    return plan, spec, sys, notes


# --------------------------------------------------------------------------- compute model
def _roofline_s(flops: float, bytes_: float, peak: float, bw: float) -> float:
    return max(flops / peak, bytes_ / bw)


def layer_forward_s(spec: ModelSpec, sys: SystemSpec, plan: Plan) -> dict[str, float]:
    """Forward time (s) of one layer for one micro-batch on one device, by operator group.

    Returns {"matmul": ..., "attention_scores": ..., "elementwise": ...}; the attention
    score part (QK^T, softmax, dropout, AV) is what selective recompute repeats.
    """
    s, b, t = plan.seq_len, plan.micro_batch, plan.tp
    d, q, kv, ff, a = spec.d_model, spec.q_dim, spec.kv_dim, spec.d_ff, spec.n_heads
    e = _precision(plan.dtype)["activation_bytes"]
    w = _precision(plan.dtype)["weight_bytes"]
    peak = sys.peak_flops(plan.dtype)
    bw = sys.hbm_gbytes_per_s_per_device * 1e9
    tok = float(s * b)
    sp_div = t if plan.sequence_parallel else 1
    mm = 0.0
    n_up = spec.n_mlp_matrices - 1
    for k_dim, n_dim in ((d, (q + 2 * kv) / t), (q / t, d), (d, n_up * ff / t), (ff / t, d)):
        mm += _roofline_s(2 * tok * k_dim * n_dim, e * tok * (k_dim + n_dim) + w * k_dim * n_dim, peak, bw)
    heads = a / t
    score_elems = heads * float(s) * s * b
    if plan.flash_attention:
        scores = _roofline_s(4 * tok * s * q / t, e * tok * (2 * q + 2 * kv) / t, peak, bw)
    else:
        drop = 1.0 if spec.dropout else 0.0
        qk = _roofline_s(2 * tok * s * q / t, e * tok * (q + kv) / t + e * score_elems, peak, bw)
        softmax = (2 * e * score_elems) / bw
        dropout = drop * (2 * e + 1) * score_elems / bw
        av = _roofline_s(2 * tok * s * q / t, e * score_elems + e * tok * (kv + q) / t, peak, bw)
        scores = qk + softmax + dropout + av
    # non-matmul operators streamed through HBM (sharded by sequence parallelism where it applies)
    n_norms = 1 if spec.parallel_layers else 2
    norm_b = n_norms * 2 * e * tok * d / sp_div
    resid_b = 2 * (3 * e + (1 if spec.dropout else 0)) * tok * d / sp_div  # read x and y, write x+y (+mask)
    act_b = e * tok * ff * (n_up + 1) / t  # read fc1 (and gate) output, write activation
    elementwise = (norm_b + resid_b + act_b) / bw
    return {"matmul": mm, "attention_scores": scores, "elementwise": elementwise}


def logits_forward_s(spec: ModelSpec, sys: SystemSpec, plan: Plan) -> float:
    """Forward time of the output projection and fp32 cross-entropy (vocab-parallel over TP)."""
    s, b, t = plan.seq_len, plan.micro_batch, plan.tp
    e = _precision(plan.dtype)["activation_bytes"]
    peak = sys.peak_flops(plan.dtype)
    bw = sys.hbm_gbytes_per_s_per_device * 1e9
    tok = float(s * b)
    v = spec.vocab_size / t
    mm = _roofline_s(2 * tok * spec.d_model * v, e * tok * (spec.d_model + v) + e * spec.d_model * v, peak, bw)
    ce = 2 * 4.0 * tok * v / bw  # read and write fp32 logits
    return mm + ce


def _stage_params(spec: ModelSpec, plan: Plan) -> float:
    """Parameters held by one device of the worst pipeline stage (TP-sharded)."""
    layers = spec.n_layers / plan.pp * spec.params_per_layer
    emb = spec.vocab_size * spec.d_model + (spec.max_seq_len * spec.d_model if spec.position == "learned" else 0)
    head = spec.vocab_size * spec.d_model if not spec.tied_embeddings else 0
    if plan.pp == 1:
        extra = spec.embedding_params
    else:
        extra = max(emb, head if head else spec.vocab_size * spec.d_model)  # tied: last stage keeps a copy
    return (layers + extra) / plan.tp


def memory_breakdown(spec: ModelSpec, sys: SystemSpec, plan: Plan) -> MemoryBreakdown:
    prec = _precision(plan.dtype)
    params = _stage_params(spec, plan)
    kv_rep = kv_replication(spec.n_kv_heads, plan.tp)
    if kv_rep > 1:  # replicated K and V projections
        params += (kv_rep - 1) * 2 * spec.d_model * spec.kv_dim * spec.n_layers / plan.pp / plan.tp
    opt = params * prec["optimizer_bytes"] / (plan.dp if plan.zero1 else 1)
    m = plan.microbatches
    per_layer = spec.activation_bytes_per_layer(plan.seq_len, plan.micro_batch, tp=plan.tp,
                                                sequence_parallel=plan.sequence_parallel and plan.tp > 1,
                                                recompute=plan.recompute, flash_attention=plan.flash_attention)
    per_layer *= prec["activation_bytes"] / 2.0
    layers_per_stage = spec.n_layers / plan.pp
    in_flight = min(plan.pp, m)
    first = per_layer * layers_per_stage * in_flight
    logits = spec.logits_bytes(plan.seq_len, plan.micro_batch, tp=plan.tp)
    last = per_layer * layers_per_stage + logits
    acts = first + logits if plan.pp == 1 else max(first, last)
    return MemoryBreakdown(params * prec["weight_bytes"], params * prec["grad_bytes"], opt, acts,
                           sys.memory_bytes_per_device)


def estimate(
    model: str | ModelSpec, instance: str, nodes: int = 1, tp: int = 1, pp: int = 1, dp: int | None = None, *,
    seq_len: int, global_batch: int, micro_batch: int = 1, zero1: bool = True, sequence_parallel: bool = True,
    recompute: str | None = None, dtype: str = "bf16", flash_attention: bool | None = None, virtual_stages: int = 1,
    overlap_dp: bool | None = None, residual: float | None = None,
) -> Estimate:
    """Estimate one training step of ``model`` on ``nodes`` x ``instance`` with TP/PP/DP degrees.

    ``instance`` is a Neuron instance name from the catalog (``trn1.32xlarge``,
    ``trn2.48xlarge``, ...) or a GPU reference system from data/training.json
    (``dgx-a100-80gb``). ``dp=None`` fills the world. Raises PlanError naming the broken
    rule for an invalid plan. Returns an :class:`Estimate` (times in s, cost in USD).
    ``recompute`` / ``flash_attention`` / ``overlap_dp`` = None take the published recipe's
    defaults. On Neuron, ``residual`` is the compiled-matmul efficiency: None uses the factor
    calibrated for the chip (``data/training.json`` residuals), 1.0 gives physics only.
    """
    plan, spec, sys, notes = make_plan(
        model, instance, nodes, tp, pp, dp, seq_len=seq_len, global_batch=global_batch, micro_batch=micro_batch,
        zero1=zero1, sequence_parallel=sequence_parallel, recompute=recompute, dtype=dtype,
        flash_attention=flash_attention, virtual_stages=virtual_stages, overlap_dp=overlap_dp)
    return _estimate(plan, spec, sys, notes, residual)


def _estimate(plan: Plan, spec: ModelSpec, sys: SystemSpec, notes: list[str], residual: float | None = None) -> Estimate:
    if sys.kind == "neuron":
        return _estimate_neuron(plan, spec, sys, notes, residual)
    prec = _precision(plan.dtype)
    e = prec["activation_bytes"]
    L = spec.n_layers / plan.pp
    lay = layer_forward_s(spec, sys, plan)
    layer_fwd = sum(lay.values())
    logit_fwd = logits_forward_s(spec, sys, plan)
    # the last stage carries the logits; with pp > 1 the slowest stage sets the pace
    fwd = L * layer_fwd + logit_fwd
    bwd = 2.0 * fwd
    if plan.flash_attention:
        bwd += L * 0.5 * lay["attention_scores"]  # QK^T recomputed inside the backward kernel
    if plan.recompute == "full":
        rec = L * layer_fwd
    elif plan.recompute == "selective":
        rec = L * lay["attention_scores"]
    else:
        rec = 0.0
    compute_mb = fwd + bwd + rec

    # tensor parallel: 4 collectives per layer (2 fwd, 2 bwd), +2 with full recompute
    tp_mb = 0.0
    if plan.tp > 1:
        act_bytes = e * plan.seq_len * plan.micro_batch * spec.d_model
        n_fwd = 2 * (2 if plan.recompute == "full" else 1)
        n_total = n_fwd + 2
        if plan.sequence_parallel:
            one = comm.collective_s(sys, "all_gather", act_bytes, plan.tp) + comm.collective_s(sys, "reduce_scatter", act_bytes, plan.tp)
        else:
            one = comm.collective_s(sys, "all_reduce", act_bytes, plan.tp)
        tp_mb = L * n_total * one
    # pipeline: one activation send forward and one gradient send backward per micro-batch
    pp_mb = 0.0
    if plan.pp > 1:
        msg = e * plan.seq_len * plan.micro_batch * spec.d_model / plan.tp  # scatter/gather optimisation
        # interleaving with v chunks per device multiplies the stage-boundary sends by v (Narayanan et al.)
        pp_mb = 2 * plan.virtual_stages * comm.collective_s(sys, "permute", msg, 2, plan.tp)
    t_mb = compute_mb + tp_mb + pp_mb
    m = plan.microbatches
    v = plan.virtual_stages
    compute_s = m * compute_mb
    bubble_s = (plan.pp - 1) / v * t_mb
    # data parallel gradient sync
    params_dev = _stage_params(spec, plan)
    grad_bytes = params_dev * prec["grad_bytes"]
    dp_stride = plan.tp * plan.pp
    if plan.dp > 1:
        if plan.zero1:
            dp_total = (comm.collective_s(sys, "reduce_scatter", grad_bytes, plan.dp, dp_stride)
                        + comm.collective_s(sys, "all_gather", params_dev * prec["weight_bytes"], plan.dp, dp_stride))
        else:
            dp_total = comm.collective_s(sys, "all_reduce", grad_bytes, plan.dp, dp_stride)
    else:
        dp_total = 0.0
    window = bwd if plan.overlap_dp else 0.0
    dp_exposed = max(0.0, dp_total - window)
    opt_params = params_dev / (plan.dp if plan.zero1 else 1)
    optimizer_s = opt_params * ADAM_BYTES_PER_PARAM_UPDATE / (sys.hbm_gbytes_per_s_per_device * 1e9)
    breakdown = {"compute": compute_s, "tp_comm": m * tp_mb, "pp_comm": m * pp_mb, "bubble": bubble_s,
                 "dp_exposed": dp_exposed, "optimizer": optimizer_s}
    return _finish(plan, spec, sys, notes, breakdown, dp_total)


def _estimate_neuron(plan: Plan, spec: ModelSpec, sys: SystemSpec, notes: list[str],
                     residual: float | None) -> Estimate:
    """Neuron path: :mod:`trnsim.training.neuron_step` (NxD recipe physics + one calibrated residual)."""
    prec = _precision(plan.dtype)
    if residual is None:
        eff, note = neuron_step.residual_factor(sys)
    else:
        if not 0 < float(residual) <= 1.5:
            raise PlanError(f"residual={residual!r}: the compiled-matmul efficiency must be in (0, 1.5]; "
                            "use None for the calibrated value or 1.0 for physics only")
        eff, note = float(residual), f"compiled-matmul efficiency {float(residual):.2f} (given)"
    notes.append(note)
    mb = neuron_step.microbatch_s(spec, sys, plan, eff, prec)
    t_mb = mb["compute"] + mb["tp_comm"] + mb["pp_comm"]
    m, v = plan.microbatches, plan.virtual_stages
    dp_total, opt = neuron_step.dp_and_optimizer_s(sys, plan, _stage_params(spec, plan), prec)
    bwd_window = 0.0
    if plan.overlap_dp:
        bwd_window = 2.0 / 3.0 * mb["compute"]
    breakdown = {"compute": m * mb["compute"], "tp_comm": m * mb["tp_comm"], "pp_comm": m * mb["pp_comm"],
                 "bubble": (plan.pp - 1) / v * t_mb, "dp_exposed": max(0.0, dp_total - bwd_window),
                 "optimizer": opt}
    return _finish(plan, spec, sys, notes, breakdown, dp_total, residual=eff)


def _finish(plan: Plan, spec: ModelSpec, sys: SystemSpec, notes: list[str], breakdown: dict[str, float],
            dp_total: float, residual: float = 1.0) -> Estimate:
    step = sum(breakdown.values())
    tokens = float(plan.global_batch * plan.seq_len)
    model_flops = tokens * spec.flops_per_token(plan.seq_len)
    hw_flops = tokens * spec.flops_per_token(plan.seq_len, recompute=plan.recompute)
    peak_total = sys.peak_flops(plan.dtype) * plan.world
    mem = memory_breakdown(spec, sys, plan)
    if sys.usd_per_node_hour is not None:
        usd_step = sys.usd_per_node_hour * plan.nodes * step / 3600.0
        usd_bt = usd_step / tokens * 1e9
    else:
        usd_step = usd_bt = None
    if not mem.fits:
        notes.append(f"memory: {mem.total_bytes / GIB:.1f} GiB needed per {sys.device_name}, "
                     f"{mem.capacity_bytes / GIB:.1f} GiB available")
    return Estimate(plan, spec, sys, step, breakdown, dp_total, plan.global_batch / step, tokens / step,
                    model_flops / step / peak_total, hw_flops / step / peak_total, model_flops, hw_flops, mem,
                    usd_step, usd_bt, sys.price_note, tuple(notes), residual)


def mfu_from_throughput(model: str | ModelSpec, seq_len: int, tokens_per_s: float, devices: int,
                        peak_tflops_per_device: float) -> float:
    """MFU = tokens/s x model FLOPs per token / (devices x peak) (PaLM, Chowdhery et al. 2022)."""
    check_throughput_args(seq_len, tokens_per_s, devices, peak_tflops_per_device)
    spec = get_model(model)
    return tokens_per_s * spec.flops_per_token(seq_len) / (devices * peak_tflops_per_device * 1e12)


def chinchilla_tokens(model: str | ModelSpec) -> float:
    """Compute-optimal training tokens, about 20 per parameter (Hoffmann et al. 2022)."""
    check_model_arg(model)
    per = float(value(load("training.json")["chinchilla_tokens_per_param"]))
    return per * get_model(model).params
