"""Almanac's own data plane on the Iceberg types: FIXED, nanosecond
timestamps and nested columns written and read back, with field ids on
every nested field of the Parquet files."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq

from almanac import Catalog
from almanac.data import arrow_schema, read_table, write_table
from tests.data.support import field_ids, table_data


def test_iceberg_types_write_and_read_back_with_field_ids_at_every_depth(cat: Catalog) -> None:
    cat.sql(
        """CREATE TABLE t (k BIGINT PRIMARY KEY, f FIXED(2), ns TIMESTAMP_NS,
        tzns TIMESTAMPTZ_NS, s STRUCT<a: INT, b: ARRAY<STRING NOT NULL>>, m MAP<STRING, DOUBLE>)"""
    )
    table = cat.catalog().table("T")
    assert table is not None
    schema = arrow_schema(table)
    rows = [
        {
            "K": 1,
            "F": b"ab",
            "NS": pa.scalar(1_700_000_000_123_456_789, pa.timestamp("ns")).as_py(),
            "TZNS": dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
            "S": {"A": 1, "B": ["x", "y"]},
            "M": [("pi", 3.14)],
        },
        {"K": 2, "F": None, "NS": None, "TZNS": None, "S": None, "M": None},
    ]
    snapshot = write_table(cat, "T", pa.Table.from_pylist(rows, schema))
    back = read_table(cat, "T").sort_by("K")
    assert back.column("NS")[0].value == 1_700_000_000_123_456_789
    assert back.to_pylist()[0]["S"] == rows[0]["S"]
    assert back.to_pylist()[0]["M"] == rows[0]["M"]
    assert back.to_pylist()[1] == rows[1]
    # The files carry every nested field's id.
    warehouse = table_data(cat).warehouse
    for file in snapshot.files:
        with warehouse.fs.open_input_file(file.path) as source:
            written = pq.read_schema(source)
        ids = [i for field in written for i in field_ids(field)]
        assert sorted(ids) == list(range(table.next_column_id))
    # Its metadata's last-column-id covers the nested ids: a client
    # evolving the table from this file never hands out one of them again.
    data = table_data(cat)
    record = data.current_record(table.id)
    assert record is not None
    assert data.iceberg.metadata(record.metadata).last_column_id == table.next_column_id - 1
