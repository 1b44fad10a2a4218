"""TPC-H SF 0.01 written by Almanac's Python path and read back by pyiceberg
alone (no Almanac code in the read), queried with DuckDB, against DuckDB on
the generated Parquet files: any Iceberg reader gets the same answers."""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable

from almanac import Catalog, ColumnDef, ColumnType, CreateTable
from almanac.data import TableData, create_table_as
from almanac.spark.tpch import QUERIES, TABLES, generate


def _column(field: pa.Field) -> ColumnDef:
    kind = field.type
    if pa.types.is_decimal(kind):
        return ColumnDef(
            name=field.name.upper(),
            type=ColumnType.DECIMAL,
            precision=kind.precision,
            scale=kind.scale,
            nullable=field.nullable,
        )
    simple = {
        pa.int64(): ColumnType.INT64,
        pa.int32(): ColumnType.INT32,
        pa.date32(): ColumnType.DATE,
        pa.string(): ColumnType.STRING,
        pa.string_view(): ColumnType.STRING,
        pa.large_string(): ColumnType.STRING,
    }
    return ColumnDef(name=field.name.upper(), type=simple[kind], nullable=field.nullable)


def _rows(result: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    def normal(v: object) -> object:
        return round(float(v), 2) if isinstance(v, float | decimal.Decimal) else v

    return sorted(tuple(normal(v) for v in row) for row in result)


@pytest.fixture(scope="module")
def tpch_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(0.01, tmp_path_factory.mktemp("tpch"))


def test_pyiceberg_reads_tpch_as_written(cat: Catalog, tpch_data: Path) -> None:
    cat.sql("CREATE ZONE TPCH_ZONE WITH (PARTITIONS=4)")
    data = TableData.for_catalog(cat)
    ours = duckdb.connect()
    oracle = duckdb.connect()
    for table, key in TABLES.items():
        rows = pq.read_table(tpch_data / f"{table}.parquet")
        rows = rows.rename_columns([n.upper() for n in rows.column_names])
        create = CreateTable(
            name=table.upper(),
            columns=tuple(_column(f) for f in rows.schema),
            primary_key=tuple(k.upper() for k in key),
            zone="TPCH_ZONE",
        )
        _, snapshot = create_table_as(cat, create, rows)
        assert snapshot is not None
        created = cat.catalog().table(table.upper())
        assert created is not None
        location = data.metadata_location(created.id)
        assert location is not None
        scanned = StaticTable.from_metadata(location).scan().to_arrow()
        assert scanned.num_rows == rows.num_rows
        ours.register(table, scanned.rename_columns([n.lower() for n in scanned.column_names]))
        oracle.execute(
            f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{tpch_data / table}.parquet')"
        )
    for name, text in QUERIES.items():
        query = text.format(p="")
        assert _rows(ours.execute(query).fetchall()) == _rows(oracle.execute(query).fetchall()), (
            name
        )
