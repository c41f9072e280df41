"""The package layout is the architecture: simulator rooms below, course rooms on top, no cycles.

Builds the import graph of every module under ``trnsim/`` from its source with :mod:`ast` (imports at module
level and inside functions both count, ``from trnsim.x import y`` counts as an edge to ``trnsim.x.y`` when that
is a module) and checks:

1. no import cycle between modules;
2. no simulator module imports a course module (data flows one way);
3. the package root holds only ``__init__`` and ``__main__`` (every other module lives in a room).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "trnsim"

SIMULATOR = ("catalog", "models", "nki", "neuronxcc", "perf", "kernels", "cluster", "training", "serving", "deploy")
"""The simulator's rooms: each may import the others (without cycles), never the course."""
COURSE = ("course",)
"""The course around the simulator: notebook set-up, checkers, grading, CLI and, on top, viz and ui."""
ROOT_MODULES = {"trnsim", "trnsim.__main__"}
"""The root: the catalog facade (``trnsim/__init__.py``, imports only the catalog) and ``python -m trnsim``
(``trnsim/__main__.py``, the course's CLI entry point)."""


def _modules() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        mods[".".join(parts)] = (path, is_pkg)
    return mods


MODULES = _modules()


def _owner(name: str) -> str:
    """The module that ``name`` (a dotted import target) resolves to: itself or its nearest module parent."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in MODULES else ""


def _imports(module: str) -> set[str]:
    path, is_pkg = MODULES[module]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.update(_owner(a.name) for a in node.names if a.name.split(".")[0] == "trnsim")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "trnsim":
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}"
                out.add(full if full in MODULES else _owner(target))
    out.discard("")
    out.discard(module)
    return out


GRAPH = {m: _imports(m) for m in MODULES}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and module not in ROOT_MODULES else ""


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a list of modules (first == last), or None: iterative depth-first search."""
    state: dict[str, int] = {}            # 1 = on the stack, 2 = done
    for start in sorted(graph):
        if state.get(start):
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                stack.append((nxt, iter(sorted(graph.get(nxt, ())))))
                path.append(nxt)
    return None


def test_graph_sees_the_whole_package():
    """The scan finds the rooms and real edges (a broken scan would pass every check below vacuously)."""
    rooms = {_room(m) for m in MODULES} - {""}
    assert rooms == set(SIMULATOR) | set(COURSE)
    assert "trnsim.catalog.datafiles" in GRAPH["trnsim.catalog"]
    assert "trnsim.course.check" in GRAPH["trnsim.course.exercises.puzzles"]
    # a function-level import counts too
    assert "trnsim.course.exercises.puzzle_solutions" in GRAPH["trnsim.course.exercises.puzzles"]
    assert sum(len(v) for v in GRAPH.values()) > 300


def test_cycle_finder_finds_a_cycle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles():
    cycle = _find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize("room", SIMULATOR)
def test_simulator_never_imports_the_course(room):
    wrong = sorted(f"{m} imports {t}" for m, targets in GRAPH.items() if _room(m) == room
                   for t in targets if _room(t) in COURSE)
    assert not wrong, "simulator -> course: " + "; ".join(wrong)


def test_root_facade_imports_only_the_catalog():
    assert {_room(t) for t in GRAPH["trnsim"]} == {"catalog"}


def test_viz_and_ui_sit_on_top():
    """Nothing below the figures and widget panels imports them (within the course, only ui uses viz)."""
    wrong = sorted(f"{m} imports {t}" for m, targets in GRAPH.items()
                   if not m.startswith(("trnsim.course.ui", "trnsim.course.viz"))
                   for t in targets if t.startswith(("trnsim.course.ui", "trnsim.course.viz")))
    assert not wrong, "; ".join(wrong)


def test_root_holds_no_loose_modules():
    loose = {m for m, (path, _) in MODULES.items() if path.parent == ROOT} - ROOT_MODULES
    assert not loose, f"loose modules at the package root: {sorted(loose)}; move each into a room"
