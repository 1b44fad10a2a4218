"""A catalog attached to a Spark session as Python-source tables (`native=False`):
plain spark.sql reads and writes them."""

from __future__ import annotations

from typing import Any

import pytest

import almanac.spark
from almanac.catalog import Catalog
from tests.spark.helpers import rows

SETUP = """
CREATE ZONE SMALL WITH (PARTITIONS=2);
CREATE SCHEMA SALES;
CREATE TABLE SALES.CUSTOMERS (ID INT64 PRIMARY KEY, NAME VARCHAR(20) NOT NULL) ZONE SMALL;
CREATE TABLE SALES.ORDERS (ID INT64 PRIMARY KEY, CUSTOMER_ID INT64, AMOUNT DECIMAL(10, 2))
    ZONE SMALL;
CREATE TABLE CLOCKS (ID INT32 PRIMARY KEY, T TIME) ZONE SMALL
"""


def _fill(spark: Any, target: str) -> None:
    spark.sql("INSERT INTO sales.customers VALUES (1, 'ann'), (2, 'bob'), (3, 'cy')")
    spark.sql(
        "INSERT INTO sales.orders VALUES (10, 1, 5.50), (11, 1, 4.50), (12, 2, 1.00), (13, 9, 7)"
    )


def test_select_join_insert(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    result = almanac.spark.attach(spark, target, native=False)
    assert sorted(result.attached) == ["sales.customers", "sales.orders"]
    assert "PUBLIC.CLOCKS" in result.skipped and "TIME" in result.skipped["PUBLIC.CLOCKS"]
    _fill(spark, target)
    joined = spark.sql(
        "SELECT c.name, sum(o.amount) FROM sales.orders o JOIN sales.customers c "
        "ON o.customer_id = c.id GROUP BY c.name"
    )
    assert [(n, float(a)) for n, a in rows(joined)] == [("ann", 10.0), ("bob", 1.0)]

    spark.sql("INSERT INTO sales.orders SELECT id + 100, customer_id, amount FROM sales.orders")
    assert spark.sql("SELECT count(*) FROM sales.orders").collect()[0][0] == 8
    spark.sql("INSERT OVERWRITE sales.orders SELECT * FROM sales.orders WHERE id > 100")
    assert [r[0] for r in rows(spark.sql("SELECT id FROM sales.orders"))] == [110, 111, 112, 113]


def test_insert_null_into_not_null_fails(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    almanac.spark.attach(spark, target, native=False)
    with pytest.raises(Exception, match=r"Column 'NAME'.*NOT NULL"):
        spark.sql("INSERT INTO sales.customers VALUES (1, NULL)")
    assert spark.sql("SELECT count(*) FROM sales.customers").collect()[0][0] == 0


def test_attach_follows_catalog_changes(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    almanac.spark.attach(spark, target, native=False)
    _fill(spark, target)
    before = cat.latest_version
    cat.sql("ALTER TABLE SALES.ORDERS ADD COLUMN NOTE VARCHAR(10)")
    cat.sql("DROP TABLE SALES.CUSTOMERS")
    result = almanac.spark.attach(spark, target, native=False)
    assert result.dropped == ["sales.customers"]
    assert not spark.catalog.tableExists("sales.customers")
    assert spark.table("sales.orders").columns == ["ID", "CUSTOMER_ID", "AMOUNT", "NOTE"]
    spark.sql(
        "INSERT OVERWRITE sales.orders SELECT id, customer_id, amount, concat('n', id) "
        "FROM sales.orders"
    )
    assert [r[3] for r in rows(spark.table("sales.orders"))] == ["n10", "n11", "n12", "n13"]

    # Unchanged tables are kept as they are; an older version attaches read-only.
    again = almanac.spark.attach(spark, target, native=False)
    assert again.attached == ["sales.orders"] and again.dropped == []
    old = almanac.spark.attach(spark, target, version=before, native=False)
    assert sorted(old.attached) == ["sales.customers", "sales.orders"]
    assert spark.table("sales.orders").columns == ["ID", "CUSTOMER_ID", "AMOUNT"]
    assert spark.sql("SELECT count(*) FROM sales.customers").collect()[0][0] == 3
    with pytest.raises(Exception, match=r"cannot be written"):
        spark.sql("INSERT INTO sales.customers VALUES (4, 'dee')")


def test_attached_table_survives_a_rename(spark: Any, cat: Catalog, target: str) -> None:
    cat.sql(SETUP)
    almanac.spark.attach(spark, target, native=False)
    _fill(spark, target)
    cat.sql("ALTER TABLE SALES.CUSTOMERS RENAME TO CLIENTS")
    # Bound by table id: the old Spark name still reads and writes the same table.
    assert spark.sql("SELECT count(*) FROM sales.customers").collect()[0][0] == 3
    spark.sql("INSERT INTO sales.customers VALUES (4, 'dee')")
    almanac.spark.attach(spark, target, native=False)
    assert spark.sql("SELECT count(*) FROM sales.clients").collect()[0][0] == 4
    assert not spark.catalog.tableExists("sales.customers")
