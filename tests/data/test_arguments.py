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
    Predicate,
    arrow_schema,
    arrow_type,
    conform,
    create_table_as,
    expire_data,
    output_schema,
    partition_column,
    read_table,
    run_janitor,
    table_partitions,
    tablets_of,
    write_table,
)
from tests.data.support import append, create


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
