"""Purging soft-deleted tables once their reserve has ended.

A purge is a catalog version like any drop (``PurgeTable``, one per table,
judged when it commits), so every node agrees on when a table went: there
is no clock of a node in the log's meaning, only the times the drops
recorded. Each command is ``expired_only`` and ``if_exists``: a table
recovered, or purged by another node, between the look here and the commit
is left alone. The table's data goes the way a dropped table's goes: the
data plane's janitor removes it once no kept catalog version holds the
table (``almanac.data.janitor``).
"""

from __future__ import annotations

from almanac import _check as check
from almanac.commands.tables import PurgeTable
from almanac.model.descriptors import Table
from almanac.node.catalog import Catalog

__all__ = ["expired_tables", "purge_expired_tables"]


def expired_tables(cat: Catalog) -> list[Table]:
    """The soft-deleted tables of the latest version whose reserve has
    ended by this node's clock, by id."""
    check.instance(cat, Catalog, "Parameter 'cat' of expired_tables")
    now = cat.clock.now()
    latest = cat.catalog()
    return [t for t in latest.soft_deleted_tables() if (t.purge_at or 0) < now]


def purge_expired_tables(cat: Catalog, *, timeout: float | None = None) -> list[Table]:
    """Purge every soft-deleted table whose reserve has ended, in one
    version; returns the tables it purged (as they were before)."""
    check.instance(cat, Catalog, "Parameter 'cat' of purge_expired_tables")
    timeout = check.timeout(timeout, "Parameter 'timeout' of purge_expired_tables")
    expired = expired_tables(cat)
    if not expired:
        return []
    latest = cat.catalog()
    commands = []
    for table in expired:
        schema = latest.schema_by_id(table.schema_id)
        if schema is None:  # never: DROP SCHEMA takes its soft-deleted tables along
            continue
        commands.append(PurgeTable(table.name, schema.name, if_exists=True, expired_only=True))
    result = cat.execute(commands, timeout=timeout)
    purged = {c.name for c, done in zip(commands, result.applied, strict=True) if done}
    return [t for t in expired if t.name in purged]
