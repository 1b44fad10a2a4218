"""Tablet servers and catalog nodes as real processes, and the conditions
the tests wait on, read from the placement keys.

``almanac tserver`` and ``almanac node`` run as children of the test; each
writes its stdout and stderr to its own log file, which the harness tails
for the ready line and which a failed wait quotes. Processes are stopped by
their own pid only: SIGKILL (``kill``), SIGTERM (``stop``), SIGSTOP and
SIGCONT (``pause``/``resume``, a server that is alive but silent).
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import almanac
from almanac.dev.etcd_local import LocalEtcd
from almanac.metastore import Metastore, WatchEvent, WatchEventKind
from almanac.model.targets import STORE_FILE
from almanac.node.catalog import Catalog
from almanac.placement.keys import LEADER_KEY, ROUTE_PREFIX, SERVER_INDEX_PREFIX, server_key
from almanac.placement.manager import attach_placement
from almanac.placement.model import (
    ServerIndex,
    ServerInfo,
    ServerReport,
    TableRoute,
    Tablet,
    TabletState,
)
from almanac.placement.settings import PlacementSettings
from almanac.placement.state import (
    decode_route,
    read_reports,
    read_route,
    read_routes,
    read_servers,
)
from tests.durable.support import ROOT
from tests.waiting import PATIENCE, wait_for

__all__ = [
    "PATIENCE",
    "CatalogNode",
    "Process",
    "RouteAudit",
    "Settings",
    "SilentServer",
    "TabletCluster",
    "TabletServer",
    "connections_to",
    "current_tablets",
    "placement_disagreements",
    "route_problems",
    "wait_for",
]

LIVE_STATES = (TabletState.PREPARING, TabletState.CREATING, TabletState.RUNNING)
"""A tablet in one of these states is the one that holds its partition."""


@dataclass(frozen=True)
class Settings:
    """The short intervals the tests run with: every wait is on a condition,
    these only make the conditions come sooner."""

    lease_ttl_s: float = 3.0
    report_interval_s: float = 0.2
    placement_interval_s: float = 0.2
    assignment_timeout_s: float = 6.0
    leader_ttl_s: float = 3.0
    create_wait_s: float = 60.0

    def server_args(self, lease_ttl_s: float | None = None) -> list[str]:
        ttl = self.lease_ttl_s if lease_ttl_s is None else lease_ttl_s
        return ["--report-interval", str(self.report_interval_s), "--lease-ttl", str(ttl)]

    def placement(self) -> PlacementSettings:
        return PlacementSettings(
            interval_s=self.placement_interval_s,
            assignment_timeout_s=self.assignment_timeout_s,
            leader_ttl_s=self.leader_ttl_s,
            create_wait_s=self.create_wait_s,
        )

    def node_args(self) -> list[str]:
        return [
            "--placement-interval",
            str(self.placement_interval_s),
            "--placement-assignment-timeout",
            str(self.assignment_timeout_s),
            "--placement-leader-ttl",
            str(self.leader_ttl_s),
            "--placement-create-wait",
            str(self.create_wait_s),
        ]


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    env["PYTHONUNBUFFERED"] = "1"
    return env


class Process:
    """One ``almanac`` subcommand in a child process, its output in ``log``;
    ready once a line of its log matches ``ready`` (see ``await_ready``:
    several processes start at once when launched first and awaited after)."""

    def __init__(self, args: Sequence[str], log: Path, ready: re.Pattern[str], what: str) -> None:
        self.what = what
        self.log = log
        self._pattern = ready
        self._offset = log.stat().st_size if log.exists() else 0
        """Where this process's output starts in ``log`` (a restart appends)."""
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "almanac.cli", *args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=_environment(),
                cwd=ROOT,
            )
        self.pid = self.proc.pid
        self.ready: re.Match[str] | None = None

    def await_ready(self) -> Self:
        def started() -> bool:
            with self.log.open("rb") as log:
                log.seek(self._offset)
                self.ready = self._pattern.search(log.read().decode("utf-8", "replace"))
            if self.ready is None and self.proc.poll() is not None:
                raise AssertionError(
                    f"{self.what} exited with {self.proc.returncode} before it was ready:\n"
                    f"{self.log_text()[-4000:]}"
                )
            return self.ready is not None

        try:
            wait_for(started, f"{self.what} to start")
        except AssertionError:
            self.kill()
            raise
        self._on_ready(self.ready)
        return self

    def _on_ready(self, ready: re.Match[str] | None) -> None:
        pass

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def _signal(self, signum: signal.Signals) -> None:
        if self.proc.poll() is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        """SIGKILL: it dies wherever it is, its lease left to expire."""
        self._signal(signal.SIGKILL)
        self.proc.wait(timeout=PATIENCE)

    def stop(self) -> int:
        """SIGTERM, and its exit status."""
        self._signal(signal.SIGTERM)
        return self.proc.wait(timeout=PATIENCE)

    def pause(self) -> None:
        """SIGSTOP: alive, holding its sockets, but silent."""
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal(signal.SIGCONT)

    @property
    def paused(self) -> bool:
        """Stopped by SIGSTOP (its ``/proc`` state is ``T``)."""
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except FileNotFoundError:
            return False
        return stat.rpartition(")")[2].split()[0] == "T"


_SERVING = re.compile(r"Serving tablets as (\S+) on (grpc://\S+)")
_FOLLOWING = re.compile(r"node (\S+) following ")


class TabletServer(Process):
    """``almanac tserver``: ``name``, and the Flight ``url`` it printed."""

    def __init__(
        self, cluster: TabletCluster, name: str, extra: Sequence[str], log: Path, data_dir: Path
    ) -> None:
        self.name = name
        self.data_dir = data_dir
        args = ["tserver", "--store", cluster.target, "--name", name, "--data-dir", str(data_dir)]
        args += ["--warehouse", cluster.warehouse, *extra]
        super().__init__(args, log, _SERVING, f"tablet server {name}")
        self.url = ""
        self.port = 0

    def _on_ready(self, ready: re.Match[str] | None) -> None:
        assert ready is not None and ready.group(1) == self.name, ready
        self.url = ready.group(2)
        self.port = int(self.url.rpartition(":")[2])


def connections_to(port: int) -> int:
    """Established TCP connections whose remote end is loopback ``port``
    (IPv4, or IPv4-mapped IPv6 as gRPC opens them): clients connected to the
    server listening there."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            remote, state = fields[2], fields[3]
            if state == "01" and int(remote.rpartition(":")[2], 16) == port:
                count += 1
    return count


class CatalogNode(Process):
    """``almanac node``: a catalog node, a placement candidate."""

    def __init__(self, cluster: TabletCluster, name: str, extra: Sequence[str], log: Path) -> None:
        self.name = name
        args = ["node", "--store", cluster.target, "--name", name, "--warehouse", cluster.warehouse]
        args += ["--delay-ms", "0", "--max-clock-skew-ms", "0", *extra]
        super().__init__(args, log, _FOLLOWING, f"catalog node {name}")


class SilentServer:
    """A tablet server that registers (its ``ServerInfo`` under a lease kept
    alive) but never reports and never serves: what the placement manager
    must replace."""

    def __init__(self, store: Metastore, name: str, ttl_s: float) -> None:
        self.name = name
        self._store = store
        self.lease = store.grant_lease(ttl_s)
        info = ServerInfo(
            name=name,
            host="127.0.0.1",
            flight_port=9,  # discard: nothing answers there
            attributes=(),
            storage_profiles=(),
            started_at=0.0,
            lease=self.lease,
        )
        store.put(server_key(name), info.encode(), lease=self.lease)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, args=(ttl_s / 4,), name=f"silent-{name}", daemon=True
        )
        self._thread.start()

    def _beat(self, every: float) -> None:
        while not self._stop.wait(every):
            self._store.keep_alive(self.lease)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(PATIENCE)
        self._store.revoke_lease(self.lease)


def current_tablets(route: TableRoute) -> dict[int, list[Tablet]]:
    """Partition -> the tablets that hold it (PREPARING, CREATING, RUNNING)."""
    held: dict[int, list[Tablet]] = {}
    for tablet in route.tablets:
        if tablet.state in LIVE_STATES:
            held.setdefault(tablet.partition, []).append(tablet)
    return held


def route_problems(
    route: TableRoute | None,
    partitions: int,
    replicas: int,
    live: Iterable[str],
    avoid: Iterable[str] = (),
) -> list[str]:
    """What keeps a table's route from being settled: every partition held by
    exactly one RUNNING tablet whose ``replicas`` distinct live servers, none
    of ``avoid``, include its leader. Empty when settled."""
    if route is None:
        return ["no route"]
    if route.state is not TabletState.RUNNING:
        return [f"route state {route.state}"]
    alive = set(live) - set(avoid)
    problems = []
    held = current_tablets(route)
    for partition in range(partitions):
        tablets = held.get(partition, [])
        if len(tablets) != 1:
            problems.append(f"partition {partition} held by {len(tablets)} tablets")
            continue
        t = tablets[0]
        if t.state is not TabletState.RUNNING:
            problems.append(f"tablet {t.id} is {t.state}")
        if len(set(t.replicas)) != replicas or len(t.replicas) != replicas:
            problems.append(f"tablet {t.id} has replicas {t.replicas}, wants {replicas}")
        if not set(t.replicas) <= alive:
            problems.append(f"tablet {t.id} on servers {sorted(set(t.replicas) - alive)}")
        if t.leader not in t.replicas:
            problems.append(f"tablet {t.id} leader {t.leader} not among {t.replicas}")
    extra = sorted(set(held) - set(range(partitions)))
    if extra:
        problems.append(f"tablets for partitions {extra} that the table does not have")
    return problems


def placement_disagreements(store: Metastore) -> list[str]:
    """Where routes and server indexes disagree, read at one revision: every
    server in a live tablet's ``replicas`` has it in its index, and an index
    lists nothing else."""
    revision = store.revision
    expected: dict[str, set[tuple[int, int]]] = {}
    for kv in store.range(ROUTE_PREFIX, revision=revision).kvs:
        route = decode_route(kv)
        for t in route.tablets:
            if t.state not in (TabletState.DELETED, TabletState.REPLACED):
                for server in t.replicas:
                    expected.setdefault(server, set()).add((route.table_id, t.id))
    found = {
        index.server: set(index.tablets)
        for index in (
            ServerIndex.decode(kv.value)
            for kv in store.range(SERVER_INDEX_PREFIX, revision=revision).kvs
        )
    }
    problems = []
    for server in sorted(set(expected) | set(found)):
        want, have = expected.get(server, set()), found.get(server, set())
        if want != have:
            problems.append(
                f"{server} at revision {revision}: missing {sorted(want - have)}, "
                f"extra {sorted(have - want)}"
            )
    return problems


class RouteAudit:
    """Every route value written from a revision on (a watch replays them
    all), checked as it arrives: a RUNNING tablet always has a leader among
    its replicas, no two tablets hold one partition, and route versions only
    grow. ``violations`` lists what broke; ``history`` keeps every route
    value by table id, in order."""

    def __init__(self, store: Metastore, from_revision: int) -> None:
        self.violations: list[str] = []
        self.seen = 0
        self.history: dict[int, list[TableRoute]] = {}
        self._versions: dict[str, int] = {}
        self._watch = store.watch_callback(
            ROUTE_PREFIX, from_revision, self._check, on_error=self._failed
        )

    def _failed(self, exc: BaseException) -> None:
        self.violations.append(f"the route watch failed: {exc!r}")

    def _check(self, event: WatchEvent) -> None:
        if event.type is not WatchEventKind.PUT:
            return
        self.seen += 1
        key = event.kv.key
        route = TableRoute.decode(event.kv.value)
        self.history.setdefault(route.table_id, []).append(route)
        previous = self._versions.get(key)
        if previous is not None and route.version <= previous:
            self.violations.append(f"{key}: route version {route.version} after {previous}")
        self._versions[key] = route.version
        for t in route.tablets:
            if t.state is TabletState.RUNNING and (t.leader is None or t.leader not in t.replicas):
                self.violations.append(
                    f"{key} v{route.version}: RUNNING tablet {t.id} leader {t.leader} "
                    f"replicas {t.replicas}"
                )
        for partition, tablets in current_tablets(route).items():
            if len(tablets) > 1:
                ids = [t.id for t in tablets]
                self.violations.append(
                    f"{key} v{route.version}: partition {partition} held by {ids}"
                )

    def ever_on(self, table_id: int, server: str) -> dict[int, int]:
        """Tablet id -> partition of every tablet of the table that was ever
        assigned to ``server``."""
        return {
            t.id: t.partition
            for route in list(self.history.get(table_id, ()))
            for t in route.tablets
            if server in t.replicas
        }

    def close(self) -> None:
        self._watch.close()


@dataclass
class TabletCluster:
    """A catalog target (SQLite directory or etcd namespace) with its
    warehouse, the test's own catalog ``cat`` (no placement: it never leads),
    and the processes started on it."""

    target: str
    warehouse: str
    directory: Path
    settings: Settings
    cat: Catalog
    servers: dict[str, TabletServer] = field(default_factory=dict)
    nodes: dict[str, CatalogNode] = field(default_factory=dict)
    silent: list[SilentServer] = field(default_factory=list)

    @classmethod
    def open(
        cls, kind: str, directory: Path, settings: Settings, etcd: LocalEtcd | None = None
    ) -> TabletCluster:
        warehouse = str(directory / "warehouse")
        if kind == "etcd":
            assert etcd is not None
            target = f"{etcd.uri}/tab-{uuid.uuid4().hex[:12]}"
        else:
            target = str(directory / "catalog")
        cat = almanac.connect(
            target, warehouse=warehouse, delay_ms=0, max_clock_skew_ms=0, node_name="tester"
        )
        # Its DDL creates routes in the version's own transaction, as every
        # node's does, but it never campaigns: the leader is always a process.
        attach_placement(cat, settings.placement(), run=False)
        return cls(target, warehouse, directory, settings, cat)

    @property
    def store(self) -> Metastore:
        return self.cat.metastore

    def start_servers(
        self, names: Iterable[str], *extra: str, lease_ttl_s: float | None = None
    ) -> list[TabletServer]:
        """Tablet servers, started at once; a name started before gets its
        data directory back."""
        args = [*self.settings.server_args(lease_ttl_s), *extra]
        launched = []
        for name in names:
            data_dir = self.directory / "tservers" / name
            data_dir.mkdir(parents=True, exist_ok=True)
            log = self.directory / f"tserver-{name}.log"
            launched.append(TabletServer(self, name, args, log, data_dir))
            self.servers[name] = launched[-1]
        return [server.await_ready() for server in launched]

    def start_server(
        self, name: str, *extra: str, lease_ttl_s: float | None = None
    ) -> TabletServer:
        return self.start_servers([name], *extra, lease_ttl_s=lease_ttl_s)[0]

    def start_nodes(self, names: Iterable[str], *extra: str) -> list[CatalogNode]:
        """Catalog nodes, started at once, each with ``extra`` arguments."""
        launched = []
        for name in names:
            log = self.directory / f"{name}.log"
            args = [*self.settings.node_args(), *extra]
            launched.append(CatalogNode(self, name, args, log))
            self.nodes[name] = launched[-1]
        return [node.await_ready() for node in launched]

    def start_node(self, name: str, *extra: str) -> CatalogNode:
        return self.start_nodes([name], *extra)[0]

    def pause(self, *processes: Process) -> None:
        """SIGSTOP ``processes`` at a point where none holds the store: a
        process stopped inside a SQLite write transaction would keep the
        file's one write lock and stall every other process, which is not
        the failure these tests mean. Such a stop is undone and tried again."""
        while True:
            for proc in processes:
                proc.pause()
            self.wait(lambda: all(p.paused for p in processes), "the processes to stop")
            if self._store_writable():
                return
            for proc in processes:
                proc.resume()
            time.sleep(0.05)  # let it finish its transaction: any moment will do

    def _store_writable(self) -> bool:
        database = Path(self.target) / STORE_FILE
        if not database.exists():
            return True  # not SQLite: etcd has no lock a process keeps
        probe = sqlite3.connect(database, timeout=2.0)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.rollback()
            return True
        except sqlite3.OperationalError:
            return False
        finally:
            probe.close()

    def silent_server(self, name: str) -> SilentServer:
        silent = SilentServer(self.store, name, self.settings.lease_ttl_s)
        self.silent.append(silent)
        return silent

    # ----------------------------------------------------------------- reads

    def table_id(self, name: str, schema: str = "PUBLIC") -> int:
        table = self.cat.catalog().table(name, schema)
        assert table is not None, f"no table {schema}.{name}"
        return table.id

    def route(self, name: str, schema: str = "PUBLIC") -> TableRoute | None:
        return read_route(self.store, self.table_id(name, schema))

    def routes(self) -> dict[int, TableRoute]:
        return read_routes(self.store)

    def live(self) -> set[str]:
        """The servers whose registration (lease) is alive."""
        return set(read_servers(self.store))

    def reports(self) -> dict[str, ServerReport]:
        return read_reports(self.store)

    def placement_leader(self) -> str | None:
        kv = self.store.get(LEADER_KEY)
        return None if kv is None else kv.value.decode()

    def logs(self) -> str:
        """The tail of every log, for a failed wait's message."""
        parts = []
        for proc in [*self.nodes.values(), *self.servers.values()]:
            parts.append(f"--- {proc.what} (alive: {proc.alive})\n{proc.log_text()[-1500:]}")
        return "\n".join(parts)

    # ----------------------------------------------------------------- waits

    def wait(self, condition: Callable[[], bool], what: str) -> None:
        try:
            wait_for(condition, what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.logs()}") from None

    def wait_settled(
        self,
        name: str,
        partitions: int,
        replicas: int,
        *,
        avoid: Iterable[str] = (),
        schema: str = "PUBLIC",
    ) -> TableRoute:
        """Until the table's route is settled (see ``route_problems``) on the
        servers alive now, none of ``avoid``; returns that route."""
        table_id = self.table_id(name, schema)
        avoided = set(avoid)
        last: list[str] = []

        def settled() -> bool:
            nonlocal last
            route = read_route(self.store, table_id)
            last = route_problems(route, partitions, replicas, self.live(), avoided)
            return not last

        try:
            wait_for(settled, f"{schema}.{name} to settle")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {last}\n{self.logs()}") from None
        route = read_route(self.store, table_id)
        assert route is not None
        return route

    def wait_replicas_serving(self, name: str, schema: str = "PUBLIC") -> None:
        """Until every replica of every RUNNING tablet of the table reports
        it RUNNING: a tablet is RUNNING once its leader serves it, and a read
        can fall back only on a replica that serves it too."""
        table_id = self.table_id(name, schema)

        def serving() -> bool:
            route = read_route(self.store, table_id)
            if route is None:
                return False
            running = {
                (server, r.tablet_id)
                for server, report in self.reports().items()
                for r in report.tablets
                if r.table_id == table_id and r.state is TabletState.RUNNING
            }
            return all(
                (server, t.id) in running
                for t in route.tablets
                if t.state is TabletState.RUNNING
                for server in t.replicas
            )

        self.wait(serving, f"every replica of {schema}.{name} to serve it")

    def wait_leader_elected(self, other_than: str | None = None) -> str:
        def elected() -> bool:
            leader = self.placement_leader()
            return leader is not None and leader != other_than and leader in self.nodes

        self.wait(elected, f"a placement leader other than {other_than}")
        leader = self.placement_leader()
        assert leader is not None
        return leader

    def close(self) -> None:
        for silent in self.silent:
            silent.close()
        for proc in [*self.servers.values(), *self.nodes.values()]:
            proc.resume()
            proc.kill()
        self.cat.close()
