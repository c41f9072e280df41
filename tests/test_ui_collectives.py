"""Headless tests of the notebook-09 widgets and figures (set controls, assert on results)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from trnsim.cluster import collective_time, topology  # noqa: E402
from trnsim.cluster.analysis import (  # noqa: E402
    auto_regions,
    link_comparison,
    ring_allreduce_animation,
    size_sweep,
)
from trnsim.course.ui.collectives import CollectivesPanel, RingStepPanel  # noqa: E402
from trnsim.course.viz import collectives as vc  # noqa: E402


def test_panel_follows_controls():
    p = CollectivesPanel()
    assert p.error == "" and p.result is not None
    assert p.ranks.value == p.ranks.max == 32
    p.size_log2.value = 28
    p.algorithm.value = "ring"
    want = collective_time("all_reduce", 2**28, topology("trn1.32xlarge"), "ring")
    assert p.result.time_us == pytest.approx(want.time_us)
    assert f"{want.busbw_gbytes_per_s:,.1f} GB/s" in p.summary
    p.ranks.value = 8
    assert p.result.ranks == 8
    p.instance.value = "trn2.48xlarge"
    assert p.ranks.value == 64  # ranks follow the new topology
    p.nodes.value = 2
    p.algorithm.value = "hierarchical"
    assert p.result.algorithm == "hierarchical" and p.result.ranks == 128
    p.op.value = "all_gather"
    assert p.result.op == "all_gather"
    assert len(p.out.outputs) >= 2  # figure and summary


def test_panel_shows_errors_instead_of_raising():
    p = CollectivesPanel()
    p.algorithm.value = "hierarchical"  # one node: not possible
    assert p.result is None and "at least two nodes" in p.error
    assert any("stderr" == o.get("name") for o in p.out.outputs)
    p.algorithm.value = "ring"
    assert p.error == "" and p.result is not None
    p.instance.value = "inf2.48xlarge"
    p.nodes.value = 3
    assert "no EFA bandwidth" in p.error
    p.op.value = "permute"
    p.nodes.value = 1
    p.algorithm.value = "mesh"
    assert "ring-only" in p.error


def test_ring_step_panel():
    r = RingStepPanel()
    p = r.topo.size
    assert p == 16 and r.step.max == 2 * (p - 1)
    r.step.value = p - 1  # reduce-scatter done: each rank holds exactly one complete chunk
    assert ((r.state == p).sum(axis=1) == 1).all()
    r.step.value = r.step.max
    assert (r.state == p).all()
    assert "30 of 30" in r.summary
    assert r.link.source[1] == "value" and r.link.target[1] == "value"


def test_animation_moves_one_chunk_per_rank_per_step():
    topo = topology("trn1.32xlarge").group(list(range(0, 32, 2)))
    a = ring_allreduce_animation(topo)
    p = topo.size
    assert a.states.shape == (2 * (p - 1) + 1, p, p)
    assert (a.states[0] == 1).all()
    for k, moves in enumerate(a.moves):
        assert len(moves) == p
        assert sorted(s for s, _, _ in moves) == list(range(p))
        assert a.states[k + 1].sum() > a.states[k].sum()
    assert np.all(np.diff(a.times_us) > 0)


def test_figures_draw(tmp_path):
    topo = topology("trn2.48xlarge")
    sizes = [2**k for k in range(10, 31, 4)]
    sweep = size_sweep("all_reduce", topo, sizes, ["ring", "mesh"])
    assert set(sweep) == {"ring", "mesh", "auto"}
    fig, axs = plt.subplots(2, 2, figsize=(12, 8))
    vc.plot_time_vs_size(axs[0, 0], sizes, sweep, auto_regions("all_reduce", topo, sizes), highlight=(2**20, 10.0))
    assert len(axs[0, 0].get_lines()) >= 3
    cases = link_comparison(2**26)
    vc.plot_link_comparison(axs[0, 1], cases)
    assert len(axs[0, 1].patches) == len(cases)
    vc.plot_phase_breakdown(axs[1, 0], collective_time("all_reduce", 2**26, topology("trn1.32xlarge", 2)))
    ring = topology("inf2.24xlarge")
    vc.draw_ring_step(axs[1, 1], fig.add_subplot(3, 3, 9), ring_allreduce_animation(ring), ring, 3)
    fig.savefig(tmp_path / "collectives.png")
    plt.close(fig)
    assert vc.format_bytes(3 * 2**20) == "3 MiB" and vc.format_bytes(1536) == "1.5 KiB"


def test_panel_compute_speed(benchmark):
    p = CollectivesPanel()
    p.size_log2.value = 22
    topo = p._group()

    def cold():
        topo.__dict__.pop("_timing_cache", None)  # measure the model, not the cache
        return p.compute()
    r = benchmark(cold)
    assert r.time_us > 0 and r.algorithm == "ring"  # trn1 at 32 ranks runs a ring (no RDH on NC-v2)


def test_panel_callback_speed(benchmark):
    p = CollectivesPanel()
    sizes = iter(range(10, 33))

    def move_slider():
        p.size_log2.value = 10 + (next(sizes, 0) % 23)
    benchmark.pedantic(move_slider, rounds=8, iterations=1)
    assert p.result is not None
