"""``RenameTable(new_schema=...)`` moves a table to another schema in one
version: ids, columns and indexes stay (the primary-key index takes the new
name), every name it brings must be free in the target, the old names are
freed, the history says so, and its data reads the same after the move
(and at the version before it, under its old name)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import almanac
from almanac import (
    AlreadyExistsError,
    Catalog,
    CreateIndex,
    CreateSchema,
    EventType,
    NotFoundError,
    RenameTable,
)
from almanac.data import read_table, write_table
from almanac.model.events import Event
from almanac.model.summary import summarize_update

from .support import apply, col, noop, rejected, table

MOVE = RenameTable("T", "U", "A", new_schema="B")


def _two_schemas(cat: Catalog) -> None:
    apply(
        cat,
        CreateSchema("A"),
        CreateSchema("B"),
        table("T", col("V"), schema="A"),
        CreateIndex(name="BY_V", table="T", columns=("V",), schema="A"),
    )


def test_a_move_is_one_version_that_keeps_ids_and_indexes(cat: Catalog) -> None:
    _two_schemas(cat)
    before = cat.catalog()
    old = before.table("T", "A")
    assert old is not None
    result = apply(cat, MOVE)
    after = cat.catalog()
    moved = after.table("U", "B")
    assert moved is not None and after.table("T", "A") is None
    b = after.schema("B")
    assert b is not None and moved.schema_id == b.id
    assert (moved.id, moved.columns, moved.primary_key_index_id) == (
        old.id,
        old.columns,
        old.primary_key_index_id,
    )
    assert moved.update_version == result.version
    assert [t.name for t in after.tables("A")] == [] and [t.name for t in after.tables("B")] == [
        "U"
    ]
    pk, by_v = after.index("U_PK", "B"), after.index("BY_V", "B")
    assert pk is not None and pk.id == old.primary_key_index_id and pk.schema_id == b.id
    assert by_v is not None and by_v.schema_id == b.id and by_v.table_id == old.id
    assert after.index("T_PK", "A") is None and after.index("BY_V", "A") is None
    summary = summarize_update(cat.history()[-1].update, before, after)
    assert summary == "moved table A.T to B.U"
    # The old names are free again, in A.
    apply(cat, table("T", col("V"), schema="A"))
    apply(cat, CreateIndex(name="BY_V", table="T", columns=("V",), schema="A"))


def test_a_move_keeps_its_name_unless_told(cat: Catalog) -> None:
    _two_schemas(cat)
    apply(cat, RenameTable("T", "T", "A", new_schema="B"))
    assert cat.catalog().table("T", "B") is not None
    assert cat.catalog().index("T_PK", "B") is not None
    noop(cat, RenameTable("T", "T", "B", new_schema="B"))


def test_a_move_needs_every_name_it_brings_free_in_the_target(cat: Catalog) -> None:
    _two_schemas(cat)
    rejected(cat, RenameTable("T", "U", "A", new_schema="NOPE"), NotFoundError, "NOPE")
    apply(cat, table("U", schema="B"))
    rejected(cat, MOVE, AlreadyExistsError, "B.U")
    rejected(cat, RenameTable("T", "U_PK", "A", new_schema="B"), AlreadyExistsError, "B.U_PK")
    apply(cat, table("W", col("V"), schema="B"))
    apply(cat, CreateIndex(name="BY_V", table="W", columns=("V",), schema="B"))
    rejected(cat, RenameTable("T", "X", "A", new_schema="B"), AlreadyExistsError, "B.BY_V")


def test_a_move_fires_one_table_alter_event(cat: Catalog) -> None:
    _two_schemas(cat)
    seen: list[Event] = []
    for event_type in EventType:
        cat.listen(event_type, seen.append)
    result = apply(cat, MOVE)
    moved = cat.catalog().table("U", "B")
    assert moved is not None
    assert [(e.type, e.version, e.object_id) for e in seen] == [
        (EventType.TABLE_ALTER, result.version, moved.id)
    ]


def test_a_moved_table_reads_its_data_and_reopens(tmp_path: Path) -> None:
    target = str(tmp_path / "catalog")
    rows = pa.table({"ID": pa.array([1, 2], pa.int64()), "V": pa.array([10, 20], pa.int32())})
    with almanac.connect(target, delay_ms=0) as cat:
        _two_schemas(cat)
        write_table(cat, "T", rows, "A")
        before = cat.latest_version
        apply(cat, MOVE)
        assert read_table(cat, "U", "B").sort_by("ID").equals(rows)
        assert read_table(cat, "T", "A", version=before).sort_by("ID").equals(rows)
        with pytest.raises(NotFoundError):
            read_table(cat, "T", "A")
        write_table(cat, "U", rows.slice(0, 1), "B")
    with almanac.connect(target) as again:  # the log replays the move
        assert again.catalog().table("U", "B") is not None
        assert read_table(again, "U", "B").num_rows == 3
