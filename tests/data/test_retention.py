"""Every data commit is a catalog version, so the log's retention trims data
versions too: the janitor collects the data snapshots (and files) that no
available catalog version reads, and never one that a kept or pinned
version reads."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from pyiceberg.table import StaticTable

from almanac import Catalog, RetentionPolicy, VersionNotFoundError
from almanac.data import (
    DataSnapshot,
    JanitorReport,
    TableData,
    read_table,
    run_janitor,
    write_table,
)
from almanac.data.snapshots import snapshot_key
from almanac.iceberg import metadata_location
from almanac.model.entries import TableDataCommitted
from tests.data import workers
from tests.data.support import connect, create, data_keys, ids_of, own_files, rows

GUARD_S = 120  # a failure guard, not a duration


def _overwrite(cat: Catalog, ids: list[int]) -> tuple[int, DataSnapshot]:
    """An overwrite (so each version's data has files of its own) and its version."""
    snapshot = write_table(cat, "T", rows(ids), operation="overwrite")
    return cat.latest_version, snapshot


def _files(snapshot: DataSnapshot) -> list[Path]:
    return [Path(p) for p in [*own_files(snapshot), snapshot.metadata]]


def _check(cat: Catalog, made: list[tuple[int, DataSnapshot]], kept_from: int) -> None:
    """The versions before ``made[kept_from]`` are gone with their data
    snapshots and files; each later one reads its own rows and keeps its files."""
    for step, (version, snapshot) in enumerate(made):
        key = snapshot_key(snapshot.table_id, snapshot.snapshot_id)
        if step < kept_from:
            with pytest.raises(VersionNotFoundError):
                read_table(cat, "T", version=version)
            assert key not in data_keys(cat)
            assert not any(f.exists() for f in _files(snapshot)), step
        else:
            assert ids_of(read_table(cat, "T", version=version)) == [step]
            assert key in data_keys(cat)
            assert all(Path(p).exists() for p in own_files(snapshot)), step


def _iceberg_reads_every_listed_snapshot(target: str) -> None:
    table = StaticTable.from_metadata(metadata_location(target, "T"))
    for snapshot in table.metadata.snapshots:
        table.scan(snapshot_id=snapshot.snapshot_id).to_arrow()


def test_retention_trims_data_versions_and_the_janitor_collects_only_theirs(
    cat: Catalog, tmp_path: Path
) -> None:
    target = str(tmp_path / "data")
    create(cat)
    made = [_overwrite(cat, [step]) for step in range(6)]

    cat.retention = RetentionPolicy(keep_versions=1)
    with cat.pin(made[1][0]):
        assert cat.apply_retention() == made[1][0], "retention never passes a pin"
        report = run_janitor(cat, grace_s=0)
        assert report.errors == {}
        assert {str(f) for f in _files(made[0][1])} <= set(report.files_removed)
        _check(cat, made, kept_from=1)

    cat.retention = RetentionPolicy(keep_versions=3)
    assert cat.apply_retention() == made[3][0]
    assert run_janitor(cat, grace_s=0).errors == {}
    _check(cat, made, kept_from=3)
    _iceberg_reads_every_listed_snapshot(target)

    # Only the latest version is kept: the current snapshot's parent goes
    # too, and Iceberg's metadata stops listing it.
    cat.retention = RetentionPolicy(keep_versions=1)
    assert cat.apply_retention() == made[5][0]
    assert run_janitor(cat, grace_s=0).errors == {}
    _check(cat, made, kept_from=5)
    _iceberg_reads_every_listed_snapshot(target)
    replaced = made[5][1].metadata
    assert Path(replaced).exists(), "left to the next run's listing"
    assert run_janitor(cat, grace_s=0).files_removed == [replaced]
    assert run_janitor(cat, grace_s=0) == JanitorReport()
    assert ids_of(read_table(cat, "T")) == [5]
    write_table(cat, "T", rows([6]))
    _iceberg_reads_every_listed_snapshot(target)
    assert ids_of(read_table(cat, "T")) == [5, 6]


def test_retention_by_age_trims_data_versions_too(cat: Catalog) -> None:
    create(cat)
    made = [_overwrite(cat, [step]) for step in range(3)]
    cat.retention = RetentionPolicy(keep_seconds=0)
    assert cat.apply_retention() == made[2][0]
    assert run_janitor(cat, grace_s=0).errors == {}
    _check(cat, made, kept_from=2)


def test_appends_keep_the_files_later_versions_share(cat: Catalog) -> None:
    create(cat)
    snapshots = [write_table(cat, "T", rows([i])) for i in range(4)]
    cat.checkpoint_log()
    assert run_janitor(cat, grace_s=0).errors == {}
    assert ids_of(read_table(cat, "T")) == [0, 1, 2, 3]
    assert all(Path(p).exists() for s in snapshots for p in own_files(s))
    current = snapshot_key(snapshots[-1].table_id, snapshots[-1].snapshot_id)
    assert [k for k in data_keys(cat) if k.startswith("data.snapshot.")] == [current]


def test_appends_racing_retention_and_the_janitor_lose_nothing_a_kept_version_reads(
    tmp_path: Path,
) -> None:
    """Two processes append while a third trims the log to its last three
    versions and runs the janitor with no grace, in a loop: every row stays,
    every available version reads its own rows, and pyiceberg reads every
    snapshot it is offered."""
    target = str(tmp_path / "data")
    gate = tmp_path / "gate"
    gate.mkdir()
    with connect(target) as cat:
        table = create(cat)
        write_table(cat, "T", rows([0]))
        runs = workers.appenders_beside(
            target, gate, workers.retain_and_clean_until, (target, str(gate), 3), GUARD_S
        )
        assert runs >= 1
        cat.catch_up()
        assert ids_of(read_table(cat, "T")) == sorted(workers.APPENDED)
        assert run_janitor(cat, grace_s=0).errors == {}
        first, last = cat.earliest_version, cat.latest_version
        assert first > 2, "retention trimmed data versions"
        assert len(TableData.for_catalog(cat).records(table.id)) <= last - first + 1
        reads = [read_table(cat, "T", version=v).num_rows for v in range(first, last + 1)]
        added = [
            sum(isinstance(e, TableDataCommitted) for e in info.update.entries)
            for info in cat.history(first + 1)
        ]
        assert [b - a for a, b in itertools.pairwise(reads)] == added
        assert reads[-1] == len(workers.APPENDED)
        _iceberg_reads_every_listed_snapshot(target)
