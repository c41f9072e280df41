"""Regions catalog: what the sources show, scenario toggle, prices and price factors."""
import pytest

from trnsim.catalog.datafiles import load_json
from trnsim.deploy import DeployError, neuron_capacity_table, offering, price, price_factor, region, regions
from trnsim.deploy.catalog import listed_price


def test_every_value_names_a_known_source():
    for name in ("regions.json", "residency.json"):
        data = load_json(name)
        keys = set(data["sources"])

        def walk(node, path):
            if isinstance(node, dict):
                if "value" in node and "source" in node:
                    assert node["source"] in keys, f"{name}:{path} cites unknown source {node['source']!r}"
                for k, v in node.items():
                    walk(v, f"{path}.{k}")
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    walk(v, f"{path}[{i}]")

        walk({k: v for k, v in data.items() if k != "sources"}, name)
        for key, src in data["sources"].items():
            assert src["as_of"][:4].isdigit(), f"{name} source {key} lacks an ISO as_of date"


def test_malaysia_has_no_neuron_as_sources_show():
    for inst in ("inf2.xlarge", "inf2.48xlarge", "trn1.32xlarge", "trn2.48xlarge"):
        off = offering("ap-southeast-5", inst)
        assert off.status == "not offered" and not off.available and not off.hypothetical
    assert offering("ap-southeast-5", "g6.xlarge").available
    assert region("ap-southeast-5").in_malaysia and not region("ap-southeast-1").in_malaysia


def test_scenario_toggle_is_labelled_hypothetical():
    off = offering("ap-southeast-5", "inf2.xlarge", neuron_in_region=True)
    assert off.available and off.hypothetical
    # the toggle only changes Malaysia, never what the sources say elsewhere
    assert not offering("ap-southeast-3", "inf2.xlarge", neuron_in_region=True).available
    rows = {r["region"]: r for r in neuron_capacity_table(neuron_in_region=True)}
    assert rows["ap-southeast-5"]["inf2"] == "offered*"
    assert rows["ap-southeast-7"]["inf2"] == "not found"


# trn1 / inf2 flags of /work/shared/reference/regions.csv (moto snapshots), copied here as the oracle
CSV_FLAGS = {"ap-southeast-5": (False, False), "ap-southeast-1": (False, True), "ap-southeast-3": (False, False),
             "ap-northeast-1": (False, True), "ap-south-1": (True, True), "us-east-1": (True, True),
             "us-west-2": (True, True), "us-east-2": (True, True), "ap-southeast-2": (True, True),
             "ap-southeast-4": (True, False), "eu-central-1": (False, True), "sa-east-1": (False, True)}


@pytest.mark.parametrize("code,flags", CSV_FLAGS.items())
def test_regions_csv_flags_agree(code, flags):
    trn1, inf2 = flags
    assert offering(code, "trn1.32xlarge").available == trn1
    assert offering(code, "inf2.xlarge").available == inf2


def test_price_factor_singapore_is_about_1_4():
    f = price_factor("ap-southeast-1")
    assert f == pytest.approx(1.40, abs=0.01)
    assert price_factor("ap-south-1") == pytest.approx(1.30, abs=0.01)
    assert price_factor("ap-southeast-5") is None  # nothing priced there


def test_no_public_price_is_none_not_invented():
    q = price("ap-southeast-5", "g6.xlarge")
    assert q.usd_per_hour is None and q.label == "no price in the sources"
    assert listed_price("us-east-2", "trn2.48xlarge").usd_per_hour is None
    proxy = price("ap-southeast-5", "g6.xlarge", proxy_factor=1.4)
    assert proxy.basis == "proxy" and proxy.usd_per_hour == pytest.approx(0.8048 * 1.4)
    assert "estimate" in proxy.label
    assert price("ap-southeast-1", "inf2.xlarge").usd_per_hour == pytest.approx(1.06148)


def test_bad_names_give_clear_errors():
    with pytest.raises(DeployError, match="Alibaba"):
        region("ap-southeast-9")
    with pytest.raises(DeployError, match="not in the regions catalog"):
        offering("ap-southeast-1", "p5.48xlarge")
    with pytest.raises(DeployError, match="proxy_factor"):
        price("ap-southeast-5", "g6.xlarge", proxy_factor=-1)
    assert len(regions()) >= 13
