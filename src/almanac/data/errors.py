"""Errors of the data plane; all are ``CatalogError`` subclasses."""

from __future__ import annotations

from almanac.errors import CatalogError, ValidationError

__all__ = ["DataError", "SnapshotExpiredError", "WriteStateError"]


class DataError(ValidationError):
    """Rows do not fit the table: a type that cannot be stored without loss, a
    NULL in a NOT NULL column, a missing or unknown column. The message names
    the column and the table; nothing was written."""


class WriteStateError(CatalogError):
    """A write cannot be committed in its state: it was aborted, its staging
    lease expired (the janitor may have removed its files), or its write id
    was committed to another table."""


class SnapshotExpiredError(CatalogError):
    """The data snapshot a read at a version or timestamp needs was removed by
    ``expire_data``; the read would otherwise silently return other data."""
