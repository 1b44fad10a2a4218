"""``make demo``: build a small catalog through SQL, evolve it, and show two
versions side by side plus the history of every version."""

from __future__ import annotations

import itertools
import sys
import tempfile
from pathlib import Path

import almanac
from almanac.clock import to_datetime
from almanac.entries import ObjectIdGenUpdate
from almanac.serialization import encode_snapshot
from almanac.snapshot import CatalogSnapshot

SETUP = """
CREATE ZONE SALES_ZONE WITH (PARTITIONS=16, REPLICAS=3, STORAGE_PROFILES='fast,default');
CREATE SCHEMA SALES;
CREATE TABLE SALES.CUSTOMERS (
    ID INT64 PRIMARY KEY,
    NAME VARCHAR(100) NOT NULL,
    COUNTRY VARCHAR(2)
) ZONE SALES_ZONE;
CREATE TABLE SALES.ORDERS (
    ID INT64,
    CUSTOMER_ID INT64,
    AMOUNT DECIMAL(10, 2),
    PLACED TIMESTAMP(3),
    PRIMARY KEY USING SORTED (CUSTOMER_ID, ID)
) COLOCATE BY (CUSTOMER_ID) ZONE SALES_ZONE STORAGE PROFILE 'fast';
"""

EVOLUTION = [
    "CREATE INDEX ORDERS_BY_PLACED ON SALES.ORDERS USING SORTED (PLACED DESC)",
    "ALTER TABLE SALES.ORDERS ADD COLUMN STATUS VARCHAR(16) NOT NULL DEFAULT 'NEW'",
    "ALTER TABLE SALES.ORDERS ALTER COLUMN AMOUNT SET DATA TYPE DECIMAL(18, 2)",
    "ALTER TABLE SALES.CUSTOMERS RENAME TO CLIENTS; ALTER TABLE SALES.CLIENTS DROP COLUMN COUNTRY",
    "ALTER ZONE SALES_ZONE SET (REPLICAS=5)",
]


def describe(snap: CatalogSnapshot) -> list[str]:
    """A plain-text listing of one catalog version."""
    lines = [f"version {snap.version} (active {to_datetime(snap.activation_time):%H:%M:%S.%f})"]
    for zone in snap.zones():
        default = " [default]" if zone.id == snap.default_zone_id else ""
        lines.append(
            f"zone {zone.name}{default}: {zone.partitions} partitions, "
            f"{zone.replicas} replicas, quorum {zone.quorum_size}"
        )
    for schema in snap.schemas():
        lines.append(f"schema {schema.name}")
        for table in snap.tables(schema.name):
            lines.append(f"  table {table.name} (v{table.table_version}, id {table.id})")
            for col in table.columns:
                params = [p for p in (col.precision, col.scale, col.length) if p is not None]
                ptext = f"({', '.join(map(str, params))})" if params else ""
                null = "" if col.nullable else " NOT NULL"
                key = " PK" if col.name in table.primary_key else ""
                lines.append(f"    {col.name} {col.type.sql_name}{ptext}{null}{key}")
            for index in snap.indexes(table.id):
                cols = [
                    name
                    if not index.collations or index.collations[i].ascending
                    else f"{name} DESC"
                    for i, name in enumerate(index.columns)
                ]
                lines.append(
                    f"    index {index.name} {index.kind.name} ({', '.join(cols)}) "
                    f"{index.status.name}"
                )
    return lines


def side_by_side(left: list[str], right: list[str], width: int = 58) -> str:
    rows = itertools.zip_longest(left, right, fillvalue="")
    return "\n".join(f"{a[:width]:<{width}} | {b}" for a, b in rows)


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(tempfile.mkdtemp(prefix="almanac-demo-"))
    print(f"Catalog directory (embedded SQLite metastore): {root}")
    with almanac.connect(str(root)) as cat:
        first = cat.sql(SETUP)
        print(f"Setup script committed as one version: {first}")
        for statement in EVOLUTION:
            version = cat.sql(statement)
            print(f"  v{version}: {statement}")
        latest = encode_snapshot(cat.catalog())
    with almanac.connect(str(root)) as cat:
        same = encode_snapshot(cat.catalog()) == latest
        print(f"Reopened: version {cat.latest_version}, byte-identical catalog: {same}")
        print()
        print(side_by_side(describe(cat.catalog(first)), describe(cat.catalog())))
        print()
        print("History:")
        for info in cat.history():
            kinds = ", ".join(
                type(e).__name__
                for e in info.update.entries
                if not isinstance(e, ObjectIdGenUpdate)
            )
            print(f"  v{info.version} at {to_datetime(info.activation_time):%H:%M:%S.%f}: {kinds}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
