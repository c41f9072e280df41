"""Checkers for notebooks 00 (start here) and 08 (chips and instances).

Each checker recomputes the answer from the catalog, so it stays right if the data
is corrected, and gives a hint that names the idea behind a wrong answer.
"""
from __future__ import annotations

from trnsim.catalog import chips, core, instance
from trnsim.course.check import CheckResult, combine, expect_close, expect_equal, not_answered, with_slip_hint
from trnsim.models.compare import metric_rows


def check_flops_per_cycle(answer: float) -> CheckResult:
    """Notebook 00: FLOPs one NeuronCore-v2 Tensor Engine completes per cycle at BF16."""
    c = core("NC-v2")
    want = c.pe_rows * c.pe_cols * 2
    return expect_close(
        "Tensor Engine FLOPs per cycle", answer, want, rtol=0,
        hint=f"each of the {c.pe_rows} x {c.pe_cols} processing elements does one multiply and one add per cycle",
        factor_hints={2: "a multiply-add counts as two FLOPs"},
    )


def check_peak_tflops(answer: float) -> CheckResult:
    """Notebook 00: peak BF16 TFLOPS of one NeuronCore-v2 from array size and clock."""
    c = core("NC-v2")
    want = c.tensor_peak_tflops("bf16")
    clock = c.engines["tensor"].clock_ghz
    res = expect_close(
        "NeuronCore-v2 peak BF16 TFLOPS", answer, want, rtol=0.01, unit="TFLOPS",
        hint=f"FLOPs per cycle x {clock} GHz, then divide by 1e12",
        factor_hints={2.0: "a multiply-add counts as two FLOPs (the most common slip: 128 x 128 x 1 per cycle)",
                      1e12: "that is FLOP/s; the question asks for TFLOPS (divide by 1e12)"},
    )
    # a chip holds several NeuronCore-v2s: its figure, computed or the vendor's, is the per-chip slip
    v2_chips = [ch for ch in chips() if ch.neuroncore_version == "NC-v2" and ch.neuroncores > 1]
    names = " or ".join(sorted({ch.display_name for ch in v2_chips}))
    per_chip: dict[float, tuple[int, str]] = {}
    for ch in v2_chips:
        n = ch.neuroncores
        per_chip.setdefault(n * want, (n, f"{n} x {want:.2f}"))
        if ch.peak_tflops.get("bf16"):
            per_chip.setdefault(float(ch.peak_tflops["bf16"]), (n, "the vendor's number for the whole chip"))
    slips = {value: (f"{value:.4g} TFLOPS ({what}) is the per-chip figure: each {names} chip has {n} NeuronCore-v2s, "
                     f"and the question asks per NeuronCore; divide by {n}, or use one core's {c.pe_rows} x "
                     f"{c.pe_cols} array and its clock",)
             for value, (n, what) in per_chip.items()}
    return with_slip_hint(res, answer, slips, 0.02)


def check_instance_choice(memory_gib_needed: float, answer: str) -> CheckResult:
    """Notebook 08: the cheapest priced instance whose device memory holds ``memory_gib_needed``."""
    if answer is None or answer is Ellipsis:
        return not_answered("cheapest instance that fits", "filter by device_memory_gib, then sort by price")
    fits = [r for r in metric_rows([i for i in _priced()], "price") if instance(r.instance).device_memory_gib >= memory_gib_needed]
    if not fits:
        return CheckResult(False, "cheapest instance that fits", f"no priced instance has {memory_gib_needed:g} GiB")
    best = min(fits, key=lambda r: r.value)
    try:
        chosen = instance(answer)
    except ValueError as exc:
        return CheckResult(False, "cheapest instance that fits", str(exc))
    if chosen.device_memory_gib < memory_gib_needed:
        return CheckResult(False, "cheapest instance that fits",
                           f"{answer} has only {chosen.device_memory_gib:g} GiB of device memory",
                           (f"the model needs {memory_gib_needed:g} GiB: filter by device_memory_gib first",))
    return expect_equal("cheapest instance that fits", chosen.name, best.instance,
                        hint="among the instances that fit, sort by on_demand_usd_per_hour; "
                             "instances without a public price cannot be compared")


def check_ridge_points(trn2_flop_per_byte: float, trn3_flop_per_byte: float) -> CheckResult:
    """Notebook 08: FP8 FLOP per byte of device-memory traffic for Trainium2 (``fp8``) and Trainium3 chips (its FP8
    is the MX format, ``mxfp8``). Peak FLOP/s over HBM bytes/s, both from the chip catalog (data/hardware.json)."""
    from trnsim.catalog import chip

    parts = []
    for name, key, got in (("trn2", "fp8", trn2_flop_per_byte), ("trn3", "mxfp8", trn3_flop_per_byte)):
        c = chip(name)
        want = c.peak_tflops[key] * 1e12 / (c.hbm_gbytes_per_s * 1e9)
        bf16 = c.peak_tflops["bf16"] * 1e12 / (c.hbm_gbytes_per_s * 1e9)
        slips = {want / bf16: f"that is the BF16 ridge point (the table's FLOP/B column, {bf16:.0f}); the question "
                              f"asks for FP8: peak_tflops[{key!r}] = {c.peak_tflops[key]:g} TFLOPS",
                 2.0: "the ridge point is FLOP/s over bytes/s of HBM traffic: it does not change with the size of "
                      "an element (fp8 is 1 byte, but both rates are already per second)"}
        parts.append(expect_close(f"{c.display_name} FP8 FLOP per byte", got, want, rtol=0.02,
                                  hint="peak FLOP/s divided by bytes/s: TFLOPS x 1e12 over GB/s x 1e9, both the "
                                       "chip's catalog figures (not a core's)",
                                  factor_hints=slips))
    return combine("FP8 ridge points", parts)


def _priced() -> list[str]:
    from trnsim.catalog import instances

    return [i.name for i in instances() if i.on_demand_usd_per_hour is not None]
