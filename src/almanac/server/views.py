"""The JSON the read endpoints answer with, built from catalog values.

Pure functions of a ``CatalogVersion`` (or of a version's ``VersionInfo`` and
its neighbours): the endpoints only pick the version and serialise.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from almanac.errors import NotFoundError, VersionNotFoundError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.events import event_json
from almanac.model.read_point import parse_instant
from almanac.model.summary import summarize_update
from almanac.node.catalog import Catalog
from almanac.node.catalog_types import VersionInfo
from almanac.serialization.commands_json import value_to_json
from almanac.sql.reads import iso_utc as iso

__all__ = ["catalog_summary", "iso", "parse_timestamp", "table_view", "version_view"]


def parse_timestamp(text: str) -> dt.datetime:
    """An ISO-8601 instant with a UTC offset, as every read point takes one."""
    return parse_instant(text, "Query parameter 'timestamp'", parameter="timestamp")


def _schema_name(cv: CatalogVersion, schema_id: int) -> str:
    schema = cv.schema_by_id(schema_id)
    return schema.name if schema is not None else f"#{schema_id}"


def _zone_name(cv: CatalogVersion, zone_id: int) -> str | None:
    zone = cv.zone_by_id(zone_id)
    return zone.name if zone is not None else None


def catalog_summary(cv: CatalogVersion) -> dict[str, Any]:
    """Every object of one version; tables and indexes by name, not whole
    (``table_view`` has a table's columns)."""
    tables = {t.id: t for t in cv.tables()}
    default_zone = cv.default_zone
    return {
        "version": cv.version,
        "activation_time": cv.activation_time,
        "activated_at": iso(cv.activation_time),
        "default_zone": default_zone.name if default_zone is not None else None,
        "schemas": [value_to_json(s) for s in cv.schemas()],
        "tables": [
            {
                "id": t.id,
                "schema": _schema_name(cv, t.schema_id),
                "name": t.name,
                "zone": _zone_name(cv, t.zone_id),
                "table_version": t.table_version,
                "columns": len(t.columns),
            }
            for t in tables.values()
        ],
        "indexes": [
            {
                "id": i.id,
                "schema": _schema_name(cv, i.schema_id),
                "name": i.name,
                "table": tables[i.table_id].name if i.table_id in tables else f"#{i.table_id}",
                "index_kind": i.kind.name,
                "unique": i.unique,
                "primary_key": i.primary_key,
                "columns": list(i.columns),
                "status": i.status.name,
            }
            for i in cv.indexes()
        ],
        "zones": [value_to_json(z) for z in cv.zones()],
    }


def table_view(cv: CatalogVersion, schema: str, name: str) -> dict[str, Any]:
    """One table whole, with its indexes; ``NotFoundError`` naming what is
    missing. Any spelling finds it; the names shown are the stored ones."""
    found = cv.schema(schema)
    if found is None:
        raise NotFoundError(
            f"Schema '{schema}' does not exist at version {cv.version}",
            kind="schema",
            name=schema,
            version=cv.version,
        )
    table = cv.table(name, schema)
    if table is None:
        raise NotFoundError(
            f"Table '{schema}.{name}' does not exist at version {cv.version}",
            kind="table",
            name=f"{schema}.{name}",
            version=cv.version,
        )
    return {
        "version": cv.version,
        "schema": found.name,
        "zone": _zone_name(cv, table.zone_id),
        "table": value_to_json(table),
        "indexes": [value_to_json(i) for i in cv.indexes(table.id)],
    }


def version_view(cat: Catalog, info: VersionInfo) -> dict[str, Any]:
    """One version as ``/v1/history`` lists it and ``/v1/events`` sends it."""
    update = info.update
    try:
        after = cat.catalog(info.version)
        before = cat.catalog(info.version - 1) if info.version > cat.earliest_version else after
        summary = summarize_update(update, before, after)
    except VersionNotFoundError:  # checkpointed away meanwhile: the entries still say what
        nothing = CatalogVersion.empty()
        summary = summarize_update(update, nothing, nothing)
    return {
        "version": info.version,
        "commit_time": info.commit_time,
        "activation_time": info.activation_time,
        "activated_at": iso(info.activation_time),
        "node": info.node,
        "request_id": info.request_id,
        "summary": summary,
        "events": [event_json(e) for e in update.entries if e.event_type is not None],
    }
