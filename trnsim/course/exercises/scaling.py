"""Checkers for the scaling problem sets of notebooks 09 (collectives), 11 (training) and 12 (inference).

Every checker computes the expected answer with the simulator's own functions
(:mod:`trnsim.training.scaling`, :mod:`trnsim.training.pipeline`, :mod:`trnsim.serving.decode_math`)
for the givens in its arguments, and returns a :class:`trnsim.course.check.CheckResult` whose hints name the
slip a typical wrong answer makes (a forgotten backward pass, GB versus GiB, ...).
"""
from __future__ import annotations

from trnsim.course.check import CheckResult, accepts_stubs, expect_close, expect_equal
from trnsim.serving import decode_math as dm
from trnsim.serving.estimate import compute_bound_batch
from trnsim.training import pipeline as pl
from trnsim.training import scaling as sc
from trnsim.training.models import model as get_model
from trnsim.training.systems import GIB, system

# ---- notebook 09: collectives as the price of data parallelism ---------------------------------------


@accepts_stubs
def check_ring_bytes_per_rank(answer_bytes: float, message_bytes: float = 2**30, ranks: int = 32) -> CheckResult:
    """Bytes each rank sends in a ring all-reduce."""
    n = sc.check_count("ranks", ranks, minimum=2)
    want = 2.0 * (n - 1) / n * message_bytes
    return expect_close(f"bytes sent per rank, ring all-reduce of {message_bytes:,.0f} B over {n} ranks",
                        answer_bytes, want, rtol=0.005, unit="B",
                        hint="reduce-scatter then all-gather: each pass sends (N-1) chunks of n/N bytes",
                        factor_hints={0.5 * n / (n - 1): "an all-reduce is two passes (reduce-scatter + all-gather)",
                                      n / (n - 1): "each pass sends N-1 of the N chunks, not all N"})


@accepts_stubs
def check_ring_crossover_bytes(answer_bytes: float, ranks: int = 32, alpha_us: float = 2.0,
                               link_gbytes_per_s: float = 100.0) -> CheckResult:
    """Message size where a ring all-reduce's latency and bandwidth terms are equal."""
    n = sc.check_count("ranks", ranks, minimum=2)
    want = n * alpha_us * 1e-6 * link_gbytes_per_s * 1e9
    return expect_close("latency = bandwidth crossover", answer_bytes, want, rtol=0.01, unit="B",
                        hint="set 2(N-1) alpha equal to 2(N-1)/N x n / B and solve for n: n = N alpha B",
                        factor_hints={float(n): "the (N-1)/N factor leaves an N: n = N x alpha x B",
                                      2.0: "both terms carry the same factor 2(N-1): it cancels"})


@accepts_stubs
def check_dp_comm_ms(answer_ms: float, model: str = "llama2-7b", dp: int = 32,
                     instance: str = "trn1.32xlarge") -> CheckResult:
    """Time of one data-parallel gradient all-reduce (bf16) per step."""
    m = get_model(model)
    w = sc.ring_busbw_bytes_per_s(instance, dp)
    want = 2.0 * (dp - 1) / dp * 2.0 * m.params / w * 1e3
    return expect_close(f"gradient all-reduce of {m.display_name} over {dp} ranks", answer_ms, want, rtol=0.02,
                        unit="ms", hint="bytes per rank = 2(N-1)/N x params x 2 bytes; divide by the bus bandwidth",
                        factor_hints={2.0: "bf16 gradients are 2 bytes each, and an all-reduce is 2 passes",
                                      4.0: "fp32 would be 4 bytes; the gradients here are bf16"})


@accepts_stubs
def check_dp_critical_tokens(answer_tokens: float, dp: int = 32, instance: str = "trn1.32xlarge",
                             zero_stage: int = 0) -> CheckResult:
    """Tokens per device per step above which data parallelism stays compute bound."""
    c = system(instance).peak_flops("bf16")
    w = sc.ring_busbw_bytes_per_s(instance, dp)
    want = sc.dp_critical_tokens(dp, c, w, zero_stage=zero_stage)
    what = "ZeRO-3" if zero_stage == 3 else "DP"
    return expect_close(f"critical tokens per device, {what} x{dp} on {instance}", answer_tokens, want, rtol=0.02,
                        unit="tokens",
                        hint="6 x P x T / C >= k (N-1)/N x 2 P / W with k = 2 for an all-reduce (3 for ZeRO-3): "
                             "P cancels",
                        factor_hints={1.5: "ZeRO-3 moves 3 passes of parameters/gradients, DP only 2",
                                      3.0: "training is 6 FLOPs per parameter per token (forward 2, backward 4)"})


@accepts_stubs
def check_exposed_comm_ms(answer_ms: float, backward_ms: tuple = (2.0,) * 8,
                          comm_ms: tuple = (1.5,) * 7 + (4.0,)) -> CheckResult:
    """Communication left exposed after the backward pass when each layer's all-reduce starts as soon as it can."""
    tl = sc.overlap_timeline([b / 1e3 for b in backward_ms], [c / 1e3 for c in comm_ms])
    want = tl.exposed_comm_s * 1e3
    return expect_close("exposed communication", answer_ms, want, rtol=0.01, atol=1e-9, unit="ms",
                        hint="walk the layers last to first: a collective starts when its layer's backward ends "
                             "AND the previous collective is done; only what runs after the last backward is exposed")


# ---- notebook 11: per-layer arithmetic of each parallelism --------------------------------------------


@accepts_stubs
def check_layer_train_flops(answer_flops: float, model: str = "llama2-7b", tokens: int = 4096) -> CheckResult:
    """Training FLOPs of one transformer layer (matmuls only)."""
    want = sc.layer_train_flops(model, tokens)
    return expect_close(f"training FLOPs of one {model} layer for {tokens} tokens", answer_flops, want, rtol=0.01,
                        unit="FLOP", hint="6 x (matmul weights of the layer) x tokens: forward 2, backward 4",
                        factor_hints={3.0: "you counted only the forward pass; backward is twice the forward",
                                      2.0: "a multiply-add is 2 FLOPs"})


@accepts_stubs
def check_tp_comm_bytes(answer_bytes: float, model: str = "llama2-7b", tokens: int = 4096, tp: int = 8) -> CheckResult:
    """Bytes each rank sends per layer per micro-batch under TP with NxD's sequence parallelism."""
    want = sc.tp_layer_costs(model, tokens, tp, 1.0, 1.0).comm_bytes
    return expect_close(f"TP x{tp} + SP bytes per rank per layer", answer_bytes, want, rtol=0.01, unit="B",
                        hint="forward: 2 all-gathers + 2 reduce-scatters of T x d x 2 bytes; backward: 4 all-gathers "
                             "(2 bytes) + 2 reduce-scatters in fp32 (4 bytes); each sends (t-1)/t of its buffer",
                        factor_hints={3.0: "the backward pass adds 4 all-gathers and 2 fp32 reduce-scatters",
                                      1.5: "that is the textbook count (4 all-reduces); NxD also gathers the input "
                                           "again in the backward and reduce-scatters gradients in fp32",
                                      tp / (tp - 1): "each collective sends (t-1)/t of the buffer"})


@accepts_stubs
def check_tp_max_compute_bound(answer: int, model: str = "llama2-7b", instance: str = "trn1.32xlarge",
                               group: int = 8) -> CheckResult:
    """Largest TP degree that keeps a layer compute bound."""
    c = system(instance).peak_flops("bf16")
    w = sc.ring_busbw_bytes_per_s(instance, group)
    want = sc.tp_max_compute_bound(model, c, w)
    return expect_equal(f"largest compute-bound TP degree for {model}", answer, want,
                        hint="6 P_layer T / (t C) >= 24 (t-1)/t T d / W (NxD's SP collectives) gives "
                             "t - 1 <= P_layer W / (4 d C); round down")


@accepts_stubs
def check_bubble_fraction(answer: float, kind: str = "1f1b", stages: int = 4, microbatches: int = 8,
                          chunks: int = 1) -> CheckResult:
    """Pipeline bubble fraction."""
    want = pl.schedule(kind, stages, microbatches, chunks).bubble_fraction
    return expect_close(f"{kind} bubble, p={stages}, m={microbatches}" + (f", v={chunks}" if chunks > 1 else ""),
                        answer, want, rtol=0.01,
                        hint="idle share = (p-1) / (m + p-1) for GPipe and 1F1B; interleaving shrinks the p-1 "
                             "ramp to (p-1)/v",
                        factor_hints={(microbatches + stages - 1) / microbatches:
                                          "(p-1)/m is the overhead relative to the ideal time; the fraction of "
                                          "the whole step is (p-1)/(m+p-1)"})


@accepts_stubs
def check_min_microbatches(answer: int, stages: int = 8, target: float = 0.05, kind: str = "1f1b",
                           chunks: int = 1) -> CheckResult:
    """Fewest micro-batches that bring the bubble down to the target."""
    step = stages if kind == "interleaved" else 1
    m = step
    while pl.bubble_fraction_formula(kind, stages, m, chunks) > target + 1e-12:
        m += step
    v = chunks if kind == "interleaved" else 1
    if kind == "interleaved":
        hint = (f"the interleaved bubble is (p-1)/(v m + p-1) with v = {v} chunks per device: solve it <= target "
                f"for m; interleaved schedules need m to be a multiple of p = {stages}")
    else:
        hint = (f"the {'1F1B' if kind == '1f1b' else 'GPipe'} bubble is (p-1)/(m + p-1) (the same for GPipe and "
                f"1F1B; no v, only the interleaved schedule splits a device's layers into chunks): solve it <= target "
                f"for m")
    res = expect_equal(f"micro-batches for a bubble <= {target:.0%} ({kind}, p={stages})", answer, m, hint=hint)
    try:
        got = float(answer)
    except (TypeError, ValueError):
        return res
    if not res.passed and m - step <= got < m:
        # at or above the last m that misses the target but below the answer: m* = (p-1)(1/target - 1)/v,
        # the real solution of the inequality, was not rounded up (to a multiple of p, interleaved)
        exact = (stages - 1) * (1 / target - 1) / v
        why = f"round up: m must be an integer at least (p-1)(1/target - 1){'/v' if v > 1 else ''} = {exact:.4g}"
        if kind == "interleaved":
            why += f", and a multiple of p = {stages}: {m}"
        elif got.is_integer():
            why += (f"; at m = {got:.0f} the bubble is {stages - 1}/{got + stages - 1:.0f} = "
                    f"{100 * (stages - 1) / (got + stages - 1):.4g}%, above the {100 * target:g}% target")
        return CheckResult(False, res.title, res.message, res.hints + (why,))
    return res


@accepts_stubs
def check_zero_state_gib(answer_gib: float, model: str = "llama2-7b", dp: int = 32, stage: int = 3) -> CheckResult:
    """Model-state GiB per device under ZeRO."""
    m = get_model(model)
    want = sc.zero_state_bytes_per_device(m.params, dp, stage) / GIB
    return expect_close(f"ZeRO-{stage} model state per device, {model}, DP={dp}", answer_gib, want, rtol=0.02,
                        unit="GiB",
                        hint="16 bytes per parameter = 2 weight + 2 gradient + 12 optimizer; stage 1 shards the "
                             "12, stage 2 also the gradient's 2, stage 3 also the weight's 2",
                        factor_hints={GIB / 1e9: "GB versus GiB: divide bytes by 2**30"})


# ---- notebook 12: decode arithmetic ----------------------------------------------------------------


@accepts_stubs
def check_decode_intensity(answer: float, batch: int = 16) -> CheckResult:
    """FLOPs per weight byte of a bf16 decode step."""
    return expect_close(f"decode FLOPs per weight byte at batch {batch}", answer, float(batch), rtol=0.01,
                        hint="each weight (2 bytes) does one multiply-add (2 FLOPs) per request in the batch",
                        factor_hints={2.0: "bf16 weights are 2 bytes and a multiply-add is 2 FLOPs: they cancel"})


@accepts_stubs
def check_critical_batch(answer: float, model: str = "llama3.1-8b", instance: str = "inf2.xlarge", tp: int = 2,
                         context_tokens: int | None = None) -> CheckResult:
    """Batch at which decode turns compute bound (KV reads ignored when context_tokens is None)."""
    if context_tokens is None:
        want = dm.critical_batch_weights_only(model, instance, tp)
        hint = "FLOPs per request x B / peak = weight bytes / stream bandwidth; solve for B"
    else:
        want = compute_bound_batch(model, instance, tp, context_tokens)
        hint = "B = weight time / (FLOP time per request - KV time per request)"
        if want is None:
            raise sc.ScalingError(f"context_tokens={context_tokens}: at this context decode never turns compute "
                                  f"bound, so the problem has no answer; pick a shorter context")
    return expect_close(f"critical decode batch for {model} on {instance} (tp={tp})", answer, want, rtol=0.02,
                        unit="requests", hint=hint)


@accepts_stubs
def check_kv_read_ms(answer_ms: float, model: str = "llama3.1-8b", instance: str = "inf2.xlarge", tp: int = 2,
                     batch: int = 64, context_tokens: int = 4096) -> CheckResult:
    """Time per decode step to stream the KV cache."""
    want = dm.decode_terms(model, instance, tp, batch, context_tokens).kv_s * 1e3
    return expect_close(f"KV read per step, batch {batch}, context {context_tokens}", answer_ms, want, rtol=0.02,
                        unit="ms", hint="batch x context x KV bytes per token per device / stream bandwidth",
                        factor_hints={float(tp): "each device holds only its share of the KV heads"})


@accepts_stubs
def check_max_context(answer_tokens: float, model: str = "llama3.1-8b", instance: str = "inf2.xlarge",
                      tp: int = 2) -> CheckResult:
    """Longest context at which decode can still turn compute bound."""
    want = dm.max_compute_bound_context(model, instance, tp)
    return expect_close("longest compute-bound context", answer_tokens, want, rtol=0.03, unit="tokens",
                        hint="a request's FLOP time (2 x matmul params / tp / peak) = its KV time "
                             "(S x KV bytes per token / stream bandwidth); solve for S")


@accepts_stubs
def check_tp_decode_allreduce_bytes(answer_bytes: float, model: str = "llama3.1-8b", batch: int = 8,
                                    tp: int = 2) -> CheckResult:
    """Bytes each rank sends in TP all-reduces per decode step."""
    want = dm.tp_decode_allreduce_bytes(model, batch, tp)
    hints = {2.0: "there are two all-reduces per layer (attention and MLP)"}
    if tp > 2:   # at tp = 2 the ring factor 2(t-1)/t is 1, so these slips only show for larger groups
        ring = 2.0 * (tp - 1) / tp
        hints[2.0 / ring] = (f"a ring all-reduce sends 2(t-1)/t = {ring:g} times the buffer per rank, not 2 times "
                             "(reduce-scatter and all-gather each send t-1 of the t chunks)")
        hints[ring] = (f"each ring all-reduce sends 2(t-1)/t = {ring:g} times the buffer per rank, not the buffer "
                       "once")
    return expect_close(f"TP all-reduce bytes per rank per decode step (batch {batch}, tp={tp})", answer_bytes, want,
                        rtol=0.01, unit="B",
                        hint="2 all-reduces per layer of batch x d_model x 2 bytes, each sending 2(t-1)/t of it",
                        factor_hints=hints)


def stream_rate_note(instance: str = "inf2.xlarge") -> str:
    """One line naming the per-device streaming rate the decode problems use (for the notebook)."""
    from trnsim.serving.hardware import serving_hardware

    hw = serving_hardware(instance)
    rate = dm.stream_bytes_per_s(hw)
    return (f"{instance}: {hw.device_tflops['bf16']:.1f} TFLOP/s bf16 and {rate / 1e9:.0f} GB/s streamed per "
            f"{hw.device_label} (HBM share {hw.device_hbm_bytes_per_s / 1e9:.0f} GB/s, DMA ceiling "
            f"{'applies' if rate < hw.device_hbm_bytes_per_s else 'does not bind'})")


