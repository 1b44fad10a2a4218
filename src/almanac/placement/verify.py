"""A consistency check of stored placement against the catalog: routes,
server indexes and the latest catalog version must agree exactly. Used by
tests after fault injection and crashes, and useful to an operator.

What must always hold (every writer moves routes and indexes in one
transaction): each server's index is exactly what the routes give it; a
tablet's leader is one of its replicas, a PREPARING tablet has none, a
CREATING or RUNNING one has some; every live partition has exactly one
tablet that is not REPLACED; a route and its tombstone never both exist;
a table the catalog no longer has is DELETED or gone; a soft-deleted table
is SOFT_DELETED. With ``complete`` (placement attached to every node that
commits, or a pass has run since): every table has a route, at the
catalog's table version.
"""

from __future__ import annotations

from almanac.errors import CorruptDataError
from almanac.model.descriptors import is_soft_deleted
from almanac.node.catalog import Catalog
from almanac.placement.keys import TOMBSTONE_PREFIX
from almanac.placement.model import TabletState
from almanac.placement.route_changes import index_entries, partitions_of
from almanac.placement.state import read_routes, read_server_indexes

__all__ = ["placement_problems", "verify_placement"]


def placement_problems(cat: Catalog, *, complete: bool = True) -> list[str]:
    """Every disagreement found, as sentences naming the table or server."""
    store = cat.metastore
    routes = read_routes(store)
    indexes = read_server_indexes(store)
    tombstones = {kv.key[len(TOMBSTONE_PREFIX) :] for kv in store.range(TOMBSTONE_PREFIX).kvs}
    cat.catch_up()
    version = cat.catalog()
    problems: list[str] = []
    wanted: dict[str, set[tuple[int, int]]] = {}
    for table_id, route in routes.items():
        where = f"Route of table {table_id}"
        for server, entries in index_entries(route).items():
            wanted.setdefault(server, set()).update(entries)
        if str(table_id) in tombstones:
            problems.append(f"{where} exists beside its tombstone")
        for t in route.tablets:
            if t.state is TabletState.PREPARING and t.replicas:
                problems.append(f"{where}: PREPARING tablet {t.id} has replicas")
            if t.state in (TabletState.CREATING, TabletState.RUNNING) and t.leader is None:
                problems.append(f"{where}: {t.state} tablet {t.id} has no leader")
        table = version.table_by_id(table_id)
        if table is None:
            if route.state is not TabletState.DELETED and table_id < version.object_id_gen:
                problems.append(f"{where} is {route.state}, but the table was dropped")
            continue
        if route.state is TabletState.DELETED:
            problems.append(f"{where} is DELETED, but the catalog has the table")
        if is_soft_deleted(table) != (route.state is TabletState.SOFT_DELETED):
            problems.append(f"{where} is {route.state}; soft-deleted: {is_soft_deleted(table)}")
        if complete and route.table_version != table.table_version:
            problems.append(
                f"{where} targets table version {route.table_version}, the catalog has "
                f"{table.table_version}"
            )
        live = sorted(t.partition for t in route.tablets if t.state is not TabletState.REPLACED)
        if live != list(range(partitions_of(version, table))):
            problems.append(f"{where} covers partitions {live}")
    if complete:
        for table in version.tables_by_id.values():
            if table.id not in routes:
                problems.append(f"Table {table.id} ({table.name}) has no route")
    for server in sorted(set(indexes) | set(wanted)):
        index = indexes.get(server)
        have = set() if index is None else set(index.tablets)
        want = wanted.get(server, set())
        if have != want:
            problems.append(
                f"Index of server '{server}' lists {sorted(have - want)} beyond its routes and "
                f"misses {sorted(want - have)}"
            )
    return problems


def verify_placement(cat: Catalog, *, complete: bool = True) -> None:
    """Raise ``CorruptDataError`` listing every disagreement, if any."""
    problems = placement_problems(cat, complete=complete)
    if problems:
        raise CorruptDataError(
            "Placement disagrees with the catalog: " + "; ".join(problems), problems=problems
        )
