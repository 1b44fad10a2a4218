"""A tablet server: hosts the tablets its server index names, serves their
rows over Arrow Flight and, as a tablet's leader, compacts its small files.

It talks to placement only through metastore keys (see
``almanac.placement.keys``): it registers ``ServerInfo`` under a lease of
its own (the heartbeat is keeping that lease alive), writes its full
``ServerReport`` under the same lease on start and every report interval,
and watches its server index, the desired state. It never writes routes or
indexes. A tablet that leaves its index, or that the catalog says is
deleted or replaced, loses its local data; a tablet found on disk that the
catalog never knew is left alone (a confused catalog must not destroy
data). A server whose lease expired (it was paused longer than the lease's
time to live) registers again under a new lease and reports in full.

A server restarted on its own data directory (see ``instance``) finds its
registration held by the lease of the process that died: the instance id
in it is its own, so it takes the key over at once, in one transaction
comparing the exact bytes it read, reports in full, and only then revokes
the dead process's lease. The key never disappears, so placement sees no
failure and moves nothing. A registration of another instance id is
another server: its name is refused until its lease expires.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from almanac import _check as check
from almanac.access.tokens import Tokens
from almanac.data.commits import TableData
from almanac.data.compaction import DEFAULT_TARGET_FILE_MB, plan_compaction, run_compaction
from almanac.data.reading import BATCH_ROWS
from almanac.errors import (
    AlreadyExistsError,
    CatalogError,
    ConflictError,
    CorruptDataError,
    LeaseNotFoundError,
    NotFoundError,
    ValidationError,
)
from almanac.metastore import Compare, KeyValue, Put, Watch
from almanac.model.catalog_version import CatalogVersion
from almanac.node.catalog import Catalog
from almanac.node.leases import Renewal
from almanac.node.nodes import check_node_name
from almanac.placement.keys import report_key, server_index_key, server_key, tombstone_key
from almanac.placement.model import (
    ServerInfo,
    ServerReport,
    TableRoute,
    TabletReport,
    TabletState,
)
from almanac.placement.state import decode_server, decode_server_index, read_route
from almanac.tserver.auth import check_exposure
from almanac.tserver.instance import DataDirLock
from almanac.tserver.local import LocalTablet, LocalTablets
from almanac.tserver.reads import tablet_rows
from almanac.tserver.service import TabletFlightService
from almanac.tserver.ticket import TabletTicket

__all__ = ["TabletServer", "TabletServerSettings"]

_log = logging.getLogger("almanac.tserver")
_GONE = (TabletState.DELETED, TabletState.REPLACED)
_RETRY_S = 0.2
"""How soon a tablet that could not be set up (its route or table not seen
yet on this node) is tried again."""


@dataclass(frozen=True, slots=True)
class TabletServerSettings:
    """``compact_small_files``: a leader compacts a tablet once it has at
    least that many files (None: never). ``tokens``: the bearer tokens a
    Flight call must carry (None: any call is served, and ``host`` must be
    a loopback address unless ``insecure``), as ``almanac serve`` has them."""

    name: str
    data_dir: str
    host: str = "127.0.0.1"
    flight_port: int = 0
    attributes: tuple[tuple[str, str], ...] = ()
    storage_profiles: tuple[str, ...] = ()
    report_interval_s: float = 2.0
    lease_ttl_s: float = 10.0
    compact_small_files: int | None = None
    target_file_mb: float = DEFAULT_TARGET_FILE_MB
    batch_rows: int = BATCH_ROWS
    tokens: Tokens | None = None
    insecure: bool = False

    def __post_init__(self) -> None:
        check_node_name(self.name, "Tablet server name")
        pairs = check.sequence_of(self.attributes, "Tablet server attributes", _attribute)
        object.__setattr__(self, "attributes", pairs)
        profiles = check.sequence_of(self.storage_profiles, "Storage profiles", _profile)
        object.__setattr__(self, "storage_profiles", profiles)
        check.string(self.host, "Parameter 'host' of TabletServerSettings", nonblank=True)
        check.optional_int(self.compact_small_files, "--compact-small-files", lo=2)
        check.string(self.data_dir, "Parameter 'data_dir' of TabletServerSettings", nonblank=True)
        check.integer(self.flight_port, "Parameter 'flight_port' of TabletServerSettings", lo=0)
        if self.flight_port > 65535:
            raise ValidationError(f"Flight port {self.flight_port} is not a TCP port (0 to 65535)")
        keys = [k for k, _ in self.attributes]
        if len(set(keys)) != len(keys):
            raise ValidationError(f"Tablet server '{self.name}' has a repeated attribute: {keys}")
        object.__setattr__(self, "attributes", tuple(sorted(self.attributes)))
        object.__setattr__(self, "storage_profiles", tuple(sorted(set(self.storage_profiles))))
        for what in ("report_interval_s", "lease_ttl_s", "target_file_mb"):
            check.number(getattr(self, what), f"Parameter '{what}' of TabletServerSettings")
            if not 0 < getattr(self, what) <= 86_400:
                raise ValidationError(
                    f"Parameter '{what}' of TabletServerSettings must be positive and at most "
                    f"a day, got {getattr(self, what)}"
                )
        check.integer(self.batch_rows, "Parameter 'batch_rows' of TabletServerSettings", lo=1)
        if self.tokens is not None:
            check.instance(self.tokens, Tokens, "Parameter 'tokens' of TabletServerSettings")
        check.boolean(self.insecure, "Parameter 'insecure' of TabletServerSettings")
        check_exposure(self.name, self.host, self.tokens, self.insecure)


def _attribute(value: object, what: str) -> tuple[str, str]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise check.fail(what, "a (name, value) pair of strings", value)
    return (check.string(value[0], what, nonblank=True), check.string(value[1], what))


def _profile(value: object, what: str) -> str:
    return check.string(value, what, nonblank=True)


class TabletServer:
    """One tablet server of the catalog ``cat`` (a node with a data plane);
    serving once built, until ``close``."""

    def __init__(self, cat: Catalog, settings: TabletServerSettings) -> None:
        self.catalog = cat
        self.settings = settings
        self.name = settings.name
        self._store = cat.metastore
        self._data = TableData.for_catalog(cat)
        self._dir = DataDirLock(settings.data_dir)
        self.instance_id = self._dir.instance_id
        try:
            self._local = LocalTablets(settings.data_dir, self._data.warehouse)
        except BaseException:
            self._dir.close()
            raise
        self._hosted: dict[tuple[int, int], LocalTablet] = {}
        self._wanted: set[tuple[int, int]] = set()
        self._left: set[tuple[int, int]] = set()  # left the index: data to delete
        self._strays: dict[tuple[int, int], int] = {}  # on disk, unknown: kept and reported
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sequence = 0
        self._lease = 0
        self._bad_index: tuple[int, bytes] | None = None  # the damaged index logged last
        self._bad_registration: tuple[int, bytes] | None = None
        try:
            self._service = TabletFlightService(
                f"grpc://{settings.host}:{settings.flight_port}",
                self.name,
                self._rows,
                settings.tokens,
            )
        except BaseException:
            self._dir.close()
            raise
        self.port: int = self._service.port
        try:
            previous = self._register(wait_s=settings.lease_ttl_s + 1.0)
            self.sync()
            self.report()
            self._let_go(previous)
        except BaseException:
            self._shutdown()
            raise
        self._thread = threading.Thread(target=self._run, name=f"tserver-{self.name}", daemon=True)
        self._thread.start()

    @property
    def location(self) -> str:
        return f"grpc://{self.settings.host}:{self.port}"

    @property
    def lease(self) -> int:
        return self._lease

    def hosted(self) -> dict[tuple[int, int], LocalTablet]:
        with self._lock:
            return dict(self._hosted)

    # -- registration and reports ---------------------------------------------

    def _info(self) -> ServerInfo:
        s = self.settings
        return ServerInfo(
            self.name,
            s.host,
            self.port,
            s.attributes,
            s.storage_profiles,
            time.time(),
            self._lease,
            self.instance_id,
        )

    def _claim(self, held: KeyValue | None) -> Compare | None:
        """The condition to take the server key on, None while another
        server holds it. A registration of this instance id is this data
        directory's previous process (the directory lock excludes a live
        one): it is taken over as read, byte for byte."""
        key = server_key(self.name)
        if held is None:
            return Compare.absent(key)
        try:
            holder = decode_server(held)
        except CorruptDataError as exc:  # whose it is cannot be told: wait for its lease
            seen = (held.mod_revision, held.value)
            level = logging.DEBUG if seen == self._bad_registration else logging.WARNING
            self._bad_registration = seen
            _log.log(level, "Tablet server '%s' waits on a damaged key: %s", self.name, exc)
            return None
        if holder.instance_id and holder.instance_id == self.instance_id:
            return Compare.value(key, "==", held.value)
        return None

    def _register(self, wait_s: float = 0.0) -> int:
        """Take the server key under a fresh lease; returns the lease of the
        registration it took over (0: none), for ``_let_go`` once this
        server has reported. A key of the same name held by another server
        is gone within its lease's time to live, so this waits up to
        ``wait_s`` for it; then ``AlreadyExistsError``."""
        key = server_key(self.name)
        deadline = time.monotonic() + wait_s
        while True:
            held = self._store.get(key)
            claim = self._claim(held)
            if claim is not None:
                self._lease = self._store.grant_lease(self.settings.lease_ttl_s)
                put = Put(key, self._info().encode(), lease=self._lease)
                if self._store.txn([claim], [put]).succeeded:
                    if held is None:
                        return 0
                    _log.info(
                        "Tablet server '%s' took over the registration of its previous process "
                        "on data directory '%s' (instance %s)",
                        self.name,
                        self._dir.path,
                        self.instance_id,
                    )
                    return held.lease
                with contextlib.suppress(CatalogError):
                    self._store.revoke_lease(self._lease)
                self._lease = 0
            if time.monotonic() >= deadline or self._stop.wait(_RETRY_S):
                break
        raise AlreadyExistsError(
            f"Tablet server name '{self.name}' is taken by a live server on another data "
            f"directory: choose another, or wait for its lease to expire (at most "
            f"{self.settings.lease_ttl_s:g} s)",
            kind="tablet server",
            name=self.name,
            rule="tablet server names are unique among live servers",
        )

    def _let_go(self, lease: int) -> None:
        """Revoke the lease of the process this one took over from, now
        that the key and the report are under this server's lease."""
        if not lease or lease == self._lease:
            return
        try:
            self._store.revoke_lease(lease)
        except CatalogError as exc:  # expired meanwhile, or the store is away: it expires
            _log.info("Lease %d of the previous process was not revoked: %s", lease, exc)

    def _renew(self) -> None:
        try:
            self._store.keep_alive(self._lease)
            return
        except LeaseNotFoundError:
            pass
        try:
            previous = self._register()
        except AlreadyExistsError as exc:
            _log.error("%s", exc)
            return
        _log.warning("Tablet server '%s' lost its lease and registered again", self.name)
        self.report()
        self._let_go(previous)

    def report(self) -> ServerReport:
        """Write the full report of what this server holds, under its lease."""
        with self._lock:
            hosted = dict(self._hosted)
            wanted = set(self._wanted)
            strays = dict(self._strays)
        tablets = [
            TabletReport(t, i, TabletState.RUNNING, local.table_version)
            for (t, i), local in hosted.items()
        ]
        tablets += [TabletReport(t, i, TabletState.CREATING, 0) for t, i in wanted - set(hosted)]
        tablets += [TabletReport(t, i, TabletState.RUNNING, v) for (t, i), v in strays.items()]
        self._sequence += 1
        report = ServerReport(
            self.name,
            tuple(sorted(tablets, key=lambda r: (r.table_id, r.tablet_id))),
            self._sequence,
            time.time(),
        )
        self._store.put(report_key(self.name), report.encode(), self._lease)
        return report

    # -- desired state ----------------------------------------------------------

    def sync(self) -> bool:
        """Bring the local tablets to the server index: set up and refresh
        what it names, delete what left it. True when everything it names is
        set up."""
        wanted = self._read_index()
        with self._lock:
            self._left |= self._wanted - wanted
            self._left -= wanted
            self._wanted = wanted
        routes: dict[int, TableRoute | None] = {}

        def route(table_id: int) -> TableRoute | None:
            if table_id not in routes:
                routes[table_id] = read_route(self._store, table_id)
            return routes[table_id]

        ready = True
        for key in sorted(wanted):
            try:
                ready = self._set_up(key, route(key[0])) and ready
            except CatalogError as exc:
                _log.warning("Tablet %d of table %d is not set up yet: %s", key[1], key[0], exc)
                ready = False
        with self._lock:
            present = set(self._hosted)
        strays: dict[tuple[int, int], int] = {}
        for key in sorted((present | set(self._local.present())) - wanted):
            try:
                gone = self._gone(key, route(key[0]))
            except CatalogError as exc:  # a damaged route: never delete on doubt
                _log.warning("Tablet %d of table %d is kept: %s", key[1], key[0], exc)
                gone = False
            if not gone:
                found = self._local.read(*key)
                strays[key] = 0 if found is None else found.table_version
                continue
            with self._lock:
                self._hosted.pop(key, None)
                self._left.discard(key)
            self._local.remove(*key)
            _log.info("Deleted the local data of tablet %d of table %d", key[1], key[0])
        with self._lock:
            self._strays = strays
        return ready

    def _read_index(self) -> set[tuple[int, int]]:
        """What the server index names. A damaged index changes nothing (what
        was wanted stays wanted, nothing is deleted on doubt) and is logged
        at WARNING once per damaged value, then at DEBUG until repaired."""
        kv = self._store.get(server_index_key(self.name))
        if kv is None:
            self._bad_index = None
            return set()
        try:
            index = decode_server_index(kv)
        except CorruptDataError as exc:
            seen = (kv.mod_revision, kv.value)
            level = logging.DEBUG if seen == self._bad_index else logging.WARNING
            self._bad_index = seen
            _log.log(level, "Tablet server '%s' keeps its tablets: %s", self.name, exc)
            with self._lock:
                return set(self._wanted)
        self._bad_index = None
        return set(index.tablets)

    def _set_up(self, key: tuple[int, int], route: TableRoute | None) -> bool:
        table_id, tablet_id = key
        tablet = None if route is None else route.tablet(tablet_id)
        table = self.catalog.catalog().table_by_id(table_id)
        if tablet is None or table is None:
            return False  # this node has not seen the route or the table yet
        record = self._data.current_record(table_id)
        snapshot_id = None if record is None else record.snapshot_id
        wanted = LocalTablet(
            table_id, tablet_id, tablet.partition, table.table_version, snapshot_id
        )
        with self._lock:
            known = self._hosted.get(key)
        if known is None:
            known = self._local.read(table_id, tablet_id)
        if known != wanted or self._local.take_damaged(table_id, tablet_id):
            files = () if record is None else self._data.load(record).files
            mine = tuple(f for f in files if f.partition == tablet.partition)
            copied = self._local.sync(wanted, mine)
            _log.info(
                "Tablet %d of table %d at table version %d, data snapshot %s (%d files, %d new)",
                tablet_id,
                table_id,
                wanted.table_version,
                snapshot_id,
                len(mine),
                copied,
            )
        with self._lock:
            self._hosted[key] = wanted
        return True

    def _gone(self, key: tuple[int, int], route: TableRoute | None) -> bool:
        """Whether the catalog knows the tablet is no longer ours: it left
        our index, or its route deletes, replaces or moves it. A tablet the
        catalog never knew is kept (and reported)."""
        with self._lock:
            if key in self._left:
                return True
        table_id, tablet_id = key
        if route is None:
            return self._store.get(tombstone_key(table_id)) is not None
        tablet = route.tablet(tablet_id)
        if tablet is None:
            return tablet_id < route.next_tablet_id
        return tablet.state in _GONE or self.name not in tablet.replicas

    # -- maintenance -------------------------------------------------------------

    def maintain(self) -> int:
        """Compact the small files of every tablet this server leads that has
        at least ``compact_small_files`` files; returns how many it compacted."""
        threshold = self.settings.compact_small_files
        if threshold is None:
            return 0
        done = 0
        version = self.catalog.catalog()
        for key, local in sorted(self.hosted().items()):
            try:
                done += self._compact(version, key, local, threshold)
            except CatalogError as exc:  # a damaged route, a lost store: next round
                _log.warning("Compaction of tablet %d of table %d failed: %s", key[1], key[0], exc)
        return done

    def _compact(
        self, version: CatalogVersion, key: tuple[int, int], local: LocalTablet, threshold: int
    ) -> int:
        table_id, tablet_id = key
        route = read_route(self._store, table_id)
        tablet = None if route is None else route.tablet(tablet_id)
        table = version.table_by_id(table_id)
        schema = None if table is None else version.schema_by_id(table.schema_id)
        if tablet is None or tablet.leader != self.name or table is None or schema is None:
            return 0
        current = self._data.current(table_id)
        count = 0 if current is None else sum(f.partition == local.partition for f in current.files)
        if count < threshold:
            return 0
        try:
            plan = plan_compaction(
                self.catalog,
                self._data,
                table.name,
                schema.name,
                target_file_mb=self.settings.target_file_mb,
                tablet=local.partition,
            )
            if run_compaction(self._data, plan) is not None:
                _log.info(
                    "Compacted %d files of tablet %d of table %d",
                    len(plan.files),
                    tablet_id,
                    table_id,
                )
                return 1
        except (ConflictError, NotFoundError) as exc:  # a concurrent change: next round
            _log.info("Compaction of tablet %d of table %d deferred: %s", tablet_id, table_id, exc)
        return 0

    # -- reads -------------------------------------------------------------------

    def _rows(self, ticket: TabletTicket) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
        with self._lock:
            local = self._hosted.get((ticket.table_id, ticket.tablet_id))
        if local is None:
            raise NotFoundError(
                f"Tablet server '{self.name}' does not host tablet {ticket.tablet_id} of "
                f"table {ticket.table_id}",
                kind="tablet",
                table_id=ticket.table_id,
                tablet_id=ticket.tablet_id,
            )
        return tablet_rows(
            self.catalog,
            self._data,
            self._local,
            ticket,
            local.partition,
            batch_rows=self.settings.batch_rows,
        )

    # -- the loop ------------------------------------------------------------------

    def _watch(self) -> Watch:
        return self._store.watch(server_index_key(self.name))

    def _run(self) -> None:
        s = self.settings
        now = time.monotonic()
        renewal, report_at = Renewal(s.lease_ttl_s, now), now + s.report_interval_s
        retry_at: float | None = None
        watch: Watch | None = None
        while not self._stop.is_set():
            try:
                if watch is None or watch.closed:
                    watch = self._watch()
                due = min(renewal.at, report_at, retry_at or report_at)
                changed = watch.next(timeout=max(0.0, due - time.monotonic())) is not None
                while changed and watch.next(timeout=0) is not None:
                    pass
                if self._stop.is_set():
                    break
                now = time.monotonic()
                if renewal.due(now):
                    self._renew()
                    renewal.done(now)
                periodic = now >= report_at
                if changed or periodic or (retry_at is not None and now >= retry_at):
                    try:
                        ready = self.sync()
                    except CatalogError as exc:  # the report goes out all the same
                        _log.warning("Tablet server '%s' could not sync: %s", self.name, exc)
                        ready = False
                    retry_at = None if ready else now + _RETRY_S
                    if periodic:
                        self.maintain()
                    self.report()
                    if periodic:
                        report_at = now + s.report_interval_s
            except CatalogError as exc:
                if self._stop.is_set():
                    break
                _log.warning("Tablet server '%s': %s", self.name, exc)
                if watch is not None:
                    watch.close()
                    watch = None
                self._stop.wait(_RETRY_S)
        if watch is not None:
            watch.close()

    def _shutdown(self) -> None:
        with contextlib.suppress(Exception):
            self._service.shutdown()
        if self._lease:
            with contextlib.suppress(CatalogError):
                self._store.revoke_lease(self._lease)
        self._dir.close()

    def close(self) -> None:
        """Stop serving and take the registration and report away at once."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(timeout=30)
        self._shutdown()

    def __enter__(self) -> TabletServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
