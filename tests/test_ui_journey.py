"""Notebook 05: journey envelope vs simulator, SBUF budget vs the allocator, block panel driven headlessly."""
from __future__ import annotations

import numpy as np
import pytest

import trnsim.nki as nki
from trnsim.course.exercises import kernels_perf as kpc
from trnsim.models import journey as kp
from trnsim.kernels import matmul_fully_blocked, reference


@pytest.mark.parametrize("stage", kp.STAGES)
def test_traffic_formula_matches_simulated_dma_bytes(stage):
    est = kp.journey_traffic(stage, 1024, 1024, 1024)
    prof = kp.profile_stage(stage, 1024, 1024, 1024)
    assert est.total_bytes == prof.hbm_bytes


def test_journey_gets_faster_and_moves_fewer_bytes_at_each_stage():
    rows = kp.journey(1024, 1024, 1024)
    traffic = [r.profile.hbm_bytes for r in rows]
    latency = [r.profile.latency_us for r in rows]
    assert traffic == sorted(traffic, reverse=True) and traffic[0] > 3 * traffic[-1]
    assert latency == sorted(latency, reverse=True)
    for r in rows:                              # an envelope is a lower bound
        assert r.profile.latency_us >= 0.99 * r.envelope.bound_us
    table = kp.format_journey(rows)
    assert "4 fully blocked" in table and "bottleneck" in table


@pytest.mark.parametrize("stage", kp.STAGES)
def test_transfer_count_matches_simulated_dma_transfers(stage):
    xf = kp.journey_transfers(stage, 1024, 1024, 2048)
    prof = kp.profile_stage(stage, 1024, 1024, 2048)
    assert sum(n for n, _ in xf.values()) == prof.dma_transfers
    assert sum(n * b for n, b in xf.values()) == prof.hbm_bytes


def test_queue_bound_is_transfers_times_fixed_cost_and_explains_the_dma_bound_stages():
    import trnsim

    fixed_us = trnsim.target("trn1").core.dma_fixed_cost_ns / 1e3       # about 1.3 us on trn1
    assert 1.0 < fixed_us < 2.0
    # 4 x 128 KiB rhs tiles per output tile at 1024^3 (8 M tiles, 2 N tiles, 8 K tiles): 128 transfers
    assert kp.dma_queue_us(128, 128 * 1024, "trn1") == pytest.approx(129 * fixed_us)
    # a 1 MiB transfer is data-bound: 1 MiB / 272 GB/s
    assert kp.dma_queue_us(1, 2**20, "trn1") == pytest.approx(2**20 / 272e3 + fixed_us)
    rows = kp.journey(1024, 1024, 1024)
    for r in rows[:3]:                               # DMA-transfer-bound: the envelope is within 7% of the simulator
        assert r.envelope.limiter.startswith("DMA transfers")
        assert r.envelope.queue_us == pytest.approx(r.profile.latency_us, rel=0.07)
    assert rows[3].envelope.limiter == "Tensor Engine"
    assert "lhsT and rhs" in rows[0].envelope.limiter   # tiled: both operand streams are equally long


def test_published_journey_pairs_data_rows_with_the_simulator():
    from trnsim.perf.validation import validation_data

    rows = kp.published_journey("trn1")
    data = {r["stage"]: r for r in validation_data()["rows"] if r["target"] == "trn1"}
    assert [r.stage for r in rows] == list(kp.STAGES)
    for i, r in enumerate(rows, start=1):
        assert r.published_ms == data[i]["latency_ms"] and r.shape == (4096, 8192, 8192)
        assert r.error_pct == pytest.approx(100 * (r.predicted_ms - r.published_ms) / r.published_ms)
        assert r.predicted_ms * 1e3 >= 0.99 * r.envelope.bound_us
        assert abs(r.error_pct) < 25
    table = kp.format_published(rows)
    assert "median |error|" in table and "51.8" in table
    with pytest.raises(ValueError, match="published for"):
        kp.published_journey("trn3")


def test_envelope_uses_catalog_peak_and_dma_rate():
    env = kp.envelope(2 * 128 ** 3, 3 * 128 * 128 * 2, "trn1")
    assert env.compute_us == pytest.approx(2 * 128 ** 3 / 91.75e12 * 1e6, rel=0.01)
    assert env.dma_us == pytest.approx(3 * 128 * 128 * 2 / (kp.dma_gbytes_per_s("trn1") * 1e9) * 1e6)
    assert env.limiter == "DMA"


@pytest.mark.parametrize("blocks", [(16, 2, 8), (8, 2, 8), (16, 4, 8), (16, 4, 16), (4, 1, 4), (32, 2, 2)])
def test_budget_predicts_the_allocator(blocks):
    r = kp.evaluate_blocks(2048, *blocks)
    assert r.ok == r.budget.fits
    if not r.ok:
        assert "err_sbuf_over_capacity" in r.error and r.profile is None


def test_fully_blocked_numerics_small():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 256)).astype(np.float32)
    b = rng.standard_normal((256, 1024)).astype(np.float32)
    got = nki.simulate(matmul_fully_blocked)(a, b)
    np.testing.assert_allclose(got, reference.matmul(a, b), rtol=1e-4, atol=1e-3)


def test_check_traffic_hints():
    want = kp.profile_stage("block_free", 2048, 2048, 2048,
                            blocks={"tiles_in_block_m": 4, "tiles_in_block_n": 2}).hbm_bytes / 2**20
    assert kpc.check_traffic(want)
    no_out = kpc.check_traffic(want - 8)
    assert not no_out and any("output" in h for h in no_out.hints)
    assert "not answered" in str(kpc.check_traffic(...))
    ideal = kpc.check_traffic(24)
    assert not ideal and any("ideal" in h for h in ideal.hints)


def test_check_traffic_decimal_megabytes():
    want = kp.profile_stage("block_free", 2048, 2048, 2048,
                            blocks={"tiles_in_block_m": 4, "tiles_in_block_n": 2}).hbm_bytes / 2**20
    for mb in (50.3, want * 2**20 / 1e6):
        res = kpc.check_traffic(mb)
        assert not res
        assert any("you computed MB (10^6 bytes); the question asks for MiB (2^20 bytes)" in h for h in res.hints)


@pytest.mark.parametrize("blocks,dim", [((3, 2, 8), "M"), ((2, 3, 8), "N"), ((2, 2, 3), "K")])
def test_check_block_choice_uneven_blocks_say_divisible_not_sbuf(blocks, dim):
    res = kpc.check_block_choice(*blocks)
    assert not res and "does not run" in res.message and f"{dim} = 2048 is not a multiple" in res.message
    assert res.hints[0].startswith("M, N, K must be divisible by tiles_in_block x tile size; use powers of two")
    assert "SBUF" not in str(res) and "ValueError" not in str(res)


def test_check_block_choice_pass_overflow_and_slow():
    reached = kp.evaluate_blocks(2048, 8, 2, 8).profile.pct_of_tensor_peak
    assert kpc.check_block_choice(8, 2, 8, goal_pct=reached - 0.5)
    short = kpc.check_block_choice(8, 2, 8, goal_pct=reached + 0.5)
    assert not short and f"{reached:.1f}% of peak" in short.message
    over = kpc.check_block_choice(16, 4, 16)
    assert not over and "does not run" in over.message and "accumulator" in over.hints[0]
    slow = kpc.check_block_choice(2, 1, 2)
    assert not slow and any("DMA-bound" in h for h in slow.hints)


def test_check_block_choice_1024_exercise_hints_fit_the_cause():
    # notebook 05 exercise 2 at 1024^3: 2048's winner covers the whole matrix in one step (nothing to overlap),
    # so the hint must not ask for bigger M and N blocks (impossible there); a K block of 1 is Vector-bound
    assert kpc.check_block_choice(4, 2, 4, size=1024, goal_pct=50)
    whole = kpc.check_block_choice(8, 2, 8, size=1024, goal_pct=50)
    assert not whole and "only 1 step(s)" in whole.hints[0] and "bigger M and N" not in str(whole)
    vec = kpc.check_block_choice(4, 2, 1, size=1024, goal_pct=50)
    assert not vec and any("Vector Engine limits" in h and "8 K steps" in h for h in vec.hints)


def test_block_panel_headless():
    from trnsim.course.ui.journey import BlockPanel

    panel = BlockPanel(size=1024, block_m=8, block_n=2, block_k=8)
    assert panel.error == "" and panel.result.ok
    first = panel.result.profile.latency_us
    assert "% of Tensor Engine peak" in panel.summary
    assert any(o.get("output_type") == "display_data" for o in panel.out.outputs)
    panel.size.value = 2048
    assert panel.result.size == 2048 and panel.result.profile.latency_us > first
    panel.block_n.value = 4
    panel.block_m.value = 16                     # 128 KiB accumulator + blocks: does not fit
    assert panel.result.profile is None and "err_sbuf_over_capacity" in panel.error
    assert any(o.get("output_type") == "stream" and o.get("name") == "stderr" for o in panel.out.outputs)
    panel.block_n.value = 2
    assert panel.error == "" and panel.result.ok


def test_bench_block_panel_callback(benchmark):
    """One widget callback at the default size: profile (cached after the first call) + render the figure."""
    from trnsim.course.ui.journey import BlockPanel

    panel = BlockPanel(size=2048, block_m=8, block_n=2, block_k=8)
    choices = iter([16, 8] * 1000)

    def change():
        panel.block_m.value = next(choices)

    benchmark(change)
    assert panel.result.ok


def test_bench_evaluate_blocks_uncached(benchmark):
    """Timing-only profile of one new block choice at 1024^3 (the pure part of a callback, cache cleared)."""
    def run():
        kp._profile_stage_cached.cache_clear()
        return kp.evaluate_blocks(1024, 4, 2, 4)

    r = benchmark(run)
    assert r.ok


def test_block_panel_offers_only_blocks_that_fit():
    """A block larger than the matrix would run a smaller block than the one reported: never offered."""
    import pytest
    from traitlets import TraitError

    from trnsim.course.ui.journey import BlockPanel, block_choices

    assert block_choices(2048) == {"m": (1, 2, 4, 8, 16), "n": (1, 2, 4), "k": (1, 2, 4, 8, 16)}
    panel = BlockPanel(size=2048, block_m=16, block_n=4, block_k=16)
    with pytest.raises(TraitError):
        panel.block_m.value = 32
    panel.size.value = 1024                       # the blocks shrink to what fits, and the summary says so
    assert (panel.block_m.value, panel.block_n.value, panel.block_k.value) == (8, 2, 8)
    assert "blocks M 8 x N 2 x K 8" in panel.summary
    with pytest.raises(ValueError, match="block_m=32 does not fit a 2048"):
        BlockPanel(size=2048, block_m=32)


def test_plot_published_draws_three_bars_per_stage_and_the_error():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from trnsim.course.viz.journey import plot_published

    fig, ax = plt.subplots()
    plot_published(ax, ["a", "b"], [1.0, 2.0], [1.5, 2.0], [2.0, 2.5])
    assert len(ax.patches) == 6
    assert sorted(t.get_text() for t in ax.texts if t.get_text().endswith("%")) == ["-20%", "-25%"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    plt.close(fig)
