"""Energy and carbon of a deployment: grid intensity (with its basis and year) and PUE.

``monthly_kgco2e = it_power_kw * hours * PUE * grid_gco2_per_kwh / 1000``.

Grid intensities come in different *bases* (lifecycle OWID/Ember, direct-combustion grid
emission factors, Cloud Carbon Footprint region factors) and years. They are never mixed:
:func:`grid_intensity` returns one basis, and a comparison across regions uses the same basis
for all of them (or reports "not found"). Market-based claims (renewable matching) are not
location-based grid intensity and are not used here.

Instance power draw for Neuron instances is **not public**; ``data/regions.json`` holds
clearly labelled teaching assumptions (per accelerator, host share included) that a learner
should challenge. Only the NVIDIA L4 board TDP (72 W) is a sourced figure.
"""
from __future__ import annotations

from dataclasses import dataclass

from trnsim.deploy._data import regions_data, value
from trnsim.deploy.catalog import DeployError, region

HOURS_PER_MONTH = 730.0
"""Average hours in a month (8760 h / 12); a calendar convention, not a measured value."""

BASES = ("lifecycle", "ccf")


@dataclass(frozen=True)
class GridIntensity:
    """Grid carbon intensity in gCO2e/kWh with its basis, year and source key (value None = not found)."""

    region: str
    gco2_per_kwh: float | None
    basis: str
    year: int | None
    source: str
    note: str

    @property
    def label(self) -> str:
        if self.gco2_per_kwh is None:
            return f"not found ({self.basis})"
        yr = self.year if self.year is not None else "year n/s"
        return f"{self.gco2_per_kwh:.0f} g/kWh ({self.basis}, {yr})"


def grid_intensity(code: str, basis: str = "lifecycle") -> GridIntensity:
    """Location-based grid intensity for region ``code`` on one ``basis`` ('lifecycle' or 'ccf')."""
    if not isinstance(basis, str):
        from trnsim.catalog.validation import type_error

        raise type_error(DeployError)(f"basis={basis!r}: must be one of {BASES}")
    r = region(code)
    data = regions_data()
    if basis == "lifecycle":
        for rec in data["grid_carbon_by_country"].get(r.country_code, []):
            if rec["basis"] == "lifecycle":
                return GridIntensity(code, float(rec["value"]), "lifecycle", rec["year"], rec["source"], rec.get("note", ""))
        return GridIntensity(code, None, "lifecycle", None, "", f"no lifecycle figure for {r.country} in the data")
    if basis == "ccf":
        rec = data["ccf_region_factors"].get(code)
        if rec is None:
            return GridIntensity(code, None, "ccf", None, "CCF", f"Cloud Carbon Footprint has no {code} factor")
        return GridIntensity(code, float(rec["value"]), "ccf", None, "CCF", "")
    raise DeployError(f"unknown carbon basis {basis!r}: use one of {BASES} (never mix bases in one comparison)")


def all_country_intensities(country_code: str) -> list[dict]:
    """Every figure the data holds for one country (each with basis, year, source) for side-by-side display."""
    return list(regions_data()["grid_carbon_by_country"].get(country_code, []))


def pue(which: str | None = None) -> tuple[float, str]:
    """A PUE value and its label; default is the data file's chosen default (AWS global 2025)."""
    if which is not None and not isinstance(which, str):
        from trnsim.catalog.validation import type_error

        raise type_error(DeployError)(f"which={which!r}: must be a PUE key of data/regions.json or None")
    d = regions_data()["pue"]
    key = which or d["default"]
    if key not in d or key == "default":
        raise DeployError(f"unknown PUE {which!r}: choose from {[k for k in d if k != 'default']}")
    return float(value(d[key])), key


def instance_power_kw(accelerator: str, accelerators: int) -> tuple[float, str]:
    """Assumed average IT power of an instance in kW, and the label of the assumption used."""
    from trnsim.catalog.validation import check_int, check_str

    check_str("accelerator", accelerator, error=DeployError, what="an accelerator name such as 'inferentia2'")
    check_int("accelerators", accelerators, error=DeployError, min_value=1, max_value=10**6)
    power = regions_data()["power"]
    d = power["assumed_instance_w_per_accelerator"]
    if accelerator not in d:
        raise DeployError(f"no power assumption for accelerator {accelerator!r}; known: {', '.join(d)}")
    watts = float(value(d[accelerator]))
    chip = power["per_accelerator_w"].get(accelerator)
    chip_w = value(chip) if chip is not None else None
    basis = (f"the sourced {float(chip_w):.0f} W {chip.get('note') or 'chip figure'} plus an assumed host share"
             if chip_w is not None else "no public figure for the chip or the instance")
    return watts * accelerators / 1000.0, f"{watts:.0f} W per {accelerator} (teaching assumption: {basis})"


def monthly_energy_kwh(it_power_kw: float, *, pue_value: float, hours: float = HOURS_PER_MONTH) -> float:
    """Facility energy per month: IT power x hours x PUE."""
    from trnsim.catalog.validation import check_number

    check_number("it_power_kw", it_power_kw, error=DeployError, min_value=0.0, fix="IT power draw in kW")
    check_number("pue_value", pue_value, error=DeployError, min_value=1.0, max_value=10.0,
                 fix="PUE below 1 is impossible; AWS reports about 1.14")
    check_number("hours", hours, error=DeployError, min_value=0.0, max_value=744.0, fix="hours in a month (<= 744)")
    if it_power_kw < 0 or pue_value < 1.0:
        raise DeployError(f"need it_power_kw >= 0 and PUE >= 1 (got {it_power_kw}, {pue_value}); PUE below 1 is impossible")
    return it_power_kw * hours * pue_value


def monthly_kgco2e(energy_kwh: float, intensity: GridIntensity) -> float | None:
    """kgCO2e for ``energy_kwh`` at ``intensity``; None when the intensity is not found."""
    from trnsim.catalog.validation import check_number, type_error

    check_number("energy_kwh", energy_kwh, error=DeployError, min_value=0.0)
    if not isinstance(intensity, GridIntensity):
        raise type_error(DeployError)(f"intensity={intensity!r}: must be a GridIntensity from grid_intensity()")
    if intensity.gco2_per_kwh is None:
        return None
    return energy_kwh * intensity.gco2_per_kwh / 1000.0
