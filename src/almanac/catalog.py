"""A catalog node: executes commands into new versions and serves every
version it has applied, by number or by time.

All versions reach the node through its update log's subscription, its own
included, so the committing node and every other node build each version
with the same function from the same entries.
"""

from __future__ import annotations

import bisect
import datetime as dt
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType

from almanac.clock import LOGICAL_BITS, HybridClock, from_datetime
from almanac.commands.base import Command
from almanac.descriptors import Schema
from almanac.entries import (
    NewSchema,
    ObjectIdGenUpdate,
    UpdateEntry,
    VersionedUpdate,
    apply_update,
)
from almanac.errors import CatalogError, ConflictError, CorruptLogError, VersionNotFoundError
from almanac.events import Event, EventType, Listener, ListenerFailure, Listeners
from almanac.log import MemoryUpdateLog, UpdateLog
from almanac.snapshot import DEFAULT_SCHEMA, CatalogSnapshot

__all__ = ["Catalog", "ExecuteResult", "VersionInfo", "connect"]

DEFAULT_MAX_ATTEMPTS = 10


@dataclass(frozen=True, slots=True)
class ExecuteResult:
    """``version`` is the new version, or the current one when nothing changed.
    ``applied[i]`` tells whether command ``i`` produced changes (False: no-op)."""

    version: int
    applied: tuple[bool, ...]
    created: bool

    @property
    def skipped(self) -> tuple[int, ...]:
        return tuple(i for i, ok in enumerate(self.applied) if not ok)


@dataclass(frozen=True, slots=True)
class VersionInfo:
    version: int
    commit_time: int
    activation_time: int
    update: VersionedUpdate


class Catalog:
    """One node's view of a catalog; safe to share between threads."""

    def __init__(
        self,
        log: UpdateLog,
        *,
        delay_ms: int = 0,
        max_clock_skew_ms: int = 0,
        clock: HybridClock | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> None:
        if delay_ms < 0 or max_clock_skew_ms < 0:
            raise CatalogError("delay_ms and max_clock_skew_ms must not be negative")
        self.delay_ms = delay_ms
        self.max_clock_skew_ms = max_clock_skew_ms
        self.max_attempts = max_attempts
        self._clock = clock or HybridClock()
        self._log = log
        self._apply_lock = threading.RLock()
        self._cond = threading.Condition()
        self._versions: list[CatalogSnapshot] = [CatalogSnapshot.empty()]
        self._activations: list[int] = [0]
        self._updates: list[VersionedUpdate] = []
        self._earliest = 0
        self._ready = 0
        self._listeners = Listeners()
        self._closed = False
        log.start(self._on_update)
        if self.latest_version == 0:
            self._commit_initial()

    # -- reading -------------------------------------------------------------

    @property
    def latest_version(self) -> int:
        return self._earliest + len(self._versions) - 1

    @property
    def earliest_version(self) -> int:
        return self._earliest

    @property
    def clock(self) -> HybridClock:
        return self._clock

    def catalog(self, version: int | None = None) -> CatalogSnapshot:
        """The latest version, or exactly ``version``."""
        versions = self._versions
        if version is None:
            return versions[-1]
        offset = version - self._earliest
        if 0 <= offset < len(versions):
            return versions[offset]
        if offset < 0:
            raise VersionNotFoundError(
                f"Catalog version {version} is no longer available; the earliest available "
                f"version is {self._earliest}",
                version=version,
                earliest=self._earliest,
            )
        raise VersionNotFoundError(
            f"Catalog version {version} does not exist; the latest version is "
            f"{self.latest_version}",
            version=version,
            earliest=self._earliest,
        )

    def catalog_at(self, timestamp: int | dt.datetime) -> CatalogSnapshot:
        """The newest version whose activation time is at or before ``timestamp``
        (a hybrid timestamp, or a datetime)."""
        ts = from_datetime(timestamp) if isinstance(timestamp, dt.datetime) else timestamp
        i = bisect.bisect_right(self._activations, ts) - 1
        if i < 0:
            raise VersionNotFoundError(
                f"No catalog version was active at timestamp {ts}; the earliest available "
                f"version is {self._earliest}",
                version=-1,
                earliest=self._earliest,
            )
        return self._versions[i]

    def history(self, since: int = 1) -> list[VersionInfo]:
        """What each version changed, oldest first."""
        start = max(since, self._earliest + 1, 1)
        return [
            VersionInfo(u.version, u.commit_time, self.catalog(u.version).activation_time, u)
            for u in self._updates[start - self._earliest - 1 :]
        ]

    # -- writing -------------------------------------------------------------

    def execute(self, commands: Iterable[Command]) -> ExecuteResult:
        """Apply the commands in order as one version, or not at all.

        Later commands see the changes of earlier ones. Returns once the
        version is applied here and active everywhere (activation time plus
        the maximum clock skew has passed), so a read "now" on any node sees it.
        """
        batch = list(commands)
        for cmd in batch:
            if not isinstance(cmd, Command):
                raise CatalogError(f"Not a catalog command: {cmd!r}")
        for _ in range(self.max_attempts):
            self._check_open()
            base = self.catalog()
            entries, applied = self._validate(base, batch)
            if not entries:
                return ExecuteResult(base.version, applied, created=False)
            update = VersionedUpdate(
                version=base.version + 1,
                commit_time=self._clock.now(),
                delay_ms=self.delay_ms,
                entries=tuple(entries),
            )
            token = self._log.append(update)
            if token is None:
                self.catalog_ready(update.version, timeout=None, applied_only=True)
                continue
            self._on_update(update, token)
            self.catalog_ready(update.version, timeout=None)
            activation = self.catalog(update.version).activation_time
            self._clock.wait_until(activation + (self.max_clock_skew_ms << LOGICAL_BITS))
            return ExecuteResult(update.version, applied, created=True)
        raise ConflictError(
            f"Gave up committing after {self.max_attempts} attempts: other writers committed "
            "a new version before each attempt",
            attempts=self.max_attempts,
        )

    def sql(self, text: str, *, default_schema: str = DEFAULT_SCHEMA) -> int:
        """Run a DDL script atomically as one version; returns the resulting version."""
        from almanac.sql import parse_script

        return self.execute(parse_script(text, default_schema=default_schema)).version

    @staticmethod
    def _validate(
        base: CatalogSnapshot, batch: Sequence[Command]
    ) -> tuple[list[UpdateEntry], tuple[bool, ...]]:
        working = base.evolve(version=base.version + 1)
        entries: list[UpdateEntry] = []
        applied: list[bool] = []
        for cmd in batch:
            produced = cmd.validate(working)
            applied.append(bool(produced))
            for entry in produced:
                working = entry.apply(working)
            entries.extend(produced)
        return entries, tuple(applied)

    def _commit_initial(self) -> None:
        public = Schema(id=0, name=DEFAULT_SCHEMA)
        update = VersionedUpdate(
            version=1,
            commit_time=self._clock.now(),
            delay_ms=0,
            entries=(ObjectIdGenUpdate(1), NewSchema(public)),
        )
        token = self._log.append(update)
        if token is not None:
            self._on_update(update, token)
        self.catalog_ready(1, timeout=None, applied_only=True)

    # -- applying ------------------------------------------------------------

    def _on_update(self, update: VersionedUpdate, token: int) -> None:
        """Apply one update from the log; versions already applied are ignored."""
        with self._apply_lock:
            latest = self.latest_version
            if update.version <= latest:
                return
            if update.version != latest + 1:
                raise CorruptLogError(
                    f"Update log skipped from version {latest} to {update.version}",
                    version=update.version,
                )
            snapshot = apply_update(self._versions[-1], update)
            self._clock.update(update.commit_time)
            with self._cond:
                self._versions.append(snapshot)
                self._activations.append(snapshot.activation_time)
                self._updates.append(update)
                self._cond.notify_all()
            events = [
                Event(entry.event_type, update.version, token, entry.object_id(), entry)
                for entry in update.entries
                if entry.event_type is not None
            ]
            self._listeners.fire(events)
            with self._cond:
                self._ready = update.version
                self._cond.notify_all()

    def catalog_ready(
        self, version: int, timeout: float | None = 30.0, *, applied_only: bool = False
    ) -> bool:
        """Wait until ``version`` is applied here and its listeners are done
        (only applied, with ``applied_only``). False on timeout."""
        with self._cond:
            return self._cond.wait_for(
                lambda: (
                    (self.latest_version if applied_only else self._ready) >= version
                    or self._closed
                ),
                timeout,
            )

    # -- events --------------------------------------------------------------

    def listen(self, event_type: EventType, listener: Listener) -> None:
        self._listeners.add(event_type, listener)

    def unlisten(self, event_type: EventType, listener: Listener) -> None:
        self._listeners.remove(event_type, listener)

    @property
    def listener_failures(self) -> list[ListenerFailure]:
        return list(self._listeners.failures)

    # -- lifecycle -----------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise CatalogError("The catalog is closed")

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
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


def connect(target: str, *, delay_ms: int = 0, max_clock_skew_ms: int = 0) -> Catalog:
    """Open a catalog. ``memory://`` is a fresh catalog in this process."""
    if target == "memory://":
        return Catalog(MemoryUpdateLog(), delay_ms=delay_ms, max_clock_skew_ms=max_clock_skew_ms)
    raise CatalogError(f"Unsupported catalog target '{target}'", target=target)
