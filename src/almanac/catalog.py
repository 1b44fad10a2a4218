"""A catalog node: executes commands into new versions and serves every
version it has applied, by number or by time.

Every version reaches the node through its update log, its own commits
included, so the committing node and every other node build each version
with the same function from the same stored entries.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import datetime as dt
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from almanac import _check as check
from almanac.catalog_types import (
    CommitHook,
    ExecuteResult,
    HookWork,
    RetentionPolicy,
    VersionInfo,
)
from almanac.catalog_version import DEFAULT_SCHEMA, CatalogVersion
from almanac.clock import LOGICAL_BITS, HybridClock, physical_ms
from almanac.commands.base import Command, CommitContext
from almanac.commands.preview import command_batch, preview
from almanac.commands.tables import check_reserve
from almanac.descriptors import Schema
from almanac.diff import CatalogDiff, diff_catalogs
from almanac.dispatch import Dispatcher
from almanac.entries import (
    ObjectIdsReserved,
    SchemaCreated,
    TableDataCommitted,
    VersionedUpdate,
    activation_time,
    apply_entries,
    apply_update,
)
from almanac.errors import (
    CatalogError,
    ConflictError,
    CorruptLogError,
    NotFoundError,
    VersionNotFoundError,
    WaitTimeoutError,
)
from almanac.events import Event, EventType, Listener, ListenerFailure
from almanac.log import KEY_PINS, UpdateLog
from almanac.metastore import (
    Compare,
    Delete,
    DeleteRange,
    Get,
    Metastore,
    Op,
    Put,
    Range,
)
from almanac.nodes import (
    NODE_TTL_S,
    NodeInfo,
    NodeRegistration,
    check_node_name,
    default_node_name,
    list_nodes,
)
from almanac.requests import (
    DEFAULT_REQUEST_WINDOW_S,
    RequestIndex,
    RequestRecord,
    carried,
    check_request_id,
    forget,
    horizon,
    record_of,
    remember,
    request_digest,
)
from almanac.schema_sync import MEMORY_DEFAULTS, SchemaSync
from almanac.settler import ExecuteFuture, Settler
from almanac.sql.results import SqlResult
from almanac.summary import CHECKPOINT_SUMMARY, summarize_update

__all__ = [
    "Catalog",
    "CommitHook",
    "ExecuteResult",
    "HookWork",
    "RetentionPolicy",
    "VersionInfo",
]

DEFAULT_MAX_ATTEMPTS = 10
"""The retry cap of data commits (``almanac.data``); catalog commits retry
until ``commit_timeout_s`` instead, unless given ``max_attempts``."""
DEFAULT_COMMIT_TIMEOUT_S = 60.0
_BACKOFF_FIRST_S = 0.001
_BACKOFF_MAX_S = 0.05
_log = logging.getLogger("almanac.catalog")


class _Versions:
    """The versions a node holds. Appended in place; replaced whole on
    truncation, so a reader that took a reference sees a consistent list."""

    __slots__ = ("activations", "catalogs", "earliest", "requests", "tokens", "updates")

    def __init__(self, base: CatalogVersion, token: int, requests: RequestIndex) -> None:
        self.earliest = base.version
        self.catalogs = [base]
        self.activations = [base.activation_time]
        self.updates: list[VersionedUpdate | None] = [None]
        self.tokens = [token]
        # The request ids of the available versions, and of older ones still
        # inside the request window; updated before the catalog it belongs
        # to is appended, so it is never older than the latest catalog.
        self.requests = requests

    def trimmed(self, earliest: int, oldest_request: int) -> _Versions:
        cut = earliest - self.earliest
        out = _Versions.__new__(_Versions)
        out.earliest = earliest
        out.catalogs = self.catalogs[cut:]
        out.activations = self.activations[cut:]
        out.updates = [None, *self.updates[cut + 1 :]]
        out.tokens = self.tokens[cut:]
        out.requests = forget(self.requests, earliest, oldest_request)
        return out


Attachment = Callable[
    [CatalogVersion, CatalogVersion],
    HookWork
    | tuple[Sequence[Compare], Sequence[Op]]
    | tuple[Sequence[Compare], Sequence[Op], Sequence[TableDataCommitted]],
]
"""``attach(base, new)`` returns extra compares and writes for a version's
transaction, the data commits they publish (entries of the same version) and
a ``finish(ok)`` to run after the attempt: a ``HookWork`` (or a bare tuple)."""


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
        request_window_s: float = DEFAULT_REQUEST_WINDOW_S,
        soft_delete_reserve_s: float = 0.0,
    ) -> None:
        """``node_name`` names this node among the live nodes of the catalog
        (default ``<hostname>-<pid>``); a name a live node holds is refused
        with ``AlreadyExistsError``. ``node_ttl_s``: how long the node's key
        outlives a crash of its process. ``request_window_s``: how long a
        request id stays known once a checkpoint truncated its version (see
        ``execute``). ``soft_delete_reserve_s``: the reserve of a DROP TABLE
        committed here that names none (0: drop at once); each drop stores
        the reserve it got, so nodes with other defaults still agree."""
        check.number(node_ttl_s, "Parameter 'node_ttl_s' of Catalog", positive=True)
        self.soft_delete_reserve_s = check_reserve(
            soft_delete_reserve_s, "Parameter 'soft_delete_reserve_s' of Catalog"
        )
        """The reserve (seconds) of a DROP TABLE committed here that names none."""
        self.request_window_s = check.number(
            request_window_s, "Parameter 'request_window_s' of Catalog", lo=0, hi=2**40
        )
        """How long (seconds) a request id outlives the truncation of its version."""
        name = (
            default_node_name()
            if node_name is None
            else check_node_name(node_name, "Parameter 'node_name' of connect")
        )
        self.target = target
        """How another process names this catalog (``connect(target)`` opens it)."""
        self.sync = sync
        self.retention = retention
        self.max_attempts = max_attempts
        """A cap on commit attempts (None: retry until ``commit_timeout_s``)."""
        self.commit_timeout_s = commit_timeout_s
        """How long ``execute`` may try to commit (writer section included)
        when it is given no timeout of its own."""
        self.root = root
        self._clock = clock or HybridClock()
        self._log = log
        self._apply_lock = threading.RLock()
        self._cond = threading.Condition()
        self._state = _Versions(CatalogVersion.empty(), 0, RequestIndex())
        self._events = Dispatcher(self._cond)
        self._closed = False
        self._executor: ThreadPoolExecutor | None = None
        self._commits = 0
        self._hooks: list[CommitHook] = []
        self._closers: list[Callable[[], None]] = []
        self._settler: Settler[_Committed, ExecuteResult] = Settler(self._settle)
        self._node: NodeRegistration | None = None
        try:
            log.start(self)
            if self.latest_version == 0:
                self._commit_initial(name)
            if not log.store.read_only:  # a reader of a read-only store leaves no trace
                self._node = NodeRegistration(
                    log.store,
                    name,
                    applied=self.latest_version,
                    ttl_s=node_ttl_s,
                    fallback=node_name is None,
                )
        except BaseException:
            log.close()
            raise
        self.node_name = name if self._node is None else self._node.name
        """This node's name among the live nodes of the catalog."""
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
        state = self._state
        return state.earliest + len(state.catalogs) - 1

    @property
    def earliest_version(self) -> int:
        return self._state.earliest

    @property
    def clock(self) -> HybridClock:
        return self._clock

    @property
    def log(self) -> UpdateLog:
        return self._log

    def catalog(self, version: int | None = None) -> CatalogVersion:
        """The latest version, or exactly ``version``."""
        check.optional_int(version, "Parameter 'version' of Catalog.catalog")
        state = self._state
        if version is None:
            return state.catalogs[-1]
        offset = version - state.earliest
        if 0 <= offset < len(state.catalogs):
            return state.catalogs[offset]
        if offset < 0 and version >= 0:
            raise VersionNotFoundError(
                f"Catalog version {version} is no longer available; the earliest available "
                f"version is {state.earliest}",
                version=version,
                earliest=state.earliest,
            )
        raise VersionNotFoundError(
            f"Catalog version {version} does not exist; the latest version is "
            f"{state.earliest + len(state.catalogs) - 1}",
            version=version,
            earliest=state.earliest,
        )

    def catalog_at(self, timestamp: int | dt.datetime) -> CatalogVersion:
        """The newest version whose activation time is at or before ``timestamp``
        (a hybrid timestamp, or an aware datetime; a naive one is refused)."""
        ts = check.timestamp(timestamp, "Parameter 'timestamp' of Catalog.catalog_at")
        state = self._state
        i = bisect.bisect_right(state.activations, ts) - 1
        if i < 0:
            raise VersionNotFoundError(
                f"No available catalog version was active at timestamp {ts}; the earliest "
                f"available version is {state.earliest}",
                version=-1,
                earliest=state.earliest,
            )
        return state.catalogs[i]

    def history(self, since: int = 1) -> list[VersionInfo]:
        """What each available version changed, oldest first. After a
        checkpoint the earliest version is listed too, with no entries: the
        checkpoint keeps the catalog it made, not what its version changed."""
        check.integer(since, "Parameter 'since' of Catalog.history")
        state = self._state
        out = []
        if state.updates[0] is None and state.earliest >= max(since, 1):
            at = state.activations[0]
            checkpoint = VersionedUpdate(
                version=state.earliest, commit_time=at, delay_ms=0, entries=()
            )
            out.append(VersionInfo(state.earliest, at, at, checkpoint))
        # Versions are stored by offset from the earliest, so a stream asking
        # for what is new reads only that, however long the kept log.
        for offset in range(max(since - state.earliest, 0), len(state.updates)):
            update = state.updates[offset]
            if update is not None and update.version >= since:
                out.append(
                    VersionInfo(
                        update.version,
                        update.commit_time,
                        state.activations[offset],
                        update,
                    )
                )
        return out

    def diff(self, v1: int, v2: int) -> CatalogDiff:
        """What changed from version ``v1`` to version ``v2``, object by object
        (see ``almanac.diff``). ``v1`` may be the later one: the diff then
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
        handle = self._log.pin(target, timeout=timeout)
        try:
            yield self.catalog(target)
        finally:
            self._log.unpin(handle)

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
        applied here, its listeners are done, and it is visible everywhere
        (activation plus clock skew).

        ``timeout`` bounds the whole call; ``WaitTimeoutError`` says what was
        awaited, and whether the version was committed before time ran out.
        Without it, committing gives up after ``commit_timeout_s`` and the
        waits after the commit are unbounded.

        ``attach(base, new)`` lets a caller ride its own compares and writes
        in the same metastore transaction, with the data commits they
        publish as entries of the version (a data commit, or a table's
        first snapshot with the table): it returns a ``HookWork``, whose
        ``finish(ok)`` runs after each attempt, told whether it committed,
        so the caller keeps or removes what it wrote for it. It is called
        again on every attempt, with ``new`` the version the commands make.
        A batch of no commands with an attach makes a version of its data
        commits alone. When one of its compares fails, nothing is written
        and ``ConflictError`` is raised.

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
        return self._settle(self._commit(batch, attach, timeout, request_id))

    def _commit(
        self,
        batch: Sequence[Command],
        attach: Attachment | None,
        timeout: float | None,
        request_id: str | None = None,
    ) -> ExecuteResult | _Committed:
        """The commit of ``execute``; the waits after it are ``_settle``'s."""
        digest = b"" if request_id is None else request_digest(batch)
        started = time.monotonic()
        commit_deadline = started + (self.commit_timeout_s if timeout is None else timeout)
        wait_deadline = None if timeout is None else started + timeout
        seen = self.latest_version
        store = self._log.store
        attempts = 0
        backoff = _BACKOFF_FIRST_S
        while True:
            attempts += 1
            self._check_open()
            with contextlib.ExitStack() as section:
                try:
                    section.enter_context(store.exclusive(_left(commit_deadline)))
                except WaitTimeoutError as exc:
                    limit = self.commit_timeout_s if timeout is None else timeout
                    raise WaitTimeoutError(
                        f"The commit did not get the store's writer section within {limit} s: "
                        f"{exc.message}",
                        awaited="writer section",
                        timeout=limit,
                    ) from None
                # A store that serialises its writers is read inside the
                # section, so the commit cannot lose. An optimistic store is
                # not read first on the first attempt: the compare-and-swap
                # checks the base anyway, and the follower keeps it fresh.
                read_first = store.serializes_writers or attempts > 1
                if read_first:
                    self._log.catch_up(self)
                base = self.catalog()
                bound = self._bind(batch)
                if request_id is not None:
                    # After every catch-up, and before every append: a version
                    # this id made (here or anywhere) is in the index by now,
                    # since the index is never older than ``base``.
                    known = self._state.requests.get(request_id)
                    if known is not None:
                        return self._replayed(known, digest, attempts, wait_deadline, timeout)
                try:
                    planned = preview(base, bound)
                except CatalogError as exc:
                    if not read_first:
                        self._log.catch_up(self)
                        if self.latest_version != base.version:
                            continue  # judged on a stale catalog: judge again
                    raise self._explain_race(exc, bound, seen, base) from None
                commit_time = self._clock.now()
                # A version of data commits alone changes no schema a reader
                # could be planning with, so it does not wait out the
                # schema-sync delay (see ``DATA_ONLY``).
                data_only = all(isinstance(e, TableDataCommitted) for e in planned.entries)
                update = VersionedUpdate(
                    version=base.version + 1,
                    commit_time=commit_time,
                    delay_ms=0 if data_only else self.sync.delay_ms,
                    entries=planned.entries,
                    node=self.node_name,
                    request_id=request_id,
                    request_digest=digest,
                    applied=planned.applied,
                )
                made = planned.catalog.evolve(activation_time=activation_time(base, update))
                works: list[HookWork] = []
                if attach is not None and (planned.entries or not batch):
                    works.append(_attachment(attach(base, made)))
                token = None
                try:
                    extra = tuple(e for work in works for e in work.entries)
                    for entry in extra:
                        target = made.tables_by_id.get(entry.table_id)
                        if target is None or target.soft_deleted:
                            raise NotFoundError(
                                f"Table id {entry.table_id} does not exist at catalog version "
                                f"{made.version}: it was dropped before its data commit "
                                "published; nothing was committed",
                                kind="table",
                                name=str(entry.table_id),
                            )
                    if extra:
                        made = apply_entries(made, extra)
                        update = dataclasses.replace(update, entries=(*update.entries, *extra))
                    if not update.entries:
                        if not read_first:
                            self._log.catch_up(self)
                            if self.latest_version != base.version:
                                continue  # "nothing to do" holds only on the latest
                        return ExecuteResult(base.version, planned.applied, created=False)
                    new = apply_update(base, update, made)
                    works += self._hook_work(base, new, update)
                    compares = [c for work in works for c in work.compares]
                    ops = [op for work in works for op in work.ops]
                    token = self._log.append(update, extra_compares=compares, extra_ops=ops)
                finally:
                    for work in works:
                        work.finished(token is not None)
                if token is not None:
                    self._apply(update, token, base, new)
                    break
                self._log.catch_up(self)  # the winner's version, before anything else
            if attach is not None and self._log.latest_version() < update.version:
                raise ConflictError(
                    "The commit was refused: a condition attached to it no longer holds",
                    attempts=attempts,
                )
            now = time.monotonic()
            if (self.max_attempts is not None and attempts >= self.max_attempts) or (
                now >= commit_deadline
            ):
                raise ConflictError(
                    f"Gave up committing after {attempts} attempts in {now - started:.1f} s: "
                    "another writer committed a new version before each attempt",
                    attempts=attempts,
                )
            if read_first and not store.serializes_writers:
                # Optimistic store: back off with full jitter so that the
                # racing writers spread out, never past the deadline (a first
                # attempt on an unread base retries at once).
                time.sleep(min(random.uniform(0, backoff), max(commit_deadline - now, 0)))
                backoff = min(backoff * 2, _BACKOFF_MAX_S)
        # From the base it was committed on, not by looking the version up: a
        # checkpoint on another thread (a listener's, say) may already have
        # trimmed it away, and the commit still succeeded.
        activation = activation_time(base, update)
        data_only = all(isinstance(e, TableDataCommitted) for e in update.entries)
        visible = activation if data_only else self.sync.visible_everywhere_at(activation)
        result = ExecuteResult(update.version, planned.applied, created=True)
        return _Committed(result, visible, wait_deadline, timeout)

    def _bind(self, batch: Sequence[Command]) -> list[Command]:
        """The batch with what this node decides filled in: its time now and
        its defaults (see ``Command.bind``), taken afresh on every attempt."""
        context = CommitContext(self._clock.now(), self.soft_delete_reserve_s)
        return [command.bind(context) for command in batch]

    def _replayed(
        self,
        known: RequestRecord,
        digest: bytes,
        attempts: int,
        deadline: float | None,
        timeout: float | None,
    ) -> _Committed:
        """The original result of a request already committed; it waits for
        what the original waited for, in case it is that recent."""
        if known.digest != digest:
            raise ConflictError(
                f"Request id {known.request_id!r} was already used for other commands "
                f"(catalog version {known.version}); a request id names one request",
                attempts=attempts,
                request_id=known.request_id,
                version=known.version,
            )
        visible = self.sync.visible_everywhere_at(known.activation_time)
        result = ExecuteResult(known.version, known.applied, created=True)
        return _Committed(result, visible, deadline, timeout, counts=False)

    def _settle(self, done: ExecuteResult | _Committed) -> ExecuteResult:
        """Wait until a committed version is ready here and visible everywhere."""
        if isinstance(done, ExecuteResult):
            return done  # nothing committed: nothing to wait for
        version = done.result.version
        self._await_ready(version, done.deadline, done.timeout)
        if not self._clock.wait_until(done.visible, _left(done.deadline)):
            raise WaitTimeoutError(
                f"Catalog version {version} was committed, but this node's clock did not "
                f"pass its activation plus the maximum clock skew (schema sync) within "
                f"{done.timeout} s",
                awaited="schema sync",
                timeout=done.timeout,
                version=version,
                committed=True,
            )
        if done.counts:
            self._after_commit()
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
                done = self._commit(batch, None, timeout, request_id)
                if isinstance(done, _Committed) and not for_listener:
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

    def _explain_race(
        self, exc: CatalogError, batch: Sequence[Command], seen: int, base: CatalogVersion
    ) -> CatalogError:
        """When the batch was valid at the version this node had when
        ``execute`` was called and only the versions committed since make it
        fail, say so in the error: what the other writer changed."""
        if base.version <= seen:
            return exc
        try:
            preview(self.catalog(seen), batch)
        except CatalogError:
            return exc  # it fails on its own, race or not
        changes = "; ".join(self._describe(v) for v in range(seen + 1, base.version + 1))
        exc.message = (
            f"{exc.message} (another writer committed first: {changes})" if changes else exc.message
        )
        exc.args = (exc.message,)
        exc.context["concurrent_versions"] = tuple(range(seen + 1, base.version + 1))
        return exc

    def describe(self, version: int) -> str:
        """What one available version changed, naming the objects (for logs)."""
        check.integer(version, "Parameter 'version' of Catalog.describe")
        self.catalog(version)
        return self._describe(version)

    def _describe(self, version: int) -> str:
        """What one version changed, naming the objects, for error messages."""
        state = self._state
        offset = version - state.earliest
        update = state.updates[offset] if 0 <= offset < len(state.updates) else None
        if update is None:
            if version == state.earliest and version >= 1:
                return f"version {version}: {CHECKPOINT_SUMMARY}"
            return f"version {version}"
        after = self.catalog(version)
        before = self.catalog(version - 1) if version - 1 >= self.earliest_version else after
        return f"version {version}: " + summarize_update(update, before, after)

    def _commit_initial(self, node: str) -> None:
        with self._log.store.exclusive(self.commit_timeout_s):
            self._log.catch_up(self)
            if self.latest_version > 0:
                return
            update = VersionedUpdate(
                version=1,
                commit_time=self._clock.now(),
                delay_ms=0,
                entries=(ObjectIdsReserved(1), SchemaCreated(Schema(id=0, name=DEFAULT_SCHEMA))),
                node=node,
            )
            token = self._log.append(update)
            if token is not None:
                self.on_update(update, token)
                return
        self._log.catch_up(self)  # an optimistic store: another node won the race

    def _await_ready(self, version: int, deadline: float | None, timeout: float | None) -> None:
        """Wait for the readiness of a version this node just committed."""
        try:
            self.catalog_ready(version, _left(deadline))
        except WaitTimeoutError:
            raise WaitTimeoutError(
                f"Catalog version {version} was committed, but its listeners (or those of an "
                f"earlier version) were not done within {timeout} s",
                awaited="catalog version ready",
                timeout=timeout,
                version=version,
                committed=True,
            ) from None

    # -- applying (called by the update log, in version order) ---------------

    def on_update(self, update: VersionedUpdate, token: int) -> None:
        """Apply one version; versions already applied are ignored."""
        self._apply(update, token)

    def _apply(
        self,
        update: VersionedUpdate,
        token: int,
        base: CatalogVersion | None = None,
        new: CatalogVersion | None = None,
    ) -> None:
        """``on_update``; a committer passes the catalog it built from ``base``,
        used when ``base`` is still the latest here, so it is built once."""
        with self._apply_lock:
            state = self._state
            latest = state.earliest + len(state.catalogs) - 1
            if update.version <= latest:
                return
            if update.version != latest + 1:
                raise CorruptLogError(
                    f"Update log skipped from version {latest} to {update.version}",
                    version=update.version,
                )
            last = state.catalogs[-1]
            snapshot = new if new is not None and last is base else apply_update(last, update)
            self._clock.update(update.commit_time)
            events = [
                Event(entry.event_type, update.version, token, entry.object_id(), entry)
                for entry in update.entries
                if entry.event_type is not None
            ]
            record = record_of(update, snapshot.activation_time)
            with self._cond:
                if record is not None:
                    state.requests = remember(state.requests, (record,))
                state.catalogs.append(snapshot)
                state.activations.append(snapshot.activation_time)
                state.updates.append(update)
                state.tokens.append(token)
                self._deliver_locked(update.version, events)
                self._cond.notify_all()

    def _deliver_locked(self, version: int, events: list[Event]) -> None:
        """Note the version as seen and hand its events to the dispatcher
        (caller holds ``_cond``)."""
        if self._node is not None:
            self._node.saw(version)
        self._events.deliver_locked(version, events)

    def on_checkpoint(
        self, snapshot: CatalogVersion, token: int, requests: tuple[RequestRecord, ...] = ()
    ) -> None:
        """Start from (or jump to) a stored checkpoint of the whole catalog,
        with the request ids it carries."""
        with self._apply_lock:
            if snapshot.version <= self.latest_version:
                self.on_truncate(snapshot.version)
                return
            oldest = self._oldest_request()
            known = remember(self._state.requests, requests)
            with self._cond:
                self._state = _Versions(snapshot, token, forget(known, snapshot.version, oldest))
                self._deliver_locked(snapshot.version, [])
                self._cond.notify_all()

    def on_truncate(self, earliest: int) -> None:
        """Forget versions older than ``earliest``; the log no longer has them."""
        with self._apply_lock:
            state = self._state
            if earliest > state.earliest and earliest <= self.latest_version:
                self._state = state.trimmed(earliest, self._oldest_request())

    def _oldest_request(self) -> int:
        """The activation time before which a truncated version's request id
        is forgotten: now minus the request window."""
        return horizon(self._clock.now(), self.request_window_s)

    def catalog_ready(
        self, version: int, timeout: float | None = 30.0, *, applied_only: bool = False
    ) -> bool:
        """Wait until ``version`` is applied here and its listeners (and those
        of every earlier version) are done; only applied, with
        ``applied_only``. Returns True; raises ``WaitTimeoutError`` when that
        takes longer than ``timeout`` seconds, ``CatalogError`` when the node
        closes or stops following its log first.

        Inside a listener, the version being delivered and later ones cannot
        finish their listeners before the running one returns: there this
        waits until they are applied, so that a listener may wait for a
        version (its own DDL's, say) without waiting for itself.
        """
        check.integer(version, "Parameter 'version' of Catalog.catalog_ready")
        timeout = check.timeout(timeout, "Parameter 'timeout' of Catalog.catalog_ready")
        check.boolean(applied_only, "Parameter 'applied_only' of Catalog.catalog_ready")
        applied = applied_only or self._events.inside_listener()

        def reached() -> bool:
            return (self.latest_version if applied else self._events.ready) >= version

        with self._cond:
            done = self._cond.wait_for(
                lambda: reached() or self._closed or self._log.failure is not None, timeout
            )
            if done and reached():
                return True
            latest, ready = self.latest_version, self._events.ready
        self._check_open()
        what = "applied" if applied else "ready (applied, its listeners done)"
        raise WaitTimeoutError(
            f"Catalog version {version} was not {what} on this node within {timeout} s "
            f"(applied: {latest}, ready: {ready})",
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
            after, _left(deadline)
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
        self._log.catch_up(self)
        return True

    # -- log checkpoints--------------------------------------------------------

    def checkpoint_log(self, version: int | None = None) -> int:
        """Store the whole catalog at ``version`` (the latest by default) and
        delete the older log entries, never past a version a reader pins.
        Returns the earliest version available afterwards. Also deletes
        what an interrupted earlier checkpoint left behind."""
        check.optional_int(version, "Parameter 'version' of Catalog.checkpoint_log")
        self._check_open()
        target = self.latest_version if version is None else version
        self.catalog(target)
        oldest_pin, pins_revision = self._log.oldest_pinned()
        if oldest_pin is not None:
            target = min(target, oldest_pin)
        if target <= self.earliest_version:
            self._log.finish_truncation()
            return self.earliest_version
        requests = carried(self._state.requests, target, self._oldest_request())
        if self._log.truncate(self.catalog(target), pins_revision, requests):
            self.on_truncate(target)
            token = self._state.tokens[0]
            with contextlib.suppress(CatalogError):
                self._log.store.compact(min(token, self._log.store.revision))
        return max(self.earliest_version, self._log.earliest_version())

    def _after_commit(self) -> None:
        policy = self.retention
        if policy is None:
            return
        self._commits += 1
        if self._commits % policy.check_every == 0:
            self.apply_retention()

    def apply_retention(self) -> int:
        """Checkpoint the log as far as this node's ``retention`` allows (and
        no live node pins); returns the earliest version available. A node
        runs it itself every ``check_every`` of its commits; a node that
        only follows (``almanac node``) calls it on a schedule."""
        self._check_open()
        policy = self.retention
        if policy is None:
            return self.earliest_version
        latest = self.latest_version
        target = latest
        if policy.keep_versions is not None:
            target = min(target, latest - policy.keep_versions + 1)
        if policy.keep_seconds is not None:
            horizon_ms = physical_ms(self._clock.now()) - int(policy.keep_seconds * 1000)
            state = self._state
            last_ts = ((horizon_ms + 1) << LOGICAL_BITS) - 1  # the horizon's whole millisecond
            cutoff = bisect.bisect_right(state.activations, last_ts)
            target = min(target, state.earliest + max(cutoff - 1, 0))
        if target > self.earliest_version:
            return self.checkpoint_log(target)
        return self.earliest_version

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
        data plane moves a table's Iceberg schema with its ALTER). A compare
        of a hook that fails makes the attempt retry, like a lost race."""
        check.callable_(hook, "Parameter 'hook' of Catalog.add_commit_hook")
        with self._cond:
            self._hooks.append(hook)

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
        self._log.catch_up(self)

    def oldest_pinned(self) -> tuple[int | None, Compare]:
        """The oldest pinned version (None if none) and a compare that holds
        while no pin was taken or released since: a transaction that deletes
        what pinned versions read rides it, so a new pin is never raced."""
        oldest, revision = self._log.oldest_pinned()
        return oldest, Compare.mod_revision(KEY_PINS, "==", revision)

    @property
    def metastore(self) -> Metastore:
        """The store this node's log lives in, for layers that keep their own
        keys beside it (table data); never for the ``catalog.`` keys."""
        return self._log.store

    # -- lifecycle -----------------------------------------------------------

    def _hook_work(
        self, base: CatalogVersion, new: CatalogVersion, update: VersionedUpdate
    ) -> list[HookWork]:
        works: list[HookWork] = []
        try:
            for hook in list(self._hooks):
                work = hook(base, new, update)
                if work is not None:
                    check.instance(work, HookWork, "The result of a commit hook")
                    works.append(work)
        except BaseException:
            for work in works:
                work.finished(False)
            raise
        return works

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


def _left(deadline: float | None) -> float | None:
    """Seconds until ``deadline`` (never negative), None for no deadline."""
    return None if deadline is None else max(deadline - time.monotonic(), 0.0)


@dataclass(frozen=True, slots=True)
class _Committed:
    """A version ``execute`` committed, and what it waits for before returning."""

    result: ExecuteResult
    visible: int
    """The hybrid time after which every node's clock has passed activation."""
    deadline: float | None
    timeout: float | None
    counts: bool = True
    """Whether it counts as this node's commit for retention (not a replay)."""


def _attachment(result: object) -> HookWork:
    """What an ``attach`` callback returned, checked: a ``HookWork``, or
    ``(compares, ops)`` / ``(compares, ops, entries)``."""
    what = "The result of the 'attach' callback of Catalog.execute"
    if isinstance(result, HookWork):
        parts: tuple[object, ...] = (result.compares, result.ops, result.entries)
    elif isinstance(result, tuple | list) and len(result) in (2, 3):
        parts = (*result, ()) if len(result) == 2 else tuple(result)
    else:
        raise check.fail(what, "a HookWork, (compares, ops) or (compares, ops, entries)", result)
    compares = check.sequence_of(
        parts[0],
        f"The compares of {check.lower_first(what)}",
        lambda v, w: check.instance(v, Compare, w),
    )
    ops = check.sequence_of(parts[1], f"The ops of {check.lower_first(what)}", _op)
    entries = check.sequence_of(
        parts[2],
        f"The entries of {check.lower_first(what)}",
        lambda v, w: check.instance(v, TableDataCommitted, w),
    )
    finish = result.finish if isinstance(result, HookWork) else None
    return HookWork(compares, ops, finish, entries)


def _op(value: object, what: str) -> Op:
    if not isinstance(value, Put | Delete | DeleteRange | Get | Range):
        raise check.fail(what, "a metastore Op (Put, Delete, DeleteRange, Get or Range)", value)
    return value
