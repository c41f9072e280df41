"""Issue 14: one source of truth for TP degrees, KV-head replication, link bandwidths, peaks and prices."""
import pytest

import trnsim
from trnsim import serving
from trnsim.cluster import topology
from trnsim.training import recipes, system
from trnsim.training._data import load


@pytest.mark.parametrize("instance", ["trn1.32xlarge", "inf2.48xlarge", "trn2.48xlarge"])
def test_training_and_serving_read_the_same_tp_degrees(instance):
    chip = trnsim.instance(instance).chip
    degrees = [int(t) for t in load("training.json")["neuron_tp_degrees"][chip]["value"]]
    devices = trnsim.instance(instance).logical_neuroncores
    want = [t for t in degrees if t <= devices]
    assert list(system(instance).supported_tp) == want
    assert serving.valid_tp("llama3.1-8b", instance) == want
    assert recipes.supported_tp(chip) == tuple(degrees)


def test_kv_replication_is_shared():
    m = trnsim.training.model("llama3.1-70b")  # 8 KV heads
    assert recipes.kv_replication(m.n_kv_heads, 32) == 4 and recipes.kv_heads_per_device(m.n_kv_heads, 32) == 1
    # serving's KV cache per device and training's replicated K/V projections use the same rule
    assert serving.kv_bytes_per_token(m, 32) == 2 * m.n_layers * 1 * m.head_dim * 2
    e = trnsim.training.estimate(m, "trn1.32xlarge", 32, tp=32, pp=8, seq_len=8192, global_batch=1024)
    assert any("replicated 4x" in n for n in e.notes)


def test_peaks_links_and_prices_come_from_the_catalog():
    inst = trnsim.instance("trn1.32xlarge")
    chip = trnsim.chip(inst.chip)
    per_core = chip.peak_tflops["bf16"] * inst.chips / inst.logical_neuroncores
    assert system("trn1.32xlarge").peak_tflops_per_device["bf16"] == pytest.approx(per_core)
    assert serving.serving_hardware("trn1.32xlarge").device_tflops["bf16"] == pytest.approx(per_core)
    assert topology("trn1.32xlarge").spec.link_gbytes_per_s == pytest.approx(
        inst.neuronlink_gbytes_per_s_per_chip / chip.neuronlink_links)
    note = serving.serving_hardware("trn1.32xlarge").price_note
    assert f"${inst.on_demand_usd_per_hour:g}/h" in note and str(inst.price_as_of) in note
    assert str(inst.price_as_of) in system("trn1.32xlarge").price_note
