"""CREATE TABLE AS SELECT, REPLACE TABLE AS SELECT and CREATE OR REPLACE,
each one atomic catalog version.

1. Reserve the name: ``data.reservation.<S>.<T>`` is put if absent under a
   short lease that a driver thread keeps alive, so a second job creating the
   same name fails at once with ``TableBeingCreatedError``, and a dead
   driver's reservation vanishes within seconds.
2. Stage: the table does not exist yet, so the driver validates the
   CREATE against the latest version to get the table it will be (column
   ids are positional, so they are the ids it will have) and stages a write
   directory under its own lease.
3. Write with Spark's native Parquet writer into that directory
   (``almanac.spark.native_write``); the driver reads the footers, so it
   holds the file list itself and nothing goes through the metastore. A
   table Spark's writer cannot write (FIXED, nanoseconds, ARRAY, MAP) is
   written by the tasks through the data layer, which return their files.
4. Commit: one ``Catalog.execute`` whose transaction appends the version
   that creates the table (DropTable + CreateTable for a replace), publishes
   the first data snapshot of the new table id, and deletes the reservation
   only if it is still this job's.

Readers see no table (or the old one) before, the new table with all of its
data after. A failure before the commit aborts the write (its directory is
deleted) and releases the reservation; a killed driver leaves only leases
that expire and a staged directory the janitor removes.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from almanac.catalog import Catalog
from almanac.commands import Command, CreateTable, DropTable
from almanac.data import DataFile, TableData
from almanac.data.writing import commit_table_as
from almanac.descriptors import Table
from almanac.errors import (
    AlreadyExistsError,
    CatalogError,
    ConflictError,
    NotFoundError,
    TableBeingCreatedError,
)
from almanac.leases import LeaseKeeper
from almanac.metastore import Compare, Delete, Metastore, Put
from almanac.names import name_key
from almanac.spark.names import catalog_session
from almanac.spark.native_write import prepare, write_by_tasks, write_staged
from almanac.spark.types import column_defs
from almanac.spark.write_types import native_refusal
from almanac.spark.writer import DEFAULT_WRITE_LEASE_S
from almanac.table_names import parse_name, resolve_schema

__all__ = [
    "DEFAULT_RESERVATION_TTL_S",
    "RESERVATION_PREFIX",
    "CtasResult",
    "TableBeingCreatedError",
    "create_or_replace_table_as_select",
    "create_table_as_select",
    "replace_table_as_select",
]

RESERVATION_PREFIX = "data.reservation."
"""Outside ``catalog.``: a reservation's lease must not wake log followers."""
DEFAULT_RESERVATION_TTL_S = 10.0


@dataclass(frozen=True, slots=True)
class CtasResult:
    """``version`` is the catalog version that made the table (the current
    one when ``created`` is False: IF NOT EXISTS found it)."""

    version: int
    schema: str
    name: str
    created: bool
    replaced: bool = False
    rows: int = 0
    files: int = 0

    @property
    def table(self) -> str:
        return f"{self.schema}.{self.name}"


def reservation_key(schema: str, table: str) -> str:
    """Keyed by ``name_key``: two spellings of one name hold one reservation."""
    return (
        f"{RESERVATION_PREFIX}{quote(name_key(schema), safe='')}.{quote(name_key(table), safe='')}"
    )


class Reservation:
    """A name held under a lease that a daemon thread renews every third of
    its ttl, together with any other leases the job depends on."""

    def __init__(self, store: Metastore, schema: str, table: str, ttl_s: float) -> None:
        self.store = store
        self.full = f"{schema}.{table}"
        self.key = reservation_key(schema, table)
        self.token = uuid.uuid4().hex.encode()
        self.ttl_s = ttl_s
        self.lease = 0
        self._keeper: LeaseKeeper | None = None

    def acquire(self) -> None:
        self.lease = self.store.grant_lease(self.ttl_s)
        result = self.store.txn([Compare.absent(self.key)], [Put(self.key, self.token, self.lease)])
        if not result.succeeded:
            self.store.revoke_lease(self.lease)
            self.lease = 0
            raise TableBeingCreatedError(
                f"Table '{self.full}' is being created by another job; try again when it finished",
                table=self.full,
                rule="reserved-name",
            )
        lease = self.lease
        self._keeper = LeaseKeeper(
            self.ttl_s, f"almanac-reservation:{self.full}", lambda: self.store.keep_alive(lease)
        ).start()

    def renew_too(self, renewal: Callable[[], None]) -> None:
        """Keep another lease the job depends on alive with the reservation's."""
        if self._keeper is not None:
            self._keeper.add(renewal)

    def held(self) -> Compare:
        """The compare that makes a commit fail once the reservation was lost."""
        return Compare.value(self.key, "==", self.token)

    def release(self) -> None:
        if self._keeper is not None:
            self._keeper.stop()
        if self.lease:
            with contextlib.suppress(CatalogError):
                self.store.revoke_lease(self.lease)


def _run(
    mode: str,
    target: str,
    name: str,
    df: Any,
    primary_key: Sequence[str],
    *,
    zone: str | None,
    if_not_exists: bool,
    warehouse: str | None,
    keep_case: bool,
    colocation: Sequence[str] | None,
    reservation_ttl_s: float,
    write_lease_seconds: float,
) -> CtasResult:
    parsed = parse_name(name)
    with catalog_session(target, warehouse) as cat:
        snap = cat.catalog()
        schema = resolve_schema(snap, parsed).name
        existing = snap.table(parsed.table, schema)
        if existing is not None:
            table_name = existing.name
        else:
            table_name = parsed.table if parsed.table_quoted or keep_case else parsed.table.upper()
        full = f"{schema}.{table_name}"
        if mode == "create" and existing is not None:
            if if_not_exists:
                return CtasResult(snap.version, schema, table_name, created=False)
            raise AlreadyExistsError(f"Table '{full}' already exists", kind="table", name=full)
        if mode == "replace" and existing is None:
            raise NotFoundError(f"Table '{full}' does not exist", kind="table", name=full)
        defs, pk = column_defs(df.schema, primary_key, full, upper=not keep_case)
        colocated = (
            None if colocation is None else tuple(c if keep_case else c.upper() for c in colocation)
        )
        create = CreateTable(
            name=table_name,
            columns=defs,
            primary_key=pk,
            schema=schema,
            zone=zone,
            colocation=colocated,
        )
        commands: list[Command] = [create]
        if existing is not None:
            # A replace takes the name back at once: no soft delete, whatever
            # the node's default reserve.
            commands.insert(0, DropTable(table_name, schema, reserve_s=0))
        reservation = Reservation(cat.metastore, schema, table_name, reservation_ttl_s)
        reservation.acquire()
        try:
            return _write_and_commit(
                cat,
                df,
                commands,
                reservation,
                schema,
                table_name,
                replaced=existing is not None,
                renames=tuple(
                    (f.name, d.name)
                    for f, d in zip(df.schema.fields, defs, strict=True)
                    if f.name != d.name
                ),
                lease_s=write_lease_seconds,
            )
        finally:
            reservation.release()


def _write_and_commit(
    cat: Catalog,
    df: Any,
    commands: list[Command],
    reservation: Reservation,
    schema: str,
    table_name: str,
    *,
    replaced: bool,
    renames: tuple[tuple[str, str], ...],
    lease_s: float,
) -> CtasResult:
    """The shared CTAS core (``almanac.data.writing.commit_table_as``) with
    Spark's native writer as its write step and the reservation as its guard."""
    data = TableData.for_catalog(cat)

    def write(table: Table, partitions: int, write_dir: str) -> list[DataFile]:
        full = reservation.full
        if native_refusal(table) is not None:
            return write_by_tasks(
                df, table, full, partitions, data.warehouse, write_dir, renames=renames
            )
        prepared = prepare(df, table, full, partitions, renames=renames)
        return list(write_staged(prepared, data.warehouse, write_dir, table))

    def renew(lease: int) -> None:
        reservation.renew_too(lambda: data.keep_alive(lease))

    def guard() -> tuple[list[Compare], list[Delete]]:
        return [reservation.held()], [Delete(reservation.key)]

    try:
        result, snapshot = commit_table_as(
            cat, commands, schema, table_name, write, ttl_s=lease_s, guard=guard, on_stage=renew
        )
    except ConflictError:
        held = cat.metastore.get(reservation.key)
        if held is not None and held.value == reservation.token:
            raise
        raise ConflictError(
            f"The reservation of table '{reservation.full}' expired before the commit "
            f"(the driver stalled for more than {reservation.ttl_s:g} s); nothing was "
            "created",
            attempts=1,
        ) from None
    files = () if snapshot is None else snapshot.files
    return CtasResult(
        result.version,
        schema,
        table_name,
        created=True,
        replaced=replaced,
        rows=sum(f.rows for f in files),
        files=len(files),
    )


def create_table_as_select(
    target: str,
    name: str,
    df: Any,
    primary_key: Sequence[str] = (),
    zone: str | None = None,
    if_not_exists: bool = False,
    *,
    warehouse: str | None = None,
    keep_case: bool = False,
    colocation: Sequence[str] | None = None,
    reservation_ttl_s: float = DEFAULT_RESERVATION_TTL_S,
    write_lease_seconds: float = DEFAULT_WRITE_LEASE_S,
) -> CtasResult:
    """Create table ``name`` ("S.T") holding ``df``'s rows, in one catalog version.

    Columns come from ``df.schema`` (see ``almanac.spark.types``); names are
    upper-cased like unquoted SQL identifiers unless ``keep_case`` (a quoted
    table name keeps its case too). Primary-key columns become NOT NULL.
    ``AlreadyExistsError`` if the table exists (unless ``if_not_exists``),
    ``TableBeingCreatedError`` if another job is creating it."""
    return _run(
        "create",
        target,
        name,
        df,
        primary_key,
        zone=zone,
        colocation=colocation,
        if_not_exists=if_not_exists,
        warehouse=warehouse,
        keep_case=keep_case,
        reservation_ttl_s=reservation_ttl_s,
        write_lease_seconds=write_lease_seconds,
    )


def replace_table_as_select(
    target: str,
    name: str,
    df: Any,
    primary_key: Sequence[str] = (),
    zone: str | None = None,
    *,
    warehouse: str | None = None,
    keep_case: bool = False,
    colocation: Sequence[str] | None = None,
    reservation_ttl_s: float = DEFAULT_RESERVATION_TTL_S,
    write_lease_seconds: float = DEFAULT_WRITE_LEASE_S,
) -> CtasResult:
    """Swap existing table ``name`` for a new one holding ``df``'s rows, in one
    catalog version; older versions keep reading the old table and its data.
    ``NotFoundError`` if it does not exist. On failure the old table stays."""
    return _run(
        "replace",
        target,
        name,
        df,
        primary_key,
        zone=zone,
        colocation=colocation,
        if_not_exists=False,
        warehouse=warehouse,
        keep_case=keep_case,
        reservation_ttl_s=reservation_ttl_s,
        write_lease_seconds=write_lease_seconds,
    )


def create_or_replace_table_as_select(
    target: str,
    name: str,
    df: Any,
    primary_key: Sequence[str] = (),
    zone: str | None = None,
    *,
    warehouse: str | None = None,
    keep_case: bool = False,
    colocation: Sequence[str] | None = None,
    reservation_ttl_s: float = DEFAULT_RESERVATION_TTL_S,
    write_lease_seconds: float = DEFAULT_WRITE_LEASE_S,
) -> CtasResult:
    """``replace_table_as_select`` when ``name`` exists, else ``create_table_as_select``."""
    return _run(
        "create_or_replace",
        target,
        name,
        df,
        primary_key,
        zone=zone,
        colocation=colocation,
        if_not_exists=False,
        warehouse=warehouse,
        keep_case=keep_case,
        reservation_ttl_s=reservation_ttl_s,
        write_lease_seconds=write_lease_seconds,
    )
