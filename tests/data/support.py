"""Helpers shared by the data-plane tests."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pyarrow as pa

import almanac
from almanac import Catalog, ColumnDef, ColumnType, CreateTable, Table
from almanac.data import TableData, table_partitions, write_table
from almanac.data.snapshots import DataSnapshot


def create(
    cat: Catalog,
    name: str = "T",
    columns: Sequence[ColumnDef] | None = None,
    *,
    primary_key: tuple[str, ...] = ("ID",),
    zone: str | None = None,
    colocation: tuple[str, ...] | None = None,
) -> Table:
    """A table with ``ID INT64 NOT NULL`` and ``V STRING`` unless told otherwise."""
    cols = tuple(
        columns
        or (
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="V", type=ColumnType.STRING),
        )
    )
    cat.execute(
        [
            CreateTable(
                name=name,
                columns=cols,
                primary_key=primary_key,
                zone=zone,
                colocation=colocation,
            )
        ]
    )
    table = cat.catalog().table(name)
    assert table is not None
    return table


def rows(ids: Sequence[int], prefix: str = "v") -> pa.Table:
    return pa.table({"ID": pa.array(ids, pa.int64()), "V": [f"{prefix}{i}" for i in ids]})


def append(cat: Catalog, ids: Sequence[int], name: str = "T") -> DataSnapshot:
    return write_table(cat, name, rows(ids))


def own_files(snapshot: DataSnapshot) -> list[str]:
    """The files the snapshot's own write added."""
    return [f.path for f in snapshot.files if f"/{snapshot.write_id}/" in f.path]


def ids_of(table: pa.Table) -> list[int]:
    return sorted(table.column("ID").to_pylist())


def data_keys(cat: Catalog) -> list[str]:
    return [kv.key for kv in cat.log.store.range("data.").kvs]


def table_data(cat: Catalog) -> TableData:
    return TableData.for_catalog(cat)


def same(a: object, b: object) -> bool:
    """Equality that also holds for NaN and keeps -0.0 apart from 0.0."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    return type(a) is type(b) and a == b


def connect(target: str) -> Catalog:
    return almanac.connect(target, delay_ms=0)


def zone_tablets(cat: Catalog, table: Table) -> int:
    """The tablet count of the table's zone: files written for another one
    would be declared under the wrong Iceberg ``bucket[N]``."""
    return table_partitions(cat.catalog(), table)
