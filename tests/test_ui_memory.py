"""Notebook 03: memory levels, DMA costs via trnsim.perf, tile plans, figures and the memory panel."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

import trnsim
from trnsim.models.matmul_math import MAX_SCHEDULED_TRANSFERS, dma_load_cost, hierarchy_levels, plan_tiles
from trnsim.perf.build import load
from trnsim.perf.dma import dma_cost_ns, dma_params
from trnsim.perf.roofline import roofline
from trnsim.course.ui.memory import MemoryPanel, dma_curve, dma_thresholds
from trnsim.course.viz import hierarchy as vh


def test_hierarchy_levels_from_catalog():
    tgt = trnsim.target("trn2")
    by = {lv.name: lv for lv in hierarchy_levels("trn2")}
    assert by["HBM"].capacity_bytes == pytest.approx(tgt.chip.device_memory_gib * 2**30 / tgt.chip.neuroncores)
    assert by["HBM"].bandwidth_gbytes_per_s == pytest.approx(tgt.chip.hbm_gbytes_per_s / tgt.chip.neuroncores)
    assert by["SBUF"].capacity_bytes == tgt.core.sbuf_partitions * tgt.core.sbuf_bytes_per_partition
    assert by["PSUM"].capacity_bytes == 128 * 16 * 1024
    assert by["SBUF"].bandwidth_gbytes_per_s > 10 * by["HBM"].bandwidth_gbytes_per_s


def test_dma_load_cost_is_the_perf_model():
    tgt = trnsim.target("trn1")
    d = dma_load_cost(128, 1024, "bfloat16", "trn1")
    assert d.time_ns == pytest.approx(dma_cost_ns(load(128, 1024, "bfloat16"), dma_params(tgt.core, tgt.chip)))
    assert d.bytes_per_partition == 2048 and d.bytes_total == 128 * 2048
    assert d.time_ns == pytest.approx(d.fixed_ns + d.data_ns)
    assert d.engines_used == 16 and dma_load_cost(8, 1024).engines_used == 1
    # the knee: tiny transfers are dominated by the fixed cost, big ones approach the ceiling
    small, big = dma_load_cost(128, 32), dma_load_cost(128, 32768)
    assert small.gbytes_per_s < 0.05 * big.gbytes_per_s
    assert big.gbytes_per_s > 0.9 * tgt.core.dma_engines * tgt.core.dma_engine_gbytes_per_s
    # back to back in one queue a small transfer still pays the fixed cost (max(fixed, data)); a big one streams
    assert small.queued_gbytes_per_s == pytest.approx(small.bytes_total / small.fixed_ns)
    assert big.queued_gbytes_per_s == pytest.approx(big.bytes_total / big.data_ns)


def test_plan_tiles_counts_occupancy_and_psum():
    p = plan_tiles(4096, 4096, "bfloat16", 128, 512, buffers=2)
    assert (p.row_tiles, p.col_tiles, p.tiles) == (32, 8, 256)
    assert p.sbuf_bytes_per_partition == 2 * 512 * 2
    assert p.sbuf_fraction == pytest.approx(2048 / p.sbuf_usable_bytes_per_partition)
    assert p.psum_banks_per_tile == 1 and p.fits_one_psum_bank
    wide = plan_tiles(4096, 4096, "bfloat16", 128, 2048, buffers=3)
    assert wide.psum_banks_per_tile == 4 and wide.psum_banks_needed == 12 and not wide.fits_one_psum_bank
    # streaming time: at least bytes / DMA ceiling, and bigger tiles stream faster than tiny ones
    ceiling = roofline("trn1").dma_gbytes_per_s
    assert p.stream_time_us * 1e3 >= p.tensor_bytes / ceiling
    tiny = plan_tiles(4096, 4096, "bfloat16", 128, 64)
    assert tiny.stream_time_us > 1.5 * p.stream_time_us
    assert tiny.scheduled_transfers == MAX_SCHEDULED_TRANSFERS < tiny.tiles
    ragged = plan_tiles(1000, 1000, "float32", 128, 300)
    assert (ragged.row_tiles, ragged.col_tiles) == (math.ceil(1000 / 128), math.ceil(1000 / 300))


def test_plan_tiles_extrapolation_matches_full_schedule():
    # 1,024 tiles: the first MAX_SCHEDULED_TRANSFERS scheduled, the rest extrapolated; compare with
    # the same tensor in bigger tiles scheduled in full (same bytes, same per-transfer cost shape)
    p = plan_tiles(4096, 4096, "bfloat16", 128, 128)
    assert p.tiles == 1024 and p.scheduled_transfers == MAX_SCHEDULED_TRANSFERS
    per_tile = p.stream_time_us / p.tiles
    small = plan_tiles(512, 4096, "bfloat16", 128, 128)      # 128 tiles, scheduled in full
    assert small.scheduled_transfers == small.tiles
    assert per_tile == pytest.approx(small.stream_time_us / small.tiles, rel=0.05)


def test_plan_tiles_errors_are_clear():
    with pytest.raises(ValueError, match="SBUF overflow: 4 buffer"):
        plan_tiles(4096, 65536, "float32", 128, 16384, buffers=4)
    with pytest.raises(ValueError, match=r"1..128 partitions"):
        plan_tiles(4096, 4096, "bfloat16", 256, 512)
    with pytest.raises(ValueError, match="larger than the tensor"):
        plan_tiles(64, 4096, "bfloat16", 128, 512)
    with pytest.raises(ValueError, match="dtype 'int4'"):
        plan_tiles(4096, 4096, "int4", 128, 512)


def test_figures_draw_what_the_plan_says():
    p = plan_tiles(4096, 4096, "bfloat16", 64, 1024, buffers=3)
    fig, axs = plt.subplots(1, 3)
    vh.plot_sbuf_map(axs[0], p)
    buffers = [r for r in axs[0].patches if r.get_height() == 64]
    assert len(buffers) == 3 and buffers[0].get_width() == pytest.approx(2048)
    vh.plot_psum_map(axs[1], p)
    assert "6 of 8 banks" in axs[1].get_title()   # 1024 FP32 = 4 KiB = 2 banks per tile
    curve = dma_curve(128, "bfloat16", "trn1")
    vh.plot_dma_curve(axs[2], curve, thresholds=dma_thresholds("trn1"), mark=p.dma, ceiling_gbytes_per_s=272)
    assert len(axs[2].lines) >= 2 + 3
    fig2, axs2 = plt.subplots(1, 2)
    vh.plot_hierarchy(axs2, hierarchy_levels("trn1"))
    assert len(axs2[0].patches) == 4
    plt.close("all")


def test_memory_panel_headless():
    panel = MemoryPanel()
    assert panel.result.tiles == 256 and panel.error == ""
    panel.free.value = 64
    assert panel.result.dma.bytes_per_partition == 128
    assert "descriptor efficiency" in panel.summary
    panel.dtype.value = "float32"
    assert panel.result.tile_bytes_per_partition == 256
    panel.partitions.value = 8
    assert panel.result.dma.engines_used == 1
    panel.target.value = "trn2"
    assert panel.result.target == "trn2"
    assert any(o["output_type"] == "display_data" for o in panel.out.outputs)


def test_memory_panel_shows_overflow_error():
    panel = MemoryPanel(rows=4096, cols=65536, dtype="float32", free=8192, buffers=2)
    assert panel.error == ""
    panel.buffers.value = 8
    assert panel.result is None and "SBUF overflow" in panel.error
    errs = [o for o in panel.out.outputs if o["output_type"] == "stream" and o["name"] == "stderr"]
    assert errs and "SBUF overflow" in errs[0]["text"]
    panel.buffers.value = 2
    assert panel.error == "" and panel.result.buffers == 2


def test_memory_panel_update_speed(benchmark):
    panel = MemoryPanel()
    sizes = iter([256, 512, 1024, 2048] * 10_000)
    benchmark(lambda: setattr(panel.free, "value", next(sizes)))
    assert panel.error == ""


def test_plan_tiles_speed(benchmark):
    p = benchmark(plan_tiles, 4096, 4096, "bfloat16", 128, 64)
    assert p.scheduled_transfers == MAX_SCHEDULED_TRANSFERS
