"""Every scaling checker: a right answer passes, a typical wrong answer fails with a hint, a blank says so."""
import pytest

import trnsim.training as tr
from trnsim.course.exercises import scaling as x
from trnsim.serving.estimate import kv_bytes_per_token, matmul_params
from trnsim.serving.hardware import serving_hardware
from trnsim.serving.decode_math import stream_bytes_per_s
from trnsim.training import scaling as sc

P7 = tr.model("llama2-7b").params
W32 = sc.ring_busbw_bytes_per_s("trn1.32xlarge", 32)
W8 = sc.ring_busbw_bytes_per_s("trn1.32xlarge", 8)
C1 = tr.system("trn1.32xlarge").peak_flops("bf16")
L7 = tr.model("llama2-7b").matmul_params_per_layer
HW = serving_hardware("inf2.xlarge")
RATE = stream_bytes_per_s(HW)
KV = kv_bytes_per_token("llama3.1-8b", 2)
MM8 = matmul_params(tr.model("llama3.1-8b"))  # layers' matmul weights + output head

# (checker, right answer worked by hand, typical wrong answer, words the wrong answer's hint must contain)
CASES = [
    (x.check_ring_bytes_per_rank, 2 * 31 / 32 * 2**30, 31 / 32 * 2**30, "two passes"),
    (x.check_ring_crossover_bytes, 32 * 2e-6 * 100e9, 2e-6 * 100e9, "leaves an N"),
    (x.check_dp_comm_ms, 2 * 31 / 32 * 2 * P7 / W32 * 1e3, 2 * 31 / 32 * 4 * P7 / W32 * 1e3, "bf16"),
    (x.check_dp_critical_tokens, 2 / 3 * 31 / 32 * C1 / W32, 31 / 32 * C1 / W32, "ZeRO-3"),
    (x.check_exposed_comm_ms, 1.5, 4.0, "last to first"),
    (x.check_layer_train_flops, 6 * L7 * 4096, 2 * L7 * 4096, "only the forward"),
    (x.check_tp_comm_bytes, 24 * 7 / 8 * 4096 * 4096, 16 * 7 / 8 * 4096 * 4096, "textbook count"),
    (x.check_tp_max_compute_bound, 1 + int(L7 * W8 / (4 * 4096 * C1)), 32, "round down"),
    (x.check_bubble_fraction, 3 / 11, 3 / 8, "relative to the ideal"),
    (x.check_min_microbatches, 133, 140, "solve"),
    (x.check_zero_state_gib, 16 * P7 / 32 / 2**30, 16 * P7 / 32 / 1e9, "GiB"),
    (x.check_decode_intensity, 16, 32, "cancel"),
    (x.check_critical_batch, 350, 95e12 / 272e9 * 4, "solve for B"),
    (x.check_kv_read_ms, 64 * 4096 * KV / RATE * 1e3, 64 * 4096 * 2 * KV / RATE * 1e3, "share of the KV heads"),
    (x.check_max_context, 2 * MM8 / 2 / (HW.device_tflops["bf16"] * 1e12) * RATE / KV, 4096, "solve for S"),
    (x.check_tp_decode_allreduce_bytes, 32 * 2 * 8 * 4096 * 2, 32 * 8 * 4096 * 2, "two all-reduces"),
]


def test_every_checker_is_covered():
    names = {n for n in dir(x) if n.startswith("check_")}
    assert names == {c[0].__name__ for c in CASES}


@pytest.mark.parametrize("checker, right, wrong, words", CASES, ids=[c[0].__name__ for c in CASES])
def test_right_wrong_blank(checker, right, wrong, words):
    good = checker(right)
    assert good.passed, str(good)
    bad = checker(wrong)
    assert not bad.passed
    assert words in " ".join(bad.hints), str(bad)
    for blank in (None, ...):
        r = checker(blank)
        assert not r.passed and "not answered" in r.message


def test_critical_batch_with_kv_and_interleaved_variants():
    assert x.check_critical_batch(573, context_tokens=128).passed
    assert not x.check_critical_batch(350, context_tokens=128).passed
    assert x.check_min_microbatches(40, kind="interleaved", chunks=4).passed
    assert not x.check_min_microbatches(34, kind="interleaved", chunks=4).passed  # not a multiple of p
    assert x.check_dp_critical_tokens(31 / 32 * C1 / W32, zero_stage=3).passed
    # notebook 09 problem 10.5: ZeRO-3 over 16 ranks; the DP formula there is named as the slip
    w16 = sc.ring_busbw_bytes_per_s("trn1.32xlarge", 16)
    assert x.check_dp_critical_tokens(15 / 16 * C1 / w16, dp=16, zero_stage=3).passed
    dp_slip = x.check_dp_critical_tokens(2 / 3 * 15 / 16 * C1 / w16, dp=16, zero_stage=3)
    assert not dp_slip.passed and "3 passes" in " ".join(dp_slip.hints)
    with pytest.raises(sc.ScalingError, match="never turns compute bound"):
        x.check_critical_batch(1, context_tokens=4096)



def test_min_microbatches_round_up_hint():
    # 1F1B, p=8, 5 %: (p-1)/(m+p-1) <= 0.05 gives m >= 7 x 19 = 133 exactly; 132 misses (7/139 = 5.04 %)
    for below in (132, 132.5):
        r = x.check_min_microbatches(below)
        assert not r.passed
        assert any(h.startswith("round up: m must be an integer at least") and "= 133" in h for h in r.hints), str(r)
    assert "7/139 = 5.036%" in str(x.check_min_microbatches(132))
    # a target whose solution is fractional: m >= 7 x (1/0.03 - 1) = 226.3, so 227
    assert x.check_min_microbatches(227, target=0.03).passed
    assert "at least (p-1)(1/target - 1) = 226.3" in str(x.check_min_microbatches(226, target=0.03))
    # interleaved, v=4: m >= 133/4 = 33.25, then the next multiple of p=8 is 40
    for below in (33.25, 33, 34, 32):
        r = x.check_min_microbatches(below, kind="interleaved", chunks=4)
        assert not r.passed
        assert any(h.startswith("round up") and "33.25" in h and "multiple of p = 8: 40" in h for h in r.hints), str(r)
    for far in (140, 19, 134):  # not a rounding slip: no round-up hint
        assert not any("round up" in h for h in x.check_min_microbatches(far).hints)
    assert not any("round up" in h for h in x.check_min_microbatches(48, kind="interleaved", chunks=4).hints)
    assert str(x.check_min_microbatches(133)).endswith(": 133 is right")


def test_min_microbatches_hint_matches_the_schedule():
    for kind in ("1f1b", "gpipe"):
        hint = " ".join(x.check_min_microbatches(140, kind=kind).hints)
        assert "(p-1)/(m + p-1)" in hint and "(p-1)/(v m + p-1)" not in hint
        assert "interleaved schedules need" not in hint
    assert "1F1B bubble" in " ".join(x.check_min_microbatches(140).hints)
    assert "GPipe bubble" in " ".join(x.check_min_microbatches(140, kind="gpipe").hints)
    hint = " ".join(x.check_min_microbatches(48, kind="interleaved", chunks=4).hints)
    assert "(p-1)/(v m + p-1) with v = 4" in hint and "multiple of p = 8" in hint

def test_a_string_is_not_a_number():
    r = x.check_layer_train_flops("lots")
    assert not r.passed and "expected a number" in r.message
