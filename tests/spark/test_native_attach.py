"""attach: catalog tables as views over Spark's own Parquet scan. SELECT is
native; INSERT through plain spark.sql is refused and writes nothing."""

from __future__ import annotations

import decimal
from typing import Any

import pyarrow as pa
import pytest

import almanac.spark
from almanac.catalog import Catalog
from almanac.data import TableData, plan_scan, write_table
from almanac.spark.session import HIDDEN_DATABASE
from tests.spark.helpers import parquet_files, rows

SETUP = """
CREATE ZONE SMALL WITH (PARTITIONS=2);
CREATE SCHEMA SALES;
CREATE TABLE SALES.CUSTOMERS (ID INT64 PRIMARY KEY, NAME VARCHAR(20) NOT NULL) ZONE SMALL;
CREATE TABLE SALES.ORDERS (ID INT64 PRIMARY KEY, CUSTOMER_ID INT64, AMOUNT DECIMAL(10, 2))
    ZONE SMALL;
CREATE TABLE SALES.EMPTY (ID INT64 PRIMARY KEY, NOTE VARCHAR(5)) ZONE SMALL;
CREATE ZONE ONE WITH (PARTITIONS=1);
CREATE TABLE SALES.SINGLE (ID INT64 PRIMARY KEY) ZONE ONE;
CREATE TABLE CLOCKS (ID INT32 PRIMARY KEY, T TIME) ZONE SMALL
"""


def _fill(cat: Catalog) -> None:
    write_table(
        cat, "CUSTOMERS", pa.table({"ID": [1, 2, 3], "NAME": ["ann", "bob", "cy"]}), "SALES"
    )
    amounts = [decimal.Decimal(a) for a in ("5.5", "4.5", "1", "7")]
    orders = {"ID": [10, 11, 12, 13], "CUSTOMER_ID": [1, 1, 2, 9], "AMOUNT": amounts}
    write_table(cat, "ORDERS", pa.table(orders), "SALES")
    write_table(cat, "SINGLE", pa.table({"ID": [5]}), "SALES")


def _plan(spark: Any, text: str) -> str:
    return str(spark.sql(text)._jdf.queryExecution().executedPlan().toString())


def _hidden(spark: Any) -> set[str]:
    """The hidden tables in the session (other tests' catalogs included;
    temporary views, which every database lists, left out); none before the
    first native attach of this session."""
    if not spark.catalog.databaseExists(HIDDEN_DATABASE):
        return set()
    return {t.name for t in spark.catalog.listTables(HIDDEN_DATABASE) if not t.isTemporary}


def test_select_is_native_and_insert_is_refused(spark: Any, cat: Catalog, target: str) -> None:
    others = _hidden(spark)
    cat.sql(SETUP)
    _fill(cat)
    result = almanac.spark.attach(spark, target)
    assert sorted(result.attached) == [
        "sales.customers",
        "sales.empty",
        "sales.orders",
        "sales.single",
    ]
    assert "TIME" in result.skipped["PUBLIC.CLOCKS"]
    query = (
        "SELECT c.name, sum(o.amount) FROM sales.orders o JOIN sales.customers c "
        "ON o.customer_id = c.id GROUP BY c.name"
    )
    assert [(n, float(a)) for n, a in rows(spark.sql(query))] == [("ann", 10.0), ("bob", 1.0)]
    plan = _plan(spark, query)
    assert "FileScan parquet" in plan and "PythonDataSource" not in plan
    assert spark.table("sales.empty").dtypes == [("ID", "bigint"), ("NOTE", "string")]
    assert spark.table("sales.empty").collect() == []
    assert rows(spark.table("sales.single")) == [(5,)]

    before = parquet_files(cat)
    for statement in ("INSERT INTO", "INSERT OVERWRITE"):
        for name in ("sales.orders", "sales.single", "sales.empty"):
            with pytest.raises(Exception, match=r"EXPECT_TABLE_NOT_VIEW"):
                spark.sql(f"{statement} {name} SELECT * FROM {name}")
    hidden = sorted(_hidden(spark) - others)
    assert len(hidden) == 3  # one group each for orders, customers and single
    for table in hidden:
        for statement in ("INSERT INTO", "INSERT OVERWRITE"):
            with pytest.raises(Exception, match=r"MULTI_PATH"):
                hidden_name = f"{HIDDEN_DATABASE}.{table}"
                spark.sql(f"{statement} {hidden_name} SELECT * FROM {hidden_name}")
    assert parquet_files(cat) == before
    assert rows(spark.table("sales.single")) == [(5,)]
    assert spark.sql("SELECT count(*) FROM sales.orders").collect()[0][0] == 4


def test_attach_fills_defaults_and_follows_changes(spark: Any, cat: Catalog, target: str) -> None:
    others = _hidden(spark)
    cat.sql(SETUP)
    _fill(cat)
    almanac.spark.attach(spark, target)
    first = _hidden(spark) - others
    v_add = cat.sql("ALTER TABLE SALES.ORDERS ADD COLUMN PRIORITY INT32 DEFAULT 3").version
    write_table(
        cat,
        "ORDERS",
        pa.table({"ID": [14], "CUSTOMER_ID": [2], "AMOUNT": [decimal.Decimal(2)], "PRIORITY": [1]}),
        "SALES",
    )
    cat.sql("DROP TABLE SALES.CUSTOMERS")
    result = almanac.spark.attach(spark, target)
    assert result.dropped == ["sales.customers"]
    assert not spark.catalog.tableExists("sales.customers")
    got = rows(spark.sql("SELECT id, priority FROM sales.orders"))
    assert got == [(10, 3), (11, 3), (12, 3), (13, 3), (14, 1)]
    assert spark.sql("SELECT count(*) FROM sales.orders WHERE priority = 3").collect()[0][0] == 4
    now = _hidden(spark) - others
    # The single table's hidden table is kept; the changed and dropped ones are gone.
    assert len(first & now) == 1 and len(now) == 3

    again = almanac.spark.attach(spark, target)
    assert _hidden(spark) - others == now
    assert "sales.orders" in again.attached and again.dropped == []

    old = almanac.spark.attach(spark, target, version=v_add - 1)
    assert "sales.customers" in old.attached
    assert spark.table("sales.orders").columns == ["ID", "CUSTOMER_ID", "AMOUNT"]
    assert spark.sql("SELECT count(*) FROM sales.orders").collect()[0][0] == 4


def test_attach_thousands_of_files(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(
        "CREATE ZONE WIDE WITH (PARTITIONS=2500); CREATE SCHEMA S; "
        "CREATE TABLE S.MANY (ID INT64 PRIMARY KEY, V INT32) COLOCATE BY (ID) ZONE WIDE"
    )
    n = 25_000
    write_table(cat, "MANY", pa.table({"ID": list(range(n)), "V": [i % 7 for i in range(n)]}), "S")
    plan = plan_scan(cat, TableData.for_catalog(cat), "MANY", "S")
    assert len(plan.files) >= 2000
    almanac.spark.attach(spark, target)
    total = spark.sql("SELECT count(*), sum(id), sum(v) FROM s.many").collect()[0]
    assert tuple(total) == (n, n * (n - 1) // 2, sum(i % 7 for i in range(n)))
    assert len(spark.table("s.many").inputFiles()) == len(plan.files)
    native = almanac.spark.read_table(spark, target, "S.MANY")
    assert native.count() == n


def test_python_source_tables_stay_available(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    _fill(cat)
    almanac.spark.attach(spark, target)
    result = almanac.spark.attach(spark, target, native=False)
    assert "sales.orders" in result.attached
    spark.sql("INSERT INTO sales.orders VALUES (20, 3, 1.25)")
    assert spark.sql("SELECT count(*) FROM sales.orders").collect()[0][0] == 5
    source_plan = _plan(spark, "SELECT * FROM sales.orders")
    assert "(Python)" in source_plan and "FileScan parquet" not in source_plan
    almanac.spark.attach(spark, target)
    assert spark.sql("SELECT count(*) FROM sales.orders").collect()[0][0] == 5
    assert "FileScan parquet" in _plan(spark, "SELECT * FROM sales.orders")
