"""CREATE / REPLACE TABLE AS SELECT through plain ``spark.sql`` on Apache
Iceberg's runtime are all or nothing: a CTAS onto a taken name, a failed
RTAS, two CTAS of one name at once, a driver killed mid-CTAS and a CTAS on
an ``etcd://`` catalog each leave the catalog whole, as Almanac's own
reader sees it.

Spark stages a CTAS (Iceberg REST ``stage-create``: nothing recorded) and
commits table and data as one catalog version at the end of its job."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import almanac
import almanac.spark
from almanac.data import read_table, run_janitor
from almanac.node.catalog import Catalog
from tests.waiting import PATIENCE, wait_for

HERE = Path(__file__).resolve().parent

CAT = "atomic"
"""The Spark catalog name: the run's session may hold other tests' catalogs."""


def _sql(spark: Any, text: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in spark.sql(text).collect()]


def _ids(cat: Catalog, schema: str, table: str) -> list[int]:
    cat.catch_up()
    return sorted(read_table(cat, table, schema).column("id").to_pylist())


def _files(root: Path) -> list[str]:
    """The Parquet files under ``root``."""
    return sorted(
        os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".parquet")
    )


def _failing_udf(spark: Any) -> None:
    """``atomic_boom(x)``: raises at row 3 (a task fails, so the job does)."""
    from pyspark.sql.functions import udf
    from pyspark.sql.types import LongType

    def boom(x):  # type: ignore[no-untyped-def]  # hints would make Spark guess an Arrow UDF
        if x == 3:
            raise ValueError("boom at row 3")
        return x

    spark.udf.register("atomic_boom", udf(boom, LongType()))


def test_ctas_onto_a_taken_name_changes_nothing(rt: Any, node: Catalog) -> None:
    _sql(rt, f"CREATE NAMESPACE {CAT}.taken")
    _sql(rt, f"CREATE TABLE {CAT}.taken.t USING iceberg AS SELECT id FROM range(3)")
    node.catch_up()
    before = node.latest_version
    with pytest.raises(Exception, match="already exists"):
        _sql(rt, f"CREATE TABLE {CAT}.taken.t USING iceberg AS SELECT id FROM range(10)")
    _sql(rt, f"CREATE TABLE IF NOT EXISTS {CAT}.taken.t USING iceberg AS SELECT 99L AS id")
    with pytest.raises(Exception, match=r"cannot be found|not found"):
        _sql(rt, f"REPLACE TABLE {CAT}.taken.other USING iceberg AS SELECT 1L AS id")
    node.catch_up()
    assert node.latest_version == before
    assert node.catalog().table("other", "taken") is None
    assert _ids(node, "taken", "t") == [0, 1, 2]


def test_a_failed_rtas_keeps_the_old_table(rt: Any, node: Catalog) -> None:
    _failing_udf(rt)
    _sql(rt, f"CREATE NAMESPACE {CAT}.keep")
    _sql(rt, f"CREATE TABLE {CAT}.keep.t USING iceberg AS SELECT id FROM range(5)")
    node.catch_up()
    before = node.latest_version
    old = node.catalog().table("t", "keep")
    for replace in ("REPLACE TABLE", "CREATE OR REPLACE TABLE"):
        with pytest.raises(Exception, match="boom at row 3"):
            _sql(
                rt,
                f"{replace} {CAT}.keep.t USING iceberg AS "
                "SELECT atomic_boom(id) AS id FROM range(0, 8, 1, 2)",
            )
    node.catch_up()
    assert node.latest_version == before
    assert node.catalog().table("t", "keep") == old
    assert _ids(node, "keep", "t") == [0, 1, 2, 3, 4]
    assert sorted(r[0] for r in _sql(rt, f"SELECT id FROM {CAT}.keep.t")) == [0, 1, 2, 3, 4]


def test_two_ctas_of_one_name_at_once_make_one_table(
    rt: Any, node: Catalog, tmp_path: Path
) -> None:
    """Both jobs have staged the table before either commits (each holds its
    one task until both run); the second commit is refused."""
    from pyspark.sql.functions import udf
    from pyspark.sql.types import LongType

    gate = tmp_path / "gate"
    gate.mkdir()
    gate_dir = str(gate)

    def held(x, tag):  # type: ignore[no-untyped-def]
        import pathlib
        import time

        where = pathlib.Path(gate_dir)
        (where / f"running-{tag}").touch()
        deadline = time.monotonic() + 600  # a failure guard for a stuck test
        while not (where / "go").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return x + tag

    rt.udf.register("atomic_held", udf(held, LongType()))
    _sql(rt, f"CREATE NAMESPACE {CAT}.race")
    node.catch_up()
    before = node.latest_version
    outcome: dict[int, BaseException | None] = {}

    def ctas(tag: int) -> None:
        try:
            _sql(
                rt,
                f"CREATE TABLE {CAT}.race.t USING iceberg AS "
                f"SELECT atomic_held(id, {tag}L) AS id FROM range(0, 3, 1, 1)",
            )
            outcome[tag] = None
        except BaseException as exc:
            outcome[tag] = exc

    threads = [threading.Thread(target=ctas, args=(tag,)) for tag in (100, 200)]
    for thread in threads:
        thread.start()
    try:
        wait_for(
            lambda: (
                len(list(gate.glob("running-*"))) == 2 or not all(t.is_alive() for t in threads)
            ),
            "both CTAS jobs to run their task",
            timeout=PATIENCE * 5,
        )
    finally:
        (gate / "go").touch()
        for thread in threads:
            thread.join()
    assert sorted(p.name for p in gate.glob("running-*")) == ["running-100", "running-200"]
    failed = [tag for tag, exc in outcome.items() if exc is not None]
    assert len(failed) == 1, outcome
    [won] = [tag for tag in outcome if tag not in failed]
    assert "already exists" in str(outcome[failed[0]])
    node.catch_up()
    assert node.latest_version == before + 1
    assert _ids(node, "race", "t") == [won, won + 1, won + 2]


def test_a_driver_killed_mid_ctas_leaves_no_table_no_version_and_no_files(
    tmp_path: Path,
) -> None:
    target = str(tmp_path / "catalog")
    with almanac.connect(target) as cat:
        cat.sql("CREATE SCHEMA S")
        before = cat.latest_version
    marker = tmp_path / "started"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE.parents[1] / "src"), str(HERE.parents[1])]),
    }
    child = subprocess.Popen(
        [sys.executable, str(HERE / "ctas_child.py"), target, str(marker), str(tmp_path)],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # A Spark session of its own beside the run's: on a loaded machine
        # its start alone can take minutes.
        wait_for(
            lambda: (
                (marker.exists() and bool(_files(tmp_path / "catalog"))) or child.poll() is not None
            ),
            "the child driver's CTAS to write its first file",
            timeout=PATIENCE * 5,
        )
        assert child.poll() is None, "the child driver ended before it was killed"
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    with almanac.connect(target) as cat:
        assert cat.latest_version == before
        assert cat.catalog().table("T", "S") is None
        # The first task's file, in the staged table's location, goes with
        # the janitor: no snapshot references it.
        assert _files(tmp_path / "catalog")
        report = run_janitor(cat, grace_s=0)
        assert report.staging_removed
        assert _files(tmp_path / "catalog") == []


def test_ctas_on_an_etcd_catalog(rt: Any, tmp_path: Path) -> None:
    from almanac.dev.etcd_local import LocalEtcd

    warehouse = str(tmp_path / "wh")
    with LocalEtcd(1, fsync=False) as cluster:
        uri = f"{cluster.uri}/ctas"
        almanac.spark.add_catalog(rt, "atomic_etcd", uri, warehouse=warehouse)
        _sql(rt, "CREATE NAMESPACE atomic_etcd.s")
        with almanac.connect(uri, warehouse=warehouse) as cat:
            cat.catch_up()
            before = cat.latest_version
            _sql(
                rt, "CREATE TABLE atomic_etcd.s.t USING iceberg AS SELECT id FROM range(0, 6, 1, 3)"
            )
            cat.catch_up()
            assert cat.latest_version == before + 1  # table and data in one version
            assert _ids(cat, "s", "t") == list(range(6))
