"""An argument-type fuzzer for the public Python API.

It finds what to call by introspection: every command class exported by
``almanac``, the values users build (column definitions, defaults,
properties, retention policies, predicates, commit shapes, warehouses),
every function in the ``__all__`` of the swept public modules
(``SWEPT_MODULES``: ``almanac`` and its data, serialization, system-table,
Iceberg and Flight modules), every public static method of their classes,
and every public method of ``Catalog``. A name it does not call is in
``NOT_CALLED`` with the reason, and a module it does not sweep is in
``MODULES_NOT_SWEPT``, so a new public function or module cannot be
forgotten. Each call gets arguments drawn from a pool of wrong and odd
values (None, bools, floats with nan/inf, huge ints, bytes, containers, NUL
and surrogate strings, naive/aware/extreme datetimes, Arrow values, plain
objects), mixed with plausible legal values (live ones for the data plane:
a catalog with a warehouse, its table, its rows) so that calls get past
their first argument. Rules checked on every call:

* only ``CatalogError`` subclasses escape;
* a call that succeeds was a legal call: every argument (for a constructor,
  every field of the built value) matches its annotation, checked by an
  oracle written independently of ``almanac._check``;
* a call that fails changed nothing: same catalog version (and, for
  ``connect``, no new file in the working directory).

A command that was built is also executed on the catalog, under the same rules.
"""

from __future__ import annotations

import collections.abc as cabc
import contextlib
import dataclasses
import datetime as dt
import decimal
import enum
import importlib
import inspect
import math
import os
import pkgutil
import random
import threading
import types
import typing
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

import almanac
import almanac.data
import almanac.serialization
import almanac.system_tables
from almanac import Catalog, CatalogError, Command
from almanac.data import CommitShape, Predicate, TableData, Warehouse
from almanac.metastore import Metastore
from almanac.model.catalog_version import CatalogVersion
from almanac.model.descriptors import Column, Table

INT64 = (-(2**63), 2**63 - 1)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

# --------------------------------------------------------------------------- what is called

USER_BUILT: tuple[type, ...] = (
    almanac.ColumnDef,
    almanac.PartitionFieldDef,
    almanac.SortFieldDef,
    almanac.ConstantDefault,
    almanac.FunctionDefault,
    almanac.TableProperties,
    almanac.RetentionPolicy,
    almanac.PlacementSettings,
    Predicate,
    CommitShape,
    Warehouse,
    TableData,
)
"""Values users build and hand to the catalog, besides commands."""

SWEPT_MODULES = (
    "almanac",
    "almanac.data",
    "almanac.serialization",
    "almanac.system_tables",
    "almanac.iceberg",
    "almanac.tserver.client",
)
"""The public modules whose ``__all__`` the fuzzer calls."""

_EXPORTED = "its public names are exported from almanac (tests/core/test_public_api.py)"
_INTERNAL = "the catalog node's own machinery, reached through the swept API"
MODULES_NOT_SWEPT = {
    "almanac.node.catalog": _EXPORTED,
    "almanac.model.catalog_version": _EXPORTED,
    "almanac.model.clock": _EXPORTED,
    "almanac.commands": _EXPORTED,
    "almanac.access.connection": _EXPORTED,
    "almanac.model.datatypes": _EXPORTED,
    "almanac.model.descriptors": _EXPORTED,
    "almanac.model.diff": _EXPORTED,
    "almanac.errors": _EXPORTED,
    "almanac.model.events": _EXPORTED,
    "almanac.access.remote": _EXPORTED,
    "almanac.node.soft_delete": _EXPORTED,
    "almanac.model.targets": _EXPORTED,
    "almanac.cli": "the command line: tests/cli/test_hostile_input.py attacks it",
    "almanac.console": "the web console's routes: tests/console",
    "almanac.dev.demo": "a demo script",
    "almanac.dev.demo_cluster": "a demo script",
    "almanac.metastore.disk": _INTERNAL,
    "almanac.model.entries": _INTERNAL,
    "almanac.dev.etcd_local": "starts a local etcd for demos and tests",
    "almanac.iceberg_rest": "HTTP routes: tests/iceberg_rest/test_hostile.py",
    "almanac.node.identity": _INTERNAL,
    "almanac.node.log": _INTERNAL,
    "almanac.node.log_format": _INTERNAL,
    "almanac.node.log_truncation": _INTERNAL,
    "almanac.node.leases": _INTERNAL,
    "almanac.model.read_point": "how front ends parse a read point; via system_table and SQL",
    "almanac.metastore": "the store interface under the catalog: tests/metastore",
    "almanac.node.catalog_types": _EXPORTED,
    "almanac.node.committer": _INTERNAL,
    "almanac.node.dispatch": _INTERNAL,
    "almanac.node.retention": _INTERNAL,
    "almanac.node.settler": _INTERNAL,
    "almanac.model.table_names": "the table names Flight takes, reached through it",
    "almanac.sql.system_rows": "re-exported by almanac.system_tables, which is swept",
    "almanac.model.nested": "the rules of nested columns, reached through the commands",
    "almanac.model.partitioning": "specs and orders are exported; transforms via commands",
    "almanac.model.names": _INTERNAL,
    "almanac.node.nodes": _INTERNAL,
    "almanac.placement": "tablet placement state, read through almanac.system_tables",
    "almanac.model.request_ids": _INTERNAL,
    "almanac.model.schema_sync": _INTERNAL,
    "almanac.access.tokens": (
        "bearer tokens: tests/server/test_auth.py feeds hostile tokens files; "
        "check_token is reached through connect and read_table"
    ),
    "almanac.server": "the HTTP server: tests/server/test_hostile.py",
    "almanac.spark": "needs a Spark session: tests/spark/test_arguments.py",
    "almanac.model.descriptor_sql": _INTERNAL,
    "almanac.sql": "reached through Catalog.sql: tests/sql/test_fuzz.py",
    "almanac.access.sse": _INTERNAL,
    "almanac.model.summary": _INTERNAL,
    "almanac.tserver": "tablet servers: tests/tserver/test_arguments.py",
    "almanac.node.versions": _INTERNAL,
}
"""Every other module of the package, and why the fuzzer does not sweep it."""

NOT_CALLED = {
    "Catalog": "made by connect; its public methods are called instead",
    "CatalogVersion": "a snapshot the catalog hands out",
    "CatalogDiff": "returned by Catalog.diff; CatalogDiff.from_json is called",
    "FieldChange": "part of a CatalogDiff",
    "JsonValue": "a type alias of the values of a FieldChange",
    "ObjectChange": "part of a CatalogDiff",
    "ObjectRef": "part of a CatalogDiff",
    "Cell": "a type alias of the cells of an SqlResult",
    "Column": "a descriptor the catalog builds (users build ColumnDef)",
    "DefaultValue": "a type alias (ConstantDefault | FunctionDefault), both called",
    "Listener": "a type alias of listener callables",
    "ListenerFailure": "recorded by the catalog when a listener raises",
    "TargetKind": "a type alias of Target.kind",
    "Event": "made by the catalog for listeners",
    "ExecuteResult": "returned by execute",
    "HybridClock": "the node's clock; takes a wall-clock function",
    "Index": "a descriptor the catalog builds",
    "NodeInfo": "returned by Catalog.nodes",
    "Schema": "a descriptor the catalog builds",
    "SqlResult": "returned by Catalog.sql",
    "Table": "a descriptor the catalog builds",
    "PartitionField": "part of a PartitionSpec",
    "PartitionSpec": "a descriptor the catalog builds (Table.partition_specs)",
    "SortField": "part of a SortOrder",
    "SortOrder": "a descriptor the catalog builds (Table.sort_orders)",
    "Target": "made by parse_target, which is called",
    "Preview": "returned by preview, which is called",
    "CommitContext": "made by the committing node for Command.bind",
    "RemoteCatalog": "made by connect for an http:// target, which needs a server",
    "RemoteEvent": "made by a remote catalog for its listeners",
    "RemoteListener": "a type alias of remote listener callables",
    "RemoteVersionInfo": "returned by RemoteCatalog.history",
    "VersionInfo": "returned by history",
    "Zone": "a descriptor the catalog builds",
    "almanac.data.ColumnStats": "part of a DataFile",
    "almanac.data.DataFile": "returned by write_files and plan_scan",
    "almanac.data.DataSnapshot": "returned by the data plane's commits and reads",
    "almanac.data.JanitorReport": "returned by run_janitor",
    "almanac.data.ScanPlan": "returned by plan_scan",
    "almanac.serialization.Registry": "the registry (REGISTRY); encode and decode are called",
    "almanac.serialization.SerializerInfo": "one registered serializer of the registry",
    "almanac.system_tables.ColumnKind": "a type alias of the system tables' column kinds",
    "almanac.tserver.client.Progress": "a type alias of read_table's progress callable",
    "almanac.system_tables.SystemRows": "returned by system_rows",
}
"""Exported names that are not called, and why. Enums and errors are not called either."""

METHODS_NOT_CALLED = {
    "close": "ends the node; the fuzzer needs it open",
    "on_update": "called by the update log with entries it read",
    "on_checkpoint": "called by the update log with a stored checkpoint",
    "on_truncate": "called by the update log after it truncated",
}


NUL_OK = {("Catalog.sql", "text")}
"""Strings that may hold NUL: SQL text, whose string literals may."""


def constructors() -> list[Callable[..., Any]]:
    """Every command class exported by ``almanac``, and the values users build."""
    found: list[Callable[..., Any]] = list(USER_BUILT)
    for name in almanac.__all__:
        obj = getattr(almanac, name)
        if isinstance(obj, type) and issubclass(obj, Command) and obj is not Command:
            found.append(obj)
    return found


def exports() -> dict[str, object]:
    """Every name of the swept modules' ``__all__``, by its qualified name
    (a bare name for ``almanac``'s own), each object once."""
    found: dict[str, object] = {}
    seen: set[int] = set()
    for module_name in SWEPT_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            found[name if module_name == "almanac" else f"{module_name}.{name}"] = obj
    return found


def _is_class(obj: object) -> bool:
    return isinstance(obj, type) and not issubclass(obj, enum.Enum | BaseException)


def static_methods() -> list[Callable[..., Any]]:
    """Public static methods of the exported classes (``Warehouse.open``,
    ``TableData.for_catalog``, ``CatalogDiff.from_json``...)."""
    found: list[Callable[..., Any]] = []
    for obj in exports().values():
        if not _is_class(obj):
            continue
        assert isinstance(obj, type)
        for name, member in vars(obj).items():
            if not name.startswith("_") and isinstance(member, staticmethod | classmethod):
                found.append(getattr(obj, name))
    return found


def functions() -> list[Callable[..., Any]]:
    return [
        *(obj for obj in exports().values() if isinstance(obj, types.FunctionType)),
        *static_methods(),
    ]


def label(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn))))


FLOORS = ("almanac.model", "almanac.node", "almanac.access", "almanac.dev")
"""Packages that only group modules by floor: each of their modules is
swept or explained on its own."""


def unswept_modules() -> list[str]:
    """Modules of the package that are neither swept nor explained."""
    names = {
        f"almanac.{m.name}" for m in pkgutil.iter_modules(almanac.__path__) if m.name[0] != "_"
    }
    for floor in FLOORS:
        names.discard(floor)
        package = importlib.import_module(floor)
        names |= {f"{floor}.{m.name}" for m in pkgutil.iter_modules(package.__path__)}
    return sorted(names - set(SWEPT_MODULES) - set(MODULES_NOT_SWEPT))


def catalog_methods() -> list[str]:
    return sorted(
        name
        for name, _ in inspect.getmembers(Catalog, inspect.isfunction)
        if not name.startswith("_") and name not in METHODS_NOT_CALLED
    )


def uncovered_exports() -> list[str]:
    """Exported names that the fuzzer neither calls nor explains."""
    called = {id(c) for c in (*constructors(), *functions())}
    out = []
    for name, obj in exports().items():
        if id(obj) in called or name in NOT_CALLED or obj is Command:
            continue
        if isinstance(obj, type) and issubclass(obj, enum.Enum | BaseException):
            continue
        if not callable(obj):
            continue  # constants: PROTOCOL_VERSION, REGISTRY, SYSTEM_COLUMNS...
        out.append(name)
    return out


_NAMES: dict[str, object] = {
    "pa": pa,
    "pc": pc,
    "pafs": pafs,
    "Catalog": Catalog,
    "CatalogVersion": CatalogVersion,
    "Column": Column,
    "Metastore": Metastore,
    "Table": Table,
}
"""Names that modules import only for type checking, to resolve their hints."""


def type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """The parameter annotations of a function or of a class's constructor
    (its fields for a dataclass)."""
    if isinstance(fn, type) and not dataclasses.is_dataclass(fn):
        fn = fn.__init__  # type: ignore[misc]
    try:
        return typing.get_type_hints(fn)
    except NameError:
        namespace = {**_NAMES, **getattr(inspect.unwrap(fn), "__globals__", {})}
        return typing.get_type_hints(fn, globalns=namespace)


# --------------------------------------------------------------------------- values


class Opaque:
    def __repr__(self) -> str:
        return "Opaque()"


class Hostile:
    """Compares unequal to everything and hashes oddly."""

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return 7

    def __repr__(self) -> str:
        return "Hostile()"


class Name(str):
    """A str subclass: legal wherever a str is."""


class Small(enum.IntEnum):
    TWO = 2


def _anything(*args: object, **kwargs: object) -> None:
    return None


def _constant(value: object) -> Callable[[], object]:
    return lambda: value


def odd_values() -> list[Callable[[], object]]:
    """Factories, so that one-shot values (iterators) are fresh per call."""
    plus5 = dt.timezone(dt.timedelta(hours=5))
    fixed: list[object] = [
        None,
        True,
        False,
        0,
        1,
        -1,
        2,
        3,
        100,
        2**31,
        2**63 - 1,
        2**63,
        -(2**63) - 1,
        2**70,
        -(2**70),
        10**400,
        0.0,
        -0.0,
        0.5,
        1.5,
        math.nan,
        math.inf,
        -math.inf,
        1e308,
        "",
        " ",
        "A",
        "T",
        "ID",
        "PUBLIC",
        "Default",
        "default",
        "RAND_UUID",
        "=",
        "in",
        "x\x00y",
        "\udcff",
        "memory://",
        "memory:/",
        "sqlite:///",
        "sqlite://rel.db",
        "foo://x",
        "a" * 300,
        "..",
        '"q"',
        "a.b",
        "_manifests",
        "é",
        "\u200b",
        "%s",
        Name("ID"),
        Small.TWO,
        65000,
        65001,
        "CREATE SCHEMA FZ",
        b"",
        b"x",
        bytearray(b"x"),
        {},
        {"a": 1},
        set(),
        {1},
        frozenset({"A"}),
        [],
        [1],
        [[1]],
        [None],
        (),
        ("A",),
        ("ID",),
        ["A", "B"],
        ("ID", "ID"),
        range(3),
        Opaque(),
        Hostile(),
        Ellipsis,
        1 + 2j,
        decimal.Decimal("1.5"),
        decimal.Decimal("NaN"),
        decimal.Decimal("1e100"),
        uuid.UUID(int=7),
        dt.date(2020, 1, 1),
        dt.time(1, 2),
        dt.timedelta(seconds=1),
        dt.datetime(2020, 1, 1),
        dt.datetime(2020, 1, 1, tzinfo=dt.UTC),
        dt.datetime(2020, 1, 1, tzinfo=plus5),
        dt.datetime.min,
        dt.datetime.max,
        dt.datetime.min.replace(tzinfo=plus5),
        dt.datetime.max.replace(tzinfo=dt.UTC),
        dt.datetime.max.replace(tzinfo=dt.timezone(-dt.timedelta(hours=5))),
        Path("relative"),
        almanac.ColumnType.INT64,
        almanac.ColumnType.STRING,
        almanac.IndexKind.SORTED,
        almanac.Collation.DESC_NULLS_FIRST,
        almanac.ConsistencyMode.HA,
        almanac.EventType.TABLE_CREATE,
        [almanac.Collation.ASC_NULLS_LAST],
        almanac.ColumnDef(name="ID", type=almanac.ColumnType.INT64, nullable=False),
        [almanac.ColumnDef(name="ID", type=almanac.ColumnType.INT64, nullable=False)],
        almanac.TableProperties(),
        almanac.ConstantDefault(1),
        almanac.ConstantDefault("x"),
        almanac.FunctionDefault("RAND_UUID"),
        almanac.RetentionPolicy(keep_versions=3),
        almanac.CreateSchema("FZ", if_not_exists=True),
        [almanac.CreateSchema("FZ", if_not_exists=True)],
        _anything,
        memoryview(b"\x00\x01\x00\x05\x01"),
        b"\x00\x01\x00\x05\x01\x00",
        pa.array([1, None, 3]),
        pa.array(["a", "b"]),
        pa.chunked_array([[1], [2]]),
        pa.table({"X": [1]}),
        pa.table({"ID": ["1"]}),
        pa.record_batch({"ID": pa.array([1], pa.int64())}),
        pa.schema([("ID", pa.int64())]),
        pafs.LocalFileSystem(),
        Path("/nonexistent/almanac"),
    ]
    factories: list[Callable[[], object]] = [_constant(v) for v in fixed]
    factories.append(lambda: iter([1, 2]))
    factories.append(lambda: (c for c in [almanac.CreateSchema("FZ", if_not_exists=True)]))
    return factories


def legal_values(
    annotation: Any, param: str, context: dict[Any, list[object]] | None = None
) -> list[object]:
    """Plausible legal values for a parameter, so that calls go deeper;
    ``context`` holds live values by annotation (a catalog, its table...)."""
    if context:
        by_name = context.get(("param", param), [])
        with contextlib.suppress(TypeError):  # an unhashable annotation
            if annotation in context:
                return [*context[annotation], *by_name]
        if by_name:
            return list(by_name)
    if param == "target":
        return ["memory://"]
    if param in ("timeout",):
        return [0, 0.0]
    if param == "request_id":
        return [None, "req-1", "req-2"]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Union or origin is types.UnionType:
        out: list[object] = []
        for a in args:
            out.extend(legal_values(a, param, context))
        return out
    if annotation is type(None):
        return [None]
    if annotation is str:
        return ["ID", "A", "T", "S", "I", "Z", "PUBLIC", "Default", "RAND_UUID", "default"]
    if annotation is bool:
        return [True, False]
    if annotation is int:
        return [0, 1, 2, 3, 5, 2**63 - 1]
    if annotation is float:
        return [0.0, 0.5, 1, 10.0]
    if origin is tuple or origin is cabc.Sequence or origin is cabc.Iterable:
        inner = legal_values(args[0], param, context) if args else ["A"]
        return [*((v,) for v in inner), tuple(inner[:2]), list(inner[:1])]
    if annotation in (dt.datetime,):
        return [dt.datetime.now(dt.UTC), EPOCH]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return list(annotation)
    if annotation is almanac.ColumnDef:
        return [
            almanac.ColumnDef(name="ID", type=almanac.ColumnType.INT64, nullable=False),
            almanac.ColumnDef(name="B", type=almanac.ColumnType.STRING, length=5),
            almanac.ColumnDef(
                name="C", type=almanac.ColumnType.INT64, default=almanac.ConstantDefault(7)
            ),
        ]
    if annotation is almanac.PartitionFieldDef:
        return [almanac.PartitionFieldDef("ID", "bucket[4]"), almanac.PartitionFieldDef("B")]
    if annotation is almanac.SortFieldDef:
        return [almanac.SortFieldDef("ID", descending=True)]
    if annotation is almanac.TableProperties:
        return [almanac.TableProperties()]
    if annotation is Command:
        return [almanac.CreateSchema("FZ", if_not_exists=True)]
    if annotation is almanac.RetentionPolicy:
        return [almanac.RetentionPolicy(keep_versions=3)]
    return []


# --------------------------------------------------------------------------- the oracle


def conforms(value: object, annotation: Any) -> bool:
    """Whether ``value`` is a legal value of ``annotation`` (an independent
    statement of the rules in ``almanac._check``)."""
    if annotation is Any or annotation is object:
        return True
    if annotation is type(None):
        return value is None
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return any(conforms(value, a) for a in args)
    if annotation is bool:
        return type(value) is bool
    if annotation is int:
        return isinstance(value, int) and type(value) is not bool and INT64[0] <= value <= INT64[1]
    if annotation is float:
        if isinstance(value, float):
            return math.isfinite(value)
        return isinstance(value, int) and type(value) is not bool and abs(value) < 2**1023
    if annotation is str:
        if not isinstance(value, str) or "\x00" in value:
            return False
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if annotation is dt.datetime:
        return (
            isinstance(value, dt.datetime)
            and value.utcoffset() is not None
            and EPOCH <= value <= dt.datetime(6429, 1, 1, tzinfo=dt.UTC)
        )
    if origin is tuple:
        return isinstance(value, tuple) and all(conforms(v, args[0]) for v in value)
    if origin in (cabc.Iterable, cabc.Sequence):
        if isinstance(value, cabc.Iterator):
            return True  # consumed by the call, which checked each item
        # ordered collections of the item type; never a set or a mapping
        return isinstance(value, list | tuple | range) and all(conforms(v, args[0]) for v in value)
    if origin is cabc.Callable or annotation is cabc.Callable:
        return callable(value)
    if origin is os.PathLike:
        return isinstance(value, os.PathLike) and conforms(os.fspath(value), str)
    if origin is typing.Literal:
        return any(type(value) is type(a) and value == a for a in args)
    if origin in (cabc.Mapping, dict):
        return isinstance(value, cabc.Mapping) and all(
            conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items()
        )
    if getattr(annotation, "_is_protocol", False):
        return isinstance(value, Catalog)  # the one implementation users hold
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    raise AssertionError(f"the oracle does not know {annotation!r}")


def built_legally(obj: object) -> bool:
    """Every field of a built value matches its annotation."""
    if isinstance(obj, Predicate):
        return conforms(obj.column, str) and obj.op in almanac.data.reading.PREDICATE_OPS
    if isinstance(obj, almanac.ConstantDefault):
        return obj.value is None or isinstance(
            obj.value,
            bool | int | float | decimal.Decimal | str | bytes | dt.date | dt.time | uuid.UUID,
        )
    if isinstance(obj, almanac.FunctionDefault):
        return isinstance(obj.name, str)
    hints = typing.get_type_hints(type(obj))
    return all(
        conforms(getattr(obj, f.name), hints[f.name])
        for f in dataclasses.fields(obj)  # type: ignore[arg-type]
    )


# --------------------------------------------------------------------------- the run


@dataclasses.dataclass
class Report:
    calls: int = 0
    succeeded: int = 0
    refused: int = 0
    executed: int = 0
    by_target: dict[str, int] = dataclasses.field(default_factory=dict)


class Bug(AssertionError):
    pass


def _describe_call(name: str, kwargs: dict[str, object]) -> str:
    shown = ", ".join(f"{k}={v!r}"[:120] for k, v in kwargs.items())
    return f"{name}({shown})"


class Fuzzer:
    def __init__(self, seed: int, workdir: Path) -> None:
        self.rng = random.Random(seed)
        self.workdir = workdir
        self.odd = odd_values()
        self.cat = almanac.connect("memory://")
        self.data_cat = almanac.connect(str(workdir / "data-catalog"), durability="normal")
        self.context = data_context(self.data_cat)
        self.targets: list[tuple[str, Callable[..., Any], inspect.Signature, dict[str, Any]]] = []
        for fn in (*constructors(), *functions()):
            self.targets.append((label(fn), fn, inspect.signature(fn), type_hints(fn)))
        for name in catalog_methods():
            method = getattr(Catalog, name)
            hints = typing.get_type_hints(method)
            sig = inspect.signature(method)
            params = list(sig.parameters.values())[1:]
            self.targets.append((f"Catalog.{name}", method, sig.replace(parameters=params), hints))
        self.report = Report()

    # -- arguments ------------------------------------------------------------

    def _arguments(self, sig: inspect.Signature, hints: dict[str, Any]) -> dict[str, object]:
        """Arguments for one call: a third of the calls get one odd argument
        among legal ones, a third are legal (odd values that happen to be
        legal included), a third are odd throughout."""
        params = [
            p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        mode = self.rng.randrange(3)
        odd_one = self.rng.randrange(len(params)) if params else -1
        kwargs: dict[str, object] = {}
        for i, p in enumerate(params):
            legal = legal_values(hints.get(p.name, Any), p.name, self.context)
            odd = (mode == 0 and i == odd_one) or mode == 2 or not legal
            if p.default is not p.empty and not odd and self.rng.random() < 0.5:
                continue
            if odd and (mode != 2 or self.rng.random() < 0.6):
                kwargs[p.name] = self.rng.choice(self.odd)()
            else:
                kwargs[p.name] = self.rng.choice(legal) if legal else self.rng.choice(self.odd)()
        return kwargs

    @staticmethod
    def _split(
        sig: inspect.Signature, kwargs: dict[str, object]
    ) -> tuple[list[object], dict[str, object]]:
        args: list[object] = []
        rest: dict[str, object] = {}
        for p in sig.parameters.values():
            if p.name not in kwargs:
                continue
            if p.kind is p.POSITIONAL_ONLY:
                args.append(kwargs[p.name])
            else:
                rest[p.name] = kwargs[p.name]
        return args, rest

    def _tame(self, name: str, kwargs: dict[str, object], hints: dict[str, Any]) -> None:
        """Keep legal calls that would block for their legal length from blocking."""
        if name in ("Catalog.catalog_ready", "Catalog.wait_for_metadata_completeness"):
            if conforms(kwargs.get("timeout", 0), float | None):
                kwargs["timeout"] = 0
            ts = kwargs.get("timestamp")
            if (isinstance(ts, dt.datetime) and conforms(ts, dt.datetime)) or (
                type(ts) is int and ts > self.cat.clock.now()
            ):
                kwargs["timestamp"] = 0

    # -- one call -------------------------------------------------------------

    def _legal_call(self, name: str, kwargs: dict[str, object], hints: dict[str, Any]) -> bool:
        return all(
            conforms(
                v.replace("\x00", "") if (name, k) in NUL_OK and type(v) is str else v,
                hints.get(k, Any),
            )
            for k, v in kwargs.items()
        )

    def _close_result(self, result: object) -> object:
        if inspect.isgenerator(result):
            return list(result)  # a read's batches: its errors come while iterating
        if isinstance(result, Catalog):
            if result is not self.data_cat:
                result.close()
        elif isinstance(result, Future):
            return result.result(timeout=30)
        elif isinstance(result, contextlib.AbstractContextManager):
            with result:
                pass
        return result

    def call(self, index: int) -> None:
        name, fn, sig, hints = self.targets[index % len(self.targets)]
        kwargs = self._arguments(sig, hints)
        self._tame(name, kwargs, hints)
        is_method = name.startswith("Catalog.")
        target: Callable[..., Any] = getattr(self.cat, name.split(".")[1]) if is_method else fn
        args, rest = self._split(sig, kwargs)
        before_version = self.cat.latest_version
        before_snapshot = self.cat.catalog()
        before_data_version = self.data_cat.latest_version
        before_files = set(os.listdir(self.workdir)) if name == "connect" else set()
        self.report.calls += 1
        self.report.by_target[name] = self.report.by_target.get(name, 0) + 1
        try:
            result = target(*args, **rest)
            result = self._close_result(result)
        except CatalogError:
            self.report.refused += 1
            if (
                self.cat.latest_version != before_version
                or self.cat.catalog() is not before_snapshot
            ):
                raise Bug(
                    f"{_describe_call(name, kwargs)} failed but changed the catalog"
                ) from None
            if self.data_cat.latest_version != before_data_version:
                raise Bug(
                    f"{_describe_call(name, kwargs)} failed but changed the data catalog"
                ) from None
            if name == "connect" and set(os.listdir(self.workdir)) != before_files:
                new = set(os.listdir(self.workdir)) - before_files
                raise Bug(f"{_describe_call(name, kwargs)} failed but left {sorted(new)}") from None
            return
        except Exception as exc:
            raise Bug(f"{_describe_call(name, kwargs)} raised {type(exc).__name__}: {exc}") from exc
        self.report.succeeded += 1
        if isinstance(fn, type) and dataclasses.is_dataclass(fn):
            if not built_legally(result):
                raise Bug(f"{_describe_call(name, kwargs)} built an illegal {result!r}")
            if isinstance(result, Command):
                self.execute(result)
        elif not self._legal_call(name, kwargs, hints):
            raise Bug(f"{_describe_call(name, kwargs)} succeeded with an illegal argument")

    def execute(self, command: Command) -> None:
        before_version = self.cat.latest_version
        before_snapshot = self.cat.catalog()
        self.report.executed += 1
        try:
            self.cat.execute([command])
        except CatalogError:
            if (
                self.cat.latest_version != before_version
                or self.cat.catalog() is not before_snapshot
            ):
                raise Bug(f"execute([{command!r}]) failed but changed the catalog") from None
        except Exception as exc:
            raise Bug(f"execute([{command!r}]) raised {type(exc).__name__}: {exc}") from exc

    def _fresh_catalog(self) -> Catalog:
        """A memory catalog with objects the legal names refer to."""
        cat = almanac.connect("memory://")
        cat.sql(
            "CREATE TABLE T (ID INT64 PRIMARY KEY, A INT32, S VARCHAR(10));"
            "CREATE INDEX I ON T (A);"
            "CREATE ZONE Z WITH (PARTITIONS = 2, STORAGE_PROFILES = 'default')"
        )
        return cat

    def run(self, calls: int, *, reset_every: int = 4000) -> Report:
        """``calls`` calls; a background thread's failure counts as a bug too."""
        failures: list[threading.ExceptHookArgs] = []
        previous = threading.excepthook
        threading.excepthook = failures.append
        try:
            for i in range(calls):
                if i % reset_every == 0:
                    self.cat.close()
                    self.cat = self._fresh_catalog()
                self.call(self.rng.randrange(len(self.targets)))
                if failures:
                    f = failures[0]
                    raise Bug(
                        f"thread {f.thread.name if f.thread else '?'} failed after call {i}: "
                        f"{f.exc_type.__name__}: {f.exc_value}"
                    )
        finally:
            threading.excepthook = previous
            self.cat.close()
            self.data_cat.close()
        return self.report


def data_context(cat: Catalog) -> dict[Any, list[object]]:
    """Live legal values of the data plane's parameters, by annotation: the
    catalog (with a warehouse), its table T with rows, a data file of it..."""
    from almanac.data import DataFile, conform, new_write_id, plan_scan, write_table
    from almanac.model.clock import HybridClock
    from almanac.model.read_point import ReadPoint
    from almanac.serialization import encode_catalog
    from almanac.sql.reads import ReadSource
    from almanac.system_tables import SystemRows, system_rows

    if cat.catalog().table("T") is None:
        cat.sql("CREATE TABLE T (ID INT64 PRIMARY KEY, A INT32, S VARCHAR(10))")
    rows = pa.table(
        {
            "ID": pa.array([1, 2], pa.int64()),
            "A": pa.array([3, 4], pa.int32()),
            "S": pa.array(["x", "y"]),
        }
    )
    write_table(cat, "T", rows)
    table = cat.catalog().table("T")
    assert table is not None
    data = TableData.for_catalog(cat)
    return {
        ("param", "target"): ["memory://", cat.target],
        ("param", "name"): ["T", "SYSTEM.TABLES", "TABLES", "COLUMNS", "HISTORY", "SERVERS"],
        ("param", "write_dir"): [data.warehouse.write_dir(table.id, new_write_id())],
        Catalog: [cat],
        ReadSource: [cat],
        Table: [table],
        Column: list(table.columns),
        CatalogVersion: [cat.catalog()],
        TableData: [data],
        Warehouse: [data.warehouse],
        Metastore: [data.store],
        HybridClock: [cat.clock],
        pa.Table: [rows, conform(rows, table)],
        pa.RecordBatch: [rows.to_batches()[0]],
        pa.Array: [pa.array([1, 2, None], pa.int64()), pa.array(["a", None])],
        pa.ChunkedArray: [pa.chunked_array([[1, 2]], pa.int64())],
        pafs.FileSystem: [pafs.LocalFileSystem()],
        DataFile: list(plan_scan(cat, data, "T").files),
        Predicate: [Predicate("ID", "=", 1), Predicate("A", ">", 0)],
        almanac.CreateTable: [
            almanac.CreateTable(
                name="T2",
                columns=(
                    almanac.ColumnDef(name="ID", type=almanac.ColumnType.INT64, nullable=False),
                ),
                primary_key=("ID",),
            )
        ],
        SystemRows: [system_rows(cat, "TABLES"), system_rows(cat, "SERVERS")],
        ReadPoint: [ReadPoint(version=cat.latest_version)],
        bytes: [encode_catalog(cat.catalog())],
    }


def fuzz(calls: int, seed: int, workdir: Path) -> Report:
    return Fuzzer(seed, workdir).run(calls)
