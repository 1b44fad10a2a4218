"""Tablet servers as real ``almanac tserver`` processes on a SQLite catalog
with a warehouse: registration, heartbeats and reports, local tablets,
Flight reads, ``almanac.tserver.client.read_table``, leader compaction, deletion,
lease loss, kill -9 mid-read and SIGTERM.

One module-scoped cluster (three servers) serves every test; the tests that
kill or stop a server come last."""

from __future__ import annotations

import json
import random
import re
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as flight
import pytest

import almanac
from almanac import Catalog, ColumnDef, ColumnType, CreateTable, CreateZone
from almanac.cli import main
from almanac.data import TableData, read_table, tablets_of, write_table
from almanac.errors import CatalogError, NotFoundError, ValidationError
from almanac.placement import (
    TabletState,
    read_reports,
    read_route,
    read_servers,
    route_key,
    server_index_key,
)
from almanac.tserver.client import read_table as flight_read
from almanac.tserver.ticket import TabletTicket
from tests.tserver.support import TabletServerProcess, place, spread
from tests.waiting import PATIENCE, wait_for

pytestmark = pytest.mark.xdist_group("tservers")
"""One cluster for the module: its tests share one worker (``--dist loadgroup``)."""

NAMES = ("ts1", "ts2", "ts3")
SERVER_ARGS = ("--report-interval", "0.3", "--lease-ttl", "3", "--batch-rows", "500")
COMPACT_AT = 5


@dataclass
class Cluster:
    target: str
    cat: Catalog
    servers: dict[str, TabletServerProcess]
    root: Path

    @property
    def store(self) -> almanac.metastore.Metastore:
        return self.cat.metastore

    def table_id(self, name: str) -> int:
        table = self.cat.catalog().table(name)
        assert table is not None
        return table.id


def _rows(ids: range | list[int], prefix: str = "v") -> pa.Table:
    return pa.table({"ID": pa.array(list(ids), pa.int64()), "V": [f"{prefix}{i}" for i in ids]})


def _create(cat: Catalog, name: str, zone: str) -> None:
    cat.execute(
        [
            CreateTable(
                name=name,
                columns=(
                    ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
                    ColumnDef(name="V", type=ColumnType.STRING),
                ),
                primary_key=("ID",),
                colocation=("ID",),
                zone=zone,
            )
        ]
    )


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by("ID")


def _running_everywhere(cluster: Cluster, table_id: int, version: int | None = None) -> bool:
    """Every replica of every tablet of the table reports it RUNNING (at
    ``version`` when given)."""
    route = read_route(cluster.store, table_id)
    reports = read_reports(cluster.store)
    assert route is not None
    for tablet in route.tablets:
        if tablet.state is not TabletState.RUNNING:
            continue
        for server in tablet.replicas:
            report = reports.get(server)
            listed = {(r.table_id, r.tablet_id): r for r in report.tablets} if report else {}
            mine = listed.get((table_id, tablet.id))
            if mine is None or mine.state is not TabletState.RUNNING:
                return False
            if version is not None and mine.table_version != version:
                return False
    return True


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("tservers")
    target = str(root / "catalog")
    cat = almanac.connect(target, delay_ms=0, max_clock_skew_ms=0)
    servers: dict[str, TabletServerProcess] = {}
    try:
        cat.execute([CreateZone(name="Z", partitions=4, replicas=2)])
        cat.execute([CreateZone(name="ONE", partitions=1, replicas=2)])
        _create(cat, "T", "Z")
        for lo in (0, 300, 600):
            write_table(cat, "T", _rows(range(lo, lo + 300)))
        extra = ("--compact-small-files", str(COMPACT_AT), "--target-file-mb", "64")
        for name in NAMES:
            servers[name] = TabletServerProcess(
                target, name, root / name, root / f"{name}.log", *SERVER_ARGS, *extra
            )
        for server in servers.values():
            assert server.location.startswith("grpc://127.0.0.1:")
        c = Cluster(target, cat, servers, root)
        place(cat.metastore, c.table_id("T"), spread(4, NAMES, 2))
        wait_for(lambda: _running_everywhere(c, c.table_id("T")), "T running on its replicas")
        yield c
    finally:
        for server in servers.values():
            server.close()
        cat.close()


def _report_sequence(cluster: Cluster, name: str) -> int:
    report = read_reports(cluster.store).get(name)
    return -1 if report is None else report.sequence


def _rounds(cluster: Cluster, name: str, count: int = 2) -> None:
    """Wait until ``name`` reported ``count`` more times: everything it saw
    before has been acted on."""
    start = _report_sequence(cluster, name)
    wait_for(lambda: _report_sequence(cluster, name) >= start + count, f"{name} to report")


def test_servers_register_under_leases_heartbeat_and_report(cluster: Cluster) -> None:
    infos = read_servers(cluster.store)
    assert sorted(infos) == list(NAMES)
    for name, info in infos.items():
        assert cluster.servers[name].location == f"grpc://{info.host}:{info.flight_port}"
        assert info.host == "127.0.0.1"
        ttl = cluster.store.lease_ttl(info.lease)
        assert ttl is not None and 0 < ttl <= 3
    seq = {n: _report_sequence(cluster, n) for n in NAMES}
    for name in NAMES:
        wait_for(lambda n=name: _report_sequence(cluster, n) > seq[n] + 2, "periodic reports")  # type: ignore[misc]
    # The heartbeat keeps the lease alive well past its time to live.
    for name, info in read_servers(cluster.store).items():
        assert cluster.store.lease_ttl(info.lease) is not None, name
    route = read_route(cluster.store, cluster.table_id("T"))
    assert route is not None
    reports = read_reports(cluster.store)
    for name in NAMES:
        mine = {t.id for t in route.tablets if name in t.replicas}
        reported = {r.tablet_id for r in reports[name].tablets if r.state is TabletState.RUNNING}
        assert reported == mine
        assert all(r.table_version == 1 for r in reports[name].tablets)


def test_each_replica_caches_the_files_of_its_tablet(cluster: Cluster) -> None:
    table_id = cluster.table_id("T")
    route = read_route(cluster.store, table_id)
    current = TableData.for_catalog(cluster.cat).current(table_id)
    assert route is not None and current is not None

    def meta(name: str, tablet_id: int) -> dict[str, Any]:
        path = cluster.root / name / "tablets" / str(table_id) / str(tablet_id) / "tablet.json"
        return dict(json.loads(path.read_text())) if path.exists() else {}

    for tablet in route.tablets:
        for name in tablet.replicas:
            wait_for(
                lambda: meta(name, tablet.id).get("snapshot_id") == current.snapshot_id,  # noqa: B023
                f"{name} to serve the current data of tablet {tablet.id}",
            )
    for tablet in route.tablets:
        expected = sum(f.partition == tablet.partition for f in current.files)
        for name in tablet.replicas:
            base = cluster.root / name / "tablets" / str(table_id) / str(tablet.id)
            assert meta(name, tablet.id)["partition"] == tablet.partition
            assert len(list((base / "files").iterdir())) == expected
        for name in set(NAMES) - set(tablet.replicas):
            assert not (cluster.root / name / "tablets" / str(table_id) / str(tablet.id)).exists()


def _do_get(location: str, ticket: bytes) -> pa.Table:
    client = flight.connect(location)
    try:
        return client.do_get(flight.Ticket(ticket)).read_all()
    finally:
        client.close()


def test_do_get_streams_exactly_the_rows_of_its_bucket(cluster: Cluster) -> None:
    table_id = cluster.table_id("T")
    version = cluster.cat.catalog()
    table = version.table("T")
    assert table is not None
    everything = read_table(cluster.cat, "T")
    buckets = tablets_of(everything, table, 4)
    route = read_route(cluster.store, table_id)
    assert route is not None
    seen = 0
    for tablet in route.tablets:
        ticket = TabletTicket(table_id, tablet.id, version.version).encode()
        expected = everything.filter(pa.array(buckets == tablet.partition))
        assert expected.num_rows > 0
        for name in tablet.replicas:
            got = _do_get(cluster.servers[name].location, ticket)
            assert _sorted(got).equals(_sorted(expected)), (name, tablet)
        seen += expected.num_rows
    assert seen == everything.num_rows == 900


@pytest.mark.parametrize(
    ("ticket", "message"),
    [
        (b"garbage", "A tablet ticket is the JSON object"),
        (b'{"table_id":1}', "A tablet ticket is the JSON object"),
        (b'{"table_id":-1,"tablet_id":0,"version":1}', "Field 'table_id' of a tablet ticket"),
        (b'{"table_id":true,"tablet_id":0,"version":1}', "Field 'table_id' of a tablet ticket"),
        (b"\xff\xfe", "A tablet ticket is the JSON object"),
        (
            b'{"table_id":999999,"tablet_id":0,"version":1}',
            "does not host tablet 0 of table 999999",
        ),
        (b'{"table_id":TID,"tablet_id":77,"version":1}', "does not host tablet 77"),
        (
            b'{"table_id":TID,"tablet_id":0,"version":99999999}',
            "Catalog version 99999999 does not exist",
        ),
        (b'{"table_id":TID,"tablet_id":0,"version":1}', "does not exist at catalog version 1"),
    ],
)
def test_bad_tickets_get_a_flight_error_naming_the_problem(
    cluster: Cluster, ticket: bytes, message: str
) -> None:
    ticket = ticket.replace(b"TID", str(cluster.table_id("T")).encode())
    route = read_route(cluster.store, cluster.table_id("T"))
    assert route is not None
    leader = route.tablet(0)
    assert leader is not None and leader.leader is not None
    with pytest.raises(flight.FlightServerError) as info:
        _do_get(cluster.servers[leader.leader].location, ticket)
    assert message in str(info.value)
    assert f"Tablet server '{leader.leader}'" in str(info.value)


def test_read_table_equals_the_arrow_read_at_every_version(cluster: Cluster) -> None:
    before = cluster.cat.latest_version
    got = flight_read(cluster.target, "PUBLIC.T")
    assert _sorted(got).equals(_sorted(read_table(cluster.cat, "T")))
    assert got.num_rows == 900
    assert pc.count_distinct(got.column("ID")).as_py() == 900
    # Through an open catalog, with a filter, and at an older catalog version.
    write_table(cluster.cat, "T", _rows(range(900, 950)))
    latest = flight_read(cluster.cat, "t", filter=pc.field("ID") >= 880)
    assert sorted(latest.column("ID").to_pylist()) == list(range(880, 950))
    # The append is a catalog version of its own: the version before it reads without it.
    assert cluster.cat.latest_version == before + 1
    older = flight_read(cluster.cat, "T", version=before)
    assert sorted(older.column("ID").to_pylist()) == list(range(900))
    empty = flight_read(cluster.cat, "T", filter=pc.field("ID") < 0)
    assert empty.num_rows == 0 and empty.schema == got.schema


def test_read_table_refuses_bad_input_clearly(cluster: Cluster) -> None:
    with pytest.raises(NotFoundError, match=re.escape("Table 'PUBLIC.NOPE' does not exist")):
        flight_read(cluster.cat, "NOPE")
    with pytest.raises(ValidationError, match=re.escape("cannot be evaluated on table 'PUBLIC.T'")):
        flight_read(cluster.cat, "T", filter=pc.field("MISSING") == 1)
    with pytest.raises(ValidationError, match="Parameter 'filter' of read_table"):
        flight_read(cluster.cat, "T", filter="ID > 1")
    with pytest.raises(CatalogError, match="Catalog version 99999 does not exist"):
        flight_read(cluster.cat, "T", version=99999)
    _create(cluster.cat, "UNPLACED", "Z")
    unplaced = re.escape("Table 'PUBLIC.UNPLACED' has no tablet route")
    with pytest.raises(CatalogError, match=unplaced):
        flight_read(cluster.cat, "UNPLACED")


def test_an_alter_reaches_every_replica_and_reads_see_it(cluster: Cluster) -> None:
    cluster.cat.sql("ALTER TABLE T ADD COLUMN C INT DEFAULT 7")
    table = cluster.cat.catalog().table("T")
    assert table is not None and table.table_version == 2
    wait_for(lambda: _running_everywhere(cluster, table.id, version=2), "table version 2 reported")
    got = flight_read(cluster.cat, "T")
    assert got.column_names == ["ID", "V", "C"]
    assert set(got.column("C").to_pylist()) == {7}
    assert _sorted(got).equals(_sorted(read_table(cluster.cat, "T")))
    old = flight_read(cluster.cat, "T", version=table.update_version - 1)
    assert old.column_names == ["ID", "V"]


def test_a_damaged_cached_file_is_read_from_the_warehouse_and_fetched_again(
    cluster: Cluster,
) -> None:
    table_id = cluster.table_id("T")
    route = read_route(cluster.store, table_id)
    assert route is not None
    tablet = route.tablets[1]
    assert tablet.leader is not None
    files = cluster.root / tablet.leader / "tablets" / str(table_id) / str(tablet.id) / "files"
    victim = sorted(files.iterdir())[0]
    good = victim.read_bytes()
    flipped = bytearray(good)
    for i in range(len(flipped) - 64, len(flipped) - 8):  # the footer
        flipped[i] ^= 0xFF
    victim.unlink()  # a new file: the cache may be a hard link to the warehouse's
    victim.write_bytes(bytes(flipped))
    assert _sorted(flight_read(cluster.cat, "T")).equals(_sorted(read_table(cluster.cat, "T")))
    wait_for(lambda: victim.exists() and victim.read_bytes() == good, "the file fetched again")


def _tablet_rows(cluster: Cluster, partition: int) -> pa.Table:
    """What the tablet of ``partition`` must stream, from the in-process read."""
    everything = read_table(cluster.cat, "T")
    table = cluster.cat.catalog().table("T")
    assert table is not None
    buckets = tablets_of(everything, table, 4)
    return _sorted(everything.filter(pa.array(buckets == partition)))


def test_random_damage_to_a_cached_copy_is_dropped_fetched_again_and_never_served(
    cluster: Cluster,
) -> None:
    table_id = cluster.table_id("T")
    route = read_route(cluster.store, table_id)
    assert route is not None
    tablet = route.tablets[2]
    assert tablet.leader is not None
    location = cluster.servers[tablet.leader].location
    ticket = TabletTicket(table_id, tablet.id, cluster.cat.latest_version).encode()
    expected = _tablet_rows(cluster, tablet.partition)
    files = cluster.root / tablet.leader / "tablets" / str(table_id) / str(tablet.id) / "files"
    victim = sorted(files.iterdir())[0]
    good = victim.read_bytes()
    rng = random.Random(19)
    for position in rng.sample(range(len(good)), 12):
        damaged = bytearray(good)
        damaged[position] ^= rng.randrange(1, 256)
        victim.unlink()  # a new file: the cache may be a hard link to the warehouse's
        victim.write_bytes(bytes(damaged))
        assert _sorted(_do_get(location, ticket)).equals(expected), position
        wait_for(lambda: victim.exists() and victim.read_bytes() == good, "the copy fetched again")


def test_random_damage_to_a_warehouse_file_is_refused_never_read(cluster: Cluster) -> None:
    table_id = cluster.table_id("T")
    route = read_route(cluster.store, table_id)
    assert route is not None
    tablet = route.tablets[3]
    assert tablet.leader is not None
    ticket = TabletTicket(table_id, tablet.id, cluster.cat.latest_version).encode()
    expected = _tablet_rows(cluster, tablet.partition)
    current = TableData.for_catalog(cluster.cat).current(table_id)
    assert current is not None
    file = next(f for f in current.files if f.partition == tablet.partition)
    path = Path(file.path)
    good = path.read_bytes()
    rng = random.Random(23)

    def damage(position: int) -> None:
        with path.open("r+b") as out:  # in place: hard-linked cached copies see it too
            out.seek(position)
            out.write(bytes([good[position] ^ rng.randrange(1, 256)]))

    refused = 0
    try:
        for position in rng.sample(range(len(good)), 30):
            damage(position)
            for name in tablet.replicas:
                try:
                    got = _do_get(cluster.servers[name].location, ticket)
                except flight.FlightServerError as exc:
                    assert path.name in str(exc) and "of table 'T' is damaged" in str(exc), exc
                    refused += 1
                else:
                    assert _sorted(got).equals(expected), (name, position)
            path.write_bytes(good)
        damage(len(good) // 2)
        with pytest.raises(almanac.CorruptDataError, match=re.escape(path.name)):
            flight_read(cluster.cat, "T", timeout_s=PATIENCE)
    finally:
        path.write_bytes(good)
    assert refused > 0
    assert _sorted(flight_read(cluster.cat, "T")).equals(_sorted(read_table(cluster.cat, "T")))


def test_the_leader_compacts_a_tablet_with_many_small_files(cluster: Cluster) -> None:
    _create(cluster.cat, "SMALL", "ONE")
    table_id = cluster.table_id("SMALL")
    data = TableData.for_catalog(cluster.cat)
    for i in range(COMPACT_AT + 1):
        write_table(cluster.cat, "SMALL", _rows(range(i * 10, i * 10 + 10)))
    place(cluster.store, table_id, spread(1, NAMES, 2))

    def compacted() -> bool:
        return any(s.operation == "replace" for s in data.history(table_id))

    wait_for(compacted, "the leader's compaction")
    current = data.current(table_id)
    assert current is not None and len(current.files) == 1
    write_table(cluster.cat, "SMALL", _rows(range(1000, 1010)))
    got = flight_read(cluster.cat, "SMALL")
    expected = [*range((COMPACT_AT + 1) * 10), *range(1000, 1010)]
    assert sorted(got.column("ID").to_pylist()) == expected
    route = read_route(cluster.store, table_id)
    assert route is not None and route.tablets[0].leader is not None
    leader = cluster.servers[route.tablets[0].leader]
    assert f"Compacted {COMPACT_AT + 1} files of tablet 0 of table {table_id}" in leader.log_text()
    for name in set(NAMES) - {leader.name}:
        assert "Compacted" not in cluster.servers[name].log_text()


def test_deleted_tablets_lose_their_local_data_unknown_ones_stay(cluster: Cluster) -> None:
    _create(cluster.cat, "GONE", "ONE")
    table_id = cluster.table_id("GONE")
    write_table(cluster.cat, "GONE", _rows(range(20)))
    tablets = spread(1, NAMES, 2)
    place(cluster.store, table_id, tablets)
    wait_for(lambda: _running_everywhere(cluster, table_id), "GONE running")
    replicas = tablets[0].replicas
    dirs = [cluster.root / n / "tablets" / str(table_id) / "0" for n in replicas]
    assert all((d / "tablet.json").exists() for d in dirs)
    # A tablet the catalog never knew, found on a server's disk.
    stray = cluster.root / replicas[0] / "tablets" / "999999" / "3"
    (stray / "files").mkdir(parents=True)
    (stray / "files" / "keep.parquet").write_bytes(b"not ours to judge")
    deleted = tablets[0].__class__(0, 0, TabletState.DELETED, replicas, replicas[0], 1, 0.0)
    place(cluster.store, table_id, [deleted])
    wait_for(lambda: not any(d.exists() for d in dirs), "the deleted tablet's data to go")
    _rounds(cluster, replicas[0])
    assert (stray / "files" / "keep.parquet").read_bytes() == b"not ours to judge"
    report = read_reports(cluster.store)[replicas[0]]
    assert (999999, 3) in {(r.table_id, r.tablet_id) for r in report.tablets}
    assert (table_id, 0) not in {(r.table_id, r.tablet_id) for r in report.tablets}


def test_a_damaged_route_stops_nothing_and_deletes_nothing(cluster: Cluster) -> None:
    _create(cluster.cat, "DAMAGED", "ONE")
    table_id = cluster.table_id("DAMAGED")
    write_table(cluster.cat, "DAMAGED", _rows(range(5)))
    tablets = spread(1, NAMES, 2)
    place(cluster.store, table_id, tablets)
    wait_for(lambda: _running_everywhere(cluster, table_id), "DAMAGED running")
    good = cluster.store.get(route_key(table_id))
    assert good is not None
    cluster.store.put(route_key(table_id), b'{"table_id":' + b"\xff" * 8)
    for name in tablets[0].replicas:
        _rounds(cluster, name, 3)  # reports go on
        base = cluster.root / name / "tablets" / str(table_id) / "0"
        assert (base / "tablet.json").exists(), "nothing is deleted on a damaged route"
        report = read_reports(cluster.store)[name]
        assert (table_id, 0) in {(r.table_id, r.tablet_id) for r in report.tablets}
        assert (
            "is not set up yet: Metastore key '__table_route/" in cluster.servers[name].log_text()
        )
    with pytest.raises(CatalogError, match="damaged"):
        flight_read(cluster.cat, "DAMAGED")
    cluster.store.put(route_key(table_id), good.value)
    assert sorted(flight_read(cluster.cat, "DAMAGED").column("ID").to_pylist()) == list(range(5))


def test_a_damaged_server_index_is_logged_once_per_value_and_deletes_nothing(
    cluster: Cluster,
) -> None:
    server = cluster.servers["ts1"]
    key = server_index_key("ts1")
    good = cluster.store.get(key)
    assert good is not None
    held = {(r.table_id, r.tablet_id) for r in read_reports(cluster.store)["ts1"].tablets}

    def warnings() -> int:
        return sum(
            " WARNING " in line and "keeps its tablets" in line
            for line in server.log_text().splitlines()
        )

    try:
        for damage, count in ((b"\xff not an index", 1), (b'{"server":"ts1"}', 2)):
            cluster.store.put(key, damage)
            wait_for(lambda c=count: warnings() >= c, "the damage to be logged")  # type: ignore[misc]
            _rounds(cluster, "ts1", 4)
            assert warnings() == count, "logged once per damaged value, not every round"
            report = read_reports(cluster.store)["ts1"]
            assert {(r.table_id, r.tablet_id) for r in report.tablets} == held
    finally:
        cluster.store.put(key, good.value)
    _rounds(cluster, "ts1")
    assert {(r.table_id, r.tablet_id) for r in read_reports(cluster.store)["ts1"].tablets} == held


def test_a_server_paused_past_its_lease_registers_again(cluster: Cluster) -> None:
    server = cluster.servers["ts2"]
    before = read_servers(cluster.store)["ts2"]
    server.proc.send_signal(signal.SIGSTOP)
    try:
        wait_for(lambda: "ts2" not in read_servers(cluster.store), "ts2's lease to expire")
        assert "ts2" not in read_reports(cluster.store), "the report goes with the lease"
        cluster.cat.sql("ALTER TABLE T ADD COLUMN PAUSED INT")  # while ts2 is down
    finally:
        server.proc.send_signal(signal.SIGCONT)
    wait_for(lambda: "ts2" in read_servers(cluster.store), "ts2 to register again")
    after = read_servers(cluster.store)["ts2"]
    assert after.lease != before.lease and after.flight_port == before.flight_port
    wait_for(lambda: "ts2" in read_reports(cluster.store), "ts2's full report")
    wait_for(lambda: "registered again" in server.log_text(), "the log line")
    table = cluster.cat.catalog().table("T")
    assert table is not None
    wait_for(
        lambda: _running_everywhere(cluster, table.id, version=table.table_version),
        "ts2 to catch up with the ALTER it missed",
    )


def test_a_taken_server_name_is_refused(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["tserver", "--store", cluster.target, "--name", "ts1"]
    args += ["--data-dir", str(cluster.root / "dup"), "--lease-ttl", "0.5"]
    assert main(args) == 1
    assert "Tablet server name 'ts1' is taken by a live server" in capsys.readouterr().err


def test_kill_9_mid_read_completes_from_another_replica_exactly_once(cluster: Cluster) -> None:
    _create(cluster.cat, "BIG", "ONE")
    table_id = cluster.table_id("BIG")
    count = 300_000
    write_table(cluster.cat, "BIG", _rows(range(count), prefix="row-with-some-padding-"))
    tablets = spread(1, NAMES, 2)
    place(cluster.store, table_id, tablets)
    wait_for(lambda: _running_everywhere(cluster, table_id), "BIG running")
    leader = tablets[0].leader
    assert leader is not None
    servers_seen: list[str] = []

    def progress(tablet_id: int, server: str, rows: int) -> None:
        servers_seen.append(server)
        if server == leader and cluster.servers[leader].proc.poll() is None:
            cluster.servers[leader].kill()

    got = flight_read(cluster.cat, "BIG", progress=progress)
    assert servers_seen[0] == leader
    assert set(servers_seen) == set(tablets[0].replicas), "the read went on elsewhere"
    ids = got.column("ID")
    assert ids.length() == count
    assert pc.count_distinct(ids).as_py() == count
    assert sorted(ids.to_pylist()) == list(range(count))
    # T has two replicas per tablet: the dead leader's tablets read from the others.
    assert _sorted(flight_read(cluster.cat, "T")).equals(_sorted(read_table(cluster.cat, "T")))


def test_sigterm_stops_a_server_cleanly_and_unregisters_it(cluster: Cluster) -> None:
    server = cluster.servers["ts3"]
    assert server.terminate() == 0, server.log_text()
    assert "ts3" not in read_servers(cluster.store), "the registration goes at once"
    assert "ts3" not in read_reports(cluster.store)
    assert "SIGTERM received: stopping" in server.log_text()
    assert "tablet server ts3 stopped" in server.log_text()
