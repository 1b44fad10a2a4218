"""A version's summary says in plain words what it changed, one entry kind
at a time, and an entry kind without its own words still reads as words."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

import almanac
from almanac import Catalog
from almanac.model.entries import (
    IndexBuildStarted,
    IndexMadeAvailable,
    IndexStopped,
    ObjectIdsReserved,
    TableDataCommitted,
    UpdateEntry,
    VersionedUpdate,
)
from almanac.model.summary import (
    Names,
    describe_entry,
    entry_kinds_without_wording,
    summarize_update,
)


@pytest.fixture
def cat() -> Iterator[Catalog]:
    with almanac.connect("memory://") as catalog:
        catalog.sql("CREATE SCHEMA SALES")
        catalog.sql(
            "CREATE TABLE SALES.ORDERS (ID INT64 PRIMARY KEY, CUSTOMER VARCHAR(100) NOT NULL, "
            "TOTAL DECIMAL(12, 2) DEFAULT 0)"
        )
        yield catalog


def said(cat: Catalog, script: str) -> str:
    cat.sql(script)
    return cat.describe(cat.latest_version).split(": ", 1)[1]


@pytest.mark.parametrize(
    ("script", "words"),
    [
        (
            "ALTER TABLE SALES.ORDERS ADD COLUMN STATUS VARCHAR(16)",
            "added column STATUS STRING(16) to SALES.ORDERS",
        ),
        (
            "ALTER TABLE SALES.ORDERS ADD COLUMN A INT32 NOT NULL DEFAULT 1; "
            "ALTER TABLE SALES.ORDERS ADD COLUMN B BOOLEAN",
            "added column A INT32 NOT NULL DEFAULT 1 to SALES.ORDERS, "
            "added column B BOOLEAN to SALES.ORDERS",
        ),
        ("ALTER TABLE SALES.ORDERS DROP COLUMN TOTAL", "dropped column TOTAL from SALES.ORDERS"),
        (
            "ALTER TABLE SALES.ORDERS ALTER COLUMN TOTAL SET DEFAULT 5",
            "altered column TOTAL of SALES.ORDERS: default 0 → 5",
        ),
        (
            "ALTER TABLE SALES.ORDERS RENAME COLUMN TOTAL TO AMOUNT",
            "altered column TOTAL of SALES.ORDERS: renamed to AMOUNT",
        ),
        ("ALTER TABLE SALES.ORDERS RENAME TO O2", "renamed table SALES.ORDERS to O2"),
        ("DROP TABLE SALES.ORDERS", "dropped table SALES.ORDERS"),
        (
            "CREATE INDEX BY_CUSTOMER ON SALES.ORDERS (CUSTOMER)",
            "created SORTED index BY_CUSTOMER on SALES.ORDERS (CUSTOMER ASC)",
        ),
        (
            "CREATE TABLE SALES.R (CODE VARCHAR(8) PRIMARY KEY, NAME VARCHAR(20))",
            "created table SALES.R (CODE STRING(8) NOT NULL, NAME STRING(20)) "
            "with primary key (CODE)",
        ),
        ("CREATE SCHEMA HR", "created schema HR"),
        ("DROP SCHEMA SALES CASCADE", "dropped table SALES.ORDERS, dropped schema SALES"),
        (
            "CREATE ZONE Z WITH (PARTITIONS = 4, REPLICAS = 1)",
            "created zone Z (4 partitions, 1 replica, STRONG consistency)",
        ),
        (
            "ALTER TABLE SALES.ORDERS SET (STALE_ROWS_FRACTION = 0.5)",
            "set properties of SALES.ORDERS: stale_rows_fraction 0.2 → 0.5",
        ),
        (
            "ALTER TABLE SALES.ORDERS ALTER COLUMN CUSTOMER DROP NOT NULL",
            "altered column CUSTOMER of SALES.ORDERS: now nullable",
        ),
        (
            "CREATE TABLE SALES.E (ID INT64, TS TIMESTAMP) "
            "PARTITIONED BY (bucket(8, ID), days(TS))",
            "created table SALES.E (ID INT64, TS TIMESTAMP(6)), "
            "partitioned by (bucket(8, ID), day(TS))",
        ),
        (
            "ALTER TABLE SALES.ORDERS ADD PARTITION FIELD bucket(4, ID) AS B",
            "added partition spec 1 (bucket(4, ID) AS B) to SALES.ORDERS, "
            "made partition spec 1 the default of SALES.ORDERS",
        ),
        (
            "ALTER TABLE SALES.ORDERS WRITE ORDERED BY CUSTOMER DESC",
            "added sort order 1 (CUSTOMER DESC NULLS LAST) to SALES.ORDERS, "
            "made sort order 1 the default of SALES.ORDERS",
        ),
    ],
)
def test_each_change_says_what_happened(cat: Catalog, script: str, words: str) -> None:
    assert said(cat, script) == words


def test_zones_keys_and_soft_drops_in_words(cat: Catalog) -> None:
    cat.sql("CREATE ZONE Z WITH (PARTITIONS = 4, REPLICAS = 1)")
    assert said(cat, "ALTER ZONE Z SET (REPLICAS = 3, QUORUM_SIZE = 2)") == (
        "altered zone Z: replicas 1 → 3, quorum size 1 → 2"
    )
    assert said(cat, "ALTER ZONE Z RENAME TO Y") == "altered zone Z: renamed to Y"
    assert said(cat, "ALTER ZONE Y SET DEFAULT") == "made zone Y the default"
    cat.sql('ALTER ZONE "Default" SET DEFAULT')
    assert said(cat, "DROP ZONE Y") == "dropped zone Y"
    assert said(cat, "ALTER TABLE SALES.ORDERS DROP PRIMARY KEY") == (
        "removed index ORDERS_PK, dropped the primary key of SALES.ORDERS"
    )
    assert said(cat, "ALTER TABLE SALES.ORDERS SET PRIMARY KEY (ID, CUSTOMER)") == (
        "set the primary key of SALES.ORDERS to (ID, CUSTOMER), created primary-key "
        "HASH index ORDERS_PK on SALES.ORDERS (ID, CUSTOMER)"
    )
    cat.sql("CREATE INDEX BY_CUSTOMER ON SALES.ORDERS (CUSTOMER)")
    assert said(cat, "ALTER INDEX SALES.BY_CUSTOMER RENAME TO WHO") == (
        "renamed index BY_CUSTOMER to WHO"
    )
    assert said(cat, "DROP TABLE SALES.ORDERS WITH (RESERVE = '2h')") == (
        "dropped table SALES.ORDERS, recoverable for 2h"
    )
    assert said(cat, "RECOVER TABLE SALES.ORDERS") == "recovered table SALES.ORDERS"
    cat.sql("DROP TABLE SALES.ORDERS WITH (RESERVE = '2h')")
    assert said(cat, "PURGE TABLE SALES.ORDERS") == "purged table SALES.ORDERS"


def test_write_unordered_in_words(cat: Catalog) -> None:
    cat.sql("ALTER TABLE SALES.ORDERS WRITE ORDERED BY ID")
    assert said(cat, "ALTER TABLE SALES.ORDERS WRITE UNORDERED") == (
        "made SALES.ORDERS write unordered"
    )


def test_index_status_steps_in_words(cat: Catalog) -> None:
    cat.sql("CREATE INDEX BY_CUSTOMER ON SALES.ORDERS (CUSTOMER)")
    version = cat.catalog()
    index = version.index("BY_CUSTOMER", "SALES")
    assert index is not None
    names = Names(version, version)
    assert describe_entry(IndexBuildStarted(index.id), names) == (
        "started building index BY_CUSTOMER"
    )
    assert describe_entry(IndexMadeAvailable(index.id), names) == "made index BY_CUSTOMER available"
    assert describe_entry(IndexStopped(index.id), names) == "dropped index BY_CUSTOMER (stopping)"
    assert describe_entry(ObjectIdsReserved(3), names) is None


@dataclass(frozen=True, slots=True)
class PartitionSpecSet(UpdateEntry):
    """An entry kind a summary has no words for (as a new one starts out)."""

    table_id: int

    def object_id(self) -> int:
        return self.table_id


def test_an_entry_without_its_own_words_still_reads_as_words(cat: Catalog) -> None:
    version = cat.catalog()
    table = version.table("ORDERS", "SALES")
    assert table is not None
    update = VersionedUpdate(
        version.version, 0, 0, (ObjectIdsReserved(1), PartitionSpecSet(table.id))
    )
    assert summarize_update(update, version, version) == "partition spec set: SALES.ORDERS"


def test_every_entry_kind_has_its_own_words() -> None:
    """A new entry kind gets one small function in almanac/model/summary.py
    (``@wording(TheEntry)``); until then history shows its class name's words."""
    assert entry_kinds_without_wording() == []


def _committed(table_id: int, operation: str, *counts: int) -> TableDataCommitted:
    return TableDataCommitted(table_id, 7, operation, "/w/metadata/00007.metadata.json", *counts)


@pytest.mark.parametrize(
    ("operation", "counts", "words"),
    [
        ("append", (1000, 0, 3, 0), "append 1,000 rows to SALES.ORDERS (3 files)"),
        ("append", (1, 0, 1, 0), "append 1 row to SALES.ORDERS (1 file)"),
        (
            "overwrite",
            (1000, 200, 3, 2),
            "overwrite SALES.ORDERS: 1,000 rows (3 files) replace 200 rows (2 files)",
        ),
        ("overwrite", (5, 0, 1, 0), "overwrite SALES.ORDERS: 5 rows (1 file) replace nothing"),
        ("delete", (0, 10, 1, 1), "delete 10 rows from SALES.ORDERS"),
        ("delete", (0, 0, 1, 0), "delete rows from SALES.ORDERS"),
        ("replace", (1000, 1000, 2, 10), "compact SALES.ORDERS: 10 files into 2 (1,000 rows)"),
        ("refs", (), "move refs of SALES.ORDERS"),
        ("expire", (), "expire old snapshots of SALES.ORDERS"),
        ("metadata", (), "change the Iceberg metadata of SALES.ORDERS"),
    ],
)
def test_data_commits_in_words(
    cat: Catalog, operation: str, counts: tuple[int, ...], words: str
) -> None:
    version = cat.catalog()
    table = version.table("ORDERS", "SALES")
    assert table is not None
    entry = _committed(table.id, operation, *counts)
    assert describe_entry(entry, Names(version, version)) == words


def test_a_data_commit_names_a_table_the_version_dropped(cat: Catalog) -> None:
    """A version that commits a table's data and drops it (or any reader
    holding only the version before) still names the table."""
    before = cat.catalog()
    table = before.table("ORDERS", "SALES")
    assert table is not None
    cat.sql("DROP TABLE SALES.ORDERS")
    after = cat.catalog()
    assert after.table("ORDERS", "SALES") is None
    entry = _committed(table.id, "append", 3, 0, 1, 0)
    update = VersionedUpdate(after.version, 0, 0, (entry,))
    assert summarize_update(update, before, after) == "append 3 rows to SALES.ORDERS (1 file)"
