"""Durability on SQLite: reopen, corruption, several processes, SIGKILL."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import almanac
from almanac.metastore import SqliteMetastore
from almanac.model.schema_sync import SQLITE_DEFAULTS, SchemaSync
from almanac.node.catalog import Catalog
from almanac.node.log import UpdateLog, update_key
from almanac.serialization import encode_catalog
from tests.durable.support import ROOT, child, digest, race_ddl_workers, replay_store, table
from tests.waiting import wait_for


def test_directory_target_creates_store_and_reopens_identically(tmp_path: Path) -> None:
    target = str(tmp_path / "data")
    with almanac.connect(target, delay_ms=0) as cat:
        cat.execute([table("A")])
        cat.execute([almanac.CreateSchema("S"), table("B", schema="S")])
        cat.execute(
            [
                almanac.AddColumns(
                    table="A",
                    columns=(almanac.ColumnDef(name="X", type=almanac.ColumnType.DOUBLE),),
                )
            ]
        )
        before = {
            v: (cat.catalog(v).activation_time, encode_catalog(cat.catalog(v)))
            for v in range(1, cat.latest_version + 1)
        }
    assert (tmp_path / "data" / "catalog.db").exists()
    with almanac.connect(target) as again:
        after = {
            v: (again.catalog(v).activation_time, encode_catalog(again.catalog(v)))
            for v in range(1, again.latest_version + 1)
        }
    assert after == before


def test_sqlite_uri_and_defaults(tmp_path: Path) -> None:
    with almanac.connect(f"sqlite:///{tmp_path}/x.db") as cat:
        assert (cat.delay_ms, cat.max_clock_skew_ms) == (
            SQLITE_DEFAULTS.delay_ms,
            SQLITE_DEFAULTS.max_clock_skew_ms,
        )
        assert cat.execute([table("T")]).version == 2
    with almanac.connect("memory://") as mem:
        assert (mem.delay_ms, mem.max_clock_skew_ms) == (0, 0)


def test_bad_targets_and_settings_are_catalog_errors(tmp_path: Path) -> None:
    with pytest.raises(almanac.CatalogError, match="Unsupported catalog target"):
        almanac.connect("etcd+nope://x")
    with pytest.raises(almanac.CatalogError, match="delay_ms"):
        almanac.connect(str(tmp_path / "d"), delay_ms=-1)


def test_corrupted_entry_refuses_start_and_overwrites_nothing(tmp_path: Path) -> None:
    target = str(tmp_path / "data")
    with almanac.connect(target, delay_ms=0) as cat:
        for i in range(4):
            cat.execute([table(f"T{i}")])
    store = SqliteMetastore(tmp_path / "data" / "catalog.db")
    good = store.get(update_key(3))
    assert good is not None
    bad = good.value[:5] + bytes([good.value[5] ^ 0xFF]) + good.value[6:-3]
    store.put(update_key(3), bad)
    revision = store.revision
    store.close()
    with pytest.raises(almanac.CorruptLogError) as info:
        almanac.connect(target)
    assert "'catalog.update.3'" in str(info.value) and "version 3" in str(info.value)
    store = SqliteMetastore(tmp_path / "data" / "catalog.db")
    try:
        assert store.revision == revision
        kv = store.get(update_key(3))
        assert kv is not None and kv.value == bad
    finally:
        store.close()


def test_schema_sync_waits_for_activation_plus_skew() -> None:
    with almanac.connect("memory://", delay_ms=80, max_clock_skew_ms=40) as cat:
        result = cat.execute([table("T")])
        version = cat.catalog(result.version)
        update = cat.history()[-1]
        assert version.activation_time >= update.commit_time + (80 << 16)
        assert cat.clock.now() > version.activation_time + (40 << 16)
        assert cat.catalog_at(update.commit_time).version == result.version - 1
        assert cat.catalog_at(version.activation_time).version == result.version


def test_metadata_completeness_on_another_node(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    sync = SchemaSync(delay_ms=150, max_clock_skew_ms=5)
    a = Catalog(UpdateLog(SqliteMetastore(path)), sync=sync)
    b = Catalog(UpdateLog(SqliteMetastore(path)), sync=sync)
    try:
        b_before = b.latest_version
        version = a.execute([table("T")]).version
        activation = a.catalog(version).activation_time
        assert b.wait_for_metadata_completeness(activation, timeout=10)
        assert b.latest_version > b_before
        assert b.catalog_at(activation).version == version
    finally:
        a.close()
        b.close()


def test_pins_of_a_killed_process_expire(tmp_path: Path) -> None:
    target = str(tmp_path / "data")
    with almanac.connect(target, delay_ms=0) as cat:
        for i in range(5):
            cat.execute([table(f"T{i}")])
    script = (
        "import sys\n"
        "from almanac.node.catalog import Catalog\n"
        "from almanac.node.log import UpdateLog\n"
        "from almanac.metastore import SqliteMetastore\n"
        f"c = Catalog(UpdateLog(SqliteMetastore({str(tmp_path / 'data' / 'catalog.db')!r})),"
        " pin_ttl_s=1.0)\n"
        "cm = c.pin(3); cm.__enter__(); print('pinned', flush=True); sys.stdin.readline()\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "pinned"
        with almanac.connect(target, delay_ms=0) as cat:
            assert cat.checkpoint_log() == 3
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            # The killed reader's lease (ttl 1 s) must expire first.
            wait_for(lambda: cat.checkpoint_log() == 6, "the checkpoint at version 6")
            assert cat.earliest_version == 6
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_two_processes_commit_concurrently_and_agree(tmp_path: Path) -> None:
    target = str(tmp_path / "data")
    with almanac.connect(target, delay_ms=0):
        pass
    count = 40
    total = 1 + 2 * count
    reports = race_ddl_workers(target, ["A", "B"], count, timeout=120)
    for report in reports:
        assert report["applied"] == list(range(2, total + 1))
    assert reports[0]["digest"] == reports[1]["digest"]
    with almanac.connect(target) as cat:
        assert cat.latest_version == total
        assert len(cat.catalog().tables()) == 2 * count
        assert digest(cat.catalog()) == reports[0]["digest"]


def test_sigkill_mid_execute_leaves_whole_versions(tmp_path: Path) -> None:
    target = str(tmp_path / "data")
    rng = random.Random(7)
    db = tmp_path / "data" / "catalog.db"
    kills = 0
    last_version = 0
    for round_ in range(50):
        proc = child("tests.durable.worker_crash", target, str(round_))
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.0, 0.25))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
        with almanac.connect(target, delay_ms=0) as cat:
            assert cat.latest_version >= last_version
            last_version = cat.latest_version
            store = SqliteMetastore(db)
            try:
                assert digest(replay_store(store)) == digest(cat.catalog())
            finally:
                store.close()
    assert kills == 50
    assert last_version > 50
