"""Compaction: small files of a tablet rewritten as an Iceberg ``replace``
snapshot that keeps every row once, keeps concurrent appends, and gives up
cleanly when an input file left the table."""

from __future__ import annotations

import multiprocessing
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.table import StaticTable

from almanac import (
    AlterColumn,
    Catalog,
    ColumnType,
    ConflictError,
    DropColumns,
    NotFoundError,
    ValidationError,
)
from almanac.data import (
    CommitShape,
    DataFile,
    TableData,
    compact,
    conform,
    expire_data,
    new_write_id,
    read_file,
    read_table,
    run_janitor,
    table_partitions,
    tablets_of,
    write_files,
    write_table,
)
from almanac.data.compaction import plan_compaction, run_compaction
from almanac.data.snapshots import DataSnapshot
from almanac.errors import SnapshotExpiredError
from almanac.model.descriptors import Table
from tests.data import workers
from tests.data.support import append, connect, create, rows, table_data


def _rows(table: Table, files: tuple[DataFile, ...], data: TableData) -> Counter[tuple[Any, ...]]:
    """The snapshot's rows as a multiset, read file by file."""
    out: Counter[tuple[Any, ...]] = Counter()
    for f in files:
        for batch in read_file(table, f, data.warehouse):
            out.update(zip(*(c.to_pylist() for c in batch.columns), strict=True))
    return out


def _table_rows(cat: Catalog, **at: Any) -> Counter[tuple[Any, ...]]:
    result = read_table(cat, "T", **at)
    return Counter(zip(*(c.to_pylist() for c in result.columns), strict=True))


def _current(cat: Catalog, table: Table) -> DataSnapshot:
    current = table_data(cat).current(table.id)
    assert current is not None
    return current


def _parquet_files(cat: Catalog, table: Table) -> set[str]:
    root = Path(table_data(cat).warehouse.table_dir(table.id))
    return {str(p) for p in root.rglob("*.parquet")}


def test_compaction_merges_small_files_and_keeps_every_row(cat: Catalog) -> None:
    table = create(cat, colocation=("ID",))
    for i in range(30):
        append(cat, range(i * 4, i * 4 + 4))
    before = _current(cat, table)
    expected = _table_rows(cat)
    assert sum(expected.values()) == 120

    result = compact(cat, "T")

    assert result is not None
    assert (result.operation, result.parent_id) == ("replace", before.snapshot_id)
    per_tablet = Counter(f.partition for f in before.files)
    assert len(result.files) == len(per_tablet) < len(before.files)
    assert {f.partition for f in result.files} == set(per_tablet)
    assert _table_rows(cat) == expected
    data = table_data(cat)
    partitions = table_partitions(cat.catalog(), table)
    for f in result.files:  # every row stays in its own tablet
        stored = pa.Table.from_batches(list(read_file(table, f, data.warehouse)))
        assert set(tablets_of(stored, table, partitions).tolist()) == {f.partition}
    # pyiceberg alone sees a replace snapshot with the same rows and totals.
    iceberg = StaticTable.from_metadata(result.metadata)
    snapshot = iceberg.current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    assert snapshot.summary.operation.value == "replace"
    assert snapshot.summary["total-records"] == "120"
    assert snapshot.summary["total-data-files"] == str(len(result.files))
    assert sorted(iceberg.scan().to_arrow().column("ID").to_pylist()) == list(range(120))
    # Time travel before the compaction still reads the old small files.
    old = table_data(cat).snapshot_at(table.id, timestamp=before.commit_time)
    assert old is not None and old.snapshot_id == before.snapshot_id
    assert _table_rows(cat, timestamp=before.commit_time) == expected
    # Nothing is left to merge, so a second run publishes nothing.
    assert compact(cat, "T") is None
    assert _current(cat, table).snapshot_id == result.snapshot_id


def test_one_tablet_and_the_target_size_bound_what_is_merged(cat: Catalog) -> None:
    table = create(cat, colocation=("ID",))
    for i in range(40):
        append(cat, [i, i + 1000, i + 2000])
    before = _current(cat, table)
    per_tablet = Counter(f.partition for f in before.files)
    busiest = per_tablet.most_common(1)[0][0]
    expected = _table_rows(cat)

    result = compact(cat, "T", tablet=busiest)

    assert result is not None
    untouched = {f.path for f in before.files if f.partition != busiest}
    assert untouched <= {f.path for f in result.files}
    assert [f.partition for f in result.files if f.path not in untouched] == [busiest]
    assert _table_rows(cat) == expected
    # A target smaller than the files makes every file "large": nothing to do.
    assert compact(cat, "T", target_file_mb=1e-6) is None
    # A target of about two files merges them pairwise.
    size = max(f.size for f in result.files if f.path in untouched)
    paired = compact(cat, "T", target_file_mb=2.2 * size / 2**20)
    assert paired is not None
    assert len(paired.files) < len(result.files)
    assert _table_rows(cat) == expected


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    batches=st.lists(
        st.lists(st.integers(0, 50), min_size=1, max_size=6, unique=True), min_size=1, max_size=8
    ),
    target_mb=st.sampled_from([1e-6, 0.0008, 0.002, 128.0]),
    tablet=st.none() | st.integers(0, 24),
)
def test_compaction_never_changes_the_rows(
    batches: list[list[int]], target_mb: float, tablet: int | None
) -> None:
    """Any appends (ids repeated across appends included: Iceberg enforces no key), any
    target, any tablet: the rows are the same multiset, no file is added
    where none was merged, and files outside the tablet are untouched."""
    with tempfile.TemporaryDirectory() as tmp, connect(tmp) as cat:
        table = create(cat, colocation=("ID",))
        for ids in batches:
            append(cat, ids)
        before = _current(cat, table)
        expected = _table_rows(cat)
        result = compact(cat, "T", target_file_mb=target_mb, tablet=tablet)
        after = _current(cat, table)
        assert _table_rows(cat) == expected
        assert _rows(table, after.files, table_data(cat)) == expected
        if result is None:
            assert after.snapshot_id == before.snapshot_id
            return
        assert len(after.files) < len(before.files)
        kept = {f.path for f in before.files if tablet is not None and f.partition != tablet}
        assert kept <= {f.path for f in after.files}


def test_an_append_between_planning_and_commit_is_kept(cat: Catalog) -> None:
    create(cat, colocation=("ID",))
    for i in range(10):
        append(cat, [i])
    data = table_data(cat)
    plan = plan_compaction(cat, data, "T")
    assert plan.groups
    late = append(cat, [100, 101, 102])

    result = run_compaction(data, plan)

    assert result is not None and result.parent_id == late.snapshot_id
    late_files = {f.path for f in late.files} - {f.path for f in plan.files}
    assert late_files <= {f.path for f in result.files}
    assert not {f.path for f in plan.files} & {f.path for f in result.files}
    assert sorted(read_table(cat, "T").column("ID").to_pylist()) == [*range(10), 100, 101, 102]


def test_an_overwrite_between_planning_and_commit_publishes_nothing(cat: Catalog) -> None:
    table = create(cat, colocation=("ID",))
    for i in range(10):
        append(cat, [i])
    data = table_data(cat)
    plan = plan_compaction(cat, data, "T")
    overwrite = write_table(cat, "T", rows([7, 8]), operation="overwrite")
    referenced = {f.path for s in data.history(table.id) for f in s.files}

    with pytest.raises(ConflictError, match="no longer in its current data snapshot"):
        run_compaction(data, plan)

    assert _current(cat, table).snapshot_id == overwrite.snapshot_id
    assert sorted(read_table(cat, "T").column("ID").to_pylist()) == [7, 8]
    # Its output was aborted at once: no Parquet file that no snapshot names.
    assert _parquet_files(cat, table) == referenced


def test_two_compactions_of_the_same_files_publish_one(cat: Catalog) -> None:
    table = create(cat, colocation=("ID",))
    for i in range(10):
        append(cat, [i, i + 50])
    data = table_data(cat)
    first, second = plan_compaction(cat, data, "T"), plan_compaction(cat, data, "T")
    winner = run_compaction(data, first)
    assert winner is not None
    with pytest.raises(ConflictError):
        run_compaction(data, second)
    assert _current(cat, table).snapshot_id == winner.snapshot_id
    assert sorted(read_table(cat, "T").column("ID").to_pylist()) == sorted(
        [*range(10), *range(50, 60)]
    )


def test_replace_commits_name_their_files_and_keep_their_rows(cat: Catalog) -> None:
    table = create(cat, colocation=("ID",))
    first = append(cat, [1, 2, 3])
    data = table_data(cat)
    shape = CommitShape.of(cat.catalog(), table)
    write_id = new_write_id()
    write_dir = data.warehouse.write_dir(table.id, write_id)
    data.staging.stage(write_id, write_dir, ttl_s=60)
    fewer = write_files(
        data.warehouse, table, shape.partitions, conform(rows([1, 2]), table), write_dir
    )
    with pytest.raises(ValidationError, match="names the files it replaces"):
        data.commit(shape, write_id, fewer, operation="replace")
    with pytest.raises(ValidationError, match="names the files it replaces"):
        data.commit(shape, write_id, fewer, operation="append", replaces=first.files)
    with pytest.raises(ValidationError, match="must keep the rows"):
        data.commit(shape, write_id, fewer, operation="replace", replaces=first.files)
    assert _current(cat, table).snapshot_id == first.snapshot_id


def test_compaction_reads_by_column_id_after_schema_changes(cat: Catalog) -> None:
    """Files written before an ADD (with a default), a DROP and a widening
    are rewritten as a read at the latest version sees them."""
    create(cat, colocation=("ID",))
    for i in range(5):
        append(cat, range(i * 40, i * 40 + 40))
    cat.sql("ALTER TABLE T ADD COLUMN C INT DEFAULT 7")
    write_table(cat, "T", pa.table({"ID": pa.array([1000, 1001], pa.int64()), "C": [1, 2]}))
    cat.execute([DropColumns(table="T", columns=("V",))])
    cat.execute([AlterColumn(table="T", column="C", type=ColumnType.INT64)])
    write_table(cat, "T", pa.table({"ID": pa.array([1002], pa.int64()), "C": [2**40]}))
    expected = _table_rows(cat)
    result = compact(cat, "T")
    assert result is not None
    assert _table_rows(cat) == expected
    assert sorted(expected.elements()) == [
        *((i, 7) for i in range(200)),
        (1000, 1),
        (1001, 2),
        (1002, 2**40),
    ]


def test_the_janitor_keeps_replaced_files_until_no_kept_snapshot_needs_them(
    cat: Catalog,
) -> None:
    table = create(cat, colocation=("ID",))
    for i in range(8):
        append(cat, [i, i + 100])
    before = _current(cat, table)
    result = compact(cat, "T")
    assert result is not None
    replaced = {f.path for f in before.files} - {f.path for f in result.files}
    assert replaced
    run_janitor(cat, grace_s=0)
    assert replaced <= _parquet_files(cat, table)  # time travel still needs them
    assert _table_rows(cat, timestamp=before.commit_time) == _table_rows(cat)

    # The compaction's parent stopped being current only at the compaction.
    expire_data(cat, "T", older_than=result.commit_time - 1)
    run_janitor(cat, grace_s=0)
    assert replaced <= _parquet_files(cat, table)

    expire_data(cat, "T", older_than=result.commit_time)
    run_janitor(cat, grace_s=0)
    on_disk = _parquet_files(cat, table)
    assert not replaced & on_disk
    assert {f.path for f in result.files} <= on_disk
    assert sorted(read_table(cat, "T").column("ID").to_pylist()) == sorted(
        [*range(8), *range(100, 108)]
    )
    with pytest.raises(SnapshotExpiredError):
        read_table(cat, "T", timestamp=before.commit_time)


def test_compaction_racing_appends_from_two_processes(cat: Catalog, tmp_path: Path) -> None:
    """Every append lands exactly once, and every snapshot along the way
    holds each row committed before it exactly once."""
    table = create(cat, colocation=("ID",))
    append(cat, [0])
    gate = tmp_path / "gate"
    gate.mkdir()
    per_worker = 25
    compactions = 0
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pending = pool.starmap_async(
            workers.append_many,
            [(cat.target, "T", tag, per_worker, str(gate)) for tag in (1, 2)],
        )
        deadline = time.monotonic() + 60
        while len(list(gate.glob("ready-*"))) < 2 and not pending.ready():
            assert time.monotonic() < deadline, "the workers never started"
            time.sleep(0.01)
        (gate / "go").touch()
        while not pending.ready():
            if compact(cat, "T") is not None:
                compactions += 1
        pending.get(timeout=120)
    if compact(cat, "T") is not None:
        compactions += 1
    assert compactions >= 1

    expected = {0} | {tag * 10_000 + i for tag in (1, 2) for i in range(per_worker)}
    final = Counter(read_table(cat, "T").column("ID").to_pylist())
    assert final == Counter(expected)

    data = table_data(cat)
    previous: Counter[tuple[Any, ...]] = Counter()
    replaces = 0
    for snapshot in data.history(table.id):
        now = _rows(table, snapshot.files, data)
        assert max(now.values()) == 1, f"snapshot {snapshot.snapshot_id} repeats a row"
        if snapshot.operation == "replace":
            replaces += 1
            assert now == previous, f"replace {snapshot.snapshot_id} changed the rows"
        else:
            assert snapshot.operation == "append"
            assert previous <= now and sum((now - previous).values()) == 1
        previous = now
    assert replaces == compactions
    assert {row[0] for row in previous} == expected


def test_compact_checks_its_arguments(cat: Catalog) -> None:
    create(cat, colocation=("ID",))
    append(cat, [1, 2])
    bad: Any = "memory://"
    with pytest.raises(ValidationError, match="'cat' of compact"):
        compact(bad, "T")
    with pytest.raises(ValidationError, match="'target_file_mb' of compact"):
        compact(cat, "T", target_file_mb=0)
    with pytest.raises(ValidationError, match="'tablet' of compact"):
        compact(cat, "T", tablet=bad)
    with pytest.raises(ValidationError, match="no tablet 25 to compact"):
        compact(cat, "T", tablet=25)
    with pytest.raises(NotFoundError, match=r"'PUBLIC\.NOPE' does not exist"):
        compact(cat, "NOPE")
    assert compact(cat, "T", tablet=0) is None


def _split_ids(cat: Catalog, table: Table) -> tuple[list[int], int]:
    """Two ids of one tablet, and one id of another tablet."""
    ids = list(range(64))
    partitions = table_partitions(cat.catalog(), table)
    tablets = tablets_of(rows(ids), table, partitions).tolist()
    first = tablets[0]
    same = [i for i, t in zip(ids, tablets, strict=True) if t == first]
    other = next(i for i, t in zip(ids, tablets, strict=True) if t != first)
    return same[:2], other


def test_a_compaction_prunes_no_manifest_of_its_files_when_threads_judge_them_at_once(
    cat: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pyiceberg judges a snapshot's manifests by their partition bounds on
    several threads; its evaluator keeps the manifest being judged on itself,
    so two threads at once judged one manifest by another's bounds, pruned a
    manifest holding a file the compaction replaces, and the commit failed
    with a raw "Missing required files to delete" (seen under load). The
    interleaving is forced here: the thread judging a manifest of the
    compacted tablet waits, bounds stored, until a thread judging another
    tablet's manifest has stored its own."""
    from pyiceberg.expressions import visitors
    from pyiceberg.typedef import KeyDefaultDict

    table = create(cat, colocation=("ID",))
    (a, b), c = _split_ids(cat, table)
    first, second, other = append(cat, [a]), append(cat, [b]), append(cat, [c])
    tablet = first.files[0].partition
    data = table_data(cat)
    metadata = data.iceberg.metadata(other.metadata)
    manifest_of = {
        e.data_file.file_path: m.manifest_path
        for m in data.iceberg.manifests(metadata)
        for e in m.fetch_manifest_entry(data.iceberg.io)
    }
    victim = manifest_of[second.files[0].path]
    bystander = manifest_of[next(f.path for f in other.files if f.partition != tablet)]
    expected = _table_rows(cat)

    judging = threading.local()
    victim_stored, bystander_stored = threading.Event(), threading.Event()
    victim_judged = threading.Event()
    gated: list[str] = []
    evaluate, visit = visitors._ManifestEvalVisitor.eval, visitors.visit

    def gated_eval(self: Any, manifest: Any) -> bool:
        judging.path = manifest.manifest_path
        if manifest.manifest_path == bystander and "bystander" not in gated:
            gated.append("bystander")
            assert victim_stored.wait(60), "the victim's manifest was never judged"
        elif manifest.manifest_path != victim:
            # Any third manifest waits, so only the bystander's bounds
            # can take the victim's place.
            assert victim_judged.wait(60), "the victim's manifest was never judged"
        return bool(evaluate(self, manifest))

    def gated_visit(obj: Any, visitor: Any) -> Any:
        if isinstance(visitor, visitors._ManifestEvalVisitor):
            path = getattr(judging, "path", None)
            if path == bystander:
                bystander_stored.set()
            elif path == victim and "victim" not in gated:
                gated.append("victim")
                victim_stored.set()
                assert bystander_stored.wait(60), "the other manifest was never judged"
                try:
                    return visit(obj, visitor)
                finally:
                    victim_judged.set()
        return visit(obj, visitor)

    lock = threading.RLock()
    missing = KeyDefaultDict.__missing__

    def one_evaluator(self: Any, key: Any) -> Any:
        # One evaluator per spec, built once (pyiceberg's design; a thread
        # that looks it up while another builds it may build its own).
        with lock:
            return self[key] if dict.__contains__(self, key) else missing(self, key)

    monkeypatch.setattr(visitors._ManifestEvalVisitor, "eval", gated_eval)
    monkeypatch.setattr(visitors, "visit", gated_visit)
    monkeypatch.setattr(KeyDefaultDict, "__missing__", one_evaluator)

    result = compact(cat, "T", tablet=tablet)

    assert sorted(gated) == ["bystander", "victim"]
    assert result is not None and result.operation == "replace"
    replaced = {first.files[0].path, second.files[0].path}
    assert not replaced & {f.path for f in result.files}
    assert {f.path for f in other.files if f.partition != tablet} <= {f.path for f in result.files}
    assert _table_rows(cat) == expected


def test_a_compaction_pyiceberg_refuses_is_a_conflict_that_publishes_nothing(
    cat: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever makes pyiceberg refuse the replace after our own checks
    passed, the compaction is a ``ConflictError`` naming the table: nothing
    published, its output aborted, no metadata file left behind."""
    from pyiceberg.exceptions import ValidationException
    from pyiceberg.table.update.snapshot import _OverwriteFiles

    table = create(cat, colocation=("ID",))
    for i in range(10):
        append(cat, [i])
    before = _current(cat, table)
    data = table_data(cat)
    referenced = {f.path for s in data.history(table.id) for f in s.files}
    metadata_dir = Path(data.warehouse.table_dir(table.id), "metadata")
    metadata_files = set(metadata_dir.iterdir())

    def refuse(self: Any, deleted_entries: Any) -> None:
        raise ValidationException("Missing required files to delete: (forced)")

    monkeypatch.setattr(_OverwriteFiles, "_validate_required_deletes", refuse)
    with pytest.raises(ConflictError, match=r"table 'T' \(id \d+\).*ValidationException"):
        compact(cat, "T")

    assert _current(cat, table).snapshot_id == before.snapshot_id
    assert sorted(read_table(cat, "T").column("ID").to_pylist()) == list(range(10))
    assert _parquet_files(cat, table) == referenced
    assert set(metadata_dir.iterdir()) == metadata_files
