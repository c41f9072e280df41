"""nki.collectives executed across simulated ranks (trnsim.nki.simulate_ranks)."""
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.collectives as ncc
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl
from trnsim.nki.rules import KernelError

RNG = np.random.default_rng(11)


def _rule(exc_info, rule):
    assert exc_info.value.rule == rule
    assert "fix:" in str(exc_info.value)


def _inputs(world, shape, dtype=np.float32):
    return [RNG.normal(size=shape).astype(dtype) for _ in range(world)]


# ----------------------------------------------------------------------------- the three main collectives

def _all_reduce_kernel(op, rg):
    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="src")
        nisa.dma_copy(dst=src, src=x)
        ncc.all_reduce(srcs=[src], dsts=[out], replica_group=rg, op=op)
        return out
    return kern


@pytest.mark.parametrize("world", [2, 4, 8])
def test_all_reduce_sum_max(world):
    rg = ncc.ReplicaGroup([list(range(world))])
    xs = _inputs(world, (16, 32))
    outs = nki.simulate_ranks(_all_reduce_kernel(nl.add, rg), world, [(x,) for x in xs])
    for o in outs:
        np.testing.assert_allclose(o, np.sum(xs, axis=0), rtol=1e-5, atol=1e-5)
    outs = nki.simulate_ranks(_all_reduce_kernel(nl.maximum, rg), world, [(x,) for x in xs])
    for o in outs:
        np.testing.assert_array_equal(o, np.max(xs, axis=0))


@pytest.mark.parametrize("world", [2, 4, 8])
def test_sbuf_all_reduce_then_compute(world):
    """An all-reduce of SBUF tiles inside a kernel that keeps computing on the result."""
    rg = ncc.ReplicaGroup([list(range(world))])

    @nki.jit
    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        s = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        ncc.all_reduce(srcs=[t], dsts=[s], replica_group=rg, op=nl.add)
        nl.store(out, nl.multiply(s, 1.0 / world))
        return out
    xs = _inputs(world, (128, 64))
    outs = nki.simulate_ranks(kern, world, [(x,) for x in xs])
    for o in outs:
        np.testing.assert_allclose(o, np.mean(xs, axis=0), rtol=1e-5, atol=1e-5)
    traces = kern.last_rank_traces
    assert len(traces) == world
    rec = [i for i in traces[0].instructions if i.engine == "collective"]
    assert len(rec) == 1 and rec[0].opcode == "all_reduce"
    assert rec[0].attrs["op"] == "add" and rec[0].attrs["replica_group_size"] == world
    assert rec[0].attrs["bytes_per_rank"] == 128 * 64 * 4


@pytest.mark.parametrize("world", [2, 4, 8])
def test_all_gather_hbm_and_sbuf(world):
    rg = ncc.ReplicaGroup([list(range(world))])

    def kern(x):
        out = nl.ndarray((world * x.shape[0], x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
        src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=src, src=x)
        ncc.all_gather(srcs=[src], dsts=[out], replica_group=rg, collective_dim=0)
        return out
    xs = _inputs(world, (4, 8))
    for o in nki.simulate_ranks(kern, world, [(x,) for x in xs]):
        np.testing.assert_array_equal(o, np.concatenate(xs, axis=0))

    def kern_sb(x):
        out = nl.ndarray((x.shape[0], world * x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
        g = nl.ndarray((x.shape[0], world * x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        ncc.all_gather(srcs=[nl.load(x)], dsts=[g], replica_group=rg, collective_dim=1)
        nl.store(out, g)
        return out
    for o in nki.simulate_ranks(kern_sb, world, [(x,) for x in xs]):
        np.testing.assert_array_equal(o, np.concatenate(xs, axis=1))


@pytest.mark.parametrize("world", [2, 4, 8])
def test_reduce_scatter(world):
    rg = ncc.ReplicaGroup([list(range(world))])

    def kern(x):
        out = nl.ndarray((x.shape[0] // world, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
        src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=src, src=x)
        ncc.reduce_scatter(srcs=[src], dsts=[out], replica_group=rg, collective_dim=0, op=nl.add)
        return out
    xs = _inputs(world, (world * 3, 5))
    total = np.sum(xs, axis=0)
    outs = nki.simulate_ranks(kern, world, [(x,) for x in xs])
    for r, o in enumerate(outs):
        np.testing.assert_allclose(o, total[3 * r:3 * (r + 1)], rtol=1e-5, atol=1e-5)


def test_sub_groups_reduce_independently_and_coalesced():
    rg = ncc.ReplicaGroup([[0, 2], [1, 3]])

    def kern(x, y):
        a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        b = nl.ndarray(y.shape, dtype=y.dtype, buffer=nl.shared_hbm)
        ncc.all_reduce(srcs=[x, y], dsts=[a, b], replica_group=rg, op=nl.minimum)
        return a, b
    xs, ys = _inputs(4, (3, 4)), _inputs(4, (2, 2))
    outs = nki.simulate_ranks(kern, 4, [(x, y) for x, y in zip(xs, ys)])
    for r, (a, b) in enumerate(outs):
        peer = (r + 2) % 4
        np.testing.assert_array_equal(a, np.minimum(xs[r], xs[peer]))
        np.testing.assert_array_equal(b, np.minimum(ys[r], ys[peer]))


# ----------------------------------------------------------------------------- the other collectives

def test_all_to_all():
    world = 4
    rg = ncc.ReplicaGroup([list(range(world))])

    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        ncc.all_to_all(srcs=[x], dsts=[out], replica_group=rg, collective_dim=0)
        return out
    xs = _inputs(world, (world * 2, 3))
    outs = nki.simulate_ranks(kern, world, [(x,) for x in xs])
    for r, o in enumerate(outs):
        np.testing.assert_array_equal(o, np.concatenate([xs[j][2 * r:2 * r + 2] for j in range(world)]))


def test_collective_permute_pairs():
    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=x)   # ranks that receive nothing keep their own data
        ncc.collective_permute(srcs=[x], dsts=[out], source_target_pairs=[(0, 1), (1, 0), (2, 3)])
        return out
    xs = _inputs(4, (2, 3))
    outs = nki.simulate_ranks(kern, 4, [(x,) for x in xs])
    np.testing.assert_array_equal(outs[0], xs[1])
    np.testing.assert_array_equal(outs[1], xs[0])
    np.testing.assert_array_equal(outs[2], xs[2])
    np.testing.assert_array_equal(outs[3], xs[2])


def test_ring_permute_and_processing_rank_id():
    """A ring all-gather written with collective_permute_implicit: each step forwards the chunk received last."""
    world = 4
    rg = ncc.ReplicaGroup([list(range(world))])

    def kern(x):
        out = nl.ndarray((world,) + x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        cur = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nxt = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=cur, src=x)
        for step in range(world):
            owner = ncc.collective_permute_implicit_current_processing_rank_id(step, rg)
            nisa.dma_copy(dst=out[owner], src=cur)
            if step < world - 1:
                ncc.collective_permute_implicit(srcs_by_channel=[[cur]], dsts_by_channel=[[nxt]], replica_group=rg)
                nisa.dma_copy(dst=cur, src=nxt)
        return out
    xs = _inputs(world, (2, 3))
    for o in nki.simulate_ranks(kern, world, [(x,) for x in xs]):
        np.testing.assert_array_equal(o, np.stack(xs))


def test_ring_permute_reduce():
    world = 4
    rg = ncc.ReplicaGroup([[3, 1, 0, 2]])   # ring order is the sub-group order

    def kern(x, y):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        ncc.collective_permute_implicit_reduce(srcs0_by_channel=[[x]], srcs1_by_channel=[[y]],
                                               dsts_by_channel=[[out]], replica_group=rg, op=nl.add)
        return out
    xs, ys = _inputs(world, (2, 2)), _inputs(world, (2, 2))
    outs = nki.simulate_ranks(kern, world, [(x, y) for x, y in zip(xs, ys)])
    ring = [3, 1, 0, 2]
    for pos, r in enumerate(ring):
        pred = ring[(pos - 1) % 4]
        np.testing.assert_allclose(outs[r], xs[pred] + ys[pred], rtol=1e-6)


def test_rank_id():
    def kern(x):
        out = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.full((1, 1), float(ncc.rank_id()), dtype=nl.float32, buffer=nl.sbuf)
        nl.store(out, t)
        return out
    outs = nki.simulate_ranks(kern, 3, [(np.zeros((1, 1), np.float32),)] * 3)
    assert [float(o[0, 0]) for o in outs] == [0.0, 1.0, 2.0]


def _meta(rows):
    return np.array(rows, dtype=np.uint32)


def test_all_gather_v_slots_and_recv_counts():
    world = 4
    rg = ncc.ReplicaGroup([list(range(world))])
    counts = [3, 1, 4, 2]

    def kern(x, meta):
        out = nl.ndarray((world * 4,), dtype=x.dtype, buffer=nl.shared_hbm)
        m = nl.ndarray(meta.shape, dtype=meta.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=m, src=meta)
        ncc.all_gather_v(srcs=[x], dsts=[out], replica_group=rg, metadata_tensor=m)
        return out, m
    xs = [np.arange(8, dtype=np.float32) + 10 * r for r in range(world)]
    metas = [_meta([[counts[r]] * world, [2] * world, [0] * world]) for r in range(world)]
    outs = nki.simulate_ranks(kern, world, list(zip(xs, metas)))
    for r, (o, m) in enumerate(outs):
        for s in range(world):
            np.testing.assert_array_equal(o[4 * s:4 * s + counts[s]], xs[s][2:2 + counts[s]])
        np.testing.assert_array_equal(m[2], counts)
    with pytest.raises(KernelError) as e:
        nki.simulate_ranks(kern, 2, list(zip(xs[:2], metas[:2])))
    assert e.value.rule in ("err_invalid_replica_group", "err_rank_not_in_replica_group")


def test_all_to_all_v():
    world = 2
    rg = ncc.ReplicaGroup([[0, 1]])

    def kern(x, meta):
        out = nl.ndarray((8,), dtype=x.dtype, buffer=nl.shared_hbm)
        z = nl.zeros((1, 8), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=out.reshape((1, 8)), src=z)
        m = nl.ndarray(meta.shape, dtype=meta.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=m, src=meta)
        ncc.all_to_all_v(srcs=[x], dsts=[out], replica_group=rg, metadata_tensor=m)
        return out, m
    x0 = np.arange(6, dtype=np.float32)
    x1 = np.arange(6, dtype=np.float32) + 100
    # rank 0 sends x0[0:2] to rank 0 and x0[2:5] to rank 1; rank 1 sends x1[1:2] to 0 and x1[3:7) to 1
    m0 = _meta([[2, 3], [0, 2], [0, 0]])
    m1 = _meta([[1, 3], [1, 3], [0, 0]])
    (o0, mo0), (o1, mo1) = nki.simulate_ranks(kern, world, [(x0, m0), (x1, m1)])
    np.testing.assert_array_equal(o0, [0, 1, 0, 0, 101, 0, 0, 0])
    np.testing.assert_array_equal(o1, [2, 3, 4, 0, 103, 104, 105, 0])
    np.testing.assert_array_equal(mo0[2], [2, 1])
    np.testing.assert_array_equal(mo1[2], [3, 3])


# ----------------------------------------------------------------------------- rules

def test_rule_mixed_memory_spaces():
    rg = ncc.ReplicaGroup([[0, 1]])

    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        ncc.all_reduce(srcs=[nl.load(x)], dsts=[out], replica_group=rg, op=nl.add)
        return out
    with pytest.raises(KernelError) as e:
        nki.simulate_ranks(kern, 2, [(np.ones((2, 2), np.float32),)] * 2)
    _rule(e, "err_collective_mixed_memory")


def test_rule_unsupported_reduce_op():
    rg = ncc.ReplicaGroup([[0, 1]])

    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        ncc.all_reduce(srcs=[x], dsts=[out], replica_group=rg, op=nl.multiply)
        return out
    with pytest.raises(KernelError) as e:
        nki.simulate_ranks(kern, 2, [(np.ones((2, 2), np.float32),)] * 2)
    _rule(e, "err_unsupported_op")


def test_rule_mismatched_collectives_do_not_hang():
    rg = ncc.ReplicaGroup([[0, 1]])

    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        if ncc.rank_id() == 0:
            ncc.all_reduce(srcs=[x], dsts=[out], replica_group=rg, op=nl.add)
        else:
            nisa.dma_copy(dst=out, src=x)
        return out
    with pytest.raises(KernelError) as e:
        nki.simulate_ranks(kern, 2, [(np.ones((2, 2), np.float32),)] * 2)
    _rule(e, "err_collective_mismatch")
    assert "rank 1 ended" in str(e.value)


def test_rule_shape_mismatch_between_ranks_and_errors_in_one_rank():
    rg = ncc.ReplicaGroup([[0, 1]])

    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        ncc.all_reduce(srcs=[x], dsts=[out], replica_group=rg, op=nl.add)
        return out
    with pytest.raises(KernelError) as e:
        nki.simulate_ranks(kern, 2, [(np.ones((2, 2), np.float32),), (np.ones((2, 3), np.float32),)])
    _rule(e, "err_collective_mismatch")

    def bad_rank(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        if ncc.rank_id() == 1:
            nl.exp(x)   # HBM operand: a rule violation in one rank while rank 0 waits in the collective
        ncc.all_reduce(srcs=[x], dsts=[out], replica_group=rg, op=nl.add)
        return out
    with pytest.raises(KernelError) as e:
        nki.simulate_ranks(bad_rank, 2, [(np.ones((2, 2), np.float32),)] * 2)
    _rule(e, "err_unsupported_memory")


def test_rule_outside_multi_rank_launch_and_bad_groups():
    def kern(x):
        ncc.rank_id()
        return x
    with pytest.raises(KernelError) as e:
        nki.simulate(kern)(np.ones((2, 2), np.float32))
    _rule(e, "err_collective_outside_multi_rank_launch")
    with pytest.raises(KernelError) as e:
        ncc.ReplicaGroup([[0, 1], [1, 2]])
    _rule(e, "err_invalid_replica_group")
    with pytest.raises(KernelError) as e:
        nki.simulate_ranks(kern, 0, [])
    _rule(e, "err_invalid_world_size")
    rg = ncc.ReplicaGroup([[0, 1, 2, 3]])

    def too_big(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        ncc.all_reduce(srcs=[x], dsts=[out], replica_group=rg, op=nl.add)
        return out
    with pytest.raises(KernelError) as e:
        nki.simulate_ranks(too_big, 2, [(np.ones((2, 2), np.float32),)] * 2)
    _rule(e, "err_rank_not_in_replica_group")


def test_timing_only_trace_has_collective_records():
    rg = ncc.ReplicaGroup([[0, 1, 2, 3]])

    def kern(x):
        out = nl.ndarray((4 * x.shape[0], x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
        ncc.all_gather(srcs=[x], dsts=[out], replica_group=rg, collective_dim=0)
        return out
    outs, traces = nki.trace_ranks(kern, 4, [(np.ones((8, 16), np.float32),)] * 4, numerics=False)
    assert outs == [None] * 4
    for tr in traces:
        (rec,) = [i for i in tr.instructions if i.engine == "collective"]
        assert rec.opcode == "all_gather" and rec.bytes_moved == 8 * 16 * 4


def test_priority_and_name_are_checked_and_recorded():
    rg = ncc.ReplicaGroup([[0, 1]])

    def kern(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        ncc.all_reduce(srcs=[x], dsts=[out], replica_group=rg, op=nl.add, priority=1, name="grad_sync")
        return out
    k = nki.jit(kern, target="trn3")
    outs = nki.simulate_ranks(k, 2, [(np.ones((2, 2), np.float32),)] * 2)
    np.testing.assert_array_equal(outs[0], 2 * np.ones((2, 2)))
    (rec,) = [i for i in k.last_rank_traces[1].instructions if i.engine == "collective"]
    assert rec.attrs["priority"] == 1 and rec.attrs["name"] == "grad_sync"
    with pytest.raises(KernelError) as e:
        nki.simulate_ranks(nki.jit(kern, target="trn2"), 2, [(np.ones((2, 2), np.float32),)] * 2)
    _rule(e, "err_unsupported_on_target")


def _rg4():
    return ncc.ReplicaGroup([[0, 1, 2, 3]])


def _k_all_gather_dim1(x):
    out = nl.ndarray((x.shape[0], 4 * x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.all_gather(srcs=[x], dsts=[out], replica_group=_rg4(), collective_dim=1)
    return out


def _k_reduce_scatter_uneven(x):
    out = nl.ndarray((1, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.reduce_scatter(srcs=[x], dsts=[out], replica_group=_rg4(), collective_dim=0, op=nl.add)
    return out


def _k_all_to_all_sbuf(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    ncc.all_to_all(srcs=[nl.load(x)], dsts=[out], replica_group=_rg4(), collective_dim=0)
    return x


def _k_all_to_all_v_bad_meta(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    meta = nl.ndarray((2, 4), dtype=nl.uint32, buffer=nl.shared_hbm)
    ncc.all_to_all_v(srcs=[x], dsts=[out], replica_group=_rg4(), metadata_tensor=meta)
    return out


def _k_permute_two_sources(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.collective_permute(srcs=[x], dsts=[out], source_target_pairs=[(0, 1), (2, 1)])
    return out


def _k_ring_bad_channels(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.collective_permute_implicit(srcs_by_channel=[[x]], dsts_by_channel=[[out]], replica_group=_rg4(),
                                    channel_ids=[1])
    return out


def _k_ring_reduce_bad_op(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.collective_permute_implicit_reduce(srcs0_by_channel=[[x]], srcs1_by_channel=[[x]], dsts_by_channel=[[out]],
                                           replica_group=_rg4(), op=nl.subtract)
    return out


def _k_processing_rank_bad_channel(x):
    ncc.collective_permute_implicit_current_processing_rank_id(0, _rg4(), channel_id=-1)
    return x


@pytest.mark.parametrize("kern, rule", [
    (_k_all_gather_dim1, "err_invalid_collective_dim"),
    (_k_reduce_scatter_uneven, "err_shape_mismatch"),
    (_k_all_to_all_sbuf, "err_unsupported_memory"),
    (_k_all_to_all_v_bad_meta, "err_invalid_metadata"),
    (_k_permute_two_sources, "err_invalid_arguments"),
    (_k_ring_bad_channels, "err_invalid_channel_ids"),
    (_k_ring_reduce_bad_op, "err_unsupported_op"),
    (_k_processing_rank_bad_channel, "err_invalid_channel_ids"),
])
def test_rule_per_collective(kern, rule):
    with pytest.raises(KernelError) as e:
        nki.simulate_ranks(kern, 4, [(np.ones((6, 4), np.float32),)] * 4)
    _rule(e, rule)


def test_ranks_writing_one_shared_input_array_do_not_see_each_other():
    """Each rank has its own device memory: one numpy array given to every rank is copied per rank, so a kernel
    that updates its input in place (NKI 0.6 allows it) on one rank leaves the other ranks' inputs alone."""
    def kern(x):
        t = nl.load(x)
        nl.store(x, nl.add(t, float(ncc.rank_id() + 1)))
        return x
    shared = np.zeros((4, 8), np.float32)
    outs = nki.simulate_ranks(kern, 3, [(shared,)] * 3)
    assert [float(o[0, 0]) for o in outs] == [1.0, 2.0, 3.0]
    assert not shared.any()
