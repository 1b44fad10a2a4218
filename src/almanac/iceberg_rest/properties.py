"""Iceberg properties of namespaces and tables, which the catalog's schemas
and tables do not model: one JSON object per object in the metastore, keyed
by the object's id (ids are never reused, so a dropped object's properties
never reappear under a new one of the same name). Every change to them
compares the revision it was based on, in the transaction of the change."""

from __future__ import annotations

import json
from dataclasses import dataclass

from almanac.errors import CorruptLogError
from almanac.metastore import Compare, Delete, Metastore, Op, Put

__all__ = ["PREFIX", "Properties", "properties_key"]

PREFIX = "iceberg.properties."


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
