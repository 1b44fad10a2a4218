"""How a table's route follows the catalog, and how a route change is
written: one metastore transaction that compares the exact bytes of the
route and of every server index it rewrites (or their absence), so that a
writer that read stale state fails and retries from a fresh read instead of
overwriting. Server indexes are never edited on their own: they are derived
from the routes (``index_entries``), which keeps the two in step by
construction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from almanac.catalog_version import CatalogVersion
from almanac.descriptors import Table
from almanac.errors import ConflictError
from almanac.metastore import Compare, Delete, KeyValue, Metastore, Op, Put
from almanac.placement.keys import route_key, server_index_key, tombstone_key
from almanac.placement.model import ServerIndex, TableRoute, Tablet, TabletState
from almanac.placement.state import decode_route

__all__ = [
    "HOSTED",
    "RouteWrite",
    "follow_catalog",
    "index_entries",
    "is_soft_deleted",
    "partitions_of",
    "route_write",
    "update_route",
]

HOSTED = frozenset({TabletState.CREATING, TabletState.RUNNING, TabletState.SOFT_DELETED})
"""Tablet states its replicas keep (and find in their server index); a
DELETED or REPLACED tablet leaves the indexes, and its servers drop it."""


def is_soft_deleted(table: Table) -> bool:
    """The one place placement asks whether a table is soft-deleted."""
    return bool(getattr(table, "soft_deleted", False))


def partitions_of(snapshot: CatalogVersion, table: Table) -> int:
    """The table's tablet count: its zone's partitions (``data.tablets``
    buckets rows the same way; placement does not need the data extras)."""
    zone = snapshot.zone_by_id(table.zone_id)
    return 1 if zone is None else zone.partitions


def index_entries(route: TableRoute | None) -> dict[str, set[tuple[int, int]]]:
    """What each server must host of this route."""
    out: dict[str, set[tuple[int, int]]] = {}
    if route is None:
        return out
    for tablet in route.tablets:
        if tablet.state in HOSTED:
            for server in tablet.replicas:
                out.setdefault(server, set()).add((route.table_id, tablet.id))
    return out


def _fresh(table_id: int, table_version: int, partitions: int) -> TableRoute:
    return TableRoute(
        table_id=table_id,
        version=1,
        table_version=table_version,
        tablets=tuple(Tablet(i, i, TabletState.PREPARING) for i in range(partitions)),
        next_tablet_id=partitions,
        state=TabletState.PREPARING,
    )


def _all(route: TableRoute, state: TabletState) -> TableRoute:
    tablets = tuple(
        t if t.state is TabletState.REPLACED else dataclasses.replace(t, state=state)
        for t in route.tablets
    )
    return dataclasses.replace(route, tablets=tablets, state=state)


def _recovered(route: TableRoute, now: float) -> TableRoute:
    """Back from SOFT_DELETED: a tablet with replicas must report again
    (CREATING, so the replace timeout applies); one without waits to be
    assigned."""
    tablets = tuple(
        t
        if t.state is TabletState.REPLACED
        else dataclasses.replace(
            t,
            state=TabletState.CREATING if t.replicas else TabletState.PREPARING,
            assigned_at=now,
        )
        for t in route.tablets
    )
    return dataclasses.replace(route, tablets=tablets, state=TabletState.PREPARING)


def follow_catalog(
    snapshot: CatalogVersion, table_id: int, route: TableRoute | None, now: float
) -> TableRoute | None:
    """The route the catalog's ``snapshot`` wants for ``table_id``, given
    the stored ``route``: the single mapping from a table's catalog state to
    its route state (created → PREPARING tablets, one per partition;
    dropped → DELETED; soft-deleted → SOFT_DELETED; recovered → back to
    being assigned; altered → the new target table version). Returns
    ``route`` itself when nothing changes, None for no route at all."""
    table = snapshot.table_by_id(table_id)
    if table is None:
        if route is None or route.state is TabletState.DELETED:
            return route
        if table_id >= snapshot.object_id_gen:
            return route  # a table newer than the snapshot, not a dropped one
        return _bump(_all(route, TabletState.DELETED), route)
    if route is None:
        made = _fresh(table_id, table.table_version, partitions_of(snapshot, table))
        return _all(made, TabletState.SOFT_DELETED) if is_soft_deleted(table) else made
    if route.state is TabletState.DELETED:
        return route  # ids are never reused: a deleted route stays deleted
    new = route
    if is_soft_deleted(table):
        if route.state is not TabletState.SOFT_DELETED:
            new = _all(route, TabletState.SOFT_DELETED)
    elif route.state is TabletState.SOFT_DELETED:
        new = _recovered(route, now)
    if new.table_version != table.table_version:
        new = dataclasses.replace(new, table_version=table.table_version)
    return _bump(new, route)


def _bump(new: TableRoute, old: TableRoute | None) -> TableRoute:
    if old is None or new == old:
        return new
    return dataclasses.replace(new, version=old.version + 1)


# --------------------------------------------------------------------------- writing


@dataclasses.dataclass(frozen=True, slots=True)
class RouteWrite:
    """The compares and ops that move one route (and the indexes it
    touches) from what was read to what is wanted."""

    compares: tuple[Compare, ...]
    ops: tuple[Op, ...]


def _same(key: str, kv: KeyValue | None) -> Compare:
    return Compare.absent(key) if kv is None else Compare.value(key, "==", kv.value)


def route_write(
    store: Metastore,
    table_id: int,
    read: KeyValue | None,
    new: TableRoute | None,
    indexes: dict[str, KeyValue | None] | None = None,
) -> RouteWrite:
    """Move the route read as ``read`` to ``new`` (None: remove it and leave
    a tombstone holding its last bytes). The indexes of servers whose
    share changes are taken from ``indexes`` when given (bytes read
    earlier), else read now; either way the write compares those bytes."""
    key = route_key(table_id)
    old = None if read is None else decode_route(read)
    compares = [_same(key, read)]
    ops: list[Op] = []
    if new is None:
        if read is not None:
            ops += [Delete(key), Put(tombstone_key(table_id), read.value)]
    else:
        ops.append(Put(key, new.encode()))
    before, after = index_entries(old), index_entries(new)
    for server in sorted(set(before) | set(after)):
        if before.get(server, set()) == after.get(server, set()):
            continue
        ikey = server_index_key(server)
        kv = indexes[server] if indexes is not None and server in indexes else store.get(ikey)
        current = ServerIndex(server, (), 0) if kv is None else ServerIndex.decode(kv.value)
        entries = set(current.tablets) - before.get(server, set()) | after.get(server, set())
        moved = ServerIndex(server, tuple(sorted(entries)), current.version + 1)
        compares.append(_same(ikey, kv))
        ops.append(Put(ikey, moved.encode()))
    return RouteWrite(tuple(compares), tuple(ops))


def update_route(
    store: Metastore,
    table_id: int,
    change: Callable[[TableRoute | None], TableRoute | None],
    *,
    fence: Sequence[Compare] = (),
    attempts: int = 20,
) -> TableRoute | None:
    """Apply ``change`` to the stored route in one transaction, from a fresh
    read each time the compare-and-swap loses. ``change`` returns the new
    route, or the route it got for "no change"; a None result for an
    existing route removes it (tombstone kept). ``fence`` rides every
    attempt (the placement leader's hold on its lease)."""
    key = route_key(table_id)
    for _ in range(attempts):
        read = store.get(key)
        old = None if read is None else decode_route(read)
        new = change(old)
        if new is old or new == old:
            return old
        write = route_write(store, table_id, read, new)
        if store.txn((*write.compares, *fence), write.ops).succeeded:
            return new
        if fence and not all(_holds(store, c) for c in fence):
            raise ConflictError(
                f"Route of table {table_id} not written: this node no longer leads placement",
                attempts=1,
                table_id=table_id,
            )
    raise ConflictError(
        f"Route of table {table_id} kept changing under {attempts} attempts to write it",
        attempts=attempts,
        table_id=table_id,
    )


def _holds(store: Metastore, compare: Compare) -> bool:
    return compare.holds(store.get(compare.key))
