"""One immutable version of the whole catalog.

Every map is an ``immutables.Map`` (a hash array mapped trie), so a new
version shares every node it did not change: a version costs memory in
proportion to what changed, not to the size of the catalog.

Names follow one rule: within their parent (the catalog for schemas and
zones, a schema for tables and indexes) they are unique without regard to
case, and every lookup finds an object by any spelling of its name. The
by-name maps keep each name as it was written; beside each one a *key map*,
made by ``name_key`` alone, groups the ids by case-free key. A lookup tries
the exact spelling first, then the key. Catalogs made before the rule may
hold case-only twins (``orders`` and ``ORDERS``): each stays reachable by
its exact spelling, and only a spelling that matches neither exactly but
both without case is refused (``AmbiguousNameError``, naming both).
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from immutables import Map

from almanac.errors import AmbiguousNameError
from almanac.model.descriptors import Index, Schema, Table, Zone
from almanac.model.names import name_key

__all__ = ["DEFAULT_SCHEMA", "CatalogVersion"]

DEFAULT_SCHEMA = "PUBLIC"

_K = TypeVar("_K")
_V = TypeVar("_V")


def _sorted_by_id(items: Iterable[_V]) -> list[_V]:
    return sorted(items, key=lambda o: o.id)  # type: ignore[attr-defined]


NameKind = Literal["schema", "table", "index", "zone"]

_Key = TypeVar("_Key", str, tuple[int, str])
_Ids = tuple[int, ...]
_Held = int | _Ids
"""A key map's value: the one id holding the key (nearly always), or the
sorted ids of an old catalog's case-only twins; a bare int keeps the maps small."""


def _ids(held: _Held | None) -> _Ids:
    if held is None:
        return ()
    return (held,) if isinstance(held, int) else held


def _held(ids: _Ids) -> _Held:
    return ids[0] if len(ids) == 1 else tuple(sorted(ids))


def _fold(key: _Key) -> _Key:
    if isinstance(key, tuple):
        return (key[0], name_key(key[1]))
    return name_key(key)


def bind_name(
    names: Map[_Key, int], keys: Map[_Key, _Held], key: _Key, object_id: int
) -> tuple[Map[_Key, int], Map[_Key, _Held]]:
    """``names`` and its key map with ``key`` naming ``object_id``."""
    folded = _fold(key)
    held: _Ids = _ids(keys.get(folded))
    if object_id not in held:
        keys = keys.set(folded, _held((*held, object_id)))
    return names.set(key, object_id), keys


def unbind_name(
    names: Map[_Key, int], keys: Map[_Key, _Held], key: _Key, object_id: int
) -> tuple[Map[_Key, int], Map[_Key, _Held]]:
    """``names`` and its key map without ``key``, if it names ``object_id``."""
    if names.get(key) != object_id:
        return names, keys
    folded = _fold(key)
    rest = tuple(i for i in _ids(keys.get(folded)) if i != object_id)
    return names.delete(key), keys.set(folded, _held(rest)) if rest else keys.delete(folded)


def _key_map(names: Map[_Key, int]) -> Map[_Key, _Held]:
    grouped: dict[_Key, list[int]] = {}
    for key, object_id in names.items():
        grouped.setdefault(_fold(key), []).append(object_id)
    return Map({key: _held(tuple(ids)) for key, ids in grouped.items()})


_DERIVE: Map[Any, Any] = Map()
"""Default of the key maps, told apart by identity (``immutables`` makes a
new empty map per call): derive them from the by-name maps (a decoded or
hand-built version); ``evolve`` passes them on, kept up by ``bind_name``."""


@dataclass(frozen=True, slots=True)
class CatalogVersion:
    """The catalog as of ``version``; equal versions compare equal field by field.

    Name maps are keyed by ``(schema_id, name)`` for objects that live in a
    schema. The ``*_keys`` maps are theirs grouped by ``name_key``: derived
    state, left out of equality and of the serialized form. ``index_names``
    holds only alive indexes: a STOPPING index keeps its name but frees it
    for reuse.

    A soft-deleted table (``Table.soft_deleted``) keeps its entries in every
    map, so its name and its indexes' names stay taken and ``tables_by_id``
    still holds it; the lookups by name and the listings below leave it and
    its indexes out, as if it were gone.
    """

    version: int
    activation_time: int
    object_id_gen: int
    default_zone_id: int | None
    schemas_by_id: Map[int, Schema]
    schema_names: Map[str, int]
    tables_by_id: Map[int, Table]
    table_names: Map[tuple[int, str], int]
    indexes_by_id: Map[int, Index]
    index_names: Map[tuple[int, str], int]
    table_indexes: Map[int, tuple[int, ...]]
    zones_by_id: Map[int, Zone]
    zone_names: Map[str, int]
    table_data: Map[int, int] = field(default=Map(), compare=True)
    """Each table's current data snapshot id, for tables whose data commits
    were catalog versions (a table whose data predates that is absent until
    its next commit: its older snapshots are found by their stamped version)."""
    schema_keys: Map[str, _Held] = field(default=_DERIVE, compare=False, repr=False)
    table_keys: Map[tuple[int, str], _Held] = field(default=_DERIVE, compare=False, repr=False)
    index_keys: Map[tuple[int, str], _Held] = field(default=_DERIVE, compare=False, repr=False)
    zone_keys: Map[str, _Held] = field(default=_DERIVE, compare=False, repr=False)

    def __post_init__(self) -> None:
        # Every version ``evolve`` makes carries its key maps over: that case
        # is told apart inline, since every entry applied (replay) runs this.
        if (
            self.schema_keys is not _DERIVE
            and self.table_keys is not _DERIVE
            and self.index_keys is not _DERIVE
            and self.zone_keys is not _DERIVE
        ):
            return
        for names, keys in _NAME_FIELDS.values():
            if getattr(self, keys) is _DERIVE:
                object.__setattr__(self, keys, _key_map(getattr(self, names)))

    @staticmethod
    def empty() -> CatalogVersion:
        """Version 0: nothing at all, not even the PUBLIC schema."""
        return CatalogVersion(
            version=0,
            activation_time=0,
            object_id_gen=0,
            default_zone_id=None,
            schemas_by_id=Map(),
            schema_names=Map(),
            tables_by_id=Map(),
            table_names=Map(),
            indexes_by_id=Map(),
            index_names=Map(),
            table_indexes=Map(),
            zones_by_id=Map(),
            zone_names=Map(),
        )

    def evolve(self, **changes: Any) -> CatalogVersion:
        """``dataclasses.replace``, at a third less of its cost: every entry
        applied, and so every version made, calls it."""
        values = list(_FIELD_VALUES(self))
        for name, value in changes.items():
            index = _FIELD_INDEX.get(name)
            if index is None:
                raise TypeError(f"CatalogVersion has no field {name!r}")
            values[index] = value
        return CatalogVersion(*values)

    def data_snapshot(self, table_id: int) -> int | None:
        """The id of the data snapshot table ``table_id`` has at this version,
        None when no data commit of it was a catalog version (yet)."""
        return self.table_data.get(table_id)

    # -- schemas -------------------------------------------------------------

    def _by_key(self, kind: NameKind, key: _Key) -> int | None:
        """The one id ``key`` names without regard to case, when its exact
        spelling (which the callers try first, inline: it is the hot path)
        names nothing."""
        held: _Held | None = getattr(self, _NAME_FIELDS[kind][1]).get(_fold(key))
        if held is None or isinstance(held, int):
            return held
        name = key[1] if isinstance(key, tuple) else key
        raise self._ambiguous(kind, name, held)

    def _ambiguous(self, kind: NameKind, name: str, held: _Ids) -> AmbiguousNameError:
        matches = sorted(self._qualified(kind, i) for i in held)
        shown = " and ".join(repr(m) for m in matches)
        return AmbiguousNameError(
            f"{kind.capitalize()} name {name!r} matches {shown} without regard to case: they "
            "were made before names became case-insensitive; spell one of them exactly "
            "(quoted in SQL) or rename one",
            kind=kind,
            name=name,
            matches=matches,
            rule="ambiguous-name",
        )

    def holders(self, kind: NameKind, name: str, schema_id: int | None = None) -> _Ids:
        """Every id whose name equals ``name`` without regard to case (alive
        indexes only; soft-deleted tables included): what a create collides
        with. ``schema_id`` is the parent of tables and indexes."""
        keys: Map[Any, _Held] = getattr(self, _NAME_FIELDS[kind][1])
        key = name_key(name)
        return _ids(keys.get(key if schema_id is None else (schema_id, key)))

    def name_collisions(self) -> list[tuple[NameKind, list[str]]]:
        """Names that differ only by case, each group sorted, schema-qualified
        for tables and indexes: only catalogs made before the rule hold any."""
        found: list[tuple[NameKind, list[str]]] = []
        for kind, (_, keys) in _NAME_FIELDS.items():
            for held in getattr(self, keys).values():
                if not isinstance(held, int):
                    found.append((kind, sorted(self._qualified(kind, i) for i in held)))
        return sorted(found)

    def _qualified(self, kind: NameKind, object_id: int) -> str:
        if kind == "schema":
            return self.schemas_by_id[object_id].name
        if kind == "zone":
            return self.zones_by_id[object_id].name
        obj = self.tables_by_id[object_id] if kind == "table" else self.indexes_by_id[object_id]
        schema = self.schemas_by_id.get(obj.schema_id)
        return f"{'?' if schema is None else schema.name}.{obj.name}"

    def schema(self, name: str) -> Schema | None:
        sid = self.schema_names.get(name)
        if sid is None:
            sid = self._by_key("schema", name)
        return None if sid is None else self.schemas_by_id[sid]

    def schema_by_id(self, schema_id: int) -> Schema | None:
        return self.schemas_by_id.get(schema_id)

    def schemas(self) -> list[Schema]:
        return _sorted_by_id(self.schemas_by_id.values())

    # -- tables --------------------------------------------------------------

    def table(self, name: str, schema: str = DEFAULT_SCHEMA) -> Table | None:
        sid = self.schema_names.get(schema)
        if sid is None:
            sid = self._by_key("schema", schema)
        if sid is None:
            return None
        tid = self.table_names.get((sid, name))
        if tid is None:
            tid = self._by_key("table", (sid, name))
        if tid is None:
            return None
        table = self.tables_by_id[tid]
        return None if table.dropped_at is not None else table

    def table_by_id(self, table_id: int) -> Table | None:
        """The table with this id, soft-deleted or not."""
        return self.tables_by_id.get(table_id)

    def tables(self, schema: str | None = None) -> list[Table]:
        """The tables (of one schema), soft-deleted ones left out."""
        return [t for t in self._tables(schema) if t.dropped_at is None]

    def soft_deleted_table(self, name: str, schema: str = DEFAULT_SCHEMA) -> Table | None:
        """The soft-deleted table holding this name, if any."""
        sid = self.schema_names.get(schema)
        if sid is None:
            sid = self._by_key("schema", schema)
        tid = None if sid is None else self.table_names.get((sid, name))
        if sid is not None and tid is None:
            tid = self._by_key("table", (sid, name))
        table = None if tid is None else self.tables_by_id[tid]
        return table if table is not None and table.dropped_at is not None else None

    def soft_deleted_tables(self, schema: str | None = None) -> list[Table]:
        return [t for t in self._tables(schema) if t.dropped_at is not None]

    def _tables(self, schema: str | None) -> list[Table]:
        if schema is None:
            return _sorted_by_id(self.tables_by_id.values())
        sid = self.schema_names.get(schema)
        if sid is None:
            sid = self._by_key("schema", schema)
        if sid is None:
            return []
        return _sorted_by_id(t for t in self.tables_by_id.values() if t.schema_id == sid)

    # -- indexes -------------------------------------------------------------

    def index(self, name: str, schema: str = DEFAULT_SCHEMA) -> Index | None:
        sid = self.schema_names.get(schema)
        if sid is None:
            sid = self._by_key("schema", schema)
        if sid is None:
            return None
        iid = self.index_names.get((sid, name))
        if iid is None:
            iid = self._by_key("index", (sid, name))
        if iid is None:
            return None
        index = self.indexes_by_id[iid]
        return None if self._table_soft_deleted(index.table_id) else index

    def index_by_id(self, index_id: int) -> Index | None:
        return self.indexes_by_id.get(index_id)

    def indexes(self, table_id: int | None = None) -> list[Index]:
        """All indexes (STOPPING included) but those of soft-deleted tables,
        or every index of one table when ``table_id`` is given."""
        if table_id is None:
            return _sorted_by_id(
                i for i in self.indexes_by_id.values() if not self._table_soft_deleted(i.table_id)
            )
        return [self.indexes_by_id[i] for i in self.table_indexes.get(table_id, ())]

    def _table_soft_deleted(self, table_id: int) -> bool:
        table = self.tables_by_id.get(table_id)
        return table is not None and table.dropped_at is not None

    # -- zones ---------------------------------------------------------------

    def zone(self, name: str) -> Zone | None:
        zid = self.zone_names.get(name)
        if zid is None:
            zid = self._by_key("zone", name)
        return None if zid is None else self.zones_by_id[zid]

    def zone_by_id(self, zone_id: int) -> Zone | None:
        return self.zones_by_id.get(zone_id)

    def zones(self) -> list[Zone]:
        return _sorted_by_id(self.zones_by_id.values())

    @property
    def default_zone(self) -> Zone | None:
        return None if self.default_zone_id is None else self.zones_by_id.get(self.default_zone_id)


_NAME_FIELDS: dict[NameKind, tuple[str, str]] = {
    "schema": ("schema_names", "schema_keys"),
    "table": ("table_names", "table_keys"),
    "index": ("index_names", "index_keys"),
    "zone": ("zone_names", "zone_keys"),
}

_FIELD_NAMES = tuple(field.name for field in dataclasses.fields(CatalogVersion))
_FIELD_INDEX = {name: i for i, name in enumerate(_FIELD_NAMES)}
_FIELD_VALUES = operator.attrgetter(*_FIELD_NAMES)
