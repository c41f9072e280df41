"""Type, unit and range rules for every number in ``data/*.json``, checked when a file is loaded.

:func:`trnsim.catalog.datafiles.load_json` calls :func:`validate_document` once per file, so a
corrupted data file (a negative bandwidth, a zero clock, a NaN price, ``"32"`` where a count
is meant, a model without ``n_heads``) is refused at load with the file, the field path and
the rule, instead of producing a plausible-looking wrong answer later.

How a number finds its rule (first match wins):

1. a **key rule** (:data:`KEY_RULES`) for the leaf's own key or an enclosing key, walking up
   to the innermost ``{value, unit, source}`` record (list indices are skipped; without a
   record, at most two keys up). Cells of a published table (``columns`` + ``rows``) are
   named by their column;
2. the **unit rule** (:data:`UNIT_RULES`) for that record's ``unit`` (text after `` (`` or
   `` per `` is a comment: ``"GB/s (approximate)"`` is ``GB/s``).

A number that no rule covers is refused too ("no schema rule"), so a new data field must come
with its rule. The default physical range is *positive and finite*; the few fields that may
legitimately be zero, negative or text say so in their rule, with the reason (see
:data:`NON_POSITIVE_OR_TEXT`).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator, Mapping


@dataclass(frozen=True)
class Rule:
    """What a field must be: ``kind`` is 'number', 'integer', 'text' or 'bool'.

    Numbers must be finite and lie in the range (``min_open``: strictly above ``min_value``).
    ``nullable``: JSON null is allowed (the value is not published). ``allow_text``: a quoted
    text is allowed in place of the number. ``reason`` explains any non-positive range or text.
    """

    what: str
    kind: str = "number"
    min_value: float | None = 0.0
    min_open: bool = True
    max_value: float | None = None
    nullable: bool = False
    allow_text: bool = False
    reason: str = ""
    text_values: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.kind in ("text", "bool"):
            return f"{self.what} ({'a string' if self.kind == 'text' else 'true or false'})"
        lo = "-inf" if self.min_value is None else f"{self.min_value:g}"
        hi = "inf" if self.max_value is None else f"{self.max_value:g}"
        left = "(" if (self.min_open or self.min_value is None) else "["
        kind = "an integer" if self.kind == "integer" else "a finite number"
        extra = " or null" if self.nullable else ""
        return f"{self.what}: {kind} in {left}{lo}, {hi}]{extra}"

    def check(self, v: Any) -> str | None:
        """None if ``v`` obeys the rule, else what is wrong."""
        if v is None:
            return None if self.nullable else "a value is required (null given)"
        if self.kind == "text":
            return None if isinstance(v, str) else "expected a string"
        if self.kind == "bool":
            return None if isinstance(v, bool) else "expected true or false"
        if isinstance(v, str) and self.allow_text:
            return None
        if isinstance(v, str) and self.text_values:
            return None if v in self.text_values else f"expected a number or one of {list(self.text_values)}"
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return f"expected {'an integer' if self.kind == 'integer' else 'a number'}, not {type(v).__name__}"
        if not math.isfinite(v):
            return "must be finite"
        if self.kind == "integer" and not isinstance(v, int):
            return "expected an integer (a count), not a float"
        if self.min_value is not None and (v <= self.min_value if self.min_open else v < self.min_value):
            return "out of range"
        if self.max_value is not None and v > self.max_value:
            return "out of range"
        return None


def _pos(what: str, **kw: Any) -> Rule:
    return Rule(what, "number", **kw)


def _count(what: str, **kw: Any) -> Rule:
    return Rule(what, "integer", min_value=1, min_open=False, **kw)


TEXT = Rule("text", "text", nullable=True)
BOOL = Rule("a flag", "bool")
LATITUDE = Rule("latitude in degrees", "number", min_value=-90.0, min_open=False, max_value=90.0,
                reason="latitudes south of the equator are negative and the equator is 0")
LONGITUDE = Rule("longitude in degrees", "number", min_value=-180.0, min_open=False, max_value=180.0,
                 reason="longitudes west of Greenwich are negative and Greenwich is 0")
YEAR = Rule("calendar year", "integer", min_value=1990, min_open=False, max_value=2100, nullable=True)
FRACTION = _pos("fraction", max_value=1.0)
PERCENT = _pos("percentage", max_value=100.0)
CLOCK = _pos("clock in GHz", max_value=10.0)
QUOTED = Rule("value quoted by a source", "number", allow_text=True,
              reason="conflict lists quote each source's figure as published, often as text")
MEASURED = _pos("published measurement", nullable=True)

KEY_RULES: tuple[tuple[str, Rule], ...] = (
    (r"lat", LATITUDE),
    (r"lon", LONGITUDE),
    (r"year", YEAR),
    (r"generation", _count("NeuronCore generation")),
    (r"n_layers|d_model|n_heads|n_kv_heads|head_dim|d_ff|vocab_size|max_seq_len|attention_dim",
     _count("model dimension")),
    (r"seq_len|tp|pp|gpus|global_batch|chips|max_tp|devices_per_node", _count("count")),
    (r".*clock_ghz", CLOCK),
    (r".*elements_per_cycle(_16bit)?", _count("elements per cycle", nullable=True)),
    (r"engines|queues_per_engine|partitions_per_engine|partitions|banks", _count("count")),
    (r"engine_gbytes_per_s", _pos("bandwidth in GB/s")),
    (r".*_ns", _pos("time in ns")),
    (r".*_cycles", _count("cycles")),
    (r".*_pct|percent_peak", PERCENT),
    (r".*efficiency|.*utilisation", FRACTION),
    (r"tolerance", _pos("relative tolerance", max_value=1.0)),
    (r"route_factor_(low|high)", _pos("route factor (route length / great circle)", min_value=1.0, min_open=False,
                                      max_value=10.0)),
    (r"values", QUOTED),
    # counts added with the NxD/transformers-neuronx recipes and the kernel timing model
    (r"ring|mesh|recursive_halving_doubling|recursive_doubling",
     _count("rank count the algorithm runs at", text_values=("any",))),
    (r"all_gather|reduce_scatter|all_reduces_per_layer|dependent_ops_per_layer|stage|tiles_k"
     r"|matmul_instruction_count|dma_queues_per_engine", _count("count")),
    (r"scalar|vector", _count("engine passes")),
    (r"float32|tfloat32|bfloat16|float16|float8_e4m3|float8_e5m2", _count("Tensor Engine passes per matmul")),
    (r"load_stationary_speedup", _pos("speed-up factor")),
    (r"bytes_per_partition", _count("bytes")),
    (r"fraction_of_peak", FRACTION),
    (r"latency_ms", _pos("time in ms")),
    (r"name|kind", TEXT),
    (r"tflops_per_gpu|peak_tflops_per_chip|tokens_per_s|train_tokens|days|step_time_s", MEASURED),
    (r"bias|tied_embeddings|dropout|parallel_layers|efa_up_to|is_personal_data|requires_tia", BOOL),
    (r"model|mlp|norm|position|family|display_name|system|recompute|source|unit|citation|as_of|note|url|role", TEXT),
)
"""(regular expression for a key, rule). Keys are matched whole."""

_KEY_RES = tuple((re.compile(p), r) for p, r in KEY_RULES)

_INT_UNITS = ("count", "bytes", "cycles", "NICs", "CC-Cores", "elements", "PE rows x cols", "chips per dimension",
              "degrees", "data subjects", "days", "hours", "years", "byte-equivalents")
UNIT_RULES: dict[str, Rule] = {
    "x physics decode time": _pos("calibrated residual factor (leave-one-out)", max_value=10.0),
    **{u: _count(u) for u in _INT_UNITS},
    **{u: _pos(f"time in {u}") for u in ("us", "ms", "ns")},
    **{u: _pos(f"bandwidth in {u}") for u in ("GB/s", "GiB/s", "TB/s", "B/ns", "Gbit/s")},
    **{u: _pos(f"capacity in {u}") for u in ("GiB", "MiB", "GB")},
    "TFLOPS": _pos("peak rate in TFLOPS"),
    "activation input bound": _pos("bound of an activation's valid input (or of its magnitude)"),
    "TOPS": _pos("peak rate in TOPS"),
    "GHz": CLOCK,
    "USD/hour": _pos("price in USD/hour", nullable=True),
    "MYR": _pos("amount in MYR"),
    "fraction": FRACTION,
    "DMA queues fed by hardware DGE trigger engines": _count("DMA queues fed by hardware DGE trigger engines"),
    "ratio": _pos("ratio >= 1 (PUE, route factor)", min_value=1.0, min_open=False, max_value=10.0),
    "x": _pos("speed-up factor", min_value=1.0, min_open=False),
    "us/km": _pos("propagation delay in us/km"),
    "km": _pos("distance in km"),
    "gCO2e/kWh": _pos("grid intensity in gCO2e/kWh", max_value=2000.0),
    "gCO2/kWh": _pos("grid intensity in gCO2/kWh", max_value=2000.0),
    "W": _pos("power in W"),
    "parameters": _pos("parameter count"),
    "bytes/param": _pos("bytes per parameter"),
    "bytes/element": _pos("bytes per element"),
    "tokens/parameter": _pos("tokens per parameter"),
    "deg": LONGITUDE,
    "GHz; elements/cycle": _pos("engine figure"),
    "engine cycles unless named": _pos("cost constant"),
}
"""Rule for a number by the unit of its ``{value, unit, source}`` record."""

NON_POSITIVE_OR_TEXT: dict[str, str] = {
    r.what: r.reason for _, r in KEY_RULES + tuple(UNIT_RULES.items())
    if r.kind in ("number", "integer") and (r.allow_text or r.min_value is None or r.min_value < 0)
}
"""Rules that accept zero, negative or text values, with the reason (everything else must be > 0)."""

REQUIRED: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "models.json": (("models.*", ("display_name", "family", "source", "n_layers", "d_model", "n_heads", "n_kv_heads",
                                  "head_dim", "d_ff", "vocab_size", "max_seq_len", "mlp", "norm", "bias",
                                  "tied_embeddings", "position", "dropout", "parallel_layers")),),
    "regions.json": (("regions.*", ("name", "city", "country", "country_code", "lat", "lon", "offerings")),
                     ("user_sites.*", ("lat", "lon")),
                     ("gpus.*", ("memory_gbytes", "memory_gbytes_per_s", "bf16_dense_tflops")),
                     ("gpu_instances.*", ("gpu", "gpus"))),
    "training.json": (("gpu_systems.*", ("devices_per_node", "peak_tflops", "memory_gib", "hbm_gbytes_per_s",
                                         "intra_node_gbytes_per_s", "intra_node_efficiency", "intra_node_latency_us",
                                         "inter_node_gbytes_per_s", "inter_node_efficiency", "inter_node_latency_us",
                                         "max_tp")),
                      ("precision.*", ("weight_bytes", "grad_bytes", "optimizer_bytes", "activation_bytes"))),
}
"""Keys every record under a path pattern must have (``*`` is one key), per file."""

CHOICES: dict[str, dict[str, tuple[str, ...]]] = {
    "models.json": {"mlp": ("gelu", "swiglu"), "norm": ("layernorm", "rmsnorm"),
                    "position": ("learned", "rope", "relative")},
}
"""Allowed strings for text fields that select a formula, per file."""


def _unit_rule(unit: Any) -> Rule | None:
    if not isinstance(unit, str):
        return None
    if unit in UNIT_RULES:
        return UNIT_RULES[unit]
    base = re.split(r" \(| per | for | vs | of ", unit, maxsplit=1)[0].strip()
    return UNIT_RULES.get(base)


def _is_record(x: Any) -> bool:
    return isinstance(x, Mapping) and "value" in x and "source" in x


@lru_cache(maxsize=None)
def _key_rule(key: str) -> Rule | None:
    for rx, rule in _KEY_RES:
        if rx.fullmatch(key):
            return rule
    return None


def rule_for(path: tuple[str, ...], record_depth: int | None, unit: Any) -> Rule | None:
    """The rule of the leaf at ``path`` (``record_depth``: index in ``path`` of the innermost record's key)."""
    named = 0
    for i in range(len(path) - 1, -1, -1):
        key = path[i]
        if key == "#":
            continue
        rule = _key_rule(key)
        if rule is not None:
            return rule
        named += 1
        if record_depth is not None and i <= record_depth:
            break
        if record_depth is None and named >= 2:
            break
    return _unit_rule(unit) if record_depth is not None else None


Leaf = tuple[tuple[str, ...], Any, "Rule | None"]


def leaves(doc: Any) -> Iterator[Leaf]:
    """Every scalar of ``doc`` except the ``sources`` and ``meta`` blocks: (path, value, rule)."""

    def walk(x: Any, path: tuple[str, ...], rec_depth: int | None, unit: Any) -> Iterator[Leaf]:
        if isinstance(x, Mapping):
            if _is_record(x):
                # the record's rules apply to its value; its unit, source, note, year... have key rules
                for k, v in x.items():
                    if k == "value":
                        yield from walk(v, path + ("value",), len(path) - 1, x.get("unit"))
                    else:
                        yield from walk(v, path + (str(k),), None, None)
                return
            columns = x.get("columns") if isinstance(x.get("columns"), list) else None
            for k, v in x.items():
                if k == "rows" and columns and isinstance(v, list):
                    for row in v:
                        if isinstance(row, list):
                            for col, cell in zip(columns, row):
                                yield from walk(cell, path + ("rows", "#", str(col)), rec_depth, unit)
                        else:
                            yield path + ("rows", "#"), row, None
                    continue
                yield from walk(v, path + (str(k),), rec_depth, unit)
        elif isinstance(x, list):
            for v in x:
                yield from walk(v, path + ("#",), rec_depth, unit)
        else:
            yield path, x, rule_for(path, rec_depth, unit)

    for top, v in (doc.items() if isinstance(doc, Mapping) else ()):
        if top in ("sources", "meta"):
            continue
        yield from walk(v, (str(top),), None, None)


def _fmt_path(path: tuple[str, ...]) -> str:
    return ".".join(path).replace(".#", "[]")


def problems(name: str, doc: Any) -> Iterator[str]:
    """Every broken rule in ``doc`` (the parsed ``data/<name>``), as 'path: rule, got value'."""
    if not isinstance(doc, Mapping):
        yield f"top level: expected a JSON object, got {type(doc).__name__}"
        return
    choices = CHOICES.get(name, {})
    for path, v, rule in leaves(doc):
        if choices and path[-1] in choices and isinstance(v, str) and v not in choices[path[-1]]:
            yield f"{_fmt_path(path)}: must be one of {choices[path[-1]]}, got {v!r}"
        if v is None and "value" in path:
            continue  # a {value: null} record: the value is not published (never a guess)
        is_number = isinstance(v, (int, float)) and not isinstance(v, bool)
        if rule is None:
            if is_number:
                yield f"{_fmt_path(path)}: no schema rule covers this number (add one to trnsim/catalog/dataschema.py), got {v!r}"
            continue
        bad = rule.check(v)
        if bad:
            yield f"{_fmt_path(path)}: {bad}; rule: {rule.describe()}; got {v!r}"
    for pattern, keys in REQUIRED.get(name, ()):
        for path, rec in _match(doc, tuple(pattern.split("."))):
            if not isinstance(rec, Mapping):
                yield f"{_fmt_path(path)}: expected an object with {', '.join(keys)}, got {rec!r}"
                continue
            missing = [k for k in keys if k not in rec]
            if missing:
                yield f"{_fmt_path(path)}: required field(s) {', '.join(missing)} missing"


def _match(doc: Any, pattern: tuple[str, ...], path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if not pattern:
        yield path, doc
        return
    if not isinstance(doc, Mapping):
        return
    head, rest = pattern[0], pattern[1:]
    keys = list(doc) if head == "*" else ([head] if head in doc else [])
    for k in keys:
        yield from _match(doc[k], rest, path + (str(k),))


def validate_document(name: str, doc: Any, error: type[Exception] = ValueError, where: Any = None) -> None:
    """Raise ``error`` naming ``data/<name>`` (or ``where``), the first broken fields and their rules."""
    found = []
    for p in problems(name, doc):
        found.append(p)
        if len(found) >= 5:
            break
    if found:
        more = " (first 5 shown)" if len(found) >= 5 else ""
        raise error(
            f"data file {where or name} failed validation{more}:\n  " + "\n  ".join(found)
            + f"\nRestore data/{name} from the repository (git checkout data/{name}) or fix the field as the rule says."
        )
