"""AWS regions near Malaysia: where they are, what Neuron/GPU capacity they list, what it costs.

Facts come from ``data/regions.json`` (moto's DescribeInstanceTypeOfferings snapshots,
Karpenter and SkyPilot price files; see that file's ``sources``). The catalog shows what
the sources show: as of its date, **ap-southeast-5 (Malaysia) lists no Trainium or
Inferentia instance**. :func:`offering` can be asked to assume a hypothetical
"Neuron capacity arrives in-region" scenario, and then says so in its answer.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from trnsim.catalog.validation import check_bool, check_positive, check_str
from trnsim.deploy._data import cite, regions_data, value


class DeployError(ValueError):
    """A bad region, instance, data class or planner input, with the rule and the fix."""


def check_name(name: str, value: Any, what: str) -> str:
    """A string argument naming a region, instance, model or site, else DeployError."""
    return check_str(name, value, error=DeployError, what=what)


MALAYSIA_REGION = "ap-southeast-5"
"""The AWS region in Malaysia (launched 2024-08-21)."""

PRICE_REFERENCE_REGION = "us-east-1"
"""Region whose prices anchor the price-factor ratios (both price sources agree there)."""


@dataclass(frozen=True)
class RegionSpec:
    """One AWS region. Coordinates in degrees (approximate city centres)."""

    code: str
    name: str
    city: str
    country: str
    country_code: str
    lat_deg: float
    lon_deg: float
    notes: str

    @property
    def in_malaysia(self) -> bool:
        """True when the region's geography is Malaysia (data stays in-country)."""
        return self.country_code == "MY"


@dataclass(frozen=True)
class Offering:
    """Whether ``region`` lists ``instance``: status is 'offered', 'not offered' or 'not found'."""

    region: str
    instance: str
    status: str
    hypothetical: bool
    source: str
    note: str

    @property
    def available(self) -> bool:
        return self.status == "offered"


@dataclass(frozen=True)
class PriceQuote:
    """An hourly on-demand price. ``usd_per_hour`` is None when no price in the sources exists.

    ``basis`` is 'listed' (a published price for this region), 'proxy' (a price from another
    region times a price factor: an estimate, clearly labelled) or 'none'.
    """

    region: str
    instance: str
    usd_per_hour: float | None
    basis: str
    source: str
    as_of: str | None
    note: str

    @property
    def label(self) -> str:
        if self.usd_per_hour is None:
            return "no price in the sources"
        tag = "" if self.basis == "listed" else f" (estimate: {self.note})"
        return f"${self.usd_per_hour:,.2f}/h{tag}"


@lru_cache(maxsize=None)
def regions() -> dict[str, RegionSpec]:
    """All regions in the data file, keyed by region code."""
    out = {}
    for code, rec in regions_data()["regions"].items():
        out[code] = RegionSpec(
            code=code,
            name=rec["name"],
            city=rec["city"],
            country=rec["country"],
            country_code=rec["country_code"],
            lat_deg=float(value(rec["lat"])),
            lon_deg=float(value(rec["lon"])),
            notes=rec.get("notes", ""),
        )
    return out


def region(code: str) -> RegionSpec:
    """The :class:`RegionSpec` for ``code`` (e.g. 'ap-southeast-5'); clear error if unknown."""
    check_name("code", code, "an AWS region code such as 'ap-southeast-5'")
    table = regions()
    if code not in table:
        raise DeployError(
            f"unknown region {code!r}: trnsim.deploy knows {', '.join(sorted(table))}. "
            "Use an AWS region code; beware that Alibaba Cloud uses the same codes for other countries "
            "(its ap-southeast-5 is Jakarta)."
        )
    return table[code]


def known_instances() -> tuple[str, ...]:
    """Instance types that appear in any region's offering list."""
    names: set[str] = set()
    for rec in regions_data()["regions"].values():
        names.update(rec["offerings"])
    return tuple(sorted(names))


def offering(code: str, instance: str, *, neuron_in_region: bool = False) -> Offering:
    """Does region ``code`` list ``instance``? As the sources show, unless a scenario is asked for.

    ``neuron_in_region=True`` assumes Inferentia2/Trainium capacity arrives in ap-southeast-5
    (a what-if the learner toggles); the answer is then marked ``hypothetical``.
    """
    check_name("instance", instance, "an instance type such as 'inf2.xlarge'")
    check_bool("neuron_in_region", neuron_in_region, error=DeployError)
    region(code)
    data = regions_data()
    rec = data["regions"][code]["offerings"].get(instance)
    if rec is None:
        if instance not in known_instances():
            raise DeployError(
                f"instance {instance!r} is not in the regions catalog; known: {', '.join(known_instances())}"
            )
        return Offering(code, instance, "not found", False, "MOTO", "not recorded for this region")
    status = value(rec)
    if (
        neuron_in_region
        and code == MALAYSIA_REGION
        and instance.startswith(("inf2", "trn"))
        and status != "offered"
    ):
        return Offering(
            code, instance, "offered", True, "SCENARIO",
            "hypothetical: Neuron capacity arrives in-region (not listed by any source as of the data date)",
        )
    return Offering(code, instance, status, False, rec["source"], rec.get("note", ""))


def listed_price(code: str, instance: str) -> PriceQuote:
    """The published on-demand price of ``instance`` in ``code``, or a 'none' quote saying why not."""
    check_name("instance", instance, "an instance type such as 'inf2.xlarge'")
    region(code)
    data = regions_data()
    rec = data["prices_usd_per_hour"].get(code, {}).get(instance)
    if rec is None or rec["value"] is None:
        note = rec.get("note", "") if rec else "no price in the project's sources"
        src = rec["source"] if rec else ""
        return PriceQuote(code, instance, None, "none", src, None, note or "no price in the sources")
    src = data["sources"][rec["source"]]
    return PriceQuote(code, instance, float(rec["value"]), "listed", rec["source"], src["as_of"], rec.get("note", ""))


def price_factor(code: str) -> float | None:
    """Mean ratio of ``code``'s listed prices to us-east-1's, over instances priced in both.

    Derived from the data (e.g. Singapore inf2 ~ 1.40x); None when no common instance is priced.
    """
    region(code)
    data = regions_data()["prices_usd_per_hour"]
    ref = data.get(PRICE_REFERENCE_REGION, {})
    here = data.get(code, {})
    ratios = [
        here[k]["value"] / ref[k]["value"]
        for k in here
        if k in ref and here[k]["value"] is not None and ref[k]["value"] is not None
    ]
    if not ratios:
        return None
    return float(sum(ratios) / len(ratios))


def price(
    code: str,
    instance: str,
    *,
    proxy_factor: float | None = None,
    proxy_region: str = "ap-southeast-1",
) -> PriceQuote:
    """Listed price if there is one; otherwise an explicit proxy estimate if asked for.

    With ``proxy_factor=None`` an unpriced combination returns ``usd_per_hour=None`` ("no public
    price"). With a factor (e.g. ``price_factor('ap-southeast-1')``) it returns us-east-1's listed
    price times that factor, labelled ``basis='proxy'`` with the assumption spelled out.
    """
    if proxy_factor is not None:

        check_positive("proxy_factor", proxy_factor, error=DeployError, max_value=100.0,
                       fix=f"a price ratio to {PRICE_REFERENCE_REGION}, e.g. price_factor('{proxy_region}'), or None")
    region(proxy_region)
    quote = listed_price(code, instance)
    if quote.usd_per_hour is not None or proxy_factor is None:
        return quote
    if proxy_factor <= 0:
        raise DeployError(f"proxy_factor must be > 0 (got {proxy_factor}); try price_factor('{proxy_region}')")
    ref = listed_price(PRICE_REFERENCE_REGION, instance)
    if ref.usd_per_hour is None:
        return quote
    return PriceQuote(
        code, instance, ref.usd_per_hour * proxy_factor, "proxy", ref.source, ref.as_of,
        f"no public {code} price; {PRICE_REFERENCE_REGION} x {proxy_factor:.2f}",
    )


def source_citation(key: str) -> str:
    """Citation line for a source key of ``data/regions.json``."""
    return cite(regions_data(), key)


def neuron_capacity_table(*, neuron_in_region: bool = False) -> list[dict]:
    """Rows (region, trn1, trn2, inf2 status, notes) as the sources show them."""

    check_bool("neuron_in_region", neuron_in_region, error=DeployError)
    rows = []
    for code, spec in regions().items():
        row = {"region": code, "city": spec.city}
        for fam in ("inf2", "trn1", "trn2"):
            names = [n for n in known_instances() if n.startswith(fam + ".")]
            statuses = [offering(code, n, neuron_in_region=neuron_in_region) for n in names]
            if any(s.available for s in statuses):
                row[fam] = "offered*" if any(s.hypothetical for s in statuses if s.available) else "offered"
            elif all(s.status == "not found" for s in statuses):
                row[fam] = "not found"
            else:
                row[fam] = "no"
        rows.append(row)
    return rows
