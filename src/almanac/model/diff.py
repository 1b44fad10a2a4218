"""What changed between two catalog versions, object by object.

Objects are matched by id, never by name: a rename is a changed ``name``
field of the same object, and a table dropped and created again under its
old name is one object removed and another added. A table's columns are
objects of their own (kind ``"column"``; a column's id is unique within its
table only), so adding a column is one added object, not a changed list.

Any two versions may be compared, in either order: ``diff_catalogs(b, a)``
is the inverse of ``diff_catalogs(a, b)`` (added and removed swap, every
field change runs backwards), and the diff is empty exactly when the two
versions hold the same objects. Bookkeeping fields that every touch moves
(``update_version``, ``created_version``, a table's ``next_column_id``) are
left out; ``table_version`` stays, as the table's own change counter. A
soft drop or a recovery is a changed table (``soft_deleted``, ``dropped_at``,
``reserve_ms``); a purge removes it. A data commit is a changed table too:
its ``data_snapshot``, the id of the data snapshot the version pins
(``CatalogVersion.table_data``; none before the table's first data commit
that was a catalog version).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from immutables import Map

from almanac.errors import ValidationError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.descriptor_sql import (
    column_sql,
    default_sql,
    index_columns_sql,
    partition_field_sql,
    sort_field_sql,
    type_sql,
)
from almanac.model.descriptors import Column, Index, Schema, Table, Zone

__all__ = [
    "OBJECT_KINDS",
    "CatalogDiff",
    "FieldChange",
    "JsonScalar",
    "JsonValue",
    "ObjectChange",
    "ObjectRef",
    "diff_catalogs",
    "value_text",
]

JsonScalar = str | int | float | bool | None
JsonValue = JsonScalar | tuple[JsonScalar, ...]
"""A field's value: a JSON scalar, or a tuple of them (a JSON array)."""

OBJECT_KINDS = ("schema", "zone", "table", "column", "index")
"""Every kind of object a diff names, in the order a diff lists them."""


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """An object added or removed; ``name`` is qualified (``PUBLIC.T``,
    ``PUBLIC.T.C``, ``PUBLIC.I``) as of the version that holds it.
    ``definition`` says what the object is, in one line (a column's
    ``STRING(16) NOT NULL``, an index's ``unique SORTED on PUBLIC.T (A
    ASC)``); it is not part of the object's identity."""

    kind: str
    id: int
    name: str
    definition: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class FieldChange:
    field: str
    before: JsonValue
    after: JsonValue


@dataclass(frozen=True, slots=True)
class ObjectChange:
    """An object both versions hold, and its fields that differ; ``name`` is
    the qualified name in the later-listed (``after``) version."""

    kind: str
    id: int
    name: str
    fields: tuple[FieldChange, ...]


@dataclass(frozen=True, slots=True)
class CatalogDiff:
    """From version ``before`` to version ``after`` (either may be the larger)."""

    before: int
    after: int
    added: tuple[ObjectRef, ...]
    removed: tuple[ObjectRef, ...]
    changed: tuple[ObjectChange, ...]

    @property
    def is_empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict (lists for tuples); ``from_json`` reads it back."""
        return {
            "before": self.before,
            "after": self.after,
            "added": [{**_ref_json(r), "definition": r.definition} for r in self.added],
            "removed": [{**_ref_json(r), "definition": r.definition} for r in self.removed],
            "changed": [
                {
                    **_ref_json(c),
                    "fields": [
                        {"field": f.field, "before": _to_json(f.before), "after": _to_json(f.after)}
                        for f in c.fields
                    ],
                }
                for c in self.changed
            ],
        }

    @staticmethod
    def from_json(data: object) -> CatalogDiff:
        """The diff ``to_json`` made; anything else is a ``ValidationError``
        naming the part that is wrong."""
        d = _mapping(data, "A catalog diff", ("before", "after", "added", "removed", "changed"))
        changed = []
        for i, item in enumerate(_list(d["changed"], "'changed' of a catalog diff")):
            what = f"Item {i} of 'changed' of a catalog diff"
            c = _mapping(item, what, ("kind", "id", "name", "fields"))
            fields = []
            for j, f in enumerate(_list(c["fields"], f"'fields' of {what.lower()}")):
                where = f"Field change {j} of {what.lower()}"
                fc = _mapping(f, where, ("field", "before", "after"))
                fields.append(
                    FieldChange(
                        _str(fc["field"], f"'field' of {where.lower()}"),
                        _from_json(fc["before"], f"'before' of {where.lower()}"),
                        _from_json(fc["after"], f"'after' of {where.lower()}"),
                    )
                )
            ref = _ref(c, what)
            changed.append(ObjectChange(ref.kind, ref.id, ref.name, tuple(fields)))
        return CatalogDiff(
            before=_int(d["before"], "'before' of a catalog diff"),
            after=_int(d["after"], "'after' of a catalog diff"),
            added=_refs(d["added"], "added"),
            removed=_refs(d["removed"], "removed"),
            changed=tuple(changed),
        )


def diff_catalogs(before: CatalogVersion, after: CatalogVersion) -> CatalogDiff:
    """Objects of ``after`` that ``before`` lacks, objects of ``before`` that
    ``after`` lacks, and the fields that differ in the objects both hold,
    each list ordered by kind (``OBJECT_KINDS``) and id."""
    if not isinstance(before, CatalogVersion) or not isinstance(after, CatalogVersion):
        raise ValidationError("diff_catalogs compares two CatalogVersion values")
    added: list[ObjectRef] = []
    removed: list[ObjectRef] = []
    changed: list[ObjectChange] = []
    for _, was, now in sorted(_differing(before, after), key=lambda pair: pair[0]):
        if was is None and now is not None:
            added.append(_ref_of(now))
        elif now is None and was is not None:
            removed.append(_ref_of(was))
        elif was is not None and now is not None:
            fields = tuple(
                FieldChange(name, value, now.fields[name])
                for name, value in was.fields.items()
                if value != now.fields[name]
            )
            if fields:
                changed.append(ObjectChange(now.kind, now.id, now.name, fields))
    return CatalogDiff(before.version, after.version, tuple(added), tuple(removed), tuple(changed))


# -- objects as named field maps ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Object:
    kind: str
    id: int
    name: str
    fields: dict[str, JsonValue]
    definition: str


_Key = tuple[int, int, int]
"""(kind's place in OBJECT_KINDS, owner id (a column's table, else 0), id)."""

_T = TypeVar("_T")


def _pairs(old: Map[int, _T], new: Map[int, _T]) -> Iterator[tuple[int, _T | None, _T | None]]:
    """Ids whose descriptors may differ. Versions share every descriptor they
    did not change, so an identical one is skipped without a look inside:
    a diff costs in proportion to what changed (plus a pass over the ids)."""
    if old is new:
        return
    for key in set(old.keys()) | set(new.keys()):
        was, now = old.get(key), new.get(key)
        if was is not now:
            yield key, was, now


def _differing(
    before: CatalogVersion, after: CatalogVersion
) -> Iterator[tuple[_Key, _Object | None, _Object | None]]:
    """Every object that is added, removed or possibly changed, on both sides."""
    kind = OBJECT_KINDS.index
    for key, s0, s1 in _pairs(before.schemas_by_id, after.schemas_by_id):
        yield (kind("schema"), 0, key), _schema(s0), _schema(s1)
    for key, z0, z1 in _pairs(before.zones_by_id, after.zones_by_id):
        yield (kind("zone"), 0, key), _zone(before, z0), _zone(after, z1)
    defaults = (before.default_zone_id, after.default_zone_id)
    for zone_id in {z for z in defaults if z is not None}:
        # The default flag lives outside the zone: a zone that stayed the same
        # object may still have become (or stopped being) the default.
        z0, z1 = before.zones_by_id.get(zone_id), after.zones_by_id.get(zone_id)
        if z0 is not None and z0 is z1 and before.default_zone_id != after.default_zone_id:
            yield (kind("zone"), 0, z0.id), _zone(before, z0), _zone(after, z1)
    tables = set()
    for key, t0, t1 in _pairs(before.tables_by_id, after.tables_by_id):
        tables.add(key)
        yield (kind("table"), 0, key), _table(before, t0), _table(after, t1)
        columns0 = {c.id: c for c in t0.columns} if t0 is not None else {}
        columns1 = {c.id: c for c in t1.columns} if t1 is not None else {}
        for column_id in columns0.keys() | columns1.keys():
            c0, c1 = columns0.get(column_id), columns1.get(column_id)
            if c0 != c1:
                yield (
                    (kind("column"), key, column_id),
                    _column(before, t0, c0),
                    _column(after, t1, c1),
                )
    for key in _data_changed(before.table_data, after.table_data) - tables:
        # A data commit leaves the table's descriptor the same object.
        t0, t1 = before.tables_by_id.get(key), after.tables_by_id.get(key)
        yield (kind("table"), 0, key), _table(before, t0), _table(after, t1)
    for key, i0, i1 in _pairs(before.indexes_by_id, after.indexes_by_id):
        yield (kind("index"), 0, key), _index(before, i0), _index(after, i1)


def _data_changed(old: Map[int, int], new: Map[int, int]) -> set[int]:
    """Tables whose pinned data snapshot differs (ids compared by value)."""
    if old is new:
        return set()
    return {key for key in set(old.keys()) | set(new.keys()) if old.get(key) != new.get(key)}


def _schema_name(version: CatalogVersion, schema_id: int) -> str:
    schema = version.schemas_by_id.get(schema_id)
    return schema.name if schema is not None else f"#{schema_id}"


def _schema(s: Schema | None) -> _Object | None:
    if s is None:
        return None
    return _Object("schema", s.id, s.name, _schema_fields(s), f"schema {s.name}")


def _zone(version: CatalogVersion, z: Zone | None) -> _Object | None:
    if z is None:
        return None
    default = z.id == version.default_zone_id
    definition = (
        f"{_count(z.partitions, 'partition')}, {_count(z.replicas, 'replica')} "
        f"(quorum {z.quorum_size}), {z.consistency_mode.name} consistency, storage profiles "
        f"{', '.join(z.storage_profiles)}" + (", the default zone" if default else "")
    )
    return _Object("zone", z.id, z.name, _zone_fields(z, default=default), definition)


def _table(version: CatalogVersion, t: Table | None) -> _Object | None:
    if t is None:
        return None
    key = (
        f"primary key ({', '.join(t.primary_key)}) {t.primary_key_kind.name}"
        if t.primary_key
        else "no primary key"
    )
    zone = version.zones_by_id.get(t.zone_id)
    definition = (
        f"{_count(len(t.columns), 'column')}, {key}, zone "
        f"{zone.name if zone is not None else f'#{t.zone_id}'}"
        + (", soft-deleted" if t.soft_deleted else "")
    )
    data = version.table_data.get(t.id)
    if data is not None:
        definition += f", data snapshot {data}"
    name = f"{_schema_name(version, t.schema_id)}.{t.name}"
    fields = {**_table_fields(t), "data_snapshot": version.table_data.get(t.id)}
    return _Object("table", t.id, name, fields, definition)


def _column(version: CatalogVersion, t: Table | None, c: Column | None) -> _Object | None:
    if t is None or c is None:
        return None
    name = f"{_schema_name(version, t.schema_id)}.{t.name}.{c.name}"
    return _Object("column", c.id, name, _column_fields(c), column_sql(c))


def _index(version: CatalogVersion, i: Index | None) -> _Object | None:
    if i is None:
        return None
    table = version.tables_by_id.get(i.table_id)
    on = f"{_schema_name(version, table.schema_id)}.{table.name}" if table else f"#{i.table_id}"
    definition = (
        "primary-key " if i.primary_key else "unique " if i.unique else ""
    ) + f"{i.kind.name} on {on} ({index_columns_sql(i)}), {i.status.name}"
    name = f"{_schema_name(version, i.schema_id)}.{i.name}"
    return _Object("index", i.id, name, _index_fields(i), definition)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _schema_fields(s: Schema) -> dict[str, JsonValue]:
    return {"name": s.name}


def _zone_fields(z: Zone, *, default: bool) -> dict[str, JsonValue]:
    return {
        "name": z.name,
        "partitions": z.partitions,
        "replicas": z.replicas,
        "quorum_size": z.quorum_size,
        "scale_up_seconds": z.scale_up_seconds,
        "scale_down_seconds": z.scale_down_seconds,
        "node_filter": z.node_filter,
        "storage_profiles": z.storage_profiles,
        "consistency_mode": z.consistency_mode.name,
        "default": default,
    }


def _table_fields(t: Table) -> dict[str, JsonValue]:
    return {
        "name": t.name,
        "schema_id": t.schema_id,
        "zone_id": t.zone_id,
        "primary_key": t.primary_key,
        "primary_key_kind": t.primary_key_kind.name,
        "primary_key_collations": tuple(c.name for c in t.primary_key_collations),
        "colocation": t.colocation,
        "primary_key_index_id": t.primary_key_index_id,
        "storage_profile": t.storage_profile,
        "table_version": t.table_version,
        "stale_rows_fraction": t.properties.stale_rows_fraction,
        "min_stale_rows": t.properties.min_stale_rows,
        "soft_deleted": t.soft_deleted,
        "dropped_at": t.dropped_at,
        "reserve_ms": t.reserve_ms,
        "partition_spec_id": t.default_spec_id,
        "partition_spec": tuple(partition_field_sql(t, f) for f in t.partition_spec.fields),
        "sort_order_id": t.default_sort_order_id,
        "sort_order": tuple(sort_field_sql(t, f) for f in t.sort_order.fields),
    }


def _column_fields(c: Column) -> dict[str, JsonValue]:
    return {
        "name": c.name,
        # A nested type with its fields, so a change inside it shows.
        "type": type_sql(c) if c.type.nested else c.type.sql_name,
        "nullable": c.nullable,
        "precision": c.precision,
        "scale": c.scale,
        "length": c.length,
        "default": default_sql(c.default),
        "initial_default": default_sql(c.initial_default),
        "doc": c.doc,
    }


def _index_fields(i: Index) -> dict[str, JsonValue]:
    return {
        "name": i.name,
        "table_id": i.table_id,
        "unique": i.unique,
        "kind": i.kind.name,
        "columns": i.columns,
        "collations": tuple(c.name for c in i.collations),
        "status": i.status.name,
        "primary_key": i.primary_key,
    }


def _ref_of(obj: _Object) -> ObjectRef:
    return ObjectRef(obj.kind, obj.id, obj.name, obj.definition)


def value_text(value: JsonValue) -> str:
    """A field's value as a person reads it: text unquoted, ``none`` for
    null, a list comma-separated; what the console and the command line show."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ", ".join(value_text(v) for v in value) if value else "(empty)"
    if value == "":
        return "''"
    return str(value)


# -- JSON --------------------------------------------------------------------------


def _ref_json(ref: ObjectRef | ObjectChange) -> dict[str, Any]:
    return {"kind": ref.kind, "id": ref.id, "name": ref.name}


def _to_json(value: JsonValue) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _fail(what: str, expected: str, got: object) -> ValidationError:
    shown = type(got).__name__
    return ValidationError(f"{what} must be {expected}, not {shown}")


def _mapping(
    value: object, what: str, keys: tuple[str, ...], optional: tuple[str, ...] = ()
) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise _fail(what, "a JSON object", value)
    if not set(keys) <= set(value) <= set(keys + optional):
        shown = ", ".join(keys) + "".join(f" (and optionally {k})" for k in optional)
        raise ValidationError(f"{what} must have exactly the keys {shown}")
    return value


def _list(value: object, what: str) -> list[object]:
    if not isinstance(value, list | tuple):
        raise _fail(what, "a JSON array", value)
    return list(value)


def _int(value: object, what: str) -> int:
    if type(value) is not int or not -(2**63) <= value < 2**63:
        raise _fail(what, "a 64-bit integer", value)
    return value


def _str(value: object, what: str) -> str:
    if type(value) is not str:
        raise _fail(what, "a string", value)
    return value


def _scalar(value: object, what: str) -> JsonScalar:
    if value is None or type(value) in (str, bool):
        return value  # type: ignore[return-value]
    if type(value) is int:
        return _int(value, what)
    if type(value) is float and math.isfinite(value):
        return value
    raise _fail(what, "a JSON scalar (string, number, boolean or null)", value)


def _from_json(value: object, what: str) -> JsonValue:
    if isinstance(value, list | tuple):
        return tuple(_scalar(v, f"An item of {what}") for v in value)
    return _scalar(value, what)


def _ref(item: Mapping[str, object], what: str) -> ObjectRef:
    kind = _str(item["kind"], f"'kind' of {what.lower()}")
    if kind not in OBJECT_KINDS:
        raise ValidationError(
            f"'kind' of {what.lower()} must be one of {', '.join(OBJECT_KINDS)}, not {kind!r}"
        )
    return ObjectRef(
        kind,
        _int(item["id"], f"'id' of {what.lower()}"),
        _str(item["name"], f"'name' of {what.lower()}"),
    )


def _refs(value: object, key: str) -> tuple[ObjectRef, ...]:
    out = []
    for i, item in enumerate(_list(value, f"'{key}' of a catalog diff")):
        what = f"Item {i} of '{key}' of a catalog diff"
        fields = _mapping(item, what, ("kind", "id", "name"), ("definition",))
        ref = _ref(fields, what)
        definition = _str(fields.get("definition", ""), f"'definition' of {what.lower()}")
        out.append(ObjectRef(ref.kind, ref.id, ref.name, definition))
    return tuple(out)
