"""A catalog node: the public front of one node's view of a catalog.

A node is a few parts with one-way data flow, each in its own module: the
``Committer`` (``almanac.node.committer``) turns a batch of commands into the
next version in the update log; the log delivers every version, its own
commits included, to the node's ``AppliedVersions`` (``almanac.node.versions``),
so the committing node and every other node build each version with the
same function from the same stored entries; those hand each version's
events to the ``Dispatcher`` (``almanac.node.dispatch``), which runs the
listeners and marks the version ready. ``Catalog`` checks arguments,
waits for what a call promises (readiness, schema sync; ``execute_async``'s
waits run on the ``Settler``), and checkpoints the log through the
``Checkpointer`` (``almanac.node.retention``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import TracebackType

from almanac import _check as check
from almanac.commands.base import Command
from almanac.commands.preview import command_batch
from almanac.commands.tables import check_reserve
from almanac.errors import CatalogError, WaitTimeoutError
from almanac.metastore import Compare, Metastore
from almanac.model.catalog_version import DEFAULT_SCHEMA, CatalogVersion
from almanac.model.clock import HybridClock, physical_ms
from almanac.model.diff import CatalogDiff, diff_catalogs
from almanac.model.entries import VersionedUpdate
from almanac.model.events import EventType, Listener, ListenerFailure
from almanac.model.request_ids import DEFAULT_REQUEST_WINDOW_S, RequestRecord, check_request_id
from almanac.model.schema_sync import MEMORY_DEFAULTS, SchemaSync
from almanac.node.catalog_types import (
    CommitHook,
    DataCommitCheck,
    ExecuteResult,
    HookWork,
    RetentionPolicy,
    VersionInfo,
)
from almanac.node.committer import Attachment, Committed, Committer, commit_initial, seconds_left
from almanac.node.dispatch import Dispatcher
from almanac.node.log import UpdateLog
from almanac.node.log_truncation import KEY_PINS, PIN_LEASE_TTL_S, VersionPins
from almanac.node.nodes import (
    NODE_TTL_S,
    NodeInfo,
    NodeRegistration,
    check_node_name,
    default_node_name,
    list_nodes,
)
from almanac.node.retention import Checkpointer
from almanac.node.settler import ExecuteFuture, Settler
from almanac.node.versions import AppliedVersions
from almanac.sql.results import SqlResult

__all__ = [
    "Catalog",
    "CommitHook",
    "DataCommitCheck",
    "ExecuteResult",
    "HookWork",
    "RetentionPolicy",
    "VersionInfo",
]

DEFAULT_COMMIT_TIMEOUT_S = 60.0
_log = logging.getLogger("almanac.catalog")


class Catalog:
    """One node's view of a catalog; safe to share between threads."""

    def __init__(
        self,
        log: UpdateLog,
        *,
        sync: SchemaSync = MEMORY_DEFAULTS,
        retention: RetentionPolicy | None = None,
        clock: HybridClock | None = None,
        max_attempts: int | None = None,
        commit_timeout_s: float = DEFAULT_COMMIT_TIMEOUT_S,
        root: Path | None = None,
        target: str = "memory://",
        node_name: str | None = None,
        node_ttl_s: float = NODE_TTL_S,
        pin_ttl_s: float = PIN_LEASE_TTL_S,
        request_window_s: float = DEFAULT_REQUEST_WINDOW_S,
        soft_delete_reserve_s: float = 0.0,
    ) -> None:
        """``node_name`` names this node among the live nodes of the catalog
        (default ``<hostname>-<pid>``); a name a live node holds is refused
        with ``AlreadyExistsError``. ``node_ttl_s``: how long the node's key
        outlives a crash of its process, ``pin_ttl_s`` how long its pins do
        (see ``pin``). ``request_window_s``: how long a
        request id stays known once a checkpoint truncated its version (see
        ``execute``). ``soft_delete_reserve_s``: the reserve of a DROP TABLE
        committed here that names none (0: drop at once); each drop stores
        the reserve it got, so nodes with other defaults still agree."""
        check.number(node_ttl_s, "Parameter 'node_ttl_s' of Catalog", positive=True)
        check.number(pin_ttl_s, "Parameter 'pin_ttl_s' of Catalog", positive=True)
        soft_delete_reserve_s = check_reserve(
            soft_delete_reserve_s, "Parameter 'soft_delete_reserve_s' of Catalog"
        )
        request_window_s = check.number(
            request_window_s, "Parameter 'request_window_s' of Catalog", lo=0, hi=2**40
        )
        name = (
            default_node_name()
            if node_name is None
            else check_node_name(node_name, "Parameter 'node_name' of connect")
        )
        self.target = target
        """How another process names this catalog (``connect(target)`` opens it)."""
        self.root = root
        self._clock = clock or HybridClock()
        self._log = log
        # One condition for applying, dispatching and waiting: see almanac.node.versions.
        self._cond = threading.Condition()
        self._events = Dispatcher(self._cond)
        self._versions = AppliedVersions(self._clock, self._cond, self._events, request_window_s)
        self._pins = VersionPins(log.store, ttl_s=pin_ttl_s)
        self._checkpoints = Checkpointer(log, self._pins, self._versions, self._clock, retention)
        self._closed = False
        self._executor: ThreadPoolExecutor | None = None
        self._closers: list[Callable[[], None]] = []
        self._settler: Settler[Committed, ExecuteResult] = Settler(self._settle)
        self._node: NodeRegistration | None = None
        try:
            log.start(self._versions)
            if self.latest_version == 0:
                commit_initial(log, self._versions, self._clock, name, commit_timeout_s)
            if not log.store.read_only:  # a reader of a read-only store leaves no trace
                self._node = NodeRegistration(
                    log.store,
                    name,
                    applied=self.latest_version,
                    ttl_s=node_ttl_s,
                    fallback=node_name is None,
                )
                self._versions.registration = self._node
        except BaseException:
            log.close()
            raise
        self.node_name = name if self._node is None else self._node.name
        """This node's name among the live nodes of the catalog."""
        self._committer = Committer(
            log,
            self._versions,
            self._clock,
            sync=sync,
            node_name=self.node_name,
            check_open=self._check_open,
            max_attempts=max_attempts,
            commit_timeout_s=commit_timeout_s,
            soft_delete_reserve_s=soft_delete_reserve_s,
        )
        _log.info(
            "Node '%s' opened catalog %s at version %d", self.node_name, target, self.latest_version
        )
        for kind, names in self.catalog().name_collisions():
            _log.warning(
                "Catalog %s holds %s names that differ only by case, made before names became "
                "case-insensitive: %s. Each is still found by its exact spelling; another "
                "spelling is refused as ambiguous. Rename all but one to lift it",
                target,
                kind,
                ", ".join(repr(name) for name in names),
            )

    # -- settings (read by the parts on every call) ---------------------------

    @property
    def sync(self) -> SchemaSync:
        """Activation delay and clock skew: when a version is visible."""
        return self._committer.sync

    @sync.setter
    def sync(self, value: SchemaSync) -> None:
        self._committer.sync = value

    @property
    def retention(self) -> RetentionPolicy | None:
        """When this node checkpoints its log by itself (None: never)."""
        return self._checkpoints.policy

    @retention.setter
    def retention(self, value: RetentionPolicy | None) -> None:
        self._checkpoints.policy = value

    @property
    def max_attempts(self) -> int | None:
        """A cap on commit attempts (None: retry until ``commit_timeout_s``)."""
        return self._committer.max_attempts

    @max_attempts.setter
    def max_attempts(self, value: int | None) -> None:
        self._committer.max_attempts = value

    @property
    def commit_timeout_s(self) -> float:
        """How long ``execute`` may try to commit (writer section included)
        when it is given no timeout of its own."""
        return self._committer.commit_timeout_s

    @commit_timeout_s.setter
    def commit_timeout_s(self, value: float) -> None:
        self._committer.commit_timeout_s = value

    @property
    def soft_delete_reserve_s(self) -> float:
        """The reserve (seconds) of a DROP TABLE committed here that names none."""
        return self._committer.soft_delete_reserve_s

    @soft_delete_reserve_s.setter
    def soft_delete_reserve_s(self, value: float) -> None:
        self._committer.soft_delete_reserve_s = value

    @property
    def request_window_s(self) -> float:
        """How long (seconds) a request id outlives the truncation of its version."""
        return self._versions.request_window_s

    @request_window_s.setter
    def request_window_s(self, value: float) -> None:
        self._versions.request_window_s = value

    # -- reading -------------------------------------------------------------

    def nodes(self) -> list[NodeInfo]:
        """The live nodes of this catalog (this one included), by name, as
        each last published itself."""
        self._check_open()
        return list_nodes(self._log.store)

    @property
    def delay_ms(self) -> int:
        return self.sync.delay_ms

    @property
    def max_clock_skew_ms(self) -> int:
        return self.sync.max_clock_skew_ms

    @property
    def latest_version(self) -> int:
        return self._versions.latest_version

    @property
    def earliest_version(self) -> int:
        return self._versions.earliest_version

    @property
    def clock(self) -> HybridClock:
        return self._clock

    @property
    def log(self) -> UpdateLog:
        return self._log

    def catalog(self, version: int | None = None) -> CatalogVersion:
        """The latest version, or exactly ``version``."""
        check.optional_int(version, "Parameter 'version' of Catalog.catalog")
        return self._versions.catalog(version)

    def catalog_at(self, timestamp: int | dt.datetime) -> CatalogVersion:
        """The newest version whose activation time is at or before ``timestamp``
        (a hybrid timestamp, or an aware datetime; a naive one is refused)."""
        ts = check.timestamp(timestamp, "Parameter 'timestamp' of Catalog.catalog_at")
        return self._versions.catalog_at(ts)

    def history(self, since: int = 1) -> list[VersionInfo]:
        """What each available version changed, oldest first. After a
        checkpoint the earliest version is listed too, with no entries: the
        checkpoint keeps the catalog it made, not what its version changed."""
        check.integer(since, "Parameter 'since' of Catalog.history")
        return self._versions.history(since)

    def diff(self, v1: int, v2: int) -> CatalogDiff:
        """What changed from version ``v1`` to version ``v2``, object by object
        (see ``almanac.model.diff``). ``v1`` may be the later one: the diff then
        runs backwards, the inverse of ``diff(v2, v1)``. Both versions must be
        available (``VersionNotFoundError``)."""
        check.integer(v1, "Parameter 'v1' of Catalog.diff")
        check.integer(v2, "Parameter 'v2' of Catalog.diff")
        return diff_catalogs(self.catalog(v1), self.catalog(v2))

    @contextlib.contextmanager
    def pin(
        self, version: int | None = None, *, timeout: float | None = 30.0
    ) -> Iterator[CatalogVersion]:
        """Hold a version (the latest by default) so that no node truncates it
        while the block runs; pins of a dead process expire with its lease.
        ``WaitTimeoutError`` if checkpoints kept racing the pin for ``timeout``
        seconds."""
        check.optional_int(version, "Parameter 'version' of Catalog.pin")
        timeout = check.timeout(timeout, "Parameter 'timeout' of Catalog.pin")
        self._check_open()
        target = self.latest_version if version is None else version
        self.catalog(target)
        handle = self._pins.pin(target, timeout=timeout)
        try:
            yield self.catalog(target)
        finally:
            self._pins.unpin(handle)

    # -- writing -------------------------------------------------------------

    def execute(
        self,
        commands: Iterable[Command],
        *,
        attach: Attachment | None = None,
        timeout: float | None = None,
        request_id: str | None = None,
    ) -> ExecuteResult:
        """Apply the commands in order as one version, or not at all.

        Later commands see the changes of earlier ones. The commit holds the
        store's writer section while it catches up with the log, validates
        and appends, so cooperating writers never race; on a store that
        cannot serialise its writers a lost race is validated again and
        retried with jittered backoff until ``commit_timeout_s`` (or
        ``max_attempts``), then ``ConflictError``. Returns once the version is
        ready here (its listeners and earlier ones done; for a version of
        data commits alone, once applied: a writer waits for no listener)
        and visible everywhere (activation plus clock skew).

        ``timeout`` bounds the whole call; ``WaitTimeoutError`` says what was
        awaited, and whether the version was committed before time ran out.
        Without it, committing gives up after ``commit_timeout_s`` and the
        waits after the commit are unbounded.

        ``attach(base, new)`` lets a caller ride its own compares and writes
        in the same metastore transaction, with the data commits they
        publish as entries of the version (a data commit, or a table's
        first snapshot with the table): it returns a ``HookWork``, whose
        ``finish(ok)`` runs after each attempt, told whether it committed,
        so the caller keeps or removes what it wrote for it; its writes may
        not touch the catalog's own ``catalog.`` keys. It is called
        again on every attempt, with ``new`` the version the commands make.
        A batch of no commands with an attach makes a version of its data
        commits alone. Each data commit must name a snapshot its writes
        publish, or the table's current one, as the data plane checks
        (``set_data_commit_check``); else ``ValidationError``. When one of
        its compares fails, nothing is written and ``ConflictError`` is
        raised.

        ``request_id`` (1 to 128 printable ASCII characters) makes the call
        idempotent: when a version was already committed under that id, on
        any node, the call applies nothing and returns a result equal to the
        original one (its version, applied flags and ``created``), also
        after a crash between the commit and the reply. The same id with
        different commands raises ``ConflictError``. An id is known while its
        version is in the available log and for ``request_window_s`` (24 h)
        after the version became active, checkpoints notwithstanding; later,
        a retry executes anew. A batch that changes nothing commits no
        version, so its id is not stored: a retry evaluates it again.
        """
        batch = command_batch(commands, "Catalog.execute")
        if attach is not None:
            check.callable_(attach, "Parameter 'attach' of Catalog.execute")
        timeout = check.timeout(timeout, "Parameter 'timeout' of Catalog.execute")
        request_id = check_request_id(request_id, "Parameter 'request_id' of Catalog.execute")
        return self._settle(self._committer.commit(batch, attach, timeout, request_id))

    def _settle(self, done: ExecuteResult | Committed) -> ExecuteResult:
        """Wait until a committed version is ready here and visible everywhere."""
        if isinstance(done, ExecuteResult):
            return done  # nothing committed: nothing to wait for
        version = done.result.version
        # A data commit's writer waits for nobody's listeners: its own run
        # after it returns, and an earlier DDL's (which a stuck listener may
        # hold for good) would turn committed data into a timeout that a
        # caller could retry into a second append.
        self._await_ready(version, done.deadline, done.timeout, applied_only=done.data_only)
        if not self._clock.wait_until(done.visible, seconds_left(done.deadline)):
            raise WaitTimeoutError(
                f"Catalog version {version} was committed, but this node's clock did not "
                f"pass its activation plus the maximum clock skew (schema sync) within "
                f"{done.timeout} s",
                awaited="schema sync",
                timeout=done.timeout,
                version=version,
                committed=True,
            )
        if done.counts and self._checkpoints.count_commit():
            self.apply_retention()
        return done.result

    def execute_async(
        self,
        commands: Iterable[Command],
        *,
        timeout: float | None = None,
        request_id: str | None = None,
    ) -> Future[ExecuteResult]:
        """``execute`` on a worker thread, so that many DDL overlap their waits.

        The future's ``result(timeout)`` and ``exception(timeout)`` raise
        ``WaitTimeoutError`` (a ``TimeoutError``) when the result is not there
        in time; ``timeout`` here bounds the ``execute`` itself."""
        batch = command_batch(commands, "Catalog.execute_async")
        timeout = check.timeout(timeout, "Parameter 'timeout' of Catalog.execute_async")
        request_id = check_request_id(request_id, "Parameter 'request_id' of Catalog.execute_async")
        self._check_open()
        with self._cond:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=min(32, (os.cpu_count() or 1) * 4),
                    thread_name_prefix="almanac-execute",
                )
            executor = self._executor
        future: ExecuteFuture[ExecuteResult] = ExecuteFuture()
        # Submitted by a listener, it waits as the listener's own execute
        # would: until its version is applied, not for the listeners of it
        # (they run after the submitting one returns, which may be waiting
        # for this future).
        for_listener = self._events.inside_listener()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            self._events.mark_for_listener(for_listener)
            try:
                done = self._committer.commit(batch, None, timeout, request_id)
                if isinstance(done, Committed) and not for_listener:
                    # The waits go to the settling thread: this worker is
                    # free for the next commit, so waits overlap however
                    # many executes are in flight.
                    self._settler.hand(done.result.version, done, future)
                    return
                future.set_result(self._settle(done))
            except BaseException as exc:
                future.set_exception(exc)
            finally:
                self._events.mark_for_listener(False)

        executor.submit(run)
        return future

    def sql(
        self, text: str, *, default_schema: str = DEFAULT_SCHEMA, request_id: str | None = None
    ) -> SqlResult:
        """Run a DDL script atomically as one version (the result's ``version``
        is the resulting one), or answer one read statement (``SHOW …``,
        ``DESCRIBE …``) with rows. ``request_id``: see ``execute``; a read
        changes nothing, so it needs none and ignores one."""
        from almanac.sql.answer import run_read
        from almanac.sql.parsing import parse_sql
        from almanac.sql.reads import ReadStatement

        check.string(text, "Parameter 'text' of Catalog.sql", nul_ok=True)  # literals may hold NUL
        check.string(default_schema, "Parameter 'default_schema' of Catalog.sql", nonblank=True)
        request_id = check_request_id(request_id, "Parameter 'request_id' of Catalog.sql")
        parsed = parse_sql(text, default_schema=default_schema)
        if isinstance(parsed, ReadStatement):
            self._check_open()
            return run_read(parsed, self)
        return SqlResult(self.execute(parsed, request_id=request_id).version)

    def describe(self, version: int) -> str:
        """What one available version changed, naming the objects (for logs)."""
        check.integer(version, "Parameter 'version' of Catalog.describe")
        self.catalog(version)
        return self._versions.describe(version)

    # -- applying (the update log delivers to the node's AppliedVersions) ------

    def on_update(self, update: VersionedUpdate, token: int) -> None:
        """Apply one version; versions already applied are ignored."""
        self._versions.on_update(update, token)

    def on_checkpoint(
        self, version: CatalogVersion, token: int, requests: tuple[RequestRecord, ...] = ()
    ) -> None:
        """Start from (or jump to) a stored checkpoint of the whole catalog,
        with the request ids it carries."""
        self._versions.on_checkpoint(version, token, requests)

    def on_truncate(self, earliest: int) -> None:
        """Forget versions older than ``earliest``; the log no longer has them."""
        self._versions.on_truncate(earliest)

    # -- waits -----------------------------------------------------------------

    def catalog_ready(
        self, version: int, timeout: float | None = 30.0, *, applied_only: bool = False
    ) -> bool:
        """Wait until ``version`` is ready here: applied, and unless it is
        made of data commits alone, its listeners (and those of every
        earlier version) done (see ``almanac.node.dispatch``); only applied, with
        ``applied_only``. Returns True; raises ``WaitTimeoutError`` when that
        takes longer than ``timeout`` seconds, ``CatalogError`` when the node
        closes or stops following its log first.

        Inside a listener, the version being delivered and later ones cannot
        finish their listeners before the running one returns: there this
        waits until they are applied, so that a listener may wait for a
        version (its own DDL's, say) without waiting for itself.
        """
        check.integer(version, "Parameter 'version' of Catalog.catalog_ready", lo=0)
        timeout = check.timeout(timeout, "Parameter 'timeout' of Catalog.catalog_ready")
        check.boolean(applied_only, "Parameter 'applied_only' of Catalog.catalog_ready")
        applied = applied_only or self._events.inside_listener()

        def reached() -> bool:
            if applied:
                return self.latest_version >= version
            return self._events.ready_locked(version)

        with self._cond:
            done = self._cond.wait_for(
                lambda: reached() or self._closed or self._log.failure is not None, timeout
            )
            if done and reached():
                return True
            latest, heard = self.latest_version, self._events.heard
        self._check_open()
        what = "applied" if applied else "ready (applied, its listeners done)"
        raise WaitTimeoutError(
            f"Catalog version {version} was not {what} on this node within {timeout} s "
            f"(applied: {latest}, listeners done: {heard})",
            awaited="catalog version " + ("applied" if applied else "ready"),
            timeout=timeout,
            version=version,
        )

    def wait_for_metadata_completeness(
        self, timestamp: int | dt.datetime, timeout: float | None = 30.0
    ) -> bool:
        """Wait until this node has applied every version that could be active
        at ``timestamp``; afterwards ``catalog_at(timestamp)`` is final.

        Returns True; ``WaitTimeoutError`` when that is not so within
        ``timeout`` seconds, at once when the clock alone needs longer (a
        timestamp far ahead)."""
        what = "Catalog.wait_for_metadata_completeness"
        ts = check.timestamp(timestamp, f"Parameter 'timestamp' of {what}")
        timeout = check.timeout(timeout, f"Parameter 'timeout' of {what}")
        deadline = None if timeout is None else time.monotonic() + timeout
        after = self.sync.complete_after(ts)
        gap_s = (physical_ms(after) - physical_ms(self._clock.now())) / 1000
        if (timeout is not None and gap_s > timeout) or not self._clock.wait_until(
            after, seconds_left(deadline)
        ):
            raise WaitTimeoutError(
                f"Metadata completeness at timestamp {ts} needs this node's clock to pass "
                f"{after} (the timestamp plus clock skew minus activation delay), "
                f"{max(gap_s, 0):.3f} s ahead; it was not within {timeout} s",
                awaited="metadata completeness",
                timeout=timeout,
                timestamp=ts,
            )
        self._check_open()
        self._log.catch_up(self._versions)
        return True

    def _await_ready(
        self,
        version: int,
        deadline: float | None,
        timeout: float | None,
        *,
        applied_only: bool = False,
    ) -> None:
        """Wait for the readiness of a version this node just committed (or
        only until it is applied here)."""
        try:
            self.catalog_ready(version, seconds_left(deadline), applied_only=applied_only)
        except WaitTimeoutError:
            raise WaitTimeoutError(
                f"Catalog version {version} was committed, but its listeners (or those of an "
                f"earlier version) were not done within {timeout} s",
                awaited="catalog version ready",
                timeout=timeout,
                version=version,
                committed=True,
            ) from None

    # -- log checkpoints--------------------------------------------------------

    def checkpoint_log(self, version: int | None = None) -> int:
        """Store the whole catalog at ``version`` (the latest by default) and
        delete the older log entries, never past a version a reader pins.
        Returns the earliest version available afterwards. Also deletes
        what an interrupted earlier checkpoint left behind."""
        check.optional_int(version, "Parameter 'version' of Catalog.checkpoint_log")
        self._check_open()
        return self._checkpoints.checkpoint(self.latest_version if version is None else version)

    def apply_retention(self) -> int:
        """Checkpoint the log as far as this node's ``retention`` allows (and
        no live node pins); returns the earliest version available. A node
        runs it itself every ``check_every`` of its commits; a node that
        only follows (``almanac node``) calls it on a schedule."""
        self._check_open()
        return self._checkpoints.apply()

    # -- events --------------------------------------------------------------

    def listen(self, event_type: EventType, listener: Listener) -> None:
        """Call ``listener`` for every event of ``event_type`` from now on.

        Listeners run on this node's dispatcher thread, one version after
        another in entry order, never on the thread that follows the log nor
        inside a commit; a listener may call any public method, DDL included.
        """
        check.enum_member(event_type, EventType, "Parameter 'event_type' of Catalog.listen")
        check.callable_(listener, "Parameter 'listener' of Catalog.listen")
        self._events.listen(event_type, listener)

    def unlisten(self, event_type: EventType, listener: Listener) -> None:
        check.enum_member(event_type, EventType, "Parameter 'event_type' of Catalog.unlisten")
        check.callable_(listener, "Parameter 'listener' of Catalog.unlisten")
        self._events.unlisten(event_type, listener)

    @property
    def listener_failures(self) -> list[ListenerFailure]:
        return self._events.failures

    # -- extension points ----------------------------------------------------

    def add_commit_hook(self, hook: CommitHook) -> None:
        """Let ``hook(base, new, update)`` ride its compares and writes in the
        transaction of every version this node commits (called again on
        every attempt); it returns a ``HookWork`` or None. ``update`` is what
        turns ``base`` into ``new``: its entries name the objects the version
        changes, so a hook need not compare whole catalogs. Layers above the
        catalog keep their own state in step with a version this way (the
        data plane moves a table's Iceberg schema with its ALTER), never the
        catalog's own ``catalog.`` keys (``ValidationError``). A compare of a
        hook that fails makes the attempt retry, like a lost race."""
        check.callable_(hook, "Parameter 'hook' of Catalog.add_commit_hook")
        with self._cond:
            self._committer.hooks.append(hook)

    def set_data_commit_check(self, check_entries: DataCommitCheck) -> None:
        """Let ``check_entries(work)`` judge the data commits (``entries``) an
        ``execute(attach=...)`` callback returns, before the version's
        transaction: ``work`` holds that transaction's compares and writes,
        the attach's and then the commit hooks', and the check raises a
        ``CatalogError`` for an entry they do not publish, and returns
        compares that keep what it read true until the transaction. The
        catalog knows nothing of table data: the data plane sets it, and
        without one an attached entry is refused. A second call replaces the first."""
        check.callable_(check_entries, "Parameter 'check_entries' of Catalog.set_data_commit_check")
        with self._cond:
            self._committer.data_commit_check = check_entries

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` first thing in ``close`` (to stop a layer's threads)."""
        check.callable_(callback, "Parameter 'callback' of Catalog.on_close")
        with self._cond:
            self._closers.append(callback)

    @property
    def closed(self) -> bool:
        """True once ``close`` ran or the node stopped following its log."""
        return self._closed or self._log.failure is not None

    def catch_up(self) -> None:
        """Apply every version stored so far, on this thread, before returning."""
        self._check_open()
        self._log.catch_up(self._versions)

    def oldest_pinned(self) -> tuple[int | None, Compare]:
        """The oldest pinned version (None if none) and a compare that holds
        while no pin was taken or released since: a transaction that deletes
        what pinned versions read rides it, so a new pin is never raced."""
        oldest, revision = self._pins.oldest_pinned()
        return oldest, Compare.mod_revision(KEY_PINS, "==", revision)

    @property
    def metastore(self) -> Metastore:
        """The store this node's log lives in, for layers that keep their own
        keys beside it (table data); never for the ``catalog.`` keys."""
        return self._log.store

    # -- lifecycle -----------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise CatalogError("The catalog is closed")
        failure = self._log.failure
        if failure is not None:
            raise CatalogError(f"The catalog stopped following its log: {failure}") from failure

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._events.close_locked()
            self._cond.notify_all()
            executor, self._executor = self._executor, None
        for callback in reversed(self._closers):
            try:
                callback()
            except Exception:
                _log.exception("A close callback of catalog '%s' failed", self.target)
        self._events.join()
        if executor is not None:
            executor.shutdown(wait=True)
        self._settler.close()
        if self._node is not None:
            self._node.close()
            _log.info("Node '%s' closed", self._node.name)
        self._pins.close()
        self._log.close()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
