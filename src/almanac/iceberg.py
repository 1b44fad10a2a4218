"""Interop: a catalog table as a pyiceberg ``Table``, for any Iceberg tool.

Almanac keeps a table's current ``metadata.json`` location in its metastore
(the Iceberg "catalog pointer"); this reads it and hands the rest to
pyiceberg, so what an Iceberg reader sees is exactly what Almanac wrote.
"""

from __future__ import annotations

from pyiceberg.table import StaticTable

from almanac import _check as check
from almanac.catalog_version import DEFAULT_SCHEMA
from almanac.connection import connect
from almanac.data.commits import TableData
from almanac.errors import CatalogError, NotFoundError

__all__ = ["load_table", "metadata_location"]


def _split(name: str) -> tuple[str, str]:
    schema, dot, table = name.partition(".")
    return (schema, table) if dot else (DEFAULT_SCHEMA, schema)


def metadata_location(target: str, name: str, *, warehouse: str | None = None) -> str:
    """Where the current ``metadata.json`` of table ``name`` ("S.T") is.
    ``NotFoundError`` for an unknown table, ``CatalogError`` for a table
    with no data yet (its Iceberg table appears with its first commit)."""
    check.string(target, "Parameter 'target' of load_table", nonblank=True)
    check.string(name, "Parameter 'name' of load_table", nonblank=True)
    schema, table_name = _split(name)
    with connect(target, warehouse=warehouse) as cat:
        table = cat.catalog().table(table_name, schema)
        if table is None:
            raise NotFoundError(
                f"Table '{schema}.{table_name}' does not exist", kind="table", name=name
            )
        location = TableData.for_catalog(cat).metadata_location(table.id)
    if location is None:
        raise CatalogError(
            f"Table '{schema}.{table_name}' has no data yet; its Iceberg table appears with "
            "its first data commit",
            table=name,
        )
    return location


def load_table(target: str, name: str, *, warehouse: str | None = None) -> StaticTable:
    """Table ``name`` ("S.T") of the catalog at ``target`` as a read-only
    pyiceberg table at its current data snapshot."""
    return StaticTable.from_metadata(metadata_location(target, name, warehouse=warehouse))
