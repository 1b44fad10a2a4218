"""Serialization throughput on a 10,000-table snapshot, next to ``pickle`` of the
same snapshot in the same run (these machines are noisy; ratios travel better).

Run: ``PYTHONPATH=src .venv/bin/python bench/bench_serialization.py [--tables N]``.
"""

from __future__ import annotations

import argparse
import decimal
import gc
import pickle
import statistics
import time
from collections.abc import Callable

from almanac.model.catalog_version import CatalogVersion
from almanac.model.datatypes import ColumnType
from almanac.model.descriptors import (
    Collation,
    Column,
    ConsistencyMode,
    ConstantDefault,
    FunctionDefault,
    Index,
    IndexKind,
    IndexStatus,
    Schema,
    Table,
    Zone,
)
from almanac.model.entries import (
    DefaultZoneSet,
    IndexCreated,
    ObjectIdsReserved,
    SchemaCreated,
    TableCreated,
    UpdateEntry,
    VersionedUpdate,
    ZoneCreated,
    apply_update,
    pk_index_name,
)
from almanac.serialization import decode_catalog, decode_update, encode_catalog, encode_update

REPEATS = 7
BATCH = 500


def median_seconds(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    samples = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def table_entries(table_id: int, schema_id: int, zone_id: int, name: str) -> list[UpdateEntry]:
    """A five-column table and its primary-key index, as ``CreateTable`` would make them."""
    columns = (
        Column(0, "ID", ColumnType.INT64, nullable=False),
        Column(1, "NAME", ColumnType.STRING, length=64),
        Column(
            2,
            "PRICE",
            ColumnType.DECIMAL,
            precision=12,
            scale=2,
            default=ConstantDefault(decimal.Decimal("0.00")),
        ),
        Column(3, "CREATED", ColumnType.TIMESTAMP, precision=6),
        Column(4, "KEY", ColumnType.UUID, default=FunctionDefault("RAND_UUID")),
    )
    collations = (Collation.ASC_NULLS_LAST,)
    table = Table(
        id=table_id,
        schema_id=schema_id,
        name=name,
        zone_id=zone_id,
        columns=columns,
        primary_key=("ID",),
        primary_key_kind=IndexKind.SORTED,
        primary_key_collations=collations,
        colocation=("ID",),
        primary_key_index_id=table_id + 1,
        storage_profile="default",
        next_column_id=len(columns),
    )
    index = Index(
        id=table_id + 1,
        name=pk_index_name(name),
        table_id=table_id,
        schema_id=schema_id,
        unique=True,
        kind=IndexKind.SORTED,
        columns=("ID",),
        collations=collations,
        status=IndexStatus.AVAILABLE,
        primary_key=True,
    )
    return [ObjectIdsReserved(2), TableCreated(table), IndexCreated(index)]


def build_catalog(tables: int) -> tuple[CatalogVersion, VersionedUpdate]:
    """Applies the entries a real log would hold, ``BATCH`` tables per version."""
    at = CatalogVersion.empty()
    commit_time = 1_700_000_000_000 << 16

    def commit(entries: list[UpdateEntry]) -> VersionedUpdate:
        nonlocal at
        update = VersionedUpdate(at.version + 1, commit_time + at.version, 0, tuple(entries))
        at = apply_update(at, update)
        return update

    zone = Zone(2, "Default", 25, 1, 1, 0, 2**31 - 1, "$[*]", ("default",), ConsistencyMode.STRONG)
    last = commit([ObjectIdsReserved(3), SchemaCreated(Schema(1, "PUBLIC")), ZoneCreated(zone)])
    last = commit([DefaultZoneSet(zone.id)])
    next_id = 3
    for start in range(0, tables, BATCH):
        entries: list[UpdateEntry] = []
        for i in range(start, min(start + BATCH, tables)):
            entries += table_entries(next_id, 1, zone.id, f"TABLE_{i:05d}")
            next_id += 2
        last = commit(entries)
    return at, last


def count_objects(version: CatalogVersion) -> int:
    """Descriptor objects the snapshot serializes (columns, defaults and properties too)."""
    nested = sum(
        len(t.columns) + 1 + sum(c.default is not None for c in t.columns)
        for t in version.tables_by_id.values()
    )
    return (
        len(version.schemas_by_id)
        + len(version.tables_by_id)
        + len(version.indexes_by_id)
        + len(version.zones_by_id)
        + nested
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tables", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args()

    snap, update = build_catalog(args.tables)
    data = encode_catalog(snap)
    assert decode_catalog(data) == snap, "snapshot does not round-trip"
    pickled = pickle.dumps(snap, protocol=pickle.HIGHEST_PROTOCOL)
    objects = count_objects(snap)
    mb = len(data) / 1e6

    enc = median_seconds(lambda: encode_catalog(snap), args.repeats)
    dec = median_seconds(lambda: decode_catalog(data), args.repeats)
    p_enc = median_seconds(lambda: pickle.dumps(snap, protocol=pickle.HIGHEST_PROTOCOL))
    p_dec = median_seconds(lambda: pickle.loads(pickled), args.repeats)

    print(
        f"snapshot: {args.tables:,} tables, {objects:,} objects, {len(data):,} bytes "
        f"(pickle {len(pickled):,} bytes); medians of {args.repeats} runs"
    )
    print(
        f"  encode: {enc * 1e3:7.1f} ms  {mb / enc:6.1f} MB/s  {objects / enc:11,.0f} objects/s"
        f"   pickle {p_enc * 1e3:6.1f} ms  ratio {enc / p_enc:4.1f}x"
    )
    print(
        f"  decode: {dec * 1e3:7.1f} ms  {mb / dec:6.1f} MB/s  {objects / dec:11,.0f} objects/s"
        f"   pickle {p_dec * 1e3:6.1f} ms  ratio {dec / p_dec:4.1f}x"
    )

    raw = encode_update(update)
    n = 20
    u_enc = median_seconds(lambda: [encode_update(update) for _ in range(n)]) / n
    u_dec = median_seconds(lambda: [decode_update(raw) for _ in range(n)]) / n
    print(
        f"update of {len(update.entries):,} entries ({len(raw):,} bytes): "
        f"encode {u_enc * 1e3:.2f} ms, decode {u_dec * 1e3:.2f} ms"
    )


if __name__ == "__main__":
    main()
