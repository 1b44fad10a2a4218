"""Each commit's ``metadata.json`` holds its own snapshot and its parent,
not the table's whole history: a commit's cost and the kept metadata must
not grow with the number of commits before it."""

from __future__ import annotations

import os

from pyiceberg.table import StaticTable

from almanac import Catalog
from tests.data.support import append, create, table_data


def test_metadata_json_holds_the_current_snapshot_and_its_parent(cat: Catalog) -> None:
    table = create(cat)
    sizes = []
    for i in range(30):
        snapshot = append(cat, [i])
        sizes.append(os.path.getsize(snapshot.metadata))
    location = table_data(cat).metadata_location(table.id)
    assert location is not None
    metadata = StaticTable.from_metadata(location).metadata
    assert len(metadata.snapshots) == 2
    assert len(metadata.metadata_log) == 1
    assert sizes[-1] <= sizes[2] * 1.1
    # pyiceberg alone reads the current snapshot and, one step back, its parent.
    iceberg = StaticTable.from_metadata(location)
    current = iceberg.current_snapshot()
    assert current is not None and current.parent_snapshot_id is not None
    assert sorted(iceberg.scan().to_arrow().column("ID").to_pylist()) == list(range(30))
    parent = iceberg.scan(snapshot_id=current.parent_snapshot_id).to_arrow()
    assert sorted(parent.column("ID").to_pylist()) == list(range(29))
    # Every kept record still reads its own rows.
    data = table_data(cat)
    for n, snap in enumerate(data.history(table.id), start=1):
        assert len(snap.files) == n
