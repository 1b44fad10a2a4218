"""The package's public surface: ``__all__`` and the error hierarchy."""

from __future__ import annotations

import ast
import importlib
import inspect
import types
from pathlib import Path

import almanac
import almanac.errors
from almanac import CatalogError


def _names_bound_in_init() -> set[str]:
    """Public names that ``almanac/__init__.py`` itself binds (imports, defs, assignments)."""
    tree = ast.parse(Path(almanac.__file__).read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom | ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


def test_all_lists_every_public_attribute() -> None:
    exported = set(almanac.__all__)
    public = {
        name
        for name in _names_bound_in_init()
        if not isinstance(getattr(almanac, name), types.ModuleType)
    }
    assert public, "found no public attributes at all"
    assert public - exported == set(), "public but missing from __all__"


def test_every_public_runtime_attribute_is_listed() -> None:
    runtime = {
        name
        for name, value in vars(almanac).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert runtime - set(almanac.__all__) == set()


def test_every_listed_name_exists() -> None:
    missing = [name for name in almanac.__all__ if not hasattr(almanac, name)]
    assert missing == []
    assert len(almanac.__all__) == len(set(almanac.__all__)), "duplicates in __all__"


PUBLIC_MODULES = (
    "almanac.node.catalog",
    "almanac.model.catalog_version",
    "almanac.model.clock",
    "almanac.commands",
    "almanac.model.datatypes",
    "almanac.model.descriptors",
    "almanac.model.diff",
    "almanac.errors",
    "almanac.model.events",
    "almanac.access.remote",
    "almanac.sql.results",
    "almanac.model.targets",
)
"""The modules whose names a user of the Python API meets."""

NOT_EXPORTED = {
    "almanac.node.catalog.CommitHook": "an extension point for the layers above the catalog",
    "almanac.node.catalog.HookWork": "an extension point for the layers above the catalog",
    "almanac.node.catalog.DataCommitCheck": "an extension point for the layers above the catalog",
    "almanac.access.connection.open_catalog": "a node without its data plane; connect opens both",
    "almanac.model.catalog_version.DEFAULT_SCHEMA": "the default of every schema parameter",
    "almanac.model.clock.from_datetime": "hybrid-clock arithmetic; reach it as almanac.model.clock",
    "almanac.model.clock.physical_ms": "hybrid-clock arithmetic; reach it as almanac.model.clock",
    "almanac.model.clock.to_datetime": "hybrid-clock arithmetic; reach it as almanac.model.clock",
    "almanac.model.diff.OBJECT_KINDS": "the kinds a diff names, listed in the diff's docs",
    "almanac.model.diff.JsonScalar": "a type alias inside JsonValue",
    "almanac.model.diff.diff_catalogs": "the pure comparison; Catalog.diff is the user's call",
    "almanac.model.diff.value_text": "how the console and the CLI show a diff value",
    "almanac.model.datatypes.MAX_DECIMAL_PRECISION": "a type rule the commands apply",
    "almanac.model.datatypes.shown": "how the type rules describe a value in their messages",
    "almanac.model.datatypes.MAX_LENGTH": "a type rule the commands apply",
    "almanac.model.datatypes.MAX_TIME_PRECISION": "a type rule the commands apply",
    "almanac.model.datatypes.NANO_TIMESTAMPS": "a type rule the commands apply",
    "almanac.model.datatypes.TypeParams": "a helper type of the type rules",
    "almanac.model.datatypes.can_widen": "a type rule the commands apply",
    "almanac.model.datatypes.default_params": "a type rule the commands apply",
    "almanac.model.datatypes.python_value_fits": "a type rule the commands apply",
    "almanac.model.datatypes.validate_params": "a type rule the commands apply",
    "almanac.model.events.event_json": "the JSON form of an event, for the HTTP API and the CLI",
    "almanac.access.remote.error_from_reply": "how the remote client reads a server's error reply",
    "almanac.model.targets.MAX_TIMEOUT_S": "the bound parse_target and the etcd store check",
    "almanac.model.targets.MEMORY": "the text of the memory target",
    "almanac.model.targets.STORE_FILE": "the file name inside a directory target",
}
"""Public names of those modules that are deliberately not in ``almanac.__all__``."""


def test_every_public_name_of_the_public_modules_is_exported_or_explained() -> None:
    missing = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            assert hasattr(module, name), f"{module_name}.__all__ lists a missing {name}"
            if name in almanac.__all__:
                assert getattr(almanac, name) is getattr(module, name), name
            elif f"{module_name}.{name}" not in NOT_EXPORTED:
                missing.append(f"{module_name}.{name}")
    assert missing == [], "export these from almanac or explain them in NOT_EXPORTED"
    stale = [n for n in NOT_EXPORTED if n.rsplit(".", 1)[1] in almanac.__all__]
    assert stale == []


def test_connect_is_exported() -> None:
    assert "connect" in almanac.__all__
    assert callable(almanac.connect)


def _error_classes() -> list[type[BaseException]]:
    return [
        obj
        for _, obj in inspect.getmembers(almanac.errors, inspect.isclass)
        if issubclass(obj, BaseException) and obj.__module__ == almanac.errors.__name__
    ]


def test_every_error_class_is_a_catalog_error() -> None:
    classes = _error_classes()
    assert len(classes) >= 10
    for cls in classes:
        assert issubclass(cls, CatalogError), cls


def test_every_error_class_is_exported_from_the_package() -> None:
    for cls in _error_classes():
        assert getattr(almanac, cls.__name__) is cls
        assert cls.__name__ in almanac.__all__


def test_named_error_classes_exist() -> None:
    for name in (
        "ValidationError",
        "NotFoundError",
        "AlreadyExistsError",
        "VersionNotFoundError",
        "ConflictError",
    ):
        cls = getattr(almanac, name)
        assert isinstance(cls, type)
        assert issubclass(cls, CatalogError)
        assert cls is not CatalogError
