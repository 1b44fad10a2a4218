"""A writer killed (SIGKILL) at either side of its data commit's metastore
transaction, on SQLite and on a real etcd: after the crash the version and
its rows exist together or neither does, every version pins the snapshot
the table's pointer names, and the janitor, once the dead writer's lease is
gone, removes exactly what no version reads."""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from almanac import Catalog
from almanac.data import TableData, read_table, run_janitor, write_table
from almanac.dev.etcd_local import LocalEtcd
from tests.data import workers
from tests.data.support import Place, catalog_place, create, data_keys, ids_of, rows
from tests.waiting import PATIENCE, wait_for


@pytest.fixture(scope="module")
def etcd1() -> Iterator[LocalEtcd]:
    """One real etcd for the module; each test takes a namespace."""
    with LocalEtcd(1, fsync=False) as cluster:
        yield cluster


@pytest.fixture(params=["sqlite", "etcd"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    etcd = request.getfixturevalue("etcd1") if request.param == "etcd" else None
    return catalog_place(request.param, tmp_path, etcd)


def _local(path: str) -> Path:
    return Path(path.removeprefix("file:"))


def _consistent(cat: Catalog, name: str) -> None:
    """Every version pins the snapshot whose record says it was made then,
    and the latest pins what the table's pointer names."""
    data = TableData.for_catalog(cat)
    table = cat.catalog().table(name)
    assert table is not None
    current = data.current_record(table.id)
    assert current is not None
    assert cat.catalog().data_snapshot(table.id) == current.snapshot_id
    for record in data.records(table.id):
        assert cat.catalog(record.catalog_version).data_snapshot(table.id) == record.snapshot_id


def _crash_at(where: Place, gate: Path, point: str) -> list[Path]:
    ctx = multiprocessing.get_context("spawn")
    child = ctx.Process(
        target=workers.commit_and_hang_at,
        args=(where.target, where.warehouse, "T", str(gate), point),
        daemon=True,
    )
    child.start()
    wait_for(lambda: (gate / "written").exists() or not child.is_alive(), "the writer to hang")
    assert child.is_alive(), f"the writer exited with {child.exitcode}"
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    child.join(PATIENCE)
    assert child.exitcode == -signal.SIGKILL
    return [_local(p) for p in (gate / "written").read_text().splitlines()]


@pytest.mark.parametrize("point", ["attach", "published"])
def test_a_writer_killed_around_its_transaction_leaves_version_and_rows_together(
    where: Place, tmp_path: Path, point: str
) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    with where.connect() as cat:
        create(cat)
        write_table(cat, "T", rows([1, 2]))
        before = cat.latest_version
    left = _crash_at(where, gate, point)
    assert all(p.exists() for p in left)
    committed = point == "published"
    expected = [1, 2, 777] if committed else [1, 2]
    with where.connect() as cat:
        assert cat.latest_version == before + committed
        assert ids_of(read_table(cat, "T")) == expected
        assert ids_of(read_table(cat, "T", version=before)) == [1, 2]
        _consistent(cat, "T")
        wait_for(
            lambda: not any(k.startswith("data.staging.") for k in data_keys(cat)),
            "the dead writer's staging lease to expire",
        )
        report = run_janitor(cat, grace_s=0)
        assert not report.errors
        assert all(p.exists() == committed for p in left), [(p, p.exists()) for p in left]
        write_table(cat, "T", rows([3]))
        assert cat.latest_version == before + committed + 1
        assert ids_of(read_table(cat, "T")) == sorted([*expected, 3])
        _consistent(cat, "T")
    with where.connect() as again:
        assert ids_of(read_table(again, "T")) == sorted([*expected, 3])
        _consistent(again, "T")
