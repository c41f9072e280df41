"""Timing: alpha-beta formulas, agreement of functional and timing-only paths, auto choice, busbw."""
import numpy as np
import pytest

from trnsim.cluster import (
    all_gather,
    all_reduce,
    bus_factor,
    choose_algorithm,
    collective_time,
    constants,
    permute,
    reduce_scatter,
    ring_topology,
    topology,
)
from trnsim.cluster.constants import fact

MIB = 2**20


@pytest.mark.parametrize("p", [2, 4, 8, 13])
def test_ring_all_reduce_matches_textbook(p):
    alpha, B, n = 2.0, 100.0, 64 * MIB
    t = collective_time("all_reduce", n, ring_topology(p, B, alpha), "ring")
    want = 2 * (p - 1) * alpha + 2 * (p - 1) / p * n / (B * 1e3)
    assert t.time_us == pytest.approx(want, rel=1e-6)
    assert t.alpha_us == pytest.approx(2 * (p - 1) * alpha)
    assert t.steps == 2 * (p - 1)


def test_ring_all_gather_and_reduce_scatter_match_textbook():
    p, alpha, B, n = 8, 1.0, 50.0, 8 * MIB
    topo = ring_topology(p, B, alpha)
    for op in ("all_gather", "reduce_scatter"):
        t = collective_time(op, n, topo, "ring")
        assert t.time_us == pytest.approx((p - 1) * alpha + (p - 1) / p * n / (B * 1e3), rel=1e-6)


def test_switched_fabric_rdh_and_mesh_match_formulas():
    us = topology("trn3.gen1-ultraserver")
    cpc = us.spec.cores_per_chip
    g = us.group([c * cpc for c in range(8)])  # one rank per chip: each owns a switch port
    p, n, a, B = 8, 32 * MIB, constants().intra_node_hop_latency_us, us.spec.switch_port_gbytes_per_s
    rdh = collective_time("all_reduce", n, g, "recursive_halving_doubling")
    assert rdh.time_us == pytest.approx(2 * 3 * a + 2 * (p - 1) / p * n / (B * 1e3), rel=1e-6)
    rd = collective_time("all_reduce", n, g, "recursive_doubling")
    assert rd.time_us == pytest.approx(3 * (a + n / (B * 1e3)), rel=1e-6)
    mesh = collective_time("all_reduce", n, g, "mesh")
    assert mesh.time_us == pytest.approx(2 * (a + (p - 1) / p * n / (B * 1e3)), rel=1e-6)


def test_busbw_approaches_link_bandwidth_for_large_messages():
    # NCCL-tests: busbw of a bandwidth-optimal all-reduce is comparable with the link peak
    B = 100.0
    for p in (4, 8, 16):
        t = collective_time("all_reduce", 4096 * MIB, ring_topology(p, B, 1.5), "ring")
        assert t.busbw_gbytes_per_s == pytest.approx(B, rel=0.01)
        assert t.algbw_gbytes_per_s == pytest.approx(t.busbw_gbytes_per_s / bus_factor("all_reduce", p))


def test_neuron_worked_transfer_examples():
    # "1 MiB at 100 GB/s takes 10 us; at 50 Gbps 160 us" (rounded figures in the docs)
    fast = permute([np.zeros(MIB, np.uint8)] * 2, ring_topology(2, 100.0, 0.0))
    assert fast.time_us == pytest.approx(fact("validation", "transfer_1mib_at_100_gbytes_per_s_us"), rel=0.06)
    slow = permute([np.zeros(MIB, np.uint8)] * 2, ring_topology(2, 50 / 8, 0.0))
    assert slow.time_us == pytest.approx(fact("validation", "transfer_1mib_at_50_gbits_per_s_us"), rel=0.06)


CASES = [
    (ring_topology(6, 40.0), "all_reduce", "ring"),
    (ring_topology(6, 40.0), "all_reduce", "recursive_halving_doubling"),
    (topology("trn1.32xlarge"), "all_reduce", "ring"),
    (topology("trn1.32xlarge"), "all_reduce", "mesh"),
    (topology("trn1.32xlarge"), "all_reduce", "recursive_halving_doubling"),
    (topology("trn1.32xlarge"), "reduce_scatter", "recursive_halving_doubling"),
    (topology("trn1.32xlarge"), "all_gather", "recursive_doubling"),
    (topology("trn1.32xlarge", nodes=2), "all_reduce", "hierarchical"),
    (topology("trn1.32xlarge", nodes=2), "reduce_scatter", "hierarchical"),
    (topology("trn1.32xlarge", nodes=2), "all_gather", "hierarchical"),
    (topology("trn2.ultraserver").group([0, 4, 64, 68, 128, 132, 192, 196]), "all_reduce", "hierarchical"),
]


@pytest.mark.parametrize("topo,op,alg", CASES, ids=lambda x: getattr(x, "label", x))
def test_functional_time_equals_timing_only(topo, op, alg):
    p = topo.size
    # divisible by every split used, so all rounds of a phase are equal
    n = p * 4 * 3 * (1 if op == "all_gather" else p)
    fn = {"all_reduce": all_reduce, "reduce_scatter": reduce_scatter, "all_gather": all_gather}[op]
    arrs = [np.ones(n, np.float32) for _ in range(p)]
    r = fn(arrs, topo, alg)
    t = collective_time(op, r.message_bytes, topo, alg)
    assert r.time_us == pytest.approx(t.time_us, rel=1e-9)
    assert r.rounds == t.steps
    assert r.busbw_gbytes_per_s == pytest.approx(t.busbw_gbytes_per_s, rel=1e-9)


def test_auto_follows_documented_sweet_spots():
    c = constants()
    trn2 = topology("trn2.48xlarge")
    assert choose_algorithm("all_reduce", c.mesh_max_bytes - 1, trn2) == "mesh"
    assert choose_algorithm("all_reduce", c.mesh_max_bytes, trn2) == "recursive_halving_doubling"
    assert choose_algorithm("all_reduce", c.rdh_max_bytes - 1, trn2) == "recursive_halving_doubling"
    assert choose_algorithm("all_reduce", c.rdh_max_bytes, trn2) == "ring"
    assert choose_algorithm("all_gather", 4 * MIB, trn2) == "recursive_doubling"
    assert choose_algorithm("reduce_scatter", 4 * MIB, trn2.group(24)) == "ring"  # not a power of two
    assert choose_algorithm("all_reduce", 1, topology("trn2.48xlarge", nodes=2)) == "hierarchical"
    assert choose_algorithm("all_reduce", 1, topology("trn2.ultraserver")) == "hierarchical"
    assert choose_algorithm("all_to_all", 1, trn2) == "mesh"
    assert choose_algorithm("permute", 1, trn2) == "ring"
    assert collective_time("all_reduce", 10 * MIB, trn2).algorithm == "recursive_halving_doubling"


def test_model_agrees_with_documented_regimes_on_trn2():
    # the model is not fitted to the sweet spots, but its fastest algorithm should agree
    trn2 = topology("trn2.48xlarge")
    def fastest(n):
        algs = ("ring", "recursive_halving_doubling", "mesh")
        return min(algs, key=lambda a: collective_time("all_reduce", n, trn2, a).time_us)
    assert fastest(64 * 2**10) == "mesh"
    assert fastest(8 * MIB) == "recursive_halving_doubling"
    assert fastest(512 * MIB) == "ring"


def test_hierarchical_beats_flat_ring_across_nodes():
    topo = topology("trn2.48xlarge", nodes=4)
    for n in (64 * 2**10, 64 * MIB):
        h = collective_time("all_reduce", n, topo, "hierarchical")
        r = collective_time("all_reduce", n, topo, "ring")
        assert h.time_us < r.time_us
    small = collective_time("all_reduce", 1024, topo, "ring")
    # flat ring over EFA pays the EFA step latency on every one of its 2(p-1) steps
    assert small.alpha_us == pytest.approx(2 * (topo.size - 1) * constants().inter_node_hop_latency_us)


def test_neuronlink_vs_efa():
    n = 256 * MIB
    intra = collective_time("all_reduce", n, topology("trn1.32xlarge"))
    inter = collective_time("all_reduce", n, topology("trn1.32xlarge", nodes=2).group([0, 32]), "ring")
    # trn1 ranks stream at most the nccom-test plateau (52.83 GiB/s), so NeuronLink is not the
    # limit inside a node; one EFA NIC (100 Gbit/s / 8 NICs) still is across nodes
    assert intra.busbw_gbytes_per_s == pytest.approx(52.83 * 2**30 / 1e9, rel=0.02)
    assert intra.busbw_gbytes_per_s > 4 * inter.busbw_gbytes_per_s
    assert {p.link_kind for p in inter.phases} == {"efa"}


def test_phase_breakdown_sums_to_total():
    t = collective_time("all_reduce", 32 * MIB, topology("trn1.32xlarge", nodes=2))
    assert sum(p.time_us for p in t.phases) == pytest.approx(t.time_us)
    assert t.alpha_us + t.beta_us == pytest.approx(t.time_us)
    assert "hierarchical" in t.summary()


def test_zero_and_bad_sizes():
    t = collective_time("all_reduce", 0, topology("trn1.32xlarge"), "ring")
    assert t.beta_us == 0 and t.algbw_gbytes_per_s == 0
    with pytest.raises(ValueError, match=">= 0"):
        collective_time("all_reduce", -1, topology("trn1.32xlarge"))
    with pytest.raises(ValueError, match="whole number"):
        collective_time("all_reduce", "big", topology("trn1.32xlarge"))


def test_timing_is_fast_enough(benchmark):
    topo = topology("trn2.48xlarge", nodes=4)

    def run():
        topo.__dict__.pop("_timing_cache", None)
        return collective_time("all_reduce", 64 * MIB, topo)
    t = benchmark(run)
    assert t.algorithm == "hierarchical"


def test_functional_all_reduce_speed(benchmark):
    rng = np.random.default_rng(0)
    topo = topology("trn1.32xlarge").group(8)
    arrs = [rng.standard_normal(100_000).astype(np.float32) for _ in range(8)]
    r = benchmark(all_reduce, arrs, topo, "ring")
    assert np.allclose(r.outputs[0], np.sum(arrs, axis=0), atol=1e-4)


def test_bidirectional_ring_all_gather_matches_scaling_book():
    # scaling-book sharding.md: on a bidirectional ring T(AllGather) = V / W_bidir * (p-1)/p
    inf2 = topology("inf2.48xlarge")
    g = inf2.group(list(range(0, inf2.size, inf2.spec.cores_per_chip)))  # one rank per chip: a 12-chip ring
    p, V, B = g.size, 2**32, inf2.spec.link_gbytes_per_s
    t = collective_time("all_gather", V, g, "ring")
    assert len(g.ring_orders()) == 2
    link_us = (p - 1) / p * V / (2 * B * 1e3)
    # NC-v2 ranks also stream at most the nccom-test plateau per direction (named assumption)
    ceiling_us = (p - 1) / p * V / (inf2.spec.rank_gbytes_per_s * 1e3)
    assert t.beta_us == pytest.approx(max(link_us, ceiling_us), rel=1e-6)
    ar = collective_time("all_reduce", V, g, "ring")
    assert ar.beta_us == pytest.approx(2 * t.beta_us, rel=1e-6)  # T(AllReduce) = 2 T(AllGather)


def test_all_to_all_on_a_ring_is_set_by_the_busiest_link():
    # 12-chip bidirectional ring, shortest-path routing: the busiest direction carries the flows of
    # distance 1..6 through each link, i.e. 1+2+...+6 = 21 blocks of S/p (scaling-book: ~T(AG)/4)
    inf2 = topology("inf2.48xlarge")
    g = inf2.group(list(range(0, inf2.size, inf2.spec.cores_per_chip)))
    p, S, B = g.size, 12 * 2**24, inf2.spec.link_gbytes_per_s
    t = collective_time("all_to_all", S, g, "mesh")
    assert t.beta_us == pytest.approx(21 * (S / p) / (B * 1e3), rel=1e-6)
    ag_same_total = collective_time("all_gather", S * p, g, "ring")  # V = total array = p * S
    link_ag_us = (p - 1) / p * S * p / (2 * B * 1e3)  # scaling-book ratio holds for the link terms
    assert 0.25 < t.beta_us / link_ag_us < 0.4
    assert ag_same_total.beta_us >= link_ag_us


def _pattern_cost_by_hand(topo, src, dst, nbytes):
    """The round-cost rule written out pair by pair and link by link (the reference for the vectorised one)."""
    chips = topo.chip_index
    loads: dict[int, float] = {}
    alpha = 0.0
    pairs: dict[tuple[int, int], float] = {}
    for s, d, b in zip(src.tolist(), dst.tolist(), nbytes.tolist()):
        k = (int(chips[s]), int(chips[d]))
        pairs[k] = pairs.get(k, 0.0) + float(b)
    for (a, b_chip), b in sorted(pairs.items()):
        path, _, lat = topo.chip_route(a, b_chip)
        for l in path:
            loads[l] = loads.get(l, 0.0) + b
        alpha = max(alpha, lat)
    beta, kind, kind_bw = 0.0, "", float("inf")
    for l, b in loads.items():
        link = topo.links[l]
        tt = b / link.gbytes_per_s * 1e-3
        if tt > beta or (tt == beta and link.gbytes_per_s < kind_bw):
            beta, kind, kind_bw = tt, link.kind, link.gbytes_per_s
    ceiling = getattr(topo.spec, "rank_gbytes_per_s", None)
    if ceiling:
        w = nbytes.astype(np.float64)
        tt = max(np.bincount(src, weights=w).max(), np.bincount(dst, weights=w).max()) / ceiling * 1e-3
        if tt > beta:
            beta, kind = tt, "rank-ceiling"
    return alpha, beta, kind


@pytest.mark.parametrize("name,nodes", [("trn1.32xlarge", 2), ("trn2.48xlarge", 1), ("trn2.ultraserver", 1)])
def test_vectorised_round_cost_matches_the_rule_pair_by_pair(name, nodes):
    from trnsim.cluster.collectives import pattern_cost
    topo = topology(name, nodes)
    rng = np.random.default_rng(7)
    p = topo.size
    for trial in range(6):
        m = int(rng.integers(1, 4 * p))
        src, dst = rng.integers(0, p, m), rng.integers(0, p, m)
        nbytes = rng.integers(0, 3, m) * int(rng.choice([1, 4096, 2**20]))   # zero-byte pairs included
        want = _pattern_cost_by_hand(topo, src, dst, nbytes)
        for _ in range(2):                                   # second call: the cached route plan
            got = pattern_cost(topo, src, dst, nbytes)
            assert got[0] == want[0] and got[2] == want[2]
            assert got[1] == pytest.approx(want[1], rel=1e-12, abs=0.0)
    # a zero-byte message still crosses its route: its latency counts (here the only cross-node pair)
    far = p - 1
    src, dst, nbytes = np.array([0, 0]), np.array([1, far]), np.array([4096, 0])
    assert pattern_cost(topo, src, dst, nbytes) == _pattern_cost_by_hand(topo, src, dst, nbytes)
