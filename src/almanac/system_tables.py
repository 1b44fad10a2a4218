"""The system tables: ``system_table`` reads one as an Arrow table, from an
open catalog or from a catalog target opened for the read.

The rows, their columns and the SQL cells are ``almanac.sql.system_rows``,
re-exported here; this module is the front door above the catalog node and
the opener, which the rows must not import.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import TYPE_CHECKING

from almanac import _check as check
from almanac.access.connection import open_catalog
from almanac.errors import ValidationError
from almanac.model.read_point import ReadPoint
from almanac.model.targets import Target, parse_target
from almanac.node.catalog import Catalog
from almanac.sql.system_rows import (
    SYSTEM_COLUMNS,
    SYSTEM_SCHEMA,
    SYSTEM_TABLES,
    ColumnKind,
    SystemRows,
    arrow_schema,
    sql_cells,
    system_name,
    system_rows,
    to_arrow,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "SYSTEM_COLUMNS",
    "SYSTEM_SCHEMA",
    "SYSTEM_TABLES",
    "ColumnKind",
    "SystemRows",
    "arrow_schema",
    "sql_cells",
    "system_rows",
    "system_table",
    "to_arrow",
]


def system_table(
    target_or_catalog: Catalog | str | os.PathLike[str] | Target,
    name: str,
    *,
    version: int | None = None,
    timestamp: dt.datetime | None = None,
) -> pa.Table:
    """System table ``name`` (``"SYSTEM.TABLES"``, any case) as an Arrow table,
    at catalog ``version`` or at ``timestamp`` (an aware datetime, as SQL's
    ``AS OF TIMESTAMP``), or the latest.

    ``target_or_catalog`` is an open ``Catalog`` or a local catalog target
    (a directory, ``sqlite:///…``, ``etcd://…``), opened for this read."""
    short = system_name(name)
    as_of = _as_of(version, timestamp)
    if isinstance(target_or_catalog, Catalog):
        if target_or_catalog.closed:
            raise ValidationError("system_table cannot read a closed catalog", rule="closed")
        return to_arrow(system_rows(target_or_catalog, short, as_of=as_of))
    with _open(target_or_catalog) as cat:
        return to_arrow(system_rows(cat, short, as_of=as_of))


def _as_of(version: object, timestamp: object) -> ReadPoint:
    check.optional_int(version, "Parameter 'version' of system_table", lo=0)
    if timestamp is not None:
        what = "Parameter 'timestamp' of system_table"
        if not isinstance(timestamp, dt.datetime):
            raise check.fail(what, "an aware datetime", timestamp)
        check.timestamp(timestamp, what)  # aware, and inside the hybrid clock's range
    return ReadPoint(version=version, timestamp=timestamp)  # type: ignore[arg-type]


def _open(target: object) -> Catalog:
    parsed = parse_target(target)
    if parsed.kind in ("http", "memory"):
        raise ValidationError(
            f"system_table reads a catalog's own store; '{parsed}' "
            + (
                "is a server (read SHOW TABLES and the like through its SQL instead)"
                if parsed.kind == "http"
                else "would be a fresh, empty catalog (pass the open Catalog instead)"
            ),
            target=str(parsed),
            rule="local-target",
        )
    return open_catalog(parsed, create=False)
