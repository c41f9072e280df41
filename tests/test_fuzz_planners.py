"""Property-based fuzzing of the planners (issue 16): training.estimate/search, serving estimate/simulate,
cluster topologies and collective timing, deploy plan and its helpers.

Arguments mix valid values with hostile ones (0, negatives, NaN, inf, 1e300, strings, None, bools,
fractions, huge counts). Properties: the call either returns, or raises the module's own error
(nothing else escapes: no ZeroDivisionError, KeyError, OverflowError, numpy error, hang); every
returned quantity that cannot be NaN, infinite or negative is not. Example counts are bounded so the
file runs in seconds (about 1,200 planner cases in total; see each ``settings``).
"""
import functools
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trnsim import cluster, deploy, serving, training
from trnsim.cluster import AlgorithmError, TopologyError
from trnsim.catalog.datafiles import CatalogError
from trnsim.deploy import DeployError
from trnsim.serving import ServingError
from trnsim.training import PlanError


def fuzz(n):
    return settings(max_examples=n, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


HOSTILE = st.sampled_from([0, -1, -8, 1.5, float("nan"), float("inf"), -float("inf"), 1e300, 10**12, "8", None,
                           True, [2]])


def given_args(**strategies):
    """Like ``hypothesis.given``, but in half the cases one argument is replaced by a hostile value."""

    def decorate(test):
        @given(kw=args(**strategies))
        def run(kw):
            test(**kw)

        run.__name__, run.__doc__ = test.__name__, test.__doc__
        return run

    return decorate


@st.composite
def args(draw, **strategies):
    """Keyword arguments from ``strategies``; in half the cases one of them is replaced by a hostile value."""
    kw = {k: draw(v) for k, v in strategies.items()}
    if draw(st.booleans()):
        kw[draw(st.sampled_from(sorted(kw)))] = draw(HOSTILE)
    return kw


def finite_nonneg(x, name):
    assert x is not None and math.isfinite(x) and x >= 0, f"{name} = {x!r}"


def finite_pos(x, name):
    assert x is not None and math.isfinite(x) and x > 0, f"{name} = {x!r}"


# ------------------------------------------------------------------------------------------ training
TRAIN_MODELS = ["gpt3-small", "llama2-7b", "tinygpt", "llama3.1-8b", "megatron-1.7b"]
TRAIN_SYSTEMS = ["trn1.32xlarge", "trn2.48xlarge", "dgx-a100-80gb", "inf2.48xlarge", "trn1.2xlarge"]


def check_estimate(e):
    finite_pos(e.step_time_s, "step_time_s")
    for k, v in e.breakdown_s.items():
        finite_nonneg(v, f"breakdown_s[{k}]")
    finite_pos(e.tokens_per_s, "tokens_per_s")
    finite_pos(e.seq_per_s, "seq_per_s")
    assert 0 < e.mfu <= 1.0 and 0 < e.hfu <= 1.0, (e.mfu, e.hfu)
    m = e.memory
    for v in (m.weights_bytes, m.gradients_bytes, m.optimizer_bytes, m.activations_bytes, m.capacity_bytes):
        finite_nonneg(v, "memory")
    if e.usd_per_step is not None:
        finite_nonneg(e.usd_per_step, "usd_per_step")
        finite_nonneg(e.usd_per_billion_tokens, "usd_per_billion_tokens")


@fuzz(350)
@given_args(model=st.sampled_from(TRAIN_MODELS + ["nope"]), instance=st.sampled_from(TRAIN_SYSTEMS),
       nodes=st.sampled_from([1, 2, 4, 16]), tp=st.sampled_from([1, 2, 4, 8, 16, 32]),
       pp=st.sampled_from([1, 2, 4, 8]), seq_len=st.sampled_from([128, 1024, 2048, 4096]),
       global_batch=st.sampled_from([8, 64, 512, 1024, 4096]), micro_batch=st.sampled_from([1, 2, 4]),
       zero1=st.booleans(), sp=st.booleans(), recompute=st.sampled_from(["none", "selective", "full"]),
       dtype=st.sampled_from(["bf16", "fp32", "fp8", "int3"]), flash=st.booleans(),
       vs=st.sampled_from([1, 2]), overlap=st.booleans())
def test_training_estimate(model, instance, nodes, tp, pp, seq_len, global_batch, micro_batch, zero1, sp, recompute,
                           dtype, flash, vs, overlap):
    try:
        e = training.estimate(model, instance, nodes, tp, pp, seq_len=seq_len, global_batch=global_batch,
                              micro_batch=micro_batch, zero1=zero1, sequence_parallel=sp, recompute=recompute,
                              dtype=dtype, flash_attention=flash, virtual_stages=vs, overlap_dp=overlap)
    except PlanError:
        return
    check_estimate(e)


@fuzz(25)
@given_args(model=st.sampled_from(["gpt3-small", "tinygpt", "megatron-1.7b"]),
       instance=st.sampled_from(["trn1.32xlarge", "trn1.2xlarge", "dgx-a100-80gb"]),
       nodes=st.sampled_from([1, 2]), seq_len=st.sampled_from([128, 1024]),
       global_batch=st.sampled_from([32, 64, 256]), zero1=st.booleans())
def test_training_search(model, instance, nodes, seq_len, global_batch, zero1):
    try:
        res = training.search(model, instance, nodes, seq_len, global_batch, micro_batches=(1, 2),
                              recompute_modes=("none", "full"), zero1=zero1)
    except PlanError:
        return
    for e in res.ranked:
        check_estimate(e)
        assert e.fits
    assert list(res.ranked) == sorted(res.ranked, key=lambda e: (e.step_time_s, e.memory.total_bytes))


# ------------------------------------------------------------------------------------------ serving
SERVE_MODELS = ["llama3.1-8b", "gpt3-small", "tinygpt", "llama2-13b"]
SERVE_INSTANCES = ["inf2.xlarge", "inf2.48xlarge", "trn1.32xlarge", "g6.xlarge", "trn2.48xlarge"]


@fuzz(300)
@given_args(model=st.sampled_from(SERVE_MODELS + ["nope"]), instance=st.sampled_from(SERVE_INSTANCES),
       tp=st.sampled_from([1, 2, 4, 8, 24]), batch=st.integers(1, 256),
       input_tokens=st.integers(1, 8192), output_tokens=st.integers(1, 4096),
       dtype=st.sampled_from(["bf16", "fp16", "fp8", "fp32", "int3"]))
def test_serving_estimate(model, instance, tp, batch, input_tokens, output_tokens, dtype):
    try:
        e = serving.estimate(model, instance, tp, batch, input_tokens, output_tokens, dtype)
    except ServingError:
        return
    finite_pos(e.ttft_ms, "ttft_ms")
    finite_pos(e.tpot_ms, "tpot_ms")
    finite_pos(e.request_latency_ms, "request_latency_ms")
    assert e.request_latency_ms >= e.ttft_ms
    finite_pos(e.tokens_per_s, "tokens_per_s")
    finite_pos(e.weights_gib_per_device, "weights")
    finite_pos(e.kv_cache_gib_per_device, "kv cache")
    assert e.replicas >= 1
    if e.cost_per_million_output_tokens_usd is not None:
        finite_pos(e.cost_per_million_output_tokens_usd, "cost")


_TIMES = {}


def _times(max_batch):
    """Service-time tables for a valid ``max_batch`` (cached); None for a hostile one (simulate builds its own)."""
    if type(max_batch) is not int or max_batch not in (1, 4, 8):
        return None
    if max_batch not in _TIMES:
        _TIMES[max_batch] = serving.service_times("llama3.1-8b", "inf2.48xlarge", 2, max_batch, 256, 32)
    return _TIMES[max_batch]


@fuzz(120)
@given_args(max_batch=st.sampled_from([1, 4, 8]), rate=st.floats(0.05, 200.0),
       mode=st.sampled_from(["static", "continuous"]), instances=st.integers(1, 8),
       n_requests=st.integers(10, 120), seed=st.integers(0, 2**32),
       warmup=st.floats(0.0, 0.89), use_tables=st.booleans())
def test_serving_simulate(max_batch, rate, mode, instances, n_requests, seed, warmup, use_tables):
    try:
        r = serving.simulate("llama3.1-8b", "inf2.48xlarge", 2, max_batch, 256, 32, rate, mode, instances=instances,
                             n_requests=n_requests, seed=seed, warmup_fraction=warmup,
                             times=_times(max_batch) if use_tables else None)
    except ServingError:
        return
    for name in ("latency_p50_ms", "latency_p99_ms", "ttft_p50_ms", "ttft_p99_ms", "throughput_rps",
                 "capacity_rps", "output_tokens_per_s"):
        finite_pos(getattr(r, name), name)
    assert r.latency_p50_ms <= r.latency_p99_ms and r.ttft_p99_ms <= r.latency_p99_ms + 1e-9
    assert 0.0 <= r.busy_fraction <= 1.0
    assert np.all(np.isfinite(r.latencies_ms)) and np.all(r.latencies_ms > 0)


# ------------------------------------------------------------------------------------------ cluster
OPS = list(cluster.OPS) + ["broadcast"]


def check_timing(t):
    finite_nonneg(t.time_us, "time_us")
    finite_nonneg(t.alpha_us, "alpha_us")
    finite_nonneg(t.beta_us, "beta_us")
    finite_nonneg(t.algbw_gbytes_per_s, "algbw")
    finite_nonneg(t.busbw_gbytes_per_s, "busbw")


@fuzz(250)
@given_args(ranks=st.integers(1, 64), bw=st.floats(0.01, 1e4), hop=st.floats(0.0, 100.0),
       op=st.sampled_from(OPS), nbytes=st.integers(0, 2**34),
       algo=st.sampled_from(list(cluster.ALGORITHMS) + ["bogus"]), channels=st.sampled_from([None, 1, 2]))
def test_ring_collective_time(ranks, bw, hop, op, nbytes, algo, channels):
    try:
        topo = cluster.ring_topology(ranks, bw, hop)
    except TopologyError:
        return
    try:
        t = cluster.collective_time(op, nbytes, topo, algo, ring_channels=channels)
    except AlgorithmError:
        return
    check_timing(t)


@fuzz(150)
@given_args(instance=st.sampled_from(["trn1.32xlarge", "trn2.48xlarge", "inf2.48xlarge", "trn1.2xlarge", "inf1.xlarge",
                                       "trn2.ultraserver"]),
       nodes=st.integers(1, 4), lnc=st.sampled_from([None, 1, 2]), op=st.sampled_from(OPS),
       nbytes=st.integers(0, 2**30), group=st.integers(1, 64))
def test_instance_collective_time(instance, nodes, lnc, op, nbytes, group):
    try:
        topo = cluster.topology(instance, nodes=nodes, lnc=lnc)
        topo = topo.group(group)
    except (TopologyError, CatalogError):
        return
    try:
        t = cluster.collective_time(op, nbytes, topo)
    except AlgorithmError:
        return
    check_timing(t)


@fuzz(60)
@given(ranks=st.integers(1, 16), n=st.one_of(st.integers(0, 64), HOSTILE),
       op=st.sampled_from(["all_reduce", "all_gather", "reduce_scatter", "all_to_all"]),
       algo=st.sampled_from(["auto", "ring", "mesh", "recursive_doubling", "bogus"]), seed=st.integers(0, 1000))
def test_functional_collectives_match_numpy(ranks, n, op, algo, seed):
    topo = cluster.ring_topology(ranks, 100.0)
    if type(n) is int and 0 <= n <= 64:
        arrs = [np.random.default_rng(seed + r).integers(-5, 5, n).astype(np.float64) for r in range(ranks)]
    else:
        arrs = [n] * ranks  # hostile per-rank "arrays": refused with the cluster's own error
    try:
        res = getattr(cluster, op)(arrs, topo, algo)
    except (AlgorithmError, TopologyError):
        return
    except ValueError as exc:  # the documented per-rank array checks (count, shape, dtype)
        assert "rank" in str(exc), exc
        return
    if op == "all_reduce":
        for out in res.outputs:
            np.testing.assert_array_equal(out, functools.reduce(np.add, [np.asarray(a) for a in arrs]))
    elif op == "all_gather":
        for out in res.outputs:
            np.testing.assert_array_equal(out, np.concatenate([np.ravel(a) for a in arrs]))
    finite_nonneg(res.time_us, "time_us")


# ------------------------------------------------------------------------------------------ deploy
@fuzz(120)
@given_args(lat1=st.floats(-90, 90), lon1=st.floats(-180, 180), lat2=st.floats(-90, 90),
       lon2=st.floats(-180, 180), route_factor=st.sampled_from([None, 1.0, 1.5, 3.0]),
       origin=st.sampled_from(["Kuala Lumpur", "Penang", "ap-southeast-1", "Atlantis"]),
       region=st.sampled_from(["ap-southeast-1", "ap-southeast-5", "us-east-1", "eu-west-9"]))
def test_deploy_latency(lat1, lon1, lat2, lon2, route_factor, origin, region):
    try:
        d = np.asarray(deploy.great_circle_km(lat1, lon1, lat2, lon2))
    except DeployError:
        pass
    else:
        assert np.all((d >= 0) & (d <= math.pi * 6371.0 + 1e-6)), d
        assert np.all(np.isfinite(deploy.rtt_floor_ms(d))) and np.all(deploy.rtt_floor_ms(d) >= 0)
    try:
        r = deploy.estimate_rtt(origin, region, route_factor=route_factor)
    except DeployError:
        return
    for v in (r.floor_ms, r.low_ms, r.typical_ms, r.high_ms):
        finite_nonneg(v, "rtt")
    assert r.low_ms <= r.typical_ms <= r.high_ms


@fuzz(100)
@given_args(region=st.sampled_from(["ap-southeast-1", "ap-southeast-5", "us-east-1"]),
       instance=st.sampled_from(["inf2.xlarge", "g6.xlarge", "trn1.32xlarge", "p5.48xlarge"]),
       factor=st.sampled_from([None, 0.5, 1.4, 2.0]), power=st.floats(0, 100),
       pue=st.floats(1.0, 2.0), data_class=st.sampled_from(["public", "personal", "sensitive", "secret"]),
       subjects=st.integers(0, 10**7), monitoring=st.booleans(),
       route=st.sampled_from([None, "adequate_protection", "consent", "bogus"]))
def test_deploy_helpers(region, instance, factor, power, pue, data_class, subjects, monitoring, route):
    try:
        q = deploy.price(region, instance, proxy_factor=factor)
    except DeployError:
        pass
    else:
        if q.usd_per_hour is not None:
            finite_pos(q.usd_per_hour, "usd_per_hour")
    try:
        kwh = deploy.carbon.monthly_energy_kwh(power, pue_value=pue)
    except DeployError:
        pass
    else:
        finite_nonneg(kwh, "energy")
    try:
        v = deploy.assess(data_class, region, route=route, n_data_subjects=subjects, monitoring=monitoring)
    except DeployError:
        return
    assert v.verdict in ("no transfer restriction", "allowed with steps", "not allowed as planned")


@fuzz(40)
@given_args(rate=st.sampled_from([0.5, 2.0, 20.0]), slo=st.sampled_from([200.0, 1000.0, 5000.0]),
       model=st.sampled_from(["llama3.1-8b", "gpt3-small", "nope"]),
       share=st.sampled_from([0.0, 0.3, 1.0]), proxy=st.sampled_from([None, 1.2]),
       in_region=st.booleans(), rank_by=st.sampled_from(["cost", "carbon", "latency", "speed"]),
       users=st.sampled_from(["Kuala Lumpur", "Kuching", "Mars"]))
def test_deploy_plan(rate, slo, model, share, proxy, in_region, rank_by, users):
    try:
        options = deploy.plan(rate_rps=rate, ttft_slo_ms=slo, model=model, personal_share=share,
                              proxy_price_factor=proxy, neuron_in_region=in_region, rank_by=rank_by, users=users,
                              n_requests=60)
    except DeployError:
        return
    assert options and [o.rank for o in options] == list(range(1, len(options) + 1))
    for o in options:
        finite_nonneg(o.rtt_ms, "rtt_ms")  # users in the region city: 0 km
        for v in (o.usd_per_month, o.kgco2e_per_month, o.user_ttft_p99_ms):
            if v is not None:
                finite_nonneg(v, "plan figure")
