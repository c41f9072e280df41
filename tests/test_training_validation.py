"""Independent validation against published GPU-era training results.

Inputs are only the system's specifications (data/training.json: calculon's DGX A100
system file) and each run's published configuration (model, TP, PP, GPUs, batch,
full activation recomputation as stated by Narayanan et al.). Nothing is fitted.

What the model is and what the tests claim (documented tolerance):
* The compute model is a per-operator roofline: matmuls at the tensor-core peak, other
  operators at HBM bandwidth. It is therefore an *upper bound*; the published runs
  achieved about 74% of it. Tests assert predicted/published throughput in (1.0, 1.5)
  for every Megatron row, and that the ratio is nearly constant across a 600x range of
  scale (max/min < 1.15): the scale-dependent physics (TP all-reduces, pipeline bubble,
  data-parallel sync) is reproduced, the constant offset is kernel efficiency we do
  not model.
* MT-NLG (DeepSpeed pipeline engine) ran about 20% below Megatron-LM on the same
  configuration; our ratio there is about 1.67, so its band is (1.0, 1.8). This is a
  real, reported mismatch, not tuned away.
* PaLM: the MFU definition reproduces the published 46.2% exactly from the published
  throughput.
"""
import pytest

import trnsim.training as tr
from trnsim.training._data import load

V = load("training.json")["validation"]


def _predict(row, table):
    name, tp, pp, gpus, batch = row[:5]
    return tr.estimate(name, table["system"], nodes=gpus // 8, tp=tp, pp=pp, seq_len=table["seq_len"],
                       global_batch=batch, micro_batch=1, recompute=table["recompute"], zero1=False,
                       sequence_parallel=False)


def _ratios(key):
    t = V[key]
    return [(_predict(r, t).achieved_tflops_per_device / r[5], r) for r in t["rows"]]


def test_megatron_weak_scaling_table1_and_table2():
    ratios = _ratios("megatron_table1") + _ratios("megatron_table2_ptdp")
    for ratio, row in ratios:
        assert 1.0 < ratio < 1.5, (row, ratio)
    rs = [r for r, _ in ratios]
    assert max(rs) / min(rs) < 1.15


def test_megatron_plans_fit_in_80gb():
    t = V["megatron_table1"]
    for row in t["rows"]:
        assert _predict(row, t).fits, row


def test_table2_training_days_follow_throughput():
    """Days for 300B tokens scale with the published days once the roofline offset is removed."""
    t = V["megatron_table2_ptdp"]
    for row in t["rows"]:
        e = _predict(row, t)
        ratio = e.achieved_tflops_per_device / row[5]
        assert e.days_to_train(t["train_tokens"]) * ratio == pytest.approx(row[6], rel=0.12), row


def test_strong_scaling_trend_175b():
    """More GPUs at fixed batch: per-GPU throughput falls (bigger bubble), as published 153 -> 149 -> 141."""
    t = V["megatron_table2_ptdp"]
    rows = [r for r in t["rows"] if r[0] == "gpt3-175b"]
    pred = [_predict(r, t).achieved_tflops_per_device for r in rows]
    assert pred[0] > pred[1] > pred[2]
    pub_drop = rows[2][5] / rows[0][5]
    assert pred[2] / pred[0] == pytest.approx(pub_drop, abs=0.05)


def test_mt_nlg_iteration_time():
    t = V["mt_nlg"]
    for ratio, row in _ratios("mt_nlg"):
        assert 1.0 < ratio < 1.8, (row, ratio)
    e = _predict(t["rows"][0], t)
    assert 60.0 / 1.8 < e.step_time_s < 60.0


def test_palm_mfu_definition():
    p = V["palm"]
    mfu = tr.mfu_from_throughput(p["model"], p["seq_len"], p["tokens_per_s"], p["chips"], p["peak_tflops_per_chip"])
    assert 100 * mfu == pytest.approx(p["mfu_pct"], abs=0.1)
