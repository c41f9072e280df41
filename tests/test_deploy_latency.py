"""Latency: haversine distances, the fibre floor, route factors and measured data."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from trnsim.deploy import DeployError, estimate_rtt, great_circle_km, rtt_floor_ms
from trnsim.deploy.latency import route_factors, singapore_proxy_rtt

# great-circle distances from Kuala Lumpur in sovereign.md section 2.2 (computed independently there)
TABLE_KM = {"ap-southeast-1": 316, "ap-south-1": 3598, "ap-northeast-1": 5322, "ap-southeast-2": 6615,
            "eu-central-1": 9954, "us-east-1": 15324, "sa-east-1": 15924}


@pytest.mark.parametrize("code,km", TABLE_KM.items())
def test_distances_match_reference_table(code, km):
    e = estimate_rtt("Kuala Lumpur", code)
    assert e.distance_km == pytest.approx(km, abs=1.0)
    assert e.floor_ms == pytest.approx(km / 100.0, abs=0.05)  # 10 us/km round trip


def test_quarter_meridian_and_floor():
    assert great_circle_km(0, 0, 90, 0) == pytest.approx(np.pi * 6371 / 2, rel=1e-9)
    assert rtt_floor_ms(1000.0) == pytest.approx(10.0)


@given(st.floats(-89, 89), st.floats(-179, 179), st.floats(-89, 89), st.floats(-179, 179))
def test_distance_symmetric_and_bounded(a, b, c, d):
    x = float(great_circle_km(a, b, c, d))
    assert x == pytest.approx(float(great_circle_km(c, d, a, b)), abs=1e-6)
    assert 0.0 <= x <= np.pi * 6371 + 1e-6


def test_route_factor_range_and_typical_from_example():
    low, typ, high = route_factors()
    assert (low, high) == (1.3, 2.0)
    assert typ == pytest.approx(78.75 / 53.9)
    e = estimate_rtt("Kuala Lumpur", "ap-northeast-1")
    assert e.low_ms < e.typical_ms < e.high_ms and e.basis == "model"


def test_measured_value_is_preferred():
    e = estimate_rtt("ap-southeast-1", "us-east-1")
    assert e.basis == "measured" and e.typical_ms == pytest.approx(216.7)
    proxy = singapore_proxy_rtt("Kuala Lumpur", "us-east-1")
    assert proxy.basis == "proxy" and proxy.typical_ms > 216.7
    assert singapore_proxy_rtt("Kuala Lumpur", "ap-south-1") is None


def test_east_malaysia_users_are_far_from_kl():
    kk = estimate_rtt("Kota Kinabalu", "ap-southeast-5")
    assert 1500 < kk.distance_km < 1700  # KL to Kota Kinabalu is ~1,600 km across the South China Sea


def test_bad_inputs():
    with pytest.raises(DeployError, match="user site"):
        estimate_rtt("Ipoh", "ap-southeast-5")
    with pytest.raises(DeployError, match="great circle"):
        estimate_rtt("Kuala Lumpur", "ap-southeast-1", route_factor=0.5)
