"""The house's floors: every import points down a floor, and no import
cycle crosses packages.

Imports are read with ``ast`` from the sources, deferred ones (inside
functions) included and ``if TYPE_CHECKING:`` blocks excluded, so a cycle
hidden behind a function-level import still counts: it is still a module
that needs one above it. Cycles inside one package (two modules of
``almanac.spark``) are that package's own business."""

from __future__ import annotations

import ast
from pathlib import Path

import almanac

SRC = Path(almanac.__file__).resolve().parent.parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in SRC.joinpath("almanac").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _package(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _type_checking_only(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                skipped.update(id(n) for n in ast.walk(inner))
    return skipped


def import_graph() -> tuple[dict[str, set[str]], dict[str, str]]:
    """Each module's imports of other ``almanac`` modules, and each module's package."""
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        skipped = _type_checking_only(tree)
        package = _package(name, path)
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*parts, base] if base else parts)
                targets = [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                found = resolve(target)
                if found is not None and found.startswith("almanac") and found != name:
                    graph[name].add(found)
    return graph, {name: _package(name, path) for name, path in modules.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components, iteratively (the graph is a few hundred modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


FLOORS: tuple[tuple[str, ...], ...] = (
    ("almanac.errors", "almanac._check", "almanac._files"),
    ("almanac.model",),
    ("almanac.metastore", "almanac.serialization", "almanac.commands"),
    ("almanac.node",),
    ("almanac.sql", "almanac.data", "almanac.placement"),
    ("almanac.access",),
    ("almanac", "almanac.iceberg", "almanac.system_tables"),
    ("almanac.tserver", "almanac.iceberg_rest", "almanac.server", "almanac.console"),
    ("almanac.cli", "almanac.spark", "almanac.__main__"),
    ("almanac.dev",),
)
"""The packages (and root modules) floor by floor, lowest first: the
errors and shared checks; the catalog as values; the store, the binary and
JSON forms and the commands; one node; the planes and the SQL layer on it;
reaching a catalog from outside (``connect`` puts a node and its planes
together); the public front; the servers; the command line and Spark; the
demos. A module may import its own floor or any below, never one above."""

ALLOWED_UPWARD: dict[tuple[str, str], str] = {
    ("almanac.node.catalog", "almanac.sql"): (
        "Catalog.sql is the node's convenience front over the SQL layer: parsing and "
        "answering are imported inside the method (sqlglot loads only when a script is "
        "parsed), and SqlResult is what it returns"
    ),
}
"""The upward imports kept on purpose, by importing module and the package it
reaches, each with its reason."""


def _unit(module: str) -> str:
    """The package a module's floor is declared for (a root module is its own)."""
    return module if module == "almanac" else ".".join(module.split(".")[:2])


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every import from a lower floor to a higher one, as (module, imported)."""
    floor = {unit: level for level, units in enumerate(FLOORS) for unit in units}
    return [
        (module, target)
        for module in sorted(graph)
        for target in sorted(graph[module])
        if floor[_unit(module)] < floor[_unit(target)]
    ]


def test_every_package_stands_on_a_declared_floor() -> None:
    graph, _ = import_graph()
    declared = [unit for units in FLOORS for unit in units]
    assert len(declared) == len(set(declared)), "a package on two floors"
    assert {_unit(m) for m in graph} == set(declared), "place a new package on a floor"


def test_every_import_points_down_the_floors() -> None:
    graph, _ = import_graph()
    found = upward_imports(graph)
    kept = {(m, t) for m, t in found if (m, _unit(t)) in ALLOWED_UPWARD}
    assert [f"{m} -> {t}" for m, t in found if (m, t) not in kept] == [], (
        "imports from a lower floor to a higher one: move the code to its floor"
    )
    assert {(m, _unit(t)) for m, t in kept} == set(ALLOWED_UPWARD), "a stale allowance"


def test_an_upward_import_is_found() -> None:
    graph = {"almanac.model.x": {"almanac.node.y"}, "almanac.node.y": {"almanac.model.x"}}
    assert upward_imports(graph) == [("almanac.model.x", "almanac.node.y")]


def test_no_import_cycle_crosses_packages() -> None:
    graph, packages = import_graph()
    crossing = []
    for component in strongly_connected(graph):
        if len({packages[m] for m in component}) > 1:
            inside = set(component)
            edges = [f"{m} -> {t}" for m in component for t in sorted(graph[m] & inside)]
            crossing.append(edges)
    assert crossing == [], "import cycles across packages:\n" + "\n\n".join(
        "\n".join(edges) for edges in crossing
    )


def test_the_data_package_has_no_cycle_among_its_own_modules() -> None:
    """Data flows one way inside ``almanac.data`` too: the commit protocol
    sits below the staging leases' users, the plane and the janitor above
    it, so no module needs one that needs it back."""
    graph, _ = import_graph()
    inside = {m: graph[m] for m in graph if m == "almanac.data" or m.startswith("almanac.data.")}
    local = {m: targets & set(inside) for m, targets in inside.items()}
    cycles = [
        [f"{m} -> {t}" for m in component for t in sorted(local[m] & set(component))]
        for component in strongly_connected(local)
        if len(component) > 1
    ]
    assert cycles == [], "import cycles inside almanac.data:\n" + "\n\n".join(
        "\n".join(edges) for edges in cycles
    )


def test_the_graph_sees_deferred_imports_and_skips_type_checking_ones() -> None:
    graph, packages = import_graph()
    # ``almanac.node.catalog`` imports the SQL layer inside ``Catalog.sql`` only.
    assert "almanac.sql.parsing" in graph["almanac.node.catalog"]
    assert packages["almanac.sql.parsing"] == "almanac.sql"
    assert packages["almanac"] == "almanac"
    # A cycle made only of deferred imports is found.
    demo = {"a.x": {"b.y"}, "b.y": {"a.x"}, "c": set()}
    assert sorted(map(tuple, strongly_connected(demo))) == [("a.x", "b.y"), ("c",)]


def test_flight_and_the_data_plane_load_without_spark_or_the_web_server() -> None:
    """A Flight client or a data-plane job never pays for PySpark (and its
    JVM gateway), nor for the HTTP server's framework, just to import Almanac;
    nor does a client that only needs the Iceberg REST mount point."""
    import subprocess
    import sys

    heavy = ("fastapi", "uvicorn", "starlette", "pyspark", "py4j")
    probe = (
        "import sys, almanac, almanac.tserver.client, almanac.data, almanac.system_tables; "
        "from almanac.iceberg_rest import ICEBERG_PREFIX; "
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=300
    )
    assert done.stdout.strip() == "[]"
