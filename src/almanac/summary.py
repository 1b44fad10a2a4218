"""One line saying what a version changed, naming the objects.

Error messages (a lost race), logs and ``SHOW HISTORY`` all describe
versions this way.
"""

from __future__ import annotations

from almanac.catalog_version import CatalogVersion
from almanac.entries import ObjectIdsReserved, VersionedUpdate

__all__ = ["CHECKPOINT_SUMMARY", "SUMMARY_ENTRIES", "object_name", "summarize_update"]

CHECKPOINT_SUMMARY = "checkpoint: the whole catalog as of this version; older versions compacted"
"""What the history says of the earliest version once the log was checkpointed."""

SUMMARY_ENTRIES = 20
"""The most entries a summary names; a script of thousands of statements
still gets one readable line (``…, and 2980 more``), in every history
row, event and error message that carries it."""


def summarize_update(update: VersionedUpdate, before: CatalogVersion, after: CatalogVersion) -> str:
    """``NewTable PUBLIC.T, NewIndex I``: each entry and the object it touched,
    named as of ``after`` (or ``before``, for an object the version removed).
    An update without entries is the one ``Catalog.history`` lists for a
    checkpoint."""
    if not update.entries:
        return CHECKPOINT_SUMMARY
    parts = []
    entries = [e for e in update.entries if not isinstance(e, ObjectIdsReserved)]
    for entry in entries[:SUMMARY_ENTRIES]:
        object_id = entry.object_id()
        name = object_name(after, object_id) or object_name(before, object_id)
        parts.append(f"{type(entry).__name__} {name}" if name else type(entry).__name__)
    more = len(entries) - len(parts)
    return ", ".join(parts) + (f", and {more} more" if more else "")


def object_name(cat: CatalogVersion, object_id: int) -> str | None:
    """A table as ``SCHEMA.TABLE``, other objects by their name; ``None`` when
    ``cat`` has no object of that id."""
    table = cat.tables_by_id.get(object_id)
    if table is not None:
        schema = cat.schemas_by_id.get(table.schema_id)
        return f"{schema.name}.{table.name}" if schema is not None else table.name
    for by_id in (cat.schemas_by_id, cat.zones_by_id, cat.indexes_by_id):
        found = by_id.get(object_id)
        if found is not None:
            return str(found.name)
    return None
