"""Placement values: a table's route, a server's index, registration and
report. Placement is runtime state beside the catalog, not catalog versions,
so these are plain frozen values with a canonical JSON codec (sorted keys,
no spaces, UTF-8): equal values encode to equal bytes, which is what lets a
writer compare the exact bytes it read. ``decode`` checks every field and
the invariants between them, raising ``CorruptDataError`` on damage rather
than handing a half-valid route to the placement loop.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from almanac.errors import CorruptDataError

__all__ = [
    "PlacementReasons",
    "ServerIndex",
    "ServerInfo",
    "ServerReport",
    "TableRoute",
    "Tablet",
    "TabletReport",
    "TabletState",
]

T = TypeVar("T")


class TabletState(StrEnum):
    PREPARING = "PREPARING"
    CREATING = "CREATING"
    RUNNING = "RUNNING"
    REPLACED = "REPLACED"
    DELETED = "DELETED"
    SOFT_DELETED = "SOFT_DELETED"


@dataclass(frozen=True, slots=True)
class Tablet:
    """One bucket of a table's partition spec, hosted by ``replicas``."""

    id: int
    partition: int
    state: TabletState
    replicas: tuple[str, ...] = ()
    leader: str | None = None
    table_version: int = 0
    assigned_at: float = 0.0

    def _record(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "partition": self.partition,
            "state": self.state.value,
            "replicas": list(self.replicas),
            "leader": self.leader,
            "table_version": self.table_version,
            "assigned_at": self.assigned_at,
        }


@dataclass(frozen=True, slots=True)
class TableRoute:
    """Where a table's tablets live; ``version`` counts its changes."""

    table_id: int
    version: int
    table_version: int
    tablets: tuple[Tablet, ...]
    next_tablet_id: int
    state: TabletState

    def encode(self) -> bytes:
        return _dump(
            {
                "table_id": self.table_id,
                "version": self.version,
                "table_version": self.table_version,
                "tablets": [t._record() for t in self.tablets],
                "next_tablet_id": self.next_tablet_id,
                "state": self.state.value,
            }
        )

    @staticmethod
    def decode(data: bytes) -> TableRoute:
        return _decode(data, "table route", _route)

    @property
    def altering(self) -> bool:
        """An ALTER has not reached every running tablet yet."""
        return any(
            t.state is TabletState.RUNNING and t.table_version < self.table_version
            for t in self.tablets
        )

    def tablet(self, tablet_id: int) -> Tablet | None:
        for t in self.tablets:
            if t.id == tablet_id:
                return t
        return None


@dataclass(frozen=True, slots=True)
class PlacementReasons:
    """Why the placement leader could not place some tablets of a table on
    its last pass: (tablet id, reason) pairs by tablet id. Only the leader
    writes it, and only when it changes."""

    table_id: int
    tablets: tuple[tuple[int, str], ...]

    def reason(self, tablet_id: int) -> str | None:
        for tid, reason in self.tablets:
            if tid == tablet_id:
                return reason
        return None

    def encode(self) -> bytes:
        return _dump(
            {"table_id": self.table_id, "tablets": [[tid, why] for tid, why in self.tablets]}
        )

    @staticmethod
    def decode(data: bytes) -> PlacementReasons:
        return _decode(data, "placement reasons", _reasons)


@dataclass(frozen=True, slots=True)
class ServerIndex:
    """What one server must host: the desired state it watches."""

    server: str
    tablets: tuple[tuple[int, int], ...]
    version: int

    def encode(self) -> bytes:
        return _dump(
            {
                "server": self.server,
                "tablets": [list(pair) for pair in self.tablets],
                "version": self.version,
            }
        )

    @staticmethod
    def decode(data: bytes) -> ServerIndex:
        return _decode(data, "server index", _index)


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """A tablet server's registration, kept under its lease.

    ``instance_id`` names the data directory the server runs on (empty in
    records written before servers had one, and then left out of the JSON):
    a restart on the same directory may take its own registration over."""

    name: str
    host: str
    flight_port: int
    attributes: tuple[tuple[str, str], ...]
    storage_profiles: tuple[str, ...]
    started_at: float
    lease: int
    instance_id: str = ""

    def encode(self) -> bytes:
        record: dict[str, Any] = {
            "name": self.name,
            "host": self.host,
            "flight_port": self.flight_port,
            "attributes": [list(pair) for pair in self.attributes],
            "storage_profiles": list(self.storage_profiles),
            "started_at": self.started_at,
            "lease": self.lease,
        }
        if self.instance_id:
            record["instance_id"] = self.instance_id
        return _dump(record)

    @staticmethod
    def decode(data: bytes) -> ServerInfo:
        return _decode(data, "server registration", _info)


@dataclass(frozen=True, slots=True)
class TabletReport:
    table_id: int
    tablet_id: int
    state: TabletState
    table_version: int


@dataclass(frozen=True, slots=True)
class ServerReport:
    """A server's latest full report of what it holds locally."""

    server: str
    tablets: tuple[TabletReport, ...]
    sequence: int
    reported_at: float

    def encode(self) -> bytes:
        return _dump(
            {
                "server": self.server,
                "tablets": [
                    {
                        "table_id": t.table_id,
                        "tablet_id": t.tablet_id,
                        "state": t.state.value,
                        "table_version": t.table_version,
                    }
                    for t in self.tablets
                ],
                "sequence": self.sequence,
                "reported_at": self.reported_at,
            }
        )

    @staticmethod
    def decode(data: bytes) -> ServerReport:
        return _decode(data, "server report", _report)


# --------------------------------------------------------------------------- codec


class _Bad(Exception):
    """A field breaks its rule; becomes a CorruptDataError naming the record."""


def _dump(record: dict[str, Any]) -> bytes:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def _reject_constant(name: str) -> Any:
    raise _Bad(f"{name} is not a JSON number")


def _decode(data: bytes, what: str, build: Callable[[dict[str, Any]], T]) -> T:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise CorruptDataError(f"A {what} must be bytes, got {type(data).__name__}", what=what)
    try:
        record = json.loads(bytes(data).decode("utf-8"), parse_constant=_reject_constant)
        if not isinstance(record, dict):
            raise _Bad("not a JSON object")
        return build(record)
    except (_Bad, ValueError, RecursionError) as exc:
        raise CorruptDataError(
            f"Stored {what} is damaged ({exc}): {bytes(data)[:200]!r}", what=what
        ) from None


def _fields(record: dict[str, Any], names: tuple[str, ...] | frozenset[str]) -> None:
    if record.keys() != set(names):
        raise _Bad(f"fields {sorted(record)} instead of {sorted(names)}")


def _int(value: object, name: str, lo: int = 0) -> int:
    if type(value) is not int or value < lo:  # a bool is not an int here
        raise _Bad(f"{name} must be an integer >= {lo}, got {value!r}")
    return value


def _id_pair(value: object) -> bool:
    if type(value) is not list or len(value) != 2:
        return False
    a, b = value
    return type(a) is int and type(b) is int and a >= 0 and b >= 0


def _float(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Bad(f"{name} must be a number, got {value!r}")
    out = float(value)
    if not math.isfinite(out) or out < 0:
        raise _Bad(f"{name} must be a finite number >= 0, got {value!r}")
    return out


def _str(value: object, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise _Bad(f"{name} must be a non-empty string, got {value!r}")
    return value


def _list(value: object, name: str) -> list[Any]:
    if not isinstance(value, list):
        raise _Bad(f"{name} must be a list, got {value!r}")
    return value


_STATES = {state.value: state for state in TabletState}


def _state(value: object, name: str) -> TabletState:
    state = _STATES.get(value) if type(value) is str else None
    if state is None:
        raise _Bad(f"{name} must be a tablet state, got {value!r}")
    return state


def _sorted_unique(items: list[T], name: str) -> tuple[T, ...]:
    if any(not a < b for a, b in itertools.pairwise(items)):  # type: ignore[operator]
        raise _Bad(f"{name} must be sorted without duplicates")
    return tuple(items)


_TABLET_FIELDS = frozenset(
    ("id", "partition", "state", "replicas", "leader", "table_version", "assigned_at")
)


def _tablet(record: object) -> Tablet:
    if type(record) is not dict:
        raise _Bad(f"a tablet must be an object, got {record!r}")
    _fields(record, _TABLET_FIELDS)
    replicas = _sorted_unique(
        [_str(r, "replica") for r in _list(record["replicas"], "replicas")], "replicas"
    )
    leader = record["leader"]
    if leader is not None and leader not in replicas:
        raise _Bad(f"leader {leader!r} is not one of the replicas {list(replicas)}")
    return Tablet(
        id=_int(record["id"], "tablet id"),
        partition=_int(record["partition"], "partition"),
        state=_state(record["state"], "tablet state"),
        replicas=replicas,
        leader=leader,
        table_version=_int(record["table_version"], "table_version"),
        assigned_at=_float(record["assigned_at"], "assigned_at"),
    )


def _route(record: dict[str, Any]) -> TableRoute:
    _fields(record, ("table_id", "version", "table_version", "tablets", "next_tablet_id", "state"))
    tablets = tuple(_tablet(t) for t in _list(record["tablets"], "tablets"))
    next_id = _int(record["next_tablet_id"], "next_tablet_id")
    ids = [t.id for t in tablets]
    if len(set(ids)) != len(ids) or any(i >= next_id for i in ids):
        raise _Bad(f"tablet ids {ids} must be unique and below next_tablet_id {next_id}")
    return TableRoute(
        table_id=_int(record["table_id"], "table_id"),
        version=_int(record["version"], "version"),
        table_version=_int(record["table_version"], "table_version"),
        tablets=tablets,
        next_tablet_id=next_id,
        state=_state(record["state"], "route state"),
    )


def _pair(value: object, name: str, item: Callable[[object, str], T]) -> tuple[T, T]:
    pair = _list(value, name)
    if len(pair) != 2:
        raise _Bad(f"{name} must be a pair, got {value!r}")
    return item(pair[0], name), item(pair[1], name)


def _index(record: dict[str, Any]) -> ServerIndex:
    _fields(record, ("server", "tablets", "version"))
    listed = _list(record["tablets"], "tablets")
    if all(_id_pair(p) for p in listed):  # the common case, checked at once
        pairs = [(p[0], p[1]) for p in listed]
    else:
        pairs = [_pair(p, "tablet", _int) for p in listed]
    return ServerIndex(
        server=_str(record["server"], "server"),
        tablets=_sorted_unique(pairs, "tablets"),
        version=_int(record["version"], "version"),
    )


def _reasons(record: dict[str, Any]) -> PlacementReasons:
    _fields(record, ("table_id", "tablets"))
    pairs = []
    for pair in _list(record["tablets"], "tablets"):
        if type(pair) is not list or len(pair) != 2:
            raise _Bad(f"a tablet's reason must be a [tablet id, reason] pair, got {pair!r}")
        pairs.append((_int(pair[0], "tablet id"), _str(pair[1], "reason")))
    tablets = _sorted_unique(pairs, "tablets")
    if len({tid for tid, _ in tablets}) != len(tablets):
        raise _Bad("a tablet has two reasons")
    return PlacementReasons(table_id=_int(record["table_id"], "table_id"), tablets=tablets)


def _info(record: dict[str, Any]) -> ServerInfo:
    names = ("name", "host", "flight_port", "attributes", "storage_profiles", "started_at", "lease")
    _fields(record, (*names, "instance_id") if "instance_id" in record else names)
    attributes = [_pair(p, "attribute", _str) for p in _list(record["attributes"], "attributes")]
    profiles = [_str(p, "storage profile") for p in _list(record["storage_profiles"], "profiles")]
    keys = [k for k, _ in attributes]
    if len(set(keys)) != len(keys):
        raise _Bad(f"attribute names {keys} repeat")
    return ServerInfo(
        name=_str(record["name"], "name"),
        host=_str(record["host"], "host"),
        flight_port=_int(record["flight_port"], "flight_port"),
        attributes=_sorted_unique(attributes, "attributes"),
        storage_profiles=tuple(profiles),
        started_at=_float(record["started_at"], "started_at"),
        lease=_int(record["lease"], "lease"),
        instance_id=_str(record["instance_id"], "instance_id") if "instance_id" in record else "",
    )


_REPORT_FIELDS = frozenset(("table_id", "tablet_id", "state", "table_version"))


def _tablet_report(record: object) -> TabletReport:
    if type(record) is not dict:
        raise _Bad(f"a tablet report must be an object, got {record!r}")
    _fields(record, _REPORT_FIELDS)
    return TabletReport(
        table_id=_int(record["table_id"], "table_id"),
        tablet_id=_int(record["tablet_id"], "tablet_id"),
        state=_state(record["state"], "tablet state"),
        table_version=_int(record["table_version"], "table_version"),
    )


def _report(record: dict[str, Any]) -> ServerReport:
    _fields(record, ("server", "tablets", "sequence", "reported_at"))
    return ServerReport(
        server=_str(record["server"], "server"),
        tablets=tuple(_tablet_report(t) for t in _list(record["tablets"], "tablets")),
        sequence=_int(record["sequence"], "sequence"),
        reported_at=_float(record["reported_at"], "reported_at"),
    )
