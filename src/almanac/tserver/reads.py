"""One tablet's rows at one catalog version, as a tablet server streams
them: the table as that version defines it, the data snapshot that version
saw, the files of the tablet's partition, each read by column id through
``almanac.data.reading.read_file`` (the reader of every other path), from
the local cache when it holds the file and from the warehouse otherwise."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pyarrow as pa

from almanac.data.arrow import output_schema
from almanac.data.commits import TableData
from almanac.data.deletes import deleted_positions
from almanac.data.files import DataFile
from almanac.data.reading import read_file
from almanac.errors import CatalogError, NotFoundError, VersionNotFoundError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.descriptors import Table
from almanac.node.catalog import Catalog
from almanac.node.log import KEY_VERSION
from almanac.tserver.local import LocalTablets
from almanac.tserver.ticket import TabletTicket

__all__ = ["VERSION_WAIT_S", "tablet_rows"]

VERSION_WAIT_S = 30.0
"""How long a read waits for this node to apply a version the store already has."""


def _table_at(cat: Catalog, ticket: TabletTicket) -> tuple[CatalogVersion, Table]:
    if ticket.version > cat.latest_version:
        stored = cat.metastore.get(KEY_VERSION)
        latest = int(stored.value) if stored is not None else 0
        if ticket.version > latest:
            raise VersionNotFoundError(
                f"Catalog version {ticket.version} does not exist; the latest version is {latest}",
                version=ticket.version,
            )
        cat.catalog_ready(ticket.version, timeout=VERSION_WAIT_S, applied_only=True)
    at = cat.catalog(ticket.version)
    table = at.table_by_id(ticket.table_id)
    if table is None:
        raise NotFoundError(
            f"Table {ticket.table_id} does not exist at catalog version {ticket.version}",
            kind="table",
            table_id=ticket.table_id,
            version=ticket.version,
        )
    return at, table


def tablet_rows(
    cat: Catalog,
    data: TableData,
    local: LocalTablets,
    ticket: TabletTicket,
    partition: int,
    *,
    batch_rows: int,
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The schema and batches of the ticket's read of ``partition``. Errors
    about the ticket come at once; the batches are read lazily."""
    at, table = _table_at(cat, ticket)
    snapshot = data.snapshot_at(ticket.table_id, version=at)
    files = () if snapshot is None else tuple(f for f in snapshot.files if f.partition == partition)
    return output_schema(table), _batches(table, files, data, local, ticket, batch_rows)


def _batches(
    table: Table,
    files: tuple[DataFile, ...],
    data: TableData,
    local: LocalTablets,
    ticket: TabletTicket,
    batch_rows: int,
) -> Iterator[pa.RecordBatch]:
    for file in files:
        cached = local.cached_path(ticket.table_id, ticket.tablet_id, file)
        if cached.exists():
            copy = dataclasses.replace(file, path=str(cached))
            # Delete files are read from the warehouse: they name the file by its path there.
            deleted = deleted_positions(file, data.warehouse, table.name)
            sent = 0
            try:
                for batch in read_file(
                    table, copy, local.cache, batch_rows=batch_rows, deleted=deleted
                ):
                    yield batch
                    sent += 1
                continue
            except (CatalogError, pa.ArrowException, OSError):
                # Gone from the cache since, or damaged (its size, checksum or
                # rows are not what the commit recorded): fetched again at the
                # next sync. Before any batch the warehouse stands in; after,
                # the stream fails and the reader goes to another replica.
                local.damaged(ticket.table_id, ticket.tablet_id, cached)
                if sent:
                    raise
        yield from read_file(table, file, data.warehouse, batch_rows=batch_rows)
