"""An argument-type fuzzer for the public Python API.

It finds what to call by introspection: every command class exported by
``almanac``, the values users build (column definitions, defaults,
properties, retention policies, predicates), the exported functions, and
every public method of ``Catalog``. Each call gets arguments drawn from a pool
of wrong and odd values (None, bools, floats with nan/inf, huge ints, bytes,
containers, NUL and surrogate strings, naive/aware/extreme datetimes, plain
objects), mixed with plausible legal values so that calls get past their
first argument. Rules checked on every call:

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
import inspect
import math
import os
import random
import threading
import types
import typing
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import almanac
from almanac import Catalog, CatalogError, Command
from almanac.data import Predicate

INT64 = (-(2**63), 2**63 - 1)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

# --------------------------------------------------------------------------- what is called

USER_BUILT: tuple[type, ...] = (
    almanac.ColumnDef,
    almanac.ConstantDefault,
    almanac.FunctionDefault,
    almanac.TableProperties,
    almanac.RetentionPolicy,
    almanac.PlacementSettings,
    Predicate,
)
"""Values users build and hand to the catalog, besides commands."""

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
    "Target": "made by parse_target, which is called",
    "Preview": "returned by preview, which is called",
    "RemoteCatalog": "made by connect for an http:// target, which needs a server",
    "RemoteEvent": "made by a remote catalog for its listeners",
    "RemoteListener": "a type alias of remote listener callables",
    "RemoteVersionInfo": "returned by RemoteCatalog.history",
    "VersionInfo": "returned by history",
    "Zone": "a descriptor the catalog builds",
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


STATIC_METHODS: tuple[Callable[..., Any], ...] = (almanac.CatalogDiff.from_json,)
"""Public static methods that read user input (exported classes' own functions)."""


def functions() -> list[Callable[..., Any]]:
    return [
        *(
            obj
            for name in almanac.__all__
            if isinstance(obj := getattr(almanac, name), types.FunctionType)
        ),
        *STATIC_METHODS,
    ]


def catalog_methods() -> list[str]:
    return sorted(
        name
        for name, _ in inspect.getmembers(Catalog, inspect.isfunction)
        if not name.startswith("_") and name not in METHODS_NOT_CALLED
    )


def uncovered_exports() -> list[str]:
    """Exported names that the fuzzer neither calls nor explains."""
    called = {c.__name__ for c in (*constructors(), *functions())}
    out = []
    for name in almanac.__all__:
        obj = getattr(almanac, name)
        if name in called or name in NOT_CALLED or name == "Command":
            continue
        if isinstance(obj, type) and issubclass(obj, enum.Enum | BaseException):
            continue
        if isinstance(obj, str):
            continue
        out.append(name)
    return out


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
    ]
    factories: list[Callable[[], object]] = [_constant(v) for v in fixed]
    factories.append(lambda: iter([1, 2]))
    factories.append(lambda: (c for c in [almanac.CreateSchema("FZ", if_not_exists=True)]))
    return factories


def legal_values(annotation: Any, param: str) -> list[object]:
    """Plausible legal values for a parameter, so that calls go deeper."""
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
            out.extend(legal_values(a, param))
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
        inner = legal_values(args[0], param) if args else ["A"]
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
        self.targets: list[tuple[str, Callable[..., Any], inspect.Signature, dict[str, Any]]] = []
        for fn in (*constructors(), *functions()):
            hints = typing.get_type_hints(fn)
            self.targets.append((fn.__name__, fn, inspect.signature(fn), hints))
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
            legal = legal_values(hints.get(p.name, Any), p.name)
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
        if isinstance(result, Catalog):
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
            if name == "connect" and set(os.listdir(self.workdir)) != before_files:
                new = set(os.listdir(self.workdir)) - before_files
                raise Bug(f"{_describe_call(name, kwargs)} failed but left {sorted(new)}") from None
            return
        except Exception as exc:
            raise Bug(f"{_describe_call(name, kwargs)} raised {type(exc).__name__}: {exc}") from exc
        self.report.succeeded += 1
        if isinstance(fn, type):
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
        return self.report


def fuzz(calls: int, seed: int, workdir: Path) -> Report:
    return Fuzzer(seed, workdir).run(calls)
