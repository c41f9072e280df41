"""Serving estimator: formulas checked by hand, limits, errors, and a local ModelSpec-like model."""
from dataclasses import dataclass

import pytest

import trnsim
from trnsim.serving import ServingError, estimate, kv_bytes_per_token, max_batch, serving_hardware, valid_tp
from trnsim.training import model as lookup


@dataclass(frozen=True)
class TinySpec:
    """A ModelSpec-like record built locally (the protocol the estimator needs)."""

    name: str = "tiny"
    n_layers: int = 4
    d_model: int = 256
    n_heads: int = 8
    n_kv_heads: int = 2
    d_ff: int = 1024
    vocab_size: int = 1000
    params: int = 4_000_000
    max_seq_len: int = 4096


def test_per_device_hardware_from_catalog():
    hw = serving_hardware("inf2.xlarge")
    inst = trnsim.instance("inf2.xlarge")
    assert hw.devices == inst.logical_neuroncores == 2
    assert hw.device_tflops["bf16"] == pytest.approx(trnsim.chip("inferentia2").peak_tflops["bf16"] / 2)
    assert hw.device_memory_bytes == pytest.approx(16 * 2**30)
    trn2 = serving_hardware("trn2.48xlarge")
    assert trn2.devices == 64 and trn2.device_memory_bytes == pytest.approx(24 * 2**30)
    assert trn2.usd_per_hour is None  # no price in the sources: never invented
    l4 = serving_hardware("g6.xlarge")
    assert (l4.kind, l4.device_hbm_bytes_per_s, l4.device_tflops["bf16"]) == ("gpu", 300e9, 121.0)


def test_kv_cache_formula_llama8b():
    m = lookup("llama3.1-8b")  # 32 layers, 8 KV heads, head_dim 128
    assert kv_bytes_per_token(m, 1) == 2 * 32 * 8 * 128 * 2  # 128 KiB per token
    assert kv_bytes_per_token(m, 2) == 2 * 32 * 4 * 128 * 2
    assert kv_bytes_per_token(m, 16) == 2 * 32 * 1 * 128 * 2  # replicated once tp > kv heads


def test_decode_is_weight_read_at_batch_1():
    m = lookup("llama3.1-8b")
    e = estimate(m, "inf2.xlarge", tp=2, batch=1, input_tokens=512, output_tokens=128)
    hw = serving_hardware("inf2.xlarge")
    weights = (m.n_layers * m.matmul_params_per_layer + m.vocab_size * m.d_model) * 2 / 2  # layers + output head
    assert weights < m.params * 2 / 2  # the input embedding table is indexed, not streamed
    kv = 1 * (512 + 64) * kv_bytes_per_token(m, 2)
    stream = min(hw.device_hbm_bytes_per_s, 272e9)  # per-core DMA ceiling (16 engines x 17 B/ns) binds
    assert e.decode.hbm_ms == pytest.approx((weights + kv) / stream * 1e3)
    assert e.binding == "HBM bandwidth"
    d = e.decode
    assert e.tpot_ms == pytest.approx((max(d.compute_ms, d.hbm_ms) + d.engine_ms + d.collective_ms + d.fixed_ms)
                                      * d.residual)
    assert d.fixed_ms == pytest.approx(32 * 14 * 1.3e-3)  # 14 dependent operators per layer, 1.3 us DMA start
    assert e.decode.collective_ms > 0 and e.collective_model in ("trnsim.cluster", "ring alpha-beta (fallback)")
    # the first token comes out of prefill; the rest cost one decode step each
    assert e.request_latency_ms == pytest.approx(e.ttft_ms + 127 * e.tpot_ms)


def test_prefill_is_compute_bound_and_batching_raises_throughput():
    e1 = estimate("llama3.1-8b", "inf2.xlarge", tp=2, batch=1, input_tokens=2048, output_tokens=128)
    e8 = estimate("llama3.1-8b", "inf2.xlarge", tp=2, batch=8, input_tokens=2048, output_tokens=128)
    assert e1.prefill.binding == "compute"
    assert e8.tokens_per_s > 4 * e1.tokens_per_s  # decode weight reads are shared by the batch
    assert e8.tpot_ms < 2 * e1.tpot_ms
    assert e8.kv_cache_gib_per_device == pytest.approx(8 * e1.kv_cache_gib_per_device)


def test_cost_per_million_tokens():
    e = estimate("llama3.1-8b", "inf2.xlarge", tp=2, batch=4)
    assert e.cost_per_million_output_tokens_usd == pytest.approx(0.758 / (e.tokens_per_s * 3600) * 1e6)
    assert estimate("llama3.1-8b", "trn2.48xlarge", tp=8).cost_per_million_output_tokens_usd is None
    assert "no price in the sources" in estimate("llama3.1-8b", "trn2.48xlarge", tp=8).summary()


def test_memory_fit_and_max_batch():
    m = lookup("llama3.1-70b")
    assert not estimate(m, "inf2.48xlarge", tp=8, batch=1).fits  # 140 GB / 8 > 16 GiB per core
    assert estimate(m, "inf2.48xlarge", tp=24, batch=1).fits  # 64 heads padded to 72
    b = max_batch("llama3.1-8b", "inf2.xlarge", 2, 512, 128)
    assert estimate("llama3.1-8b", "inf2.xlarge", tp=2, batch=b).fits
    assert not estimate("llama3.1-8b", "inf2.xlarge", tp=2, batch=b + 1).fits
    assert max_batch(m, "inf2.xlarge", 2, 512, 128) == 0


def test_collective_latency_binds_for_small_model_on_many_cores():
    e = estimate(TinySpec(), "trn1.32xlarge", tp=8, batch=1, input_tokens=128, output_tokens=32)
    assert e.binding == "collective latency"
    assert e.decode.collective_ms > 10 * e.decode.hbm_ms
    assert estimate(TinySpec(), "trn1.32xlarge", tp=1, batch=1, input_tokens=128, output_tokens=32).decode.collective_ms == 0


def test_replicas_fill_the_instance():
    e = estimate("llama3.1-8b", "inf2.48xlarge", tp=8, batch=4)
    assert e.replicas == 3
    with pytest.raises(ServingError, match=r"tp=16 is not a TP degree .* \[1, 2, 4, 8, 24\]"):
        estimate("llama3.1-8b", "inf2.48xlarge", tp=16, batch=4)


def test_errors_name_rule_and_fix():
    with pytest.raises(ServingError, match="exceeds the 2 NeuronCores"):
        estimate("llama3.1-8b", "inf2.xlarge", tp=4)
    padded = estimate("llama3.1-8b", "inf2.48xlarge", tp=24)  # allowed: heads padded 32 -> 48
    assert any("padded to 48" in n for n in padded.notes)
    with pytest.raises(ServingError, match="tp=1 only"):
        estimate("llama3.1-8b", "g6.48xlarge", tp=2)
    with pytest.raises(ServingError, match="positive integer"):
        estimate("llama3.1-8b", "inf2.xlarge", tp=2, batch=0)
    long = estimate("gpt2-small", "inf2.xlarge", tp=2, input_tokens=1000, output_tokens=100)  # a warning
    assert any("exceeds gpt2-small's maximum of 1024" in n for n in long.notes)
    with pytest.raises(ServingError, match="unknown instance"):
        estimate("llama3.1-8b", "p5.48xlarge")
    with pytest.raises(ServingError, match="fp8"):
        estimate("llama3.1-8b", "g6.xlarge", dtype="fp8")
    assert valid_tp("llama3.1-8b", "g6.48xlarge") == [1]
    assert valid_tp("llama3.1-8b", "inf2.48xlarge") == [1, 2, 4, 8, 24]


def test_generations_order():
    kw = dict(batch=8, input_tokens=512, output_tokens=128)
    inf2 = estimate("llama3.1-8b", "inf2.48xlarge", tp=8, **kw)
    trn2 = estimate("llama3.1-8b", "trn2.48xlarge", tp=8, **kw)
    assert trn2.tpot_ms < inf2.tpot_ms  # more HBM bandwidth per logical core


def test_exercise_checkers():
    from trnsim.course.exercises.serving import check_decode_floor_ms, check_kv_bytes_per_token, check_smallest_tp

    assert check_kv_bytes_per_token(131072)
    gqa = check_kv_bytes_per_token(4 * 131072)
    assert not gqa and any("query heads" in h for h in gqa.hints)
    m = lookup("llama3.1-8b")
    bw = serving_hardware("inf2.xlarge").device_hbm_bytes_per_s
    assert check_decode_floor_ms((m.params_without_embeddings + m.vocab_size * m.d_model) * 2 / 2 / bw * 1e3)
    all_params = check_decode_floor_ms(m.params * 2 / 2 / bw * 1e3)
    assert not all_params and any("embedding" in h for h in all_params.hints)
    assert not check_decode_floor_ms(1.0)
    assert check_smallest_tp(24) and not check_smallest_tp(8)



def test_decode_floor_names_the_dma_ceiling_slip():
    from trnsim.course.exercises.serving import check_decode_floor_ms
    from trnsim.serving.decode_math import stream_bytes_per_s

    m = lookup("llama3.1-8b")
    hw = serving_hardware("inf2.xlarge")
    read = (m.params_without_embeddings + m.vocab_size * m.d_model) * 2 / 2
    right = check_decode_floor_ms(read / hw.device_hbm_bytes_per_s * 1e3)
    assert right and str(right).endswith(": 17.05 ms is right")
    dma = stream_bytes_per_s(hw)
    assert dma < hw.device_hbm_bytes_per_s  # the ceiling binds on inf2, so the slip gives a different number
    for answer in (read / dma * 1e3, 27.6, 28):  # 28: the notebook's "about 28 ms"
        slip = check_decode_floor_ms(answer)
        assert not slip and any("DMA ceiling" in h and "HBM bandwidth" in h and "ignores" in h
                                for h in slip.hints), str(slip)
        assert not any("embedding" in h for h in slip.hints)
    both = check_decode_floor_ms(m.params * 2 / 2 / dma * 1e3)  # all parameters at the DMA ceiling: both slips
    assert not both and any("DMA ceiling" in h for h in both.hints) and any("embedding" in h for h in both.hints)
    for far in (22.0, 1.0, "lots"):  # no slip near: only the general hint
        assert not any("DMA" in h or "embedding" in h for h in check_decode_floor_ms(far).hints)
    # a GPU has no DMA ceiling, so no answer is told it used one
    g6 = serving_hardware("g6.xlarge")
    assert stream_bytes_per_s(g6) == g6.device_hbm_bytes_per_s
    gpu = check_decode_floor_ms(read * 2 / g6.device_hbm_bytes_per_s * 1e3 * 1.3, instance="g6.xlarge", tp=1)
    assert not gpu and not any("DMA" in h for h in gpu.hints)

def test_benchmark_estimate(benchmark):
    m = lookup("llama3.1-8b")
    e = benchmark(lambda: estimate(m, "inf2.48xlarge", 8, 8, 512, 128))
    assert e.fits


def test_a_plan_that_does_not_fit_quotes_no_cost_per_token():
    e = estimate("llama3.1-70b", "inf2.48xlarge", tp=8, batch=4)
    assert not e.fits
    assert "does not fit" in e.summary() and "per 1M output tokens" not in e.summary()
