"""A user's ``expire_data`` is a catalog version naming the table's current
snapshot. An append that lands while the expiry is being planned must not be
hidden by it: the expiry's version either builds on the append or retries,
so the latest version always pins the snapshot the table's pointer names.
The race matters when the expiry writes no new ``metadata.json`` (every
snapshot it expires is still held by a tag), since the rewrite is what
otherwise compares the pointer."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

from almanac.data import TableData, expire_data, read_table, write_table
from almanac.data.iceberg_write import IcebergWriter
from almanac.node.catalog import Catalog

from .tables import SCHEMA, batch

NAMESPACE = "EXPRACE"


def test_an_append_racing_an_expiry_stays_visible_at_the_latest_version(
    admin: RestCatalog, cat: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin.create_namespace(NAMESPACE)
    table = admin.create_table((NAMESPACE, "T"), SCHEMA)
    table.append(batch([(1, "a", 1)]))
    first = table.current_snapshot()
    assert first is not None
    table.append(batch([(2, "b", 2)]))
    table.manage_snapshots().create_tag(first.snapshot_id, "keep").commit()
    cat.catch_up()
    data = TableData.for_catalog(cat)
    found = cat.catalog().table("T", NAMESPACE)
    assert found is not None
    planned = IcebergWriter.write_without
    raced: list[int] = []

    def append_meanwhile(self: IcebergWriter, *args: Any) -> Any:
        # Between the expiry's reading of the chain and its commit: a real
        # append through Almanac, on this node.
        if not raced:
            row = pa.table(
                {
                    "ID": pa.array([3], pa.int64()),
                    "NAME": ["c"],
                    "QTY": pa.array([3], pa.int32()),
                }
            )
            raced.append(write_table(cat, "T", row, NAMESPACE).snapshot_id)
        return planned(self, *args)

    monkeypatch.setattr(IcebergWriter, "write_without", append_meanwhile)
    expire_data(cat, "T", NAMESPACE, older_than=cat.clock.now())
    monkeypatch.undo()
    assert raced
    pointer = data.current_record(found.id)
    assert pointer is not None
    assert cat.catalog().data_snapshot(found.id) == pointer.snapshot_id
    ids = sorted(read_table(cat, "T", NAMESPACE).column("ID").to_pylist())
    assert ids == [1, 2, 3]
