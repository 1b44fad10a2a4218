"""``Catalog.execute(attach=...)`` is public: the data commits an attach
callback returns as entries are checked like any user input. A bad one is a
``ValidationError`` naming the field and the rule, and commits nothing: no
version, no change to any table's data, and the log still opens."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from almanac import (
    AddColumns,
    Catalog,
    CatalogError,
    ColumnDef,
    ColumnType,
    ConflictError,
    CreateSchema,
    DropTable,
    NotFoundError,
    ValidationError,
)
from almanac.data import read_table
from almanac.data.snapshots import (
    Record,
    encode_pointer,
    encode_record,
    pointer_unchanged,
    snapshot_key,
    snapshot_prefix,
    table_key,
)
from almanac.metastore import Delete, DeleteRange, Op, Put
from almanac.model.catalog_version import CatalogVersion
from almanac.model.entries import TableDataCommitted
from almanac.node.catalog_types import HookWork
from tests.data.support import (
    append,
    connect,
    create,
    ids_of,
    race_after_the_check,
    table_data,
)


def _entry(table: int, **fields: Any) -> TableDataCommitted:
    values: dict[str, Any] = {
        "table_id": table,
        "snapshot_id": 1,
        "operation": "append",
        "metadata": "m.metadata.json",
    }
    values.update(fields)
    return TableDataCommitted(**values)


def _attaching(*entries: TableDataCommitted) -> Any:
    def attach(_base: CatalogVersion, _new: CatalogVersion) -> HookWork:
        return HookWork(entries=entries)

    return attach


def _nothing_changed(cat: Catalog, target: str, version: int, table_id: int) -> None:
    assert cat.latest_version == version
    pointer = table_data(cat).current_record(table_id)
    assert pointer is not None
    assert cat.catalog().data_snapshot(table_id) == pointer.snapshot_id
    assert ids_of(read_table(cat, "T")) == [1, 2]
    with connect(target) as again:
        assert again.latest_version == version
        assert ids_of(read_table(again, "T")) == [1, 2]


_AS_TEXT = object()
"""Stands for the table's id given as a string."""

BAD_FIELDS: list[tuple[str, dict[str, Any]]] = [
    ("bool snapshot", {"snapshot_id": True}),
    ("float snapshot", {"snapshot_id": 1.0}),
    ("zero snapshot", {"snapshot_id": 0}),
    ("negative snapshot", {"snapshot_id": -1}),
    ("snapshot past 64 bits", {"snapshot_id": 2**64}),
    ("negative rows", {"rows_added": -5}),
    ("float rows", {"rows_added": 1.5}),
    ("negative files", {"files_removed": -1}),
    ("rows past 64 bits", {"rows_removed": 2**80}),
    ("no metadata", {"metadata": None}),
    ("blank metadata", {"metadata": ""}),
    ("surrogate metadata", {"metadata": "\ud800"}),
    ("huge metadata", {"metadata": "m" * 10_000_000}),
    ("unknown operation", {"operation": "frob"}),
    ("table id as text", {"table_id": _AS_TEXT}),
]


@pytest.mark.parametrize(("label", "fields"), BAD_FIELDS, ids=[b[0] for b in BAD_FIELDS])
def test_an_attached_entry_of_the_wrong_shape_is_refused(
    tmp_path: Path, label: str, fields: dict[str, Any]
) -> None:
    target = str(tmp_path / "data")
    with connect(target) as cat:
        table = create(cat)
        append(cat, [1, 2])
        before = cat.latest_version
        fields = {k: (str(table.id) if v is _AS_TEXT else v) for k, v in fields.items()}
        with pytest.raises(ValidationError, match="TableDataCommitted"):
            cat.execute([], attach=_attaching(_entry(table.id, **fields)))
        _nothing_changed(cat, target, before, table.id)


def test_two_entries_for_one_table_in_one_version_are_refused(tmp_path: Path) -> None:
    """One version names at most one data snapshot per table: two entries
    would pin the last and record the first in history as if it happened."""
    target = str(tmp_path / "data")
    with connect(target) as cat:
        table = create(cat)
        append(cat, [1, 2])
        before = cat.latest_version
        pinned = cat.catalog().data_snapshot(table.id)
        twice = (_entry(table.id, snapshot_id=pinned), _entry(table.id, snapshot_id=pinned))
        with pytest.raises(ValidationError, match=f"table id {table.id}.*twice"):
            cat.execute([], attach=_attaching(*twice))
        _nothing_changed(cat, target, before, table.id)


def test_an_entry_naming_a_snapshot_its_transaction_does_not_publish_is_refused(
    tmp_path: Path,
) -> None:
    """A version pinning a snapshot that has no record would make the table
    unreadable at that version (and at the latest until its next commit),
    reported as 'expired' though nothing was."""
    target = str(tmp_path / "data")
    with connect(target) as cat:
        table = create(cat)
        append(cat, [1, 2])
        before = cat.latest_version
        with pytest.raises(ValidationError, match=f"table id {table.id} names data snapshot 7"):
            cat.execute([], attach=_attaching(_entry(table.id, snapshot_id=7)))
        _nothing_changed(cat, target, before, table.id)


def _current(cat: Catalog, table_id: int) -> Record:
    record = table_data(cat).current_record(table_id)
    assert record is not None
    return record


def _older(cat: Catalog, table_id: int) -> HookWork:
    first = table_data(cat).records(table_id)[0]
    return HookWork(
        entries=(_entry(table_id, snapshot_id=first.snapshot_id, metadata=first.metadata),)
    )


def _other_metadata(cat: Catalog, table_id: int) -> HookWork:
    return HookWork(entries=(_entry(table_id, snapshot_id=_current(cat, table_id).snapshot_id),))


def _deleting_its_record(cat: Catalog, table_id: int) -> HookWork:
    now = _current(cat, table_id)
    return HookWork(
        ops=[Delete(snapshot_key(table_id, now.snapshot_id))],
        entries=(_entry(table_id, snapshot_id=now.snapshot_id, metadata=now.metadata),),
    )


def _moving_the_pointer_away(cat: Catalog, table_id: int) -> HookWork:
    now = _current(cat, table_id)
    return HookWork(
        ops=[Put(table_key(table_id), encode_pointer(table_id, now.snapshot_id - 1))],
        entries=(_entry(table_id, snapshot_id=now.snapshot_id, metadata=now.metadata),),
    )


UNPUBLISHED: list[tuple[str, Callable[[Catalog, int], HookWork], str]] = [
    ("an older snapshot", _older, "current data after its transaction would be snapshot 2"),
    ("other metadata", _other_metadata, "names metadata"),
    ("its record deleted", _deleting_its_record, "leaves no record"),
    ("the pointer moved away", _moving_the_pointer_away, "would be snapshot 1"),
]


def test_an_entry_naming_the_current_snapshot_commits(tmp_path: Path) -> None:
    """A ref move, an expiry or new metadata names the snapshot the table
    already has: the check lets it through, and the version reads it."""
    target = str(tmp_path / "data")
    with connect(target) as cat:
        table = create(cat)
        append(cat, [1, 2])
        now = _current(cat, table.id)
        named = _entry(table.id, snapshot_id=now.snapshot_id, metadata=now.metadata)
        result = cat.execute([], attach=_attaching(dataclasses.replace(named, operation="refs")))
        assert result.created
        _nothing_changed(cat, target, result.version, table.id)


def test_work_planned_on_a_state_that_changed_is_a_conflict(tmp_path: Path) -> None:
    """An expiry that read the chain before an append landed names the
    snapshot that was current then; its own compare on the pointer fails,
    so it is a ``ConflictError`` (plan again), as its transaction says,
    not a ``ValidationError``."""
    target = str(tmp_path / "data")
    with connect(target) as cat:
        table = create(cat)
        append(cat, [1])
        planned = _current(cat, table.id)
        guard = pointer_unchanged(cat.metastore, table.id, planned.snapshot_id)
        append(cat, [2])
        before = cat.latest_version
        named = _entry(table.id, snapshot_id=planned.snapshot_id, metadata=planned.metadata)
        stale = HookWork(
            compares=[guard], entries=(dataclasses.replace(named, operation="expire"),)
        )
        with pytest.raises(ConflictError, match=f"data.table.{table.id}"):
            cat.execute([], attach=lambda _base, _new: stale)
        _nothing_changed(cat, target, before, table.id)


def test_a_named_snapshot_that_stops_being_current_before_the_transaction_commits_nothing(
    tmp_path: Path,
) -> None:
    """What the check read holds until the transaction: a commit that moves
    the table's pointer between the check and the transaction makes the
    attempt fail."""
    target = str(tmp_path / "data")
    with connect(target) as cat:
        table = create(cat)
        append(cat, [1])
        append(cat, [1, 2])
        before = cat.latest_version
        now = _current(cat, table.id)
        store = cat.metastore
        moved = race_after_the_check(
            cat,
            lambda: store.put(table_key(table.id), encode_pointer(table.id, now.snapshot_id - 1)),
        )
        named = _entry(table.id, snapshot_id=now.snapshot_id, metadata=now.metadata)
        with pytest.raises(ConflictError):
            cat.execute([], attach=_attaching(named))
        assert moved
        assert cat.latest_version == before
        assert cat.catalog().data_snapshot(table.id) == now.snapshot_id


def _framed_then_flipped(record: Record) -> bytes:
    raw = bytearray(encode_record(record))
    raw[-2] ^= 0xFF
    return bytes(raw)


def _deeply_nested(_record: Record) -> bytes:
    # The format before frames is bare JSON: nesting past the parser's
    # recursion limit must read as a corrupt record, not crash the check.
    return b'{"id":' + b"[" * 100_000 + b"]" * 100_000 + b"}"


def _of_another_snapshot(record: Record) -> bytes:
    return encode_record(dataclasses.replace(record, snapshot_id=record.snapshot_id - 1))


CORRUPT: list[tuple[str, Callable[[Record], bytes]]] = [
    ("random bytes", lambda _record: b"\x00\xffnot a record"),
    ("a flipped byte", _framed_then_flipped),
    ("deeply nested JSON", _deeply_nested),
    ("another snapshot's record", _of_another_snapshot),
]


@pytest.mark.parametrize(("label", "corrupt"), CORRUPT, ids=[c[0] for c in CORRUPT])
def test_an_entry_whose_record_its_transaction_writes_corrupt_is_refused(
    tmp_path: Path, label: str, corrupt: Callable[[Record], bytes]
) -> None:
    """The ops write the record and point the table at it, but the record
    does not read back: a ``ValidationError`` saying so, nothing committed."""
    target = str(tmp_path / "data")
    with connect(target) as cat:
        table = create(cat)
        append(cat, [1, 2])
        before = cat.latest_version
        now = _current(cat, table.id)
        new = dataclasses.replace(now, snapshot_id=now.snapshot_id + 1)
        work = HookWork(
            ops=[
                Put(snapshot_key(table.id, new.snapshot_id), corrupt(new)),
                Put(table_key(table.id), encode_pointer(table.id, new.snapshot_id)),
            ],
            entries=(_entry(table.id, snapshot_id=new.snapshot_id, metadata=new.metadata),),
        )
        with pytest.raises(ValidationError, match="record is unreadable"):
            cat.execute([], attach=lambda _base, _new: work)
        _nothing_changed(cat, target, before, table.id)


def _deleting_the_range(cat: Catalog, table_id: int) -> HookWork:
    now = _current(cat, table_id)
    return HookWork(
        ops=[DeleteRange(snapshot_prefix(table_id))],
        entries=(_entry(table_id, snapshot_id=now.snapshot_id, metadata=now.metadata),),
    )


def _recording_without_pointing(cat: Catalog, table_id: int) -> HookWork:
    now = _current(cat, table_id)
    new = dataclasses.replace(now, snapshot_id=now.snapshot_id + 1)
    return HookWork(
        ops=[Put(snapshot_key(table_id, new.snapshot_id), encode_record(new))],
        entries=(_entry(table_id, snapshot_id=new.snapshot_id, metadata=new.metadata),),
    )


def _recreating_then_deleting_all(cat: Catalog, table_id: int) -> HookWork:
    now = _current(cat, table_id)
    return HookWork(
        ops=[
            Put(snapshot_key(table_id, now.snapshot_id), encode_record(now)),
            DeleteRange("data."),
        ],
        entries=(_entry(table_id, snapshot_id=now.snapshot_id, metadata=now.metadata),),
    )


MORE_UNPUBLISHED: list[tuple[str, Callable[[Catalog, int], HookWork], str]] = [
    ("a DeleteRange over its record", _deleting_the_range, "leaves no record"),
    ("a new record, the pointer elsewhere", _recording_without_pointing, "would be snapshot 2"),
    (
        "its record put, then every data key deleted",
        _recreating_then_deleting_all,
        "leaves no record",
    ),
]


@pytest.mark.parametrize(
    ("label", "work", "why"),
    UNPUBLISHED + MORE_UNPUBLISHED,
    ids=[u[0] for u in UNPUBLISHED + MORE_UNPUBLISHED],
)
def test_an_entry_its_transaction_leaves_unrecorded_or_not_current_is_refused(
    tmp_path: Path, label: str, work: Callable[[Catalog, int], HookWork], why: str
) -> None:
    """The snapshot a version pins must be recorded and the table's current
    one once the transaction ran, with the metadata the entry names: else
    readers at the version and Iceberg readers of the table disagree."""
    target = str(tmp_path / "data")
    with connect(target) as cat:
        table = create(cat)
        append(cat, [1])
        append(cat, [2])
        before = cat.latest_version
        built = work(cat, table.id)
        with pytest.raises(ValidationError, match=why):
            cat.execute([], attach=lambda _base, _new: built)
        _nothing_changed(cat, target, before, table.id)


def test_one_bad_entry_of_two_tables_commits_neither(tmp_path: Path) -> None:
    target = str(tmp_path / "data")
    with connect(target) as cat:
        table = create(cat)
        other = create(cat, "U")
        append(cat, [1, 2])
        append(cat, [7], "U")
        before = cat.latest_version
        good = _current(cat, other.id)
        entries = (
            _entry(other.id, snapshot_id=good.snapshot_id, metadata=good.metadata),
            _entry(table.id, snapshot_id=99),
        )
        with pytest.raises(ValidationError, match=f"table id {table.id} names data snapshot 99"):
            cat.execute([], attach=_attaching(*entries))
        _nothing_changed(cat, target, before, table.id)
        assert ids_of(read_table(cat, "U")) == [7]


@pytest.mark.parametrize("same_batch", [False, True], ids=["dropped before", "dropped with it"])
def test_an_entry_for_a_dropped_table_is_refused(tmp_path: Path, same_batch: bool) -> None:
    """Its snapshot is still recorded (the janitor has not run), but the
    table is gone at the version: ``NotFoundError``, nothing committed."""
    with connect(str(tmp_path / "data")) as cat:
        table = create(cat)
        append(cat, [1])
        named = _current(cat, table.id)
        drop = DropTable(name="T", reserve_s=0)
        if not same_batch:
            cat.execute([drop])
        before = cat.latest_version
        entry = _entry(table.id, snapshot_id=named.snapshot_id, metadata=named.metadata)
        with pytest.raises(NotFoundError, match=f"Table id {table.id} does not exist"):
            cat.execute([drop] if same_batch else [], attach=_attaching(entry))
        assert cat.latest_version == before
        assert (cat.catalog().table("T") is None) is not same_batch


def test_an_attach_that_raises_or_returns_nonsense_commits_nothing_and_is_finished(
    tmp_path: Path,
) -> None:
    """Its error reaches the caller as it is (a malformed result as a
    ``ValidationError``); a ``HookWork`` it returned is told the attempt
    failed, so it removes what it prepared, as after any failed attempt."""
    target = str(tmp_path / "data")
    with connect(target) as cat:
        table = create(cat)
        append(cat, [1, 2])
        before = cat.latest_version

        def boom(_base: CatalogVersion, _new: CatalogVersion) -> HookWork:
            raise RuntimeError("the caller's own failure")

        with pytest.raises(RuntimeError, match="the caller's own failure"):
            cat.execute([], attach=boom)
        finished: list[bool] = []
        nonsense = HookWork(compares=["not a compare"], finish=finished.append)  # type: ignore[list-item]
        with pytest.raises(ValidationError, match="must be a Compare"):
            cat.execute([], attach=lambda _base, _new: nonsense)
        assert finished == [False]
        _nothing_changed(cat, target, before, table.id)
        assert append(cat, [3]).catalog_version == before + 1


def test_an_entry_a_commit_hook_leaves_unrecorded_is_refused(tmp_path: Path) -> None:
    """The check judges the whole transaction, commit hooks' writes too: an
    ALTER of the table in the same version moves its current snapshot's
    record to a new ``metadata.json`` (the data plane's schema hook), so an
    entry naming that snapshot with the old metadata would disagree with
    its record. Refused, nothing committed, the column not added."""
    target = str(tmp_path / "data")
    with connect(target) as cat:
        table = create(cat)
        append(cat, [1, 2])
        before = cat.latest_version
        now = _current(cat, table.id)
        named = _entry(table.id, snapshot_id=now.snapshot_id, metadata=now.metadata)
        alter = AddColumns(table="T", columns=(ColumnDef(name="N", type=ColumnType.INT64),))
        with pytest.raises(ValidationError, match="its record names metadata"):
            cat.execute([alter], attach=_attaching(dataclasses.replace(named, operation="refs")))
        _nothing_changed(cat, target, before, table.id)
        assert _current(cat, table.id) == now
        assert [c.name for c in cat.catalog().table("T").columns] == ["ID", "V"]  # type: ignore[union-attr]


def test_an_attach_and_a_commit_hook_writing_one_record_is_a_validation_error(
    tmp_path: Path,
) -> None:
    """Both the attach and the schema hook of an ALTER in the same version
    rewrite the current snapshot's record: the hook's write, the later one,
    is not what the entry names. A ``ValidationError`` naming the rule, not
    the store's refusal of a key written twice in one transaction."""
    target = str(tmp_path / "data")
    with connect(target) as cat:
        table = create(cat)
        append(cat, [1, 2])
        before = cat.latest_version
        now = _current(cat, table.id)
        moved = dataclasses.replace(now, metadata=now.metadata + ".other.metadata.json")
        work = HookWork(
            ops=[Put(snapshot_key(table.id, now.snapshot_id), encode_record(moved))],
            entries=(
                _entry(
                    table.id,
                    snapshot_id=now.snapshot_id,
                    metadata=moved.metadata,
                    operation="metadata",
                ),
            ),
        )
        alter = AddColumns(table="T", columns=(ColumnDef(name="N", type=ColumnType.INT64),))
        with pytest.raises(ValidationError, match="its record names metadata"):
            cat.execute([alter], attach=lambda _base, _new: work)
        _nothing_changed(cat, target, before, table.id)
        assert _current(cat, table.id) == now


CATALOG_KEY_OPS: list[tuple[str, Op]] = [
    ("a delete of a log entry", Delete("catalog.update.2")),
    ("a range delete of one", DeleteRange("catalog.update.2")),
    ("a put of the log's version", Put("catalog.version", b"99")),
    ("a range delete of every key", DeleteRange("")),
    ("a range delete of a prefix of 'catalog.'", DeleteRange("cat")),
]


@pytest.mark.parametrize(("label", "op"), CATALOG_KEY_OPS, ids=[c[0] for c in CATALOG_KEY_OPS])
def test_a_commit_hook_writing_the_catalogs_own_keys_is_refused(
    tmp_path: Path, label: str, op: Op
) -> None:
    """The same rule for a commit hook's writes (``add_commit_hook`` is
    public too); the hook's work is told its attempt failed."""
    target = str(tmp_path / "data")
    with connect(target) as cat:
        table = create(cat)
        append(cat, [1, 2])
        before = cat.latest_version
        finished: list[bool] = []
        cat.add_commit_hook(lambda _b, _n, _u: HookWork(ops=[op], finish=finished.append))
        with pytest.raises(ValidationError, match="catalog's own keys"):
            cat.execute([CreateSchema(name="S")])
        assert finished == [False]
        _nothing_changed(cat, target, before, table.id)


@pytest.mark.parametrize(("label", "op"), CATALOG_KEY_OPS, ids=[c[0] for c in CATALOG_KEY_OPS])
def test_an_attach_writing_the_catalogs_own_keys_is_refused(
    tmp_path: Path, label: str, op: Op
) -> None:
    """The ``catalog.`` keys are the log's: an attach that deletes an old
    log entry would commit its version and leave a catalog that no longer
    opens. A ``ValidationError`` naming the key and the rule, nothing
    committed, with or without commands."""
    target = str(tmp_path / "data")
    with connect(target) as cat:
        table = create(cat)
        append(cat, [1, 2])
        before = cat.latest_version
        for commands in ([], [CreateSchema(name="S")]):
            with pytest.raises(ValidationError, match="catalog's own keys"):
                cat.execute(commands, attach=lambda _base, _new: ([], [op]))
        _nothing_changed(cat, target, before, table.id)


_METADATA = ("a.metadata.json", "b.metadata.json")


@st.composite
def _attempts(draw: st.DrawFn) -> tuple[list[tuple[str, int, int]], list[tuple[int, int]]]:
    """Ops as (kind, snapshot offset, variant) and entries as (snapshot
    offset, metadata variant), offsets from the current snapshot."""
    kinds = st.sampled_from(
        [
            "publish",
            "publish",
            "record",
            "bad-record",
            "pointer",
            "bad-pointer",
            "del-record",
            "del-pointer",
            "del-all",
        ]
    )
    ops = draw(st.lists(st.tuples(kinds, st.integers(0, 2), st.integers(0, 2)), max_size=4))
    entries = draw(
        st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=1)
    )
    return ops, entries


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(attempt=_attempts())
def test_any_ops_either_publish_every_entry_or_change_nothing(
    cat: Catalog, attempt: tuple[list[tuple[str, int, int]], list[tuple[int, int]]]
) -> None:
    """Random writes over the table's records and pointer, with an entry:
    the version commits only if, after them, the entry's snapshot is
    recorded with its metadata and current; otherwise a ``CatalogError``
    and no key and no version changed."""
    if cat.catalog().table("T") is None:
        create(cat)
        append(cat, [1])
    table = cat.catalog().table("T")
    assert table is not None
    now = _current(cat, table.id)
    names = (*_METADATA, now.metadata)

    def record_of(offset: int, variant: int) -> Record:
        return dataclasses.replace(
            now, snapshot_id=now.snapshot_id + offset, metadata=names[variant]
        )

    ops: list[Op] = []
    for kind, offset, variant in attempt[0]:
        sid = now.snapshot_id + offset
        if kind == "publish":
            ops.append(Put(snapshot_key(table.id, sid), encode_record(record_of(offset, variant))))
            ops.append(Put(table_key(table.id), encode_pointer(table.id, sid)))
        elif kind == "record":
            ops.append(Put(snapshot_key(table.id, sid), encode_record(record_of(offset, variant))))
        elif kind == "bad-record":
            ops.append(Put(snapshot_key(table.id, sid), b"{garbage"))
        elif kind == "pointer":
            ops.append(Put(table_key(table.id), encode_pointer(table.id, sid)))
        elif kind == "bad-pointer":
            ops.append(Put(table_key(table.id), b"-1"))
        elif kind == "del-record":
            ops.append(Delete(snapshot_key(table.id, sid)))
        elif kind == "del-pointer":
            ops.append(Delete(table_key(table.id)))
        else:
            ops.append(DeleteRange(snapshot_prefix(table.id)))
    entries = tuple(
        _entry(table.id, snapshot_id=now.snapshot_id + offset, metadata=names[variant])
        for offset, variant in attempt[1]
    )
    before = cat.latest_version
    keys = [(kv.key, kv.value) for kv in cat.metastore.range("data.").kvs]
    try:
        result = cat.execute([], attach=lambda _base, _new: HookWork(ops=ops, entries=entries))
    except CatalogError as exc:
        event(f"refused: {type(exc).__name__}")
        assert cat.latest_version == before
        assert [(kv.key, kv.value) for kv in cat.metastore.range("data.").kvs] == keys
        return
    if not entries:
        assert not result.created
        return
    event("committed")
    data = table_data(cat)
    for entry in entries:
        record = data.record(table.id, entry.snapshot_id)
        assert record is not None and record.metadata == entry.metadata
        assert data.current_record(table.id) == record
        assert cat.catalog(result.version).data_snapshot(table.id) == entry.snapshot_id
