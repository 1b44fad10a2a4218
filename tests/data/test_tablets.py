"""Tablets: stable across processes, shared by colocated tables."""

from __future__ import annotations

import multiprocessing

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from almanac import Catalog, ColumnDef, ColumnType, CreateZone, ValidationError
from almanac.data import DataError, TableData, tablets_of, write_files
from almanac.data.arrow import conform
from almanac.data.warehouse import new_write_id
from tests.data import workers
from tests.data.support import create


def test_tablets_are_pinned_values() -> None:
    """Golden values: a change of the hash would move every stored row."""
    ints = pa.table({"K": list(range(10))})
    assert tablets_of(ints, ["K"], 16).tolist() == [0, 13, 8, 10, 1, 5, 0, 7, 10, 11]
    texts = pa.table({"S": ["", "a", "hello", "héllo", None]})
    assert tablets_of(texts, ["S"], 1000).tolist() == [0, 557, 269, 970, 557]


def test_tablets_are_equal_in_another_process() -> None:
    values = list(range(-50, 50))
    texts = [f"key-{v}" * (v % 7) for v in values]
    here = tablets_of(pa.table({"K": values, "S": texts}), ["K", "S"], 12).tolist()
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        there = pool.apply(workers.tablets, (values, texts, 12))
    assert here == there
    assert len(set(here)) > 6


def test_tablets_depend_on_logical_values_only() -> None:
    narrow = pa.table(
        {
            "K": pa.array([1, -2, None, 300], pa.int16()),
            "S": pa.array(["x", None, "é", "y"]).dictionary_encode(),
        }
    )
    wide = pa.table(
        {"K": pa.array([1, -2, None, 300], pa.int64()), "S": pa.array(["x", None, "é", "y"])}
    )
    assert tablets_of(narrow, ["K", "S"], 97).tolist() == tablets_of(wide, ["K", "S"], 97).tolist()
    sliced = wide.slice(1, 2)
    assert (
        tablets_of(sliced, ["K", "S"], 97).tolist()
        == tablets_of(wide, ["K", "S"], 97)[1:3].tolist()
    )
    assert tablets_of(wide, ["K"], 1).tolist() == [0, 0, 0, 0]


def test_tablets_spread_and_validate() -> None:
    counts = np.bincount(tablets_of(pa.table({"K": np.arange(40_000)}), ["K"], 8), minlength=8)
    assert counts.min() > 4_000
    with pytest.raises(ValidationError, match="Partitions"):
        tablets_of(pa.table({"K": [1]}), ["K"], 0)
    with pytest.raises(DataError, match="'NOPE'"):
        tablets_of(pa.table({"K": [1]}), ["NOPE"], 4)


def test_colocated_tables_share_tablets(cat: Catalog) -> None:
    cat.execute([CreateZone(name="Z", partitions=8)])
    create(
        cat,
        "CUSTOMERS",
        [
            ColumnDef(name="CID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="NAME", type=ColumnType.STRING),
        ],
        primary_key=("CID",),
        zone="Z",
    )
    create(
        cat,
        "ORDERS",
        [
            ColumnDef(name="OID", type=ColumnType.INT32, nullable=False),
            ColumnDef(name="CID", type=ColumnType.INT32, nullable=False),
        ],
        primary_key=("OID", "CID"),
        colocation=("CID",),
        zone="Z",
    )
    data = TableData.for_catalog(cat)
    snap = cat.catalog()
    customers, orders = snap.table("CUSTOMERS"), snap.table("ORDERS")
    assert customers is not None and orders is not None
    keys = list(range(100))
    placed: list[dict[int, int]] = []
    for table, frame in (
        (customers, pa.table({"CID": keys, "NAME": [str(k) for k in keys]})),
        (orders, pa.table({"OID": [k + 1000 for k in keys], "CID": keys})),
    ):
        write_dir = data.warehouse.write_dir(table.id, new_write_id())
        files = write_files(data.warehouse, table, 8, conform(frame, table), write_dir)
        where: dict[int, int] = {}
        for f in files:
            for key in pq.read_table(f.path, columns=["CID"]).column(0).to_pylist():
                where[key] = f.tablet
        placed.append(where)
    assert placed[0] == placed[1]
    assert set(placed[0].values()) == set(range(8))
