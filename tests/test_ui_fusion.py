"""Notebook 06: fusion comparisons (traffic formulas vs simulator) and the fusion panel driven headlessly."""
from __future__ import annotations

import pytest

from trnsim.models import journey as kp


@pytest.mark.parametrize("seq", [512, 1024])
def test_attention_traffic_formula_matches_simulator(seq):
    r = kp.compare_fusion("attention", seq)
    assert r.profiles[0].hbm_bytes == kp.attention_traffic(seq, 128, fused=False)
    assert r.profiles[1].hbm_bytes == kp.attention_traffic(seq, 128, fused=True)
    assert r.estimated_bytes == (r.profiles[0].hbm_bytes, r.profiles[1].hbm_bytes)


def test_flash_attention_traffic_ratio_grows_with_sequence_length():
    small, big = kp.compare_fusion("attention", 512), kp.compare_fusion("attention", 2048)
    assert big.traffic_ratio > small.traffic_ratio > 1.0
    assert big.speedup > 1.0


@pytest.mark.parametrize("rows,cols", [(1024, 512), (2048, 1024)])
def test_softmax_fusion_halves_traffic_and_is_faster(rows, cols):
    r = kp.compare_fusion("softmax", rows, cols)
    assert r.profiles[0].hbm_bytes == kp.rowwise_traffic(rows, cols, 4, 2)
    assert r.profiles[1].hbm_bytes == kp.rowwise_traffic(rows, cols, 4, 1)
    assert r.speedup > 1.2


def test_normalisation_pair_same_traffic_different_engine_balance():
    r = kp.compare_fusion("normalisation", 2048, 1024)
    layer, rms = r.profiles
    assert abs(layer.hbm_bytes - rms.hbm_bytes) < 0.01 * rms.hbm_bytes
    assert layer.engine_busy_us["vector"] > 1.5 * rms.engine_busy_us["vector"]
    assert "layernorm" in r.summary() and "rmsnorm" in r.summary()


def test_compare_fusion_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown workload"):
        kp.compare_fusion("conv", 1024)
    with pytest.raises(ValueError, match="multiple of 128"):
        kp.compare_fusion("softmax", 1000)


def test_fusion_panel_headless():
    from trnsim.course.ui.fusion import FusionPanel

    panel = FusionPanel(workload="softmax", length=1024, cols=512)
    assert panel.error == "" and panel.result.workload == "softmax"
    assert "2.0x less HBM traffic" in panel.summary
    assert any(o.get("output_type") == "display_data" for o in panel.out.outputs)
    panel.workload.value = "attention"
    assert panel.result.labels == ("attention (unfused)", "flash attention")
    assert panel.result.profiles[1].hbm_bytes < panel.result.profiles[0].hbm_bytes
    panel.length.value = 512
    assert panel.result.length == 512 and "Sq = Sk = 512" in panel.summary
    panel.cols.value = 2048                      # ignored by attention, used by the row kernels
    panel.workload.value = "normalisation"
    assert panel.result.cols == 2048 and panel.result.length == 512


def test_bench_fusion_panel_callback(benchmark):
    """One widget callback (switch workload): cached profiles + rendering the four-panel figure."""
    from trnsim.course.ui.fusion import FusionPanel

    panel = FusionPanel(workload="softmax", length=1024, cols=1024)
    choices = iter(["normalisation", "softmax"] * 1000)

    def change():
        panel.workload.value = next(choices)

    benchmark(change)
    assert panel.error == ""


def test_bench_compare_fusion_uncached(benchmark):
    """Two timing-only profiles of a new softmax shape (the pure part of a callback, cache cleared)."""
    def run():
        kp._profile_pair.cache_clear()
        return kp.compare_fusion("softmax", 2048, 1024)

    r = benchmark(run)
    assert r.traffic_ratio > 1.9
