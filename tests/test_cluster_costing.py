"""cost_collective: the one call that prices a collective for kernels, training and serving."""
import pytest

from trnsim.cluster import cost_collective, host_launch_overhead_us, runs_on, topology
from trnsim.cluster.constants import constants, fact


def test_trn1_runs_a_ring_at_tp32_and_mesh_only_at_16_ranks():
    t32 = cost_collective("all_reduce", 16 * 1024, 32, "trn1")
    assert t32.algorithm == "ring" and t32.steps == 2 * 31
    assert t32.alpha_us == pytest.approx(62 * constants().intra_node_hop_latency_us)
    assert cost_collective("all_reduce", 16 * 1024, 16, "trn1").algorithm == "mesh"
    trn1 = topology("trn1.32xlarge")
    assert not runs_on("mesh", trn1) and runs_on("mesh", trn1.group(16)) and runs_on("ring", trn1)
    assert not runs_on("recursive_halving_doubling", trn1)
    # Trn2 runs the documented Mesh / RDH choices
    assert cost_collective("all_reduce", 16 * 1024, 32, "trn2").algorithm == "mesh"
    assert cost_collective("all_reduce", 8 << 20, 32, "trn2").algorithm == "recursive_halving_doubling"


def test_host_launch_reproduces_the_nccom_floor_and_plateau():
    floor = fact("micro_benchmarks", "nccom_allreduce_2rank_floor_us")
    assert cost_collective("all_reduce", 65536, 2, "trn1", launch="host").time_us == pytest.approx(floor, rel=1e-6)
    assert cost_collective("all_reduce", 1024, 2, "trn1", launch="host").time_us == pytest.approx(floor, rel=0.05)
    big = cost_collective("all_reduce", 1 << 30, 2, "trn1", launch="host")
    assert big.time_us == pytest.approx(fact("micro_benchmarks", "nccom_allreduce_2rank_1gib_us"), rel=0.02)
    assert host_launch_overhead_us("trn1") > 40  # most of the nccom-test floor is launch, not hops


def test_multi_node_and_validation_figures_are_reported_not_fitted():
    # 2 x trn1.32xlarge, 1 GiB: published busbw 47 GB/s; the model lands within 10%
    t = cost_collective("all_reduce", 1 << 30, 64, "trn1.32xlarge", launch="host")
    assert t.algorithm == "hierarchical"
    assert t.busbw_gbytes_per_s == pytest.approx(fact("micro_benchmarks", "nccom_allreduce_2node_busbw_gbytes_per_s"),
                                                 rel=0.10)


def test_bad_arguments_name_the_fix():
    with pytest.raises(ValueError, match="op='broadcast'"):
        cost_collective("broadcast", 1024, 2)
    with pytest.raises(ValueError, match="ranks=0"):
        cost_collective("all_reduce", 1024, 0)
    with pytest.raises(ValueError, match="launch='kernel'"):
        cost_collective("all_reduce", 1024, 2, launch="kernel")
    with pytest.raises(ValueError, match="target="):
        cost_collective("all_reduce", 1024, 2, target="")
