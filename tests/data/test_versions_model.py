"""A model of "every commit is a catalog version": random DDL, appends,
overwrites, compactions and two-table commits, some from a second process
on the same SQLite catalog, each predicted by a model that keeps, for
every catalog version, every table's columns and rows.

After each step the versions it made must read as the model says (by
version, by the version's activation time, and with pyiceberg alone from
the data snapshot the version names, stamped with the version of the
table's latest data commit), their history must name exactly their data
commits, and the catalog must have made exactly one version per change;
at the end every version is checked again, and read by the second
process's own node."""

from __future__ import annotations

import itertools
import multiprocessing
import multiprocessing.connection
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from pyiceberg.table import StaticTable

from almanac import (
    AddColumns,
    Catalog,
    ColumnDef,
    ColumnType,
    CreateTable,
    CreateZone,
    DataError,
    DropTable,
    NotFoundError,
)
from almanac.data import (
    CommitShape,
    TableData,
    compact,
    conform,
    new_write_id,
    read_table,
    write_files,
    write_table,
)
from almanac.data.writing import STAGE_TTL_S
from almanac.model.catalog_version import CatalogVersion
from almanac.model.entries import TableDataCommitted
from almanac.node.catalog_types import HookWork
from tests.data.support import connect

NAMES = ("A", "B", "C")
REPLY_TIMEOUT_S = 300.0
"""How long the parent waits for the second process: a spawn on a loaded machine."""

Row = tuple[Any, ...]
Rows = tuple[Row, ...]
Entry = tuple[str, str, tuple[int, int] | None]


@dataclass(frozen=True)
class Shape:
    """One table as the model knows it at one version."""

    columns: tuple[str, ...]
    rows: Rows = ()
    data_version: int | None = None  # the version of its latest data commit
    appends: int = 0  # appends with rows since the last overwrite or compaction


@dataclass(frozen=True)
class Commit:
    """One table's data commit; ``rows`` None for a compaction (same rows)."""

    name: str
    operation: str
    rows: Rows | None = None


Tables = Mapping[str, Shape]


def make_rows(columns: tuple[str, ...], ids: range, repeat: bool = False) -> Rows:
    """Rows for ids of a global counter (so keys never repeat across writes),
    with NULLs here and there; ``repeat`` writes the first row twice."""

    def value(column: str, i: int) -> object:
        if column == "ID":
            return i
        if column == "V":
            return None if i % 5 == 0 else f"v{i}"
        return None if i % 3 == 0 else i * int(column[1:])

    rows = tuple(tuple(value(c, i) for c in columns) for i in ids)
    return rows + rows[:1] if repeat and rows else rows


def arrow_rows(columns: tuple[str, ...], rows: Rows) -> pa.Table:
    kinds = {c: pa.string() if c == "V" else pa.int64() for c in columns}
    return pa.table({c: pa.array([r[i] for r in rows], kinds[c]) for i, c in enumerate(columns)})


def as_rows(table: pa.Table) -> list[Row]:
    """Rows in column order, sorted (NULLs sort by their repr)."""
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


def expected(shape: Shape, columns: tuple[str, ...] | None = None) -> list[Row]:
    keep = [shape.columns.index(c) for c in columns or shape.columns]
    return sorted((tuple(r[i] for i in keep) for r in shape.rows), key=repr)


# -- the second process ----------------------------------------------------------------


def serve(conn: multiprocessing.connection.Connection) -> None:
    """The second process: one catalog node at a time, appending and
    reading on command until told to stop. Every answer is ``("ok",
    value)`` or ``("error", text)``, so the parent never waits forever."""
    cat: Catalog | None = None
    try:
        while True:
            command, *args = conn.recv()
            if command == "stop":
                return
            try:
                if command == "open":
                    if cat is not None:
                        cat.close()
                    cat = connect(args[0])
                    conn.send(("ok", cat.latest_version))
                    continue
                assert cat is not None
                if command == "append":
                    name, columns, rows = args
                    snapshot = write_table(cat, name, arrow_rows(columns, rows))
                    conn.send(("ok", snapshot.catalog_version))
                elif command == "read":
                    cat.catch_up()
                    conn.send(("ok", (cat.latest_version, _read_all(cat, args[0]))))
            except Exception as exc:  # reported to the parent, which fails the test
                conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        if cat is not None:
            cat.close()


def _read_all(cat: Catalog, wanted: list[tuple[str, int]]) -> list[list[Row] | None]:
    out: list[list[Row] | None] = []
    for name, version in wanted:
        try:
            out.append(as_rows(read_table(cat, name, version=version)))
        except NotFoundError:
            out.append(None)
    return out


class Child:
    """The parent's end of the second process."""

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, theirs = ctx.Pipe()
        self.process = ctx.Process(target=serve, args=(theirs,), daemon=True)
        self.process.start()
        theirs.close()
        self.pending = False

    def send(self, *message: object) -> None:
        assert not self.pending, "one command at a time"
        self.conn.send(message)
        self.pending = True

    def reply(self) -> Any:
        assert self.pending
        if not self.conn.poll(REPLY_TIMEOUT_S):
            raise TimeoutError(f"the second process did not answer in {REPLY_TIMEOUT_S} s")
        self.pending = False
        status, value = self.conn.recv()
        assert status == "ok", f"the second process failed: {value}"
        return value

    def ask(self, *message: object) -> Any:
        self.send(*message)
        return self.reply()

    def drain(self) -> None:
        """Forget the answer to a command a failed step left unanswered."""
        if self.pending:
            self.pending = False
            if self.conn.poll(REPLY_TIMEOUT_S):
                self.conn.recv()

    def stop(self) -> None:
        self.conn.send(("stop",))
        self.process.join(60)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


@pytest.fixture(scope="module")
def child() -> Iterator[Child]:
    worker = Child()
    try:
        yield worker
    finally:
        worker.stop()


# -- a commit of two tables --------------------------------------------------------------


def append_both(cat: Catalog, batches: Mapping[str, pa.Table]) -> int:
    """Append to two tables as one catalog version: both snapshots ride in
    one ``execute([], attach=...)``, as a multi-table REST commit does."""
    data = TableData.for_catalog(cat)
    version = cat.catalog()
    staged = []
    for name, rows in batches.items():
        table = version.table(name)
        assert table is not None
        shape = CommitShape.of(version, table)
        write_id = new_write_id()
        write_dir = data.warehouse.write_dir(table.id, write_id)
        lease = data.staging.stage(write_id, write_dir, ttl_s=STAGE_TTL_S)
        files = write_files(
            data.warehouse, table, shape.partitions, conform(rows, table), write_dir
        )
        staged.append((shape, write_id, write_dir, lease, files))

    def attach(_base: CatalogVersion, new: CatalogVersion) -> HookWork:
        works: list[HookWork] = []
        try:
            for shape, write_id, _, _, files in staged:
                parent = data.current_record(shape.table.id)
                work, _ = data.commit_ops(
                    shape, write_id, files, operation="append", parent=parent, at=new
                )
                works.append(work)
        except BaseException:
            for work in works:
                work.finished(False)
            raise

        def finish(ok: bool) -> None:
            for work in works:
                work.finished(ok)

        return HookWork(
            [c for w in works for c in w.compares],
            [o for w in works for o in w.ops],
            finish,
            [e for w in works for e in w.entries],
        )

    try:
        result = cat.execute([], attach=attach)
    except BaseException:
        for _, write_id, write_dir, _, _ in staged:
            data.staging.abort(write_id, write_dir)
        raise
    finally:
        for _, _, _, lease, _ in staged:
            data.staging.release(lease)
    return result.version


# -- the machine -------------------------------------------------------------------------


class VersionsMachine(RuleBasedStateMachine):
    """``model[V]`` is every table at catalog version V."""

    def __init__(self, root: Path, child: Child) -> None:
        super().__init__()
        self.target = str(root / f"cat-{next(_runs)}")
        self.cat = connect(self.target)
        self.data = TableData.for_catalog(self.cat)
        self.child = child
        self.child.drain()
        self.child.ask("open", self.target)
        self.cat.execute([CreateZone(name="Z2", partitions=2)])
        self.model: dict[int, Tables] = {self.cat.latest_version: {}}
        self.checked = self.cat.latest_version
        self.next_id = 0
        self.next_column = 1
        self.keyed: dict[str, bool] = {}
        self.entries: dict[int, list[Entry]] = {}  # the data commits of each version

    # -- the model's bookkeeping

    @property
    def latest(self) -> int:
        return max(self.model)

    @property
    def tables(self) -> Tables:
        return self.model[self.latest]

    def made(self, version: int, change: Callable[[dict[str, Shape]], object]) -> None:
        """Version ``version`` is the next one, and ``change`` (DDL) is what it did."""
        assert version == self.latest + 1, f"version {version} after {self.latest}"
        tables = dict(self.tables)
        change(tables)
        self.model[version] = tables

    def committed(self, version: int, *commits: Commit) -> None:
        """Version ``version`` is the next one, and it made these data commits
        (of distinct tables); ``entries[version]`` is what its history says
        of them: (table, operation, rows added, rows removed), the counts
        None for a compaction (which removes the rows it adds)."""
        shapes: dict[str, Shape] = {}
        entries: list[Entry] = []
        for commit in commits:
            old = self.tables[commit.name]
            if commit.rows is None:
                rows, appends, counts = old.rows, 0, None
            elif commit.operation == "append":
                rows, appends = old.rows + commit.rows, old.appends + bool(commit.rows)
                counts = (len(commit.rows), 0)
            else:
                rows, appends = commit.rows, int(bool(commit.rows))
                counts = (len(commit.rows), len(old.rows))
            shapes[commit.name] = replace(old, rows=rows, data_version=version, appends=appends)
            entries.append((commit.name, commit.operation, counts))
        self.made(version, lambda tables: tables.update(shapes))
        self.entries[version] = sorted(entries)

    def ids(self, count: int) -> range:
        start = self.next_id
        self.next_id += count
        return range(start, start + count)

    def pick(self, data: st.DataObject) -> str:
        return data.draw(st.sampled_from(sorted(self.tables)))

    def widenable(self) -> list[str]:
        """The tables with fewer than two added columns (more add no new case)."""
        return [n for n, s in sorted(self.tables.items()) if len(s.columns) < 4]

    def compactable(self) -> list[str]:
        """The tables where two files of one tablet are likely."""
        return [n for n, s in sorted(self.tables.items()) if s.appends >= 2]

    def rows_for(self, name: str, count: int, repeat: bool = False) -> Rows:
        return make_rows(self.tables[name].columns, self.ids(count), repeat)

    def write(self, name: str, rows: Rows, operation: str = "append") -> int:
        columns = self.tables[name].columns
        snapshot = write_table(self.cat, name, arrow_rows(columns, rows), operation=operation)
        return snapshot.catalog_version

    # -- DDL

    @precondition(lambda self: len(self.tables) < len(NAMES))
    @rule(data=st.data(), keyed=st.booleans())
    def create(self, data: st.DataObject, keyed: bool) -> None:
        name = data.draw(st.sampled_from([n for n in NAMES if n not in self.tables]))
        columns = (
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="V", type=ColumnType.STRING),
        )
        key = ("ID",) if keyed else ()
        result = self.cat.execute(
            [CreateTable(name=name, columns=columns, primary_key=key, zone="Z2")]
        )
        self.keyed[name] = keyed
        self.made(result.version, lambda t: t.__setitem__(name, Shape(("ID", "V"))))

    @precondition(lambda self: self.widenable())
    @rule(data=st.data())
    def add_column(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(self.widenable()))
        column = f"C{self.next_column}"
        self.next_column += 1
        added = ColumnDef(name=column, type=ColumnType.INT64)
        result = self.cat.execute([AddColumns(table=name, columns=(added,))])

        def change(tables: dict[str, Shape]) -> None:
            shape = tables[name]
            rows = tuple((*r, None) for r in shape.rows)
            tables[name] = replace(shape, columns=(*shape.columns, column), rows=rows)

        self.made(result.version, change)

    @precondition(lambda self: self.tables)
    @rule(data=st.data())
    def drop(self, data: st.DataObject) -> None:
        name = self.pick(data)
        result = self.cat.execute([DropTable(name=name)])
        self.made(result.version, lambda tables: tables.__delitem__(name))

    # -- data commits

    @precondition(lambda self: self.tables)
    @rule(data=st.data(), count=st.integers(0, 6), repeat=st.booleans())
    def append(self, data: st.DataObject, count: int, repeat: bool) -> None:
        name = self.pick(data)
        rows = self.rows_for(name, count, repeat)
        if repeat and count and self.keyed[name]:
            before = self.cat.latest_version
            with pytest.raises(DataError, match="must be unique within a write"):
                self.write(name, rows)
            assert self.cat.latest_version == before, "a refused write made a version"
            return
        self.committed(self.write(name, rows), Commit(name, "append", rows))

    @precondition(lambda self: self.tables)
    @rule(data=st.data(), count=st.integers(0, 4))
    def overwrite(self, data: st.DataObject, count: int) -> None:
        name = self.pick(data)
        rows = self.rows_for(name, count)
        self.committed(self.write(name, rows, "overwrite"), Commit(name, "overwrite", rows))

    @precondition(lambda self: self.compactable())
    @rule(data=st.data())
    def compact(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(self.compactable()))
        before = self.cat.latest_version
        snapshot = compact(self.cat, name)
        if snapshot is None:
            assert self.cat.latest_version == before, "a compaction of nothing made a version"
            return
        assert snapshot.operation == "replace"
        self.committed(snapshot.catalog_version, Commit(name, "replace"))

    @precondition(lambda self: len(self.tables) >= 2)
    @rule(data=st.data(), counts=st.tuples(st.integers(0, 4), st.integers(0, 4)))
    def append_two(self, data: st.DataObject, counts: tuple[int, int]) -> None:
        names = data.draw(
            st.lists(st.sampled_from(sorted(self.tables)), min_size=2, max_size=2, unique=True)
        )
        rows = {n: self.rows_for(n, c) for n, c in zip(names, counts, strict=True)}
        version = append_both(
            self.cat, {n: arrow_rows(self.tables[n].columns, r) for n, r in rows.items()}
        )
        self.committed(version, *(Commit(n, "append", r) for n, r in rows.items()))

    @precondition(lambda self: self.tables)
    @rule(data=st.data(), count=st.integers(1, 4))
    def append_elsewhere(self, data: st.DataObject, count: int) -> None:
        name = self.pick(data)
        rows = self.rows_for(name, count)
        version = self.child.ask("append", name, self.tables[name].columns, rows)
        self.cat.catch_up()
        self.committed(version, Commit(name, "append", rows))

    @precondition(lambda self: self.tables)
    @rule(
        data=st.data(),
        counts=st.tuples(st.integers(1, 4), st.integers(0, 4)),
        operation=st.sampled_from(["append", "overwrite", "replace"]),
    )
    def race(self, data: st.DataObject, counts: tuple[int, int], operation: str) -> None:
        """A commit here (an append, an overwrite or a compaction) while the
        second process appends: the versions come in either order, and the
        model applies them in theirs."""
        theirs, ours = self.pick(data), self.pick(data)
        their_rows, our_rows = self.rows_for(theirs, counts[0]), self.rows_for(ours, counts[1])
        self.child.send("append", theirs, self.tables[theirs].columns, their_rows)
        commits = {}
        if operation == "replace":
            snapshot = compact(self.cat, ours)
            if snapshot is not None:
                commits[snapshot.catalog_version] = Commit(ours, operation)
        else:
            commits[self.write(ours, our_rows, operation)] = Commit(ours, operation, our_rows)
        commits[self.child.reply()] = Commit(theirs, "append", their_rows)
        self.cat.catch_up()
        for version in sorted(commits):
            self.committed(version, commits[version])

    # -- what must hold

    @invariant()
    def one_version_per_change(self) -> None:
        self.cat.catch_up()
        assert self.cat.latest_version == self.latest, (
            f"the catalog is at version {self.cat.latest_version}, the model at {self.latest}"
        )

    @invariant()
    def new_versions_read_as_the_model(self) -> None:
        for version in range(self.checked + 1, self.latest + 1):
            self.check(version)
        self.check_history(self.checked + 1)
        self.checked = self.latest

    def check_history(self, since: int) -> None:
        """The history says of each version exactly the data commits it made."""
        for info in self.cat.history(since):
            names = self.cat.catalog(info.version).tables_by_id
            said = sorted(
                (
                    names[e.table_id].name,
                    e.operation,
                    None if e.operation == "replace" else (e.rows_added, e.rows_removed),
                )
                for e in info.update.entries
                if isinstance(e, TableDataCommitted)
            )
            assert said == self.entries.get(info.version, []), f"history of {info.version}"
            for e in info.update.entries:
                if isinstance(e, TableDataCommitted) and e.operation == "replace":
                    assert e.rows_added == e.rows_removed > 0 and e.files_removed >= 2

    def check(self, version: int) -> None:
        """Every reader of this process at ``version``, for every name."""
        at = self.cat.catalog(version)
        tables = self.model[version]
        for name in NAMES:
            shape = tables.get(name)
            table = at.table(name)
            assert (table is None) == (shape is None), f"{name} at {version}"
            if shape is None or table is None:
                with pytest.raises(NotFoundError):
                    read_table(self.cat, name, version=version)
                continue
            want = expected(shape)
            assert tuple(c.name for c in table.columns) == shape.columns
            got = as_rows(read_table(self.cat, name, version=version))
            assert got == want, f"{name} read at version {version}"
            by_time = read_table(self.cat, name, timestamp=at.activation_time)
            assert as_rows(by_time) == want, f"{name} read at the time of version {version}"
            before = self.model.get(version - 1, {}).get(name)
            if before is not None:  # the time just before is version - 1's
                just_before = read_table(self.cat, name, timestamp=at.activation_time - 1)
                assert as_rows(just_before) == expected(before), f"{name} just before {version}"
            snapshot_id = at.data_snapshot(table.id)
            assert (snapshot_id is None) == (shape.data_version is None), f"{name} at {version}"
            if snapshot_id is None:
                assert not want
                continue
            record = self.data.record(table.id, snapshot_id)
            assert record is not None and record.catalog_version == shape.data_version
            # The snapshot's metadata.json carries the table's newest schema
            # (a later ADD COLUMN evolves it): its extra columns read NULL.
            theirs = StaticTable.from_metadata(record.metadata).scan().to_arrow()
            later = [c for c in theirs.column_names if c not in shape.columns]
            assert all(theirs.column(c).null_count == len(theirs) for c in later)
            theirs = theirs.drop_columns(later)
            columns = tuple(theirs.column_names)
            assert as_rows(theirs) == expected(shape, columns), f"pyiceberg: {name} at {version}"

    def teardown(self) -> None:
        try:
            for version in self.model:
                self.check(version)
            self.check_history(min(self.model))
            self.child.drain()
            wanted = [(n, v) for v in sorted(self.model) for n in NAMES]
            latest, reads = self.child.ask("read", wanted)
            assert latest == self.latest
            for (name, version), got in zip(wanted, reads, strict=True):
                shape = self.model[version].get(name)
                want = None if shape is None else expected(shape)
                assert got == want, f"the second process read {name} at version {version}"
        finally:
            self.cat.close()


_runs = itertools.count()


def test_every_version_reads_as_the_model(tmp_path: Path, child: Child) -> None:
    class Here(VersionsMachine):
        def __init__(self) -> None:
            super().__init__(tmp_path, child)

    run_state_machine_as_test(
        Here,
        settings=settings(
            max_examples=10,
            stateful_step_count=20,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
