"""The hardware catalog: chips, NeuronCore versions, kernel targets and instances.

Everything here is read from ``data/hardware.json``; this module only checks,
converts units and freezes the values into typed records. Field names carry their
unit: ``gbytes_per_s`` is 1e9 bytes per second, ``gbits_per_s`` 1e9 bits per
second, ``gib`` 2**30 bytes, ``mib`` 2**20 bytes. Values published in another unit
(GiB/s, TB/s, B/ns) are converted on load; the original value, unit and source stay
available through ``record.sources[field]`` and ``record.alternatives[field]``.

A value that no public source gives is ``None``, never a guess.

Public API (re-exported from ``trnsim``): :func:`chip`, :func:`chips`,
:func:`instance`, :func:`instances`, :func:`target`, :func:`targets`,
:func:`core`, :func:`cores`, :func:`conflicts`.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Iterator, Mapping

from trnsim.catalog.datafiles import CatalogError, load_json
from trnsim.catalog.validation import check_choice, type_error

HARDWARE_FILE = "hardware.json"


class FrozenMap(Mapping[str, Any]):
    """A read-only, hashable mapping used for the dict-valued fields of records."""

    __slots__ = ("_d",)

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        self._d = dict(data or {})

    def __getitem__(self, key: str) -> Any:
        return self._d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, _hashable(v)) for k, v in self._d.items())))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._d) == dict(other)

    def __repr__(self) -> str:
        return f"FrozenMap({self._d!r})"


def _hashable(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, Mapping):
        return FrozenMap(v)
    return v


@dataclass(frozen=True)
class Source:
    """Where a value comes from."""

    key: str
    citation: str
    url: str | None
    as_of: str  # ISO date of the source version read

    def __str__(self) -> str:
        return f"[{self.key}] {self.citation} (as of {self.as_of})"


@dataclass(frozen=True)
class Alternative:
    """A value another source gives for the same quantity (kept, not used)."""

    value: Any
    unit: str | None
    source: Source
    note: str = ""


@dataclass(frozen=True)
class EngineSpec:
    """One compute engine of a NeuronCore. ``clock_ghz`` is None where unpublished."""

    name: str
    clock_ghz: float | None
    elements_per_cycle: int | None  # 32-bit (and "other") dtypes, per partition lane group
    elements_per_cycle_16bit: int | None  # BF16/FP16 where the engine has a faster mode
    role: str

    def cycles_to_ns(self, cycles: float) -> float:
        """Convert engine cycles to nanoseconds at this engine's clock."""
        if self.clock_ghz is None:
            raise CatalogError(f"the {self.name} engine's clock is not published for this NeuronCore")
        return cycles / self.clock_ghz


@dataclass(frozen=True)
class TileLimits:
    """NKI tile-size limits (``nl.tile_size``) in elements."""

    pmax: int
    psum_bank_fmax: int
    gemm_stationary_fmax: int
    gemm_moving_fmax: int
    bn_stats_fmax: int
    vector_free_max_sbuf: int
    vector_free_max_psum: int
    tensor_transpose_max: tuple[int, int]
    vector_transpose_max: tuple[int, int]
    nl_gemm_moving_fmax: int | None = None   # nl.tile_size.gemm_moving_fmax where it differs from the ISA limit


@dataclass(frozen=True)
class CostConstants:
    """Constants used by the per-instruction cost formulas (hardware.md sections 9-10)."""

    min_ii_cycles: int
    mm_init_latency_cycles: int
    load_stationary_speedup: float
    static_overhead_cycles: int
    sbuf_access_overhead_cycles: int
    gpsimd_start_cycles: int
    dynamic_min_ii_cycles: int
    hwdge_instruction_ns: float | None
    dma_min_bytes_per_partition: int
    dma_saturate_bytes_per_partition: int
    dma_overhead_bound_bytes_per_partition: int
    stride_penalty_bytes: int


@dataclass(frozen=True)
class CoreSpec:
    """One NeuronCore version (NC-v1 .. NC-v4). Sizes in bytes, rates as named."""

    version: str
    generation: int
    engines: FrozenMap  # name -> EngineSpec
    pe_rows: int | None
    pe_cols: int | None
    tensor_tflops: FrozenMap  # dtype -> vendor TFLOPS per core
    sbuf_partitions: int | None
    sbuf_bytes_per_partition: int | None
    sbuf_usable_bytes_per_partition: int | None
    psum_partitions: int | None
    psum_bytes_per_partition: int | None
    psum_banks: int | None
    psum_bank_bytes_per_partition: int | None
    dma_engines: int
    dma_queues_per_engine: int | None
    dma_engine_gbytes_per_s: float | None
    dma_partitions_per_engine: int | None
    dma_fixed_cost_ns: float | None
    tile: TileLimits | None
    cost: CostConstants | None
    psum_min_align_bytes: int | None = None    # nl.tile_size.psum_min_align (byte alignment of a PSUM free address)
    sbuf_min_align_bytes: int | None = None    # nl.tile_size.sbuf_min_align
    sources: FrozenMap = field(default_factory=FrozenMap, compare=False, repr=False)
    alternatives: FrozenMap = field(default_factory=FrozenMap, compare=False, repr=False)

    @property
    def sbuf_bytes(self) -> int | None:
        if self.sbuf_partitions is None or self.sbuf_bytes_per_partition is None:
            return None
        return self.sbuf_partitions * self.sbuf_bytes_per_partition

    @property
    def sbuf_capacity_bytes_per_partition(self) -> int | None:
        """SBUF bytes per partition a kernel may use: the documented usable figure where the catalog has one,
        else the raw size (what the capacity rules, the scheduler and the planners charge against)."""
        return self.sbuf_usable_bytes_per_partition or self.sbuf_bytes_per_partition

    @property
    def psum_bytes(self) -> int | None:
        if self.psum_partitions is None or self.psum_bytes_per_partition is None:
            return None
        return self.psum_partitions * self.psum_bytes_per_partition

    def tensor_peak_tflops(self, dtype: str = "bf16") -> float:
        """Tensor Engine peak derived from the array and clock: rows x cols x 2 FLOP x clock.

        FP32 runs at a quarter of the BF16 rate (4 passes, hardware.md section 9).
        """
        clock = self.engines["tensor"].clock_ghz if "tensor" in self.engines else None
        if self.pe_rows is None or self.pe_cols is None or clock is None:
            raise CatalogError(f"{self.version}: Tensor Engine array size or clock is not published")
        per_cycle = self.pe_rows * self.pe_cols * 2
        factor = 0.25 if dtype in ("fp32", "float32") else 1.0
        return per_cycle * clock * 1e9 * factor / 1e12

    def __str__(self) -> str:
        if self.tile is None:
            return f"NeuronCore {self.version}: {dict(self.tensor_tflops)} TFLOPS (internals not published)"
        clocks = ", ".join(f"{n} {e.clock_ghz:g} GHz" for n, e in self.engines.items() if e.clock_ghz)
        return (
            f"NeuronCore {self.version}: {self.pe_rows}x{self.pe_cols} Tensor Engine; {clocks}; "
            f"SBUF {self.sbuf_partitions} x {self.sbuf_bytes_per_partition // 1024} KiB; "
            f"PSUM {self.psum_banks} banks x {self.psum_bank_bytes_per_partition // 1024} KiB per partition; "
            f"{self.dma_engines} DMA engines"
        )


@dataclass(frozen=True)
class ChipSpec:
    """One accelerator chip. ``hbm_gbytes_per_s`` is device-memory bandwidth (DRAM on Inferentia)."""

    name: str
    display_name: str
    aliases: tuple[str, ...]
    neuroncore_version: str
    neuroncores: int
    peak_tflops: FrozenMap  # dtype -> dense TFLOPS per chip (vendor)
    sparse_tflops: float | None
    int8_tops: float | None
    device_memory_gib: float
    memory_type: str
    hbm_gbytes_per_s: float
    hbm_stacks: int | None   # HBM stacks on the chip (None: DRAM, Inferentia)
    dma_gbytes_per_s: float | None
    dma_engines: int
    sbuf_mib: float | None
    collective_cores: int | None
    neuronlink_generation: str
    neuronlink_links: int
    neuronlink_gbytes_per_s: float
    base_clock_ghz: float | None
    sources: FrozenMap = field(default_factory=FrozenMap, compare=False, repr=False)
    alternatives: FrozenMap = field(default_factory=FrozenMap, compare=False, repr=False)

    @property
    def core(self) -> CoreSpec:
        """The NeuronCore version this chip uses."""
        return core(self.neuroncore_version)

    @property
    def hbm_gbytes_per_s_per_core(self) -> float:
        """Device-memory bandwidth shared evenly by the chip's NeuronCores."""
        return self.hbm_gbytes_per_s / self.neuroncores

    @property
    def hbm_stack_gbytes_per_s(self) -> float:
        """Bandwidth of one HBM stack (chip bandwidth / stacks), GB/s: neuron-profile's ``hbm_max_bandwidth``,
        the denominator of MBU and "MFU max achievable" ("the maximum HBM bandwidth of a HBM stack", the same for
        LNC1 and LNC2: profile-schema-reference). A chip without HBM stacks (DRAM) uses the per-core share."""
        if not self.hbm_stacks:
            return self.hbm_gbytes_per_s_per_core
        return self.hbm_gbytes_per_s / self.hbm_stacks

    def __str__(self) -> str:
        bf16 = self.peak_tflops.get("bf16")
        alias = f" ({', '.join(self.aliases)})" if self.aliases else ""
        return (
            f"{self.display_name}{alias}: {self.neuroncores} x NeuronCore-{self.neuroncore_version[3:]}, "
            f"{bf16:g} BF16 TFLOPS, {self.device_memory_gib:g} GiB {self.memory_type} at "
            f"{self.hbm_gbytes_per_s:,.0f} GB/s, {self.neuronlink_generation} "
            f"{self.neuronlink_gbytes_per_s:,.0f} GB/s per chip"
        )


@dataclass(frozen=True)
class TargetSpec:
    """A kernel target: the chip and its NeuronCore (``trn1``, ``inf2``, ``trn2``, ``trn3``)."""

    name: str
    chip: ChipSpec
    core: CoreSpec
    note: str = ""

    def __str__(self) -> str:
        return f"target {self.name}: {self.core.version} on {self.chip.display_name}"


@dataclass(frozen=True)
class InstanceSpec:
    """One EC2 instance type (or UltraServer). Totals are for the whole instance."""

    name: str
    display_name: str
    family: str
    chip: str  # chip name, see :func:`chip`
    chips: int
    neuroncores: int
    logical_neuroncores: int
    vcpus: int
    host_memory_gib: float
    device_memory_gib: float
    device_memory_gbytes_per_s: float
    neuronlink_gbytes_per_s_per_chip: float | None
    inter_instance_neuronlink_gbytes_per_s_per_chip: float | None
    topology: str  # single | chain | ring | torus2d | ultraserver-ring | switched
    topology_shape: tuple[int, ...]
    efa_gbits_per_s: float | None
    efa_up_to: bool
    efa_devices: int | None
    on_demand_usd_per_hour: float | None
    price_region: str | None
    price_as_of: str | None
    ri_effective_usd_per_hour: float | None
    vendor_peak_tflops: FrozenMap
    note: str = ""
    sources: FrozenMap = field(default_factory=FrozenMap, compare=False, repr=False)
    alternatives: FrozenMap = field(default_factory=FrozenMap, compare=False, repr=False)

    @property
    def chip_spec(self) -> ChipSpec:
        return chip(self.chip)

    def peak_tflops(self, dtype: str = "bf16") -> float | None:
        """Chips x per-chip vendor dense peak for ``dtype`` (None if the chip has no figure)."""
        per_chip = self.chip_spec.peak_tflops.get(dtype)
        return None if per_chip is None else self.chips * per_chip

    def __str__(self) -> str:
        price = (
            f"${self.on_demand_usd_per_hour:g}/h On-Demand (as of {self.price_as_of})"
            if self.on_demand_usd_per_hour is not None
            else "no On-Demand price in the sources"
        )
        return (
            f"{self.name}: {self.chips} x {self.chip_spec.display_name}, {self.neuroncores} NeuronCores, "
            f"{self.device_memory_gib:g} GiB device memory, {self.vcpus} vCPU, {price}"
        )


# --------------------------------------------------------------------------- parsing

_UNIT_FACTORS: dict[str, dict[str, float]] = {
    # target unit -> {published unit: multiply by}
    "GB/s": {"GB/s": 1.0, "B/ns": 1.0, "GiB/s": 2**30 / 1e9, "TB/s": 1000.0},
    "Gbit/s": {"Gbit/s": 1.0},
    "GiB": {"GiB": 1.0},
    "MiB": {"MiB": 1.0},
    "TFLOPS": {"TFLOPS": 1.0},
    "TOPS": {"TOPS": 1.0},
    "GHz": {"GHz": 1.0},
    "USD/hour": {"USD/hour": 1.0},
    "count": {"count": 1.0},
}


class _Reader:
    """Reads one record's ``fields`` block with file/record context for error messages."""

    def __init__(self, doc: Mapping[str, Any], filename: str, path: str, record: Mapping[str, Any]):
        self.doc = doc
        self.filename = filename
        self.path = path
        self.fields = record.get("fields")
        if not isinstance(self.fields, Mapping):
            self.fail("fields", "an object of fields", record.get("fields"))
        self.sources: dict[str, Source] = {}
        self.alternatives: dict[str, tuple[Alternative, ...]] = {}

    def fail(self, name: str, expected: str, got: Any) -> None:
        raise CatalogError(
            f"{self.filename}: {self.path}.{name}: expected {expected}, got {got!r}"
        )

    def source(self, key: Any, name: str) -> Source:
        return _source(self.doc, self.filename, key, f"{self.path}.{name}.source")

    def get(self, name: str, unit: str | None, kind: Callable[[Any], bool], expected: str,
            optional: bool = False) -> Any:
        entry = self.fields.get(name)
        if not isinstance(entry, Mapping) or "value" not in entry or "source" not in entry:
            self.fail(name, "{value, unit, source}", entry)
        src = self.source(entry["source"], name)
        self.sources[name] = src
        alts = []
        for a in entry.get("alternatives", []) or []:
            alts.append(Alternative(a.get("value"), a.get("unit"), self.source(a.get("source"), name), a.get("note", "")))
        if alts:
            self.alternatives[name] = tuple(alts)
        value = entry["value"]
        if value is None:
            if optional:
                return None
            self.fail(name, expected, value)
        if not kind(value):
            self.fail(name, expected, value)
        if unit is not None:
            published = entry.get("unit")
            factors = _UNIT_FACTORS[unit]
            if published not in factors:
                self.fail(name + ".unit", f"one of {sorted(factors)} (convertible to {unit})", published)
            if factors[published] != 1.0:
                value = _scale(value, factors[published])
        return value


def _scale(value: Any, factor: float) -> Any:
    if isinstance(value, Mapping):
        return {k: v * factor for k, v in value.items()}
    return value * factor


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_num_map(v: Any) -> bool:
    return isinstance(v, Mapping) and all(isinstance(k, str) and _is_num(x) for k, x in v.items())


def _source(doc: Mapping[str, Any], filename: str, key: Any, where: str) -> Source:
    sources = doc.get("sources", {})
    # a field may cite several keys ("N-DMA; N-DMABW"); the first is the primary source
    first = key.split(";")[0].strip() if isinstance(key, str) else key
    entry = sources.get(first) if isinstance(first, str) else None
    if not isinstance(entry, Mapping):
        raise CatalogError(
            f"{filename}: {where}: source key {key!r} is not in the file's sources block "
            f"(known keys: {', '.join(sorted(sources))})"
        )
    for part in ("citation", "as_of"):
        if not isinstance(entry.get(part), str):
            raise CatalogError(f"{filename}: sources.{first}.{part}: expected a string, got {entry.get(part)!r}")
    citation = entry["citation"] if first == key else f"{entry['citation']} (and {key})"
    return Source(key=first, citation=citation, url=entry.get("url"), as_of=entry["as_of"])


def _parse_chip(doc, filename, name, rec) -> ChipSpec:
    r = _Reader(doc, filename, f"chips.{name}", rec)
    return ChipSpec(
        name=name,
        display_name=rec.get("display_name") or name,
        aliases=tuple(rec.get("aliases", ())),
        neuroncore_version=r.get("neuroncore_version", None, _is_str, "a NeuronCore version such as 'NC-v2'"),
        neuroncores=r.get("neuroncores", "count", _is_int, "an integer count"),
        peak_tflops=FrozenMap(r.get("peak_tflops", "TFLOPS", _is_num_map, "a map dtype -> TFLOPS")),
        sparse_tflops=r.get("sparse_tflops", "TFLOPS", _is_num, "a number", optional=True),
        int8_tops=r.get("int8_tops", "TOPS", _is_num, "a number", optional=True),
        device_memory_gib=r.get("device_memory_gib", "GiB", _is_num, "a number of GiB"),
        memory_type=r.get("memory_type", None, _is_str, "'HBM' or 'DRAM'"),
        hbm_gbytes_per_s=r.get("hbm_gbytes_per_s", "GB/s", _is_num, "a bandwidth"),
        hbm_stacks=r.get("hbm_stacks", "count", _is_int, "an integer count", optional=True),
        dma_gbytes_per_s=r.get("dma_gbytes_per_s", "GB/s", _is_num, "a bandwidth", optional=True),
        dma_engines=r.get("dma_engines", "count", _is_int, "an integer count"),
        sbuf_mib=r.get("sbuf_mib", "MiB", _is_num, "a number of MiB", optional=True),
        collective_cores=r.get("collective_cores", "count", _is_int, "an integer count", optional=True),
        neuronlink_generation=r.get("neuronlink_generation", None, _is_str, "a NeuronLink generation"),
        neuronlink_links=r.get("neuronlink_links", "count", _is_int, "an integer count"),
        neuronlink_gbytes_per_s=r.get("neuronlink_gbytes_per_s", "GB/s", _is_num, "a bandwidth"),
        base_clock_ghz=r.get("base_clock_ghz", "GHz", _is_num, "a clock in GHz", optional=True),
        sources=FrozenMap(r.sources),
        alternatives=FrozenMap(r.alternatives),
    )


def _parse_core(doc, filename, version, rec) -> CoreSpec:
    r = _Reader(doc, filename, f"neuroncores.{version}", rec)
    eng_raw = r.get("engines", None, lambda v: isinstance(v, Mapping), "a map engine -> {clock_ghz, ...}")
    engines = {}
    for ename, e in eng_raw.items():
        try:
            engines[ename] = EngineSpec(ename, e["clock_ghz"], e["elements_per_cycle"], e["elements_per_cycle_16bit"], e["role"])
        except (KeyError, TypeError):
            r.fail(f"engines.{ename}", "{clock_ghz, elements_per_cycle, elements_per_cycle_16bit, role}", e)
    pe = r.get("pe_array", None, lambda v: isinstance(v, list) and len(v) == 2 and all(map(_is_int, v)), "[rows, cols]", optional=True)
    sbuf = r.get("sbuf", None, lambda v: isinstance(v, Mapping), "{partitions, bytes_per_partition}", optional=True) or {}
    psum = r.get("psum", None, lambda v: isinstance(v, Mapping), "{partitions, bytes_per_partition, banks, ...}", optional=True) or {}
    dma = r.get("dma", None, lambda v: isinstance(v, Mapping), "{engines, queues_per_engine, ...}")
    usable = r.get("sbuf_usable_bytes_per_partition", None, _is_int, "an integer byte count", optional=True)
    tile_raw = r.get("tile", None, lambda v: isinstance(v, Mapping), "a map of tile limits", optional=True)
    cost_raw = r.get("cost", None, lambda v: isinstance(v, Mapping), "a map of cost constants", optional=True)
    align = r.get("tile_align", None,
                  lambda v: isinstance(v, Mapping) and set(v) == {"psum_min_align", "sbuf_min_align"}
                  and all(_is_int(x) and x >= 1 for x in v.values()),
                  "{psum_min_align, sbuf_min_align}: byte alignments >= 1", optional=True) or {}
    for fname in ("psum_min_align_bytes", "sbuf_min_align_bytes"):    # the two fields share the record's source
        r.sources[fname] = r.sources["tile_align"]
    tile = cost = None
    if tile_raw is not None:
        try:
            tile = TileLimits(**{k: tuple(v) if isinstance(v, list) else v for k, v in tile_raw.items()})
        except TypeError as exc:
            r.fail("tile", f"exactly the TileLimits fields ({exc})", sorted(tile_raw))
    if cost_raw is not None:
        try:
            cost = CostConstants(**cost_raw)
        except TypeError as exc:
            r.fail("cost", f"exactly the CostConstants fields ({exc})", sorted(cost_raw))
    for key in ("engines",):
        if key not in dma:
            r.fail("dma.engines", "an integer count", None)
    return CoreSpec(
        version=version,
        generation=int(rec.get("generation", 0)),
        engines=FrozenMap(engines),
        pe_rows=pe[0] if pe else None,
        pe_cols=pe[1] if pe else None,
        tensor_tflops=FrozenMap(r.get("tensor_tflops", "TFLOPS", _is_num_map, "a map dtype -> TFLOPS")),
        sbuf_partitions=sbuf.get("partitions"),
        sbuf_bytes_per_partition=sbuf.get("bytes_per_partition"),
        sbuf_usable_bytes_per_partition=usable,
        psum_partitions=psum.get("partitions"),
        psum_bytes_per_partition=psum.get("bytes_per_partition"),
        psum_banks=psum.get("banks"),
        psum_bank_bytes_per_partition=psum.get("bank_bytes_per_partition"),
        dma_engines=dma["engines"],
        dma_queues_per_engine=dma.get("queues_per_engine"),
        dma_engine_gbytes_per_s=dma.get("engine_gbytes_per_s"),
        dma_partitions_per_engine=dma.get("partitions_per_engine"),
        dma_fixed_cost_ns=dma.get("fixed_cost_ns"),
        tile=tile,
        cost=cost,
        psum_min_align_bytes=align.get("psum_min_align"),
        sbuf_min_align_bytes=align.get("sbuf_min_align"),
        sources=FrozenMap(r.sources),
        alternatives=FrozenMap(r.alternatives),
    )


def _parse_instance(doc, filename, name, rec) -> InstanceSpec:
    r = _Reader(doc, filename, f"instances.{name}", rec)
    chip_name = rec.get("chip")
    if chip_name not in doc.get("chips", {}):
        r.fail("chip", f"one of the chips {sorted(doc.get('chips', {}))}", chip_name)
    price = r.get("on_demand_usd_per_hour", "USD/hour", _is_num, "a price in USD/hour", optional=True)
    price_src = r.sources["on_demand_usd_per_hour"]
    return InstanceSpec(
        name=name,
        display_name=rec.get("display_name") or name,
        family=rec.get("family", ""),
        chip=chip_name,
        chips=r.get("chips", "count", _is_int, "an integer count"),
        neuroncores=r.get("neuroncores", "count", _is_int, "an integer count"),
        logical_neuroncores=r.get("logical_neuroncores", "count", _is_int, "an integer count"),
        vcpus=r.get("vcpus", "count", _is_int, "an integer count"),
        host_memory_gib=r.get("host_memory_gib", "GiB", _is_num, "a number of GiB"),
        device_memory_gib=r.get("device_memory_gib", "GiB", _is_num, "a number of GiB"),
        device_memory_gbytes_per_s=r.get("device_memory_gbytes_per_s", "GB/s", _is_num, "a bandwidth"),
        neuronlink_gbytes_per_s_per_chip=r.get("neuronlink_gbytes_per_s_per_chip", "GB/s", _is_num, "a bandwidth", optional=True),
        inter_instance_neuronlink_gbytes_per_s_per_chip=r.get(
            "inter_instance_neuronlink_gbytes_per_s_per_chip", "GB/s", _is_num, "a bandwidth", optional=True),
        topology=r.get("topology", None, lambda v: v in _TOPOLOGIES, f"one of {sorted(_TOPOLOGIES)}"),
        topology_shape=tuple(r.get("topology_shape", None, lambda v: isinstance(v, list) and all(map(_is_int, v)), "a list of integers")),
        efa_gbits_per_s=r.get("efa_gbits_per_s", "Gbit/s", _is_num, "a bandwidth in Gbit/s", optional=True),
        efa_up_to=bool(r.get("efa_up_to", None, lambda v: isinstance(v, bool), "true or false")),
        efa_devices=r.get("efa_devices", "count", _is_int, "an integer count", optional=True),
        on_demand_usd_per_hour=price,
        price_region=r.get("price_region", None, _is_str, "a region code", optional=True),
        price_as_of=price_src.as_of if price is not None else None,
        ri_effective_usd_per_hour=r.get("ri_effective_usd_per_hour", "USD/hour", _is_num, "a price in USD/hour", optional=True),
        vendor_peak_tflops=FrozenMap(r.get("vendor_peak_tflops", "TFLOPS", _is_num_map, "a map dtype -> TFLOPS", optional=True) or {}),
        note=rec.get("note", ""),
        sources=FrozenMap(r.sources),
        alternatives=FrozenMap(r.alternatives),
    )


_TOPOLOGIES = {"single", "chain", "ring", "torus2d", "ultraserver-ring", "switched"}


@dataclass(frozen=True)
class Conflict:
    """Sources that disagree about one quantity, and which value the simulator uses."""

    item: str
    values: tuple[tuple[str, str], ...]  # (value as published, source keys)
    used: str
    why: str
    tolerance: FrozenMap


@dataclass(frozen=True)
class Catalog:
    chips: FrozenMap
    cores: FrozenMap
    targets: FrozenMap
    instances: FrozenMap
    conflicts: tuple[Conflict, ...]
    sources: FrozenMap


def parse_catalog(doc: Mapping[str, Any], filename: str = HARDWARE_FILE) -> Catalog:
    """Check and convert a parsed hardware file. Raises CatalogError naming file, field and expectation."""
    for section in ("sources", "chips", "neuroncores", "targets", "instances"):
        if not isinstance(doc.get(section), Mapping):
            raise CatalogError(f"{filename}: top-level '{section}': expected an object, got {doc.get(section)!r}")
    sources = {k: _source(doc, filename, k, f"sources.{k}") for k in doc["sources"]}
    chips_ = {n: _parse_chip(doc, filename, n, rec) for n, rec in doc["chips"].items()}
    cores_ = {v: _parse_core(doc, filename, v, rec) for v, rec in doc["neuroncores"].items()}
    for c in chips_.values():
        if c.neuroncore_version not in cores_:
            raise CatalogError(
                f"{filename}: chips.{c.name}.fields.neuroncore_version: expected one of {sorted(cores_)}, "
                f"got {c.neuroncore_version!r}"
            )
    targets_ = {}
    for tname, t in doc["targets"].items():
        cname = t.get("chip") if isinstance(t, Mapping) else None
        if cname not in chips_:
            raise CatalogError(f"{filename}: targets.{tname}.chip: expected one of {sorted(chips_)}, got {cname!r}")
        chip_ = chips_[cname]
        targets_[tname] = TargetSpec(tname, chip_, cores_[chip_.neuroncore_version], t.get("note", ""))
    instances_ = {n: _parse_instance(doc, filename, n, rec) for n, rec in doc["instances"].items()}
    conflicts_ = tuple(
        Conflict(
            item=c["item"],
            values=tuple((str(v["value"]), v["source"]) for v in c["values"]),
            used=c.get("used", ""),
            why=c.get("why", ""),
            tolerance=FrozenMap(c.get("tolerance", {})),
        )
        for c in doc.get("conflicts", [])
    )
    return Catalog(FrozenMap(chips_), FrozenMap(cores_), FrozenMap(targets_), FrozenMap(instances_), conflicts_, FrozenMap(sources))


@lru_cache(maxsize=1)
def catalog() -> Catalog:
    """The parsed catalog (read from data/hardware.json once)."""
    return parse_catalog(load_json(HARDWARE_FILE))


def _lookup(kind: str, name: str, table: Mapping[str, Any], aliases: Mapping[str, str] | None = None) -> Any:
    if not isinstance(name, str):
        raise type_error(CatalogError)(f"{kind} name must be a string, got {name!r} ({type(name).__name__})")
    key = name.strip()
    if key in table:
        return table[key]
    lowered = key.lower()
    for k in table:
        if k.lower() == lowered:
            return table[k]
    if aliases and lowered in aliases:
        return table[aliases[lowered]]
    valid = sorted(table) + sorted(aliases or {})
    close = difflib.get_close_matches(lowered, [v.lower() for v in valid], n=1, cutoff=0.5)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise CatalogError(f"unknown {kind} {name!r}. Valid names: {', '.join(valid)}.{hint}")


def _chip_aliases() -> dict[str, str]:
    return {a.lower(): c.name for c in catalog().chips.values() for a in c.aliases}


def chip(name: str) -> ChipSpec:
    """A chip by name or alias: 'trainium' or 'trn1', 'inferentia2' or 'inf2', ..."""
    return _lookup("chip", name, catalog().chips, _chip_aliases())


def chips() -> tuple[ChipSpec, ...]:
    """All chips, oldest first."""
    return tuple(catalog().chips.values())


def core(version: str) -> CoreSpec:
    """A NeuronCore version: 'NC-v1' .. 'NC-v4' (also 'v2' or 2)."""
    if isinstance(version, bool) or not isinstance(version, (int, str)):
        raise type_error(CatalogError)(f"version={version!r}: must be a NeuronCore version such as 'NC-v2', 'v2' or 2")
    if isinstance(version, int):
        version = f"NC-v{version}"
    if isinstance(version, str) and version.lower().startswith("v"):
        version = "NC-" + version.lower()
    return _lookup("NeuronCore version", version, catalog().cores)


def cores() -> tuple[CoreSpec, ...]:
    return tuple(catalog().cores.values())


def target(name: str = "trn1") -> TargetSpec:
    """A kernel target: 'trn1' (default), 'inf2', 'trn2', 'trn3'."""
    return _lookup("target", name, catalog().targets)


def targets() -> tuple[TargetSpec, ...]:
    return tuple(catalog().targets.values())


def instance(name: str) -> InstanceSpec:
    """An instance type, e.g. 'trn1.32xlarge', 'inf2.48xlarge', 'trn2.ultraserver'."""
    return _lookup("instance", name, catalog().instances)


def instances(family: str | None = None) -> tuple[InstanceSpec, ...]:
    """All instance records, optionally only one family ('inf2', 'trn1', ...)."""
    if family is not None:
        known = sorted({i.family for i in catalog().instances.values()})
        check_choice("family", family, known, error=CatalogError, fix="or None for every instance")
    return tuple(i for i in catalog().instances.values() if family is None or i.family == family)


def conflicts() -> tuple[Conflict, ...]:
    """Every documented disagreement between sources, with the value used and why."""
    return catalog().conflicts
