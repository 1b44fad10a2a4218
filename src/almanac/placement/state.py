"""Reads of the stored placement state, for everything that looks at it
(the placement loop, system tables, the CLI, the Flight client, servers).
A record whose key and content disagree is as damaged as unreadable bytes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from almanac.errors import CorruptDataError
from almanac.metastore import KeyValue, Metastore
from almanac.placement.keys import (
    REASON_PREFIX,
    REPORT_PREFIX,
    ROUTE_PREFIX,
    SERVER_INDEX_PREFIX,
    SERVER_PREFIX,
    reason_key,
    route_key,
    server_index_key,
)
from almanac.placement.model import (
    PlacementReasons,
    ServerIndex,
    ServerInfo,
    ServerReport,
    TableRoute,
)

__all__ = [
    "DecodeMemo",
    "decode_reasons",
    "decode_report",
    "decode_route",
    "decode_server",
    "decode_server_index",
    "read_reason",
    "read_reasons",
    "read_routes_with_reasons",
    "read_reports",
    "read_route",
    "read_routes",
    "read_server_index",
    "read_server_indexes",
    "read_servers",
]

T = TypeVar("T")


def _named(kv: KeyValue, decode: Callable[[bytes], T], name: Callable[[T], str], prefix: str) -> T:
    try:
        value = decode(kv.value)
    except CorruptDataError as exc:
        raise CorruptDataError(f"Metastore key '{kv.key}': {exc.message}", key=kv.key) from None
    if prefix + name(value) != kv.key:
        raise CorruptDataError(
            f"Metastore key '{kv.key}' holds the record of '{name(value)}'", key=kv.key
        )
    return value


def decode_route(kv: KeyValue) -> TableRoute:
    """The route stored in ``kv``, checked against its key."""
    return _named(kv, TableRoute.decode, lambda r: str(r.table_id), ROUTE_PREFIX)


def read_routes(store: Metastore) -> dict[int, TableRoute]:
    routes = (decode_route(kv) for kv in store.range(ROUTE_PREFIX).kvs)
    return {route.table_id: route for route in routes}


def read_route(store: Metastore, table_id: int) -> TableRoute | None:
    kv = store.get(route_key(table_id))
    return None if kv is None else decode_route(kv)


def decode_server(kv: KeyValue) -> ServerInfo:
    """The registration stored in ``kv``, checked against its key."""
    return _named(kv, ServerInfo.decode, lambda s: s.name, SERVER_PREFIX)


def read_servers(store: Metastore) -> dict[str, ServerInfo]:
    """Registered servers: a key lives only as long as its server's lease."""
    infos = (decode_server(kv) for kv in store.range(SERVER_PREFIX).kvs)
    return {info.name: info for info in infos}


def decode_report(kv: KeyValue) -> ServerReport:
    """The report stored in ``kv``, checked against its key."""
    return _named(kv, ServerReport.decode, lambda r: r.server, REPORT_PREFIX)


def read_reports(store: Metastore) -> dict[str, ServerReport]:
    reports = (decode_report(kv) for kv in store.range(REPORT_PREFIX).kvs)
    return {report.server: report for report in reports}


def decode_reasons(kv: KeyValue) -> PlacementReasons:
    """The placement reasons stored in ``kv``, checked against their key."""
    return _named(kv, PlacementReasons.decode, lambda r: str(r.table_id), REASON_PREFIX)


def read_reasons(store: Metastore) -> dict[int, PlacementReasons]:
    """Why the leader cannot place tablets, by table (tables it can place have none)."""
    found = (decode_reasons(kv) for kv in store.range(REASON_PREFIX).kvs)
    return {reasons.table_id: reasons for reasons in found}


def read_reason(store: Metastore, table_id: int) -> PlacementReasons | None:
    kv = store.get(reason_key(table_id))
    return None if kv is None else decode_reasons(kv)


def read_routes_with_reasons(
    store: Metastore, table_id: int | None = None
) -> tuple[dict[int, TableRoute], dict[int, PlacementReasons]]:
    """Every route (or the one of ``table_id``) and the leader's reasons for
    them, read at one revision: the leader changes a route and its reasons
    in one transaction, so a placed tablet never shows the reason it had."""
    key = ROUTE_PREFIX if table_id is None else route_key(table_id)
    found = store.range(key)
    kvs = [kv for kv in found.kvs if table_id is None or kv.key == key]
    routes = {route.table_id: route for route in map(decode_route, kvs)}
    key = REASON_PREFIX if table_id is None else reason_key(table_id)
    said = store.range(key, revision=found.revision).kvs
    reasons = (decode_reasons(kv) for kv in said if table_id is None or kv.key == key)
    return routes, {r.table_id: r for r in reasons if r.table_id in routes}


class DecodeMemo(Generic[T]):
    """Decoded records by key, reused while their stored bytes stay the
    same: a loop that reads the same thousands of records every second
    decodes only those that changed."""

    def __init__(self, decode: Callable[[KeyValue], T]) -> None:
        self._decode = decode
        self._known: dict[str, tuple[bytes, T]] = {}

    def __call__(self, kvs: Iterable[KeyValue], damaged: list[str] | None = None) -> list[T]:
        """The records of ``kvs``; with ``damaged``, one that cannot be
        read is left out and its error noted there instead of raised."""
        known, fresh = self._known, {}
        out = []
        for kv in kvs:
            hit = known.get(kv.key)
            if hit is not None and hit[0] == kv.value:
                value = hit[1]
            else:
                try:
                    value = self._decode(kv)
                except CorruptDataError as exc:
                    if damaged is None:
                        raise
                    damaged.append(str(exc))
                    continue
            fresh[kv.key] = (kv.value, value)
            out.append(value)
        self._known = fresh
        return out


def decode_server_index(kv: KeyValue) -> ServerIndex:
    """The server index stored in ``kv``, checked against its key."""
    return _named(kv, ServerIndex.decode, _server, SERVER_INDEX_PREFIX)


def read_server_index(store: Metastore, server: str) -> ServerIndex | None:
    kv = store.get(server_index_key(server))
    return None if kv is None else decode_server_index(kv)


def read_server_indexes(store: Metastore) -> dict[str, ServerIndex]:
    indexes = (decode_server_index(kv) for kv in store.range(SERVER_INDEX_PREFIX).kvs)
    return {index.server: index for index in indexes}


def _server(index: ServerIndex) -> str:
    return index.server
