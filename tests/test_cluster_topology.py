"""Topologies built from the catalog: ranks, links, routes, rings (trnsim.cluster.topology)."""
import numpy as np
import pytest

import trnsim
from trnsim.cluster import TopologyError, ring_topology, topology
from trnsim.cluster.constants import constants, fact
from trnsim.cluster.topology import _torus_hamiltonian_cycles

GIB = 2**30 / 1e9  # GiB/s -> GB/s


def test_rank_counts_follow_catalog_and_lnc():
    assert topology("trn1.32xlarge").size == 32
    assert topology("inf2.48xlarge").size == 24
    assert topology("trn2.48xlarge").size == 64  # default LNC=2: 4 logical cores per chip
    assert topology("trn2.48xlarge", lnc=1).size == 128
    assert topology("trn2.48xlarge", nodes=4).size == 256
    assert topology("trn2.ultraserver").size == 256
    assert topology("trn3.gen1-ultraserver").size == trnsim.instance("trn3.gen1-ultraserver").logical_neuroncores


def test_bad_requests_raise_clear_errors():
    with pytest.raises(TopologyError, match="LNC=2 exists only on Trainium2"):
        topology("trn1.32xlarge", lnc=2)
    with pytest.raises(TopologyError, match="no EFA bandwidth"):
        topology("inf2.48xlarge", nodes=2)
    with pytest.raises(TopologyError, match="nodes=0"):
        topology("trn1.32xlarge", nodes=0)
    with pytest.raises(TopologyError, match="outside 1..32"):
        topology("trn1.32xlarge").group(33)
    with pytest.raises(TopologyError, match="distinct"):
        topology("trn1.32xlarge").group([1, 1])


def test_inf2_link_bandwidth_matches_figure():
    # rule: per-link = chip NeuronLink / links per chip; Inf2 figure says 96 GiB/s per link
    t = topology("inf2.48xlarge")
    want = fact("topology", "inf2_link_gibytes_per_s") * GIB
    assert t.spec.link_gbytes_per_s == pytest.approx(want, rel=1e-9)


def test_trn2_efa_share_per_rank_matches_docs():
    for lnc, key in ((2, "trn2_efa_gbits_per_s_per_rank_lnc2"), (1, "trn2_efa_gbits_per_s_per_rank_lnc1")):
        t = topology("trn2.48xlarge", nodes=2, lnc=lnc)
        per_node_gbits = t.spec.efa_nics_per_node * t.spec.efa_nic_gbytes_per_s * 8
        per_rank = per_node_gbits / (t.size // 2)
        assert per_rank == pytest.approx(fact("topology", key))


def test_torus_routes_are_dimension_order_and_shortest():
    t = topology("trn1.32xlarge")  # 2 cores per chip, chips row-major on a 4x4 torus
    # chip 0 -> chip 1 is one hop; chip 0 -> chip 3 wraps around (one hop)
    assert len(t.route(0, 2)[0]) == 1
    assert len(t.route(0, 6)[0]) == 1
    # chip 0 -> chip 10 (row 2, col 2) is 4 hops either way
    assert len(t.route(0, 20)[0]) == 4
    links, kind, lat = t.route(0, 1)  # same chip
    assert kind == "chip-local" and len(links) == 1
    assert lat == constants().intra_node_hop_latency_us


def test_torus_has_two_edge_disjoint_hamiltonian_cycles():
    c1, c2 = _torus_hamiltonian_cycles((4, 4), 2)
    def edges(c):
        return {frozenset((c[i], c[(i + 1) % 16])) for i in range(16)}
    for c in (c1, c2):
        assert sorted(c) == list(range(16))
        for a, b in zip(c, c[1:] + c[:1]):
            (ra, ca), (rb, cb) = divmod(a, 4), divmod(b, 4)
            assert (ra == rb and (ca - cb) % 4 in (1, 3)) or (ca == cb and (ra - rb) % 4 in (1, 3))
    assert not edges(c1) & edges(c2)
    assert len(edges(c1) | edges(c2)) == 32  # every torus link used exactly once


def test_ring_orders_visit_every_rank_and_keep_chip_cores_together():
    t = topology("trn2.48xlarge")
    orders = t.ring_orders()
    assert len(orders) == 4
    for o in orders:
        assert sorted(o) == list(range(64))
        chips = [t.ranks[r].chip for r in o]
        assert sum(1 for a, b in zip(chips, chips[1:]) if a != b) == 15


def test_ultraserver_z_links_and_efa_routes():
    us = topology("trn2.ultraserver")
    # rank on chip 0 of instance 0 to the same position in instance 1: one Z hop
    dst = 16 * us.spec.cores_per_chip
    links, kind, _ = us.route(0, dst)
    assert kind == "neuronlink-z" and len(links) == 1
    assert us.hierarchy() is not None and len(us.hierarchy()) == 4
    two = topology("trn1.32xlarge", nodes=2)
    links, kind, lat = two.route(0, 32)
    assert kind == "efa" and lat == constants().inter_node_hop_latency_us
    assert len(two.hierarchy()) == 2
    assert topology("trn1.32xlarge").hierarchy() is None


def test_switched_route_uses_two_ports():
    t = topology("trn3.gen1-ultraserver")
    links, kind, _ = t.route(0, t.size - 1)
    assert kind == "switch" and len(links) == 2


def test_group_keeps_physical_placement():
    t = topology("trn1.32xlarge", nodes=2)
    g = t.group([0, 1, 32, 33])
    assert g.size == 4
    assert [r.node for r in g.ranks] == [0, 0, 1, 1]
    assert g.route(1, 2)[1] == "efa"
    assert g.hierarchy() == [[0, 1], [2, 3]]


def test_recursive_order_makes_torus_partners_neighbours():
    t = topology("trn1.32xlarge", lnc=1)
    order = t.recursive_order()
    p = len(order)
    for d in (2, 4, 8, 16):  # chip-level distances (d=1 pairs the two cores of a chip)
        for i in range(p):
            a, b = order[i], order[i ^ d]
            assert len(t.route(a, b)[0]) == 1, (d, i)


def test_synthetic_ring_is_one_direction():
    r = ring_topology(6, 50.0, hop_latency_us=1.0)
    assert r.size == 6 and len(r.ring_orders()) == 1
    with pytest.raises(TopologyError):
        ring_topology(0, 50.0)
    with pytest.raises(TopologyError):
        ring_topology(4, -1.0)
    assert isinstance(r.chip_index, np.ndarray)
