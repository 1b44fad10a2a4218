"""Races on an attached data commit, on real SQLite and a real etcd: what
the check of its entries read (the named snapshot's record, the table's
pointer) can change before the version's transaction runs. An expiry and
the janitor removing the record, or another node's append moving the
pointer, in that window must make the attempt fail (``ConflictError``) or
be judged again, never commit a version naming a snapshot that is gone.
The window is forced open by running the race right after the check."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import almanac
from almanac import Catalog, CatalogError, ConflictError
from almanac.data import expire_data, read_table
from almanac.data.snapshots import snapshot_key
from almanac.dev.etcd_local import LocalEtcd
from almanac.metastore import open_metastore
from almanac.model.entries import TableDataCommitted
from almanac.node.catalog_types import HookWork
from tests.data.support import (
    Place,
    append,
    catalog_place,
    create,
    ids_of,
    race_after_the_check,
    table_data,
)


@pytest.fixture(scope="module")
def etcd1() -> Iterator[LocalEtcd]:
    with LocalEtcd(1, fsync=False) as cluster:
        yield cluster


@pytest.fixture(params=["sqlite", "etcd"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    etcd = request.getfixturevalue("etcd1") if request.param == "etcd" else None
    return catalog_place(request.param, tmp_path, etcd)


def _connect(place: Place) -> Catalog:
    return almanac.connect(place.target, warehouse=place.warehouse, delay_ms=0)


def _naming_the_current(cat: Catalog, table_id: int) -> TableDataCommitted:
    record = table_data(cat).current_record(table_id)
    assert record is not None
    return TableDataCommitted(table_id, record.snapshot_id, "refs", record.metadata)


def _every_pinned_snapshot_is_recorded(cat: Catalog, table_id: int) -> None:
    data = table_data(cat)
    for version in range(cat.earliest_version, cat.latest_version + 1):
        pinned = cat.catalog(version).data_snapshot(table_id)
        if pinned is not None:
            assert data.record(table_id, pinned) is not None, f"version {version} pins {pinned}"


def test_the_named_record_deleted_before_the_transaction_commits_nothing(where: Place) -> None:
    """An expiry and the janitor delete the named snapshot's record, from
    another connection to the store, after the check read it."""
    with _connect(where) as cat, open_metastore(where.target) as janitor:
        table = create(cat)
        append(cat, [1])
        entry = _naming_the_current(cat, table.id)
        before = cat.latest_version
        deleted = race_after_the_check(
            cat, lambda: janitor.delete(snapshot_key(table.id, entry.snapshot_id))
        )
        with pytest.raises(ConflictError, match="no longer holds"):
            cat.execute([], attach=lambda _base, _new: HookWork(entries=(entry,)))
        assert deleted == [True]
        assert cat.latest_version == before
        with _connect(where) as again:
            assert again.latest_version == before


def test_another_nodes_append_before_the_transaction_never_pins_a_stale_snapshot(
    where: Place,
) -> None:
    """On etcd, a second node appends (pointer and version) while the first
    is between its check and its transaction: the first loses the version
    race, judges its entry again on the new state, where the snapshot it
    names is no longer current, and is refused. On SQLite the second node
    waits for the writer section, so it appends after the first commits."""
    with _connect(where) as cat, _connect(where) as other:
        table = create(cat)
        append(cat, [1])
        entry = _naming_the_current(cat, table.id)
        other.catch_up()
        serialized = cat.metastore.serializes_writers
        raced: list[int] = []

        def other_appends() -> None:
            if not serialized:
                raced.append(append(other, [2]).snapshot_id)

        race_after_the_check(cat, other_appends)
        try:
            result = cat.execute([], attach=lambda _base, _new: HookWork(entries=(entry,)))
        except CatalogError as exc:
            assert not serialized, exc
            assert raced, exc
            assert "would be snapshot" in str(exc) or isinstance(exc, ConflictError), exc
        else:
            assert serialized
            assert cat.catalog(result.version).data_snapshot(table.id) == entry.snapshot_id
        cat.catch_up()
        _every_pinned_snapshot_is_recorded(cat, table.id)
        assert ids_of(read_table(cat, "T")) == ([1, 2] if raced else [1])


def test_an_expiry_raced_by_another_nodes_append_plans_again(where: Place) -> None:
    """``expire_data`` (a data commit naming the current snapshot) on one
    node while another node appends between its check and its transaction:
    on etcd its attempt fails on the moved pointer and it plans again on the
    new chain; on SQLite the append waits for the writer section. Either
    way both land, and every version pins a recorded snapshot."""
    with _connect(where) as cat, _connect(where) as other:
        table = create(cat)
        for i in range(3):
            append(cat, [i])
        other.catch_up()
        serialized = cat.metastore.serializes_writers
        raced: list[int] = []

        def other_appends() -> None:
            if not serialized:
                raced.append(append(other, [9]).snapshot_id)

        race_after_the_check(cat, other_appends)
        removed = expire_data(cat, "T", older_than=cat.clock.now())
        assert raced or serialized
        assert removed, "the expiry removed nothing"
        cat.catch_up()
        current = table_data(cat).current_record(table.id)
        assert current is not None
        assert current.snapshot_id not in {s.snapshot_id for s in removed}
        if raced:
            assert current.snapshot_id == raced[0]
        assert ids_of(read_table(cat, "T")) == ([0, 1, 2, 9] if raced else [0, 1, 2])
        latest = cat.catalog().data_snapshot(table.id)
        assert latest == current.snapshot_id
        assert table_data(cat).record(table.id, latest) is not None
