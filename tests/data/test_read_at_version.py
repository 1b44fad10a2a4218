"""A read at catalog version V, or at time T, sees exactly the data
committed at or before it, in every reader: ``almanac.data.read_table``,
Flight through a real tablet server process, the system tables and the
console over HTTP; on a SQLite catalog and on a namespace of a real
3-member etcd cluster. Appends, an ALTER, an overwrite and a compaction
each make a version whose rows every reader agrees on."""

from __future__ import annotations

import re
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

import almanac
from almanac import Catalog
from almanac.data import (
    CommitShape,
    TableData,
    compact,
    conform,
    expire_data,
    new_write_id,
    read_table,
    write_files,
    write_table,
)
from almanac.data.plane import attach_data_plane
from almanac.dev.etcd_local import LocalEtcd
from almanac.errors import (
    CatalogError,
    SnapshotExpiredError,
    ValidationError,
    VersionNotFoundError,
)
from almanac.metastore import Metastore, SqliteMetastore, Watch, WatchEvent
from almanac.metastore.etcd import EtcdMetastore
from almanac.model.clock import LOGICAL_BITS
from almanac.model.schema_sync import SchemaSync
from almanac.model.targets import STORE_FILE, parse_target
from almanac.node.log import UpdateLog
from almanac.placement import TabletState, read_reports, read_route
from almanac.server.background import BackgroundServer
from almanac.system_tables import system_table
from almanac.tserver.client import read_table as flight_read
from tests.data.support import Place, catalog_place, create, ids_of, rows
from tests.tserver.support import TabletServerProcess, place, spread
from tests.waiting import wait_for

PARTITIONS = 2


@pytest.fixture(scope="module")
def etcd3() -> Iterator[LocalEtcd]:
    """One real 3-member cluster for the module; each test takes a namespace."""
    with LocalEtcd(3, fsync=False) as cluster:
        yield cluster


@pytest.fixture(params=["sqlite", "etcd"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    etcd = request.getfixturevalue("etcd3") if request.param == "etcd" else None
    return catalog_place(request.param, tmp_path, etcd)


@dataclass(frozen=True)
class Step:
    """One catalog version: what it did, the rows and columns of T there."""

    version: int
    what: str
    ids: list[int]
    columns: list[str]


def _wide(ids: range) -> pa.Table:
    return pa.table(
        {
            "ID": pa.array(list(ids), pa.int64()),
            "V": [f"v{i}" for i in ids],
            "C": pa.array([i * 10 for i in ids], pa.int64()),
        }
    )


def _history(cat: Catalog) -> list[Step]:
    """Append, append, ALTER ADD COLUMN, append, overwrite, append, compact:
    one version each, checked to be the next one."""
    steps: list[Step] = []
    ids: list[int] = []
    columns = ["ID", "V"]

    def made(what: str) -> None:
        steps.append(Step(cat.latest_version, what, sorted(ids), list(columns)))
        if len(steps) > 1:
            assert steps[-1].version == steps[-2].version + 1, what

    made("create")
    for lo in (0, 10):
        snapshot = write_table(cat, "T", rows(range(lo, lo + 10)))
        ids += range(lo, lo + 10)
        made(f"append {lo}")
        assert snapshot.catalog_version == cat.latest_version
    cat.sql("ALTER TABLE T ADD COLUMN C INT64")
    columns.append("C")
    made("alter")
    write_table(cat, "T", _wide(range(20, 30)))
    ids += range(20, 30)
    made("append 20")
    write_table(cat, "T", _wide(range(100, 105)), operation="overwrite")
    ids[:] = range(100, 105)
    made("overwrite")
    write_table(cat, "T", _wide(range(105, 110)))
    ids += range(105, 110)
    made("append 105")
    assert compact(cat, "T") is not None
    made("compact")
    return steps


def _page(url: str, token: str) -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        body: bytes = response.read()
    return body.decode("utf-8")


def _snapshot_rows(html: str) -> list[list[str]]:
    """The cells of the table page's data snapshots (id, version, ..., rows)."""
    start = html.find('id="snapshots"')
    if start < 0:
        return []
    body = html[start : html.find("</table>", start)]
    found = []
    for row in re.findall(r"<tr>(.*?)</tr>", body, re.S):
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        if cells:
            found.append(cells)
    return found


def _later(html: str) -> int:
    found = re.search(r'id="data-later">(\d+) later snapshot', html)
    return 0 if found is None else int(found.group(1))


def _running(cat: Catalog, table_id: int, server: str) -> bool:
    route = read_route(cat.metastore, table_id)
    report = read_reports(cat.metastore).get(server)
    if route is None or report is None:
        return False
    states = {(r.table_id, r.tablet_id): r.state for r in report.tablets}
    return all(states.get((table_id, t.id)) is TabletState.RUNNING for t in route.tablets)


def test_every_reader_at_every_version_sees_exactly_its_data(where: Place, tmp_path: Path) -> None:
    cat = almanac.connect(where.target, warehouse=where.warehouse, delay_ms=0, max_clock_skew_ms=0)
    server = None
    tserver = None
    try:
        cat.sql(f"CREATE ZONE Z WITH (PARTITIONS={PARTITIONS}, REPLICAS=1)")
        cat.sql("CREATE TABLE T (ID INT64 PRIMARY KEY, V VARCHAR(20)) COLOCATE BY (ID) ZONE Z")
        table = cat.catalog().table("T")
        assert table is not None
        steps = _history(cat)
        data_steps = [s for s in steps if s.what not in ("create", "alter")]
        tserver = TabletServerProcess(
            where.target,
            "ts1",
            tmp_path / "ts1",
            tmp_path / "ts1.log",
            "--warehouse",
            where.warehouse,
        )
        assert tserver.location.startswith("grpc://127.0.0.1:")
        place(cat.metastore, table.id, spread(PARTITIONS, ["ts1"], 1))
        wait_for(lambda: _running(cat, table.id, "ts1"), "T running on ts1")
        server = BackgroundServer(cat).start()
        # A later append, after every step: no read at a step's version sees it.
        write_table(cat, "T", _wide(range(900, 905)))
        for i, step in enumerate(steps):
            v = step.version
            at = cat.catalog(v)
            where_ = f"{step.what} (version {v})"
            # almanac.data.read_table, by version, by its activation time,
            # and at times between it and the next version, the last one just before it.
            got = read_table(cat, "T", version=v)
            assert ids_of(got) == step.ids, where_
            assert got.column_names == step.columns, where_
            assert ids_of(read_table(cat, "T", timestamp=at.activation_time)) == step.ids, where_
            following = cat.catalog(v + 1).activation_time
            for moment in ((at.activation_time + following) // 2, following - 1):
                between = read_table(cat, "T", timestamp=moment)
                assert ids_of(between) == step.ids, where_
                assert between.column_names == step.columns, where_
            # Flight, through the tablet server process, by version and by time.
            flown = flight_read(cat, "PUBLIC.T", version=v)
            assert ids_of(flown) == step.ids, where_
            assert flown.column_names == step.columns, where_
            flown = flight_read(cat, "PUBLIC.T", timestamp=following - 1)
            assert ids_of(flown) == step.ids, where_
            assert flown.column_names == step.columns, where_
            # System tables: the history ends at v; the columns are v's.
            history = system_table(cat, "SYSTEM.HISTORY", version=v).column("VERSION")
            assert max(history.to_pylist()) == v, where_
            described = system_table(cat, "SYSTEM.COLUMNS", version=v).to_pylist()
            shown = [r["NAME"] for r in described if r["TABLE"] == "T"]
            assert shown == step.columns, where_
            # The console's table page, pinned at v: its newest snapshot is
            # the one v holds, with v's row count; later ones are counted.
            html = _page(f"{server.url}/tables/PUBLIC/T?version={v}", server.token)
            listed = _snapshot_rows(html)
            done = [s for s in data_steps if s.version <= v]
            assert [int(r[1]) for r in listed] == [s.version for s in done][-len(listed) :]
            if done:
                assert int(listed[-1][5].replace(",", "")) == len(step.ids), where_
            assert _later(html) == len(data_steps) - len(done) + 1, where_
            if i == len(steps) - 1:
                # The latest read sees the later append.
                assert 900 in ids_of(read_table(cat, "T"))
                assert 900 in ids_of(flight_read(cat, "PUBLIC.T"))
    finally:
        if server is not None:
            server.stop()
        if tserver is not None:
            tserver.close()
        cat.close()


def test_a_read_at_a_time_agrees_with_the_version_active_then_over_older_data(
    tmp_path: Path,
) -> None:
    """Data written before data commits were versions keeps its stamps: a
    commit time there may lie after the activation of the version that
    publishes the next snapshot. A read at that activation time must still
    see that version's data, as a read at the version does."""
    with almanac.connect(str(tmp_path / "c"), delay_ms=0, max_clock_skew_ms=0) as cat:
        table = create(cat)
        data = TableData.for_catalog(cat)
        # A snapshot published as releases before this one did: in its own
        # transaction, no catalog version, stamped with the version it was
        # written against and a commit time ahead (that version's activation
        # pushed by a schema-sync delay).
        base = cat.catalog()
        shape = CommitShape.of(base, table)
        write_id = new_write_id()
        write_dir = data.warehouse.write_dir(table.id, write_id)
        lease = data.staging.stage(write_id, write_dir, ttl_s=60.0)
        files = write_files(
            data.warehouse, table, shape.partitions, conform(rows(range(10)), table), write_dir
        )
        ahead = base.evolve(activation_time=base.activation_time + (60_000 << LOGICAL_BITS))
        work, old = data.commit_ops(
            shape, write_id, files, operation="append", parent=None, at=ahead
        )
        published = data.store.txn(list(work.compares), list(work.ops)).succeeded
        work.finished(published)
        assert published and (old.catalog_version, old.commit_time) == (
            base.version,
            ahead.activation_time,
        )
        data.staging.release(lease)
        assert cat.latest_version == base.version
        # Read at the version it was written against, as before.
        assert ids_of(read_table(cat, "T", version=base.version)) == list(range(10))

        new = write_table(cat, "T", rows(range(10, 20)))
        v = cat.latest_version
        assert new.catalog_version == v and new.commit_time > cat.catalog(v).activation_time
        both = list(range(20))
        assert ids_of(read_table(cat, "T", version=v)) == both
        assert ids_of(read_table(cat, "T", timestamp=cat.catalog(v).activation_time)) == both
        assert data.snapshot_at(table.id, timestamp=cat.catalog(v).activation_time) == new


def test_a_read_past_the_latest_or_truncated_version_is_a_clear_error(tmp_path: Path) -> None:
    with almanac.connect(str(tmp_path / "c"), delay_ms=0, max_clock_skew_ms=0) as cat:
        table = create(cat)
        first = cat.latest_version
        for lo in (0, 10, 20):
            write_table(cat, "T", rows(range(lo, lo + 10)))
        latest = cat.latest_version
        with pytest.raises(VersionNotFoundError) as beyond:
            read_table(cat, "T", version=latest + 1)
        assert isinstance(beyond.value, CatalogError)
        assert str(beyond.value) == (
            f"Catalog version {latest + 1} does not exist; the latest version is {latest}"
        )
        # Version 0 and an instant before the catalog existed name no version
        # (the rules of every front end's read point), not a missing table.
        with pytest.raises(VersionNotFoundError, match="versions start at 1"):
            read_table(cat, "T", version=0)
        with pytest.raises(VersionNotFoundError, match="the catalog did not exist yet"):
            read_table(cat, "T", timestamp=1)
        with pytest.raises(VersionNotFoundError, match="the catalog did not exist yet"):
            flight_read(cat, "T", timestamp=1)
        with pytest.raises(ValidationError, match="not both"):
            flight_read(cat, "T", version=latest, timestamp=cat.clock.now())
        assert cat.checkpoint_log(latest - 1) == latest - 1
        with pytest.raises(VersionNotFoundError) as gone:
            read_table(cat, "T", version=first)
        assert str(gone.value) == (
            f"Catalog version {first} is no longer available; the earliest available "
            f"version is {latest - 1}"
        )
        # The versions kept still read exactly their data.
        assert ids_of(read_table(cat, "T", version=latest - 1)) == list(range(20))
        assert ids_of(read_table(cat, "T", version=latest)) == list(range(30))
        # A version whose data snapshot was expired says so, never other rows.
        newest = TableData.for_catalog(cat).current_record(table.id)
        assert newest is not None
        expired = expire_data(cat, "T", older_than=newest.commit_time)
        assert [s.catalog_version for s in expired] == [first + 1, latest - 1]
        with pytest.raises(SnapshotExpiredError) as lost:
            read_table(cat, "T", version=latest - 1)
        assert isinstance(lost.value, CatalogError)
        assert str(lost.value) == (
            f"The data of table {table.id} at catalog version {latest - 1} (data snapshot "
            f"{expired[-1].snapshot_id}) was expired"
        )
        assert ids_of(read_table(cat, "T", version=latest)) == list(range(30))


class _HeldWatch(Watch):
    """A watch that keeps each event it receives while ``flowing`` is clear:
    the gate is checked after the event arrived, so an event of a commit
    made after clearing it is never delivered early."""

    def __init__(self, inner: Watch, flowing: threading.Event) -> None:
        self._inner = inner
        self._flowing = flowing
        self._pending: WatchEvent | None = None

    def next(self, timeout: float | None = None) -> WatchEvent | None:
        if self._pending is None:
            self._pending = self._inner.next(timeout)
        if self._pending is None or not self._flowing.wait(timeout):
            return None
        event, self._pending = self._pending, None
        return event

    def close(self) -> None:
        self._inner.close()

    @property
    def closed(self) -> bool:
        return self._inner.closed


class _Lagging(Metastore):
    """Mixin: the catalog's real store, whose watches hold their events while
    ``flowing`` is clear, so a node on it falls behind the log on demand."""

    flowing: threading.Event

    def watch(self, prefix: str, from_revision: int | None = None) -> Watch:
        inner = super().watch(prefix, from_revision)
        return _HeldWatch(inner, self.flowing)


class _LaggingSqlite(_Lagging, SqliteMetastore):
    pass


class _LaggingEtcd(_Lagging, EtcdMetastore):
    pass


def test_a_node_behind_the_log_reads_one_version_whole(where: Place) -> None:
    """A node that has not applied the latest versions yet reads at a time
    the data of the version it holds for that time, with that version's
    schema; its latest read catches up first, so schema and data are both
    the latest's."""
    parsed = parse_target(where.target)
    with almanac.connect(where.target, warehouse=where.warehouse, delay_ms=0) as a:
        create(a)
        write_table(a, "T", rows(range(10)))
        store: _Lagging
        if parsed.kind == "etcd":
            store = _LaggingEtcd(parsed.endpoints, namespace=parsed.namespace)
        else:
            assert parsed.root is not None
            store = _LaggingSqlite(parsed.root / STORE_FILE)
        store.flowing = threading.Event()
        store.flowing.set()
        b = Catalog(
            UpdateLog(store),
            sync=SchemaSync(delay_ms=0, max_clock_skew_ms=0),
            root=parsed.root,
            target=str(parsed),
            node_name="behind",
        )
        try:
            attach_data_plane(b, where.warehouse)
            held = b.latest_version
            store.flowing.clear()
            a.sql("ALTER TABLE T ADD COLUMN C INT64")
            write_table(a, "T", _wide(range(10, 20)))
            assert b.latest_version == held < a.latest_version
            now = b.clock.update(a.catalog().activation_time)
            at_now = read_table(b, "T", timestamp=now)
            assert ids_of(at_now) == list(range(10))
            assert at_now.column_names == ["ID", "V"]
            assert at_now.equals(read_table(b, "T", version=held))
            latest = read_table(b, "T")
            assert b.latest_version == a.latest_version
            assert latest.column_names == ["ID", "V", "C"]
            assert ids_of(latest) == list(range(20))
        finally:
            store.flowing.set()
            b.close()
