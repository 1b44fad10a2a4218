"""Helpers shared by the data-plane tests."""

from __future__ import annotations

import functools
import math
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import almanac
from almanac import Catalog, ColumnDef, ColumnType, CreateTable, Table
from almanac.data import (
    CommitShape,
    DataFile,
    TableData,
    new_write_id,
    table_partitions,
    write_table,
)
from almanac.data.arrow import FIELD_ID
from almanac.data.published import check_published
from almanac.data.snapshots import DataSnapshot
from almanac.dev.etcd_local import LocalEtcd
from almanac.metastore import Compare
from almanac.node.catalog_types import HookWork


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


def race_after_the_check(cat: Catalog, race: Callable[[], object]) -> list[bool]:
    """Run ``race()`` once, right after the data plane's check of an
    attached data commit passed and before the version's transaction: the
    window in which what the check read may change. The list returned
    holds True once it ran."""
    check = functools.partial(check_published, table_data(cat).store)
    ran: list[bool] = []

    def checked_then_raced(work: HookWork) -> Sequence[Compare]:
        compares = check(work)
        if not ran:
            ran.append(True)
            race()
        return compares

    cat.set_data_commit_check(checked_then_raced)
    return ran


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


def commit_plain_file(
    cat: Catalog, name: str, parquet: pa.Table, like: DataFile, *, operation: str = "overwrite"
) -> DataFile:
    """Commit ``parquet`` (with field ids) as one file of ``like``'s tablet and
    statistics, named as an older release, Spark or an Iceberg client names
    files: ``<uuid>.parquet``, so no checksum is recorded, only its size."""
    data = TableData.for_catalog(cat)
    table = cat.catalog().table(name)
    assert table is not None
    write_id = new_write_id()
    write_dir = data.warehouse.write_dir(table.id, write_id)
    lease = data.staging.stage(write_id, write_dir, ttl_s=60.0)
    path = f"{write_dir}/tablet={like.partition}/{uuid.uuid4().hex}.parquet"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(parquet, path)
    file = DataFile(path, parquet.num_rows, os.path.getsize(path), like.partition, like.stats)
    data.commit(CommitShape.of(cat.catalog(), table), write_id, [file], operation=operation)
    data.staging.release(lease)
    return file


def field_ids(field: pa.Field) -> list[int]:
    """The Parquet field ids of ``field`` and of every field nested in it
    (struct fields, list elements, map keys and values), depth first."""
    kind = field.type
    children = (
        list(kind)
        if pa.types.is_struct(kind)
        else [kind.value_field]
        if pa.types.is_list(kind)
        else [kind.key_field, kind.item_field]
        if pa.types.is_map(kind)
        else []
    )
    return [int(field.metadata[FIELD_ID]), *(i for child in children for i in field_ids(child))]


@dataclass(frozen=True)
class Place:
    """Where a test's catalog lives, with its warehouse: a SQLite directory,
    or a namespace of its own on a real etcd cluster."""

    target: str
    warehouse: str

    def connect(self) -> Catalog:
        return almanac.connect(self.target, warehouse=self.warehouse, delay_ms=0)


def catalog_place(kind: str, tmp_path: Path, cluster: LocalEtcd | None = None) -> Place:
    """``kind`` "sqlite" (in ``tmp_path``) or "etcd" (a fresh namespace of
    ``cluster``, so tests share one cluster without seeing each other)."""
    if kind == "etcd":
        assert cluster is not None, "an etcd place needs its cluster"
        target = f"{cluster.uri}/t-{uuid.uuid4().hex[:12]}"
    else:
        target = str(tmp_path / "catalog")
    return Place(target, str(tmp_path / "warehouse"))
