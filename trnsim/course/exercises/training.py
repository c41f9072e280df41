"""Checkers for the "check yourself" exercises of notebooks 10 and 11.

Each returns a :class:`trnsim.course.check.CheckResult` comparing the learner's answer with the
simulator's own, with hints that name the idea to revisit.
"""
from __future__ import annotations

import numpy as np

from trnsim.course.check import accepts_stubs, as_number, CheckResult, combine, expect_close, expect_equal
from trnsim.training import tinygpt as tg
from trnsim.training._data import load, value
from trnsim.training.estimate import chinchilla_tokens
from trnsim.training.models import model as get_model
from trnsim.training.systems import GIB


def bytes_per_param(dtype: str = "bf16") -> float:
    """Weights + gradients + optimizer state per parameter (data/training.json, ZeRO paper): 16 for bf16."""
    rec = load("training.json")["precision"][dtype]
    return float(value(rec["weight_bytes"]) + value(rec["grad_bytes"]) + value(rec["optimizer_bytes"]))


def check_dp_allreduce_bytes(answer_bytes: float, config: tg.TinyConfig | None = None) -> CheckResult:
    """Bytes each data-parallel step all-reduces for the tiny GPT in float32."""
    cfg = config or tg.TinyConfig.from_spec("tinygpt")
    want = tg.n_params(tg.init_params(cfg, 0, dtype=np.float32)) * 4
    return expect_close("bytes all-reduced per DP step", answer_bytes, want, rtol=0.01, unit="B",
                        hint="every gradient is summed once: number of parameters x 4 bytes (float32)",
                        factor_hints={2 * 7 / 8: "that is what each of 8 ranks sends over a ring (2 (N-1)/N of the "
                                                 "buffer); the question asks for the buffer itself",
                                      4.0: "that counts parameters (elements); each float32 gradient is 4 bytes",
                                      8.0: "that sums the buffer over the 8 ranks; each rank all-reduces one buffer"})


def check_tp_allreduces_per_step(answer: int, config: tg.TinyConfig | None = None) -> CheckResult:
    cfg = config or tg.TinyConfig.from_spec("tinygpt")
    want = 4 * cfg.n_layers
    title = f"all-reduces per TP step ({cfg.n_layers} layers)"
    got = answer
    if answer is not None and answer is not Ellipsis:
        got = as_number(answer)
        if got is None:
            return CheckResult(False, title, f"expected a number, got {answer!r}", ("write the count itself",))
        if got == int(got):
            got = int(got)
    hint = ("per layer: attention and MLP each all-reduce once forward (row-parallel output) and once backward "
            "(column-parallel input gradient)")
    if got == 4:
        hint = f"4 is one layer's count; the model has {cfg.n_layers} layers"
    return expect_equal(title, got, want, hint=hint)


@accepts_stubs
def check_model_state_gib(answer_gib: float, model: str = "llama2-7b", tp: int = 8) -> CheckResult:
    """GiB per NeuronCore for weights + gradients + Adam state (no ZeRO), TP-sharded."""
    want = get_model(model).params * bytes_per_param("bf16") / tp / GIB
    hints = ["mixed-precision Adam keeps 16 bytes per parameter: 2 (bf16 weight) + 2 (gradient) + "
             "12 (fp32 master copy, momentum, variance)"]
    r = expect_close(f"model state per core, {model} with TP={tp}", answer_gib, want, rtol=0.03, unit="GiB",
                     hint=hints[0])
    if not r.passed and np.isclose(float(answer_gib) / tp, want, rtol=0.03):
        return CheckResult(False, r.title, r.message, r.hints + ("you forgot to divide by the TP degree",))
    if not r.passed and np.isclose(float(answer_gib), want * GIB / 1e9, rtol=0.03):
        return CheckResult(False, r.title, r.message, r.hints + ("GB versus GiB: divide bytes by 2**30",))
    return r


@accepts_stubs
def check_chinchilla(answer_tokens: float, model: str = "chinchilla-70b") -> CheckResult:
    """Compute-optimal training tokens.

    About 20 tokens per parameter; either parameter count is right: the published one (70B ->
    the paper's 1.4T tokens) or the one trnsim computes from the architecture (65B -> 1.3T).
    """
    spec = get_model(model)
    computed = chinchilla_tokens(spec)
    per = computed / spec.params
    wants = [computed] + ([per * spec.published_params] if spec.published_params else [])
    hint = (f"Chinchilla: about {per:.0f} training tokens per parameter; the published size "
            f"({(spec.published_params or spec.params) / 1e9:.0f}B) and the computed size "
            f"({spec.params / 1e9:.1f}B) both count")
    best = min(wants, key=lambda w: abs(float(answer_tokens) / w - 1) if isinstance(answer_tokens, (int, float))
               and not isinstance(answer_tokens, bool) else 0.0)
    return expect_close(f"compute-optimal tokens for {model}", answer_tokens, best, rtol=0.05, unit="tokens",
                        hint=hint)


@accepts_stubs
def check_days(answer_days: float, flops_per_token: float, tokens: float, devices: int, peak_tflops: float,
               mfu: float) -> CheckResult:
    """Days = tokens x FLOPs per token / (devices x peak x MFU) / 86400."""
    want = tokens * flops_per_token / (devices * peak_tflops * 1e12 * mfu) / 86400
    return expect_close("days to train", answer_days, want, rtol=0.03, unit="days",
                        hint="time = total FLOPs / (devices x peak FLOP/s x MFU); 86,400 s per day")


def check_planner_answer(best_tp: int, best_pp: int, result) -> CheckResult:
    """Does the learner's (TP, PP) match the planner's fastest plan?"""
    b = result.best
    return combine("fastest plan", [expect_equal("TP degree", best_tp, b.plan.tp,
                                                 hint="read the first row of the ranked table"),
                                    expect_equal("PP degree", best_pp, b.plan.pp,
                                                 hint="read the first row of the ranked table")])
