"""Damaged Iceberg metadata in the warehouse (a truncated, emptied or
overwritten ``metadata.json``, manifest list or manifest) is a CatalogError
naming the file for every operation on that table; the janitor reports and
skips the table; the other tables keep working."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from almanac import AddColumns, Catalog, CatalogError, ColumnDef, ColumnType, CorruptLogError
from almanac.data import TableData, expire_data, read_table, run_janitor, write_table
from tests.data.support import append, connect, create, ids_of, rows


def _local(path: str) -> Path:
    return Path(path.removeprefix("file:"))


def _current_files(cat: Catalog, table_id: int) -> dict[str, Path]:
    data = TableData.for_catalog(cat)
    location = data.metadata_location(table_id)
    assert location is not None
    metadata = data.iceberg.metadata(location)
    snapshot = metadata.current_snapshot()
    assert snapshot is not None
    manifests = data.iceberg.manifests(metadata)
    return {
        "metadata": _local(location),
        "manifest_list": _local(snapshot.manifest_list),
        "manifest": _local(manifests[0].manifest_path),
    }


DAMAGES: dict[str, Callable[[bytes], bytes]] = {
    "truncated": lambda b: b[: len(b) // 2],
    "emptied": lambda b: b"",
    "garbage": lambda b: bytes(255 - c for c in b),
}


@pytest.mark.parametrize("kind", ["metadata", "manifest_list", "manifest"])
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_damaged_iceberg_metadata_is_a_catalog_error_naming_the_file(
    tmp_path: Path, kind: str, damage: str
) -> None:
    target = str(tmp_path / "data")
    with connect(target) as cat:
        broken = create(cat)
        append(cat, [1, 2])
        append(cat, [3])
        create(cat, "OK")
        append(cat, [5], name="OK")
        path = _current_files(cat, broken.id)[kind]
    path.write_bytes(DAMAGES[damage](path.read_bytes()))
    with connect(target) as cat:  # nothing parsed is cached
        calls: list[Callable[[], object]] = [
            lambda: read_table(cat, "T"),
            lambda: write_table(cat, "T", rows([9])),
            lambda: expire_data(cat, "T", older_than=cat.clock.now()),
        ]
        for call in calls:
            with pytest.raises(CatalogError) as info:
                call()
            assert path.name in str(info.value)
        report = run_janitor(cat, grace_s=0)
        assert path.name in report.errors[broken.id]
        assert path.exists()
        cat.execute([AddColumns(table="T", columns=(ColumnDef(name="Z", type=ColumnType.INT32),))])
        assert ids_of(read_table(cat, "OK")) == [5]
        append(cat, [6], name="OK")
        assert ids_of(read_table(cat, "OK")) == [5, 6]


def _point_nowhere(metadata: dict[str, Any]) -> None:
    metadata["current-snapshot-id"] = 12345


def _point_to_the_parent(metadata: dict[str, Any]) -> None:
    metadata["current-snapshot-id"] = metadata["snapshots"][0]["snapshot-id"]


@pytest.mark.parametrize("edit", [_point_nowhere, _point_to_the_parent])
def test_a_metadata_json_naming_another_current_snapshot_is_refused(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None]
) -> None:
    """A ``metadata.json`` that still parses but names another current
    snapshot (or none) must not read as an empty or older table, take a
    commit on top, or let the janitor take the files it no longer names."""
    target = str(tmp_path / "data")
    with connect(target) as cat:
        broken = create(cat)
        append(cat, [1, 2])
        append(cat, [3])
        path = _current_files(cat, broken.id)["metadata"]
        current = TableData.for_catalog(cat).current(broken.id)
        assert current is not None
        files = [Path(f.path) for f in current.files]
    metadata = json.loads(path.read_text())
    edit(metadata)
    path.write_text(json.dumps(metadata))
    with connect(target) as cat:
        for call in (
            lambda: read_table(cat, "T"),
            lambda: write_table(cat, "T", rows([9])),
        ):
            with pytest.raises(CorruptLogError, match=re.escape(path.name)):
                call()
        report = run_janitor(cat, grace_s=0)
        assert path.name in report.errors[broken.id]
        assert all(f.exists() for f in files)
