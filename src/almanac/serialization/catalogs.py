"""Serializers of a whole ``CatalogVersion`` and of a ``Checkpoint`` (the
catalog plus the request ids it carries): the checkpoint entry of the update log.

Every map is written in full, in ascending key order, including the name
maps and ``table_indexes`` that could in principle be derived from the
descriptors. Deriving them would tie the format to today's rules (a STOPPING
index frees its name; ``table_indexes`` keeps creation order), and any drift
between those rules and what the log actually built would make a decoded
version differ from the one that was written. Writing them costs a few
bytes per object and makes ``decode(encode(v)) == v`` hold for any version.

The reader requires strictly increasing keys: that rejects duplicates, which
would otherwise shrink a map silently, and keeps one encoding per version.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from operator import itemgetter
from typing import Any, Protocol, TypeVar

from immutables import Map

from almanac.model.catalog_version import CatalogVersion
from almanac.model.request_ids import Checkpoint, RequestRecord
from almanac.serialization.io import Reader, Writer
from almanac.serialization.registry import REGISTRY, SerializerInfo
from almanac.serialization.types import read_index, read_schema, read_table, read_zone

__all__: list[str] = []

_K = TypeVar("_K", bound="_Key")
_V = TypeVar("_V")
_first = itemgetter(0)
_nested = REGISTRY.write_nested


class _Key(Protocol):
    """Map keys here are ints, strings or (int, str) pairs: hashable and ordered."""

    def __hash__(self) -> int: ...
    def __le__(self, other: Any, /) -> bool: ...


def _sorted(items: Iterable[tuple[_K, _V]]) -> list[tuple[_K, _V]]:
    return sorted(items, key=_first)


def _write_map(
    w: Writer,
    m: Map[_K, _V],
    write_key: Callable[[Writer, _K], None],
    write_value: Callable[[Writer, _V], None],
) -> None:
    w.uvarint(len(m))
    for key, value in _sorted(m.items()):
        write_key(w, key)
        write_value(w, value)


def _read_map(
    r: Reader,
    what: str,
    min_item_size: int,
    read_key: Callable[[Reader], _K],
    read_value: Callable[[Reader], _V],
) -> Map[_K, _V]:
    n = r.count(what, min_item_size)
    items: list[tuple[_K, _V]] = []
    append = items.append
    previous: _K | None = None
    for _ in range(n):
        start = r.pos
        key = read_key(r)
        if previous is not None and key <= previous:
            r.fail(f"Keys of {what} are not in strictly increasing order", start)
        previous = key
        append((key, read_value(r)))
    return Map(items)


def _write_scoped_name(w: Writer, key: tuple[int, str]) -> None:
    w.svarint(key[0])
    w.string(key[1])


def _read_scoped_name(r: Reader) -> tuple[int, str]:
    return r.svarint(), r.string()


# Smallest encoded size of one map item, used to refuse impossible counts early:
# a one-byte key plus a nested object header (2-byte type id + 1-byte version),
# or two one-byte fields.
_OBJECT_ITEM = 4
_PLAIN_ITEM = 2


def _write_catalog_v1(w: Writer, s: CatalogVersion) -> None:
    w.svarint(s.version)
    w.svarint(s.activation_time)
    w.svarint(s.object_id_gen)
    w.opt_svarint(s.default_zone_id)
    _write_map(w, s.schemas_by_id, Writer.svarint, _nested)
    _write_map(w, s.schema_names, Writer.string, Writer.svarint)
    _write_map(w, s.tables_by_id, Writer.svarint, _nested)
    _write_map(w, s.table_names, _write_scoped_name, Writer.svarint)
    _write_map(w, s.indexes_by_id, Writer.svarint, _nested)
    _write_map(w, s.index_names, _write_scoped_name, Writer.svarint)
    _write_map(w, s.table_indexes, Writer.svarint, Writer.svarints)
    _write_map(w, s.zones_by_id, Writer.svarint, _nested)
    _write_map(w, s.zone_names, Writer.string, Writer.svarint)


def _read_catalog_v1(r: Reader) -> CatalogVersion:
    svarint, string, svarints = Reader.svarint, Reader.string, Reader.svarints
    return CatalogVersion(
        version=r.svarint(),
        activation_time=r.svarint(),
        object_id_gen=r.svarint(),
        default_zone_id=r.opt_svarint(),
        schemas_by_id=_read_map(r, "schemas_by_id", _OBJECT_ITEM, svarint, read_schema),
        schema_names=_read_map(r, "schema_names", _PLAIN_ITEM, string, svarint),
        tables_by_id=_read_map(r, "tables_by_id", _OBJECT_ITEM, svarint, read_table),
        table_names=_read_map(r, "table_names", _PLAIN_ITEM, _read_scoped_name, svarint),
        indexes_by_id=_read_map(r, "indexes_by_id", _OBJECT_ITEM, svarint, read_index),
        index_names=_read_map(r, "index_names", _PLAIN_ITEM, _read_scoped_name, svarint),
        table_indexes=_read_map(r, "table_indexes", _PLAIN_ITEM, svarint, svarints),
        zones_by_id=_read_map(r, "zones_by_id", _OBJECT_ITEM, svarint, read_zone),
        zone_names=_read_map(r, "zone_names", _PLAIN_ITEM, string, svarint),
    )


def _write_catalog_v2(w: Writer, s: CatalogVersion) -> None:
    """Version 1, then each table's current data snapshot."""
    _write_catalog_v1(w, s)
    _write_map(w, s.table_data, Writer.svarint, Writer.svarint)


def _read_catalog_v2(r: Reader) -> CatalogVersion:
    catalog = _read_catalog_v1(r)
    svarint = Reader.svarint
    data = _read_map(r, "table_data", _PLAIN_ITEM, svarint, svarint)
    return catalog.evolve(table_data=data)


REGISTRY.register(
    SerializerInfo(CatalogVersion, 1, "0.1.0", _read_catalog_v1, None),
    SerializerInfo(CatalogVersion, 2, "0.7.0", _read_catalog_v2, _write_catalog_v2),
)

_read_catalog = REGISTRY.nested_reader(CatalogVersion)


def _write_checkpoint_v1(w: Writer, c: Checkpoint) -> None:
    """The nested catalog, then the requests in strictly increasing id order."""
    _nested(w, c.catalog)
    w.uvarint(len(c.requests))
    for record in sorted(c.requests, key=_request_id):
        w.string(record.request_id)
        w.svarint(record.version)
        w.svarint(record.activation_time)
        w.blob(record.digest)
        w.uvarint(len(record.applied))
        for applied in record.applied:
            w.boolean(applied)


def _read_checkpoint_v1(r: Reader) -> Checkpoint:
    catalog = _read_catalog(r)
    records: list[RequestRecord] = []
    for _ in range(r.count("request", 5)):
        start = r.pos
        request_id = r.string()
        if records and request_id <= records[-1].request_id:
            r.fail("Request ids of a checkpoint are not in strictly increasing order", start)
        version, activation = r.svarint(), r.svarint()
        digest = r.blob()
        applied = tuple([r.boolean() for _ in range(r.count("applied flag", 1))])
        records.append(RequestRecord(request_id, version, activation, digest, applied))
    return Checkpoint(catalog, tuple(records))


def _request_id(record: RequestRecord) -> str:
    return record.request_id


REGISTRY.register(SerializerInfo(Checkpoint, 1, "0.2.0", _read_checkpoint_v1, _write_checkpoint_v1))
