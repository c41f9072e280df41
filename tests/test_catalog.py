"""The hardware catalog: sources, derived consistency, API behaviour, malformed data."""
from __future__ import annotations

import copy
import dataclasses
import json
import re

import pytest

import trnsim
from trnsim.catalog import FrozenMap, parse_catalog
from trnsim.catalog.datafiles import CatalogError, data_dir, load_json

DOC = load_json("hardware.json")
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _all_records():
    return [*trnsim.chips(), *trnsim.cores(), *trnsim.instances()]


# ---------------------------------------------------------------- every value has a source

def test_every_source_has_citation_and_iso_date():
    for key, src in DOC["sources"].items():
        assert src["citation"].strip(), key
        assert ISO_DATE.match(src["as_of"]), (key, src["as_of"])


def test_every_field_of_every_record_carries_a_resolvable_source():
    for section in ("chips", "neuroncores", "instances"):
        for name, rec in DOC[section].items():
            for field, entry in rec["fields"].items():
                assert set(entry) >= {"value", "source"}, (section, name, field)
                for key in entry["source"].split(";"):
                    assert key.strip() in DOC["sources"], (section, name, field, key)
                for alt in entry.get("alternatives", []):
                    assert alt["source"].split(";")[0].strip() in DOC["sources"]


def test_typed_records_expose_a_source_for_each_field():
    for rec in _all_records():
        fields = {f.name for f in dataclasses.fields(rec)} - {"sources", "alternatives", "name", "display_name",
                                                              "aliases", "version", "generation", "family", "chip",
                                                              "price_as_of", "note", "sbuf_partitions",
                                                              "sbuf_bytes_per_partition", "psum_partitions",
                                                              "psum_bytes_per_partition", "psum_banks",
                                                              "psum_bank_bytes_per_partition", "dma_engines",
                                                              "dma_queues_per_engine", "dma_engine_gbytes_per_s",
                                                              "dma_partitions_per_engine", "dma_fixed_cost_ns",
                                                              "pe_rows", "pe_cols"}
        for f in fields:
            assert f in rec.sources, (rec, f)
            assert rec.sources[f].as_of


def test_prices_carry_their_as_of_date_and_missing_prices_are_none():
    for inst in trnsim.instances():
        if inst.on_demand_usd_per_hour is None:
            assert inst.price_as_of is None
        else:
            assert ISO_DATE.match(inst.price_as_of)
            assert inst.on_demand_usd_per_hour > 0
    assert trnsim.instance("trn1.32xlarge").on_demand_usd_per_hour == pytest.approx(21.50)
    assert trnsim.instance("trn1.32xlarge").price_as_of == "2023-03-21"
    assert trnsim.instance("trn2.48xlarge").on_demand_usd_per_hour is None  # no price in the sources found


# ---------------------------------------------------------------- derived consistency

@pytest.mark.parametrize("inst", trnsim.instances(), ids=lambda i: i.name)
def test_instance_totals_equal_chips_times_per_chip_values(inst):
    c = inst.chip_spec
    assert inst.neuroncores == inst.chips * c.neuroncores
    assert inst.device_memory_gib == pytest.approx(inst.chips * c.device_memory_gib)
    assert inst.device_memory_gbytes_per_s == pytest.approx(inst.chips * c.hbm_gbytes_per_s, rel=1e-3)
    for dtype, tflops in inst.vendor_peak_tflops.items():
        per_chip = c.sparse_tflops if dtype == "sparse" else c.peak_tflops.get(dtype, c.peak_tflops.get("fp16"))
        # vendor instance figures are rounded (e.g. 10.7 PF for 16 x 667 TF)
        assert tflops == pytest.approx(inst.chips * per_chip, rel=0.01), (dtype, tflops)
    assert inst.logical_neuroncores in (inst.neuroncores, inst.neuroncores // 2)


def test_topology_shape_covers_every_chip():
    for inst in trnsim.instances():
        n = 1
        for d in inst.topology_shape:
            n *= d
        assert n == inst.chips, inst.name


@pytest.mark.parametrize("version", ["NC-v2", "NC-v3", "NC-v4"])
def test_tensor_engine_peak_is_array_times_clock(version):
    core = trnsim.core(version)
    derived = core.tensor_peak_tflops("bf16")
    assert derived == pytest.approx(128 * 128 * 2 * core.engines["tensor"].clock_ghz * 1e9 / 1e12)
    assert derived == pytest.approx(core.tensor_tflops["bf16"], rel=0.01)
    assert core.tensor_peak_tflops("fp32") == pytest.approx(core.tensor_tflops["fp32"], rel=0.02)


def _documented_tolerance(chip_name: str) -> float:
    for c in trnsim.conflicts():
        if chip_name in c.tolerance:
            return c.tolerance[chip_name]
    return 0.01


@pytest.mark.parametrize("chip", [c for c in trnsim.chips() if c.neuroncore_version != "NC-v1"], ids=lambda c: c.name)
def test_chip_peak_vs_cores_within_documented_discrepancy(chip):
    """Chip BF16 peak vs neuroncores x derived per-core peak: the gap is listed in the conflicts, not hidden."""
    derived = chip.neuroncores * chip.core.tensor_peak_tflops("bf16")
    gap = abs(chip.peak_tflops["bf16"] - derived) / chip.peak_tflops["bf16"]
    tol = _documented_tolerance(chip.name)
    assert gap <= tol, f"{chip.name}: vendor {chip.peak_tflops['bf16']} vs derived {derived:.1f} ({gap:.1%} > {tol:.0%})"
    if gap > 0.01:  # any real discrepancy must be named in the conflicts list
        assert any(chip.display_name in c.item or chip.name in c.tolerance for c in trnsim.conflicts())


def test_dma_engines_per_chip_equal_cores_times_per_core():
    for c in trnsim.chips():
        if c.neuroncore_version == "NC-v1":
            assert c.dma_engines == c.neuroncores * c.core.dma_engines
            continue
        assert c.dma_engines == c.neuroncores * c.core.dma_engines


def test_sbuf_per_chip_matches_cores():
    for c in trnsim.chips():
        core = c.core
        if c.sbuf_mib is None or core.sbuf_bytes is None:
            continue
        assert c.sbuf_mib * 2**20 == c.neuroncores * core.sbuf_bytes


def test_psum_geometry_is_consistent():
    for core in trnsim.cores():
        if core.psum_banks is None:
            continue
        assert core.psum_banks * core.psum_bank_bytes_per_partition == core.psum_bytes_per_partition
        assert core.psum_bytes == 2 * 2**20
        assert core.tile.psum_bank_fmax * 4 == core.psum_bank_bytes_per_partition  # 512 fp32 per bank
        assert core.sbuf_usable_bytes_per_partition < core.sbuf_bytes_per_partition


def test_unit_conversion_keeps_published_values_traceable():
    trn1 = trnsim.chip("trn1")
    # published as 820 GiB/s; stored as GB/s
    assert trn1.hbm_gbytes_per_s == pytest.approx(820 * 2**30 / 1e9)
    assert trnsim.chip("trn2").hbm_gbytes_per_s == pytest.approx(2900)
    assert {a.source.key for a in trn1.alternatives["hbm_gbytes_per_s"]} >= {"N-ARCH2"}


def test_targets_map_to_the_right_core():
    assert {t.name: t.core.version for t in trnsim.targets()} == {
        "trn1": "NC-v2", "inf2": "NC-v2", "trn2": "NC-v3", "trn3": "NC-v4"}
    assert trnsim.target("trn3").core.tile.gemm_moving_fmax == 4096
    assert trnsim.target().name == "trn1"


def test_engine_cycles_to_ns():
    vec = trnsim.core("NC-v2").engines["vector"]
    assert vec.cycles_to_ns(64) == pytest.approx(64 / 1.12)
    with pytest.raises(CatalogError, match="not published"):
        trnsim.core("NC-v1").engines["tensor"].cycles_to_ns(1)


# ---------------------------------------------------------------- API behaviour

def test_names_and_aliases_round_trip():
    for c in trnsim.chips():
        assert trnsim.chip(c.name) is c
        for a in c.aliases:
            assert trnsim.chip(a) is c
            assert trnsim.chip(a.upper()) is c
    for i in trnsim.instances():
        assert trnsim.instance(i.name) is i
    assert [i.name for i in trnsim.instances("inf2")] == ["inf2.xlarge", "inf2.8xlarge", "inf2.24xlarge", "inf2.48xlarge"]


def test_unknown_names_list_valid_ones_and_suggest_the_closest():
    with pytest.raises(CatalogError) as e:
        trnsim.chip("trn4")
    assert "Valid names" in str(e.value) and "trainium" in str(e.value) and "Did you mean 'trn3'" in str(e.value)
    with pytest.raises(CatalogError, match="Did you mean 'trn1.32xlarge'"):
        trnsim.instance("trn1.32xlarg")
    with pytest.raises(CatalogError, match="unknown target"):
        trnsim.target("h100")
    with pytest.raises(ValueError):  # CatalogError is a ValueError
        trnsim.core("NC-v9")


def test_records_are_immutable_and_hashable():
    c = trnsim.chip("trn2")
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.neuroncores = 4  # type: ignore[misc]
    with pytest.raises(TypeError):
        c.peak_tflops["bf16"] = 1  # type: ignore[index]
    assert isinstance(c.peak_tflops, FrozenMap)
    assert len({c, trnsim.chip("trainium2")}) == 1


def test_printing_a_chip_is_readable():
    text = str(trnsim.chip("trn1"))
    assert "Trainium" in text and "2 x NeuronCore-v2" in text and "190 BF16 TFLOPS" in text


# ---------------------------------------------------------------- malformed data fails at load

def _broken(mutate):
    doc = copy.deepcopy(DOC)
    mutate(doc)
    return doc


def test_missing_field_names_file_field_and_expectation():
    doc = _broken(lambda d: d["chips"]["trainium"]["fields"].pop("neuroncores"))
    with pytest.raises(CatalogError, match=r"hardware.json: chips.trainium.neuroncores: expected \{value, unit, source\}"):
        parse_catalog(doc)


def test_wrong_type_is_reported():
    doc = _broken(lambda d: d["instances"]["trn1.32xlarge"]["fields"]["chips"].update(value="sixteen"))
    with pytest.raises(CatalogError, match="instances.trn1.32xlarge.chips: expected an integer count, got 'sixteen'"):
        parse_catalog(doc)


def test_unknown_unit_is_reported():
    doc = _broken(lambda d: d["chips"]["trainium2"]["fields"]["hbm_gbytes_per_s"].update(unit="MB/s"))
    with pytest.raises(CatalogError, match=r"hbm_gbytes_per_s.unit: expected one of .*GiB/s"):
        parse_catalog(doc)


def test_unknown_source_key_is_reported():
    doc = _broken(lambda d: d["chips"]["trainium2"]["fields"]["neuroncores"].update(source="NOPE"))
    with pytest.raises(CatalogError, match="source key 'NOPE' is not in the file's sources block"):
        parse_catalog(doc)


def test_required_value_may_not_be_null():
    doc = _broken(lambda d: d["chips"]["trainium"]["fields"]["neuroncores"].update(value=None))
    with pytest.raises(CatalogError, match="neuroncores: expected an integer count, got None"):
        parse_catalog(doc)


def test_data_dir_is_the_one_that_ships(tmp_path):
    assert (data_dir() / "hardware.json").is_file()
    json.loads((data_dir() / "hardware.json").read_text())
