"""Functional collectives: outputs equal the numpy reduction, steps move real data."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trnsim.cluster import (
    SUPPORTED,
    AlgorithmError,
    all_gather,
    all_reduce,
    all_to_all,
    permute,
    reduce_scatter,
    ring_topology,
    topology,
)
from trnsim.cluster.algorithms import split_segment

RING_SIZES = (1, 2, 3, 5, 6, 7, 8, 12, 16)


def _catalog_topologies():
    return [
        topology("trn1.32xlarge"),
        topology("inf2.24xlarge"),
        topology("trn2.48xlarge").group(24),
        topology("trn1.32xlarge", nodes=2).group([0, 1, 2, 3, 32, 33, 34, 35]),
        topology("trn1.32xlarge", nodes=3).group([0, 1, 32, 33, 64, 65]),
        topology("trn2.ultraserver").group([0, 1, 64, 65, 128, 129, 192, 193]),
        topology("trn3.gen1-ultraserver").group(12),
        topology("inf1.6xlarge"),
    ]


def _ints(rng, p, n):
    return [rng.integers(-9, 9, size=n).astype(np.int64) for _ in range(p)]


def _try(fn, *a, **k):
    try:
        return fn(*a, **k)
    except AlgorithmError:
        return None


@pytest.mark.parametrize("p", RING_SIZES)
@pytest.mark.parametrize("n", [1, 5, 64, 101])
def test_all_reduce_every_algorithm_equals_numpy_on_rings(p, n):
    rng = np.random.default_rng(p * 1000 + n)
    arrs = _ints(rng, p, n)
    want = np.sum(arrs, axis=0)
    ran = 0
    for alg in ("ring", "recursive_doubling", "recursive_halving_doubling", "mesh"):
        r = all_reduce(arrs, ring_topology(p, 100.0), alg)
        assert r.algorithm == alg
        for out in r.outputs:
            np.testing.assert_array_equal(out, want)
        ran += 1
    assert ran == 4  # non-powers-of-two run too (MPICH fold for the recursive ones)


@pytest.mark.parametrize("topo", _catalog_topologies(), ids=lambda t: t.label)
def test_every_op_and_algorithm_on_catalog_topologies(topo):
    rng = np.random.default_rng(topo.size)
    p = topo.size
    arrs = _ints(rng, p, 3 * p + 1)
    want = np.sum(arrs, axis=0)
    checked = 0
    for alg in SUPPORTED["all_reduce"]:
        r = _try(all_reduce, arrs, topo, alg)
        if r is None:
            assert alg == "hierarchical" and (topo.hierarchy() is None)
            continue
        for out in r.outputs:
            np.testing.assert_array_equal(out, want)
        checked += 1
    for alg in SUPPORTED["reduce_scatter"]:
        r = _try(reduce_scatter, arrs, topo, alg)
        if r is None:
            continue
        for out, w in zip(r.outputs, np.array_split(want, p)):
            np.testing.assert_array_equal(out, w)
        checked += 1
    for alg in SUPPORTED["all_gather"]:
        r = _try(all_gather, arrs, topo, alg)
        if r is None:
            continue
        for out in r.outputs:
            np.testing.assert_array_equal(out, np.concatenate(arrs))
        checked += 1
    assert checked >= 7


def test_hierarchical_on_two_nodes_matches_numpy_for_all_three_ops():
    topo = topology("trn1.32xlarge", nodes=2)
    rng = np.random.default_rng(1)
    arrs = [rng.standard_normal(200) for _ in range(topo.size)]
    want = np.sum(arrs, axis=0)
    r = all_reduce(arrs, topo, "hierarchical")
    assert all(np.allclose(o, want) for o in r.outputs)
    assert {s.link_kind for s in r.steps} >= {"efa", "neuronlink"}
    phases = [s.phase for s in r.steps]
    assert phases[0].startswith("intra-node reduce-scatter")
    assert any(ph.startswith("inter-node") for ph in phases)
    assert phases[-1].startswith("intra-node all-gather")
    rs = reduce_scatter(arrs, topo, "hierarchical")
    assert all(np.allclose(o, w) for o, w in zip(rs.outputs, np.array_split(want, topo.size)))
    ag = all_gather(arrs, topo, "hierarchical")
    assert all(np.array_equal(o, np.concatenate(arrs)) for o in ag.outputs)
    # inter-node all-gather runs first (EFA carries less), then intra-node
    assert ag.steps[0].link_kind == "efa"


@settings(max_examples=25, deadline=None)
@given(p=st.integers(1, 20), n=st.integers(1, 80), seed=st.integers(0, 10_000),
       op=st.sampled_from(["sum", "max", "min", "prod"]))
def test_property_ring_and_rdh_all_reduce(p, n, seed, op):
    rng = np.random.default_rng(seed)
    arrs = [rng.integers(-3, 4, size=n).astype(np.int64) for _ in range(p)]
    ref = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}[op](np.stack(arrs), axis=0)
    for alg in ("ring", "recursive_halving_doubling"):
        r = all_reduce(arrs, ring_topology(p, 10.0), alg, op=op)
        for out in r.outputs:
            np.testing.assert_array_equal(out, ref)


def test_outputs_come_from_the_steps_not_from_a_sum():
    # every element of every rank's result must have arrived through recorded transfers:
    # the bytes the steps move match the textbook volume of ring all-reduce
    p, n = 6, 60
    arrs = [np.full(n, float(r + 1)) for r in range(p)]
    r = all_reduce(arrs, ring_topology(p, 100.0), "ring")
    assert r.rounds == 2 * (p - 1)
    moved = sum(s.bytes for s in r.steps)
    assert moved == 2 * (p - 1) * n * 8  # each rank sends 2(p-1) chunks of n/p elements
    # after the reduce-scatter half, exactly one chunk per rank is complete
    r2 = all_reduce(arrs, ring_topology(p, 100.0), "ring", snapshots=True)
    mid = r2.snapshots[p - 1]  # state after p-1 rounds
    full = sum(range(1, p + 1))
    complete = [(mid[k].reshape(p, -1) == full).all(axis=1).sum() for k in range(p)]
    assert complete == [1] * p


def test_avg_and_float_and_bf16():
    rng = np.random.default_rng(3)
    arrs = [rng.standard_normal((4, 5)).astype(np.float32) for _ in range(8)]
    r = all_reduce(arrs, topology("trn1.32xlarge").group(8), "ring", op="avg")
    assert r.outputs[0].shape == (4, 5)
    assert np.allclose(r.outputs[3], np.mean(arrs, axis=0), atol=1e-5)
    b = [a.astype(ml_dtypes.bfloat16) for a in arrs]
    rb = all_reduce(b, topology("trn1.32xlarge").group(8), "recursive_halving_doubling")
    assert rb.outputs[0].dtype == ml_dtypes.bfloat16
    assert np.allclose(rb.outputs[0].astype(np.float32), np.sum(arrs, axis=0), atol=0.1)


def test_all_to_all_and_permute():
    topo = topology("trn1.32xlarge").group(8)
    p = topo.size
    arrs = [np.arange(p * 3) + 100 * r for r in range(p)]
    for alg in ("mesh", "ring"):
        r = all_to_all(arrs, topo, alg)
        for j, out in enumerate(r.outputs):
            want = np.concatenate([arrs[i][j * 3:(j + 1) * 3] for i in range(p)])
            np.testing.assert_array_equal(out, want)
    pr = permute(arrs, topo)
    order = topo.ring_orders()[0]
    for i, src in enumerate(order):
        np.testing.assert_array_equal(pr.outputs[order[(i + 1) % p]], arrs[src])
    assert all(s.link_kind in ("neuronlink", "chip-local") for s in pr.steps)
    pr2 = permute(arrs, topo, pairs=[(0, 5)])
    np.testing.assert_array_equal(pr2.outputs[5], arrs[0])
    np.testing.assert_array_equal(pr2.outputs[1], np.zeros_like(arrs[1]))


def test_clear_errors():
    topo = ring_topology(6, 100.0)
    arrs = [np.ones(12) for _ in range(6)]
    with pytest.raises(AlgorithmError, match="power-of-two"):
        reduce_scatter(arrs, topo, "recursive_halving_doubling")
    with pytest.raises(AlgorithmError, match="power-of-two"):
        all_gather(arrs, topo, "recursive_doubling")
    with pytest.raises(AlgorithmError, match="at least two nodes"):
        all_reduce(arrs, topo, "hierarchical")
    with pytest.raises(AlgorithmError, match="ring-only"):
        permute(arrs, topo, "mesh")
    with pytest.raises(AlgorithmError, match="not a multiple of 6"):
        all_to_all([np.ones(10)] * 6, topo)
    with pytest.raises(ValueError, match="got 5 arrays"):
        all_reduce(arrs[:5], topo)
    with pytest.raises(ValueError, match="same shape"):
        all_reduce(arrs[:5] + [np.ones(3)], topo)
    with pytest.raises(ValueError, match="reduction op"):
        all_reduce(arrs, topo, op="median")
    with pytest.raises(ValueError, match="unknown collective"):
        from trnsim.cluster import collective_time
        collective_time("broadcast", 10, topo)


def test_split_segment_partitions_exactly():
    seg = [(0, 5), (10, 17), (20, 21)]
    parts = split_segment(seg, 4)
    flat = [x for part in parts for a, b in part for x in range(a, b)]
    assert flat == [x for a, b in seg for x in range(a, b)]
    assert [sum(b - a for a, b in part) for part in parts] == [4, 3, 3, 3]


def test_single_rank_and_empty_buffers():
    one = ring_topology(1, 10.0)
    x = [np.arange(3.0)]
    for fn in (all_reduce, all_gather, reduce_scatter, all_to_all, permute):
        r = fn(x, one)
        np.testing.assert_array_equal(r.outputs[0], x[0])
        assert r.time_us == 0 and r.steps == []
    empty = all_reduce([np.zeros(0)] * 4, ring_topology(4, 10.0), "ring")
    assert empty.outputs[0].shape == (0,) and empty.steps == []
    three = [np.arange(3.0) + i for i in range(3)]
    full_turn = permute(three, ring_topology(3, 10.0), shift=3)  # everyone keeps its own array
    assert all(np.array_equal(o, a) for o, a in zip(full_turn.outputs, three)) and full_turn.steps == []


@pytest.mark.parametrize("intra", ["ring", "mesh", "recursive_halving_doubling"])
@pytest.mark.parametrize("inter", ["ring", "recursive_doubling", "recursive_halving_doubling", "mesh"])
def test_hierarchical_stage_algorithms(intra, inter):
    topo = topology("trn1.32xlarge", nodes=4).group([0, 1, 32, 33, 64, 65, 96, 97])  # X=4 nodes, Y=2
    rng = np.random.default_rng(7)
    arrs = _ints(rng, topo.size, 50)
    want = np.sum(arrs, axis=0)
    kw = dict(intra_algorithm=intra, inter_algorithm=inter)
    r = all_reduce(arrs, topo, "hierarchical", **kw)
    assert all(np.array_equal(o, want) for o in r.outputs)
    rs = reduce_scatter(arrs, topo, "hierarchical", **kw)
    assert all(np.array_equal(o, w) for o, w in zip(rs.outputs, np.array_split(want, topo.size)))
    ag = all_gather(arrs, topo, "hierarchical", **kw)
    assert all(np.array_equal(o, np.concatenate(arrs)) for o in ag.outputs)
    with pytest.raises(AlgorithmError, match="inter_algorithm"):
        all_reduce(arrs, topo, "hierarchical", inter_algorithm="tree")


def test_hierarchical_recursive_stage_needs_power_of_two_nodes():
    topo = topology("trn1.32xlarge", nodes=3).group([0, 1, 32, 33, 64, 65])
    arrs = [np.ones(12)] * 6
    with pytest.raises(AlgorithmError, match="power-of-two"):
        reduce_scatter(arrs, topo, "hierarchical", inter_algorithm="recursive_halving_doubling")
    r = all_reduce(arrs, topo, "hierarchical", inter_algorithm="recursive_halving_doubling")  # MPICH fold
    assert all(np.array_equal(o, np.full(12, 6.0)) for o in r.outputs)


_TWO_NODES = topology("trn1.32xlarge", nodes=2)


@settings(max_examples=30, deadline=None)
@given(members=st.lists(st.integers(0, 63), min_size=1, max_size=12, unique=True),
       n=st.integers(1, 40), seed=st.integers(0, 1000),
       algo=st.sampled_from(["ring", "recursive_doubling", "recursive_halving_doubling", "mesh", "hierarchical",
                             "auto"]))
def test_property_random_groups_on_two_nodes(members, n, seed, algo):
    topo = _TWO_NODES.group(members)
    rng = np.random.default_rng(seed)
    arrs = _ints(rng, topo.size, n)
    want = np.sum(arrs, axis=0)
    try:
        r = all_reduce(arrs, topo, algo)
    except AlgorithmError as exc:  # only hierarchical may refuse a group, and it says why
        assert algo == "hierarchical" and ("two nodes" in str(exc) or "same number" in str(exc))
        return
    assert all(np.array_equal(o, want) for o in r.outputs)
    for s in r.steps:
        assert s.link_kind == topo.route(s.src, s.dst)[1]
        assert (s.link_kind == "efa") == (topo.ranks[s.src].node != topo.ranks[s.dst].node)
