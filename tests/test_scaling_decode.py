"""trnsim.serving.decode_math against hand-worked numbers and compute_bound_batch."""
import math

import pytest

from trnsim import serving
from trnsim.serving import decode_math as dm
from trnsim.serving.estimate import matmul_params, weights_read_params
from trnsim.serving.hardware import serving_hardware
from trnsim.training import model
from trnsim.training.scaling import ScalingError


def test_terms_by_hand():
    m = model("llama3.1-8b")
    hw = serving_hardware("inf2.xlarge")
    rate = dm.stream_bytes_per_s(hw)
    assert rate <= hw.device_hbm_bytes_per_s
    t = dm.decode_terms(m, "inf2.xlarge", 2, 64, 4096)
    assert t.weights_s == pytest.approx(weights_read_params(m) * 2 / 2 / rate)
    # 32 layers x 8 KV heads / 2 devices x 128 head_dim x 2 (K, V) x 2 bytes = 65,536 B per token per device
    assert t.kv_s == pytest.approx(64 * 4096 * 65536 / rate)
    assert t.compute_s == pytest.approx(64 * 2 * matmul_params(m) / 2 / (hw.device_tflops["bf16"] * 1e12))
    assert t.bound == "memory" and t.step_s == t.memory_s


def test_critical_batches_agree_with_terms():
    b0 = dm.critical_batch_weights_only("llama3.1-8b", "inf2.xlarge", 2)
    t = dm.decode_terms("llama3.1-8b", "inf2.xlarge", 2, b0, 1)
    assert t.compute_s >= t.weights_s
    assert dm.decode_terms("llama3.1-8b", "inf2.xlarge", 2, b0 - 1, 1).compute_s < t.weights_s
    b = serving.compute_bound_batch("llama3.1-8b", "inf2.xlarge", 2, 128)
    assert dm.decode_terms("llama3.1-8b", "inf2.xlarge", 2, b, 128).bound == "compute"
    assert dm.decode_terms("llama3.1-8b", "inf2.xlarge", 2, b - 1, 128).bound == "memory"
    assert b > b0  # the KV term only makes it later


def test_max_context_is_the_edge_of_compute_bound():
    s = dm.max_compute_bound_context("llama3.1-8b", "inf2.xlarge", 2)
    assert serving.compute_bound_batch("llama3.1-8b", "inf2.xlarge", 2, math.floor(s) - 1) is not None
    assert serving.compute_bound_batch("llama3.1-8b", "inf2.xlarge", 2, math.ceil(s) + 1) is None


def test_tp_allreduce_bytes_by_hand():
    # 32 layers x 2 all-reduces x 2 (t-1)/t = 1 x 8 x 4096 x 2 bytes
    assert dm.tp_decode_allreduce_bytes("llama3.1-8b", 8, 2) == 32 * 2 * 8 * 4096 * 2
    assert dm.tp_decode_allreduce_bytes("llama3.1-8b", 8, 1) == 0


@pytest.mark.parametrize("call, match", [
    (lambda: dm.decode_terms("llama3.1-8b", "inf2.xlarge", 4, 1, 1), "tp=4 exceeds the 2 devices"),
    (lambda: dm.decode_terms("llama3.1-8b", "inf2.xlarge", 2, 0, 1), "batch=0 must be >= 1"),
    (lambda: dm.decode_terms("llama3.1-8b", "inf2.xlarge", 2, 1, 1.5), "context_tokens=1.5"),
    (lambda: dm.decode_terms("llama3.1-8b", "inf2.xlarge", 2, 1, 1, dtype="int3"), "dtype='int3'"),
    (lambda: dm.tp_decode_allreduce_bytes("llama3.1-8b", 8, 0), "tp=0"),
])
def test_bad_arguments(call, match):
    with pytest.raises(ScalingError, match=match):
        call()
