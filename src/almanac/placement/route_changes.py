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

from almanac.errors import ConflictError
from almanac.metastore import Compare, Delete, KeyValue, Metastore, Op, Put
from almanac.model.catalog_version import CatalogVersion
from almanac.model.descriptors import Table, is_soft_deleted
from almanac.placement.keys import route_key, server_index_key, tombstone_key
from almanac.placement.model import ServerIndex, TableRoute, Tablet, TabletState
from almanac.placement.state import decode_route

__all__ = [
    "HOSTED",
    "IndexCache",
    "IndexChange",
    "RouteWrite",
    "follow_catalog",
    "index_entries",
    "merge_writes",
    "partitions_of",
    "route_write",
    "update_route",
]

HOSTED = frozenset({TabletState.CREATING, TabletState.RUNNING, TabletState.SOFT_DELETED})
"""Tablet states its replicas keep (and find in their server index); a
DELETED or REPLACED tablet leaves the indexes, and its servers drop it."""


def partitions_of(version: CatalogVersion, table: Table) -> int:
    """The table's tablet count: its zone's partitions (``data.tablets``
    buckets rows the same way; placement does not need the data extras)."""
    zone = version.zone_by_id(table.zone_id)
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
    version: CatalogVersion, table_id: int, route: TableRoute | None, now: float
) -> TableRoute | None:
    """The route catalog ``version`` wants for ``table_id``, given
    the stored ``route``: the single mapping from a table's catalog state to
    its route state (created → PREPARING tablets, one per partition;
    dropped → DELETED; soft-deleted → SOFT_DELETED; recovered → back to
    being assigned; altered → the new target table version). Returns
    ``route`` itself when nothing changes, None for no route at all."""
    table = version.table_by_id(table_id)
    if table is None:
        if route is None or route.state is TabletState.DELETED:
            return route
        if table_id >= version.object_id_gen:
            return route  # a table newer than the snapshot, not a dropped one
        return _bump(_all(route, TabletState.DELETED), route)
    if route is None:
        made = _fresh(table_id, table.table_version, partitions_of(version, table))
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
class IndexChange:
    """A server index moving from the bytes read (None: absent) to
    ``entries`` at ``version`` (kept as a set: sorted once, when encoded)."""

    server: str
    read: bytes | None
    entries: frozenset[tuple[int, int]]
    version: int

    @property
    def index(self) -> ServerIndex:
        return ServerIndex(self.server, tuple(sorted(self.entries)), self.version)


@dataclasses.dataclass(frozen=True, slots=True)
class RouteWrite:
    """What moves routes from what was read to what is wanted: the routes'
    compares and ops, and the server indexes that change with them
    (encoded once, by ``parts``, however many routes a write merges)."""

    compares: tuple[Compare, ...]
    ops: tuple[Op, ...]
    indexes: tuple[IndexChange, ...] = ()

    @property
    def size(self) -> int:
        """Compares plus ops of its transaction."""
        return len(self.compares) + len(self.ops) + 2 * len(self.indexes)

    def parts(self) -> tuple[tuple[Compare, ...], tuple[Op, ...], dict[str, bytes]]:
        """The transaction's compares and ops, and the index bytes it writes."""
        written = {change.server: change.index.encode() for change in self.indexes}
        compares = [_same(server_index_key(c.server), c.read) for c in self.indexes]
        puts = [Put(server_index_key(server), data) for server, data in written.items()]
        return (*self.compares, *compares), (*self.ops, *puts), written


class IndexCache:
    """Server indexes as one writer knows them: the bytes stored (to
    compare) and the index as its pending writes left it, so that a pass
    writing many routes reads and decodes each index once. After a write
    lost its race, ``forget`` it: the next one reads fresh."""

    def __init__(self, store: Metastore) -> None:
        self._store = store
        self._known: dict[str, IndexChange] = {}

    def get(self, server: str) -> IndexChange:
        """The stored bytes and the entries as pending writes left them."""
        known = self._known.get(server)
        if known is None:
            kv = self._store.get(server_index_key(server))
            if kv is None:
                known = IndexChange(server, None, frozenset(), 0)
            else:
                index = ServerIndex.decode(kv.value)
                known = IndexChange(server, kv.value, frozenset(index.tablets), index.version)
            self._known[server] = known
        return known

    def stage(self, write: RouteWrite) -> None:
        """Later writes build on this one's indexes (still compared with the
        stored bytes: they go in the same transaction)."""
        for change in write.indexes:
            self._known[change.server] = change

    def committed(self, written: dict[str, bytes]) -> None:
        for server, data in written.items():
            self._known[server] = dataclasses.replace(self._known[server], read=data)

    def forget(self, write: RouteWrite) -> None:
        for change in write.indexes:
            self._known.pop(change.server, None)


def _same(key: str, value: bytes | None) -> Compare:
    return Compare.absent(key) if value is None else Compare.value(key, "==", value)


def route_write(
    store: Metastore,
    table_id: int,
    read: KeyValue | None,
    new: TableRoute | None,
    cache: IndexCache | None = None,
) -> RouteWrite:
    """Move the route read as ``read`` to ``new`` (None: remove it and leave
    a tombstone holding its last bytes). The indexes of servers whose
    share changes come from ``cache`` (else are read now); either way the
    write compares their exact bytes."""
    key = route_key(table_id)
    old = None if read is None else decode_route(read)
    cache = cache or IndexCache(store)
    compares = (_same(key, None if read is None else read.value),)
    ops: tuple[Op, ...] = ()
    if new is None:
        if read is not None:
            ops = (Delete(key), Put(tombstone_key(table_id), read.value))
    else:
        ops = (Put(key, new.encode()),)
    changes: list[IndexChange] = []
    before, after = index_entries(old), index_entries(new)
    for server in sorted(set(before) | set(after)):
        gone, came = before.get(server, set()), after.get(server, set())
        if gone == came:
            continue
        current = cache.get(server)
        entries = current.entries - gone | came
        changes.append(IndexChange(server, current.read, entries, current.version + 1))
    return RouteWrite(compares, ops, tuple(changes))


def merge_writes(writes: Sequence[RouteWrite]) -> RouteWrite:
    """Several route writes as one, made in order on one ``IndexCache``
    (each staged into it): an index is compared with the bytes stored
    before them all, and becomes what the last of them made it."""
    indexes: dict[str, IndexChange] = {}
    for write in writes:
        for change in write.indexes:
            first = indexes.get(change.server)
            read = change.read if first is None else first.read
            indexes[change.server] = dataclasses.replace(change, read=read)
    return RouteWrite(
        tuple(c for w in writes for c in w.compares),
        tuple(op for w in writes for op in w.ops),
        tuple(indexes.values()),
    )


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
        compares, ops, _ = route_write(store, table_id, read, new).parts()
        if store.txn((*compares, *fence), ops).succeeded:
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
