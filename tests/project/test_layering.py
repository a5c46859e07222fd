"""The package's layering, enforced: rooms only import rooms below them, the numeric core imports neither
PyTerrier, pandas nor Dask, and no import cycle exists between modules or between the parts of a package.

Every ``import`` statement counts, wherever it is (module level, inside a function, under ``TYPE_CHECKING``):
a deferred import is still a dependency. The graph is read from the source with :mod:`ast`, so the test
needs nothing installed and fails on the line that breaks a rule.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

PACKAGE = "pyterrier_svmmap"
ROOT = Path(__file__).resolve().parents[2] / PACKAGE

#: the rooms (top-level modules and packages), from the bottom up: a room may import its own layer's rooms
#: only when listed in :data:`SAME_LAYER`, and any room of a lower layer
LAYERS: List[Tuple[str, ...]] = [
    ("_version", "_jit", "string_codes", "state", "threads", "user_warnings", "params", "chunks"),   # leaves:
                                                                  # kernel loader, string codes, state checks,
                                                                  # threads, warnings, parameter specifications,
                                                                  # blocks of whole queries
    ("_product_kernels", "products"),                    # sums in a fixed order
    ("queries",),                                        # query-grouped arrays
    ("measures", "ties", "features"),                    # IR measures, the tie policy, φ
    ("selection",),                                      # model selection
    ("svm", "approx", "boosting"),                       # the learners on arrays
    ("io",),                                             # svmlight files, model files
    ("scale",),                                          # shards, Dask
    ("frames", "run_features", "plot"),                  # PyTerrier frames ↔ arrays, pictures
    ("estimators",),                                     # the PyTerrier estimators
    ("experiments",),                                    # reproduce, letor, the systems registry
    ("cli",),                                            # the svmmap command
]
#: imports allowed within one layer: (importer, imported)
SAME_LAYER = {("ties", "measures"), ("measures", "features"), ("ties", "features"), ("_product_kernels", "products"),
              ("run_features", "frames")}              # the first stage's frame attribute, read by frames
#: the lowest layer whose rooms may import the package's public names from its root (its lazy facade)
PUBLIC_API_USERS = "experiments"
#: rooms that form the numeric core, and the libraries they must not import
CORE = {"_version", "_jit", "string_codes", "state", "threads", "user_warnings", "params", "chunks", "_product_kernels", "products", "queries", "measures", "ties", "features", "selection",
        "svm", "approx", "boosting"}
NOT_IN_CORE = {"pandas", "pyterrier", "pyterrier_pisa", "dask", "distributed", "ir_measures", "matplotlib"}
#: and what the array-level rooms above the core (files, Dask) must not import
NOT_BELOW_PYTERRIER = {"pyterrier", "pyterrier_pisa", "matplotlib"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> Dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def imports(path: Path, name: str, known: Set[str]) -> List[Tuple[str, int]]:
    """(imported module, line) of every import in the file: this package's modules (``from pkg import mod``
    resolved to the module) and the top-level names of other libraries."""
    is_package = path.name == "__init__.py"
    base = name.split(".") if is_package else name.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                target = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.append((sub if sub in known else target, node.lineno))
    return out


def graph():
    """{module: {imported module of this package: first line}} and {module: {(library, line)}}."""
    mods = modules()
    internal: Dict[str, Dict[str, int]] = defaultdict(dict)
    external: Dict[str, Set[Tuple[str, int]]] = defaultdict(set)
    for name, path in mods.items():
        internal[name]
        for target, line in imports(path, name, set(mods)):
            if target == PACKAGE or target.startswith(PACKAGE + "."):
                if target != name and target in mods:
                    internal[name].setdefault(target, line)
            else:
                external[name].add((target.split(".")[0], line))
    return mods, internal, external


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_of(r: str) -> int:
    for i, rooms in enumerate(LAYERS):
        if r in rooms:
            return i
    raise KeyError(r)


def cycles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def package_cycles(internal) -> List[Tuple[str, List[str]]]:
    """Cycles between the parts (direct children) of every package, each part standing for everything in
    it."""
    packages = {m for m in internal if (ROOT.parent / m.replace(".", "/") / "__init__.py").exists()}
    found = []
    for pkg in sorted(packages):
        depth = pkg.count(".") + 1

        def part(m):
            return ".".join(m.split(".")[: depth + 1]) if m.startswith(pkg + ".") else None
        edges: Dict[str, Set[str]] = defaultdict(set)
        for src, targets in internal.items():
            a = part(src)
            for dst in targets:
                b = part(dst)
                if a and b and a != b:
                    edges[a].add(b)
        found += [(pkg, c) for c in cycles(edges)]
    return found


@pytest.fixture(scope="module")
def package_graph():
    return graph()


def test_the_checks_read_the_package(package_graph):
    """The graph is the package's own: ROOT is its folder (were it not, the checks below would pass on an
    empty graph), with rooms and imports between its modules."""
    mods, internal, _ = package_graph
    assert (ROOT / "__init__.py").is_file(), f"the package is not at {ROOT}"
    assert PACKAGE in mods and len({room(m) for m in mods} - {""}) > 1
    assert any(internal.values())


def test_every_room_has_a_layer(package_graph):
    mods, _, _ = package_graph
    rooms = {room(m) for m in mods} - {""}
    placed = {r for rooms_ in LAYERS for r in rooms_}
    assert rooms <= placed, f"rooms without a layer in LAYERS: {sorted(rooms - placed)}"


def test_rooms_only_import_downwards(package_graph):
    _, internal, _ = package_graph
    bad = []
    for src, targets in internal.items():
        a = room(src)
        if not a:                                   # the package's __init__: the public facade on top
            continue
        for dst, line in targets.items():
            b = room(dst)
            if not b:                               # the public names: for the rooms that use the package as users do
                if layer_of(a) < layer_of(PUBLIC_API_USERS):
                    bad.append(f"{src}:{line} imports the package root {dst} (import the module itself)")
                continue
            if a == b:
                continue
            if layer_of(b) > layer_of(a) or (layer_of(b) == layer_of(a) and (a, b) not in SAME_LAYER):
                bad.append(f"{src}:{line} imports {dst} ({a} may not import {b})")
    assert not bad, "\n".join(bad)


def test_the_core_imports_no_pyterrier_pandas_or_dask(package_graph):
    _, _, external = package_graph
    bad = [f"{m}:{line} imports {lib}" for m, libs in external.items() for lib, line in sorted(libs)
           if (room(m) in CORE and lib in NOT_IN_CORE)
           or (room(m) in ("io", "scale") and lib in NOT_BELOW_PYTERRIER)]
    assert not bad, "\n".join(bad)


def test_no_import_cycle_between_modules(package_graph):
    _, internal, _ = package_graph
    found = cycles({m: set(t) for m, t in internal.items()})
    assert not found, f"import cycles between modules: {found}"


def test_no_import_cycle_between_the_parts_of_a_package(package_graph):
    _, internal, _ = package_graph
    found = package_cycles(internal)
    assert not found, "import cycles between the parts of a package: " + \
        "; ".join(f"{pkg}: {' <-> '.join(c)}" for pkg, c in found)


def test_the_checks_see_a_deferred_upward_import_and_a_cycle(tmp_path):
    """The rules catch what they are for: an import inside a function counts, and a cycle is found."""
    fake = {"pyterrier_svmmap.svm.ranker": {"pyterrier_svmmap.scale.dask": 3},
            "pyterrier_svmmap.scale.dask": {"pyterrier_svmmap.svm.ranker": 5}}
    assert cycles({m: set(t) for m, t in fake.items()}) == [sorted(fake)]
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from pyterrier_svmmap.scale import dask\n")
    assert imports(src, "pyterrier_svmmap.svm.m", {"pyterrier_svmmap.scale.dask"}) == [("pyterrier_svmmap.scale.dask", 2)]
    assert layer_of("scale") > layer_of("svm")
