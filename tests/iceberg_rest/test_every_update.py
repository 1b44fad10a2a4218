"""Every update pyiceberg can send is applied or refused, never dropped.

For each type of pyiceberg's ``TableUpdate`` union (a type pyiceberg adds
fails ``test_every_update_type_has_a_case``), a real ``RestCatalog`` commits
it to a table of the real server: either the next load equals what
pyiceberg's own ``update_table_metadata`` makes of the table it loaded
(modulo what Almanac keeps itself, ``comparable``) and the commit is one
catalog version, or it is a 400 naming the update and nothing changed.
"""

from __future__ import annotations

import typing
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import BadRequestError
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.statistics import PartitionStatisticsFile, StatisticsFile
from pyiceberg.table.update import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSnapshotUpdate,
    AddSortOrderUpdate,
    AssignUUIDUpdate,
    RemovePartitionSpecsUpdate,
    RemovePartitionStatisticsUpdate,
    RemovePropertiesUpdate,
    RemoveSchemasUpdate,
    RemoveSnapshotRefUpdate,
    RemoveSnapshotsUpdate,
    RemoveStatisticsUpdate,
    SetCurrentSchemaUpdate,
    SetDefaultSortOrderUpdate,
    SetDefaultSpecUpdate,
    SetLocationUpdate,
    SetPartitionStatisticsUpdate,
    SetPropertiesUpdate,
    SetSnapshotRefUpdate,
    SetStatisticsUpdate,
    TableRequirement,
    TableUpdate,
    UpgradeFormatVersionUpdate,
    update_table_metadata,
)
from pyiceberg.transforms import BucketTransform, IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from almanac.node.catalog import Catalog

NAMESPACE = "EVERYUPD"
SCHEMA = Schema(
    NestedField(1, "ID", LongType(), required=True),
    NestedField(2, "NAME", StringType(), required=False),
)
ARROW = pa.schema([pa.field("ID", pa.int64(), nullable=False), pa.field("NAME", pa.string())])
RESERVED = "almanac."

Outcome = Literal["applied", "refused", "either"]
"""What a case must do: ``either`` for updates whose support other work
brings (refs, snapshot expiry): applied and equal, or refused naming it."""

UPDATE_TYPES: tuple[type[Any], ...] = typing.get_args(typing.get_args(TableUpdate)[0])


def _rows(*ids: int) -> pa.Table:
    return pa.table({"ID": list(ids), "NAME": [f"n{i}" for i in ids]}, ARROW)


@dataclass
class Commit:
    """A commit a case sends: its updates and requirements, and what it must do."""

    updates: list[TableUpdate]
    outcome: Outcome
    requirements: list[TableRequirement] = field(default_factory=list)


def _staged(table: Table, build: Callable[[Any], None]) -> Commit:
    """What pyiceberg's own transaction API sends for ``build``."""
    tx = table.transaction()
    build(tx)
    return Commit(list(tx._updates), "applied", list(tx._requirements))


def _evolved(table: Table) -> Table:
    """``table`` with a second schema and a second partition spec."""
    with table.update_schema() as update:
        update.add_column("EXTRA", StringType())
    table.refresh()
    with table.update_spec() as spec:
        spec.add_field("ID", BucketTransform(4), "id_bucket")
    table.refresh()
    return table


def _snapshot(table: Table) -> int:
    current = table.metadata.current_snapshot_id
    assert current is not None
    return current


def _statistics(table: Table) -> StatisticsFile:
    return StatisticsFile.model_validate(
        {
            "snapshot-id": _snapshot(table),
            "statistics-path": f"{table.location()}/metadata/stats.puffin",
            "file-size-in-bytes": 100,
            "file-footer-size-in-bytes": 10,
            "blob-metadata": [],
        }
    )


CASES = (
    AssignUUIDUpdate,
    UpgradeFormatVersionUpdate,
    AddSchemaUpdate,
    SetCurrentSchemaUpdate,
    AddPartitionSpecUpdate,
    SetDefaultSpecUpdate,
    AddSortOrderUpdate,
    SetDefaultSortOrderUpdate,
    AddSnapshotUpdate,
    SetSnapshotRefUpdate,
    RemoveSnapshotsUpdate,
    RemoveSnapshotRefUpdate,
    SetLocationUpdate,
    SetPropertiesUpdate,
    RemovePropertiesUpdate,
    SetStatisticsUpdate,
    RemoveStatisticsUpdate,
    RemovePartitionSpecsUpdate,
    RemoveSchemasUpdate,
    SetPartitionStatisticsUpdate,
    RemovePartitionStatisticsUpdate,
)
"""The update types ``_case`` has a commit for."""


def _case(cls: type[Any], table: Table) -> tuple[Table, Commit]:
    """The table a case starts from and the commit it sends for update type ``cls``."""
    update: TableUpdate
    if cls is AssignUUIDUpdate:
        return table, Commit([AssignUUIDUpdate(uuid=uuid.uuid4())], "refused")
    if cls is UpgradeFormatVersionUpdate:
        return table, Commit(
            [UpgradeFormatVersionUpdate.model_validate({"format-version": 3})], "either"
        )
    if cls is AddSchemaUpdate:  # a schema added, not made current
        new = Schema(
            *table.schema().fields,
            NestedField(table.metadata.last_column_id + 1, "LATER", StringType()),
            schema_id=max(table.schemas()) + 1,
        )
        return table, Commit([AddSchemaUpdate(schema=new)], "applied")
    if cls is SetCurrentSchemaUpdate:  # identifier fields only: the primary key

        def key(tx: Any) -> None:
            with tx.update_schema() as update:
                update.set_identifier_fields("ID")

        return table, _staged(table, key)
    if cls is AddPartitionSpecUpdate:
        return table, _staged(
            table, lambda tx: tx.update_spec().add_field("NAME", IdentityTransform()).commit()
        )
    if cls is SetDefaultSpecUpdate:  # back to the first spec
        table = _evolved(table)
        return table, Commit([SetDefaultSpecUpdate.model_validate({"spec-id": 0})], "applied")
    if cls is AddSortOrderUpdate:
        return table, _staged(
            table, lambda tx: tx.update_sort_order().desc("ID", IdentityTransform()).commit()
        )
    if cls is SetDefaultSortOrderUpdate:  # back to unsorted
        with table.update_sort_order() as order:
            order.asc("NAME", IdentityTransform())
        table.refresh()
        return table, Commit(
            [SetDefaultSortOrderUpdate.model_validate({"sort-order-id": 0})], "applied"
        )
    if cls is AddSnapshotUpdate:
        return table, _staged(table, lambda tx: tx.append(_rows(7, 8)))
    if cls is SetSnapshotRefUpdate:  # a tag
        update = SetSnapshotRefUpdate.model_validate(
            {"ref-name": "t1", "type": SnapshotRefType.TAG, "snapshot-id": _snapshot(table)}
        )
        return table, Commit([update], "either")
    if cls is RemoveSnapshotsUpdate:  # the first of two snapshots
        first = _snapshot(table)
        table.append(_rows(3))
        table.refresh()
        update = RemoveSnapshotsUpdate.model_validate({"snapshot-ids": [first]})
        return table, Commit([update], "either")
    if cls is RemoveSnapshotRefUpdate:
        return table, Commit(
            [RemoveSnapshotRefUpdate.model_validate({"ref-name": "main"})], "either"
        )
    if cls is SetLocationUpdate:
        return table, Commit([SetLocationUpdate(location=table.location() + "-moved")], "refused")
    if cls is SetPropertiesUpdate:
        return table, Commit([SetPropertiesUpdate(updates={"owner": "ops", "k": "v"})], "applied")
    if cls is RemovePropertiesUpdate:
        with table.transaction() as tx:
            tx.set_properties(owner="ops", k="v")
        table.refresh()
        return table, Commit([RemovePropertiesUpdate(removals=["k"])], "applied")
    if cls is SetStatisticsUpdate:
        update = SetStatisticsUpdate.model_validate({"statistics": _statistics(table)})
        return table, Commit([update], "refused")  # the janitor would delete its file
    if cls is RemoveStatisticsUpdate:
        update = RemoveStatisticsUpdate.model_validate({"snapshot-id": _snapshot(table)})
        return table, Commit([update], "refused")  # there are none
    if cls is RemovePartitionSpecsUpdate:
        table = _evolved(table)
        return table, Commit(
            [RemovePartitionSpecsUpdate.model_validate({"spec-ids": [0]})], "either"
        )
    if cls is RemoveSchemasUpdate:
        table = _evolved(table)
        return table, Commit([RemoveSchemasUpdate.model_validate({"schema-ids": [0]})], "applied")
    if cls is SetPartitionStatisticsUpdate:
        stats = PartitionStatisticsFile.model_validate(
            {
                "snapshot-id": _snapshot(table),
                "statistics-path": f"{table.location()}/metadata/partition-stats.parquet",
                "file-size-in-bytes": 100,
            }
        )
        update = SetPartitionStatisticsUpdate.model_validate({"partition-statistics": stats})
        return table, Commit([update], "refused")
    if cls is RemovePartitionStatisticsUpdate:
        update = RemovePartitionStatisticsUpdate.model_validate({"snapshot-id": _snapshot(table)})
        return table, Commit([update], "refused")  # there are none
    raise AssertionError(f"no case for {cls.__name__}: add one to this module")


def comparable(metadata: TableMetadata) -> dict[str, Any]:
    """``metadata`` without what Almanac keeps itself (``commit``'s module
    docstring): the times, the metadata log, its ``almanac.*`` properties
    and summary entries, the timestamps of the snapshot log, and before
    the first snapshot the schema history (only the current schema
    counts); ``last-column-id`` may only be higher (ids are never reused),
    which ``check_equal`` checks apart."""
    out: dict[str, Any] = metadata.model_dump(mode="json", by_alias=True)
    for name in ("last-updated-ms", "metadata-log", "last-column-id"):
        out.pop(name, None)
    out["properties"] = {k: v for k, v in out["properties"].items() if not k.startswith(RESERVED)}
    for snapshot in out.get("snapshots", []):
        summary = snapshot.get("summary") or {}
        for key in [k for k in summary if k.startswith(RESERVED)]:
            del summary[key]
    out["snapshot-log"] = [e["snapshot-id"] for e in out.get("snapshot-log", [])]
    if metadata.current_snapshot_id is None:  # the catalog table itself: no schema history
        current = metadata.schema().model_dump(mode="json", by_alias=True)
        current.pop("schema-id")
        out["schemas"] = [current]
        out.pop("current-schema-id")
    return out


def check_equal(reloaded: TableMetadata, expected: TableMetadata) -> None:
    assert reloaded.last_column_id >= expected.last_column_id
    got, want = comparable(reloaded), comparable(expected)
    differ = {k for k in set(got) | set(want) if got.get(k) != want.get(k)}
    assert not differ, {k: (got.get(k), want.get(k)) for k in differ}


@pytest.fixture(scope="module")
def namespace(admin: RestCatalog) -> Iterator[str]:
    admin.create_namespace(NAMESPACE)
    yield NAMESPACE


def _fresh(admin: RestCatalog, name: str) -> Table:
    """A plain table with one snapshot."""
    table: Table = admin.create_table((NAMESPACE, name), SCHEMA)
    table.append(_rows(1, 2))
    table.refresh()
    return table


def test_every_update_type_has_a_case() -> None:
    assert set(UPDATE_TYPES) == set(CASES), "give each update type a case in _case"


def send(
    admin: RestCatalog, cat: Catalog, table: Table, commit: Commit
) -> tuple[Literal["applied", "refused"], TableMetadata]:
    """Commit, and check the rule: applied and equal in one catalog version,
    or a 400 naming the update with nothing changed."""
    try:
        expected = update_table_metadata(table.metadata, tuple(commit.updates))
    except ValueError:  # pyiceberg itself refuses it
        expected = None
    cat.catch_up()
    before = cat.latest_version
    try:
        admin.commit_table(table, tuple(commit.requirements), tuple(commit.updates))
    except BadRequestError as exc:
        reloaded = table.refresh().metadata
        actions = {u.action for u in commit.updates}
        assert any(a in str(exc) for a in actions), str(exc)
        cat.catch_up()
        assert cat.latest_version == before
        assert comparable(reloaded) == comparable(table.metadata)
        return "refused", reloaded
    reloaded = admin.load_table(table.name()).metadata
    assert expected is not None, "pyiceberg refuses this commit, but Almanac applied it"
    check_equal(reloaded, expected)
    cat.catch_up()
    assert cat.latest_version in (before, before + 1)  # one version, when it has commands
    return "applied", reloaded


@pytest.mark.parametrize("cls", UPDATE_TYPES, ids=lambda c: c.__name__)
def test_an_update_is_applied_or_refused_by_name(
    admin: RestCatalog, cat: Catalog, namespace: str, cls: type[Any]
) -> None:
    table, commit = _case(cls, _fresh(admin, cls.__name__.lower()))
    assert any(isinstance(u, cls) for u in commit.updates) or commit.outcome == "refused"
    done, _ = send(admin, cat, table, commit)
    assert commit.outcome in ("either", done), f"{cls.__name__}: {done}"


def _schema_change(table: Table, build: Callable[[Any], None]) -> Commit:
    def change(tx: Any) -> None:
        with tx.update_schema() as update:
            build(update)

    return _staged(table, change)


def test_a_schema_seen_before_becomes_current_again(
    admin: RestCatalog, cat: Catalog, namespace: str
) -> None:
    table = _evolved(_fresh(admin, "again"))
    commit = _schema_change(table, lambda u: u.delete_column("EXTRA"))
    assert [u.action for u in commit.updates] == ["set-current-schema"]
    assert send(admin, cat, table, commit)[0] == "applied"


def test_a_property_removed_with_a_schema_change_stays_removed(
    admin: RestCatalog, cat: Catalog, namespace: str
) -> None:
    table = _fresh(admin, "unset")
    with table.transaction() as tx:
        tx.set_properties(owner="ops", k="v")
    table.refresh()

    def both(tx: Any) -> None:
        tx.remove_properties("k")
        with tx.update_schema() as update:
            update.add_column("MORE", StringType())

    assert send(admin, cat, table, _staged(table, both))[0] == "applied"


@pytest.mark.parametrize("change", ["add", "key", "spec"])
def test_a_table_without_a_snapshot_changes_as_asked(
    admin: RestCatalog, cat: Catalog, namespace: str, change: str
) -> None:
    table = admin.create_table((NAMESPACE, f"empty_{change}"), SCHEMA)
    if change == "add":
        commit = _schema_change(table, lambda u: u.add_column("MORE", StringType()))
    elif change == "key":
        commit = _schema_change(table, lambda u: u.set_identifier_fields("ID"))
    else:
        commit = _staged(
            table, lambda tx: tx.update_spec().add_field("NAME", IdentityTransform()).commit()
        )
    assert send(admin, cat, table, commit)[0] == "applied"


def test_a_refusal_names_the_update_it_is_due_to(
    admin: RestCatalog, cat: Catalog, namespace: str
) -> None:
    table = _fresh(admin, "named")
    commit = Commit(
        [
            SetPropertiesUpdate(updates={"before": "1"}),
            AssignUUIDUpdate(uuid=uuid.uuid4()),
            SetPropertiesUpdate(updates={"after": "2"}),
        ],
        "refused",
    )
    with pytest.raises(BadRequestError) as refusal:
        admin.commit_table(table, (), tuple(commit.updates))
    assert "(refused update: assign-uuid)" in str(refusal.value)
    assert send(admin, cat, table, commit)[0] == "refused"
    assert "before" not in admin.load_table(table.name()).properties


def test_a_snapshot_added_without_becoming_current_is_refused(
    admin: RestCatalog, cat: Catalog, namespace: str
) -> None:
    table = _fresh(admin, "staged")
    appended = _staged(table, lambda tx: tx.append(_rows(5)))
    added = [u for u in appended.updates if isinstance(u, AddSnapshotUpdate)]
    assert send(admin, cat, table, Commit(list(added), "either"))[0] == "refused"


def test_a_schema_removed_with_a_schema_change_is_refused(
    admin: RestCatalog, cat: Catalog, namespace: str
) -> None:
    table = _evolved(_fresh(admin, "both"))
    change = _schema_change(table, lambda u: u.add_column("MORE", StringType()))
    removal = RemoveSchemasUpdate.model_validate({"schema-ids": [0]})
    commit = Commit([*change.updates, removal], "refused", change.requirements)
    assert send(admin, cat, table, commit)[0] == "refused"
