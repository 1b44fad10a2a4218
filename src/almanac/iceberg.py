"""Interop: a catalog table as a pyiceberg ``Table``, for any Iceberg tool.

Almanac keeps a table's current ``metadata.json`` location in its metastore
(the Iceberg "catalog pointer"); this reads it and hands the rest to
pyiceberg, so what an Iceberg reader sees is exactly what Almanac wrote.
"""

from __future__ import annotations

from pyiceberg.table import StaticTable

from almanac import _check as check
from almanac.access.connection import connect
from almanac.data.commits import TableData
from almanac.errors import CatalogError, NotFoundError, ValidationError
from almanac.model.catalog_version import DEFAULT_SCHEMA, CatalogVersion

__all__ = ["load_table", "metadata_location"]


def _resolve(version: CatalogVersion, name: str, schema: str | None) -> tuple[str, str]:
    """(schema, table) of ``name``: "T" is a table of the default schema and
    "S.T" a table of schema S, but a schema or table name may hold a dot
    (``"S.X"`` or ``".."``), so every split that names an existing table is
    tried; more than one is ambiguous (pass ``schema``)."""
    if schema is not None:
        return schema, name
    candidates = [(DEFAULT_SCHEMA, name)]
    candidates += [(name[:i], name[i + 1 :]) for i, c in enumerate(name) if c == "."]
    found = list(dict.fromkeys(c for c in candidates if version.table(c[1], c[0]) is not None))
    if len(found) > 1:
        shown = ", ".join(f"table '{t}' of schema '{s}'" for s, t in found)
        raise ValidationError(
            f"Table name '{name}' is ambiguous: it names {shown}; pass schema= to choose",
            table=name,
        )
    if found:
        return found[0]
    schema_name, dot, table_name = name.partition(".")
    return (schema_name, table_name) if dot else (DEFAULT_SCHEMA, name)


def metadata_location(
    target: str, name: str, *, warehouse: str | None = None, schema: str | None = None
) -> str:
    """Where the current ``metadata.json`` of table ``name`` ("S.T", or "T"
    with ``schema``) is. ``NotFoundError`` for an unknown table,
    ``CatalogError`` for a table with no data yet (its Iceberg table appears
    with its first commit). A target that holds no catalog is a
    ``NotFoundError``: nothing is created there."""
    check.string(target, "Parameter 'target' of metadata_location", nonblank=True)
    check.string(name, "Parameter 'name' of metadata_location", nonblank=True)
    if schema is not None:
        check.string(schema, "Parameter 'schema' of metadata_location", nonblank=True)
    with connect(target, warehouse=warehouse, create=False) as cat:
        version = cat.catalog()
        schema_name, table_name = _resolve(version, name, schema)
        table = version.table(table_name, schema_name)
        if table is None:
            raise NotFoundError(
                f"Table '{table_name}' of schema '{schema_name}' does not exist",
                kind="table",
                name=name,
            )
        location = TableData.for_catalog(cat).metadata_location(table.id)
    if location is None:
        raise CatalogError(
            f"Table '{schema_name}.{table_name}' has no data yet; its Iceberg table appears with "
            "its first data commit",
            table=name,
        )
    return location


def load_table(
    target: str, name: str, *, warehouse: str | None = None, schema: str | None = None
) -> StaticTable:
    """Table ``name`` ("S.T", or "T" with ``schema``) of the catalog at
    ``target`` as a read-only pyiceberg table at its current data snapshot."""
    return StaticTable.from_metadata(
        metadata_location(target, name, warehouse=warehouse, schema=schema)
    )
