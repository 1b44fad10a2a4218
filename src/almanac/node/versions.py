"""The versions a node has applied: the follower of its update log.

Every version reaches a node through its log, its own commits included,
and is applied here in version order: built, recorded with its request id,
and its events handed to the dispatcher. Readers take them by number or by
time; checkpoints trim the oldest away.

Two locks: ``AppliedVersions`` applies one version at a time under its own
lock, and publishes each under the node's condition, the one the
dispatcher and the waits of the node share, so readiness never runs ahead
of application.
"""

from __future__ import annotations

import bisect
import threading

from almanac.errors import CorruptLogError, VersionNotFoundError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.clock import HybridClock
from almanac.model.entries import VersionedUpdate, apply_update, data_only
from almanac.model.events import Event
from almanac.model.request_ids import (
    RequestIndex,
    RequestRecord,
    carried,
    forget,
    horizon,
    record_of,
    remember,
)
from almanac.model.summary import CHECKPOINT_SUMMARY, summarize_update
from almanac.node.catalog_types import VersionInfo
from almanac.node.dispatch import Dispatcher
from almanac.node.nodes import NodeRegistration

__all__ = ["AppliedVersions"]


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


class AppliedVersions:
    """One node's applied versions (a ``LogFollower``); reads are lock-free."""

    def __init__(
        self,
        clock: HybridClock,
        cond: threading.Condition,
        events: Dispatcher,
        request_window_s: float,
    ) -> None:
        self._clock = clock
        self._cond = cond
        self._events = events
        self.request_window_s = request_window_s
        """How long (seconds) a request id outlives the truncation of its version."""
        self._apply_lock = threading.RLock()
        self._state = _Versions(CatalogVersion.empty(), 0, RequestIndex())
        self.registration: NodeRegistration | None = None
        """The node's key among the live nodes, told each version applied;
        set once the node registered (after its log was first read)."""

    # -- reading ---------------------------------------------------------------

    @property
    def latest_version(self) -> int:
        state = self._state
        return state.earliest + len(state.catalogs) - 1

    @property
    def earliest_version(self) -> int:
        return self._state.earliest

    @property
    def earliest_token(self) -> int:
        """The store revision of the earliest available version."""
        return self._state.tokens[0]

    def catalog(self, version: int | None = None) -> CatalogVersion:
        """The latest version, or exactly ``version``."""
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

    def catalog_at(self, ts: int) -> CatalogVersion:
        """The newest version whose activation time is at or before ``ts``."""
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

    def active_at(self, ts: int) -> int:
        """The newest available version active at ``ts``, the earliest if none was."""
        state = self._state
        cutoff = bisect.bisect_right(state.activations, ts)
        return state.earliest + max(cutoff - 1, 0)

    def history(self, since: int) -> list[VersionInfo]:
        """What each available version from ``since`` changed, oldest first."""
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

    def describe(self, version: int) -> str:
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

    def request(self, request_id: str) -> RequestRecord | None:
        """The version a request id made, if it is still known; the index is
        never older than the latest version."""
        return self._state.requests.get(request_id)

    def carried_requests(self, earliest: int) -> tuple[RequestRecord, ...]:
        """The request records a checkpoint at ``earliest`` keeps."""
        return carried(self._state.requests, earliest, self.oldest_request())

    def oldest_request(self) -> int:
        """The activation time before which a truncated version's request id
        is forgotten: now minus the request window."""
        return horizon(self._clock.now(), self.request_window_s)

    # -- applying (called by the update log, in version order) ---------------

    def on_update(self, update: VersionedUpdate, token: int) -> None:
        """Apply one version; versions already applied are ignored."""
        self.apply(update, token)

    def apply(
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
            applied = new if new is not None and last is base else apply_update(last, update)
            self._clock.update(update.commit_time)
            events = [
                Event(entry.event_type, update.version, token, entry.object_id(), entry)
                for entry in update.entries
                if entry.event_type is not None
            ]
            record = record_of(update, applied.activation_time)
            with self._cond:
                if record is not None:
                    state.requests = remember(state.requests, (record,))
                state.catalogs.append(applied)
                state.activations.append(applied.activation_time)
                state.updates.append(update)
                state.tokens.append(token)
                self._deliver_locked(update.version, events, data_only=data_only(update.entries))
                self._cond.notify_all()

    def _deliver_locked(self, version: int, events: list[Event], data_only: bool) -> None:
        """Note the version as seen and hand its events to the dispatcher
        (caller holds the condition)."""
        if self.registration is not None:
            self.registration.saw(version)
        self._events.deliver_locked(version, events, data_only=data_only)

    def on_checkpoint(
        self, version: CatalogVersion, token: int, requests: tuple[RequestRecord, ...] = ()
    ) -> None:
        """Start from (or jump to) a stored checkpoint of the whole catalog,
        with the request ids it carries."""
        with self._apply_lock:
            if version.version <= self.latest_version:
                self.on_truncate(version.version)
                return
            oldest = self.oldest_request()
            known = remember(self._state.requests, requests)
            with self._cond:
                self._state = _Versions(version, token, forget(known, version.version, oldest))
                # A jump over versions that may hold DDL: not data alone.
                self._deliver_locked(version.version, [], data_only=False)
                self._cond.notify_all()

    def on_truncate(self, earliest: int) -> None:
        """Forget versions older than ``earliest``; the log no longer has them."""
        with self._apply_lock:
            state = self._state
            if earliest > state.earliest and earliest <= self.latest_version:
                self._state = state.trimmed(earliest, self.oldest_request())
