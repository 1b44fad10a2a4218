"""Branches, tags and rollbacks through pyiceberg's ``RestCatalog`` against a
real ``almanac serve``: each ref change is a data snapshot whose metadata
holds the refs, Almanac's reader reads a branch or tag by name, ``main``
is what every other read reads, and the janitor keeps what a tag needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import BadRequestError
from pyiceberg.table import CommitTableRequest, Table, TableIdentifier
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.update import SetSnapshotRefUpdate

from almanac.data import TableData, expire_data, read_table, run_janitor, write_table
from almanac.data.snapshots import Record
from almanac.errors import NotFoundError
from almanac.iceberg_rest.commit import commit
from almanac.iceberg_rest.errors import CommitFailedError
from almanac.iceberg_rest.plan import plan
from almanac.node.catalog import Catalog

from .conftest import ADMIN_TOKEN, own_server, rest_catalog, spec_error
from .tables import SCHEMA, Row, arrow_rows, batch, scanned

A: list[Row] = [(1, "a", 1), (2, "b", 2)]
B: list[Row] = [(3, "c", 3)]
C: list[Row] = [(4, "d", 4)]


def _table(admin: RestCatalog, namespace: str, name: str = "T") -> Table:
    admin.create_namespace(namespace)
    table: Table = admin.create_table((namespace, name), SCHEMA)
    return table


def _rows(cat: Catalog, namespace: str, name: str = "T", **options: Any) -> list[Row]:
    cat.catch_up()
    return arrow_rows(read_table(cat, name, namespace, **options))


def _latest(cat: Catalog, table: Table) -> Record:
    """The table's current data-snapshot record."""
    data = TableData.for_catalog(cat)
    table_id = data.warehouse.table_of(table.metadata.location)
    assert table_id is not None
    record = data.current_record(table_id)
    assert record is not None
    return record


def _current_id(table: Table) -> int:
    snapshot = table.current_snapshot()
    assert snapshot is not None
    return snapshot.snapshot_id


def test_branches_and_tags_are_created_moved_read_and_removed(
    admin: RestCatalog, cat: Catalog
) -> None:
    table = _table(admin, "REFS_CRUD")
    table.append(batch(A))
    first = _current_id(table)
    table.append(batch(B))
    second = _current_id(table)
    table.manage_snapshots().create_tag(first, "v1").create_branch(second, "dev").commit()

    loaded = admin.load_table(("REFS_CRUD", "T"))
    refs = loaded.metadata.refs
    assert (refs["v1"].snapshot_id, refs["v1"].snapshot_ref_type) == (first, SnapshotRefType.TAG)
    assert (refs["dev"].snapshot_id, refs["dev"].snapshot_ref_type) == (
        second,
        SnapshotRefType.BRANCH,
    )
    assert _current_id(loaded) == second
    assert _rows(cat, "REFS_CRUD", ref="v1") == A
    assert _rows(cat, "REFS_CRUD", ref="dev") == A + B
    assert _rows(cat, "REFS_CRUD") == _rows(cat, "REFS_CRUD", ref="main") == A + B

    # A write to the branch leaves main alone, for Almanac and for pyiceberg.
    loaded.append(batch(C), branch="dev")
    assert _rows(cat, "REFS_CRUD", ref="dev") == A + B + C
    assert _rows(cat, "REFS_CRUD") == A + B
    assert scanned(admin.load_table(("REFS_CRUD", "T"))) == A + B
    tagged = _latest(cat, loaded)

    # Moving the tag (to main's snapshot) and removing both refs.
    loaded = admin.load_table(("REFS_CRUD", "T"))
    loaded.manage_snapshots().create_tag(second, "v1").commit()
    assert _rows(cat, "REFS_CRUD", ref="v1") == A + B
    loaded.manage_snapshots().remove_tag("v1").remove_branch("dev").commit()
    assert set(admin.load_table(("REFS_CRUD", "T")).metadata.refs) == {"main"}
    with pytest.raises(NotFoundError, match=r"'REFS_CRUD\.T' has no branch or tag 'v1'"):
        read_table(cat, "T", "REFS_CRUD", ref="v1")

    # The refs are kept in the data snapshot chain: time travel finds them.
    assert _rows(cat, "REFS_CRUD", ref="v1", timestamp=tagged.commit_time) == A
    assert _rows(cat, "REFS_CRUD", ref="dev", timestamp=tagged.commit_time) == A + B + C
    operations = [r.operation for r in TableData.for_catalog(cat).records(tagged.table_id)]
    assert operations == ["append", "append", "refs", "refs", "refs", "refs"]


def test_an_unknown_ref_is_not_found(admin: RestCatalog, cat: Catalog) -> None:
    table = _table(admin, "REFS_UNKNOWN")
    cat.catch_up()
    with pytest.raises(NotFoundError, match=r"'REFS_UNKNOWN\.T' has no branch or tag 'nope'"):
        read_table(cat, "T", "REFS_UNKNOWN", ref="nope")
    table.append(batch(A))
    cat.catch_up()
    with pytest.raises(NotFoundError, match=r"'REFS_UNKNOWN\.T' has no branch or tag 'nope'"):
        read_table(cat, "T", "REFS_UNKNOWN", ref="nope")
    assert _rows(cat, "REFS_UNKNOWN", ref="main") == A


def test_rollback_set_current_snapshot_and_cherry_pick(admin: RestCatalog, cat: Catalog) -> None:
    table = _table(admin, "REFS_ROLL")
    table.append(batch(A))
    first = _current_id(table)
    table.append(batch(B))
    table.append(batch(C))
    third = _current_id(table)
    before = _latest(cat, table).commit_time

    table.manage_snapshots().rollback_to_snapshot(first).commit()
    assert scanned(admin.load_table(("REFS_ROLL", "T"))) == A
    assert _rows(cat, "REFS_ROLL") == A
    assert _rows(cat, "REFS_ROLL", timestamp=before) == A + B + C  # time travel

    # Forward again: the third snapshot was main in a data snapshot the table keeps.
    table = admin.load_table(("REFS_ROLL", "T"))
    table.manage_snapshots().set_current_snapshot(third).commit()
    assert _rows(cat, "REFS_ROLL") == A + B + C

    # A fast-forward cherry-pick: main moves to the head of a branch.
    table.manage_snapshots().create_branch(third, "wap").commit()
    table.append(batch([(5, "e", 5)]), branch="wap")
    table.manage_snapshots().set_current_snapshot(ref_name="wap").commit()
    assert _rows(cat, "REFS_ROLL") == A + B + C + [(5, "e", 5)]

    # A cherry-pick onto a main that moved on: a new snapshot on main adds
    # the picked snapshot's data files, as Iceberg's cherry-pick of an append does.
    table = admin.load_table(("REFS_ROLL", "T"))
    table.append(batch([(6, "f", 6)]), branch="wap")
    table.append(batch([(7, "g", 7)]))
    table = admin.load_table(("REFS_ROLL", "T"))
    picked = table.snapshot_by_name("wap")
    assert picked is not None
    added = [
        entry.data_file
        for manifest in picked.manifests(table.io)
        if manifest.added_snapshot_id == picked.snapshot_id
        for entry in manifest.fetch_manifest_entry(table.io)
    ]
    with table.transaction() as tx, tx.update_snapshot().fast_append() as append:
        for data_file in added:
            append.append_data_file(data_file)
    assert _rows(cat, "REFS_ROLL") == A + B + C + [(5, "e", 5), (6, "f", 6), (7, "g", 7)]
    assert scanned(admin.load_table(("REFS_ROLL", "T"))) == _rows(cat, "REFS_ROLL")


def _commit(client: httpx.Client, namespace: str, updates: list[dict[str, Any]]) -> httpx.Response:
    response: httpx.Response = client.post(
        f"/v1/namespaces/{namespace}/tables/T", json={"requirements": [], "updates": updates}
    )
    return response


def test_refs_the_catalog_cannot_keep_are_refused(
    admin: RestCatalog, cat: Catalog, http: Any
) -> None:
    client = http(ADMIN_TOKEN)
    table = _table(admin, "REFS_NO")
    table.append(batch(A))
    first = _current_id(table)
    # pyiceberg's overwrite adds a delete and then an append: the delete
    # snapshot was never main in a data snapshot, so its files are not kept.
    table.overwrite(batch(B))
    table = admin.load_table(("REFS_NO", "T"))
    middle = next(
        s.snapshot_id for s in table.snapshots() if s.snapshot_id not in (first, _current_id(table))
    )
    before = _latest(cat, table)

    with pytest.raises(BadRequestError, match=f"cannot point at snapshot {middle}"):
        table.manage_snapshots().set_current_snapshot(middle).commit()
    with pytest.raises(BadRequestError, match=f"cannot point at snapshot {middle}"):
        table.manage_snapshots().create_tag(middle, "mid").commit()
    unknown = _commit(
        client,
        "REFS_NO",
        [{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 12}],
    )
    assert "unknown snapshot 12" in spec_error(unknown, 400)["message"]
    no_main = _commit(client, "REFS_NO", [{"action": "remove-snapshot-ref", "ref-name": "main"}])
    assert "main branch cannot be removed" in spec_error(no_main, 400)["message"]
    as_tag = _commit(
        client,
        "REFS_NO",
        [{"action": "set-snapshot-ref", "ref-name": "main", "type": "tag", "snapshot-id": first}],
    )
    assert "not a tag" in spec_error(as_tag, 400)["message"]

    # Nothing changed: the same data snapshot, main reads the overwrite.
    assert _rows(cat, "REFS_NO") == B
    assert _latest(cat, table) == before

    # A branch needs main to have a snapshot (pyiceberg checks it too).
    empty = admin.create_table(("REFS_NO", "EMPTY"), SCHEMA)
    snapshot = {
        "snapshot-id": 77,
        "sequence-number": 1,
        "timestamp-ms": 1,
        "manifest-list": f"{empty.metadata.location}/metadata/snap-77.avro",
        "summary": {"operation": "append"},
    }
    branch_only = client.post(
        "/v1/namespaces/REFS_NO/tables/EMPTY",
        json={
            "requirements": [],
            "updates": [
                {"action": "add-snapshot", "snapshot": snapshot},
                {
                    "action": "set-snapshot-ref",
                    "ref-name": "dev",
                    "type": "branch",
                    "snapshot-id": 77,
                },
            ],
        },
    )
    message = spec_error(branch_only, 400)["message"]
    assert "'dev' needs a snapshot on the main branch first" in message
    # So does a staged create's (its refs are never dropped).
    staged = admin.create_table_transaction(("REFS_NO", "STAGED"), SCHEMA)
    updates = [u.model_dump(by_alias=True, mode="json") for u in staged._updates]
    snapshot["manifest-list"] = f"{staged.table_metadata.location}/metadata/snap-77.avro"
    create_with_branch = client.post(
        "/v1/namespaces/REFS_NO/tables/STAGED",
        json={
            "requirements": [{"type": "assert-create"}],
            "updates": [
                *updates,
                {"action": "add-snapshot", "snapshot": snapshot},
                {
                    "action": "set-snapshot-ref",
                    "ref-name": "dev",
                    "type": "branch",
                    "snapshot-id": 77,
                },
            ],
        },
    )
    message = spec_error(create_with_branch, 400)["message"]
    assert "'dev' needs a snapshot on the main branch first" in message
    assert not admin.table_exists(("REFS_NO", "STAGED"))


def test_native_writes_keep_the_tables_refs(admin: RestCatalog, cat: Catalog) -> None:
    table = _table(admin, "REFS_NATIVE")
    table.append(batch(A))
    table.manage_snapshots().create_tag(_current_id(table), "v1").commit()
    cat.catch_up()
    write_table(cat, "T", batch(B), "REFS_NATIVE")
    write_table(cat, "T", batch(C), "REFS_NATIVE", operation="overwrite")
    assert _rows(cat, "REFS_NATIVE") == C
    assert _rows(cat, "REFS_NATIVE", ref="v1") == A
    loaded = admin.load_table(("REFS_NATIVE", "T"))
    assert set(loaded.metadata.refs) == {"main", "v1"}
    assert (
        arrow_rows(loaded.scan(snapshot_id=loaded.metadata.refs["v1"].snapshot_id).to_arrow()) == A
    )


def test_the_janitor_keeps_what_a_tag_needs_until_the_tag_goes(tmp_path: Path) -> None:
    with own_server(tmp_path) as (server, cat):
        admin = rest_catalog(server)
        table = _table(admin, "REFS_GC")
        table.append(batch(A))
        first = _current_id(table)
        tagged_files = {t.file.file_path for t in table.scan().plan_files()}
        table.manage_snapshots().create_tag(first, "v1").commit()
        table.overwrite(batch(B))
        cat.catch_up()

        # Retention drops every older data snapshot; the tag still needs A's files.
        expire_data(cat, "T", "REFS_GC", older_than=_latest(cat, table).commit_time)
        report = run_janitor(cat, grace_s=0)
        assert not report.errors
        assert tagged_files.isdisjoint(report.files_removed)
        assert all(Path(p.removeprefix("file://")).exists() for p in tagged_files)
        assert _rows(cat, "REFS_GC", ref="v1") == A
        assert _rows(cat, "REFS_GC") == B
        loaded = admin.load_table(("REFS_GC", "T"))
        assert arrow_rows(loaded.scan(snapshot_id=first).to_arrow()) == A

        # Once the tag is removed and retention passes, its files go.
        loaded.manage_snapshots().remove_tag("v1").commit()
        cat.catch_up()
        expire_data(cat, "T", "REFS_GC", older_than=_latest(cat, loaded).commit_time)
        run_janitor(cat, grace_s=0)
        assert not any(Path(p.removeprefix("file://")).exists() for p in tagged_files)
        assert _rows(cat, "REFS_GC") == B
        # No Iceberg reader is offered the snapshot whose files went.
        loaded = admin.load_table(("REFS_GC", "T"))
        assert [s.snapshot_id for s in loaded.snapshots()] == [_current_id(loaded)]
        assert scanned(loaded) == B


def test_a_rollback_whose_snapshot_expires_before_it_publishes_is_refused(
    tmp_path: Path,
) -> None:
    """The commit is planned, then retention drops the data snapshot whose
    files the rollback's target needs, then the commit publishes: it must
    fail (a 409 the client retries), never publish a main with no files."""
    with own_server(tmp_path) as (server, cat):
        admin = rest_catalog(server)
        table = _table(admin, "REFS_RACE")
        table.append(batch(A))
        first = _current_id(table)
        table.append(batch(B))
        cat.catch_up()
        request = CommitTableRequest(
            identifier=TableIdentifier.model_validate({"namespace": ["REFS_RACE"], "name": "T"}),
            requirements=(),
            updates=(
                SetSnapshotRefUpdate.model_validate(
                    {"ref-name": "main", "type": "branch", "snapshot-id": first}
                ),
            ),
        )
        change = plan(cat, cat.catalog(), request)
        latest = _latest(cat, table).commit_time
        assert expire_data(cat, "T", "REFS_RACE", older_than=latest)
        with pytest.raises(CommitFailedError, match="refresh and retry"):
            commit(cat, [change])
        assert _rows(cat, "REFS_RACE") == A + B
        # The client refreshes: the snapshot is gone from the table's metadata.
        with pytest.raises(ValueError, match="unknown snapshot id"):
            admin.load_table(("REFS_RACE", "T")).manage_snapshots().set_current_snapshot(
                first
            ).commit()


def test_a_cherry_pick_after_a_janitor_sweep_adds_the_files_its_branch_keeps(
    tmp_path: Path,
) -> None:
    """The picked snapshot's files are older than the janitor's cutoff, but
    the branch kept them: adding them to main again is no stale commit."""
    with own_server(tmp_path) as (server, cat):
        admin = rest_catalog(server)
        table = _table(admin, "REFS_PICK")
        table.append(batch(A))
        table.manage_snapshots().create_branch(_current_id(table), "wap").commit()
        table.append(batch(B), branch="wap")
        table.append(batch(C))
        report = run_janitor(cat, grace_s=0)
        assert not report.errors
        table = admin.load_table(("REFS_PICK", "T"))
        picked = table.snapshot_by_name("wap")
        assert picked is not None
        with table.transaction() as tx, tx.update_snapshot().fast_append() as append:
            for manifest in picked.manifests(table.io):
                if manifest.added_snapshot_id == picked.snapshot_id:
                    for entry in manifest.fetch_manifest_entry(table.io):
                        append.append_data_file(entry.data_file)
        assert _rows(cat, "REFS_PICK") == A + B + C


def test_expiring_a_tagged_snapshot_removes_the_tag_too(
    admin: RestCatalog, cat: Catalog, http: Any
) -> None:
    """pyiceberg's own update code drops the refs of a removed snapshot, and
    the commit keeps that as a ref change; main reads on."""
    table = _table(admin, "REFS_EXPIRE")
    table.append(batch(A))
    first = _current_id(table)
    table.manage_snapshots().create_tag(first, "v1").commit()
    table.append(batch(B))
    response = _commit(
        http(ADMIN_TOKEN),
        "REFS_EXPIRE",
        [{"action": "remove-snapshots", "snapshot-ids": [first]}],
    )
    assert response.status_code == 200, response.text
    loaded = admin.load_table(("REFS_EXPIRE", "T"))
    assert set(loaded.metadata.refs) == {"main"}
    assert first not in {s.snapshot_id for s in loaded.snapshots()}
    assert _rows(cat, "REFS_EXPIRE") == scanned(loaded) == A + B
    with pytest.raises(NotFoundError, match="no branch or tag 'v1'"):
        read_table(cat, "T", "REFS_EXPIRE", ref="v1")


def test_a_commit_whose_parent_metadata_was_repointed_meanwhile_is_refused(
    tmp_path: Path,
) -> None:
    """A tag is planned on the current snapshot, then an expiry re-points the
    current snapshot's record to metadata without the expired snapshot (whose
    files it collects), then the commit publishes: it built on the old
    metadata, which still lists the collected snapshot, so it must fail (a
    409 the client retries), never publish a snapshot list Iceberg readers
    cannot follow."""
    with own_server(tmp_path) as (server, cat):
        admin = rest_catalog(server)
        table = _table(admin, "REFS_REPOINT")
        table.append(batch(A))
        first = _current_id(table)
        table.append(batch(B))
        current = _current_id(table)
        cat.catch_up()
        request = CommitTableRequest(
            identifier=TableIdentifier.model_validate({"namespace": ["REFS_REPOINT"], "name": "T"}),
            requirements=(),
            updates=(
                SetSnapshotRefUpdate.model_validate(
                    {"ref-name": "t1", "type": "tag", "snapshot-id": current}
                ),
            ),
        )
        change = plan(cat, cat.catalog(), request)
        latest = _latest(cat, table).commit_time
        assert expire_data(cat, "T", "REFS_REPOINT", older_than=latest)
        before = cat.latest_version
        with pytest.raises(CommitFailedError, match="refresh and retry"):
            commit(cat, [change])
        assert cat.latest_version == before
        # The client refreshes and tags again: the new metadata lists only what exists.
        refreshed = admin.load_table(("REFS_REPOINT", "T"))
        assert first not in {s.snapshot_id for s in refreshed.snapshots()}
        refreshed.manage_snapshots().create_tag(current, "t1").commit()
        tagged = admin.load_table(("REFS_REPOINT", "T"))
        assert tagged.metadata.refs["t1"].snapshot_id == current
        assert first not in {s.snapshot_id for s in tagged.snapshots()}
        assert _rows(cat, "REFS_REPOINT") == A + B
