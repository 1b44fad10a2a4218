"""Column v1 bytes (before initial defaults) keep their meaning under v2.

A v1 column reads its constant default as its initial default. An old log
replays to the initial default the column was added with: the ADD entry
holds it, and an ALTER entry never replaces it."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

import almanac
from almanac.model import entries as e
from almanac.model.datatypes import ColumnType
from almanac.model.descriptors import Column, ConstantDefault, FunctionDefault
from almanac.serialization import REGISTRY, decode, encode
from almanac.serialization.io import Writer
from almanac.serialization.registry import PROTOCOL_VERSION

from . import columns


def _v1_column(w: Writer, column: Column) -> None:
    v1 = REGISTRY.serializers(Column)[0]
    assert (v1.version, v1.release) == (1, "0.1.0") and v1.write is not None
    w.u16(REGISTRY.type_id(Column))
    w.uvarint(1)
    v1.write(w, column)


def _top(cls: type) -> Writer:
    w = Writer()
    w.u16(PROTOCOL_VERSION)
    w.u16(REGISTRY.type_id(cls))
    w.uvarint(1)
    return w


def _v1_added(table_id: int, column: Column) -> bytes:
    w = _top(e.ColumnsAdded)
    w.svarint(table_id)
    w.uvarint(1)
    _v1_column(w, column)
    return bytes(w)


def _v1_altered(table_id: int, column: Column) -> bytes:
    w = _top(e.ColumnAltered)
    w.svarint(table_id)
    _v1_column(w, column)
    return bytes(w)


def test_the_column_serializer_versions() -> None:
    assert [(i.version, i.release) for i in REGISTRY.serializers(Column)] == [
        (1, "0.1.0"),
        (2, "0.2.0"),
        (3, "0.4.0"),
    ]


@given(columns)
def test_a_v1_column_reads_its_constant_default_as_initial_default(column: Column) -> None:
    w = Writer()
    w.u16(PROTOCOL_VERSION)
    _v1_column(w, column)
    decoded = decode(bytes(w))
    default = column.default
    if isinstance(default, ConstantDefault) and default.value is not None:
        assert decoded == replace(column, initial_default=default)
    else:
        assert decoded == replace(column, initial_default=None)


def test_v2_keeps_an_initial_default_apart_from_the_default() -> None:
    column = Column(
        id=1,
        name="C",
        type=ColumnType.INT32,
        default=FunctionDefault("RAND_UUID"),
        initial_default=ConstantDefault(7),
    )
    assert decode(encode(column)) == column
    created = Column(id=2, name="D", type=ColumnType.INT32, default=ConstantDefault(3))
    assert decode(encode(created)).initial_default is None  # type: ignore[attr-defined]


@settings(deadline=None)
@given(st.lists(st.none() | st.integers(-100, 100), max_size=5))
def test_an_old_log_replays_to_the_default_of_the_add(alters: list[int | None]) -> None:
    with almanac.connect("memory://") as cat:
        cat.sql("CREATE TABLE T (ID BIGINT PRIMARY KEY)")
        working = cat.catalog()
    table = working.table("T")
    assert table is not None
    added = Column(
        id=table.next_column_id, name="C", type=ColumnType.INT32, default=ConstantDefault(7)
    )
    entries = [decode(_v1_added(table.id, added))]
    for value in alters:
        default = None if value is None else ConstantDefault(value)
        entries.append(decode(_v1_altered(table.id, replace(added, default=default))))
    for entry in entries:
        assert isinstance(entry, e.ColumnsAdded | e.ColumnAltered)
        working = entry.apply(working.evolve(version=working.version + 1))
    replayed = working.tables_by_id[table.id].column("C")
    assert replayed is not None
    assert replayed.initial_default == ConstantDefault(7)
    if alters:
        last = alters[-1]
        assert replayed.default == (None if last is None else ConstantDefault(last))
