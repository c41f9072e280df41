"""PDPA residency checker: classes, routes, TIA, DPO thresholds, breach deadlines, disclaimer."""
import pytest

from trnsim.deploy import DATA_CLASSES, DeployError, assess, disclaimer, transfer_routes


def test_disclaimer_says_not_legal_advice():
    assert "not legal advice" in disclaimer()
    assert "not legal advice" in assess("personal", "ap-southeast-5").explain()


@pytest.mark.parametrize("cls", ["public", "de-identified"])
def test_non_personal_classes_cross_freely(cls):
    v = assess(cls, "us-east-1")
    assert v.verdict == "no transfer restriction" and not v.cross_border


def test_personal_abroad_without_route_is_not_allowed():
    v = assess("personal", "ap-southeast-1")
    assert not v.ok and v.cross_border
    assert any("whitelist" in s.text for s in v.steps)


@pytest.mark.parametrize("route,tia", [("substantially_similar_law", True), ("adequate_protection", True),
                                       ("consent", False), ("contract_necessity", False)])
def test_routes_and_tia(route, tia):
    v = assess("personal", "ap-southeast-1", route=route)
    assert v.ok and v.cross_border
    has_tia = any("Transfer Impact Assessment" in s.text for s in v.steps)
    assert has_tia == tia
    if tia:
        assert any("every 3 years" in s.text for s in v.steps)


def test_in_country_keeps_breach_duties_and_dpo_threshold():
    small = assess("personal", "ap-southeast-5", n_data_subjects=20_000)
    big = assess("personal", "ap-southeast-5", n_data_subjects=20_001)
    assert not any("Data Protection Officer" in s.text for s in small.steps)
    assert any("Data Protection Officer" in s.text for s in big.steps)
    assert any("72 hours" in s.text and "7 days" in s.text for s in small.steps)
    sens = assess("sensitive", "ap-southeast-5", n_data_subjects=10_001)
    assert any("10,000" in s.text for s in sens.steps)
    assert any("biometric" in n for n in sens.notes)


def test_hybrid_keeps_personal_data_home():
    v = assess("personal", "ap-southeast-1", plan="hybrid")
    assert v.ok and not v.cross_border
    assert any("De-identify" in s.text for s in v.steps)


def test_every_step_cites_a_source():
    v = assess("sensitive", "us-east-1", route="adequate_protection", n_data_subjects=50_000, monitoring=True)
    assert v.sources() and all(s.source for s in v.steps)
    assert all("(as of " in c for c in v.sources())


def test_bad_inputs_name_the_choices():
    with pytest.raises(DeployError, match="data class"):
        assess("secret", "ap-southeast-5")
    with pytest.raises(DeployError, match="in-country"):
        assess("personal", "ap-southeast-1", plan="in-country")
    with pytest.raises(DeployError, match="transfer route"):
        assess("personal", "ap-southeast-1", route="whitelist")
    assert set(DATA_CLASSES) == {"public", "de-identified", "personal", "sensitive"}
    assert "consent" in transfer_routes()


def test_exercise_checkers():
    from trnsim.course.exercises.deploy import check_monthly_cost_usd, check_rtt_floor_ms, check_transfer_rules

    assert check_rtt_floor_ms(3.16)
    wrong = check_rtt_floor_ms(1.58)
    assert not wrong and any("one way" in h for h in wrong.hints)
    assert check_monthly_cost_usd(2 * 1.06148 * 730)
    assert not check_monthly_cost_usd(2 * 1.06148 * 720 * 1.1)
    assert check_transfer_rules(True, 72, True)
    assert not check_transfer_rules(True, 72, False)
    assert check_transfer_rules(True, 72, False, n_data_subjects=20_000)


def test_exercise_checkers_on_the_notebook_cases():
    # notebook 13 asks for cases the notebook has not printed before the exercise: Kuching -> Singapore,
    # three inf2.xlarge in Mumbai, 15,000 data subjects (below the DPO threshold)
    from trnsim.course.exercises.deploy import check_monthly_cost_usd, check_rtt_floor_ms, check_transfer_rules
    import trnsim.deploy.catalog as reg

    assert check_rtt_floor_ms(7.24, origin="Kuching")
    assert not check_rtt_floor_ms(3.16, origin="Kuching")       # Kuala Lumpur's floor
    half = check_rtt_floor_ms(3.62, origin="Kuching")
    assert not half and any("one way" in h for h in half.hints)
    usd = 3 * reg.listed_price("ap-south-1", "inf2.xlarge").usd_per_hour * 730
    assert check_monthly_cost_usd(usd, instances=3, region="ap-south-1")
    assert not check_monthly_cost_usd(usd * 1.061 / 0.986, instances=3, region="ap-south-1")   # Singapore's price
    assert check_transfer_rules(True, 72, False, n_data_subjects=15_000)
    assert not check_transfer_rules(True, 72, True, n_data_subjects=15_000)
