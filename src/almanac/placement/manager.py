"""The placement manager: the one catalog node, elected through a lease on
``LEADER_KEY``, that moves tablets between tablet servers.

Every node with placement attached does two things. Its commit hook writes
the route of each table a version creates (every tablet PREPARING) in that
version's own transaction, and moves the routes of tables the version
drops, soft-deletes, recovers or alters, when they fit in the transaction
(the leader's loop catches up on the rest). And it campaigns: the node
that holds ``LEADER_KEY`` runs the placement loop (``run_pass``) every
``interval_s``, each of its writes fenced on still holding that key, so a
deposed leader's write fails instead of racing the new one. A new leader
needs nothing from the old one: all state is in the store.

What the loop cannot do it logs once while it lasts (``problems``), and
why each tablet stays unplaced it keeps under ``REASON_PREFIX``, one key per
table (``SYSTEM.TABLETS``' ``REASON``): written with the table's route
change when there is one, else on its own, only when the text changes, and
deleted once every tablet of the table is placed.

CREATE TABLE, while at least one tablet server is registered, waits up to
``create_wait_s`` for enough servers (replicas of the zone ≤ matching live
servers; tablets x replicas of all tables ≤ ``max_tablets_per_server`` x
live servers) and then fails with a ``WaitTimeoutError`` naming the rule.
The wait happens inside the commit, before its transaction: the table and
its route come into being together or not at all, at the cost of holding
the writer section of a SQLite catalog while waiting. A catalog with no
tablet server registered creates tables at once and their tablets wait,
PREPARING, for servers.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from dataclasses import dataclass

from almanac import _check as check
from almanac.errors import (
    CatalogError,
    CorruptDataError,
    LeaseNotFoundError,
    ValidationError,
    WaitTimeoutError,
)
from almanac.metastore import Compare, Delete, Op, Put
from almanac.model.catalog_version import CatalogVersion
from almanac.model.descriptors import Table, is_soft_deleted
from almanac.model.entries import VersionedUpdate
from almanac.node.catalog import Catalog
from almanac.node.catalog_types import HookWork
from almanac.node.leases import Renewal
from almanac.placement.keys import (
    LEADER_KEY,
    REASON_PREFIX,
    REPORT_PREFIX,
    ROUTE_PREFIX,
    SERVER_PREFIX,
    reason_key,
    route_key,
)
from almanac.placement.model import (
    PlacementReasons,
    ServerInfo,
    TableRoute,
    TabletReport,
    TabletState,
)
from almanac.placement.policy import NodeFilterError, eligible, node_filter
from almanac.placement.route_changes import (
    IndexCache,
    RouteWrite,
    follow_catalog,
    index_entries,
    merge_writes,
    partitions_of,
    route_write,
)
from almanac.placement.settings import PlacementSettings
from almanac.placement.state import (
    DecodeMemo,
    decode_report,
    decode_route,
    decode_server,
    read_servers,
)
from almanac.placement.steps import PassView, step_route

__all__ = [
    "PassResult",
    "PlacementManager",
    "PlacementSettings",
    "attach_placement",
    "placement_of",
]

_log = logging.getLogger("almanac.placement")
_managers: weakref.WeakKeyDictionary[Catalog, PlacementManager] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_POLL_S = 0.05
_BATCH_OPS = 1024
"""Route changes of a pass go in transactions of up to this many compares
and ops together (or the store's cap, 128 on etcd by default), so that a
pass writes each server index once per batch rather than once per route."""


@dataclass(frozen=True, slots=True)
class PassResult:
    """What one pass of the loop did: routes it wrote, writes that lost a
    race (retried from a fresh read next pass), and what it could not do."""

    written: int
    lost: int
    problems: tuple[str, ...]


def _qualified(version: CatalogVersion, table: Table) -> str:
    schema = version.schemas_by_id.get(table.schema_id)
    return f"{schema.name if schema else table.schema_id}.{table.name}"


class PlacementManager:
    """Placement of one catalog node; see the module docs. Built by
    ``attach_placement``. With ``run=False`` it neither campaigns nor loops:
    ``run_pass`` is then called by hand (benchmarks, stepwise tests)."""

    def __init__(self, cat: Catalog, settings: PlacementSettings, *, run: bool = True) -> None:
        check.instance(cat, Catalog, "Parameter 'cat' of PlacementManager")
        check.instance(settings, PlacementSettings, "Parameter 'settings' of PlacementManager")
        self.catalog = cat
        self.settings = settings
        self._store = cat.metastore
        self._stop = threading.Event()
        self._lease: int | None = None
        self._fence: tuple[Compare, ...] | None = None
        self._renewal = Renewal(self.settings.leader_ttl_s)
        self._deleted_seen: dict[int, float] = {}
        self._problems: tuple[str, ...] = ()
        self._passes = 0
        self._routes = DecodeMemo(decode_route)
        self._reports = DecodeMemo(decode_report)
        self._servers = DecodeMemo(decode_server)
        self._thread: threading.Thread | None = None
        cat.add_commit_hook(self._hook)
        cat.on_close(self.close)
        if run:
            self._thread = threading.Thread(
                target=self._run, name=f"almanac-placement-{cat.node_name}", daemon=True
            )
            self._thread.start()

    # -- what it shows ---------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self._fence is not None

    @property
    def problems(self) -> tuple[str, ...]:
        """What the last pass could not do (short of servers, bad filters)."""
        return self._problems

    @property
    def passes(self) -> int:
        """Passes this node ran as leader (or by hand)."""
        return self._passes

    # -- election ----------------------------------------------------------------

    def _run(self) -> None:
        interval = self.settings.interval_s
        while not self._stop.is_set():
            try:
                if self._fence is None:
                    self._campaign()
                if self._fence is not None and self._renew():
                    self.run_pass()
            except CatalogError as exc:
                if self._stop.is_set():
                    return
                _log.warning("Placement pass on node '%s' failed: %s", self.catalog.node_name, exc)
            except Exception:
                _log.exception("Placement pass on node '%s' failed", self.catalog.node_name)
            self._stop.wait(interval)

    def _campaign(self) -> None:
        store = self._store
        if store.get(LEADER_KEY) is not None:
            return
        lease = store.grant_lease(self.settings.leader_ttl_s)
        put = Put(LEADER_KEY, self.catalog.node_name.encode(), lease=lease)
        result = store.txn([Compare.absent(LEADER_KEY)], [put])
        if not result.succeeded:
            store.revoke_lease(lease)
            return
        self._lease = lease
        self._renewal = Renewal(self.settings.leader_ttl_s)
        self._fence = (Compare.create_revision(LEADER_KEY, "==", result.revision),)
        _log.info("Node '%s' leads tablet placement", self.catalog.node_name)

    def _renew(self) -> bool:
        """Keep the leader lease; False (and no longer leader) once it is lost."""
        lease, fence = self._lease, self._fence
        if lease is None or fence is None:
            return False
        if self._renewal.due():
            try:
                self._store.keep_alive(lease)
                self._renewal.done()
            except LeaseNotFoundError:
                self._resign("its lease expired")
                return False
        if not fence[0].holds(self._store.get(LEADER_KEY)):
            self._resign("another node holds the leader key")
            return False
        return True

    def _resign(self, why: str) -> None:
        _log.warning("Node '%s' no longer leads tablet placement: %s", self.catalog.node_name, why)
        self._fence = None
        self._lease = None

    def close(self) -> None:
        """Stop the loop and give up leadership at once."""
        if self._stop.is_set():
            return
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=60)
        lease = self._lease
        self._fence = None
        self._lease = None
        if lease is not None:
            try:
                self._store.revoke_lease(lease)
            except CatalogError as exc:
                _log.warning("Could not give up the placement leader lease: %s", exc)

    # -- the loop ----------------------------------------------------------------

    def run_pass(self, now: float | None = None) -> PassResult:
        """One pass over every route: follow the catalog, fail over, promote,
        replace, assign, clean, and say why what stays unplaced does. Each
        changed route is one transaction comparing what this pass read; a
        write that loses waits for the next pass and its fresh read."""
        store = self._store
        check.optional_float(now, "Parameter 'now' of PlacementManager.run_pass", lo=0)
        now = time.time() if now is None else float(now)
        fence = self._fence or ()
        # Routes first, then the catalog: every route read was written by a
        # version this catch-up applies, so no new table looks dropped.
        read = {kv.key: kv for kv in store.range(ROUTE_PREFIX).kvs}
        said = {kv.key: kv.value for kv in store.range(REASON_PREFIX).kvs}
        self.catalog.catch_up()
        version = self.catalog.catalog()
        # A damaged record is reported and left alone (never overwritten);
        # the rest of placement goes on without it.
        damaged: list[str] = []
        servers = {s.name: s for s in self._servers(store.range(SERVER_PREFIX).kvs, damaged)}
        reports = {
            report.server: {(t.table_id, t.tablet_id): t for t in report.tablets}
            for report in self._reports(store.range(REPORT_PREFIX).kvs, damaged)
            if report.server in servers
        }
        routes = {route.table_id: route for route in self._routes(read.values(), damaged)}
        load: dict[str, int] = {}
        leaders: dict[str, int] = {}
        for stored in routes.values():
            for server, entries in index_entries(stored).items():
                load[server] = load.get(server, 0) + len(entries)
            for t in stored.tablets:
                if t.leader is not None and t.state is not TabletState.DELETED:
                    leaders[t.leader] = leaders.get(t.leader, 0) + 1
        view = PassView(
            servers,
            reports,
            load,
            now,
            self.settings.assignment_timeout_s,
            self.settings.max_tablets_per_server,
            leaders,
            frozenset(key for held in reports.values() for key in held),
            problems=damaged,
        )
        cache = IndexCache(store)
        batch: list[tuple[int, RouteWrite, bool, Op | None]] = []
        """Table, route write, route removed, change of the table's reasons."""
        limit = min(store.max_txn_ops or _BATCH_OPS, _BATCH_OPS) - len(fence)
        counts = {"written": 0, "lost": 0}

        def flush() -> None:
            """Commit the batch as one transaction (or count it lost)."""
            if not batch:
                return
            compares, ops, indexes = merge_writes([write for _, write, _, _ in batch]).parts()
            reason_ops = [op for _, _, _, op in batch if op is not None]
            ok = store.txn((*compares, *fence), (*ops, *reason_ops)).succeeded
            if ok:
                cache.committed(indexes)
            for table_id, write, removed, _ in batch:
                if not ok:
                    cache.forget(write)
                elif removed:
                    self._deleted_seen.pop(table_id, None)
            counts["written" if ok else "lost"] += len(batch)
            batch.clear()

        seen_deleted: set[int] = set()
        reasons = _ReasonChanges(said, view.reasons)
        for table_id in sorted(set(routes) | set(version.tables_by_id.keys())):
            route = routes.get(table_id)
            kv = read.get(route_key(table_id))
            if route is None and kv is not None:
                continue  # damaged: in the problems already
            new = self._next(version, table_id, route, view)
            if new is not None and new.state is TabletState.DELETED:
                seen_deleted.add(table_id)
                if self._cleanable(new, reports, now):
                    new = None
                elif new == route:
                    continue
            elif new is None or new == route:
                continue
            try:
                write = route_write(store, table_id, kv, new, cache)
            except CorruptDataError as exc:
                view.problems.append(f"Route of table {table_id} not moved: {exc}")
                continue
            told = reasons.take(table_id)
            # an upper bound: merging shares indexes
            size = sum(w.size + (op is not None) for _, w, _, op in batch)
            full = batch and size + write.size + 1 > limit
            if full:
                flush()
                # Built on what the batch staged: build again on what it left
                # (it decoded every index it needs already, or raised).
                write = route_write(store, table_id, kv, new, cache)
            cache.stage(write)  # the next route of the batch builds on it
            batch.append((table_id, write, new is None, told))
        flush()
        rest = reasons.rest()
        for start in range(0, len(rest), limit):
            store.txn(fence, rest[start : start + limit])
        written, lost = counts["written"], counts["lost"]
        self._deleted_seen = {t: at for t, at in self._deleted_seen.items() if t in seen_deleted}
        for problem in view.problems:
            if problem not in self._problems:  # said once, while it lasts
                _log.warning("Placement on node '%s': %s", self.catalog.node_name, problem)
        self._problems = tuple(view.problems)
        self._passes += 1
        return PassResult(written, lost, self._problems)

    def _next(
        self,
        version: CatalogVersion,
        table_id: int,
        route: TableRoute | None,
        view: PassView,
    ) -> TableRoute | None:
        new = follow_catalog(version, table_id, route, view.now)
        table = version.table_by_id(table_id)
        if new is None or table is None:
            return new
        zone = version.zone_by_id(table.zone_id)
        if zone is None:
            return new
        try:
            matches = node_filter(zone.node_filter)
        except NodeFilterError as exc:
            view.problems.append(f"Table {_qualified(version, table)}: {exc}")
            for t in new.tablets:
                if t.state is TabletState.PREPARING:
                    view.unplaced(table_id, t.id, str(exc))
            return new
        return step_route(new, zone, matches, table.storage_profile, view)

    def _cleanable(
        self,
        route: TableRoute,
        reports: dict[str, dict[tuple[int, int], TabletReport]],
        now: float,
    ) -> bool:
        """A DELETED route goes once no live server reports any of its
        tablets, or ``clean_after_s`` after this leader first saw it."""
        first = self._deleted_seen.setdefault(route.table_id, now)
        if now - first >= self.settings.clean_after_s:
            return True
        ids = {(route.table_id, t.id) for t in route.tablets}
        return not any(ids & held.keys() for held in reports.values())

    # -- the commit hook -----------------------------------------------------------

    def _hook(
        self, base: CatalogVersion, new: CatalogVersion, update: VersionedUpdate
    ) -> HookWork | None:
        store = self._store
        ids = sorted({entry.object_id() for entry in update.entries} - {-1})
        created = [t for t in ids if t in new.tables_by_id and t not in base.tables_by_id]
        if created:
            self._await_servers(new, created)
        budget = (store.max_txn_ops or 1 << 30) // 2
        cache = IndexCache(store)
        writes: list[RouteWrite] = []
        size = 0
        now = time.time()
        for table_id in ids:
            table, old = new.table_by_id(table_id), base.table_by_id(table_id)
            if table is old:
                continue
            kv = store.get(route_key(table_id))
            try:
                route = None if kv is None else decode_route(kv)
                desired = follow_catalog(new, table_id, route, now)
                if desired is route or desired is None:
                    continue
                write = route_write(store, table_id, kv, desired, cache)
            except CorruptDataError as exc:
                # Damaged placement state does not hold DDL back; the
                # loop reports it until an operator repairs it.
                _log.error("Table %s: its route stays as it is: %s", table_id, exc)
                continue
            if table_id not in created and size + write.size > budget:
                continue  # the leader's loop moves this one
            cache.stage(write)
            writes.append(write)
            size += write.size
        if not writes:
            return None
        compares, ops, _ = merge_writes(writes).parts()
        return HookWork(compares, ops)

    def _await_servers(self, version: CatalogVersion, created: list[int]) -> None:
        servers = read_servers(self._store)
        if not servers:
            return  # no tablet servers at all: tablets wait PREPARING
        deadline = time.monotonic() + self.settings.create_wait_s
        while True:
            problem = self._limit_problem(version, created, servers)
            if problem is None:
                return
            if time.monotonic() >= deadline:
                raise WaitTimeoutError(
                    f"{problem}; waited {self.settings.create_wait_s:g} s for tablet servers",
                    awaited="tablet servers",
                    timeout=self.settings.create_wait_s,
                    rule="placement limits",
                )
            time.sleep(_POLL_S)
            servers = read_servers(self._store)

    def _limit_problem(
        self, version: CatalogVersion, created: list[int], servers: dict[str, ServerInfo]
    ) -> str | None:
        for table_id in created:
            table = version.table_by_id(table_id)
            zone = None if table is None else version.zone_by_id(table.zone_id)
            if table is None or zone is None or is_soft_deleted(table):
                continue
            try:
                matches = node_filter(zone.node_filter)
            except NodeFilterError as exc:
                raise ValidationError(
                    f"Table {_qualified(version, table)} cannot be placed: {exc}",
                    table=_qualified(version, table),
                    zone=zone.name,
                    rule="supported node filters",
                ) from None
            fit = [s for s in servers.values() if eligible(s, matches, table.storage_profile)]
            if zone.replicas > len(fit):
                return (
                    f"Table {_qualified(version, table)} needs {zone.replicas} replicas "
                    f"(zone '{zone.name}'), but only {len(fit)} live tablet servers match its "
                    f"filter {zone.node_filter!r} and storage profile '{table.storage_profile}'"
                    " (rule: replicas <= live servers)"
                )
        demand = 0
        for table in version.tables_by_id.values():
            zone = version.zone_by_id(table.zone_id)
            if zone is not None and not is_soft_deleted(table):
                demand += partitions_of(version, table) * zone.replicas
        cap = self.settings.max_tablets_per_server * len(servers)
        if demand > cap:
            return (
                f"Placing {demand} tablet replicas needs more than max_tablets_per_server "
                f"({self.settings.max_tablets_per_server}) x {len(servers)} live tablet "
                f"servers = {cap} (rule: tablets x replicas <= max x live servers)"
            )
        return None


class _ReasonChanges:
    """The writes that make the stored reasons (``said``: key -> bytes, as
    the pass read them) what this pass found (``found``, filled as the pass
    goes): a table's change rides with its route write (``take``), the
    others go after the routes (``rest``)."""

    def __init__(self, said: dict[str, bytes], found: dict[int, dict[int, str]]) -> None:
        self._said = said
        self._found = found
        self._taken: set[str] = set()

    def take(self, table_id: int) -> Op | None:
        key = reason_key(table_id)
        self._taken.add(key)
        found = self._found.get(table_id)
        value = None
        if found:
            value = PlacementReasons(table_id, tuple(sorted(found.items()))).encode()
        if value == self._said.get(key):
            return None
        return Delete(key) if value is None else Put(key, value)

    def rest(self) -> list[Op]:
        keys = {reason_key(t) for t in self._found} | self._said.keys()
        ops: list[Op] = []
        for key in sorted(keys - self._taken):
            tail = key.removeprefix(REASON_PREFIX)
            if not tail.isdigit() or reason_key(int(tail)) != key:
                ops.append(Delete(key))  # no table's: nothing a pass would say
                continue
            op = self.take(int(tail))
            if op is not None:
                ops.append(op)
        return ops


def attach_placement(
    cat: Catalog, settings: PlacementSettings | None = None, *, run: bool = True
) -> PlacementManager:
    """Give ``cat`` its placement manager (once; a second call returns the first)."""
    check.instance(cat, Catalog, "Parameter 'cat' of attach_placement")
    check.optional_instance(settings, PlacementSettings, "Parameter 'settings' of attach_placement")
    with _lock:
        manager = _managers.get(cat)
        if manager is None:
            manager = PlacementManager(cat, settings or PlacementSettings(), run=run)
            _managers[cat] = manager
        return manager


def placement_of(cat: Catalog) -> PlacementManager:
    """The catalog's placement manager; ``CatalogError`` when it has none."""
    check.instance(cat, Catalog, "Parameter 'cat' of placement_of")
    with _lock:
        manager = _managers.get(cat)
    if manager is None:
        raise CatalogError(
            f"Catalog '{cat.target}' has no placement manager; pass "
            "connect(..., placement=PlacementSettings())",
            target=cat.target,
        )
    return manager
