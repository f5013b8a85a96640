"""The package's architecture, checked from its source: layers, cycles, sizes, constants.

labkit is layered and each layer imports only the ones below it::

    core, registries -> physics -> tracks -> plans -> ui -> labs -> course, cli

A scenario folder (``labkit.scenarios.<id>``) spans layers: its ``about`` is plain text
(core), its ``plan`` is plans, its ``views`` labs and its ``hooks`` course
(:data:`SCENARIO_PIECES`); the package ``labkit.scenarios`` itself only finds folders (core).

The import graph is read with :mod:`ast` from every module of ``src/labkit`` --
module-level and function-level imports, ``from labkit.x import y`` where ``y`` is a
module, relative imports; ``if TYPE_CHECKING:`` blocks are skipped (they never run). An edge
goes to the module named, not to its parent packages.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "labkit"
COURSE_LABS = ROOT / "course" / "labs"
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 80
MAX_CLASS_LINES = 300
WIDGET_PACKAGES = ("ipywidgets", "bqplot")
ABOVE = {  # layer -> the labkit layers (and packages) it must never reach, even indirectly
    "core": ("registries", "physics", "tracks", "plans", "ui", "labs", "course", "cli",
             *WIDGET_PACKAGES),
    "registries": ("physics", "tracks", "plans", "ui", "labs", "course", "cli",
                   *WIDGET_PACKAGES),
    "physics": ("tracks", "plans", "ui", "labs", "course", "cli", *WIDGET_PACKAGES),
    "tracks": ("plans", "ui", "labs", "course", "cli", *WIDGET_PACKAGES),
    "plans": ("ui", "labs", "course", "cli", *WIDGET_PACKAGES),
    "grading": ("ui", "labs", "course", "cli", *WIDGET_PACKAGES),
    "ui": ("labs", "course", "cli"),
    "labs": ("course", "cli"),
}
# View layers -> the layers below them they must never import directly (only through plans).
NEVER_DIRECT = {"ui": ("physics",), "labs": ("physics",)}
# Layers a hidden test (a cell nbgrader restores at autograde time) may import from.
HIDDEN_TEST_LAYERS = ("core", "registries", "physics", "tracks", "plans", "grading")
# Constants the whole package shares: each is assigned at module level in exactly one module.
SHARED_CONSTANTS = {
    "PRECISIONS": "labkit.core.grids",
    "PARTS": "labkit.core.keys",
    "PREDICTION_POINTS": "labkit.labs.parts",
    "CHECKPOINT_POINTS": "labkit.labs.parts",
    "BITS_PER_BYTE": "labkit.core.units",
    "MS_PER_S": "labkit.core.units",
    "SECONDS_PER_HOUR": "labkit.core.units",
    "SECONDS_PER_DAY": "labkit.core.units",
    "DAYS_PER_YEAR": "labkit.core.units",
    "J_PER_WH": "labkit.core.units",
    "J_PER_MWH": "labkit.core.units",
    "COST_UNITS": "labkit.tracks.base",
    "POLICIES": "labkit.physics.batching",
    "TRACKS": "labkit.tracks.registry",
    "LABS": "labkit.labs.registry",
    "REPORT_SCHEMA": "labkit.labs.info",
    "REPORT_VERSION": "labkit.labs.info",
}


# -- reading the source ----------------------------------------------------------------------

def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


@cache
def tree(name: str) -> ast.Module:
    path = modules()[name]
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_nodes(node: ast.AST, type_checking: bool = False,
                 ) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import that can run: module and function level; those under
    ``if TYPE_CHECKING:`` only with ``type_checking`` (a cycle through them is still a
    cycle of the design, and the type checker walks it)."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
        return
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test) and not type_checking:
            for sub in child.orelse:
                yield from import_nodes(sub)
        else:
            yield from import_nodes(child, type_checking)


def _known(dotted: str) -> str | None:
    """The longest prefix of ``dotted`` that is a labkit module (None: not labkit)."""
    parts = dotted.split(".")
    while parts:
        if ".".join(parts) in modules():
            return ".".join(parts)
        parts.pop()
    return None


def imports_of(name: str, type_checking: bool = False) -> set[str]:
    """Modules ``name`` imports: labkit module names and top-level external packages."""
    is_package = modules()[name].name == "__init__.py"
    out: set[str] = set()
    for node in import_nodes(tree(name), type_checking):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            base = node.module or ""
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[:len(package) - node.level + 1]
                base = ".".join([*package, base] if base else package)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules() else base
                       for a in node.names]
        for t in targets:
            out.add(_known(t) or t.split(".")[0])
    out.discard(name)
    return out


@cache
def graph(type_checking: bool = False) -> dict[str, frozenset[str]]:
    return {m: frozenset(imports_of(m, type_checking)) for m in modules()}


SCENARIO_PIECES = {"about": "core", "plan": "plans", "views": "labs", "hooks": "course"}


def layer(name: str) -> str:
    parts = name.split(".")
    if parts[1:2] == ["scenarios"]:
        # a module of a scenario folder of no known kind is a KeyError: classify it here
        return "core" if len(parts) <= 3 else SCENARIO_PIECES[parts[3]]
    return parts[1] if len(parts) > 1 else ""


def reaches(target_layer: str, target: str) -> bool:
    if target_layer in WIDGET_PACKAGES:
        return target == target_layer
    return target.startswith("labkit.") and layer(target) == target_layer


def path_to(start: str, goal_layer: str) -> list[str] | None:
    """A shortest import chain from ``start`` to a module of ``goal_layer`` (or package)."""
    g, seen, queue = graph(), {start: [start]}, [start]
    while queue:
        here = queue.pop(0)
        for nxt in sorted(g.get(here, ())):
            if nxt in seen:
                continue
            chain = [*seen[here], nxt]
            if reaches(goal_layer, nxt):
                return chain
            seen[nxt] = chain
            if nxt in g:
                queue.append(nxt)
    return None


def strongly_connected(g: dict[str, frozenset[str]]) -> list[list[str]]:
    """Tarjan's algorithm: every strongly connected component of more than one module (or
    a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(g[v] & g.keys()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in g[v]:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


# -- the graph reader itself ------------------------------------------------------------------

def test_scenario_folders_have_layers():
    assert layer("labkit.scenarios") == layer("labkit.scenarios.fleet") == "core"
    assert layer("labkit.scenarios.fleet.about") == "core"
    assert layer("labkit.scenarios.fleet.plan.sizing") == "plans"
    assert layer("labkit.scenarios.fleet.views.part_b") == "labs"
    assert layer("labkit.scenarios.fleet.hooks") == "course"
    assert {layer(m) for m in modules() if m.startswith("labkit.scenarios.")} == {
        "core", "plans", "labs", "course"}


def test_the_import_reader_sees_every_form():
    assert "labkit.core.validation" in graph()["labkit.physics.edge"]        # from pkg import mod
    assert "labkit.registries.edge" in graph()["labkit.physics.edge"]
    assert "labkit.tracks.registry" in graph()["labkit.tracks"]              # package __init__
    assert "numpy" in graph()["labkit.physics.roofline"]
    snippet = ast.parse("from typing import TYPE_CHECKING\n"
                        "if TYPE_CHECKING:\n    import skipped\nelse:\n    import kept\n"
                        "def f():\n    from labkit.ui import html\n")
    assert [a.name for n in import_nodes(snippet) for a in n.names] == [
        "TYPE_CHECKING", "kept", "html"]                                     # function level
    assert strongly_connected({"a": frozenset({"b"}), "b": frozenset({"a"}),
                               "c": frozenset({"a"})}) == [["a", "b"]]


# -- layers and cycles --------------------------------------------------------------------------

def test_no_import_cycles():
    """No cycle, counting function-level imports and those under ``TYPE_CHECKING``."""
    cycles = strongly_connected(graph(type_checking=True))
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("view", sorted(NEVER_DIRECT))
def test_views_never_call_physics(view):
    """A view renders the deployment model's fields: no module of ``view`` imports a layer
    of :data:`NEVER_DIRECT` itself (module or function level), so every number it shows
    was computed once, in ``plans``."""
    bad = sorted(f"{m} imports {t}" for m in modules() if layer(m) == view
                 for t in graph(type_checking=True)[m]
                 if any(reaches(lower, t) for lower in NEVER_DIRECT[view]))
    assert not bad, f"{view} calls physics directly:\n" + "\n".join(bad)


@pytest.mark.parametrize("lower", sorted(ABOVE))
def test_layers_import_only_downward(lower):
    bad = []
    for name in sorted(m for m in modules() if layer(m) == lower):
        for upper in ABOVE[lower]:
            chain = path_to(name, upper)
            if chain:
                bad.append(" -> ".join(chain))
    assert not bad, f"{lower} reaches a layer above it:\n" + "\n".join(bad)


def test_physics_imports_without_widgets_or_upper_layers():
    code = ("import sys, labkit.core.answers, labkit.core.format, labkit.registries.edge, "
            "labkit.physics.parallelism, labkit.physics.edge, labkit.physics.economy, "
            "labkit.physics.capacity, labkit.physics.batching, labkit.physics.memory\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('ipywidgets', 'bqplot')"
            " or m.startswith(('labkit.tracks', 'labkit.plans', 'labkit.ui', 'labkit.labs')))\n"
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"


# -- what notebooks import ------------------------------------------------------------------------

def _template_texts(path: Path) -> Iterator[str]:
    """Every string literal of a lab spec (f-strings with their placeholders as ``{}``)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value
        elif isinstance(node, ast.JoinedStr):
            yield "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)


_IMPORT_LINE = re.compile(r"^\s*(?:from\s+(labkit[\w.]*)\s+import\s+(.+)|import\s+(labkit[\w.]*))",
                          re.M)


def notebook_imports() -> list[tuple[str, str, str]]:
    """(spec file, module, imported names) of every labkit import inside a cell template."""
    out = []
    for path in sorted(COURSE_LABS.rglob("*.py")):   # the scenarios' instructor modules too
        for text in _template_texts(path):
            for m in _IMPORT_LINE.finditer(text):
                out.append((path.name, m.group(1) or m.group(3), (m.group(2) or "").strip()))
    return out


def test_lab_specs_hold_cell_templates_that_import_labkit():
    assert {p.name for p in COURSE_LABS.glob("*.py")} <= {f for f, _, _ in notebook_imports()}


def test_hidden_tests_import_only_the_layers_below_the_widgets():
    bad = []
    for spec, module, names in notebook_imports():
        if module.startswith("labkit.labs.") and names == "Lab":
            continue  # a student-visible setup cell: the lab's widgets
        if layer(module) not in HIDDEN_TEST_LAYERS:
            bad.append(f"{spec}: from {module} import {names}")
    assert not bad, "cell templates importing above plans:\n" + "\n".join(bad)
    for path in sorted(COURSE_LABS.rglob("*.py")):
        for text in _template_texts(path):
            assert "labkit.ui" not in text, f"{path.name}: a cell template mentions labkit.ui"


# -- sizes --------------------------------------------------------------------------------------

def test_no_module_is_over_700_lines():
    long = {m: n for m, p in modules().items()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_class_is_over_300_lines():
    long = []
    for name in modules():
        for node in ast.walk(tree(name)):
            if isinstance(node, ast.ClassDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_CLASS_LINES:
                    long.append(f"{name}:{node.lineno} {node.name} ({n} lines)")
    assert not long, f"classes over {MAX_CLASS_LINES} lines:\n" + "\n".join(long)


def test_no_function_is_over_80_lines():
    long = []
    for name in modules():
        for node in ast.walk(tree(name)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{name}:{node.lineno} {node.name} ({n} lines)")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


# -- one definition of each shared constant -------------------------------------------------------

def module_level_names(name: str) -> set[str]:
    out = set()
    for node in tree(name).body:
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign | ast.AugAssign) else [])
        for t in targets:
            out.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    return out


@pytest.mark.parametrize("constant", sorted(SHARED_CONSTANTS))
def test_each_shared_constant_is_defined_once(constant):
    homes = sorted(m for m in modules() if constant in module_level_names(m))
    assert homes == [SHARED_CONSTANTS[constant]], f"{constant} is assigned in {homes}"


# -- the deprecated module paths ------------------------------------------------------------------

def _public(module: object) -> list[str]:
    names = getattr(module, "__all__", None)
    return sorted(names if names is not None else (n for n in vars(module) if not
                                                  n.startswith("_")))


@pytest.mark.parametrize("old", sorted(importlib.import_module("labkit._aliases").OLD_PATHS))
def test_deprecated_alias_resolves_to_the_same_objects(old):
    aliases = importlib.import_module("labkit._aliases")
    new = importlib.import_module(aliases.OLD_PATHS[old])
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        view = importlib.import_module(old)
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
    for name in _public(new):
        assert getattr(view, name) is getattr(new, name), f"{old}.{name}"
    for name, home in aliases._MOVED.get(old, {}).items():
        assert getattr(view, name) is getattr(importlib.import_module(home), name), \
            f"{old}.{name} -> {home}"
