"""The plan estimator: rules, breakdown arithmetic, memory, cost, search, collective timing."""
import pytest

import trnsim
import trnsim.cluster as cluster
import trnsim.training as tr
from trnsim.training import comm
from trnsim.training.systems import GIB


def est(**kw):
    base = dict(model="llama2-7b", instance="trn1.32xlarge", nodes=4, tp=8, pp=1, seq_len=4096, global_batch=1024)
    base.update(kw)
    return tr.estimate(**base)


@pytest.mark.parametrize("kw,pattern", [
    (dict(model="gpt2-small", tp=8), r"attention heads: 12 heads .* tp=8"),
    (dict(tp=8, pp=1, dp=3), r"world size mismatch: .*128"),
    (dict(tp=64), r"tp=64 exceeds the 32 NeuronCores"),
    (dict(tp=4), r"tp=4 is not a supported TP degree on trn1.32xlarge"),
    (dict(pp=3, tp=8, nodes=3), r"pipeline stages: 32 layers .* pp\*virtual_stages = 3\*1"),
    (dict(global_batch=1000), r"batch: global_batch=1000 is not divisible"),
    (dict(seq_len=8192), r"seq_len=8192 exceeds"),
    (dict(tp=8, pp=16, nodes=1), r"world size: tp\*pp = 8\*16 = 128 exceeds"),
    (dict(instance="no-such.box"), r"unknown system 'no-such.box'"),
    (dict(recompute="most"), r"recompute='most'"),
    (dict(dtype="int3"), r"dtype='int3'"),
    (dict(nodes=0), r"nodes=0: must be a positive integer"),
])
def test_invalid_plans_raise_clear_errors(kw, pattern):
    with pytest.raises(tr.PlanError, match=pattern):
        est(**kw)


def test_gqa_replication_is_allowed_and_noted():
    e = tr.estimate("llama3.1-70b", "trn2.48xlarge", nodes=4, tp=32, pp=1, seq_len=8192, global_batch=256,
                    recompute="full")
    assert any("KV heads replicated 4x" in n for n in e.notes)


def test_breakdown_sums_to_step_and_throughput_is_consistent():
    e = est(pp=2, recompute="selective")
    assert sum(e.breakdown_s.values()) == pytest.approx(e.step_time_s)
    assert e.tokens_per_s == pytest.approx(1024 * 4096 / e.step_time_s)
    assert e.seq_per_s == pytest.approx(1024 / e.step_time_s)
    assert 0 < e.mfu < e.hfu < 1
    assert set(e.breakdown_s) == {"compute", "tp_comm", "pp_comm", "bubble", "dp_exposed", "optimizer"}


def test_pipeline_bubble_fraction_is_p_minus_1_over_m():
    e = est(pp=4, tp=8, global_batch=512)  # dp = 4, m = 128
    per_mb = (e.breakdown_s["compute"] + e.breakdown_s["tp_comm"] + e.breakdown_s["pp_comm"]) / e.plan.microbatches
    assert e.breakdown_s["bubble"] == pytest.approx(3 * per_mb)
    e2 = est(pp=4, tp=8, global_batch=512, virtual_stages=2)
    per_mb2 = (e2.breakdown_s["compute"] + e2.breakdown_s["tp_comm"] + e2.breakdown_s["pp_comm"]) / e2.plan.microbatches
    assert e2.breakdown_s["bubble"] == pytest.approx(3 / 2 * per_mb2)  # (p - 1)/v micro-batch times
    assert e2.breakdown_s["pp_comm"] == pytest.approx(2 * e.breakdown_s["pp_comm"])  # v x the sends
    assert e2.breakdown_s["bubble"] < e.breakdown_s["bubble"]


def test_memory_parts_follow_zero_bytes_per_parameter():
    e0 = est(zero1=False)
    e1 = est(zero1=True)
    p = e0.memory.weights_bytes / 2  # bf16 weights: 2 bytes per parameter
    assert e0.memory.gradients_bytes == pytest.approx(2 * p)
    assert e0.memory.optimizer_bytes == pytest.approx(12 * p)
    assert e1.memory.optimizer_bytes == pytest.approx(12 * p / e1.plan.dp)
    # TP8 of a 6.7B model: about params/8 per core
    assert p == pytest.approx(tr.model("llama2-7b").params / 8, rel=0.01)


def test_pure_data_parallel_7b_does_not_fit_a_neuroncore():
    e = tr.estimate("llama2-7b", "trn1.32xlarge", nodes=1, tp=1, pp=1, seq_len=4096, global_batch=32, zero1=False)
    assert not e.fits and e.memory.total_bytes > 16 * 6.7e9
    assert e.memory.capacity_bytes == pytest.approx(16 * GIB)


def test_recompute_trades_memory_for_time():
    a = {r: est(recompute=r, flash_attention=False) for r in ("none", "selective", "full")}
    assert a["none"].memory.activations_bytes > a["selective"].memory.activations_bytes > a["full"].memory.activations_bytes
    assert a["none"].step_time_s < a["selective"].step_time_s < a["full"].step_time_s
    assert a["none"].mfu > a["full"].mfu


def test_cost_uses_catalog_price_or_says_no_public_price():
    e = est()
    price = trnsim.instance("trn1.32xlarge").on_demand_usd_per_hour
    assert e.usd_per_step == pytest.approx(price * 4 * e.step_time_s / 3600)
    assert e.usd_per_billion_tokens == pytest.approx(e.usd_per_step / (1024 * 4096) * 1e9)
    assert e.days_to_train(1e12) == pytest.approx(1e12 / e.tokens_per_s / 86400)
    e2 = tr.estimate("llama2-7b", "trn2.48xlarge", nodes=2, tp=8, pp=1, seq_len=4096, global_batch=256)
    assert e2.usd_per_step is None and e2.usd_to_train(1e12) is None
    assert "no price in the sources" in e2.summary()


def test_tensor_parallel_time_comes_from_trnsim_cluster():
    e = est(tp=8, micro_batch=1, recompute="none")
    elems = 4096 * 4096
    grp = cluster.topology("trn1.32xlarge").group(8)

    def best(op, nbytes):
        return min(cluster.collective_time(op, nbytes, grp, algorithm=a).time_us for a in cluster.SUPPORTED[op]
                   if a != "hierarchical" and cluster.runs_on(a, grp)) * 1e-6
    ag, rs, rs32 = best("all_gather", 2 * elems), best("reduce_scatter", 2 * elems), best("reduce_scatter", 4 * elems)
    # NxD with sequence parallelism: forward 2 AG + 2 RS; backward 4 AG (2 transposes + 2 re-gathers)
    # + 2 fp32 RS; plus one AG / RS pair around the logits
    per_layer = 2 * ag + 2 * rs + 4 * ag + 2 * rs32
    want = (32 * per_layer + ag + rs) * e.plan.microbatches
    assert e.breakdown_s["tp_comm"] == pytest.approx(want, rel=1e-3)


def test_nic_share():
    assert comm.nic_share(32, 8, 1) == 4.0    # trn1: 32 cores, 8 EFA devices, one rank per node
    assert comm.nic_share(64, 16, 64) == 1.0  # a group using every rank of a node
    assert comm.nic_share(8, 8, 1) == 1.0     # DGX: one NIC per GPU


def test_gpu_alpha_beta_ring_formula():
    sys = tr.system("dgx-a100-80gb")
    s = 1e9
    t = comm.collective_s(sys, "all_reduce", s, 8, 1)
    assert t == pytest.approx(10e-6 + 2 * 7 / 8 * s / (300e9 * 0.65))
    assert comm.collective_s(sys, "all_reduce", s, 1, 1) == 0.0


def test_dp_sync_is_hidden_when_small_and_exposed_when_not_overlapped():
    e = est()
    assert e.dp_sync_total_s > 0
    e2 = est(overlap_dp=False)
    assert e2.breakdown_s["dp_exposed"] == pytest.approx(e2.dp_sync_total_s)
    assert e.breakdown_s["dp_exposed"] <= e2.breakdown_s["dp_exposed"]


def test_search_ranks_feasible_plans_and_explains_rejections():
    r = tr.search("llama2-7b", "trn1.32xlarge", nodes=4, seq_len=4096, global_batch=1024)
    assert r.ranked and all(e.fits for e in r.ranked)
    times = [e.step_time_s for e in r.ranked]
    assert times == sorted(times)
    assert any(x.reason.startswith("memory:") for x in r.rejected)
    assert r.best.step_time_s == min(times)
    r2 = tr.search("gpt2-small", "trn1.32xlarge", nodes=1, seq_len=1024, global_batch=64)
    assert any("attention heads" in x.reason for x in r2.rejected)
    assert "plan" in r2.table()


def test_chinchilla_tokens():
    assert tr.chinchilla_tokens("chinchilla-70b") == pytest.approx(20 * tr.model("chinchilla-70b").params)


def test_bench_estimate(benchmark):
    e = benchmark(lambda: est(pp=2, recompute="selective"))
    assert e.fits


def test_bench_search_70b_64_nodes_cold(benchmark):
    """Issue 13: the planner answers a 70B search on 64 trn1.32xlarge in < 1 s (cold caches)."""
    from trnsim.training import comm

    def cold():
        for f in (comm._cached, comm._alpha_beta, comm._group):
            f.cache_clear()
        return tr.search("llama3.1-70b", "trn1.32xlarge", nodes=64, seq_len=8192, global_batch=1024)
    r = benchmark.pedantic(cold, rounds=3, iterations=1)
    assert r.best is not None and r.best.fits


def test_bench_search_warm(benchmark):
    tr.search("llama2-7b", "trn1.32xlarge", nodes=8, seq_len=4096, global_batch=1024)  # warm the collective cache
    r = benchmark(lambda: tr.search("llama2-7b", "trn1.32xlarge", nodes=8, seq_len=4096, global_batch=1024))
    assert r.best is not None


def test_exercise_checkers_pass_right_answers_and_hint_wrong_ones():
    from trnsim.course.exercises import training as ex

    assert ex.bytes_per_param("bf16") == 16
    right = tr.model("llama2-7b").params * 16 / 8 / GIB
    assert ex.check_model_state_gib(right)
    bad = ex.check_model_state_gib(right * 8)
    assert not bad and any("divide by the TP degree" in h for h in bad.hints)
    assert ex.check_chinchilla(20 * tr.model("chinchilla-70b").params)
    assert not ex.check_chinchilla(1.0e12)
    assert ex.check_chinchilla(1.4e12) and ex.check_chinchilla(20 * 70e9)  # the paper's number, 20 x published
    assert ex.check_days(10.0, 6.0, 86400 * 1e12 * 10 / 6.0 * 0.5, 1, 1.0, 0.5)
    r = tr.search("llama2-7b", "trn1.32xlarge", nodes=4, seq_len=4096, global_batch=1024)
    assert ex.check_planner_answer(r.best.plan.tp, r.best.plan.pp, r)
    assert not ex.check_planner_answer(1, 1, r)


def test_multi_node_dp_sync_is_the_documented_hierarchical_composition():
    """Intra-node reduce-scatter + inter-node all-reduce of 1/Y + intra-node all-gather, EFA shared by all groups."""
    sys = tr.system("trn1.32xlarge")
    s = 64e6
    got = comm.collective_s(sys, "all_reduce", s, 8, 8)  # 8 ranks, 4 per node (stride 8), 2 nodes
    rs = comm._best_flat(sys.name, "reduce_scatter", s, 4, 8)[1]
    ag = comm._best_flat(sys.name, "all_gather", s, 4, 8)[1]
    topo = comm._group(sys.name, 2, 32)
    share = comm.nic_share(32, topo.spec.efa_nics_per_node, 4)
    inter = comm._best_flat(sys.name, "all_reduce", s / 4, 2, 32, share)[1]
    assert got == pytest.approx((rs + inter + ag) * 1e-6)
    assert got > comm.collective_s(sys, "all_reduce", s, 8, 1)  # EFA is slower than NeuronLink
