"""Notebook 01's matmul math, its exercise checkers, and its two widget panels driven headlessly."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import numpy as np
import pytest

import trnsim
from trnsim.models.matmul_math import estimate, matmul_flops, matmul_hbm_bytes, tile_mapping
from trnsim.perf.roofline import matmul_intensity, roofline
from trnsim.course.ui.matmul import RooflinePanel, SystolicPanel


def test_flops_bytes_intensity_agree_with_perf_roofline():
    assert matmul_flops(128, 512, 128) == 2 * 128 * 512 * 128
    assert matmul_hbm_bytes(2, 3, 4, "bfloat16") == 2 * (2 * 4 + 4 * 3 + 2 * 3)
    assert matmul_hbm_bytes(2, 3, 4, "float32") == 4 * (2 * 4 + 4 * 3 + 2 * 3)
    e = estimate(1000, 3000, 2000, "bfloat16", "trn1")
    assert e.arithmetic_intensity == pytest.approx(e.flops / e.hbm_bytes)
    assert e.arithmetic_intensity == pytest.approx(matmul_intensity(1000, 2000, 3000, 2))


def test_roofline_time_and_bound_from_catalog():
    core = trnsim.target("trn1").core
    peak = core.pe_rows * core.pe_cols * 2 * core.engines["tensor"].clock_ghz / 1e3
    big = estimate(4096, 4096, 4096, "bfloat16", "trn1")
    assert big.roof.peak_tflops == pytest.approx(peak)
    assert big.bound == "compute"
    assert big.time_us == pytest.approx(big.flops / (peak * 1e6))
    vec = estimate(1, 4096, 4096, "bfloat16", "trn1")
    assert vec.bound == "memory"
    assert vec.time_us == pytest.approx(vec.hbm_bytes / (roofline("trn1").dma_gbytes_per_s * 1e3))
    # fp32: a quarter of the peak
    assert estimate(512, 512, 512, "float32").roof.peak_tflops == pytest.approx(peak / 4)


def test_tile_mapping_counts_and_ragged_edges():
    t = tile_mapping(4096, 4096, 4096, "bfloat16", "trn1")
    assert (t.m_tiles, t.k_tiles, t.n_tiles) == (32, 32, 8)
    assert t.instructions == 8192 and t.pe_utilisation == pytest.approx(1.0)
    r = tile_mapping(200, 600, 300, "bfloat16", "trn1")
    # A stationary: M tiles 128 and 72, N tiles 512 and 88 -> max(min(64, m), n) each, times 3 K tiles
    a_cycles = 3 * (max(64, 512) + max(64, 88) + max(64, 512) + max(64, 88))
    # B stationary (C.T = B.T @ A.T): N tiles 4 x 128 and 88 stay, the 200 rows of A move
    b_cycles = 3 * (4 * max(64, 200) + max(64, 200))
    assert b_cycles < a_cycles
    assert r.stationary == "B" and r.moving == "A"
    assert (r.m_tiles, r.k_tiles, r.n_tiles) == (1, 3, 5)
    assert r.tensor_cycles == pytest.approx(b_cycles) and r.other_cycles == pytest.approx(a_cycles)
    assert r.stationary_tile == (128, 128) and r.moving_tile == (128, 200)
    assert r.pe_utilisation < 0.75
    small_n = tile_mapping(128, 16, 128)
    assert small_n.tensor_cycles == 64          # N < 64 still costs MM_INIT_LATENCY cycles
    assert tile_mapping(128, 512, 128, "float32").tensor_cycles == 4 * 512
    # NC-v4 accepts moving tiles up to the catalog's gemm_moving_fmax
    assert tile_mapping(128, 4096, 128, "bfloat16", "trn3").n_tiles == math.ceil(
        4096 / trnsim.target("trn3").core.tile.gemm_moving_fmax)


def test_short_operand_moves_decode_needs_half_the_cycles():
    """Decode at M=64: weights stationary (fill the array), the 64 tokens move: half the cycles of the
    activations-stationary mapping, where each instruction streams 512 weight columns past 64 PEs."""
    t = tile_mapping(64, 4096, 4096, "bfloat16", "trn2")
    assert t.stationary == "B" and t.moving_tile == (128, 64)
    assert t.tensor_cycles == pytest.approx(t.other_cycles / 2)
    assert t.pe_utilisation == pytest.approx(1.0)
    # a long M and a short N: A stays (the usual prefill layout), N = 64 moves
    assert tile_mapping(4096, 64, 4096).stationary == "A"
    # square: a tie keeps A stationary
    assert tile_mapping(512, 512, 512).stationary == "A"
    assert "B stationary [128x128], A moving [128x64]" in estimate(64, 4096, 4096, "bfloat16", "trn2").summary()


def test_bad_inputs_are_clear():
    with pytest.raises(ValueError, match="dtype 'int4'"):
        estimate(8, 8, 8, "int4")
    with pytest.raises(ValueError, match="M=0 is out of range"):
        estimate(0, 8, 8)
    with pytest.raises(ValueError, match="whole number"):
        matmul_flops(1.5, 2, 2)


def test_roofline_panel_headless():
    p = RooflinePanel()
    assert p.result.bound == "compute" and p.error == ""
    assert any(o["output_type"] == "display_data" for o in p.out.outputs)
    p.m.value = 1
    assert p.result.m == 1 and p.result.bound == "memory"
    assert "memory-bound" in p.summary
    p.target.value = "trn2"
    assert p.result.target == "trn2"
    assert p.result.roof.peak_tflops == pytest.approx(estimate(1, 4096, 4096, "bfloat16", "trn2").roof.peak_tflops)
    p.dtype.value = "float32"
    assert p.result.dtype == "float32" and "float32" in p.summary
    texts = "".join(o.get("text", "") for o in p.out.outputs if o["output_type"] == "stream")
    assert "roofline time" in texts


def test_roofline_panel_shows_errors(monkeypatch):
    p = RooflinePanel()
    p.m.max = 1 << 30
    p.m.value = (1 << 20) + 1
    assert p.result is None and "out of range" in p.error
    assert any(o["output_type"] == "stream" and o["name"] == "stderr" for o in p.out.outputs)
    p.m.value = 64
    assert p.error == "" and p.result.m == 64


def test_systolic_panel_headless():
    s = SystolicPanel(k=4, m=3, n=5)
    assert s.cycle.max == 9 and s.play.max == 9
    s.cycle.value = 4
    assert "cycle 4 (of 0..9" in s.summary
    assert s.run.state(4).active_pes == int(s.summary.split(": ")[1].split(" of ")[0])
    s.cycle.value = 9
    assert "matches numpy stationary.T @ moving: True" in s.summary
    s.n.value = 2                                  # shrinking clamps the cycle slider
    assert s.cycle.max == 4 + 3 + 2 - 3 and s.cycle.value <= s.cycle.max
    np.testing.assert_allclose(s.run.out, s.run.stationary.T @ s.run.moving)


def test_roofline_panel_update_speed(benchmark):
    p = RooflinePanel()
    values = iter(range(2, 10_000))
    benchmark(lambda: setattr(p.m, "value", next(values)))
    assert p.error == ""


def test_systolic_panel_step_speed(benchmark):
    s = SystolicPanel()
    cycles = iter([1, 2, 3, 4, 5, 6, 7, 8] * 10_000)
    benchmark(lambda: setattr(s.cycle, "value", next(cycles)))
    assert s.error == ""


def test_tile_mapping_figure_highlights_edge_tile():
    import matplotlib.pyplot as plt

    from trnsim.course.viz.systolic import plot_tile_mapping, plot_time_budget

    t = tile_mapping(200, 600, 300)
    fig, ax = plt.subplots()
    plot_tile_mapping(ax, t, highlight=(0, 2, 4))
    assert "B tile as stationary [44 x 88]" in ax.get_title() and "C.T tile [88 x 200]" in ax.get_title()
    with pytest.raises(ValueError, match="outside the 1 x 3 x 5 tile grid"):
        plot_tile_mapping(ax, t, highlight=(1, 0, 0))
    fig_a, ax_a = plt.subplots()
    plot_tile_mapping(ax_a, tile_mapping(512, 1024, 384), highlight=(3, 2, 1))
    assert "A tile as stationary [128 x 128]" in ax_a.get_title()
    fig2, ax2 = plt.subplots()
    e = estimate(1, 4096, 4096)
    plot_time_budget(ax2, e)
    widths = sorted(p.get_width() for p in ax2.patches)
    assert widths == pytest.approx(sorted([e.compute_time_us, e.memory_time_us, e.tiles.tensor_time_us]))
    plt.close("all")


def test_estimate_speed(benchmark):
    e = benchmark(estimate, 4096, 11008, 4096, "bfloat16", "trn2")
    assert e.bound == "compute"


def test_systolic_simulation_speed(benchmark):
    from trnsim.models.systolic import example_operands, simulate_systolic

    w, x = example_operands(8, 8, 8)
    run = benchmark(simulate_systolic, w, x)
    assert run.cycles == 22


def test_fp8_note_only_where_vendor_rate_differs():
    assert estimate(1024, 1024, 1024, "float8_e4m3", "trn1").fp8_note() == ""          # NC-v2: FP8 = BF16 rate
    note = estimate(1024, 1024, 1024, "float8_e4m3", "trn2").fp8_note()
    assert "double-row" in note and "158" in note
    assert "note:" in estimate(1024, 1024, 1024, "float8_e4m3", "trn2").summary()
    assert estimate(1024, 1024, 1024, "bfloat16", "trn2").fp8_note() == ""
    # FP8 halves the bytes, so it doubles the intensity
    assert estimate(64, 4096, 4096, "float8_e4m3").arithmetic_intensity == pytest.approx(
        2 * estimate(64, 4096, 4096, "bfloat16").arithmetic_intensity)
