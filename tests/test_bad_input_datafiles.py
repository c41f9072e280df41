"""Corrupting a number of any data file to a negative, zero, NaN or string value is refused at load,
with the file and the field named (issue 16).

The test walks the numeric leaves of every ``data/*.json`` and corrupts every one of them, leaf by
leaf, in each of the four ways (about 15 s in all). ``FULL_LIMIT`` keeps a sampled mode (every field
kind plus a seeded sample) for files that may one day grow too large to walk on every run.
A few fields may legitimately be zero, negative or text; they are listed in ALLOWED below with
the reason, and the schema must declare exactly those exceptions.
"""
import json
import random
from pathlib import Path

import pytest

from trnsim.catalog import dataschema
from trnsim.catalog.datafiles import CatalogError, DataFileError, data_dir, load_json

from datafile_fixture import tmp_data  # noqa: F401  (fixture)

FILES = sorted(p.name for p in Path(data_dir()).glob("*.json"))
KINDS = ("negative", "zero", "nan", "string")
FULL_LIMIT = 10**6  # every numeric leaf of every file (hardware.json, models.json included)
SAMPLE = 100

ALLOWED = {
    # rule -> corruptions the rule accepts, and why
    "latitude in degrees": {"negative", "zero"},  # south of the equator is negative, the equator is 0
    "longitude in degrees": {"negative", "zero"},  # west of Greenwich is negative, Greenwich is 0
    "value quoted by a source": {"string"},  # conflict lists quote each source's figure, often as text
}


def _numeric_leaves(doc):
    """(container, key, display path) of every number outside 'sources' and 'meta'."""
    out = []

    def walk(x, path):
        if isinstance(x, dict):
            for k, v in x.items():
                if not path and k in ("sources", "meta"):
                    continue
                if isinstance(v, (dict, list)):
                    walk(v, path + [str(k)])
                elif isinstance(v, (int, float)) and not isinstance(v, bool):
                    out.append((x, k, ".".join(path + [str(k)])))
        elif isinstance(x, list):
            for i, v in enumerate(x):
                if isinstance(v, (dict, list)):
                    walk(v, path + ["[]"])
                elif isinstance(v, (int, float)) and not isinstance(v, bool):
                    out.append((x, i, ".".join(path + ["[]"])))

    walk(doc, [])
    return [(c, k, p.replace(".[]", "[]")) for c, k, p in out]


def _corrupt(value, kind):
    return {"negative": -abs(value) if value else -1, "zero": 0, "nan": float("nan"), "string": str(value)}[kind]


def _rules(doc):
    """Display path -> the schema rule the loader applies there (table cells are left out)."""
    return {".".join(path).replace(".#", "[]"): rule for path, _v, rule in dataschema.leaves(doc)}


def _selected(name):
    doc = json.loads((Path(data_dir()) / name).read_text(encoding="utf-8"))
    leaves = _numeric_leaves(doc)
    rules = _rules(doc)
    if len(leaves) <= FULL_LIMIT:
        return doc, leaves, rules
    kinds = {}
    for leaf in leaves:
        rule = rules.get(leaf[2])
        kinds.setdefault((leaf[2].rsplit(".", 1)[-1], rule.what if rule else None), leaf)
    first = list(kinds.values())
    rest = [leaf for leaf in leaves if all(leaf is not f for f in first)]
    return doc, first + random.Random(16).sample(rest, min(SAMPLE, len(rest))), rules


def test_every_data_file_is_valid_as_shipped():
    for name in FILES:
        assert list(dataschema.problems(name, json.loads((Path(data_dir()) / name).read_text()))) == [], name


def test_schema_declares_exactly_the_expected_exceptions():
    assert set(dataschema.NON_POSITIVE_OR_TEXT) == set(ALLOWED)
    assert all(reason for reason in dataschema.NON_POSITIVE_OR_TEXT.values())


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("kind", KINDS)
def test_corrupted_number_is_refused_with_file_and_field(name, kind):
    doc, leaves, rules = _selected(name)
    assert leaves, f"{name} has no numbers to corrupt"
    checked = 0
    for container, key, path_text in leaves:
        original = container[key]
        rule = rules.get(path_text)
        container[key] = _corrupt(original, kind)
        try:
            if rule is not None and kind in ALLOWED.get(rule.what, ()):
                dataschema.validate_document(name, doc, DataFileError)  # legitimately accepted
                continue
            with pytest.raises(DataFileError) as exc:
                dataschema.validate_document(name, doc, DataFileError)
            msg = str(exc.value)
            field = path_text.split(".rows")[0] if ".rows" in path_text else path_text
            assert name in msg and field in msg, (name, path_text, kind, msg)
            checked += 1
        finally:
            container[key] = original
    assert checked >= len(leaves) // 2


@pytest.mark.parametrize("name", FILES)
def test_refused_through_the_real_loader(name, tmp_data):  # noqa: F811
    """One corruption per kind per file goes through trnsim.catalog.datafiles.load_json itself (NaN as JSON NaN)."""
    doc, leaves, _ = _selected(name)
    rng = random.Random(name)
    for kind in KINDS:
        container, key, path_text = rng.choice([leaf for leaf in leaves if "lat" not in leaf[2]
                                                and "lon" not in leaf[2] and "conflicts" not in leaf[2]])
        original = container[key]
        container[key] = _corrupt(original, kind)
        (tmp_data.folder / name).write_text(json.dumps(doc), encoding="utf-8")
        container[key] = original
        load_json.cache_clear()
        with pytest.raises(CatalogError, match=r"(?s)" + name.replace(".", r"\.") + ".*failed validation"):
            load_json(name)
    (tmp_data.folder / name).write_text(json.dumps(doc), encoding="utf-8")
    load_json.cache_clear()
    assert load_json(name) == doc


def test_nan_in_json_text_is_refused(tmp_data):  # noqa: F811
    text = (tmp_data.folder / "collectives.json").read_text()
    (tmp_data.folder / "collectives.json").write_text(text.replace('"value": 1.5', '"value": NaN', 1))
    load_json.cache_clear()
    with pytest.raises(DataFileError, match="intra_node_hop_latency_us.value: must be finite"):
        load_json("collectives.json")
