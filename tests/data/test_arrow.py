"""Catalog types as Arrow types, and ``conform``."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

import pyarrow as pa
import pytest

from almanac import Catalog, CatalogError, ColumnDef, ColumnType, ConstantDefault, FunctionDefault
from almanac.data import DataError, arrow_schema, conform, output_schema
from tests.data.support import create

PLUS_2 = dt.timezone(dt.timedelta(hours=2))


def _all_types(cat: Catalog) -> None:
    create(
        cat,
        "ALL",
        [
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="B", type=ColumnType.BOOLEAN),
            ColumnDef(name="I8", type=ColumnType.INT8),
            ColumnDef(name="I16", type=ColumnType.INT16),
            ColumnDef(name="I32", type=ColumnType.INT32),
            ColumnDef(name="F", type=ColumnType.FLOAT),
            ColumnDef(name="D", type=ColumnType.DOUBLE),
            ColumnDef(name="DEC", type=ColumnType.DECIMAL, precision=10, scale=2),
            ColumnDef(name="BIGDEC", type=ColumnType.DECIMAL, precision=50, scale=5),
            ColumnDef(name="ANYDEC", type=ColumnType.DECIMAL),
            ColumnDef(name="S", type=ColumnType.STRING, length=5),
            ColumnDef(name="BY", type=ColumnType.BYTES),
            ColumnDef(name="DA", type=ColumnType.DATE),
            ColumnDef(name="TI", type=ColumnType.TIME, precision=3),
            ColumnDef(name="TN", type=ColumnType.TIME, precision=9),
            ColumnDef(name="TS", type=ColumnType.TIMESTAMP),
            ColumnDef(name="TZ", type=ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE),
            ColumnDef(name="U", type=ColumnType.UUID),
        ],
    )


def test_arrow_schema_maps_every_type_with_field_ids(cat: Catalog) -> None:
    _all_types(cat)
    table = cat.catalog().table("ALL")
    assert table is not None
    schema = arrow_schema(table)
    assert schema.names == [c.name for c in table.columns]
    assert [f.type for f in schema] == [
        pa.int64(),
        pa.bool_(),
        pa.int8(),
        pa.int16(),
        pa.int32(),
        pa.float32(),
        pa.float64(),
        pa.decimal128(10, 2),
        pa.decimal256(50, 5),
        pa.decimal256(76, 0),
        pa.string(),
        pa.binary(),
        pa.date32(),
        pa.time64("us"),
        pa.time64("us"),
        pa.timestamp("us"),
        pa.timestamp("us", tz="UTC"),
        pa.string(),
    ]
    assert [f.metadata[b"PARQUET:field_id"] for f in schema] == [
        str(c.id).encode() for c in table.columns
    ]
    assert not schema.field("ID").nullable and schema.field("B").nullable
    out = output_schema(table, ["U", "ID"])
    assert out.names == ["ID", "U"] and all(f.nullable and not f.metadata for f in out)


def test_conform_reorders_casts_and_normalizes(cat: Catalog) -> None:
    _all_types(cat)
    table = cat.catalog().table("ALL")
    assert table is not None
    raw_uuid = uuid.UUID("12345678-9abc-def0-1234-56789abcdef0")
    data = pa.table(
        {
            "U": pa.array([raw_uuid.bytes, None], pa.binary(16)),
            "I32": pa.array([1, 2], pa.int8()),
            "ID": pa.array([1, 2], pa.uint32()),
            "F": pa.array([0.5, None]),
            "DEC": pa.array([3, 4]),
            "S": pa.array(["ab", "ab"]).dictionary_encode(),
            "TS": pa.array([dt.datetime(2024, 1, 1, 12)], pa.timestamp("ns")).take([0, 0]),
            "TZ": pa.array(
                [dt.datetime(2024, 1, 1, 2, tzinfo=PLUS_2)], pa.timestamp("s", "+02:00")
            ).take([0, 0]),
            "B": pa.nulls(2),
        }
    )
    out = conform(data, table)
    assert out.schema == arrow_schema(table)
    assert out.schema.field("ID").metadata == arrow_schema(table).field("ID").metadata
    assert out.column("U").to_pylist() == [str(raw_uuid), None]
    assert out.column("ID").to_pylist() == [1, 2]
    assert out.column("DEC").to_pylist() == [decimal.Decimal("3.00"), decimal.Decimal("4.00")]
    assert out.column("TZ")[0].as_py() == dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    assert out.column("I8").null_count == 2
    upper = conform(pa.table({"ID": [1], "U": [str(raw_uuid).upper()]}), table)
    assert upper.column("U").to_pylist() == [str(raw_uuid)]


def test_missing_columns_get_defaults(cat: Catalog) -> None:
    create(
        cat,
        columns=[
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="N", type=ColumnType.INT32, nullable=False, default=ConstantDefault(7)),
            ColumnDef(name="D", type=ColumnType.DATE, default=ConstantDefault(dt.date(2020, 2, 2))),
            ColumnDef(
                name="U",
                type=ColumnType.UUID,
                nullable=False,
                default=FunctionDefault("RAND_UUID"),
            ),
            ColumnDef(name="V", type=ColumnType.STRING),
        ],
        primary_key=("ID", "U"),
    )
    table = cat.catalog().table("T")
    assert table is not None
    out = conform(pa.table({"ID": [1, 2, 3]}), table)
    assert out.column("N").to_pylist() == [7, 7, 7]
    assert out.column("D").to_pylist() == [dt.date(2020, 2, 2)] * 3
    assert out.column("V").null_count == 3
    made = out.column("U").to_pylist()
    assert len(set(made)) == 3
    assert all(uuid.UUID(u).version == 4 and str(uuid.UUID(u)) == u for u in made)


@pytest.mark.parametrize(
    ("data", "column", "fragment"),
    [
        (pa.table({"ID": [1], "V": [5]}), "V", "cannot be stored"),
        (pa.table({"ID": ["1"]}), "ID", "cannot be stored"),
        (pa.table({"ID": [1.5]}), "ID", "values of type double cannot be stored"),
        (pa.table({"ID": [1.0]}), "ID", "rounding=True"),
        (pa.table({"ID": [1], "SMALL": [300]}), "SMALL", "without loss"),
        (pa.table({"ID": [1], "F": [0.1]}), "F", "without loss"),
        (pa.table({"ID": [1], "MONEY": [0.125]}), "MONEY", "without loss"),
        (pa.table({"ID": [1], "MONEY": [1.5]}), "MONEY", "values of type double"),
        (
            pa.table({"ID": [1], "MONEY": [decimal.Decimal("1.255")]}),
            "MONEY",
            "value Decimal('1.255') cannot be stored",
        ),
        (pa.table({"ID": [1, 2, 3], "SMALL": [5, 300, 7]}), "SMALL", "int64 value 300"),
        (pa.table({"ID": [1, None]}), "ID", "NOT NULL"),
        (pa.table({"V": ["x"]}), "ID", "NOT NULL and has no default"),
        (pa.table({"ID": [1], "EXTRA": [1]}), "EXTRA", "not a column"),
        (pa.table({"ID": [1], "id": [1]}), "id", "more than once"),  # one column, any case
        (pa.table([pa.array([1]), pa.array([2])], names=["ID", "ID"]), "ID", "more than once"),
        (pa.table({"ID": [1], "V": ["abcdef"]}), "V", "at most 5 characters"),
        (pa.table({"ID": [1], "U": ["not-a-uuid"]}), "U", "not a UUID"),
        (
            pa.table({"ID": [1], "TS": pa.array([0], pa.timestamp("us", tz="UTC"))}),
            "TS",
            "cannot be stored",
        ),
        (
            pa.table({"ID": [1], "TZ": pa.array([0], pa.timestamp("us"))}),
            "TZ",
            "cannot be stored",
        ),
        (
            pa.table({"ID": [1], "TS": pa.array([1001], pa.timestamp("ns"))}),
            "TS",
            "value 1001 ns since the epoch",
        ),
    ],
)
def test_conform_errors_name_column_and_table(
    cat: Catalog, data: pa.Table, column: str, fragment: str
) -> None:
    create(
        cat,
        "EVENTS",
        [
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="V", type=ColumnType.STRING, length=5),
            ColumnDef(name="SMALL", type=ColumnType.INT8),
            ColumnDef(name="F", type=ColumnType.FLOAT),
            ColumnDef(name="MONEY", type=ColumnType.DECIMAL, precision=10, scale=2),
            ColumnDef(name="U", type=ColumnType.UUID),
            ColumnDef(name="TS", type=ColumnType.TIMESTAMP),
            ColumnDef(name="TZ", type=ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE),
        ],
    )
    table = cat.catalog().table("EVENTS")
    assert table is not None
    with pytest.raises(DataError) as caught:
        conform(data, table)
    message = str(caught.value)
    assert f"'{column}'" in message and "'EVENTS'" in message and fragment in message
    assert isinstance(caught.value, CatalogError)
    assert caught.value.context["column"] == column


def test_conform_finds_columns_by_any_spelling(cat: Catalog) -> None:
    """Data columns follow the one name rule: ``id`` is the column ``ID``."""
    create(
        cat,
        "SPELLED",
        [
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="note", type=ColumnType.STRING),
        ],
    )
    table = cat.catalog().table("spelled")
    assert table is not None
    rows = conform(pa.table({"id": [1, 2], "NOTE": ["a", "b"]}), table)
    assert rows.column_names == ["ID", "note"]
    assert rows.to_pylist() == [{"ID": 1, "note": "a"}, {"ID": 2, "note": "b"}]
    assert output_schema(table, ["Note", "id"]).names == ["ID", "note"]


def test_conform_accepts_record_batches_and_exact_narrowing(cat: Catalog) -> None:
    create(
        cat,
        columns=[
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="F", type=ColumnType.FLOAT),
            ColumnDef(name="M", type=ColumnType.DECIMAL, precision=6, scale=2),
        ],
    )
    table = cat.catalog().table("T")
    assert table is not None
    batch = pa.record_batch({"ID": [1], "F": [0.5], "M": [decimal.Decimal("1.250")]})
    out = conform(batch, table)
    assert out.to_pylist() == [{"ID": 1, "F": 0.5, "M": decimal.Decimal("1.25")}]
    with pytest.raises(DataError, match="'T'"):
        conform({"ID": [1]}, table)
