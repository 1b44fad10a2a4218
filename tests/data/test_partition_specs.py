"""Tables partitioned by any Iceberg transform: Almanac's writers split rows
by the default spec, record each file's spec id and partition values in the
manifests, pyiceberg reads them back as its own, the planner prunes by
every transform under each file's own spec, and spec evolution keeps old
files readable under their old spec."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog import MetastoreCatalog
from pyiceberg.expressions import BooleanExpression, EqualTo, Reference
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.table import CommitTableRequest, CommitTableResponse, StaticTable
from pyiceberg.table import Table as IcebergTable
from pyiceberg.table.sorting import SortDirection
from pyiceberg.table.update import TableRequirement, TableUpdate
from pyiceberg.transforms import parse_transform
from pyiceberg.types import IcebergType

from almanac import Catalog, ColumnDef, ColumnType, ConflictError, CreateZone, DataError, Table
from almanac.commands.partitions import PartitionFieldDef
from almanac.data import (
    CommitShape,
    DataFile,
    TableData,
    compact,
    new_write_id,
    read_table,
    write_files,
    write_table,
)
from almanac.data.conform import conform
from almanac.data.files import ColumnStats
from almanac.data.iceberg_schema import iceberg_type, spec_fields
from almanac.data.reading import Predicate, may_match, plan_scan
from almanac.data.tablets import file_tablet
from almanac.data.transforms import partition_keys, single_partition
from almanac.iceberg_rest.commit import commit
from almanac.iceberg_rest.plan import plan
from tests.data.layouts import Layouts, layouts
from tests.data.support import zone_tablets

__all__ = ["layouts"]

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
COLUMNS = (
    ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
    ColumnDef(name="TS", type=ColumnType.TIMESTAMP),
    ColumnDef(name="D", type=ColumnType.DATE),
    ColumnDef(name="S", type=ColumnType.STRING),
    ColumnDef(name="AMT", type=ColumnType.DECIMAL, precision=10, scale=2),
    ColumnDef(name="TZ", type=ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE),
)


def _rows(ids: Sequence[int]) -> pa.Table:
    """Rows whose columns span many hours, days, months, years, prefixes and
    amounts; the last two ids have NULL TS and S."""
    nulls = {46, 47}
    return pa.table(
        {
            "ID": pa.array(list(ids), pa.int64()),
            "TS": pa.array(
                [
                    None if i in nulls else dt.datetime(2024, 1, 1) + dt.timedelta(hours=7 * i)
                    for i in ids
                ],
                pa.timestamp("us"),
            ),
            "D": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=40 * i) for i in ids]),
            "S": pa.array([None if i in nulls else f"k{i % 6:02d}-{i}" for i in ids]),
            "AMT": pa.array([decimal.Decimal(i * 125) / 100 for i in ids], pa.decimal128(10, 2)),
            "TZ": pa.array(
                [
                    dt.datetime(2024, 3, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=23 * i)
                    for i in ids
                ],
                pa.timestamp("us", "UTC"),
            ),
        }
    )


ALL = list(range(48))


def _internal(value: object) -> object:
    """A row value as Iceberg's transforms take it."""
    if isinstance(value, dt.datetime):
        epoch = _EPOCH if value.tzinfo is None else _EPOCH_UTC
        return (value - epoch) // dt.timedelta(microseconds=1)
    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days
    return value


def _iceberg_value(transform: str, kind: IcebergType, value: object) -> object:
    """pyiceberg's own partition value of one row value."""
    return parse_transform(transform).transform(kind)(_internal(value))


CASES: list[tuple[str, str, Predicate]] = [
    ("S", "identity", Predicate("S", "=", "k03-3")),
    ("S", "identity", Predicate("S", "is_null")),
    ("ID", "bucket[4]", Predicate("ID", "=", 17)),
    ("ID", "bucket[4]", Predicate("ID", "in", [1, 2])),
    ("ID", "truncate[10]", Predicate("ID", "<", 20)),
    ("S", "truncate[3]", Predicate("S", ">=", "k04")),
    ("AMT", "truncate[1000]", Predicate("AMT", ">=", decimal.Decimal("40"))),
    ("D", "year", Predicate("D", "<", dt.date(2021, 1, 1))),
    ("D", "month", Predicate("D", "=", dt.date(2021, 3, 6))),
    ("D", "identity", Predicate("D", ">", dt.date(2024, 6, 1))),
    ("TZ", "hour", Predicate("TZ", "<", dt.datetime(2024, 3, 1, 5, tzinfo=dt.UTC))),
    ("TS", "day", Predicate("TS", "<", dt.datetime(2024, 1, 3))),
    ("TS", "hour", Predicate("TS", ">", dt.datetime(2024, 1, 12, 12))),
    ("TS", "day", Predicate("TS", "is_not_null")),
]


def _unknown_stats(file: DataFile) -> DataFile:
    """The file as a client may commit it: null counts but no bounds."""
    return replace(
        file, stats={cid: ColumnStats(None, None, s.null_count) for cid, s in file.stats.items()}
    )


def _matches(predicate: Predicate, value: object) -> bool:
    op, operand = predicate.op, predicate.value
    if op == "is_null":
        return value is None
    if op == "is_not_null":
        return value is not None
    if value is None:
        return False
    if op == "in":
        return value in operand  # type: ignore[operator]
    compared: bool = {
        "=": value == operand,
        "<": value < operand,  # type: ignore[operator]
        "<=": value <= operand,  # type: ignore[operator]
        ">": value > operand,  # type: ignore[operator]
        ">=": value >= operand,  # type: ignore[operator]
    }[op]
    return compared


def _file_rows(file: DataFile) -> pa.Table:
    return pq.read_table(file.path)


def _location(cat: Catalog, table: Table) -> str:
    location = TableData.for_catalog(cat).metadata_location(table.id)
    assert location is not None
    return location


def _pyiceberg(location: str, row_filter: BooleanExpression | None = None) -> pa.Table:
    table = StaticTable.from_metadata(location)
    scan = table.scan() if row_filter is None else table.scan(row_filter=row_filter)
    return scan.to_arrow().sort_by("ID")


@pytest.mark.parametrize(("column", "transform", "predicate"), CASES)
def test_each_transform_writes_reads_and_prunes(
    cat: Catalog, layouts: Layouts, column: str, transform: str, predicate: Predicate
) -> None:
    table = layouts.create(cat, "T", COLUMNS, partition=[(column, transform)])
    written = write_table(cat, "T", _rows(ALL))
    source = table.column(column)
    assert source is not None
    kind = iceberg_type(source)

    # Each file holds one partition, recorded under spec 0 with pyiceberg's value.
    values = _rows(ALL).column(column).to_pylist()
    expected = {_iceberg_value(transform, kind, v) for v in values}
    assert len(written.files) == len(expected)
    for f in written.files:
        assert f.spec_id == 0
        theirs = {
            _iceberg_value(transform, kind, v) for v in _file_rows(f).column(column).to_pylist()
        }
        assert theirs == {f.partition_values[0]}

    # Almanac and pyiceberg read the rows; pyiceberg sees the same partitions.
    assert read_table(cat, "T").sort_by("ID").to_pylist() == _rows(ALL).to_pylist()
    location = _location(cat, table)
    assert _pyiceberg(location).to_pylist() == _rows(ALL).to_pylist()
    tasks = list(StaticTable.from_metadata(location).scan().plan_files())
    by_path = {f.path: f for f in written.files}
    assert {t.file.file_path for t in tasks} == set(by_path)
    for task in tasks:
        assert task.file.spec_id == 0
        assert _internal(task.file.partition[0]) == by_path[task.file.file_path].partition_values[0]

    # The planner keeps every file with a matching row and prunes the others
    # by partition value alone, with no statistics to help.
    data = TableData.for_catalog(cat)
    fields = spec_fields(table, zone_tablets(cat, table))[0]
    assert [f.transform for f in fields] == [transform]
    col = table.column(predicate.column)
    assert col is not None
    needed = {
        f.path
        for f in written.files
        if any(_matches(predicate, v) for v in _file_rows(f).column(predicate.column).to_pylist())
    }
    by_partition = {
        f.path for f in written.files if may_match(predicate, col, _unknown_stats(f), fields)
    }
    assert needed <= by_partition
    assert len(by_partition) < len(written.files)
    by_counts = {f.path for f in written.files if may_match(predicate, col, _unknown_stats(f))}
    assert by_partition <= by_counts
    if predicate.op not in ("is_null", "is_not_null"):
        assert len(by_partition) < len(by_counts), "the partition values, not null counts, prune"
    plan = plan_scan(cat, data, "T", filters=[predicate])
    assert needed <= {f.path for f in plan.files}
    assert len(plan.files) < plan.files_total == len(written.files)
    got = read_table(cat, "T", filters=[predicate]).sort_by("ID").column("ID").to_pylist()
    assert got == [
        i
        for i, v in zip(ALL, _rows(ALL).column(predicate.column).to_pylist(), strict=True)
        if _matches(predicate, v)
    ]


def test_void_never_prunes(cat: Catalog, layouts: Layouts) -> None:
    table = layouts.create(cat, "T", COLUMNS, partition=[("TS", "void")])
    written = write_table(cat, "T", _rows(ALL))
    assert [f.partition_values for f in written.files] == [(None,)]
    fields = spec_fields(table, zone_tablets(cat, table))[0]
    col = table.column("TS")
    assert col is not None
    noon = dt.datetime(2024, 1, 1, 12)
    for predicate in (
        Predicate("TS", "=", noon),
        Predicate("TS", "is_null"),
        Predicate("TS", "<", noon),
    ):
        assert may_match(predicate, col, _unknown_stats(written.files[0]), fields)
    assert _pyiceberg(_location(cat, table)).num_rows == 48


def test_void_on_a_not_null_column_is_refused_before_writing(
    cat: Catalog, layouts: Layouts
) -> None:
    layouts.create(cat, "T", COLUMNS, partition=[("ID", "void")])
    with pytest.raises(DataError, match=r"void.*NOT NULL column 'ID'"):
        write_table(cat, "T", _rows(ALL))
    assert read_table(cat, "T").num_rows == 0


def _id_is(value: int) -> BooleanExpression:
    return EqualTo(Reference("ID"), value)  # type: ignore[call-arg,arg-type]


def test_spec_evolution_keeps_old_files_under_their_spec(cat: Catalog, layouts: Layouts) -> None:
    layouts.create(cat, "T", COLUMNS, partition=[("TS", "day")])
    old = write_table(cat, "T", _rows(range(24))).files
    table = layouts.evolve_spec(cat, "T", [("ID", "bucket[4]")])
    assert table.default_spec_id == 1
    # The evolution alone moves the metadata: engines see the new spec at once.
    evolved = StaticTable.from_metadata(_location(cat, table))
    assert (evolved.spec().spec_id, sorted(evolved.specs())) == (1, [0, 1])
    snapshot = write_table(cat, "T", _rows(range(24, 48)))
    new = [f for f in snapshot.files if f.path not in {o.path for o in old}]

    assert {f.spec_id for f in old} == {0} and {f.spec_id for f in new} == {1}
    assert {f.partition_values for f in new} <= {(b,) for b in range(4)}
    read = TableData.for_catalog(cat).current(table.id)
    assert read is not None
    assert {(f.path, f.spec_id, f.partition_values) for f in read.files} == {
        (f.path, f.spec_id, f.partition_values) for f in (*old, *new)
    }

    # The metadata lists both specs, the new one the default; manifests keep theirs.
    location = _location(cat, table)
    with open(location) as stream:
        metadata = json.load(stream)
    assert [s["spec-id"] for s in metadata["partition-specs"]] == [0, 1]
    assert metadata["default-spec-id"] == 1
    assert metadata["last-partition-id"] == 1001
    assert [f["transform"] for s in metadata["partition-specs"] for f in s["fields"]] == [
        "day",
        "bucket[4]",
    ]
    iceberg = StaticTable.from_metadata(location)
    assert {m.partition_spec_id for m in iceberg.current_snapshot().manifests(iceberg.io)} == {0, 1}  # type: ignore[union-attr]

    # Both engines read every row; both prune each file by its own spec.
    assert read_table(cat, "T").sort_by("ID").to_pylist() == _rows(ALL).to_pylist()
    assert _pyiceberg(location).to_pylist() == _rows(ALL).to_pylist()
    assert _pyiceberg(location, _id_is(30)).column("ID").to_pylist() == [30]
    data = TableData.for_catalog(cat)
    by_id = plan_scan(cat, data, "T", filters=[Predicate("ID", "=", 30)])
    assert len([f for f in by_id.files if f.spec_id == 1]) == 1
    by_day = plan_scan(cat, data, "T", filters=[Predicate("TS", "<", dt.datetime(2024, 1, 2))])
    assert {f.spec_id for f in by_day.files} == {0}
    assert len(by_day.files) == 1
    fields = spec_fields(table, zone_tablets(cat, table))
    ts = table.column("TS")
    assert ts is not None
    day = Predicate("TS", "<", dt.datetime(2024, 1, 2))
    assert [may_match(day, ts, _unknown_stats(f), fields[f.spec_id]) for f in old].count(True) == 1
    assert all(may_match(day, ts, _unknown_stats(f), fields[f.spec_id]) for f in new)


def test_bucketed_table_keeps_its_hidden_tablet_field_first(cat: Catalog, layouts: Layouts) -> None:
    table = layouts.create(
        cat, "T", COLUMNS, partition=[("D", "year")], primary_key=("ID",), colocation=("ID",)
    )
    written = write_table(cat, "T", _rows(ALL))
    location = _location(cat, table)
    spec = StaticTable.from_metadata(location).spec()
    assert [(f.field_id, f.name, str(f.transform)) for f in spec.fields] == [
        (1000, "tablet", "bucket[25]"),
        (1001, "D_year", "year"),
    ]
    kind = iceberg_type(table.columns[0])
    for f in written.files:
        ids = _file_rows(f).column("ID").to_pylist()
        assert {_iceberg_value("bucket[25]", kind, i) for i in ids} == {f.partition}
        assert f.partition_values[0] == f.partition
        assert f"/tablet={f.partition}/" in f.path
    assert _pyiceberg(location).to_pylist() == _rows(ALL).to_pylist()
    assert _pyiceberg(location, _id_is(7)).column("ID").to_pylist() == [7]
    plan = plan_scan(cat, TableData.for_catalog(cat), "T", filters=[Predicate("ID", "=", 7)])
    assert len(plan.files) == 1


def test_a_bucket_of_the_tablet_column_into_the_zone_partitions_is_the_tablet(
    cat: Catalog, layouts: Layouts
) -> None:
    cat.execute([CreateZone(name="Z4", partitions=4)])
    table = layouts.create(
        cat, "T", COLUMNS, partition=[("ID", "bucket[4]")], primary_key=("ID",), zone="Z4"
    )
    assert not table.bucketed
    written = write_table(cat, "T", _rows(ALL))
    assert sorted(f.partition for f in written.files) == [0, 1, 2, 3]
    assert all(f.partition == f.partition_values[0] for f in written.files)
    read = TableData.for_catalog(cat).current(table.id)
    assert read is not None
    assert {(f.path, f.partition) for f in read.files} == {
        (f.path, f.partition) for f in written.files
    }

    # A bucket of another width is no tablet: such files hash their names.
    other = layouts.create(
        cat, "U", COLUMNS, partition=[("ID", "bucket[3]")], primary_key=("ID",), zone="Z4"
    )
    files = write_table(cat, "U", _rows(ALL)).files
    assert len(files) == 3
    assert all(f.partition == file_tablet(f.path, 4) for f in files)
    read = TableData.for_catalog(cat).current(other.id)
    assert read is not None
    assert {(f.path, f.partition) for f in read.files} == {(f.path, f.partition) for f in files}


def test_files_are_sorted_by_the_default_sort_order(cat: Catalog, layouts: Layouts) -> None:
    table = layouts.create(
        cat,
        "T",
        COLUMNS,
        partition=[("D", "year")],
        sort=[("S", "truncate[3]", True, False), ("TS", "identity", False, True)],
    )
    written = write_table(cat, "T", _rows(list(reversed(ALL))))
    assert len(written.files) > 1
    for f in written.files:
        rows = _file_rows(f).to_pylist()
        keys = [(r["S"][:3] if r["S"] is not None else None, r["TS"]) for r in rows]

        def rank(key: tuple[Any, Any]) -> tuple[Any, ...]:
            prefix, ts = key
            # S prefix descending, NULLs last; then TS ascending, NULLs first.
            return (
                prefix is None,
                "" if prefix is None else tuple(-ord(c) for c in prefix),
                ts is not None,
                ts or dt.datetime.min,
            )

        assert keys == sorted(keys, key=rank)
    location = _location(cat, table)
    iceberg = StaticTable.from_metadata(location)
    assert iceberg.sort_order().order_id == 1
    assert [
        (str(f.transform), f.direction.value, f.null_order.value)
        for f in iceberg.sort_order().fields
    ] == [
        ("truncate[3]", "desc", "nulls-last"),
        ("identity", "asc", "nulls-first"),
    ]
    assert sorted(iceberg.sort_orders()) == [0, 1]
    assert _pyiceberg(location).to_pylist() == _rows(ALL).to_pylist()


def test_compaction_merges_files_of_one_partition_and_keeps_it(
    cat: Catalog, layouts: Layouts
) -> None:
    cat.execute([CreateZone(name="ONE", partitions=1)])
    table = layouts.create(cat, "T", COLUMNS, partition=[("D", "year")], zone="ONE")
    first = write_table(cat, "T", _rows(range(0, 48, 2))).files
    write_table(cat, "T", _rows(range(1, 48, 2)))
    before = TableData.for_catalog(cat).current(table.id)
    assert before is not None
    years = sorted(f.partition_values for f in first)
    assert sorted(f.partition_values for f in before.files) == sorted(years * 2)
    assert compact(cat, "T") is not None
    after = TableData.for_catalog(cat).current(table.id)
    assert after is not None
    assert sorted(f.partition_values for f in after.files) == years
    assert {f.spec_id for f in after.files} == {0}
    for f in after.files:
        assert {(d.year - 1970,) for d in _file_rows(f).column("D").to_pylist()} == {
            f.partition_values
        }
    assert read_table(cat, "T").sort_by("ID").to_pylist() == _rows(ALL).to_pylist()
    assert _pyiceberg(_location(cat, table)).to_pylist() == _rows(ALL).to_pylist()


class _InProcessRest(MetastoreCatalog):
    """A pyiceberg catalog whose commits go through Almanac's Iceberg REST
    commit mapping in this process, as a client's commit over HTTP does."""

    def __init__(self, cat: Catalog, name: str) -> None:
        super().__init__("almanac")
        self._cat, self._name = cat, name

    def commit_table(
        self,
        table: IcebergTable,
        requirements: tuple[TableRequirement, ...],
        updates: tuple[TableUpdate, ...],
    ) -> CommitTableResponse:
        request = CommitTableRequest.model_validate(
            {
                "identifier": {"namespace": ["PUBLIC"], "name": self._name},
                "requirements": requirements,
                "updates": updates,
            }
        )
        commit(self._cat, [plan(self._cat, self._cat.catalog(), request)])
        found = self._cat.catalog().table(self._name)
        assert found is not None
        location = _location(self._cat, found)
        metadata = TableData.for_catalog(self._cat).iceberg.metadata(location)
        return CommitTableResponse.model_validate(
            {"metadata": metadata, "metadata-location": location}
        )

    def _refuse(self, *_: Any, **__: Any) -> Any:
        raise NotImplementedError("only commits go through this catalog")

    create_table = register_table = load_table = drop_table = rename_table = _refuse
    list_tables = list_namespaces = create_namespace = drop_namespace = _refuse
    load_namespace_properties = update_namespace_properties = _refuse
    list_views = drop_view = view_exists = load_view = register_view = _refuse


def test_files_a_client_appends_keep_their_spec_and_partition_values(
    cat: Catalog, layouts: Layouts
) -> None:
    table = layouts.create(cat, "T", COLUMNS, partition=[("TS", "day"), ("S", "truncate[2]")])
    ours = write_table(cat, "T", _rows(range(20))).files
    location = _location(cat, table)
    client = IcebergTable(
        identifier=("PUBLIC", "T"),
        metadata=TableData.for_catalog(cat).iceberg.metadata(location),
        metadata_location=location,
        io=PyArrowFileIO(),
        catalog=_InProcessRest(cat, "T"),
    )
    rows = _rows(range(20, 48))
    client.append(rows.cast(pa.schema([f.with_nullable(f.name != "ID") for f in rows.schema])))

    current = TableData.for_catalog(cat).current(table.id)
    assert current is not None
    theirs = [f for f in current.files if f.path not in {o.path for o in ours}]
    assert theirs and all(f.checksum is None for f in theirs)
    ts, s = table.column("TS"), table.column("S")
    assert ts is not None and s is not None
    for f in theirs:
        assert f.spec_id == 0
        read = _file_rows(f)
        days = {_iceberg_value("day", iceberg_type(ts), v) for v in read.column("TS").to_pylist()}
        prefixes = {None if v is None else v[:2] for v in read.column("S").to_pylist()}
        assert {(d, p) for d in days for p in prefixes} == {f.partition_values}
        assert f.partition == file_tablet(f.path, zone_tablets(cat, table))
    assert read_table(cat, "T").sort_by("ID").to_pylist() == _rows(ALL).to_pylist()
    late = Predicate("TS", ">=", dt.datetime(2024, 1, 12))
    plan_ = plan_scan(cat, TableData.for_catalog(cat), "T", filters=[late])
    fields = spec_fields(table, zone_tablets(cat, table))[0]
    assert {f.path for f in theirs if may_match(late, ts, _unknown_stats(f), fields)} < {
        f.path for f in theirs
    }
    assert read_table(cat, "T", filters=[late]).num_rows == len(
        [i for i in ALL if i not in (46, 47) and 7 * i >= 11 * 24]
    )
    assert len(plan_.files) < plan_.files_total


def test_a_write_whose_spec_changed_meanwhile_publishes_nothing(
    cat: Catalog, layouts: Layouts
) -> None:
    table = layouts.create(cat, "T", COLUMNS, partition=[("TS", "day")])
    write_table(cat, "T", _rows(range(10)))
    data = TableData.for_catalog(cat)
    old_shape = CommitShape.of(cat.catalog(), table)
    write_id = new_write_id()
    write_dir = data.warehouse.write_dir(table.id, write_id)
    lease = data.staging.stage(write_id, write_dir, ttl_s=60.0)
    files = write_files(
        data.warehouse, table, old_shape.partitions, conform(_rows(range(10, 20)), table), write_dir
    )
    assert {f.spec_id for f in files} == {0}
    layouts.evolve_spec(cat, "T", [("ID", "bucket[4]")])
    after = write_table(cat, "T", _rows(range(20, 30)))
    with pytest.raises(ConflictError, match="partitioning changed during the write"):
        data.commit(old_shape, write_id, files, operation="append")
    data.staging.abort(write_id, write_dir)
    data.staging.release(lease)
    current = data.current(table.id)
    assert current is not None and current.snapshot_id == after.snapshot_id
    assert read_table(cat, "T").sort_by("ID").column("ID").to_pylist() == [
        *range(10),
        *range(20, 30),
    ]


def test_metadata_of_a_table_without_data_lists_every_spec_and_order(
    cat: Catalog, layouts: Layouts
) -> None:
    layouts.create(
        cat, "T", COLUMNS, partition=[("D", "month")], sort=[("ID", "identity", True, True)]
    )
    table = layouts.evolve_spec(cat, "T", [("D", "year"), ("S", "truncate[2]")])
    shape = CommitShape.of(cat.catalog(), table)
    metadata = TableData.for_catalog(cat).iceberg.initial(shape, "/nowhere", table.id)
    assert [
        (s.spec_id, [str(f.transform) for f in s.fields]) for s in metadata.partition_specs
    ] == [
        (0, ["month"]),
        (1, ["year", "truncate[2]"]),
    ]
    assert metadata.default_spec_id == 1 and metadata.last_partition_id == 1002
    assert [o.order_id for o in metadata.sort_orders] == [0, 1]
    assert metadata.default_sort_order_id == 1


def test_a_field_inside_a_struct_partitions_and_sorts(cat: Catalog, layouts: Layouts) -> None:
    place = ColumnDef(
        name="P",
        type=ColumnType.STRUCT,
        fields=(
            ColumnDef(name="CITY", type=ColumnType.STRING),
            ColumnDef(name="N", type=ColumnType.INT64),
        ),
    )
    layouts.create(cat, "T", [COLUMNS[0], place])
    table = cat.catalog().table("T")
    assert table is not None

    layouts.set_spec(cat, "T", [PartitionFieldDef("P.CITY", name="city")])
    table = layouts.set_order(cat, "T", [("P.N", "identity", True, False)])
    rows = pa.table(
        {
            "ID": pa.array(range(12), pa.int64()),
            "P": pa.array(
                [None if i == 11 else {"CITY": f"c{i % 3}", "N": i} for i in range(12)],
                pa.struct([("CITY", pa.string()), ("N", pa.int64())]),
            ),
        }
    )
    written = write_table(cat, "T", rows).files
    assert sorted(f.partition_values for f in written if f.partition_values != (None,)) == [
        ("c0",),
        ("c1",),
        ("c2",),
    ]
    for f in written:
        places = _file_rows(f).column("P").to_pylist()
        assert {None if p is None else p["CITY"] for p in places} == {f.partition_values[0]}
        numbers = [None if p is None else p["N"] for p in places]
        assert numbers == sorted(numbers, key=lambda v: -1 if v is None else -v)
    theirs = _pyiceberg(_location(cat, table))
    assert theirs.to_pylist() == rows.to_pylist()


def test_a_sort_order_set_on_a_table_with_data_reaches_its_metadata(
    cat: Catalog, layouts: Layouts
) -> None:
    table = layouts.create(cat, "T", COLUMNS)
    write_table(cat, "T", _rows(range(10)))
    table = layouts.set_order(cat, "T", [("ID", "identity", True, True)])
    files = write_table(cat, "T", _rows(range(10, 30))).files
    new = [f for f in files if f.rows == 20]
    assert len(new) == 1
    assert _file_rows(new[0]).column("ID").to_pylist() == list(range(29, 9, -1))
    iceberg = StaticTable.from_metadata(_location(cat, table))
    assert iceberg.sort_order().order_id == 1
    assert [str(f.direction) for f in iceberg.sort_order().fields] == [str(SortDirection.DESC)]


def test_partition_keys_split_rows_as_the_writer_does(cat: Catalog, layouts: Layouts) -> None:
    """The key Spark's writer splits rows by: equal exactly for the rows
    Almanac's own writer puts in one file."""
    table = layouts.create(
        cat, "T", COLUMNS, partition=[("TS", "day"), ("S", "truncate[2]"), ("AMT", "bucket[3]")]
    )
    rows = conform(_rows(ALL), table)
    fields = table.partition_spec.fields
    keys = partition_keys(table, fields, rows).tolist()
    written = write_table(cat, "T", rows).files
    assert len(set(keys)) == len(written)
    for f in written:
        ids = set(_file_rows(f).column("ID").to_pylist())
        assert len({k for i, k in zip(ALL, keys, strict=True) if i in ids}) == 1
        assert single_partition(table, fields, conform(_file_rows(f), table)) == f.partition_values
    assert single_partition(table, fields, rows) is None
