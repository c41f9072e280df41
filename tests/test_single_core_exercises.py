"""The "check yourself" checkers of notebooks 01-03: right answers pass, typical slips get specific hints."""
from __future__ import annotations

import pytest

import trnsim
from trnsim.course.exercises import single_core as ex


def test_matmul_counts():
    m, n, k = 1024, 1024, 1024
    f, b = 2 * m * n * k, 2 * (m * k + k * n + m * n)
    assert ex.check_matmul_counts(m, n, k, "bfloat16", f, b, f / b)
    bad = ex.check_matmul_counts(m, n, k, "bfloat16", m * n * k, b, f / b)
    assert not bad and "2*M*N*K" in str(bad)
    wrong_size = ex.check_matmul_counts(m, n, k, "float32", 2 * m * n * k, b, f / b)
    assert not wrong_size and "you used 2 bytes per element; float32 has 4" in str(wrong_size)
    no_c = ex.check_matmul_counts(m, n, k, "bfloat16", f, 2 * (m * k + k * n), f / b)
    assert "written back to HBM" in str(no_c)
    assert "FLOPs count" not in str(no_c)            # the generic FLOPs hint is not shown for bytes
    assert "not answered" in str(ex.check_matmul_counts(m, n, k, "bfloat16", None, b, f / b))


def test_bound_and_tiles_and_systolic():
    blank = str(ex.check_bound(1, 4096, 4096, "bfloat16", "trn1", None))
    assert "not answered" in blank and "ridge" not in blank and "FLOP/B" not in blank   # no answer in the hint
    assert ex.check_bound(1, 4096, 4096, "bfloat16", "trn1", "memory-bound")
    assert ex.check_bound(4096, 4096, 4096, "bfloat16", "trn1", "Compute")
    wrong = ex.check_bound(1, 4096, 4096, "bfloat16", "trn1", "compute")
    assert not wrong and "ridge point" in str(wrong) and "bound of 1x4096" in str(wrong)
    assert ex.check_tile_count(1024, 2048, 512, 8 * 4 * 4)
    # a decode step (M = 64): either orientation's count is a valid mapping, each named; the hint gives both
    a_stat, b_stat = ex.check_tile_count(64, 4096, 4096, 256), ex.check_tile_count(64, 4096, 4096, 1024)
    assert a_stat and "A stationary" in a_stat.message and b_stat and "B stationary" in b_stat.message
    wrong = ex.check_tile_count(64, 4096, 4096, 512)
    assert not wrong and "= 256" in str(wrong) and "= 1,024" in str(wrong)
    r = ex.check_tile_count(1024, 2048, 512, 8 * 4 * 16)
    assert not r and "ceil(N/512)" in str(r)
    assert ex.check_systolic_cycles(4, 3, 5, 10)
    r = ex.check_systolic_cycles(4, 3, 5, 5)
    assert not r and "steady-state" in str(r)
    assert "multiply-adds" in str(ex.check_systolic_cycles(4, 3, 5, 60))
    assert "count from cycle 0" in str(ex.check_systolic_cycles(4, 3, 5, 12))


def test_memory_checkers():
    usable = trnsim.target("trn1").core.sbuf_usable_bytes_per_partition
    assert ex.check_tile_footprint(128, 2048, "float32", 8192, 100 * 8192 / usable)
    # the percentage rounded to one decimal passes (4.5 for 4.545); the total-SBUF slip (192 KiB) does not
    assert ex.check_tile_footprint(128, 2048, "float32", 8192, round(100 * 8192 / usable, 1))
    assert not ex.check_tile_footprint(128, 2048, "float32", 8192, round(100 * 8192 / (192 * 1024), 1))
    whole = ex.check_tile_footprint(128, 2048, "float32", 128 * 8192, 100 * 8192 / usable)
    assert not whole and "the whole tile's bytes" in str(whole)
    assert ex.check_psum_banks(1024, 2) and ex.check_psum_banks(512, 1) and ex.check_psum_banks(513, 2)
    assert ex.check_psum_banks(1536, 3) and not ex.check_psum_banks(1536, 2)    # notebook 03's exercise 2
    r = ex.check_psum_banks(1024, 1)
    assert not r and "512 FP32 values" in str(r) and "FLOPs" not in str(r)
    core = trnsim.target("trn1").core
    est = core.dma_fixed_cost_ns + 8 * 4096 / core.dma_engine_gbytes_per_s
    assert ex.check_dma_time(128, 2048, "bfloat16", est)              # within 10% of the DMA model
    r = ex.check_dma_time(128, 2048, "bfloat16", est - core.dma_fixed_cost_ns)
    assert not r and "fixed ~1,300 ns" in str(r)


def test_engine_checkers():
    assert ex.check_engine_for("exp", "scalar") and ex.check_engine_for("exp", "ACT")
    assert ex.check_engine_for("matmul", "Tensor engine")
    r = ex.check_engine_for("exp", "vector")
    assert not r and "Scalar Engine" in str(r)
    assert ex.check_engine_for("scale", "gpsimd")
    assert not ex.check_engine_for("scale", "tensor")
    want = 1024 / trnsim.target("trn1").core.engines["scalar"].clock_ghz
    assert ex.check_instruction_ns("activation", "scalar", 1024, want)
    r = ex.check_instruction_ns("activation", "scalar", 1024, 128 * want)
    assert not r and "128 partitions" in str(r)
    small = ex.check_instruction_ns("activation", "scalar", 16, 16 / 1.4)
    assert not small and "MIN_II = 64" in str(small)
    assert ex.check_fusion_speedup(512, 2.0)                      # fair: two-op tensor_scalar + exp vs one
    assert not ex.check_fusion_speedup(512, 3.0)
    assert ex.check_fusion_speedup(512, 3.0, baseline="three")    # naive: three single-op instructions
    r = ex.check_fusion_speedup(512, 1.0)
    assert not r and "max(MIN_II, N)" in str(r)
    with pytest.raises(ValueError, match="baseline='four'"):
        ex.check_fusion_speedup(512, 2.0, baseline="four")
    # notebook 02 exercise 3: the whole single-tile kernel gains far less than the engine (load and store stay)
    from trnsim.models.engines import PRESETS, run_sequence
    u = run_sequence(PRESETS["two-op tensor_scalar, then exp on Scalar"], 128, 1024).latency_us
    f = run_sequence(PRESETS["fused: one activation"], 128, 1024).latency_us
    assert 1.05 < u / f < 1.5 and ex.check_fusion_speedup(1024, u / f, measure="kernel")
    engine_answer = ex.check_fusion_speedup(1024, 2.0, measure="kernel")
    assert not engine_answer and "load and its store" in str(engine_answer)


@pytest.mark.parametrize("answer", [None, ...])
def test_unanswered_stubs_say_so(answer):
    assert "not answered" in str(ex.check_psum_banks(1024, answer))
    assert "not answered" in str(ex.check_systolic_cycles(4, 3, 5, answer))
