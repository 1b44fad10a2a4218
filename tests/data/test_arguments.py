"""Wrong arguments of the data plane are a ValidationError, raised where the
value is built (predicates) or where the call is made (timestamps)."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pyarrow as pa
import pytest

from almanac import Catalog, ValidationError
from almanac.data import (
    CommitShape,
    Predicate,
    TableData,
    arrow_schema,
    arrow_type,
    conform,
    create_table_as,
    expire_data,
    output_schema,
    partition_column,
    read_file,
    read_table,
    run_janitor,
    table_partitions,
    tablets_of,
    write_files,
    write_table,
)
from almanac.data.warehouse import new_write_id
from tests.data.support import append, create, zone_tablets


def bad(value: object) -> Any:
    return value


@pytest.mark.parametrize(
    ("build", "fragment"),
    [
        (lambda: Predicate("ID", "<", 2**70), "signed 64-bit range"),
        (lambda: Predicate("ID", "in", [1, 2**64]), "Item 1 of parameter 'value'"),
        (lambda: Predicate("ID", "in", [1, "x"]), "values of one type"),
        (lambda: Predicate("ID", "in", 5), "a list, tuple or set"),
        (lambda: Predicate("ID", "~", 5), "Parameter 'op' of Predicate"),
        (lambda: Predicate(bad(5), "=", 5), "Parameter 'column' of Predicate"),
        (lambda: Predicate("ID", "=", bad(object())), "Parameter 'value' of Predicate '='"),
        (lambda: Predicate("ID", "=", bad({})), "got dict"),
        (lambda: Predicate("ID", "=", decimal.Decimal("1e100")), "at most 76 digits"),
        (lambda: Predicate("ID", "=", decimal.Decimal("NaN")), "finite Decimal"),
    ],
)
def test_bad_predicates_are_refused_when_built(build: Any, fragment: str) -> None:
    with pytest.raises(ValidationError, match="Predicate") as info:
        build()
    assert fragment in str(info.value)


def test_good_predicates_still_build() -> None:
    assert Predicate("ID", "is_null", object()).op == "is_null"  # the value is ignored
    assert Predicate("ID", "in", {1, None, 3}).op == "in"
    assert Predicate("D", "=", dt.datetime(2024, 1, 1)).value == dt.datetime(2024, 1, 1)


def test_reads_and_expiry_refuse_naive_datetimes(cat: Catalog) -> None:
    create(cat)
    append(cat, [1])
    naive = dt.datetime(2024, 1, 1)
    with pytest.raises(ValidationError, match="naive datetimes are refused"):
        read_table(cat, "T", timestamp=naive)
    with pytest.raises(ValidationError, match="'older_than' of expire_data"):
        expire_data(cat, "T", older_than=naive)
    with pytest.raises(ValidationError, match="'timestamp' of plan_scan"):
        read_table(cat, "T", timestamp=bad("2024"))
    with pytest.raises(ValidationError, match="'version' of plan_scan"):
        read_table(cat, "T", version=bad(1.0))
    assert read_table(cat, "T", timestamp=dt.datetime.now(dt.UTC)).num_rows == 1


def test_entry_points_check_their_arguments_when_called(cat: Catalog) -> None:
    """A wrong type at a data entry point names the parameter instead of
    surfacing as an AttributeError from deep inside pyarrow or the catalog."""
    create(cat)
    table = cat.catalog().table("T")
    assert table is not None
    rows = pa.table({"ID": pa.array([1], pa.int64())})
    cases: list[tuple[Any, str]] = [
        (lambda: write_table(bad("memory://"), "T", rows), "'cat' of write_table"),
        (lambda: write_table(cat, bad(5), rows), "'name' of write_table"),
        (lambda: write_table(cat, "T", bad([1, 2])), "'data' of write_table"),
        (lambda: write_table(cat, "T", rows, bad(None)), "'schema' of write_table"),
        (lambda: create_table_as(cat, bad("CREATE TABLE X"), rows), "'create' of create_table_as"),
        (lambda: read_table(bad(None), "T"), "'cat' of read_table"),
        (lambda: read_table(cat, bad(b"T")), "'name' of plan_scan"),
        (lambda: expire_data(cat, bad(1), older_than=0), "'name' of expire_data"),
        (lambda: run_janitor(cat, grace_s=bad("1")), "'grace_s' of run_janitor"),
        (lambda: run_janitor(bad(cat.catalog())), "'cat' of run_janitor"),
        (lambda: conform(bad({"ID": [1]}), table), "must be a pyarrow Table"),
        (lambda: conform(rows, bad("T")), "'table' of conform"),
        (lambda: arrow_schema(bad("T")), "'table' of arrow_schema"),
        (lambda: arrow_type(bad(table)), "'column' of arrow_type"),
        (lambda: output_schema(bad(None)), "'table' of output_schema"),
        (lambda: tablets_of(bad(rows.to_batches()[0]), table, 4), "'data' of tablets_of"),
        (lambda: tablets_of(rows, bad("T"), 4), "'table' of tablets_of"),
        (lambda: partition_column(bad(None)), "'table' of partition_column"),
        (lambda: table_partitions(bad(None), table), "'snapshot' of table_partitions"),
    ]
    for call, fragment in cases:
        with pytest.raises(ValidationError) as info:
            call()
        assert fragment in str(info.value), (fragment, str(info.value))


def test_a_commit_shape_and_a_commit_check_their_fields(cat: Catalog) -> None:
    """A CommitShape with a wrong field is refused when built, before it can
    write Iceberg metadata with a bucket count of "4" or 0, or stamp a
    snapshot with a catalog version that is not a number; ``commit`` names its
    wrong arguments instead of failing in ``tuple()`` or ``range()``."""
    table = create(cat)
    append(cat, [1])
    version = cat.catalog().version
    shapes: list[tuple[Any, str]] = [
        (lambda: CommitShape(bad("T"), 4, version), "'table' of CommitShape"),
        (lambda: CommitShape(table, bad("4"), version), "'partitions' of CommitShape"),
        (lambda: CommitShape(table, 0, version), "'partitions' of CommitShape"),
        (lambda: CommitShape(table, 4, bad("1")), "'catalog_version' of CommitShape"),
        (lambda: CommitShape(table, 4, -5), "'catalog_version' of CommitShape"),
    ]
    data = TableData.for_catalog(cat)
    write_id = new_write_id()
    write_dir = data.warehouse.write_dir(table.id, write_id)
    data.staging.stage(write_id, write_dir, ttl_s=600)
    files = write_files(
        data.warehouse,
        table,
        zone_tablets(cat, table),
        conform(pa.table({"ID": [2]}), table),
        write_dir,
    )
    shape = CommitShape.of(cat.catalog(), table)
    commits: list[tuple[Any, str]] = [
        (lambda: data.commit(shape, write_id, bad(5), operation="append"), "'files' of"),
        (lambda: data.commit(shape, write_id, bad("f"), operation="append"), "'files' of"),
        (
            lambda: data.commit(shape, write_id, files, operation="append", max_attempts=bad("x")),
            "'max_attempts' of TableData.commit",
        ),
        (lambda: data.commit(shape, bad(7), files, operation="append"), "'write_id' of"),
    ]
    for call, fragment in shapes + commits:
        with pytest.raises(ValidationError) as info:
            call()
        assert fragment in str(info.value), (fragment, str(info.value))
    assert read_table(cat, "T").num_rows == 1
    data.commit(shape, write_id, files, operation="append")
    assert sorted(read_table(cat, "T").column("ID").to_pylist()) == [1, 2]


def test_reads_check_their_columns_and_filters(cat: Catalog) -> None:
    """``columns="ID"`` is not the columns I and D, a filter that is not a
    sequence is named, ``read_file`` checks what it is given, and an empty IN
    matches nothing instead of failing in pyarrow."""
    table = create(cat)
    snapshot = append(cat, [1, 2])
    warehouse = TableData.for_catalog(cat).warehouse
    cases: list[tuple[Any, str]] = [
        (lambda: read_table(cat, "T", columns=bad("ID")), "'columns' of a read of table 'T'"),
        (lambda: read_table(cat, "T", columns=bad(5)), "'columns' of a read of table 'T'"),
        (lambda: read_table(cat, "T", columns=bad([5])), "'columns' of a read of table 'T'"),
        (lambda: read_table(cat, "T", filters=bad(5)), "'filters' of plan_scan"),
        (lambda: read_table(cat, "T", filters=bad("ID=1")), "'filters' of plan_scan"),
        (lambda: list(read_file(bad(None), snapshot.files[0], warehouse)), "'plan_table'"),
        (lambda: list(read_file(table, bad("f"), warehouse)), "'file' of read_file"),
        (lambda: list(read_file(table, snapshot.files[0], bad("/"))), "'warehouse'"),
        (
            lambda: list(read_file(table, snapshot.files[0], warehouse, batch_rows=0)),
            "'batch_rows' of read_file",
        ),
    ]
    for call, fragment in cases:
        with pytest.raises(ValidationError) as info:
            call()
        assert fragment in str(info.value), (fragment, str(info.value))
    assert read_table(cat, "T", filters=[Predicate("V", "in", [])]).num_rows == 0
    assert read_table(cat, "T", filters=[Predicate("V", "in", [None])]).num_rows == 0
    assert read_table(cat, "T", filters=[Predicate("V", "in", ["v1"])]).num_rows == 1


def test_every_public_data_function_names_a_wrong_argument(cat: Catalog) -> None:
    """Wrong types at the public functions the argument fuzzer found: each
    escaped as TypeError, AttributeError or OverflowError from deep inside
    pyarrow, numpy or the serializer."""
    from almanac import serialization, system_tables
    from almanac.data import Warehouse, iceberg_bucket_values

    table = create(cat)
    append(cat, [1])
    data = TableData.for_catalog(cat)
    rows = conform(pa.table({"ID": [2]}), table)
    values = pa.array([1, 2], pa.int64())
    fs = data.warehouse.fs
    cases: list[tuple[Any, str]] = [
        (lambda: serialization.decode(bad(3.5)), "'data' of decode"),
        (lambda: serialization.decode_catalog(bad(2**70)), "'data' of decode_catalog"),
        (lambda: serialization.decode_update(bad("x")), "'data' of decode_update"),
        (lambda: serialization.encode_catalog(bad(table)), "'version' of encode_catalog"),
        (lambda: serialization.encode_update(bad(table)), "'update' of encode_update"),
        (lambda: system_tables.arrow_schema(bad(["A"])), "'name' of arrow_schema"),
        (lambda: system_tables.to_arrow(bad(b"")), "'rows' of to_arrow"),
        (lambda: system_tables.sql_cells(bad(rows)), "'rows' of sql_cells"),
        (lambda: system_tables.system_rows(cat, bad(set())), "'name' of system_rows"),
        (lambda: system_tables.system_rows(bad(None), "TABLES"), "'source' of system_rows"),
        (
            lambda: system_tables.system_rows(cat, "TABLES", as_of=bad(1)),
            "'as_of' of system_rows",
        ),
        (lambda: Warehouse(bad(None), fs, "/x"), "'uri' of Warehouse"),
        (lambda: Warehouse("/x", bad("local"), "/x"), "'fs' of Warehouse"),
        (lambda: Warehouse("/x", fs, bad(7)), "'root' of Warehouse"),
        (lambda: TableData(bad("store"), data.warehouse), "'store' of TableData"),
        (lambda: TableData(data.store, bad("/x")), "'warehouse' of TableData"),
        (lambda: TableData.for_catalog(bad("memory://")), "'cat' of TableData.for_catalog"),
        (lambda: iceberg_bucket_values(bad("x"), 4), "'values' of iceberg_bucket_values"),
        (lambda: iceberg_bucket_values(values, 4, uuid=bad("no")), "'uuid' of"),
        (lambda: iceberg_bucket_values(values, 2**63 - 1), "from 1 to 2147483647"),
        (lambda: tablets_of(rows, table, 2**40), "from 1 to 2147483647"),
        (lambda: write_files(bad("/"), table, 4, rows, "/tmp/w"), "'warehouse' of write_files"),
        (
            lambda: write_files(data.warehouse, bad(None), 4, rows, "/tmp/w"),
            "'table' of write_files",
        ),
        (
            lambda: write_files(data.warehouse, table, bad(2**70), rows, "/tmp/w"),
            "'partitions' of write_files",
        ),
        (
            lambda: write_files(data.warehouse, table, 4, bad(""), "/tmp/w"),
            "'data' of write_files",
        ),
        (
            lambda: write_files(data.warehouse, table, 4, rows, bad(dt.timedelta(1))),
            "'write_dir' of write_files",
        ),
        (
            lambda: write_files(data.warehouse, table, 4, rows, "/tmp/w", max_rows_per_file=bad(0)),
            "'max_rows_per_file' of write_files",
        ),
    ]
    for call, fragment in cases:
        with pytest.raises(ValidationError) as info:
            call()
        assert fragment in str(info.value), (fragment, str(info.value))
    assert read_table(cat, "T").num_rows == 1


def test_a_write_dir_the_warehouse_cannot_hold_is_a_catalog_error(cat: Catalog) -> None:
    """A URI as ``write_dir`` of a local warehouse raised pyarrow's ArrowInvalid."""
    from almanac import CatalogError

    table = create(cat)
    data = TableData.for_catalog(cat)
    rows = conform(pa.table({"ID": [2]}), table)
    with pytest.raises(CatalogError, match="memory://tablet="):
        write_files(data.warehouse, table, 4, rows, "memory:/")
