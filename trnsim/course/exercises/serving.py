"""Checkers for notebook 12's "check yourself" exercises (answers computed by the simulator)."""
from __future__ import annotations

from trnsim.course.check import accepts_stubs, CheckResult, combine, expect_close, expect_equal, with_slip_hint
from trnsim.serving.decode_math import stream_bytes_per_s
from trnsim.serving.estimate import DTYPE_BYTES, _model, estimate, kv_bytes_per_token, valid_tp, weights_read_params
from trnsim.serving.hardware import serving_hardware


@accepts_stubs
def check_kv_bytes_per_token(answer: float, model: str = "llama3.1-8b", dtype: str = "bf16") -> CheckResult:
    """KV-cache bytes per token for the whole model on one device (tp=1)."""
    m = _model(model)
    want = kv_bytes_per_token(m, 1, dtype)
    hint = (f"2 (K and V) x {m.n_layers} layers x {m.n_kv_heads} KV heads (not {m.n_heads} query heads) x "
            f"head_dim x {DTYPE_BYTES[dtype]} bytes")
    res = expect_close("KV cache bytes per token", answer, want, rtol=0.01, unit="B", hint=hint)
    if not res.passed and answer and abs(answer / want - m.n_heads / m.n_kv_heads) < 0.05:
        return CheckResult(False, res.title, res.message,
                           res.hints + (f"you used all {m.n_heads} query heads: grouped-query attention stores only "
                                        f"{m.n_kv_heads} KV heads",))
    return res


@accepts_stubs
def check_decode_floor_ms(answer: float, model: str = "llama3.1-8b", instance: str = "inf2.xlarge",
                          tp: int = 2) -> CheckResult:
    """Lower bound on one decode step at batch 1: the weights a step reads, per device, at HBM bandwidth (ms).

    The weights read are every layer plus the output head; the input embedding is only indexed.
    """
    m = _model(model)
    hw = serving_hardware(instance)
    bw = hw.device_hbm_bytes_per_s
    dma = stream_bytes_per_s(hw)  # the HBM share capped by the NeuronCore's DMA ceiling (the estimator's rate)
    read = weights_read_params(m) * DTYPE_BYTES["bf16"] / tp
    everything = m.params * DTYPE_BYTES["bf16"] / tp
    want = read / bw * 1e3
    res = expect_close(f"decode floor for {model} on {instance} (tp={tp})", answer, want, rtol=0.02, unit="ms",
                       byte_units=True,   # a time from a byte rate: GiB/s read as GB/s is a likely slip
                       hint=f"bytes per device = (layer params + vocab x d_model) x 2 / {tp}; per-device bandwidth "
                            f"= instance bandwidth / {hw.devices} {hw.device_label}s")
    embedding = ("you streamed all parameters; the input embedding table is only indexed (one row per token), "
                 "so a step does not read it")
    ceiling = (f"you used the DMA ceiling ({dma / 1e9:.0f} GB/s per {hw.device_label}) instead of the HBM "
               f"bandwidth ({bw / 1e9:.0f} GB/s per {hw.device_label}); the exercise says this floor ignores the "
               f"DMA ceiling: divide by the HBM share")
    slips = {everything / bw * 1e3: (embedding,), read / dma * 1e3: (ceiling,),
             everything / dma * 1e3: (ceiling, embedding)}
    # a slip that gives (about) the right answer on this hardware, such as the DMA ceiling where there is none,
    # names nothing; the rest match the nearest slip within a 2 % relative tolerance
    return with_slip_hint(res, answer, {v: why for v, why in slips.items() if abs(v / want - 1) > 0.02}, 0.02)


def check_smallest_tp(answer: int, model: str = "llama3.1-70b", instance: str = "inf2.48xlarge",
                      input_tokens: int = 512, output_tokens: int = 128) -> CheckResult:
    """The smallest valid TP degree whose weights + one request's KV cache fit per device."""
    want = next(tp for tp in valid_tp(model, instance)
                if estimate(model, instance, tp, 1, input_tokens, output_tokens).fits)
    return expect_equal(f"smallest TP for {model} on {instance}", answer, want,
                        hint="weights per device = params x 2 bytes / tp must stay under the device memory "
                             "with room for the KV cache; tp must be a degree the runtime supports "
                             f"({valid_tp(model, instance)}; heads are padded when tp does not divide them)")


def check_notebook12(kv_bytes: float, floor_ms: float, smallest_tp: int) -> CheckResult:
    return combine("Notebook 12 check", [check_kv_bytes_per_token(kv_bytes), check_decode_floor_ms(floor_ms),
                                         check_smallest_tp(smallest_tp)])
