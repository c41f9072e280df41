"""Checkers for notebook 13's "check yourself" exercises (answers computed by trnsim.deploy)."""
from __future__ import annotations

from trnsim.course.check import accepts_stubs, CheckResult, combine, expect_close, expect_equal
from trnsim.deploy.carbon import HOURS_PER_MONTH
from trnsim.deploy.latency import estimate_rtt
from trnsim.deploy.catalog import price
from trnsim.deploy.residency import assess, residency_data
from trnsim.deploy._data import value


@accepts_stubs
def check_rtt_floor_ms(answer: float, origin: str = "Kuala Lumpur", to_region: str = "ap-southeast-1") -> CheckResult:
    """Round-trip physics floor in ms from ``origin`` to ``to_region`` (10 us per km of great circle)."""
    e = estimate_rtt(origin, to_region)
    res = expect_close(f"RTT floor {origin} -> {to_region}", answer, e.floor_ms, rtol=0.03, unit="ms",
                       hint=f"distance {e.distance_km:,.0f} km; light in fibre covers 200 km per ms")
    if res.passed:
        return res
    hints = tuple(h for h in res.hints if "FLOPs" not in h)
    if answer and abs(answer / e.floor_ms - 0.5) < 0.03:
        hints += ("half the floor: that is one way; a round trip goes there and back",)
    return CheckResult(False, res.title, res.message, hints)


def check_monthly_cost_usd(answer: float, instances: int = 2, instance: str = "inf2.xlarge",
                           region: str = "ap-southeast-1") -> CheckResult:
    """Monthly on-demand cost of ``instances`` x ``instance`` in ``region`` (730 h per month)."""
    q = price(region, instance)
    want = instances * q.usd_per_hour * HOURS_PER_MONTH
    return expect_close(f"monthly cost of {instances}x {instance} in {region}", answer, want, rtol=0.01, unit="USD",
                        hint=f"{instances} x ${q.usd_per_hour}/h x 730 h (8,760 h / 12 months)")


def check_transfer_rules(needs_tia: bool, commissioner_hours: int, dpo_needed: bool,
                         n_data_subjects: int = 50_000) -> CheckResult:
    """Three PDPA facts for sending personal data to Singapore under the 'adequate protection' route."""
    v = assess("personal", "ap-southeast-1", route="adequate_protection", n_data_subjects=n_data_subjects)
    tia = any("Transfer Impact Assessment" in s.text for s in v.steps)
    dpo = any("Data Protection Officer" in s.text for s in v.steps)
    hours = value(residency_data()["breach_notification"]["commissioner_hours"])
    return combine("PDPA transfer rules", [
        expect_equal("TIA needed for the 'adequate protection' route", needs_tia, tia,
                     hint="Guideline 3/2025: the 'substantially similar' and 'adequate' routes need a TIA"),
        expect_equal("hours to notify the Commissioner of a significant breach", commissioner_hours, hours,
                     hint="the deadline counts from becoming aware of the breach"),
        expect_equal(f"DPO needed for {n_data_subjects:,} data subjects", dpo_needed, dpo,
                     hint="the DPO guideline's threshold is more than 20,000 data subjects (10,000 if sensitive)"),
    ])
