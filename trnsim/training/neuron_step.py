"""One training micro-batch on a Neuron device, as the NxD / NeMo recipes run it.

Per device (a logical NeuronCore) and per micro-batch, with its sources:

* **Matmuls** (QKV, output, MLP, logits) on the Tensor Engine at the vendor peak divided by
  the generation's *compiled-matmul efficiency* (the one calibrated residual, see
  :mod:`trnsim.training.validation`), or streaming-bound: bytes / min(HBM share, DMA ceiling).
  The DMA ceiling (16 engines x 17 B/ns = 272 GB/s per trn1 core, ``nki-dma-bandwidth-guide``)
  is below the per-core HBM share (440 GB/s), so it binds.
* **Flash attention** (NxD recipes): QK^T and PV on the Tensor Engine (causal: half the score
  tiles), softmax on the Scalar (exp with row-sum) and Vector (row max, rescale) engines at
  their catalog clocks (128 lanes at 1.4 / 1.12 GHz on NC-v2); the kernel pipelines the
  engines, so it takes the slowest of them. Backward: FlashAttention-2's 2.5x the forward
  matmuls and its engine passes (``data/training.json`` ``flash_attention_passes``).
* **Elementwise** work (norms, residual adds, activation): the slowest of streaming its bytes
  and the Vector/Scalar engine time for its elements.
* **Backward** = 2 x forward for matmuls and elementwise; selective recompute repeats the
  attention forward, full recompute the whole layer forward.
* **Tensor parallel with sequence parallelism**: the collective list NxD issues per layer
  (``sp_collectives_per_layer``: 2 all-gathers + 2 reduce-scatters forward, 4 all-gathers +
  2 fp32 reduce-scatters backward), each costed by :func:`trnsim.cluster.cost_collective`'s
  model at the runtime's algorithm (a ring at TP32 on trn1), not overlapped with compute.
* **Pipeline**: 1F1B bubble (p-1)/m, interleaved (p-1)/(v m) (Narayanan et al. 2021).
* **ZeRO-1**: gradient reduce-scatter + parameter all-gather over DP after accumulation
  (not hidden), then the Adam update streaming 28 bytes per local parameter.
"""
from __future__ import annotations

from trnsim.training import comm
from trnsim.training._data import load, value
from trnsim.training.models import ModelSpec
from trnsim.training.recipes import CoreEngines, core_engines, kv_replication, recipe
from trnsim.training.systems import SystemSpec

ADAM_BYTES_PER_PARAM_UPDATE = 28  # read 4+4+4+2, write 4+4+4+2 (formula)


def engines_for(sys: SystemSpec) -> CoreEngines:
    """Engine rates of one device of ``sys`` (LNC physical cores per logical device)."""
    eng = core_engines(sys.core_version or "", sys.lnc)
    if eng is None:
        raise ValueError(f"no engine facts for NeuronCore version {sys.core_version!r} in data/training.json")
    return eng


def stream_bytes_per_s(sys: SystemSpec) -> float:
    """What one device can stream from HBM: min(per-device HBM share, DMA ceiling)."""
    return min(sys.hbm_gbytes_per_s_per_device * 1e9, engines_for(sys).dma_bytes_per_s)


def _mm(flops: float, nbytes: float, peak: float, eff: float, bw: float) -> float:
    return max(flops / (peak * eff), nbytes / bw)


def _passes() -> dict:
    return recipe("neuron")["flash_attention_passes"]


def layer_parts_s(spec: ModelSpec, sys: SystemSpec, plan, eff: float, act_bytes: float, w_bytes: float) -> dict[str, float]:
    """Forward (and backward) seconds of one layer for one micro-batch on one device, by part.

    Returns matmul_fwd, attention_fwd, attention_bwd, elementwise_fwd.
    """
    eng = engines_for(sys)
    bw = stream_bytes_per_s(sys)
    peak = sys.peak_flops(plan.dtype)
    s, b, t = plan.seq_len, plan.micro_batch, plan.tp
    d, q, kv, ff = spec.d_model, spec.q_dim, spec.kv_dim, spec.d_ff
    rep = kv_replication(spec.n_kv_heads, t)
    kv_dev = kv * rep / t
    tok = float(s * b)
    e, w = act_bytes, w_bytes
    n_up = spec.n_mlp_matrices - 1
    mm = 0.0
    for k_dim, n_dim in ((d, q / t + 2 * kv_dev), (q / t, d), (d, n_up * ff / t), (ff / t, d)):
        mm += _mm(2 * tok * k_dim * n_dim, e * tok * (k_dim + n_dim) + w * k_dim * n_dim, peak, eff, bw)
    causal = 0.5 if spec.family != "bert" else 1.0
    heads_dev = spec.n_heads / t
    scores = heads_dev * float(s) * s * b * causal
    attn_io = e * tok * (2 * q / t + 2 * kv_dev)
    pe_fwd = 4 * tok * s * causal * q / t / (peak * eff)
    p = _passes()
    if plan.flash_attention:
        fwd = max(pe_fwd, p["forward"]["scalar"] * scores / eng.scalar_elements_per_s,
                  p["forward"]["vector"] * scores / eng.vector_elements_per_s) + attn_io / bw
        bwd = max(2.5 * pe_fwd, p["backward"]["scalar"] * scores / eng.scalar_elements_per_s,
                  p["backward"]["vector"] * scores / eng.vector_elements_per_s) + 2 * attn_io / bw
    else:  # scores materialised in HBM (written, read by softmax, written, read by PV)
        full = scores / causal
        drop = 1.0 if spec.dropout else 0.0
        hbm = (4 + 2 * drop) * e * full
        fwd = (pe_fwd + max(hbm / bw, p["forward"]["scalar"] * full / eng.scalar_elements_per_s,
                            p["forward"]["vector"] * full / eng.vector_elements_per_s) + attn_io / bw)
        bwd = 2.0 * fwd
    sp_div = t if plan.sequence_parallel else 1
    n_norms = 1 if spec.parallel_layers else 2
    norm_el = n_norms * tok * d / sp_div
    resid_el = 2 * tok * d / sp_div
    act_el = tok * ff * n_up / t
    el_bytes = e * (2 * norm_el + 3 * resid_el + (n_up + 1) * act_el)
    vec = (norm_el + resid_el + (act_el if n_up > 1 else 0.0)) / eng.vector_elements_per_s
    sca = (norm_el + act_el) / eng.scalar_elements_per_s
    elementwise = max(el_bytes / bw, vec, sca)
    return {"matmul_fwd": mm, "attention_fwd": fwd, "attention_bwd": bwd, "elementwise_fwd": elementwise}


def logits_fwd_s(spec: ModelSpec, sys: SystemSpec, plan, eff: float, act_bytes: float) -> float:
    """Vocab-parallel output projection + fp32 cross-entropy (streamed), one micro-batch."""
    eng = engines_for(sys)
    bw = stream_bytes_per_s(sys)
    peak = sys.peak_flops(plan.dtype)
    tok = float(plan.seq_len * plan.micro_batch)
    v = spec.vocab_size / plan.tp
    mm = _mm(2 * tok * spec.d_model * v, act_bytes * (tok * (spec.d_model + v) + spec.d_model * v), peak, eff, bw)
    ce = max(2 * 4.0 * tok * v / bw, 2 * tok * v / eng.scalar_elements_per_s)
    return mm + ce


def tp_collectives_s(spec: ModelSpec, sys: SystemSpec, plan, act_bytes: float) -> tuple[float, float]:
    """(forward, backward) seconds of one layer's TP collectives for one micro-batch."""
    if plan.tp <= 1:
        return 0.0, 0.0
    elems = float(plan.seq_len * plan.micro_batch * spec.d_model)
    if plan.sequence_parallel:
        r = recipe("neuron")
        per = r["sp_collectives_per_layer"]
        rs_bwd_bytes = float(r["sp_backward_reduce_scatter_bytes_per_element"])
        ag = comm.collective_s(sys, "all_gather", act_bytes * elems, plan.tp)
        rs = comm.collective_s(sys, "reduce_scatter", act_bytes * elems, plan.tp)
        rs32 = comm.collective_s(sys, "reduce_scatter", rs_bwd_bytes * elems, plan.tp)
        fwd = per["forward"]["all_gather"] * ag + per["forward"]["reduce_scatter"] * rs
        bwd = per["backward"]["all_gather"] * ag + per["backward"]["reduce_scatter"] * rs32
        return fwd, bwd
    ar = comm.collective_s(sys, "all_reduce", act_bytes * elems, plan.tp)
    return 2 * ar, 2 * ar


def microbatch_s(spec: ModelSpec, sys: SystemSpec, plan, eff: float, prec: dict[str, float]) -> dict[str, float]:
    """Seconds of one micro-batch on the slowest pipeline stage, by part (compute, tp_comm, pp_comm)."""
    e, w = prec["activation_bytes"], prec["weight_bytes"]
    L = spec.n_layers / plan.pp
    lay = layer_parts_s(spec, sys, plan, eff, e, w)
    fwd_layer = lay["matmul_fwd"] + lay["attention_fwd"] + lay["elementwise_fwd"]
    bwd_layer = 2 * (lay["matmul_fwd"] + lay["elementwise_fwd"]) + lay["attention_bwd"]
    if plan.recompute == "full":
        rec = fwd_layer
    elif plan.recompute == "selective":
        rec = lay["attention_fwd"]
    else:
        rec = 0.0
    logits = logits_fwd_s(spec, sys, plan, eff, e)
    compute = L * (fwd_layer + bwd_layer + rec) + 3 * logits
    f_c, b_c = tp_collectives_s(spec, sys, plan, e)
    tp = L * (f_c + b_c + (f_c if plan.recompute == "full" else 0.0))
    if plan.tp > 1 and plan.sequence_parallel:  # gather the last hidden state for the logits, scatter its grad
        elems = float(plan.seq_len * plan.micro_batch * spec.d_model)
        tp += (comm.collective_s(sys, "all_gather", e * elems, plan.tp)
               + comm.collective_s(sys, "reduce_scatter", e * elems, plan.tp))
    pp = 0.0
    if plan.pp > 1:
        msg = e * plan.seq_len * plan.micro_batch * spec.d_model / (plan.tp if plan.sequence_parallel else 1)
        pp = 2 * plan.virtual_stages * comm.collective_s(sys, "permute", msg, 2, plan.tp)
    return {"compute": compute, "tp_comm": tp, "pp_comm": pp, "matmul": L * 3 * lay["matmul_fwd"] + 3 * logits}


def dp_and_optimizer_s(sys: SystemSpec, plan, params_dev: float, prec: dict[str, float]) -> tuple[float, float]:
    """(DP synchronisation, optimizer step) seconds per step; ZeRO-1 shards the update over DP."""
    dp_stride = plan.tp * plan.pp
    if plan.dp > 1:
        if plan.zero1:
            dp = (comm.collective_s(sys, "reduce_scatter", params_dev * prec["grad_bytes"], plan.dp, dp_stride)
                  + comm.collective_s(sys, "all_gather", params_dev * prec["weight_bytes"], plan.dp, dp_stride))
        else:
            dp = comm.collective_s(sys, "all_reduce", params_dev * prec["grad_bytes"], plan.dp, dp_stride)
    else:
        dp = 0.0
    local = params_dev / (plan.dp if plan.zero1 else 1)
    opt = local * ADAM_BYTES_PER_PARAM_UPDATE / stream_bytes_per_s(sys)
    return dp, opt


def residual_factor(sys: SystemSpec) -> tuple[float, str]:
    """(compiled-matmul efficiency, note) calibrated for ``sys``'s NeuronCore version; (1.0, note) if none."""
    table = load("training.json").get("residuals", {})
    rec = table.get(sys.core_version or "")
    if rec is None:
        return 1.0, (f"no calibrated matmul efficiency for {sys.core_version} ({sys.chip_name}): physics only, "
                     "unvalidated (not a bound: on trn1, physics alone is too slow on some published runs)")
    return float(value(rec)), (f"compiled-matmul efficiency {float(value(rec)):.2f} (calibrated leave-one-out "
                                f"on published trn1 runs, {sys.core_version}; what the physics does not explain)")
