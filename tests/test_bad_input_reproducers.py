"""Issue 16 reproducers outside the kernel language: each former crash, hang or absurd answer now raises
the module's own error naming the argument, or returns a correct answer.

Former hangs run under a SIGALRM guard, so a regression fails in seconds instead of hanging the suite.
"""
import contextlib
import math
import signal

import numpy as np
import pytest

import trnsim
from trnsim import cluster, deploy, serving, training
from trnsim.cluster import AlgorithmError, TopologyError
from trnsim.catalog.datafiles import CatalogError
from trnsim.deploy import DeployError
from trnsim.serving import ServingError
from trnsim.training import PlanError

from datafile_fixture import tmp_data  # noqa: F401  (fixture)


@contextlib.contextmanager
def no_hang(seconds: int = 10):
    """Fail (instead of hanging) if the block runs longer than ``seconds``."""

    def boom(signum, frame):
        raise TimeoutError(f"still running after {seconds} s: the call hangs")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


EST = dict(seq_len=2048, global_batch=512)


# ----------------------------------------------------------------------------- former hangs
def test_topology_with_a_million_nodes_is_refused_at_once():
    with no_hang(), pytest.raises(TopologyError, match=r"nodes=1,000,000.*\[1, 65536\]"):
        cluster.topology("trn1.32xlarge", nodes=10**6)


def test_topology_just_over_the_rank_limit_names_the_limit():
    with no_hang(), pytest.raises(TopologyError, match="simulator limit of 65,536.*nodes <= 2,048"):
        cluster.topology("trn1.32xlarge", nodes=2049)


def test_ring_of_a_million_ranks_is_refused_at_once():
    with no_hang(), pytest.raises(TopologyError, match=r"ranks=1,000,000"):
        cluster.ring_topology(10**6, 100)


def test_simulate_with_10_to_12_instances_is_refused_at_once():
    with no_hang(), pytest.raises(ServingError, match=r"instances=1,000,000,000,000.*at most 4096"):
        serving.simulate("llama3.1-8b", "inf2.48xlarge", instances=10**12)


def test_simulate_work_limit_is_checked_before_the_loop():
    st = serving.service_times("llama3.1-8b", "inf2.48xlarge", 2, 8, 512, 128)
    with no_hang(), pytest.raises(ServingError, match="n_requests x replicas"):
        serving.simulate("llama3.1-8b", "inf2.48xlarge", instances=4096, n_requests=10_000, times=st)


def test_model_with_a_negative_dimension_is_refused_not_looped(tmp_data):
    """deploy.plan() used to loop forever in serving/des.py when models.json had a negative dimension."""
    tmp_data.edit("models.json", lambda d: d["models"]["llama3.1-8b"].__setitem__("n_layers", -32))
    with no_hang(), pytest.raises(CatalogError, match=r"(?s)models\.json.*models\.llama3\.1-8b\.n_layers.*-32"):
        deploy.plan()


def test_model_object_with_a_negative_dimension_is_refused_by_serving():
    spec = training.model("llama3.1-8b")
    import dataclasses

    bad = dataclasses.replace(spec, n_layers=-32)
    with no_hang(), pytest.raises(ServingError, match=r"model\.n_layers=-32"):
        serving.simulate(bad, "inf2.48xlarge", n_requests=100)


def test_functional_collective_on_too_many_ranks_is_refused():
    topo = cluster.topology("trn1.32xlarge", nodes=16)  # 512 ranks
    with no_hang(), pytest.raises(AlgorithmError, match="limited to 256 ranks.*collective_time"):
        cluster.all_reduce([np.ones(4)] * topo.size, topo)


# ----------------------------------------------------------------------------- absurd answers
def test_global_batch_1e300_is_refused_not_mfu_inf():
    with pytest.raises(PlanError, match=r"global_batch=1e\+300.*\[1, 10,000,000\]"):
        training.estimate("llama2-7b", "trn1.32xlarge", 1, 8, 1, seq_len=2048, global_batch=1e300)


@pytest.mark.parametrize("nodes", [0, float("nan"), -1, 1.5, "2", True])
def test_search_with_bad_nodes_says_so(nodes):
    with pytest.raises(PlanError, match="nodes="):
        training.search("llama2-7b", "trn1.32xlarge", nodes, 2048, 512)


def test_ring_with_nan_bandwidth_is_refused():
    with pytest.raises(TopologyError, match="link_gbytes_per_s=nan.*finite"):
        cluster.ring_topology(8, float("nan"))


def test_negative_service_times_are_refused():
    bad = serving.ServiceTimes(np.full(9, -5.0), np.full(9, -5.0), 12)
    with pytest.raises(ServingError, match=r"times\.prefill_ms.*> 0 ms"):
        serving.simulate("llama3.1-8b", "inf2.48xlarge", times=bad, n_requests=100)


def test_plan_with_nan_proxy_price_factor_is_refused():
    with pytest.raises(DeployError, match="proxy_price_factor=nan"):
        deploy.plan(proxy_price_factor=float("nan"))


@pytest.mark.parametrize("value", ["no", "False", 0, 1, None, "yes"])
def test_zero1_must_be_a_bool(value):
    with pytest.raises(PlanError, match="zero1=.*True or False") as exc:
        training.estimate("llama2-7b", "trn1.32xlarge", 1, 8, 1, zero1=value, **EST)
    assert isinstance(exc.value, TypeError)  # a wrong type is also a TypeError


def test_zero1_false_still_works():
    e = training.estimate("llama2-7b", "trn1.32xlarge", 1, 8, 1, zero1=False, **EST)
    assert e.plan.zero1 is False


@pytest.mark.parametrize("lat", [95, -90.5, float("nan")])
def test_latitude_out_of_range_is_refused(lat):
    with pytest.raises(DeployError, match="lat1_deg=.*latitude"):
        deploy.great_circle_km(lat, 0, 0, 0)


def test_great_circle_still_broadcasts_and_is_right():
    quarter = deploy.great_circle_km(np.array([0.0, 0.0]), np.array([0.0, 90.0]), 0.0, 0.0)
    assert quarter[0] == 0.0
    assert quarter[1] == pytest.approx(math.pi / 2 * 6371.0)


# ----------------------------------------------------------------------------- raw exceptions
@pytest.mark.parametrize("call, err", [
    (lambda: serving.kv_bytes_per_token("llama3.1-8b", 1, "int3"), ServingError),  # was a raw KeyError
    (lambda: serving.serving_hardware(["inf2.xlarge"]), ServingError),  # was "unhashable type"
    (lambda: training.system(["trn1.32xlarge"]), PlanError),
    (lambda: training.model(42), PlanError),
    (lambda: cluster.bus_factor("all_reduce", 0), AlgorithmError),  # was ZeroDivisionError
    (lambda: cluster.collective_time("all_reduce", float("nan"), cluster.ring_topology(4, 100)), AlgorithmError),
    (lambda: cluster.collective_time("all_reduce", 1e300, cluster.ring_topology(4, 100)), AlgorithmError),
    (lambda: cluster.collective_time("all_reduce", 1024, "ring"), AlgorithmError),
    (lambda: deploy.plan(users=5), DeployError),
    (lambda: deploy.plan(nonsense=1), DeployError),  # was a raw TypeError from the dataclass
    (lambda: deploy.assess("personal", "ap-southeast-5", n_data_subjects="many"), DeployError),
    (lambda: deploy.region(["ap-southeast-5"]), DeployError),
    (lambda: deploy.price("ap-southeast-5", "inf2.xlarge", proxy_factor=float("inf")), DeployError),
    (lambda: deploy.estimate_rtt("Kuala Lumpur", "ap-southeast-1", route_factor=float("nan")), DeployError),
    (lambda: deploy.carbon.monthly_energy_kwh(float("nan"), pue_value=1.1), DeployError),
    (lambda: deploy.rtt_floor_ms(-1.0), DeployError),
    (lambda: trnsim.instances(family=5), CatalogError),
    (lambda: trnsim.core(True), CatalogError),
    (lambda: training.mfu_from_throughput("llama2-7b", 2048, float("inf"), 8, 190), PlanError),
])
def test_bad_arguments_raise_the_modules_own_error(call, err):
    with no_hang(), pytest.raises(err):
        call()


def test_error_names_argument_value_range_and_fix():
    with pytest.raises(ServingError) as exc:
        serving.estimate("llama3.1-8b", "inf2.48xlarge", tp=2, batch=0)
    msg = str(exc.value)
    assert "batch=0" in msg and "[1, 100000]" in msg and "requests served together" in msg


# ----------------------------------------------------------------------------- data errors are data errors
def test_models_json_without_n_heads_is_a_data_error(tmp_data):
    tmp_data.edit("models.json", lambda d: d["models"]["llama3.1-8b"].pop("n_heads"))
    for call in (lambda: training.model("llama3.1-8b"), lambda: serving.estimate("llama3.1-8b", "inf2.xlarge")):
        with pytest.raises(CatalogError, match=r"(?s)models\.json.*models\.llama3\.1-8b: required field\(s\) n_heads"):
            call()


def test_models_json_count_as_string_is_refused_not_coerced(tmp_data):
    tmp_data.edit("models.json", lambda d: d["models"]["llama3.1-8b"].__setitem__("n_heads", "32"))
    with pytest.raises(CatalogError, match=r"(?s)n_heads: expected an integer, not str.*'32'") as exc:
        serving.estimate("llama3.1-8b", "inf2.xlarge")
    assert "unknown model" not in str(exc.value)


def test_hardware_negative_bandwidth_is_refused(tmp_data):
    tmp_data.edit("hardware.json",
                  lambda d: d["chips"]["trainium"]["fields"]["hbm_gbytes_per_s"].__setitem__("value", -820))
    with pytest.raises(CatalogError, match=r"(?s)hardware\.json.*chips\.trainium\.fields\.hbm_gbytes_per_s\.value.*-820"):
        training.estimate("llama2-7b", "trn1.32xlarge", 1, 8, 1, **EST)


def test_regions_latitude_95_is_refused(tmp_data):
    tmp_data.edit("regions.json", lambda d: d["regions"]["ap-southeast-1"]["lat"].__setitem__("value", 95.0))
    with pytest.raises(CatalogError, match=r"(?s)regions\.ap-southeast-1\.lat\.value.*latitude.*\[-90, 90\]"):
        deploy.estimate_rtt("Kuala Lumpur", "ap-southeast-1")
