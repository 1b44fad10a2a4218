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
left out; ``table_version`` stays, as the table's own change counter.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from almanac.catalog_version import CatalogVersion
from almanac.descriptors import Column, Index, Schema, Table, Zone
from almanac.errors import ValidationError
from almanac.spelling import default_sql

__all__ = [
    "OBJECT_KINDS",
    "CatalogDiff",
    "FieldChange",
    "JsonScalar",
    "JsonValue",
    "ObjectChange",
    "ObjectRef",
    "diff_catalogs",
]

JsonScalar = str | int | float | bool | None
JsonValue = JsonScalar | tuple[JsonScalar, ...]
"""A field's value: a JSON scalar, or a tuple of them (a JSON array)."""

OBJECT_KINDS = ("schema", "zone", "table", "column", "index")
"""Every kind of object a diff names, in the order a diff lists them."""


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """An object added or removed; ``name`` is qualified (``PUBLIC.T``,
    ``PUBLIC.T.C``, ``PUBLIC.I``) as of the version that holds it."""

    kind: str
    id: int
    name: str


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
            "added": [_ref_json(r) for r in self.added],
            "removed": [_ref_json(r) for r in self.removed],
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
    old, new = _objects(before), _objects(after)
    added = [_ref_of(new[k]) for k in sorted(new.keys() - old.keys())]
    removed = [_ref_of(old[k]) for k in sorted(old.keys() - new.keys())]
    changed = []
    for key in sorted(old.keys() & new.keys()):
        was, now = old[key], new[key]
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


_Key = tuple[int, int, int]
"""(kind's place in OBJECT_KINDS, owner id (a column's table, else 0), id)."""


def _objects(cat: CatalogVersion) -> dict[_Key, _Object]:
    out: dict[_Key, _Object] = {}
    for kind, key, obj in _walk(cat):
        out[(OBJECT_KINDS.index(kind), *key)] = obj
    return out


def _walk(cat: CatalogVersion) -> Iterator[tuple[str, tuple[int, int], _Object]]:
    def schema_name(schema_id: int) -> str:
        schema = cat.schemas_by_id.get(schema_id)
        return schema.name if schema is not None else f"#{schema_id}"

    for s in cat.schemas_by_id.values():
        yield "schema", (0, s.id), _Object("schema", s.id, s.name, _schema_fields(s))
    for z in cat.zones_by_id.values():
        fields = _zone_fields(z, default=z.id == cat.default_zone_id)
        yield "zone", (0, z.id), _Object("zone", z.id, z.name, fields)
    for t in cat.tables_by_id.values():
        table_name = f"{schema_name(t.schema_id)}.{t.name}"
        yield "table", (0, t.id), _Object("table", t.id, table_name, _table_fields(t))
        for c in t.columns:
            name = f"{table_name}.{c.name}"
            yield "column", (t.id, c.id), _Object("column", c.id, name, _column_fields(c))
    for i in cat.indexes_by_id.values():
        name = f"{schema_name(i.schema_id)}.{i.name}"
        yield "index", (0, i.id), _Object("index", i.id, name, _index_fields(i))


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
    }


def _column_fields(c: Column) -> dict[str, JsonValue]:
    return {
        "name": c.name,
        "type": c.type.sql_name,
        "nullable": c.nullable,
        "precision": c.precision,
        "scale": c.scale,
        "length": c.length,
        "default": default_sql(c.default),
        "initial_default": default_sql(c.initial_default),
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
    return ObjectRef(obj.kind, obj.id, obj.name)


# -- JSON --------------------------------------------------------------------------


def _ref_json(ref: ObjectRef | ObjectChange) -> dict[str, Any]:
    return {"kind": ref.kind, "id": ref.id, "name": ref.name}


def _to_json(value: JsonValue) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _fail(what: str, expected: str, got: object) -> ValidationError:
    shown = type(got).__name__
    return ValidationError(f"{what} must be {expected}, not {shown}")


def _mapping(value: object, what: str, keys: tuple[str, ...]) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise _fail(what, "a JSON object", value)
    if set(value) != set(keys):
        raise ValidationError(f"{what} must have exactly the keys {', '.join(keys)}")
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
        out.append(_ref(_mapping(item, what, ("kind", "id", "name")), what))
    return tuple(out)
