"""Iceberg properties of namespaces and tables, which the catalog's schemas
and tables do not model: one JSON object per object in the metastore, keyed
by the object's id (ids are never reused, so a dropped object's properties
never reappear under a new one of the same name). Every change to them
compares the revision it was based on, in the transaction of the change."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from almanac.errors import CorruptLogError, ValidationError
from almanac.metastore import Compare, Delete, Metastore, Op, Put

__all__ = [
    "GC_ENABLED",
    "PREFIX",
    "RESERVED_PREFIX",
    "Properties",
    "check_gc",
    "check_not_reserved",
    "is_reserved",
    "properties_key",
]

PREFIX = "iceberg.properties."
GC_ENABLED = "gc.enabled"
"""Served as ``false`` on every table: files are deleted by the catalog
(purge, expired snapshots, the janitor, under its retention), never by an
engine, whose ``DROP TABLE … PURGE``, ``expire_snapshots`` and
``remove_orphan_files`` then refuse to delete files themselves."""


def check_gc(full: str, properties: dict[str, str], served: bool = False) -> None:
    """A 400 unless ``gc.enabled`` is ``false``, or absent where it is not
    ``served`` yet (a create): no client turns on file deletion by engines,
    nor removes the property a load shows."""
    value = properties.get(GC_ENABLED)
    if value == "false" or (value is None and not served):
        return
    change = "removed" if value is None else f"set to '{value}'"
    raise ValidationError(
        f"Table '{full}': property '{GC_ENABLED}' cannot be {change}; it is 'false' on every "
        "Almanac table, whose files only the catalog deletes (purge, expired snapshots and "
        "the janitor, under its retention)",
        table=full,
        property=GC_ENABLED,
        rule="gc-enabled",
    )


RESERVED_PREFIX = "almanac."
"""Properties Almanac keeps itself (table id, catalog version, layout)."""


def is_reserved(key: str) -> bool:
    return key.startswith(RESERVED_PREFIX)


def check_not_reserved(full: str, keys: Iterable[str]) -> None:
    """A 400 for the first of ``keys`` that is Almanac's own: no client sets it."""
    reserved = sorted(k for k in keys if is_reserved(k))
    if reserved:
        raise ValidationError(
            f"Table '{full}': property '{reserved[0]}' is Almanac's own and cannot be set",
            table=full,
            property=reserved[0],
            rule="reserved-property",
        )


def properties_key(kind: str, object_id: int) -> str:
    return f"{PREFIX}{kind}.{object_id}"


@dataclass(frozen=True, slots=True)
class Properties:
    """The properties of one object as read at ``revision`` (0: none stored)."""

    key: str
    values: dict[str, str]
    revision: int

    @staticmethod
    def read(store: Metastore, kind: str, object_id: int) -> Properties:
        key = properties_key(kind, object_id)
        kv = store.get(key)
        if kv is None:
            return Properties(key, {}, 0)
        try:
            values = json.loads(kv.value)
            if not isinstance(values, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in values.items()
            ):
                raise ValueError("not an object of strings")
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptLogError(
                f"Iceberg properties '{key}' do not parse: {exc}", key=key
            ) from exc
        return Properties(key, values, kv.mod_revision)

    def unchanged(self) -> Compare:
        if self.revision == 0:
            return Compare.absent(self.key)
        return Compare.mod_revision(self.key, "==", self.revision)

    def replace(self, values: dict[str, str]) -> Op:
        """The write that stores ``values`` (deletes the key when empty)."""
        if not values:
            return Delete(self.key)
        return Put(self.key, json.dumps(values, sort_keys=True).encode())
