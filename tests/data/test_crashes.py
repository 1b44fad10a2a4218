"""A writer killed (SIGKILL) inside its catalog commit, after writing its
data files and Iceberg metadata and before the metastore transaction that
makes the catalog version, leaves nothing visible: no version, no rows;
reads and later commits go on, and the janitor, once the dead writer's lease
is gone, removes what it left even with no grace."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest
from pyiceberg.table import StaticTable

from almanac.data import read_table, run_janitor
from almanac.iceberg import metadata_location
from tests.data import workers
from tests.data.support import append, connect, create, data_keys, ids_of

GUARD_S = 120  # a failure guard, not a duration


def _local(path: str) -> Path:
    return Path(path.removeprefix("file:"))


def test_a_writer_killed_before_its_swap_leaves_nothing_visible(tmp_path: Path) -> None:
    target = str(tmp_path / "data")
    gate = tmp_path / "gate"
    gate.mkdir()
    with connect(target) as cat:
        create(cat)
        append(cat, [1, 2])
        before = cat.latest_version
    ctx = multiprocessing.get_context("spawn")
    child = ctx.Process(
        target=workers.commit_and_hang_at,
        args=(target, None, "T", str(gate), "attach", 10.0),
        daemon=True,
    )
    child.start()
    deadline = time.monotonic() + GUARD_S
    while not (gate / "written").exists():
        assert child.is_alive() and time.monotonic() < deadline
        time.sleep(0.01)
    left = [_local(p) for p in (gate / "written").read_text().splitlines()]
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    child.join(GUARD_S)
    assert child.exitcode == -signal.SIGKILL
    assert all(p.exists() for p in left)
    with connect(target) as cat:
        assert cat.latest_version == before
        assert ids_of(read_table(cat, "T")) == [1, 2]
        run_janitor(cat, grace_s=0)
        if any(k.startswith("data.staging.") for k in data_keys(cat)):
            # The dead writer's lease outlived the whole run: it held its files.
            # (On a machine loaded enough to spend 10 s here it may not have.)
            assert all(p.exists() for p in left)
        append(cat, [3])
        assert cat.latest_version == before + 1
        assert ids_of(read_table(cat, "T")) == [1, 2, 3]
        while any(k.startswith("data.staging.") for k in data_keys(cat)):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        report = run_janitor(cat, grace_s=0)
        assert not report.errors
        assert not any(p.exists() for p in left), [str(p) for p in left if p.exists()]
        assert ids_of(read_table(cat, "T")) == [1, 2, 3]
        append(cat, [4])
        location = metadata_location(target, "T")
        theirs = StaticTable.from_metadata(location).scan().to_arrow()
        assert sorted(theirs.column("ID").to_pylist()) == [1, 2, 3, 4]
        assert ids_of(read_table(cat, "T")) == [1, 2, 3, 4]


@pytest.mark.parametrize("expire", [False, True])
def test_appends_racing_a_janitor_with_no_grace_lose_no_row(tmp_path: Path, expire: bool) -> None:
    """Two processes append while a third runs the janitor with no grace
    (and expires every old snapshot) in a loop: every committed row stays
    readable, by us and by pyiceberg."""
    target = str(tmp_path / "data")
    gate = tmp_path / "gate"
    gate.mkdir()
    with connect(target) as cat:
        create(cat)
        append(cat, [0])
    runs = workers.appenders_beside(
        target, gate, workers.clean_until, (target, "T", str(gate), expire), GUARD_S
    )
    assert runs >= 1
    expected = workers.APPENDED
    with connect(target) as cat:
        assert ids_of(read_table(cat, "T")) == sorted(expected)
        report = run_janitor(cat, grace_s=0)
        assert not report.errors
        assert ids_of(read_table(cat, "T")) == sorted(expected)
        theirs = StaticTable.from_metadata(metadata_location(target, "T")).scan().to_arrow()
        assert sorted(theirs.column("ID").to_pylist()) == sorted(expected)
