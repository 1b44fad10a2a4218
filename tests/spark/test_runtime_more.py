"""More plain ``spark.sql`` through Apache Iceberg's own Spark runtime on
``almanac.spark.session(directory)``: time travel by timestamp and by ref
name, MERGE both ways, metadata tables against Almanac's own view, the
``CALL`` procedures (files are the catalog's: ``gc.enabled=false``), two
Spark applications appending to one table at once, and a catalog server
with tokens. Where it makes sense, Almanac's own reader
(``almanac.data.read_table``) must return the rows Spark does.

The helpers are ``test_runtime``'s; the catalog is a Spark catalog of this
module's own (the run's one session already holds ``test_runtime``'s)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import almanac
import almanac.spark
from almanac.data import DataSnapshot, TableData, read_table
from almanac.node.catalog import Catalog
from tests.spark.test_runtime import (
    _same_rows_in,
    _sql,
    _table,
)
from tests.waiting import PATIENCE

HERE = Path(__file__).resolve().parent

CAT = "rtm"


def _same_rows(spark: Any, cat: Catalog, schema: str, table: str) -> list[dict[str, Any]]:
    return _same_rows_in(spark, CAT, cat, schema, table)


def _current(cat: Catalog, schema: str, table: str) -> DataSnapshot:
    cat.catch_up()
    snapshot = TableData.for_catalog(cat).current(_table(cat, schema, table).id)
    assert snapshot is not None, f"{schema}.{table} has no data snapshot"
    return snapshot


def _ids(cat: Catalog, schema: str, table: str, **options: Any) -> list[int]:
    return sorted(r["id"] for r in read_table(cat, table, schema, **options).to_pylist())


def _spark_ids(spark: Any, query: str) -> list[int]:
    return sorted(row[0] for row in _sql(spark, query))


# -- time travel -----------------------------------------------------------------------


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def test_timestamp_as_of(rt: Any, node: Catalog) -> None:
    _sql(rt, f"CREATE NAMESPACE {CAT}.when")
    table = f"{CAT}.when.t"
    _sql(rt, f"CREATE TABLE {table} (id BIGINT) USING iceberg")
    _sql(rt, f"INSERT INTO {table} VALUES (1)")
    between = _now_ms()
    while _now_ms() <= between:  # the next commit is stamped strictly later
        pass
    _sql(rt, f"INSERT INTO {table} VALUES (2)")
    at = dt.datetime.fromtimestamp(between / 1000, dt.UTC)
    literal = at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]  # the session's time zone is UTC
    assert _spark_ids(rt, f"SELECT id FROM {table} TIMESTAMP AS OF '{literal}'") == [1]
    assert _ids(node, "when", "t", timestamp=at) == [1]
    [(first_commit,)] = _sql(
        rt, f"SELECT committed_at FROM {table}.snapshots ORDER BY committed_at LIMIT 1"
    )
    assert _spark_ids(rt, f"SELECT id FROM {table} TIMESTAMP AS OF '{first_commit}'") == [1]
    assert _spark_ids(rt, f"SELECT id FROM {table}") == [1, 2]
    assert _ids(node, "when", "t") == [1, 2]


def test_version_as_of_a_tag_and_a_branch(rt: Any, node: Catalog) -> None:
    _sql(rt, f"CREATE NAMESPACE {CAT}.named")
    table = f"{CAT}.named.t"
    _sql(rt, f"CREATE TABLE {table} (id BIGINT) USING iceberg")
    _sql(rt, f"INSERT INTO {table} VALUES (1)")
    _sql(rt, f"ALTER TABLE {table} CREATE TAG first")
    _sql(rt, f"ALTER TABLE {table} CREATE BRANCH side")
    _sql(rt, f"INSERT INTO {table} VALUES (2)")
    _sql(rt, f"INSERT INTO {table}.branch_side VALUES (3)")
    assert _spark_ids(rt, f"SELECT id FROM {table} VERSION AS OF 'first'") == [1]
    assert _spark_ids(rt, f"SELECT id FROM {table} VERSION AS OF 'side'") == [1, 3]
    assert _spark_ids(rt, f"SELECT id FROM {table}") == [1, 2]
    node.catch_up()
    assert _ids(node, "named", "t", ref="first") == [1]
    assert _ids(node, "named", "t", ref="side") == [1, 3]
    assert _ids(node, "named", "t") == [1, 2]


# -- MERGE both ways ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_merge(rt: Any, node: Catalog, mode: str) -> None:
    schema = "merge_" + mode.replace("-", "_")
    table = f"{CAT}.{schema}.t"
    _sql(rt, f"CREATE NAMESPACE {CAT}.{schema}")
    _sql(
        rt,
        f"CREATE TABLE {table} (id BIGINT, v STRING) USING iceberg "
        f"TBLPROPERTIES ('write.merge.mode'='{mode}')",
    )
    _sql(
        rt,
        f"INSERT INTO {table} SELECT /*+ REPARTITION(1) */ id, concat('v', id) AS v "
        "FROM range(1, 5)",
    )
    _sql(
        rt,
        f"""MERGE INTO {table} t
            USING (SELECT 2L AS id, 'two' AS v UNION ALL SELECT 3L, NULL
                   UNION ALL SELECT 9L, 'nine') s ON t.id = s.id
            WHEN MATCHED AND s.v IS NULL THEN DELETE
            WHEN MATCHED THEN UPDATE SET v = s.v
            WHEN NOT MATCHED THEN INSERT *""",
    )
    assert _same_rows(rt, node, schema, "t") == [
        {"id": 1, "v": "v1"},
        {"id": 2, "v": "two"},
        {"id": 4, "v": "v4"},
        {"id": 9, "v": "nine"},
    ]
    contents = sorted(content for (content,) in _sql(rt, f"SELECT content FROM {table}.files"))
    current = _current(node, schema, "t")
    deletes = {d for f in current.files for d in f.deletes}
    if mode == "copy-on-write":
        assert 1 not in contents  # the file was rewritten, no delete file
        assert deletes == set()
    else:
        assert 1 in contents  # position deletes beside the untouched file
        assert len(deletes) == contents.count(1)
    assert len(current.files) == contents.count(0)


# -- metadata tables -----------------------------------------------------------------------


def test_metadata_tables_agree_with_almanac(rt: Any, node: Catalog) -> None:
    _sql(rt, f"CREATE NAMESPACE {CAT}.meta")
    table = f"{CAT}.meta.t"
    _sql(rt, f"CREATE TABLE {table} (id BIGINT, v STRING) USING iceberg")
    _sql(rt, f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')")
    _sql(rt, f"INSERT INTO {table} VALUES (3, 'c')")
    _sql(rt, f"ALTER TABLE {table} CREATE TAG kept")
    _sql(rt, f"DELETE FROM {table} WHERE id = 3")
    current = _current(node, "meta", "t")
    data = TableData.for_catalog(node)
    # Almanac's data snapshots, each as the Iceberg snapshot its main points at
    # (creating the tag is a data snapshot of its own, main unmoved)
    chain = [data.iceberg.snapshot_id(s.metadata) for s in data.history(current.table_id)]
    assert [s.operation for s in data.history(current.table_id)][:3] == ["append", "append", "refs"]
    mains = [chain[0], chain[1], chain[3]]
    assert chain[2] == chain[1]

    snapshots = _sql(
        rt, f"SELECT snapshot_id, parent_id FROM {table}.snapshots ORDER BY committed_at"
    )
    assert snapshots == [(mains[0], None), (mains[1], mains[0]), (mains[2], mains[1])]
    history = _sql(
        rt, f"SELECT snapshot_id, is_current_ancestor FROM {table}.history ORDER BY made_current_at"
    )
    assert history == [(m, True) for m in mains]

    files = _sql(rt, f"SELECT file_path, record_count FROM {table}.files")
    assert sorted(p.removeprefix("file:") for p, _ in files) == sorted(
        f.path.removeprefix("file:") for f in current.files
    )
    assert sum(n for _, n in files) == sum(f.rows for f in current.files)

    refs = dict(
        (name, (kind, snapshot))
        for name, kind, snapshot in _sql(rt, f"SELECT name, type, snapshot_id FROM {table}.refs")
    )
    assert refs == {"main": ("BRANCH", mains[2]), "kept": ("TAG", mains[1])}

    manifests = _sql(
        rt,
        f"SELECT added_data_files_count + existing_data_files_count FROM {table}.manifests",
    )
    assert sum(n for (n,) in manifests) == len(current.files)
    assert _same_rows(rt, node, "meta", "t") == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]


# -- CALL procedures -------------------------------------------------------------------------


def _snapshot_ids(spark: Any, table: str) -> list[int]:
    """The table's Iceberg snapshots, oldest first."""
    return [
        s
        for (s,) in _sql(spark, f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at")
    ]


def test_rewrite_data_files(rt: Any, node: Catalog) -> None:
    _sql(rt, f"CREATE NAMESPACE {CAT}.rewrite")
    table = f"{CAT}.rewrite.t"
    _sql(rt, f"CREATE TABLE {table} (id BIGINT, v STRING) USING iceberg")
    for first in (1, 4, 7):
        _sql(rt, f"INSERT INTO {table} SELECT id, 'x' FROM range({first}, {first + 3})")
    before = _current(node, "rewrite", "t")
    assert len(before.files) >= 3
    rows = _same_rows(rt, node, "rewrite", "t")
    [(rewritten, added, *_)] = _sql(
        rt, f"CALL {CAT}.system.rewrite_data_files(table => 'rewrite.t')"
    )
    assert rewritten == len(before.files)
    assert added == 1
    after = _current(node, "rewrite", "t")
    assert after.operation == "replace"
    assert len(after.files) == 1
    assert _same_rows(rt, node, "rewrite", "t") == rows
    old = TableData.for_catalog(node).iceberg.snapshot_id(before.metadata)
    assert _spark_ids(rt, f"SELECT id FROM {table} VERSION AS OF {old}") == [r["id"] for r in rows]


@pytest.mark.parametrize(
    ("procedure", "arguments"),
    [
        ("expire_snapshots", "retain_last => 1, older_than => TIMESTAMP '9999-01-01 00:00:00'"),
        ("remove_orphan_files", "older_than => TIMESTAMP '9999-01-01 00:00:00'"),
    ],
)
def test_gc_procedures_are_refused_and_change_nothing(
    rt: Any, node: Catalog, procedure: str, arguments: str
) -> None:
    """Every table is served with gc.enabled=false (only the catalog deletes
    files), so Iceberg's own check refuses the procedures that delete."""
    schema = f"gc_{procedure}"
    table = f"{CAT}.{schema}.t"
    _sql(rt, f"CREATE NAMESPACE {CAT}.{schema}")
    _sql(rt, f"CREATE TABLE {table} (id BIGINT) USING iceberg")
    _sql(rt, f"INSERT INTO {table} VALUES (1)")
    _sql(rt, f"INSERT INTO {table} VALUES (2)")
    _sql(rt, f"DELETE FROM {table} WHERE id = 1")
    node.catch_up()
    version = node.catalog().version
    snapshots = _snapshot_ids(rt, table)
    files = sorted(str(p) for p in Path(_table_location(node, schema)).rglob("*"))
    with pytest.raises(Exception, match="GC is disabled"):
        _sql(rt, f"CALL {CAT}.system.{procedure}(table => '{schema}.t', {arguments})")
    node.catch_up()
    assert node.catalog().version == version
    assert _snapshot_ids(rt, table) == snapshots
    assert sorted(str(p) for p in Path(_table_location(node, schema)).rglob("*")) == files
    assert _spark_ids(rt, f"SELECT id FROM {table} VERSION AS OF {snapshots[0]}") == [1]
    assert _spark_ids(rt, f"SELECT id FROM {table} VERSION AS OF {snapshots[1]}") == [1, 2]
    assert _same_rows(rt, node, schema, "t") == [{"id": 2}]


def _table_location(cat: Catalog, schema: str) -> str:
    from almanac.data.plane import warehouse_of

    location = warehouse_of(cat)
    assert location is not None
    return os.path.join(location.removeprefix("file:"), str(_table(cat, schema, "t").id))


# -- two Spark applications at once ----------------------------------------------------------


def test_two_spark_applications_append_to_one_table(rt: Any, tmp_path: Path) -> None:
    """Two drivers (append_child.py), each with its own JVM and its own
    in-process catalog server over the same SQLite catalog. ``a``'s server
    holds ``a``'s first commit until ``b`` has committed, so it is refused
    with a 409 and Iceberg's client retries it; then both append at once."""
    target = str(tmp_path / "catalog")
    almanac.spark.add_catalog(rt, "rtm_two", target)
    _sql(rt, "CREATE NAMESPACE rtm_two.s")
    _sql(rt, "CREATE TABLE rtm_two.s.t (id BIGINT, who STRING) USING iceberg")
    _sql(rt, "INSERT INTO rtm_two.s.t VALUES (0, 'test')")
    signals = tmp_path / "signals"
    signals.mkdir()
    count = 5
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE.parents[1] / "src"), str(HERE.parents[1])]),
    }
    logs = {role: (tmp_path / f"{role}.log").open("w") for role in ("a", "b")}
    children = {
        role: subprocess.Popen(
            [
                sys.executable,
                str(HERE / "append_child.py"),
                role,
                target,
                str(tmp_path / f"scratch-{role}"),
                str(signals),
                str(count),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=logs[role],
            text=True,
        )
        for role in ("a", "b")
    }
    seen: dict[str, dict[str, Any]] = {}
    for role, child in children.items():
        out, _ = child.communicate(timeout=PATIENCE * 10)
        logs[role].close()
        assert child.returncode == 0, (tmp_path / f"{role}.log").read_text()[-4000:]
        seen[role] = json.loads(out.strip().splitlines()[-1])
        assert seen[role]["inserts"] == count + 1
    assert any("branch main has changed" in c for c in seen["a"]["conflicts"])
    expected = sorted([0] + [base + i for base in (1000, 2000) for i in range(count + 1)])
    assert _spark_ids(rt, "SELECT id FROM rtm_two.s.t") == expected
    with almanac.connect(target) as cat:
        assert _ids(cat, "s", "t") == expected
        cat_data = TableData.for_catalog(cat)
        chain = cat_data.history(_table(cat, "s", "t").id)
        # one snapshot per INSERT, in one line of parents
        assert len(chain) == len(expected)
        assert [s.parent_id for s in chain[1:]] == [s.snapshot_id for s in chain[:-1]]
        iceberg_ids = [cat_data.iceberg.snapshot_id(s.metadata) for s in chain]
    assert _snapshot_ids(rt, "rtm_two.s.t") == iceberg_ids
    # a's first INSERT, retried, landed after b's first

    def added(first: int) -> int:
        [(snapshot,)] = _sql(
            rt,
            "SELECT snapshot_id FROM rtm_two.s.t.entries "
            f"WHERE readable_metrics.id.lower_bound = {first}",
        )
        return iceberg_ids.index(snapshot)

    assert added(2000) < added(1000)


# -- a catalog server with tokens ------------------------------------------------------------


def test_a_server_with_tokens_takes_create_insert_and_merge(rt: Any, tmp_path: Path) -> None:
    from tests.server.support import Server

    tokens = tmp_path / "tokens"
    tokens.write_text("admin more-admin-52d1a0\n", encoding="utf-8")
    target = str(tmp_path / "served")
    server = Server(target, "--tokens-file", str(tokens), log=tmp_path / "server.log")
    try:
        almanac.spark.add_catalog(rt, "rtm_http", server.url, token="more-admin-52d1a0")
        almanac.spark.add_catalog(rt, "rtm_http_bad", server.url, token="not-the-token")
        _sql(rt, "CREATE NAMESPACE rtm_http.s")
        _sql(rt, "CREATE TABLE rtm_http.s.t (id BIGINT, v STRING) USING iceberg")
        _sql(rt, "INSERT INTO rtm_http.s.t VALUES (1, 'a'), (2, 'b')")
        _sql(
            rt,
            """MERGE INTO rtm_http.s.t t USING (SELECT 2L AS id, 'B' AS v) s ON t.id = s.id
               WHEN MATCHED THEN UPDATE SET v = s.v""",
        )
        with almanac.connect(target) as cat:
            assert _same_rows_in(rt, "rtm_http", cat, "s", "t") == [
                {"id": 1, "v": "a"},
                {"id": 2, "v": "B"},
            ]
            version = cat.catalog().version
        with pytest.raises(Exception, match="Not authorized"):
            _sql(rt, "SELECT id FROM rtm_http_bad.s.t")
        with pytest.raises(Exception, match="Not authorized"):
            _sql(rt, "CREATE TABLE rtm_http_bad.s.u (id BIGINT) USING iceberg")
        with almanac.connect(target) as cat:
            assert cat.catalog().version == version
    finally:
        assert server.stop() == 0, server.log_text()
