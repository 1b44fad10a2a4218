"""Reading a table through its tablet servers over Arrow Flight.

``read_table`` resolves the table at a catalog version (or the one active
at a ``timestamp``, as every reader resolves one), looks up its route
in the placement state and reads every tablet in parallel with one
``DoGet`` each, from the tablet's leader first and its other replicas
after. A tablet's batches are kept only once its stream ended cleanly: when
a server dies mid-stream, what it sent is dropped and the tablet is read
again, whole, from the next replica (the route is read again once the
known replicas are exhausted, so a failover that happened meanwhile
counts, and a read whose replicas all failed waits, up to ``timeout_s``,
for the failover that names a live one), so every row comes exactly once.

``filter`` is a ``pyarrow.compute.Expression`` over the table's column
names at that version (``pc.field("ID") > 10``), applied to the rows read:
it changes what is returned, not what is read. Anything else that pyarrow
can evaluate is allowed; an expression it cannot evaluate against the
table is a ``ValidationError`` naming the table.

``token`` is the bearer token sent with every call, as ``connect`` sends it
to ``almanac serve``: a tablet server started with tokens refuses a call
without one of them, and ``read_table`` then raises ``AccessDeniedError``
naming the server at once (another replica would refuse it alike).
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as flight

from almanac import _check as check
from almanac.access.tokens import check_token
from almanac.data.arrow import output_schema
from almanac.data.tablets import table_partitions
from almanac.errors import (
    AccessDeniedError,
    CatalogError,
    CorruptDataError,
    ValidationError,
)
from almanac.model.descriptors import Table
from almanac.model.read_point import ReadPoint
from almanac.model.table_names import parse_name, resolve_table
from almanac.node.catalog import Catalog
from almanac.placement.model import ServerInfo, TableRoute, Tablet, TabletState
from almanac.placement.state import read_route, read_servers
from almanac.tserver.auth import RULE, bearer_headers
from almanac.tserver.service import DAMAGED
from almanac.tserver.ticket import TabletTicket

if TYPE_CHECKING:
    from almanac.metastore import Metastore

__all__ = ["Progress", "read_table"]

Progress = Callable[[int, str, int], None]
"""Called after every batch a tablet read receives: (tablet id, server,
rows of that tablet received so far from that server)."""

DEFAULT_TIMEOUT_S = 120.0
_UNREADABLE = (TabletState.DELETED, TabletState.REPLACED, TabletState.PREPARING)
_MAX_WORKERS = 16
_FIRST_PAUSE_S = 0.05
_MAX_PAUSE_S = 1.0


class _Failed(Exception):
    """One replica could not deliver the tablet; try the next. ``damaged``
    when it found a data file damaged in the warehouse too."""

    def __init__(self, message: str, *, damaged: bool = False) -> None:
        super().__init__(message)
        self.damaged = damaged


def read_table(
    target: str | Catalog,
    name: str,
    version: int | None = None,
    filter: pc.Expression | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: Progress | None = None,
    token: str | None = None,
    timestamp: int | dt.datetime | None = None,
) -> pa.Table:
    """The rows of table ``name`` (``T`` or ``S.T``, as Spark reads name
    it) at catalog ``version``, or at the version active at ``timestamp`` (a
    hybrid timestamp or an aware datetime), the latest by default, read from
    its tablet servers with the bearer ``token``; ``filter`` as the module says.
    ``timeout_s`` bounds each tablet stream, and the wait for a failover
    once every replica of a tablet failed. ``CatalogError`` when a tablet
    has no live replica that serves it by then."""
    if token is not None:
        token = check_token(token, "Parameter 'token' of read_table")
    point = _read_point(version, timestamp)
    if isinstance(target, Catalog):
        return _read(target, name, point, filter, timeout_s, progress, token)
    check.string(target, "Parameter 'target' of read_table", nonblank=True)
    from almanac.access.connection import open_catalog

    with open_catalog(target, create=False) as cat:
        return _read(cat, name, point, filter, timeout_s, progress, token)


def _read_point(version: int | None, timestamp: int | dt.datetime | None) -> ReadPoint:
    check.optional_int(version, "Parameter 'version' of read_table", lo=0)
    if version is not None and timestamp is not None:
        raise ValidationError("Read a table at a version or at a timestamp, not both")
    if timestamp is None:
        return ReadPoint(version=version)
    return ReadPoint(timestamp=check.timestamp(timestamp, "Parameter 'timestamp' of read_table"))


def _read(
    cat: Catalog,
    name: str,
    point: ReadPoint,
    where: pc.Expression | None,
    timeout_s: float,
    progress: Progress | None,
    token: str | None,
) -> pa.Table:
    check.string(name, "Parameter 'name' of read_table", nonblank=True)
    check.number(timeout_s, "Parameter 'timeout_s' of read_table", positive=True)
    if where is not None and not isinstance(where, pc.Expression):
        raise check.fail("Parameter 'filter' of read_table", "a pyarrow.compute.Expression", where)
    if progress is not None:
        check.callable_(progress, "Parameter 'progress' of read_table")
    if point.latest:
        cat.catch_up()
    version = point.resolve(cat)
    schema, table = resolve_table(version, parse_name(name))
    full = f"{schema.name}.{table.name}"
    store = cat.metastore
    route = read_route(store, table.id)
    if route is None:
        raise CatalogError(
            f"Table '{full}' has no tablet route: its tablets are not placed yet",
            table=full,
            rule="placed-tablets",
        )
    reader = _TabletReader(store, table, full, version.version, timeout_s, progress, token)
    tablets = _serving(route, table_partitions(version, table), full)
    with ThreadPoolExecutor(max_workers=min(_MAX_WORKERS, max(1, len(tablets)))) as pool:
        parts = list(pool.map(reader.read, tablets))
    result = pa.Table.from_batches([b for part in parts for b in part], schema=output_schema(table))
    if where is None:
        return result
    try:
        return result.filter(where)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError) as exc:
        raise ValidationError(
            f"The filter {where} cannot be evaluated on table '{full}': {exc}",
            table=full,
            rule="filter",
        ) from exc


def _serving(route: TableRoute, partitions: int, full: str) -> list[Tablet]:
    """One tablet for each of the table's partitions: the readable one (a
    partition whose tablet was replaced reads from the fresh tablet that
    took it). A partition without one is an error, never rows left out."""
    by_partition: dict[int, Tablet] = {}
    for tablet in route.tablets:
        if tablet.state in _UNREADABLE or not tablet.replicas:
            continue
        if tablet.partition >= partitions:
            raise CatalogError(
                f"The route of table '{full}' names partition {tablet.partition}; the table "
                f"has {partitions}",
                table=full,
                rule="route-partitions",
            )
        best = by_partition.get(tablet.partition)
        rank = (tablet.state is TabletState.RUNNING, tablet.id)
        if best is None or rank > (best.state is TabletState.RUNNING, best.id):
            by_partition[tablet.partition] = tablet
    missing = sorted(set(range(partitions)) - set(by_partition))
    if missing:
        raise CatalogError(
            f"Table '{full}' has no readable tablet for partition {missing[0]} (its tablets "
            "are being created or replaced)",
            table=full,
            partition=missing[0],
            rule="readable-tablet",
        )
    return [by_partition[p] for p in sorted(by_partition)]


def _successor(route: TableRoute, tablet: Tablet) -> Tablet | None:
    """The tablet as the route has it now, or the one that replaced it for
    the same partition (a tablet is a cache of warehouse files: any tablet
    of the partition serves the same rows)."""
    same = route.tablet(tablet.id)
    if same is not None and same.state not in _UNREADABLE:
        return same
    for other in route.tablets:
        if other.partition == tablet.partition and other.state not in _UNREADABLE:
            return other
    return None


def _candidates(tablet: Tablet) -> list[str]:
    first = [tablet.leader] if tablet.leader is not None else []
    return first + [r for r in tablet.replicas if r != tablet.leader]


class _TabletReader:
    def __init__(
        self,
        store: Metastore,
        table: Table,
        full: str,
        version: int,
        timeout_s: float,
        progress: Progress | None,
        token: str | None,
    ) -> None:
        self.store = store
        self.table = table
        self.full = full
        self.version = version
        self.timeout_s = timeout_s
        self.progress = progress
        self.headers = bearer_headers(token)
        self._lock = threading.Lock()

    def read(self, tablet: Tablet) -> list[pa.RecordBatch]:
        deadline = time.monotonic() + self.timeout_s
        pause = _FIRST_PAUSE_S
        while True:
            failures: list[str] = []
            damaged: list[str] = []
            servers = read_servers(self.store)
            for server in _candidates(tablet):
                info = servers.get(server)
                if info is None:
                    failures.append(f"'{server}' is not registered (its lease expired)")
                    continue
                try:
                    return self._read_from(tablet, info)
                except _Failed as exc:
                    failures.append(f"'{server}': {exc}")
                    if exc.damaged:
                        damaged.append(str(exc))
            if damaged and len(damaged) == len(_candidates(tablet)):
                # No replica can read the file and no failover will mend it.
                raise CorruptDataError(
                    f"Tablet {tablet.id} of table '{self.full}' cannot be read: {damaged[0]}",
                    table=self.full,
                    tablet_id=tablet.id,
                )
            # Every replica failed. Placement fails a dead server over once
            # its lease expires, and a follower may still be setting the
            # tablet up: wait for the route to offer a replica that serves.
            if time.monotonic() + pause > deadline:
                raise CatalogError(
                    f"Tablet {tablet.id} (partition {tablet.partition}) of table '{self.full}' "
                    f"has no live replica that serves it within {self.timeout_s} s: "
                    f"{'; '.join(failures) or 'no replicas'}",
                    table=self.full,
                    tablet_id=tablet.id,
                    rule="live-replica",
                )
            time.sleep(pause)
            pause = min(pause * 2, _MAX_PAUSE_S)
            route = read_route(self.store, self.table.id)
            moved = None if route is None else _successor(route, tablet)
            if moved is None:
                raise CatalogError(
                    f"Tablet {tablet.id} (partition {tablet.partition}) of table '{self.full}' "
                    "left its route while it was read: the table was dropped or moved",
                    table=self.full,
                    tablet_id=tablet.id,
                    rule="live-replica",
                )
            tablet = moved

    def _read_from(self, tablet: Tablet, info: ServerInfo) -> list[pa.RecordBatch]:
        ticket = TabletTicket(self.table.id, tablet.id, self.version)
        options = flight.FlightCallOptions(timeout=self.timeout_s, headers=self.headers)
        batches: list[pa.RecordBatch] = []
        rows = 0
        try:
            client = flight.connect(f"grpc://{info.host}:{info.flight_port}")
            try:
                reader = client.do_get(flight.Ticket(ticket.encode()), options)
                for chunk in reader:
                    batches.append(chunk.data)
                    rows += chunk.data.num_rows
                    if self.progress is not None:
                        self.progress(tablet.id, info.name, rows)
            finally:
                client.close()
        except (flight.FlightUnauthenticatedError, flight.FlightUnauthorizedError) as exc:
            where = f"grpc://{info.host}:{info.flight_port}"
            raise AccessDeniedError(
                f"Tablet server '{info.name}' ({where}) refused to read table '{self.full}' "
                f"{'without a token' if not self.headers else 'with the token given'} "
                f"({_code(exc)}): {RULE}; pass token= a read or admin token of its tokens file "
                "or $ALMANAC_TOKENS",
                table=self.full,
                server=info.name,
                rule=RULE,
            ) from None
        except (flight.FlightError, pa.ArrowException, OSError) as exc:
            damaged = getattr(exc, "extra_info", None) == DAMAGED
            raise _Failed(" ".join(str(exc).split())[:600], damaged=damaged) from exc
        return _conformed(batches, self.table, self.full)


def _code(exc: flight.FlightError) -> str:
    return "unauthorized" if isinstance(exc, flight.FlightUnauthorizedError) else "unauthenticated"


def _conformed(batches: Sequence[pa.RecordBatch], table: Table, full: str) -> list[pa.RecordBatch]:
    schema = output_schema(table)
    for batch in batches:
        if not batch.schema.equals(schema):
            raise CatalogError(
                f"A tablet server sent table '{full}' rows of schema {batch.schema}, not {schema}",
                table=full,
            )
    return list(batches)
