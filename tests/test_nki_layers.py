"""The layering of trnsim.nki: no import cycles, nothing imports upward, and nki never imports perf."""
import ast
import pathlib
import subprocess
import sys

import pytest

import trnsim.nki as nki
import trnsim.nki.language as nl
from trnsim.nki import KernelError

PKG = pathlib.Path(nki.__file__).parent
# layer rank of each module (a module may import only modules of a lower rank, or of its own package level)
RANK = {"rules": 0, "trace": 0, "_blas": 0, "_gc": 0, "_threadstate": 0, "packed": 0, "dtypes": 0.5, "tensor_api": 0.75, "typing": 1, "tensors": 1,
        "context": 2, "isa": 3, "language": 4, "compiler": 4, "lnc": 4.5, "collectives": 5, "runtime": 5, "ranks": 6,
        "__init__": 7}


def _rank(rel: pathlib.Path) -> int:
    return RANK[rel.parts[0].removesuffix(".py")]


def _imported_modules(path: pathlib.Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, []


def test_every_import_inside_nki_goes_down_the_layers():
    bad = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG)
        me = _rank(rel)
        for mod, names in _imported_modules(path):
            assert not mod.startswith(("trnsim.perf", "trnsim.neuronxcc")), f"{rel} imports {mod}"
            if not mod.startswith("trnsim.nki"):
                continue
            parts = mod.split(".")[2:] or names      # "from trnsim.nki import isa" names the module
            for part in parts[:1] if len(mod.split(".")) > 2 else parts:
                target = RANK.get(part)
                if target is None:
                    continue
                same_package = rel.parts[0] == part and len(rel.parts) > 1
                if target > me or (target == me and not same_package and rel.parts[0] != "__init__.py"
                                   and part != rel.parts[0].removesuffix(".py")):
                    bad.append(f"{rel} (layer {me}) imports {mod} {names} (layer {target})")
    assert not bad, "\n".join(bad)


def test_importing_nki_does_not_load_perf_or_the_beta1_layer():
    code = "import sys, trnsim.nki, trnsim.nki.isa, trnsim.nki.language; " \
           "print(sorted(m for m in sys.modules if m.startswith(('trnsim.perf', 'trnsim.neuronxcc'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


@pytest.mark.parametrize("name, hint", [("simulate_kernel", "nki.simulate"), ("profile", "trnsim.perf.profile"),
                                        ("benchmark", "trnsim.perf.benchmark"), ("baremetal", "nki.jit")])
def test_beta1_top_level_names_name_their_current_form(name, hint):
    with pytest.raises(KernelError, match="err_removed_api") as exc:
        getattr(nki, name)
    assert hint in str(exc.value) and "trnsim.neuronxcc.nki" in str(exc.value)
    assert not hasattr(nki, name)   # also an AttributeError


@pytest.mark.parametrize("name", ["arange", "mgrid", "par_dim"])
def test_removed_language_names_point_to_slices_and_access_patterns(name):
    with pytest.raises(KernelError, match="err_removed_api") as exc:
        getattr(nl, name)
    assert ("slices" in str(exc.value)) or ("partition dimension" in str(exc.value))


def test_isa_and_language_export_one_family_module_per_line():
    for pkg in ("isa", "language"):
        src = (PKG / pkg / "__init__.py").read_text()
        families = [p.stem for p in (PKG / pkg).glob("*.py") if not p.stem.startswith("_")
                    and p.stem not in ("common", "ops", "assign")]
        for fam in families:
            assert f"from trnsim.nki.{pkg}.{fam} import *" in src, f"{pkg}/{fam}.py is not exported"
