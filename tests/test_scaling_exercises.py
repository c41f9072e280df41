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
    (x.check_zero3_volume_ratio, 1.5, 2.0, "3 passes"),
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
    with pytest.raises(sc.ScalingError, match="never turns compute bound"):
        x.check_critical_batch(1, context_tokens=4096)


def test_a_string_is_not_a_number():
    r = x.check_layer_train_flops("lots")
    assert not r.passed and "expected a number" in r.message
