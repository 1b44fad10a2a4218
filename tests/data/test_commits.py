"""Data commits: append, overwrite, idempotence, concurrency, two phases."""

from __future__ import annotations

import gc
import multiprocessing
import pickle
import threading
import time
import weakref
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

import almanac
from almanac import (
    Catalog,
    CatalogError,
    ColumnDef,
    ColumnType,
    ConflictError,
    CreateTable,
    ValidationError,
)
from almanac.data import (
    CommitShape,
    DataError,
    DataFile,
    TableData,
    Warehouse,
    WriteStateError,
    conform,
    create_table_as,
    expire_data,
    new_write_id,
    read_table,
    write_files,
    write_table,
)
from almanac.data.plane import warehouse_of
from almanac.errors import NotFoundError
from tests.data import workers
from tests.data.support import (
    append,
    connect,
    create,
    data_keys,
    ids_of,
    own_files,
    rows,
    zone_tablets,
)


def _stage_and_write(
    cat: Catalog, ids: list[int], *, ttl_s: float = 60.0, name: str = "T"
) -> tuple[TableData, str, str, list[DataFile]]:
    data = TableData.for_catalog(cat)
    table = cat.catalog().table(name)
    assert table is not None
    write_id = new_write_id()
    write_dir = data.warehouse.write_dir(table.id, write_id)
    data.staging.stage(write_id, write_dir, ttl_s=ttl_s)
    files = write_files(
        data.warehouse, table, zone_tablets(cat, table), conform(rows(ids), table), write_dir
    )
    return data, write_id, write_dir, list(files)


def test_a_node_has_one_table_data_and_a_catalog_without_a_warehouse_none(cat: Catalog) -> None:
    """``for_catalog`` finds the protocol the node's data plane attached (the
    same object every time, its staging leases with it; one built by hand
    does not replace it), and names a catalog without a warehouse."""
    data = TableData.for_catalog(cat)
    assert TableData.for_catalog(cat) is data
    assert data.catalog is cat
    assert (data.staging.store, data.staging.warehouse) == (data.store, data.warehouse)
    by_hand = TableData(data.store, data.warehouse)
    assert by_hand.catalog is None and TableData.for_catalog(cat) is data
    bare = almanac.connect("memory://")
    with bare, pytest.raises(CatalogError, match="has no warehouse for table data") as info:
        TableData.for_catalog(bare)
    assert "connect(..., warehouse=...)" in str(info.value)


def test_a_closed_catalog_with_a_warehouse_is_collected(tmp_path: Path) -> None:
    """The registries that find a catalog's data plane and protocol do not
    keep the catalog alive once it is closed (each holds it, so a weak key
    alone never let it go)."""
    cat = connect(str(tmp_path / "data"))
    create(cat)
    append(cat, [1])
    assert warehouse_of(cat) is not None
    gone = weakref.ref(cat)
    cat.close()
    del cat
    gc.collect()
    assert gone() is None


def test_append_then_overwrite(cat: Catalog) -> None:
    table = create(cat)
    first = append(cat, [1, 2, 3])
    second = append(cat, [4])
    assert (first.snapshot_id, first.parent_id, first.operation) == (1, None, "append")
    assert (second.snapshot_id, second.parent_id) == (2, 1)
    assert set(own_files(first)) < {f.path for f in second.files}
    assert ids_of(read_table(cat, "T")) == [1, 2, 3, 4]
    third = write_table(cat, "T", rows([9]), operation="overwrite")
    assert (third.snapshot_id, third.operation) == (3, "overwrite")
    assert [f.path for f in third.files] == own_files(third)
    assert ids_of(read_table(cat, "T")) == [9]
    data = TableData.for_catalog(cat)
    history = data.history(table.id)
    assert [s.snapshot_id for s in history] == [1, 2, 3]
    assert [s.commit_time for s in history] == sorted({s.commit_time for s in history})
    assert data.current(table.id) == third
    assert all(
        s.metadata.startswith(f"{data.warehouse.root}/{table.id}/metadata/") for s in history
    )


def test_commit_is_idempotent_by_write_id(cat: Catalog) -> None:
    table = create(cat)
    data, write_id, _, files = _stage_and_write(cat, [1, 2])
    shape = CommitShape.of(cat.catalog(), table)
    once = data.commit(shape, write_id, files, operation="append")
    again = data.commit(shape, write_id, files, operation="append")
    assert once == again
    assert data.staging.is_committed(write_id)
    assert [s.snapshot_id for s in data.history(table.id)] == [1]
    assert ids_of(read_table(cat, "T")) == [1, 2]
    other = create(cat, "OTHER")
    with pytest.raises(WriteStateError, match="committed to table"):
        data.commit(CommitShape.of(cat.catalog(), other), write_id, files, operation="append")
    with pytest.raises(ValidationError, match="operation"):
        data.commit(shape, new_write_id(), files, operation="merge")
    with pytest.raises(ValidationError, match="CommitShape"):
        data.commit(table.id, new_write_id(), files, operation="append")  # type: ignore[arg-type]


def test_concurrent_commits_from_threads_keep_every_file(cat: Catalog) -> None:
    table = create(cat)
    added: list[str] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker(tag: int) -> None:
        try:
            for i in range(8):
                paths = own_files(append(cat, [tag * 100 + i]))
                with lock:
                    added.extend(paths)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    current = TableData.for_catalog(cat).current(table.id)
    assert current is not None and current.snapshot_id == 32
    final = Counter(f.path for f in current.files)
    assert set(final) == set(added) and set(final.values()) == {1}
    assert ids_of(read_table(cat, "T")) == sorted(t * 100 + i for t in range(4) for i in range(8))


def test_concurrent_commits_from_processes_keep_every_file(cat: Catalog, tmp_path: Path) -> None:
    table = create(cat)
    gate = tmp_path / "gate"
    gate.mkdir()
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pending = pool.starmap_async(
            workers.append_many,
            [(cat.target, "T", tag, 20, str(gate)) for tag in (1, 2)],
        )
        deadline = time.monotonic() + 60
        while len(list(gate.glob("ready-*"))) < 2 and not pending.ready():
            assert time.monotonic() < deadline, "the workers never started"
            time.sleep(0.01)
        (gate / "go").touch()
        results = pending.get(timeout=120)
    added = [p for paths in results for p in paths]
    current = TableData.for_catalog(cat).current(table.id)
    assert current is not None and current.snapshot_id == 40
    final = Counter(f.path for f in current.files)
    assert set(final) == set(added) and set(final.values()) == {1}
    assert ids_of(read_table(cat, "T")) == sorted(
        tag * 10_000 + i for tag in (1, 2) for i in range(20)
    )


def test_conflict_error_after_max_attempts(cat: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = create(cat)
    append(cat, [1])
    data, write_id, _, files = _stage_and_write(cat, [2])
    stale = data.records(table.id)[0]
    append(cat, [3])
    metadata = Path(data.warehouse.metadata_dir(table.id))
    before = sorted(metadata.iterdir())
    monkeypatch.setattr(data, "current_record", lambda table_id: stale)
    with pytest.raises(ConflictError, match="3 attempts"):
        data.commit(
            CommitShape.of(cat.catalog(), table),
            write_id,
            files,
            operation="append",
            max_attempts=3,
        )
    assert sorted(metadata.iterdir()) == before, "failed attempts leave no metadata behind"


def test_a_commit_pyiceberg_refuses_is_a_conflict_that_publishes_nothing(
    cat: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A requirement pyiceberg finds unmet while staging the next
    ``metadata.json`` (of an append, or of an expiry's rewrite) is a
    ``ConflictError`` naming the table, not pyiceberg's own exception, and
    pyiceberg's retry does not go looking for the table elsewhere."""
    from pyiceberg.catalog import MetastoreCatalog
    from pyiceberg.exceptions import CommitFailedException

    table = create(cat)
    write_table(cat, "T", rows([1]))
    before = write_table(cat, "T", rows([2]))
    data = TableData.for_catalog(cat)
    records = data.records(table.id)

    def unmet(*_: object, **__: object) -> None:
        raise CommitFailedException("Requirement failed: (forced)")

    monkeypatch.setattr(MetastoreCatalog, "_update_and_stage_table", unmet)
    with pytest.raises(ConflictError, match=r"table 'T' \(id \d+\).*CommitFailedException"):
        write_table(cat, "T", rows([3]))
    with pytest.raises(ConflictError, match=rf"table {table.id} .*CommitFailedException"):
        expire_data(cat, "T", older_than=cat.clock.now())
    monkeypatch.undo()

    assert data.records(table.id) == records
    current = data.current(table.id)
    assert current is not None and current.snapshot_id == before.snapshot_id
    assert sorted(read_table(cat, "T").column("ID").to_pylist()) == [1, 2]


def test_a_commit_to_a_table_dropped_meanwhile_commits_nothing(cat: Catalog) -> None:
    table = create(cat)
    data, write_id, _, files = _stage_and_write(cat, [1])
    shape = CommitShape.of(cat.catalog(), table)
    cat.sql("DROP TABLE T")
    before = cat.latest_version
    with pytest.raises(NotFoundError, match=f"Table id {table.id} does not exist"):
        data.commit(shape, write_id, files, operation="append")
    assert cat.latest_version == before
    assert data.current_record(table.id) is None
    assert not data.staging.is_committed(write_id)


def test_abort_removes_staging_and_refuses_late_commit(cat: Catalog) -> None:
    table = create(cat)
    data, write_id, write_dir, files = _stage_and_write(cat, [1])
    assert Path(write_dir).is_dir()
    data.staging.abort(write_id, write_dir)
    data.staging.abort(write_id, write_dir)
    assert not Path(write_dir).exists()
    assert not any(k.startswith("data.staging.") for k in data_keys(cat))
    with pytest.raises(WriteStateError, match="aborted"):
        data.commit(CommitShape.of(cat.catalog(), table), write_id, files, operation="append")
    assert data.current(table.id) is None


def test_abort_never_touches_a_committed_write(cat: Catalog) -> None:
    table = create(cat)
    data, write_id, write_dir, files = _stage_and_write(cat, [1])
    data.commit(CommitShape.of(cat.catalog(), table), write_id, files, operation="append")
    data.staging.abort(write_id, write_dir)
    assert ids_of(read_table(cat, "T")) == [1]
    with pytest.raises(WriteStateError, match="already committed or aborted"):
        data.staging.stage(write_id, write_dir, ttl_s=5)


def test_a_write_whose_lease_expired_cannot_commit(cat: Catalog) -> None:
    table = create(cat)
    data, write_id, _, files = _stage_and_write(cat, [1], ttl_s=0.2)
    deadline = time.monotonic() + 60  # a failure guard, not a duration
    while any(k.startswith("data.staging.") for k in data_keys(cat)):
        assert time.monotonic() < deadline, "the staging lease never expired"
        time.sleep(0.05)
    with pytest.raises(WriteStateError, match="lease"):
        data.commit(CommitShape.of(cat.catalog(), table), write_id, files, operation="append")


def test_failed_write_aborts_itself(cat: Catalog) -> None:
    create(cat)
    with pytest.raises(DataError):
        write_table(cat, "T", pa.table({"ID": [1], "V": [2]}))
    warehouse = Path(TableData.for_catalog(cat).warehouse.root)
    assert not any(p.suffix == ".parquet" for p in warehouse.rglob("*"))


def test_create_table_as_publishes_table_and_data_together(cat: Catalog) -> None:
    command = CreateTable(
        name="CTAS",
        columns=(
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="V", type=ColumnType.STRING),
        ),
        primary_key=("ID",),
    )
    result, snapshot = create_table_as(cat, command, rows([1, 2, 3]))
    assert result.created and snapshot is not None
    assert snapshot.catalog_version == result.version
    assert ids_of(read_table(cat, "CTAS")) == [1, 2, 3]
    assert ids_of(read_table(cat, "CTAS", version=result.version)) == [1, 2, 3]
    again = CreateTable(
        name="CTAS", columns=command.columns, primary_key=("ID",), if_not_exists=True
    )
    assert create_table_as(cat, again, rows([7]))[1] is None
    broken = CreateTable(name="BROKEN", columns=command.columns, primary_key=("ID",))
    before = cat.latest_version
    with pytest.raises(DataError):
        create_table_as(cat, broken, pa.table({"ID": [None]}))
    assert cat.latest_version == before and cat.catalog().table("BROKEN") is None


def test_for_catalog_needs_a_warehouse() -> None:
    with almanac.connect("memory://") as memory, pytest.raises(CatalogError, match="warehouse"):
        TableData.for_catalog(memory)


def test_warehouse_by_uri_pickles_and_quotes_names(tmp_path: Path) -> None:
    uri = f"file://{tmp_path}/lake"
    warehouse = Warehouse.open(uri)
    again = pickle.loads(pickle.dumps(warehouse))
    assert (again.uri, again.root) == (uri, f"{tmp_path}/lake")
    assert warehouse.write_dir(7, "w1") == f"{tmp_path}/lake/7/w1"
    for bad in ("../x", "..", ".", "metadata", "_x", "a/b", ""):
        with pytest.raises(CatalogError, match="write id"):
            warehouse.write_dir(7, bad)
    with almanac.connect(str(tmp_path / "cat"), delay_ms=0, warehouse=uri) as cat:
        table = create(cat)
        snapshot = append(cat, [1, 2])
        assert all(f.path.startswith(f"{tmp_path}/lake/{table.id}/") for f in snapshot.files)
        assert ids_of(read_table(cat, "T")) == [1, 2]
