"""Rows written before a column existed read its initial default forever;
SET/DROP DEFAULT change only what later writes store (Iceberg's
``initial-default`` and ``write-default``)."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.schema import Schema as IcebergSchema
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
)

import almanac
from almanac import Catalog, ColumnType, ConstantDefault, DataError, FunctionDefault
from almanac.data import Predicate, TableData, plan_scan, read_table, write_table
from almanac.data.arrow import column_defaults, column_fill
from almanac.model.descriptors import Column
from tests.data.support import connect, own_files

BACKENDS = ("memory", "sqlite")


def _open(backend: str, directory: Path) -> Catalog:
    if backend == "memory":
        return almanac.connect("memory://", warehouse=str(directory / "warehouse"))
    return connect(str(directory / "data"))


@pytest.fixture(params=BACKENDS)
def cat(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    with _open(str(request.param), tmp_path) as catalog:
        yield catalog


def _write(cat: Catalog, ids: list[int], c: list[int | None] | None = None) -> set[str]:
    """Writes the rows (without C unless given) and returns the new files."""
    columns: dict[str, pa.Array] = {"ID": pa.array(ids, pa.int64())}
    if c is not None:
        columns["C"] = pa.array(c, pa.int32())
    return set(own_files(write_table(cat, "T", pa.table(columns))))


def _values(cat: Catalog, **read: object) -> dict[int, object]:
    """Each row's C by ID ("absent" when the table has no C at that version)."""
    rows = read_table(cat, "T", **read).to_pylist()  # type: ignore[arg-type]
    return {row["ID"]: row.get("C", "absent") for row in rows}


def test_a_changed_default_does_not_rewrite_old_rows(cat: Catalog) -> None:
    cat.sql("CREATE TABLE T (ID BIGINT PRIMARY KEY)")
    _write(cat, [1, 2])
    v_before = cat.latest_version
    cat.sql("ALTER TABLE T ADD COLUMN C INT DEFAULT 7")
    v_add = cat.latest_version
    _write(cat, [3])
    _write(cat, [4], [100])
    assert _values(cat) == {1: 7, 2: 7, 3: 7, 4: 100}
    cat.sql("ALTER TABLE T ALTER COLUMN C SET DEFAULT 8")
    v_set = cat.latest_version
    _write(cat, [5])
    assert _values(cat) == {1: 7, 2: 7, 3: 7, 4: 100, 5: 8}
    cat.sql("ALTER TABLE T ALTER COLUMN C DROP DEFAULT")
    v_drop = cat.latest_version
    _write(cat, [6])
    assert _values(cat) == {1: 7, 2: 7, 3: 7, 4: 100, 5: 8, 6: None}

    assert _values(cat, version=v_before) == {1: "absent", 2: "absent"}
    # Each write is a catalog version of its own: a DDL version reads the
    # rows committed before it.
    assert _values(cat, version=v_add) == {1: 7, 2: 7}
    assert _values(cat, version=v_set) == {1: 7, 2: 7, 3: 7, 4: 100}
    assert _values(cat, version=v_drop) == {1: 7, 2: 7, 3: 7, 4: 100, 5: 8}
    assert _values(cat, version=cat.latest_version) == {1: 7, 2: 7, 3: 7, 4: 100, 5: 8, 6: None}


def test_pruning_uses_the_initial_default_of_old_files(cat: Catalog) -> None:
    cat.sql("CREATE TABLE T (ID BIGINT PRIMARY KEY)")
    old = _write(cat, [1, 2])
    cat.sql("ALTER TABLE T ADD COLUMN C INT DEFAULT 7")
    cat.sql("ALTER TABLE T ALTER COLUMN C SET DEFAULT 8")
    eight = _write(cat, [3])
    cat.sql("ALTER TABLE T ALTER COLUMN C DROP DEFAULT")
    null = _write(cat, [4])
    data = TableData.for_catalog(cat)

    def kept(*filters: Predicate) -> set[str]:
        return {f.path for f in plan_scan(cat, data, "T", filters=filters).files}

    def ids(*filters: Predicate) -> list[int]:
        return sorted(read_table(cat, "T", filters=filters).column("ID").to_pylist())

    assert kept() == old | eight | null
    assert (kept(Predicate("C", "=", 7)), ids(Predicate("C", "=", 7))) == (old, [1, 2])
    assert (kept(Predicate("C", "=", 8)), ids(Predicate("C", "=", 8))) == (eight, [3])
    assert (kept(Predicate("C", "is_null")), ids(Predicate("C", "is_null"))) == (null, [4])
    assert kept(Predicate("C", "is_not_null")) == old | eight
    assert ids(Predicate("C", "in", [7, 8])) == [1, 2, 3]
    assert (kept(Predicate("C", ">", 7)), ids(Predicate("C", ">", 7))) == (eight, [3])


def test_a_not_null_column_without_write_default_still_reads_old_rows(cat: Catalog) -> None:
    cat.sql("CREATE TABLE T (ID BIGINT PRIMARY KEY)")
    _write(cat, [1])
    cat.sql("ALTER TABLE T ADD COLUMN C INT NOT NULL DEFAULT 7")
    cat.sql("ALTER TABLE T ALTER COLUMN C DROP DEFAULT")
    with pytest.raises(DataError, match="'C' of table 'T' is NOT NULL and has no default"):
        _write(cat, [2])
    _write(cat, [2], [5])
    assert _values(cat) == {1: 7, 2: 5}


def test_column_defaults_gives_the_iceberg_pair() -> None:
    added = Column(
        id=1,
        name="C",
        type=ColumnType.INT32,
        default=ConstantDefault(8),
        initial_default=ConstantDefault(7),
    )
    assert column_defaults(added) == (7, 8)
    as_double = Column(
        id=4,
        name="D",
        type=ColumnType.DOUBLE,
        default=ConstantDefault(2),
        initial_default=ConstantDefault(1),
    )
    assert [type(v) for v in column_defaults(as_double)] == [float, float], "as the data stores"
    created = Column(id=0, name="K", type=ColumnType.UUID, default=FunctionDefault("RAND_UUID"))
    assert column_defaults(created) == (None, None)
    assert column_defaults(Column(id=2, name="N", type=ColumnType.STRING)) == (None, None)
    assert column_fill(added, 2, generate=False).to_pylist() == [7, 7]
    assert column_fill(added, 2, generate=True).to_pylist() == [8, 8]
    assert len(set(column_fill(created, 3, generate=True).to_pylist())) == 3
    assert column_fill(created, 1, generate=False).to_pylist() == [None]


_steps = st.lists(
    st.one_of(
        st.tuples(st.just("set"), st.integers(-50, 50)),
        st.tuples(st.just("drop"), st.none()),
        st.tuples(st.just("write"), st.none()),
    ),
    max_size=6,
)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(initial=st.none() | st.integers(-50, 50), steps=_steps)
def test_every_row_keeps_the_value_it_was_written_with(
    tmp_path_factory: pytest.TempPathFactory, initial: int | None, steps: list[tuple[str, object]]
) -> None:
    """Model: a row's C is the initial default if it predates C, else the
    write default when it was written; no SET/DROP DEFAULT changes either."""
    directory = tmp_path_factory.mktemp("defaults")
    with _open("memory", directory) as cat:
        cat.sql("CREATE TABLE T (ID BIGINT PRIMARY KEY)")
        _write(cat, [0])
        default = "" if initial is None else f" DEFAULT {initial}"
        cat.sql(f"ALTER TABLE T ADD COLUMN C INT{default}")
        expected: dict[int, object] = {0: initial}
        current = initial
        for kind, value in steps:
            if kind == "set":
                cat.sql(f"ALTER TABLE T ALTER COLUMN C SET DEFAULT {value}")
                current = value  # type: ignore[assignment]
            elif kind == "drop":
                cat.sql("ALTER TABLE T ALTER COLUMN C DROP DEFAULT")
                current = None
            else:
                row = len(expected)
                _write(cat, [row])
                expected[row] = current
            assert _values(cat) == expected


_ICEBERG_TYPES: dict[ColumnType, IcebergType] = {
    ColumnType.BOOLEAN: BooleanType(),
    ColumnType.INT16: IntegerType(),
    ColumnType.INT64: LongType(),
    ColumnType.DOUBLE: DoubleType(),
    ColumnType.DECIMAL: DecimalType(12, 2),
    ColumnType.STRING: StringType(),
    ColumnType.BYTES: BinaryType(),
    ColumnType.DATE: DateType(),
    ColumnType.TIME: TimeType(),
    ColumnType.TIMESTAMP: TimestampType(),
    ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE: TimestamptzType(),
    ColumnType.UUID: StringType(),  # stored as its text, as almanac.data.iceberg_schema maps it
}
_VALUES: dict[ColumnType, tuple[object, object]] = {
    ColumnType.BOOLEAN: (True, False),
    ColumnType.INT16: (-7, 300),
    ColumnType.INT64: (2**40, -1),
    ColumnType.DOUBLE: (1.5, -0.25),
    ColumnType.DECIMAL: (decimal.Decimal("-12.50"), decimal.Decimal("0.01")),
    ColumnType.STRING: ("déjà", ""),
    ColumnType.BYTES: (b"\x00\xff", b"x"),
    ColumnType.DATE: (dt.date(2024, 2, 29), dt.date(1970, 1, 1)),
    ColumnType.TIME: (dt.time(23, 59, 58, 123_456), dt.time(0, 0)),
    ColumnType.TIMESTAMP: (dt.datetime(2024, 2, 29, 13, 14, 15), dt.datetime(2000, 1, 1)),
    ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE: (
        dt.datetime(2024, 2, 29, 13, 14, 15, tzinfo=dt.UTC),
        dt.datetime(2000, 1, 1, tzinfo=dt.UTC),
    ),
    ColumnType.UUID: (uuid.UUID(int=5), uuid.UUID(int=2**127)),
}


@pytest.mark.parametrize("ctype", list(_VALUES))
def test_column_defaults_are_values_pyiceberg_stores(ctype: ColumnType) -> None:
    initial, write = _VALUES[ctype]
    column = Column(
        id=3,
        name="C",
        type=ctype,
        precision=12 if ctype is ColumnType.DECIMAL else None,
        scale=2 if ctype is ColumnType.DECIMAL else None,
        default=ConstantDefault(write),
        initial_default=ConstantDefault(initial),
    )
    pair = column_defaults(column)
    assert pair == tuple(str(v) if isinstance(v, uuid.UUID) else v for v in (initial, write))
    # pyiceberg types defaults by a constrained TypeVar; any one of its types fits.
    initial_value, write_value = cast(Any, pair[0]), cast(Any, pair[1])
    field = NestedField(
        3,
        "C",
        _ICEBERG_TYPES[ctype],
        required=False,
        initial_default=initial_value,
        write_default=write_value,
    )
    back = IcebergSchema.model_validate_json(IcebergSchema(field).model_dump_json()).find_field(3)
    assert (back.initial_default, back.write_default) == pair
