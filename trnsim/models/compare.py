"""Side-by-side numbers for chips and instances (pure; used by notebook 08 and its widget).

Every metric is computed from catalog values; a metric that needs a value no source
gives (a price, a dtype the chip lacks) is ``None``, and the tables say why rather
than leaving a gap unexplained.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from trnsim.catalog import InstanceSpec, chips, instance


@dataclass(frozen=True)
class Metric:
    """One comparable quantity: its key, label, unit and how to compute it for an instance."""

    key: str
    label: str
    unit: str
    needs_price: bool
    higher_is_better: bool
    compute: Callable[[InstanceSpec, str], float | None]


FALLBACK_PRICE_REGION = "us-east-1"
"""Region whose regions.json price is used when AWS's Neuron pages publish none (trn1n.32xlarge)."""


@dataclass(frozen=True)
class PriceQuote:
    """An On-Demand price with where and when it applies, and its source key."""

    usd_per_hour: float
    region: str                    # an AWS region code, or "region not named" when the source names none
    as_of: str
    source: str

    def label(self) -> str:
        return f"{self.region}, as of {self.as_of}, source {self.source}"


def price_quote(inst: InstanceSpec) -> PriceQuote | None:
    """The catalog's On-Demand price (AWS Neuron benchmark pages), else the regions.json price for
    :data:`FALLBACK_PRICE_REGION` (third-party price lists, e.g. trn1n.32xlarge), else None."""
    if inst.on_demand_usd_per_hour is not None:
        src = inst.sources.get("on_demand_usd_per_hour")
        return PriceQuote(float(inst.on_demand_usd_per_hour), inst.price_region or "region not named",
                          str(inst.price_as_of), getattr(src, "key", "catalog"))
    from trnsim.catalog.datafiles import load_json

    doc = load_json("regions.json")
    rec = doc["prices_usd_per_hour"].get(FALLBACK_PRICE_REGION, {}).get(inst.name)
    if not rec or not isinstance(rec.get("value"), (int, float)):
        return None
    key = rec["source"]
    return PriceQuote(float(rec["value"]), FALLBACK_PRICE_REGION, str(doc["sources"][key]["as_of"]), key)


def _price(inst: InstanceSpec) -> float | None:
    q = price_quote(inst)
    return None if q is None else q.usd_per_hour


def _per_dollar(value: float | None, inst: InstanceSpec) -> float | None:
    usd = _price(inst)
    if value is None or usd is None:
        return None
    return value / usd


METRICS: dict[str, Metric] = {
    m.key: m
    for m in (
        Metric("peak_tflops", "Peak dense compute", "TFLOPS", False, True, lambda i, d: i.peak_tflops(d)),
        Metric("device_memory_gib", "Device memory", "GiB", False, True, lambda i, d: i.device_memory_gib),
        Metric("memory_bw", "Device memory bandwidth", "GB/s", False, True, lambda i, d: i.device_memory_gbytes_per_s),
        Metric("neuroncores", "NeuronCores", "cores", False, True, lambda i, d: float(i.neuroncores)),
        Metric("price", "On-Demand price", "USD/h", True, False, lambda i, d: _price(i)),
        Metric("tflops_per_usd", "Compute per dollar", "TFLOPS per USD/h", True, True,
               lambda i, d: _per_dollar(i.peak_tflops(d), i)),
        Metric("gib_per_usd", "Memory per dollar", "GiB per USD/h", True, True,
               lambda i, d: _per_dollar(i.device_memory_gib, i)),
        Metric("bw_per_usd", "Bandwidth per dollar", "GB/s per USD/h", True, True,
               lambda i, d: _per_dollar(i.device_memory_gbytes_per_s, i)),
    )
}

DTYPES: tuple[str, ...] = ("bf16", "fp8", "fp32")


@dataclass(frozen=True)
class Row:
    """One instance's value for a metric, or the reason it has none."""

    instance: str
    value: float | None
    reason: str  # empty when value is present
    price_as_of: str | None
    price_where: str | None = None     # PriceQuote.label(): region, date and source of the price used


def metric_rows(names: Sequence[str], metric: str, dtype: str = "bf16") -> list[Row]:
    """Compute ``metric`` for each instance name. Raises ValueError for an unknown metric or dtype."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    if not names:
        raise ValueError("select at least one instance to compare")
    m = METRICS[metric]
    rows = []
    for name in names:
        inst = instance(name)
        value = m.compute(inst, dtype)
        reason = ""
        if value is None:
            if m.needs_price and price_quote(inst) is None:
                reason = "no On-Demand price in the sources"
            else:
                reason = f"{inst.chip_spec.display_name} has no published {dtype.upper()} figure"
        q = price_quote(inst) if m.needs_price else None
        rows.append(Row(inst.name, value, reason, q.as_of if q else None, q.label() if q else None))
    return rows


def format_value(value: float) -> str:
    """A readable number: thousands separators, and only the decimals that carry information."""
    mag = abs(value)
    if mag >= 100:
        return f"{value:,.0f}"
    if mag >= 10:
        return f"{value:,.1f}"
    if mag >= 1:
        return f"{value:,.2f}"
    return f"{value:.3g}"


def format_rows(rows: Sequence[Row], metric: str) -> str:
    """A plain-text table, best first; rows without a value go last with their reason."""
    m = METRICS[metric]
    have = sorted((r for r in rows if r.value is not None), key=lambda r: r.value, reverse=m.higher_is_better)
    lacking = [r for r in rows if r.value is None]
    width = max(len(r.instance) for r in rows)
    lines = [f"{m.label} ({m.unit})" + (", On-Demand prices: region, date and source shown" if m.needs_price else "")]
    for r in have:
        as_of = f"  [{r.price_where}]" if r.price_where else (f"  [price as of {r.price_as_of}]" if r.price_as_of else "")
        lines.append(f"  {r.instance:<{width}}  {format_value(r.value):>12}{as_of}")
    for r in lacking:
        lines.append(f"  {r.instance:<{width}}  {'n/a':>12}  ({r.reason})")
    return "\n".join(lines)


@dataclass(frozen=True)
class GenerationRow:
    """A chip generation's headline numbers (per chip)."""

    chip: str
    year_label: str
    core_version: str
    neuroncores: int
    bf16_tflops: float | None
    fp8_tflops: float | None
    fp32_tflops: float | None
    device_memory_gib: float
    hbm_gbytes_per_s: float
    neuronlink_gbytes_per_s: float
    flops_per_byte: float | None  # BF16 FLOP per byte of device-memory traffic: the ridge point


def generation_table() -> list[GenerationRow]:
    """One row per chip, oldest first. ``flops_per_byte`` is peak BF16 / memory bandwidth."""
    rows = []
    for c in chips():
        bf16 = c.peak_tflops.get("bf16")
        fp8 = c.peak_tflops.get("fp8", c.peak_tflops.get("mxfp8"))
        rows.append(
            GenerationRow(
                chip=c.display_name,
                year_label=c.name,
                core_version=c.neuroncore_version,
                neuroncores=c.neuroncores,
                bf16_tflops=bf16,
                fp8_tflops=fp8,
                fp32_tflops=c.peak_tflops.get("fp32"),
                device_memory_gib=c.device_memory_gib,
                hbm_gbytes_per_s=c.hbm_gbytes_per_s,
                neuronlink_gbytes_per_s=c.neuronlink_gbytes_per_s,
                flops_per_byte=None if bf16 is None else bf16 * 1e12 / (c.hbm_gbytes_per_s * 1e9),
            )
        )
    return rows


def format_generation_table(rows: Sequence[GenerationRow] | None = None) -> str:
    rows = list(rows or generation_table())

    def num(x: float | None, fmt: str = ",.0f") -> str:
        return "-" if x is None else format(x, fmt)

    head = f"{'chip':<12}{'core':>6}{'cores':>6}{'BF16 TF':>9}{'FP8 TF':>8}{'FP32 TF':>9}{'mem GiB':>9}{'mem GB/s':>10}{'link GB/s':>11}{'FLOP/B':>8}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.chip:<12}{r.core_version[3:]:>6}{r.neuroncores:>6}{num(r.bf16_tflops):>9}{num(r.fp8_tflops):>8}"
            f"{num(r.fp32_tflops, ',.1f'):>9}{num(r.device_memory_gib):>9}{num(r.hbm_gbytes_per_s):>10}"
            f"{num(r.neuronlink_gbytes_per_s):>11}{num(r.flops_per_byte):>8}"
        )
    return "\n".join(lines)


def format_instance_table(family: str | None = None) -> str:
    """Every instance (or one family) with its hardware and price; prices carry their as-of date."""
    from trnsim.catalog import instances

    def num(x: float | None, fmt: str = ",.0f") -> str:
        return "-" if x is None else format(x, fmt)

    head = (f"{'instance':<22}{'chips':>6}{'cores':>7}{'dev GiB':>9}{'dev GB/s':>10}{'link GB/s/chip':>15}"
            f"{'network Gbit/s':>16}  {'On-Demand $/h (region, as of)':<24}")
    lines = [head, "-" * len(head)]
    for i in instances(family):
        net = "-" if i.efa_gbits_per_s is None else ("up to " if i.efa_up_to else "") + format(i.efa_gbits_per_s, ",.0f")
        q = price_quote(i)
        price = "no price in the sources" if q is None else f"{q.usd_per_hour:g} ({q.region}, {q.as_of})"
        lines.append(
            f"{i.name:<22}{i.chips:>6}{i.neuroncores:>7}{num(i.device_memory_gib):>9}{num(i.device_memory_gbytes_per_s):>10}"
            f"{num(i.neuronlink_gbytes_per_s_per_chip):>15}{net:>16}  {price:<24}"
        )
    return "\n".join(lines)
