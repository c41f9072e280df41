"""trnsim.perf prices nki.collectives records with trnsim.cluster.cost_collective (the same collective model
the training and serving estimators use)."""
import dataclasses

import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.collectives as ncc
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.cluster import cost_collective
from trnsim.perf import CostModelError, profile_ranks, profile_trace, schedule
from trnsim.perf.collective import COLLECTIVE_OPS, collective_cost


def _all_reduce_kernel(world):
    rg = ncc.ReplicaGroup([list(range(world))])

    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="src")
        nisa.dma_copy(dst=src, src=x)
        ncc.all_reduce(srcs=[src], dsts=[out], replica_group=rg, op=nl.add)
        return out
    return kern


def _traces(world, shape, target="trn1"):
    x = np.zeros(shape, np.float32)
    _, traces = nki.trace_ranks(_all_reduce_kernel(world), world, [(x,)] * world, target=target, numerics=False)
    return traces


@pytest.mark.parametrize("world", [4, 8])
@pytest.mark.parametrize("target", ["trn1", "trn2"])
def test_all_reduce_latency_includes_cluster_cost(world, target):
    shape = (128, 1024)
    nbytes = 128 * 1024 * 4
    traces = _traces(world, shape, target)
    assert len(traces) == world
    want_us = cost_collective("all_reduce", nbytes, world, target, launch="graph").time_us
    for tr in traces:
        p = profile_trace(tr)
        assert p.instructions_by_engine["collective"] == 1
        (c,) = p.collectives
        assert (c.opcode, c.cluster_op, c.message_bytes, c.ranks) == ("all_reduce", "all_reduce", nbytes, world)
        assert c.time_us == pytest.approx(want_us, rel=1e-12)
        tl = p.timeline
        i = c.index
        assert (tl.end_ns[i] - tl.start_ns[i]) / 1e3 == pytest.approx(want_us, rel=1e-9)
        # the all-reduce reads what the DMA copy wrote: it starts when the copy ends, and the kernel ends with it
        dma_i = int(np.flatnonzero(tl.engine == 4)[0])
        assert tl.start_ns[i] == pytest.approx(tl.end_ns[dma_i])
        assert p.latency_us == pytest.approx(tl.end_ns[dma_i] / 1e3 + want_us, rel=1e-9)
        assert p.engine_busy_us["collective"] == pytest.approx(want_us)
        assert p.active_time_us["collective"] == pytest.approx(want_us)
        assert p.metrics.instruction_count["collective"] == 1
        assert p.critical_path_us["collective"] == pytest.approx(want_us)
        # the larger of the two on the critical path names the bound (trn2 at 4 ranks: the 512 KiB HBM -> HBM
        # copy, which crosses HBM twice, outlasts the all-reduce)
        dma_us = p.critical_path_us["dma"] + p.critical_path_us.get("dma_fixed", 0.0)
        assert p.bottleneck == ("collective" if want_us > dma_us else "dma")
        s = p.summary()
        if p.bottleneck == "collective":
            assert "Collective-bound" in s and f"over {world} ranks" in s and c.algorithm in s
        assert "Collective Active Time" in p.neuron_profile_table()


def test_instance_follows_the_trace_target():
    trn1 = profile_trace(_traces(4, (128, 256), "trn1")[0]).collectives[0]
    trn2 = profile_trace(_traces(4, (128, 256), "trn2")[0]).collectives[0]
    assert trn1.instance == "trn1.32xlarge" and trn2.instance == "trn2.48xlarge"
    assert trn1.time_us != trn2.time_us


def test_latency_grows_with_message_size():
    lat = [profile_trace(_traces(8, (128, f))[0]).latency_us for f in (64, 1024, 16384)]
    coll = [profile_trace(_traces(8, (128, f))[0]).collective_us for f in (64, 1024, 16384)]
    assert lat[0] < lat[1] < lat[2]
    assert coll[0] < coll[1] < coll[2]


def test_profile_ranks_and_collective_overlaps_independent_compute():
    """profile_ranks gives one Profile per rank; a collective on its own row overlaps compute it does not feed."""
    world = 4
    rg = ncc.ReplicaGroup([list(range(world))])

    @nki.jit
    def kern(x, y):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        out2 = nl.ndarray(y.shape, dtype=y.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        s = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        ncc.all_reduce(srcs=[t], dsts=[s], replica_group=rg, op=nl.add)
        u = nl.load(y)
        v = nl.exp(u)                    # independent of the all-reduce
        nl.store(out2, v)
        nl.store(out, nl.multiply(s, 0.25))
        return out, out2
    xs = [(np.ones((128, 512), np.float32), np.zeros((128, 512), np.float32)) for _ in range(world)]
    ps = profile_ranks(kern, world, xs, target="trn1", numerics=True)
    assert len(ps) == world
    np.testing.assert_allclose(ps[0].outputs[0], np.ones((128, 512)))
    p = ps[0]
    tl = p.timeline
    (c,) = p.collectives
    exp_i = next(i for i, ins in enumerate(p.trace.instructions) if ins.engine == "scalar")
    assert tl.start_ns[exp_i] < tl.end_ns[c.index]          # runs while the all-reduce is in flight
    mul_i = next(i for i, ins in enumerate(p.trace.instructions) if ins.engine == "vector" and i > c.index)
    assert tl.start_ns[mul_i] >= tl.end_ns[c.index]         # waits for the reduced tile


def test_unknown_collective_opcode_is_a_clear_error():
    tr = _traces(4, (128, 64))[0]
    i = next(k for k, ins in enumerate(tr.instructions) if ins.engine == "collective")
    bad = tr.instructions[i]
    tr.instructions[i] = dataclasses.replace(bad, opcode="all_shuffle")
    with pytest.raises(CostModelError, match="all_shuffle.*known collectives: .*all_reduce"):
        schedule(tr)
    assert "all_shuffle" not in COLLECTIVE_OPS


def test_record_without_group_size_is_a_clear_error():
    tr = _traces(4, (128, 64))[0]
    ins = next(x for x in tr.instructions if x.engine == "collective")
    stripped = dataclasses.replace(ins, attrs={"op": "add"})
    with pytest.raises(CostModelError, match="bytes_per_rank.*trace_ranks"):
        collective_cost(stripped, "trn1")


def test_all_gather_prices_the_gathered_size():
    world = 4
    rg = ncc.ReplicaGroup([list(range(world))])

    def kern(x):
        out = nl.ndarray((x.shape[0] * world, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
        src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="src")
        nisa.dma_copy(dst=src, src=x)
        ncc.all_gather(srcs=[src], dsts=[out], replica_group=rg, collective_dim=0)
        return out
    x = np.zeros((32, 256), np.float32)
    _, traces = nki.trace_ranks(kern, world, [(x,)] * world, target="trn1", numerics=False)
    (c,) = profile_trace(traces[0]).collectives
    assert (c.cluster_op, c.message_bytes) == ("all_gather", x.nbytes * world)
    assert c.time_us == pytest.approx(cost_collective("all_gather", x.nbytes * world, world, "trn1").time_us)


def test_single_core_profile_unchanged_has_no_collective_row():
    from trnsim.perf import profile
    from trnsim.course.viz.timeline import timeline_rows

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.exp(nl.load(a)))
        return out
    p = profile(k, np.zeros((128, 512), np.float32), target="trn1")
    assert p.instructions_by_engine["collective"] == 0 and p.collective_us == 0.0
    assert "ollective" not in p.summary() and "Collective" not in p.neuron_profile_table()
    assert all(eng != "collective" for _, eng, _ in timeline_rows(p))


def test_nki_imports_neither_perf_nor_cluster():
    import subprocess
    import sys

    code = ("import sys, trnsim.nki, trnsim.nki.collectives; "
            "print(sorted(m for m in sys.modules if m.startswith(('trnsim.perf', 'trnsim.cluster'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_timeline_figure_has_a_collective_row():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from trnsim.perf import instruction_cost_ns
    from trnsim.course.viz.timeline import plot_profile, timeline_rows

    p = profile_trace(_traces(4, (128, 512))[0])
    rows = timeline_rows(p)
    coll = [r for r in rows if r[1] == "collective"]
    assert len(coll) == 1 and coll[0][0] == "Collective" and list(coll[0][2]) == [p.collectives[0].index]
    fig = plot_profile(p)
    ax = fig.axes[0]
    assert "Collective" in [t.get_text() for t in ax.get_yticklabels()]
    assert "Collective active" in ax.get_title()
    plt.close(fig)
    import trnsim

    tgt = trnsim.target("trn1")
    ins = p.trace.instructions[p.collectives[0].index]
    assert instruction_cost_ns(ins, tgt.core, tgt.chip) == pytest.approx(p.collectives[0].time_us * 1e3)


def test_compare_chart_stacks_the_collective_part():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from trnsim.course.viz.compare import plot_compare

    p = profile_trace(_traces(4, (128, 512))[0])
    ax = plot_compare([p])
    widths = sum(bar.get_width() for bar in ax.patches)
    assert widths == pytest.approx(p.latency_us, rel=1e-6)      # the collective part is drawn, not dropped
    assert p.critical_path_us["collective"] > 0.5 * p.latency_us
    plt.close(ax.figure)
