"""Reading by version and timestamp, resolution by column id, pruning."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import pickle
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.table import StaticTable

from almanac import (
    AddColumns,
    AlterColumn,
    Catalog,
    ColumnDef,
    ColumnType,
    ConstantDefault,
    CreateTable,
    DropColumns,
    NotFoundError,
    RenameColumn,
    RenameTable,
    ValidationError,
)
from almanac.data import (
    ColumnStats,
    CommitShape,
    DataFile,
    Predicate,
    TableData,
    output_schema,
    plan_scan,
    read_file,
    read_table,
    write_table,
)
from almanac.data.iceberg_files import from_iceberg_file, to_iceberg_file
from almanac.data.iceberg_schema import iceberg_type, partition_spec
from almanac.iceberg import metadata_location
from tests.data.support import append, connect, create, ids_of, same


def test_reads_resolve_columns_by_id_at_every_version(cat: Catalog) -> None:
    create(
        cat,
        columns=[
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="NAME", type=ColumnType.STRING),
            ColumnDef(name="AGE", type=ColumnType.INT32),
        ],
    )
    write_table(cat, "T", pa.table({"ID": [1, 2], "NAME": ["a", "b"], "AGE": [10, None]}))
    v_first = cat.latest_version
    added = ColumnDef(name="SCORE", type=ColumnType.INT64, default=ConstantDefault(5))
    cat.execute([AddColumns(table="T", columns=(added,))])
    v_added = cat.latest_version
    write_table(cat, "T", pa.table({"ID": [3], "NAME": ["c"], "AGE": [30], "SCORE": [9]}))
    v_second = cat.latest_version
    cat.execute([AlterColumn(table="T", column="AGE", type=ColumnType.INT64)])
    cat.execute([DropColumns(table="T", columns=("NAME",))])
    cat.execute([AddColumns(table="T", columns=(ColumnDef(name="NAME", type=ColumnType.STRING),))])
    cat.execute([RenameTable("T", "PEOPLE")])

    latest = read_table(cat, "PEOPLE").sort_by("ID")
    assert latest.schema == output_schema(cat.catalog().table("PEOPLE"))  # type: ignore[arg-type]
    assert latest.schema.field("AGE").type == pa.int64()
    assert latest.to_pylist() == [
        {"ID": 1, "AGE": 10, "SCORE": 5, "NAME": None},
        {"ID": 2, "AGE": None, "SCORE": 5, "NAME": None},
        {"ID": 3, "AGE": 30, "SCORE": 9, "NAME": None},
    ], "the re-added NAME is a new column: old values do not come back"
    first = read_table(cat, "T", version=v_first).sort_by("ID")
    assert first.column_names == ["ID", "NAME", "AGE"]
    assert first.schema.field("AGE").type == pa.int32()
    assert first.to_pylist() == [
        {"ID": 1, "NAME": "a", "AGE": 10},
        {"ID": 2, "NAME": "b", "AGE": None},
    ]
    assert v_second == v_added + 1, "a data commit is a catalog version"
    at_added = read_table(cat, "T", version=v_added).sort_by("ID")
    assert at_added.column("SCORE").to_pylist() == [5, 5], "not the row committed later"
    at_second = read_table(cat, "T", version=v_second).sort_by("ID")
    assert at_second.column("SCORE").to_pylist() == [5, 5, 9]
    assert read_table(cat, "T", version=v_second).sort_by("ID").column("NAME").to_pylist() == [
        "a",
        "b",
        "c",
    ]
    with pytest.raises(NotFoundError, match=r"'PUBLIC\.PEOPLE' does not exist at catalog version"):
        read_table(cat, "PEOPLE", version=v_second)
    with pytest.raises(NotFoundError, match="'SCORE'"):
        read_table(cat, "T", version=v_first, columns=["SCORE"])


def test_a_renamed_column_keeps_its_values_here_and_in_iceberg(cat: Catalog) -> None:
    create(cat)
    write_table(cat, "T", pa.table({"ID": [1, 2], "V": ["a", "b"]}))
    before = cat.latest_version
    cat.execute([RenameColumn(table="T", column="V", new_name="W")])
    assert read_table(cat, "T").sort_by("ID").to_pylist() == [
        {"ID": 1, "W": "a"},
        {"ID": 2, "W": "b"},
    ]
    assert read_table(cat, "T", version=before).column_names == ["ID", "V"]
    iceberg = StaticTable.from_metadata(metadata_location(cat.target, "T"))
    field = iceberg.schema().find_field("W")
    renamed = cat.catalog().table("T")
    assert renamed is not None
    assert field.field_id == renamed.columns[1].id == 1
    assert sorted(iceberg.scan().to_arrow().column("W").to_pylist()) == ["a", "b"]


def test_reads_at_a_timestamp(cat: Catalog) -> None:
    table = create(cat)
    before_data = cat.clock.now()
    first = append(cat, [1])
    between = cat.clock.now()
    append(cat, [2])
    assert read_table(cat, "T", timestamp=before_data).num_rows == 0
    assert ids_of(read_table(cat, "T", timestamp=between)) == [1]
    assert ids_of(read_table(cat, "T", timestamp=dt.datetime.now(dt.UTC))) == [1, 2]
    data = TableData.for_catalog(cat)
    assert data.snapshot_at(table.id, timestamp=first.commit_time) == first
    assert data.snapshot_at(table.id, timestamp=first.commit_time - 1) is None
    with pytest.raises(ValidationError, match="exactly one"):
        data.snapshot_at(table.id)
    with pytest.raises(ValidationError, match="not both"):
        read_table(cat, "T", version=1, timestamp=between)


def test_version_reads_pick_the_snapshot_published_at_or_before(cat: Catalog) -> None:
    table = create(cat)
    v0 = cat.latest_version
    first = append(cat, [1])
    v1 = cat.latest_version
    cat.execute([AddColumns(table="T", columns=(ColumnDef(name="X", type=ColumnType.INT8),))])
    v2 = cat.latest_version
    second = append(cat, [2])
    v3 = cat.latest_version
    data = TableData.for_catalog(cat)
    assert (first.catalog_version, second.catalog_version) == (v1, v3) == (v0 + 1, v2 + 1)
    assert cat.catalog(v1).data_snapshot(table.id) == first.snapshot_id
    assert cat.catalog(v2).data_snapshot(table.id) == first.snapshot_id
    assert cat.catalog(v3).data_snapshot(table.id) == second.snapshot_id
    assert data.snapshot_at(table.id, version=v0) is None
    for version, expected in ((v1, first), (v2, first), (v3, second)):
        at = data.snapshot_at(table.id, version=version)
        assert at is not None
        assert (at.snapshot_id, at.files) == (expected.snapshot_id, expected.files)
    write_id = "0" * 32
    data.staging.stage(write_id, data.warehouse.write_dir(table.id, write_id), ttl_s=60)
    late = data.commit(CommitShape.of(cat.catalog(v0), table), write_id, [], operation="append")
    assert late.catalog_version == cat.latest_version == v3 + 1, (
        "a commit is stamped with the version that publishes it, whatever version it was "
        "written against"
    )


def test_read_file_projects_and_counts_rows_without_columns(cat: Catalog) -> None:
    create(cat, colocation=("ID",))
    snapshot = append(cat, list(range(50)))
    data = TableData.for_catalog(cat)
    plan = plan_scan(cat, data, "T")
    assert plan.snapshot == snapshot and plan.files_total == len(plan.files) > 1
    shipped = pickle.loads(pickle.dumps((plan, data.warehouse)))
    total = 0
    for f in shipped[0].files:
        for batch in read_file(plan.table, f, shipped[1], columns=[]):
            assert batch.num_columns == 0
            total += batch.num_rows
        (only,) = list(read_file(plan.table, f, shipped[1], columns=["V"]))
        assert only.schema == output_schema(plan.table, ["V"])
    assert total == 50
    Path(plan.files[0].path).unlink()
    with pytest.raises(Exception, match="missing from the warehouse"):
        read_table(cat, "T")


def test_predicates_are_validated(cat: Catalog) -> None:
    create(cat)
    data = TableData.for_catalog(cat)
    with pytest.raises(NotFoundError, match="'NOPE'"):
        plan_scan(cat, data, "T", filters=[Predicate("NOPE", "=", 1)])
    with pytest.raises(ValidationError, match="'~'"):
        plan_scan(cat, data, "T", filters=[Predicate("ID", "~", 1)])
    with pytest.raises(ValidationError, match="list"):
        plan_scan(cat, data, "T", filters=[Predicate("ID", "in", 1)])
    with pytest.raises(NotFoundError, match=r"'PUBLIC\.NOPE'"):
        plan_scan(cat, data, "NOPE")


def test_pruning_by_stats_of_every_kind(cat: Catalog) -> None:
    create(
        cat,
        columns=[
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="F", type=ColumnType.DOUBLE),
            ColumnDef(name="S", type=ColumnType.STRING),
        ],
    )
    write_table(cat, "T", pa.table({"ID": [1, 2], "F": [1.0, float("nan")], "S": ["a", None]}))
    write_table(cat, "T", pa.table({"ID": [10, 11], "F": [5.0, 6.0], "S": ["m", "n"]}))
    cat.execute([AddColumns(table="T", columns=(ColumnDef(name="NEW", type=ColumnType.INT8),))])
    data = TableData.for_catalog(cat)

    def kept(*filters: Predicate) -> set[int]:
        plan = plan_scan(cat, data, "T", filters=filters)
        ids: set[int] = set()
        for f in plan.files:
            low, high = f.stats[0].min, f.stats[0].max
            assert isinstance(low, int) and isinstance(high, int)
            ids.update(range(low, high + 1))
        return ids

    assert kept(Predicate("F", ">", 100.0)) <= {1, 2}, "NaN sorts above numbers"
    assert kept(Predicate("F", "<", 2.0)) <= {1, 2}
    assert kept(Predicate("S", "is_null")) <= {1, 2}
    assert kept(Predicate("S", "=", "m")) <= {10, 11}
    assert kept(Predicate("S", "in", ["b", "z"])) == set()
    assert kept(Predicate("NEW", "is_not_null")) == set()
    assert kept(Predicate("NEW", "is_null")) >= {1, 2, 10, 11}
    assert kept(Predicate("ID", "=", "text")) >= {1, 2, 10, 11}, "incomparable: keep"
    rows = read_table(cat, "T", filters=[Predicate("F", ">", 100.0)])
    assert rows.num_rows == 0


_OPS = ["=", "<", "<=", ">", ">=", "in", "is_null", "is_not_null"]


def _matches(value: int | None, op: str, operand: object) -> bool:
    if op == "is_null":
        return value is None
    if op == "is_not_null":
        return value is not None
    if value is None:
        return False
    if op == "in":
        assert isinstance(operand, list)
        return value in operand
    assert isinstance(operand, int)
    return {
        "=": value == operand,
        "<": value < operand,
        "<=": value <= operand,
        ">": value > operand,
        ">=": value >= operand,
    }[op]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    chunks=st.lists(
        st.lists(st.one_of(st.none(), st.integers(-20, 20)), min_size=1, max_size=8),
        min_size=1,
        max_size=4,
    ),
    op=st.sampled_from(_OPS),
    operand=st.integers(-25, 25),
    members=st.lists(st.integers(-25, 25), max_size=4),
)
def test_pruned_scans_equal_filtered_full_scans(
    tmp_path_factory: pytest.TempPathFactory,
    chunks: list[list[int | None]],
    op: str,
    operand: int,
    members: list[int],
) -> None:
    value: object = members if op == "in" else operand
    with connect(str(tmp_path_factory.mktemp("prune"))) as cat:
        create(
            cat,
            columns=[
                ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
                ColumnDef(name="X", type=ColumnType.INT32),
            ],
        )
        next_id = 0
        for chunk in chunks:
            ids = list(range(next_id, next_id + len(chunk)))
            next_id += len(chunk)
            write_table(cat, "T", pa.table({"ID": ids, "X": pa.array(chunk, pa.int32())}))
        data = TableData.for_catalog(cat)
        predicate = Predicate("X", op, value)
        plan = plan_scan(cat, data, "T", filters=[predicate])
        full = plan_scan(cat, data, "T")
        kept = {f.path for f in plan.files}
        for f in full.files:
            values = pq.read_table(f.path).column(1).to_pylist()
            stats = f.stats[1]
            can = _could_match(stats, f.rows, op, value)
            assert (f.path in kept) == can, (stats, op, value)
            if any(_matches(v, op, value) for v in values):
                assert f.path in kept
        pruned = read_table(cat, "T", filters=[predicate])
        everything = read_table(cat, "T").to_pylist()
        expected = sorted(r["ID"] for r in everything if _matches(r["X"], op, value))
        assert ids_of(pruned) == expected


def _could_match(stats: ColumnStats, rows: int, op: str, value: object) -> bool:
    """An independent statement of what min/max/null-count allow for ints."""
    if op == "is_null":
        return stats.null_count > 0
    if op == "is_not_null":
        return stats.null_count < rows
    if stats.null_count == rows:
        return False
    lo, hi = stats.min, stats.max
    assert isinstance(lo, int) and isinstance(hi, int)
    if op == "in":
        assert isinstance(value, list)
        return any(lo <= v <= hi for v in value)
    assert isinstance(value, int)
    return {
        "=": lo <= value <= hi,
        "<": lo < value,
        "<=": lo <= value,
        ">": hi > value,
        ">=": hi >= value,
    }[op]


def test_iceberg_bounds_round_trip_exactly() -> None:
    """Statistics become Iceberg bounds and come back equal, per column type."""
    aware = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC)
    cases: list[tuple[ColumnDef, object]] = [
        (ColumnDef(name="B", type=ColumnType.BOOLEAN), True),
        (ColumnDef(name="I8", type=ColumnType.INT8), -128),
        (ColumnDef(name="I32", type=ColumnType.INT32), -(2**31)),
        (ColumnDef(name="I64", type=ColumnType.INT64), -(2**63)),
        (ColumnDef(name="F", type=ColumnType.FLOAT), 0.5),
        (ColumnDef(name="D", type=ColumnType.DOUBLE), 5e-324),
        (
            ColumnDef(name="DEC", type=ColumnType.DECIMAL, precision=38, scale=6),
            decimal.Decimal("-12345678901234567890.000100"),
        ),
        (ColumnDef(name="DT", type=ColumnType.DATE), dt.date(1, 1, 1)),
        (ColumnDef(name="TM", type=ColumnType.TIME, precision=6), dt.time(23, 59, 59, 999999)),
        (ColumnDef(name="TS", type=ColumnType.TIMESTAMP), dt.datetime(2024, 5, 6, 7, 8, 9, 10)),
        (ColumnDef(name="TZ", type=ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE), aware),
        (ColumnDef(name="BY", type=ColumnType.BYTES), b"\x00\xff binary"),
        (ColumnDef(name="S", type=ColumnType.STRING), "tëxt ☃"),
        (ColumnDef(name="U", type=ColumnType.UUID), "12345678-1234-5678-1234-567812345678"),
    ]
    cat = connect("memory://")
    cat.execute(
        [
            CreateTable(
                name="T",
                columns=(
                    ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
                    *(c for c, _ in cases),
                ),
                primary_key=("ID",),
            )
        ]
    )
    table = cat.catalog().table("T")
    assert table is not None
    shape = CommitShape.of(cat.catalog(), table)
    stats = {table.columns[i + 1].id: ColumnStats(v, v, i) for i, (_, v) in enumerate(cases)}
    stats[table.columns[0].id] = ColumnStats(None, None, 4)
    file = DataFile("w/tablet=3/p.parquet", 10, 99, 3, stats)
    spec = partition_spec(table, shape.partitions)
    types = {c.id: iceberg_type(c) for c in table.columns}
    back = from_iceberg_file(to_iceberg_file(file, table, spec), types, 0 if spec.fields else None)
    assert (back.path, back.rows, back.size, back.partition) == (file.path, 10, 99, 3)
    for cid, want in stats.items():
        got = back.stats[cid]
        assert same(got.min, want.min) and same(got.max, want.max), (cid, got, want)
        assert got.null_count == want.null_count
    tz_column = table.column("TZ")
    assert tz_column is not None
    tz = back.stats[tz_column.id].min
    assert isinstance(tz, dt.datetime) and tz.tzinfo is not None


def test_nan_is_never_an_iceberg_bound() -> None:
    cat = connect("memory://")
    cat.execute(
        [
            CreateTable(
                name="T",
                columns=(
                    ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
                    ColumnDef(name="F", type=ColumnType.DOUBLE),
                ),
                primary_key=("ID",),
            )
        ]
    )
    table = cat.catalog().table("T")
    assert table is not None
    f_id = table.columns[1].id
    file = DataFile("p.parquet", 2, 9, 0, {f_id: ColumnStats(1.0, math.nan, 0)})
    spec = partition_spec(table, 1)
    iceberg_file = to_iceberg_file(file, table, spec)
    assert f_id not in (iceberg_file.upper_bounds or {})
    back = from_iceberg_file(iceberg_file, {f_id: iceberg_type(table.columns[1])}, None)
    assert back.stats[f_id].min == 1.0 and back.stats[f_id].max is None


def test_written_stats_survive_the_manifest(cat: Catalog) -> None:
    create(
        cat,
        columns=[
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="D", type=ColumnType.DECIMAL, precision=12, scale=3),
            ColumnDef(name="F", type=ColumnType.FLOAT),
            ColumnDef(name="TS", type=ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE),
            ColumnDef(name="B", type=ColumnType.BYTES),
        ],
    )
    written = write_table(
        cat,
        "T",
        pa.table(
            {
                "ID": [1],
                "D": [decimal.Decimal("1.500")],
                "F": pa.array([float("nan")], pa.float32()),
                "TS": pa.array([dt.datetime(2024, 1, 1, 0, 0, 0, 5)], pa.timestamp("us", "UTC")),
                "B": [b"\x01"],
            }
        ),
    )
    table = cat.catalog().table("T")
    assert table is not None
    with connect(cat.target) as other:
        reread = TableData.for_catalog(other).current(table.id)
    assert reread is not None
    (before,), (after,) = written.files, reread.files
    for column_id, stats in before.stats.items():
        again = after.stats[column_id]
        assert same(again.min, stats.min) and same(again.max, stats.max), column_id
        assert again.null_count == stats.null_count
    assert after.stats[1].min == decimal.Decimal("1.500")
