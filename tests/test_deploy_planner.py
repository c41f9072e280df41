"""Planner, carbon, and the deploy figures."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

from trnsim.deploy import DeployError, grid_intensity, plan, pue, report
from trnsim.deploy.carbon import instance_power_kw, monthly_energy_kwh, monthly_kgco2e


@pytest.fixture(scope="module")
def default_plan():
    return plan()


def test_options_present_and_ranked(default_plan):
    keys = [o.key for o in default_plan]
    assert set(keys) == {"in-country-gpu", "singapore-inf2", "hybrid", "us-east-inf2"}
    assert [o.rank for o in default_plan] == list(range(1, len(keys) + 1))
    feasible = [o for o in default_plan if o.feasible]
    costs = [o.usd_per_month for o in feasible]
    assert costs == sorted(costs)
    for o in feasible:  # each feasible option meets the objective as users see it
        assert o.user_ttft_p99_ms <= 1000.0


def test_in_country_gpu_price_is_a_labelled_estimate(default_plan):
    gpu = next(o for o in default_plan if o.key == "in-country-gpu")
    assert gpu.estimated_price and not gpu.residency.cross_border
    assert "estimated price" in report(default_plan)


def test_scenario_only_when_toggled():
    on = plan(neuron_in_region=True)
    opt = next(o for o in on if o.key == "in-region-neuron")
    assert opt.hypothetical and "SCENARIO" in report(on)


def test_no_route_makes_cross_border_infeasible():
    opts = {o.key: o for o in plan(transfer_route=None)}
    assert not opts["singapore-inf2"].feasible
    assert any("residency" in r for r in opts["singapore-inf2"].reasons)
    assert opts["in-country-gpu"].feasible


def test_more_traffic_needs_more_instances():
    lo = {o.key: o for o in plan(rate_rps=1.0)}
    hi = {o.key: o for o in plan(rate_rps=8.0)}
    assert hi["singapore-inf2"].fleets[0].instances > lo["singapore-inf2"].fleets[0].instances


def test_tight_objective_excludes_far_regions():
    opts = {o.key: o for o in plan(ttft_slo_ms=200.0)}
    assert not opts["us-east-inf2"].feasible  # the RTT alone is ~224 ms


def test_model_too_big_for_l4():
    opts = {o.key: o for o in plan(model="llama3.1-70b", rate_rps=0.5, ttft_slo_ms=3000)}
    assert not opts["in-country-gpu"].feasible
    assert "does not fit" in opts["in-country-gpu"].reasons[0]


def test_rank_by_residency_puts_in_country_first():
    first = plan(rank_by="residency")[0]
    assert not first.residency.cross_border


def test_carbon_formula_and_bases():
    my = grid_intensity("ap-southeast-5")
    assert (my.gco2_per_kwh, my.basis, my.year) == (605.8, "lifecycle", 2022)
    assert grid_intensity("ap-southeast-5", "ccf").gco2_per_kwh is None  # CCF has no Malaysia factor
    assert grid_intensity("ap-southeast-1", "ccf").gco2_per_kwh == 408.5
    p, _ = pue()
    assert p == 1.14
    e = monthly_energy_kwh(1.0, pue_value=1.2)
    assert e == pytest.approx(730 * 1.2)
    assert monthly_kgco2e(1000.0, my) == pytest.approx(605.8)
    kw, label = instance_power_kw("nvidia-l4", 8)
    assert kw == pytest.approx(1.2) and "assumption" in label
    # the L4's board TDP is public (72 W, sourced) and the label says so; Inferentia2 has no public figure
    assert "sourced 72 W board TDP" in label and "no public figure" not in label
    assert "no public figure" in instance_power_kw("inferentia2", 1)[1]
    with pytest.raises(DeployError):
        grid_intensity("ap-southeast-5", "market")


def test_bad_request():
    with pytest.raises(DeployError, match="personal_share"):
        plan(personal_share=1.5)
    with pytest.raises(DeployError, match="rank_by"):
        plan(rank_by="vibes")


def test_figures_draw(default_plan):
    from trnsim.course.viz.deploy import great_circle_path, plan_bars, region_map, rtt_bars

    fig, axes = plt.subplots(1, 3)
    region_map(axes[0])
    rtt_bars(axes[1])
    plan_bars(axes[2], default_plan)
    assert len(axes[0].collections) == 9  # 8 regions inside the Asia-Pacific extent + the users' star
    assert len(axes[1].patches) == 26  # 13 floors + 13 ranges
    plt.close(fig)
    lat, lon = great_circle_path(0, 0, 0, 90, n=3)
    assert lon[1] == pytest.approx(45.0) and lat[1] == pytest.approx(0.0, abs=1e-9)


def test_benchmark_planner_default(benchmark):
    """One planner run: every option's fleet sized by simulation (the planner widget's callback)."""
    opts = benchmark(plan)
    assert len(opts) == 4
