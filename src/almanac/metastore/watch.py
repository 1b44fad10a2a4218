"""Watches: the iterator contract and the polling implementation of the
backends that can only poll their change history."""

from __future__ import annotations

import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Sequence
from types import TracebackType
from typing import Protocol, Self

from almanac.errors import CompactedError, MetastoreError
from almanac.metastore.types import (
    WatchEvent,
    check_timeout,
)

# --------------------------------------------------------------------------- watches


class Watch(ABC):
    """An ordered stream of changes under a prefix, from a start revision on.

    Iterating blocks until the next event and ends when the watch or its
    store is closed. Use :meth:`next` with a timeout to poll instead.
    """

    @abstractmethod
    def next(self, timeout: float | None = None) -> WatchEvent | None:
        """The next event; ``None`` on timeout or once the watch is closed.

        Raises :class:`CompactedError` if the history the watch still needs
        was compacted away.
        """

    @abstractmethod
    def close(self) -> None:
        """Stop the watch; a thread blocked in :meth:`next` returns ``None``."""

    @property
    @abstractmethod
    def closed(self) -> bool: ...

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> WatchEvent:
        event = self.next()
        if event is None:
            raise StopIteration
        return event

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class WatchSource(Protocol):
    """The backend side of a :class:`PollingWatch`.

    ``_watch_token`` changes whenever new events may exist; a watch reads it
    *before* polling and then waits for it to change, so no commit between
    the poll and the wait is missed.
    """

    def _watch_poll(
        self, prefix: str, from_revision: int
    ) -> tuple[Sequence[WatchEvent], int, bool]: ...

    def _watch_token(self) -> int: ...

    @property
    def _watch_min_gap(self) -> float:
        """Seconds a watch waits between two reads of the history."""
        ...

    def _watch_wait(self, token: int, timeout: float | None) -> None: ...

    def _watch_wake(self) -> None: ...


class PollingWatch(Watch):
    """A watch that reads the backend's change history in revision order.

    ``_watch_poll(prefix, r)`` returns the events with revision >= ``r`` up
    to some bound, the revision to continue from, and whether history beyond
    that bound already exists. Continuing from the returned revision (not
    the last event's) lets a watch that received nothing still move forward,
    so it is not hit by a later compaction of history it never needed.
    """

    def __init__(self, source: WatchSource, prefix: str, start_revision: int) -> None:
        self._source = source
        self._prefix = prefix
        self._next_revision = start_revision
        self._buffer: deque[WatchEvent] = deque()
        self._lock = threading.Lock()
        self._closed = False
        self._last_poll = 0.0

    @property
    def prefix(self) -> str:
        return self._prefix

    @property
    def closed(self) -> bool:
        return self._closed

    def next(self, timeout: float | None = None) -> WatchEvent | None:
        wait = check_timeout(timeout)
        deadline = None if wait is None else time.monotonic() + wait
        while True:
            with self._lock:
                if self._closed:
                    return None
                if self._buffer:
                    return self._buffer.popleft()
                # Coalesce bursts: a writer committing thousands of times a second
                # should cost a watcher one read per gap, not one per commit.
                gap = self._last_poll + self._source._watch_min_gap - time.monotonic()
                if gap > 0:
                    time.sleep(gap)
                token = self._source._watch_token()
                try:
                    events, resume, behind = self._source._watch_poll(
                        self._prefix, self._next_revision
                    )
                except CompactedError:
                    raise
                except MetastoreError:
                    if self._closed:
                        return None
                    raise
                self._last_poll = time.monotonic()
                self._next_revision = max(self._next_revision, resume)
                if events:
                    self._buffer.extend(events)
                    return self._buffer.popleft()
                if behind:
                    continue
            remaining = None if deadline is None else deadline - time.monotonic()
            if (remaining is not None and remaining <= 0) or self._closed:
                return None
            # A close after the check above bumped the token read before it,
            # so this does not wait.
            self._source._watch_wait(token, remaining)

    def close(self) -> None:
        self._closed = True
        self._source._watch_wake()


class WatchRegistry:
    """The open watches of a store, so that closing the store ends them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watches: weakref.WeakSet[Watch] = weakref.WeakSet()

    def add(self, watch: Watch) -> None:
        with self._lock:
            self._watches.add(watch)

    def active(self) -> int:
        with self._lock:
            return sum(1 for watch in self._watches if not watch.closed)

    def close_all(self) -> None:
        with self._lock:
            watches = list(self._watches)
        for watch in watches:
            watch.close()


class ConditionWakeups:
    """The wake-up half of a ``WatchSource`` for backends that count their
    changes in ``_token`` and announce them on ``_cond``."""

    _cond: threading.Condition
    _token: int
    _closed: bool

    def _watch_token(self) -> int:
        with self._cond:
            return self._token

    def _watch_wait(self, token: int, timeout: float | None) -> None:
        with self._cond:
            if self._token == token and not self._closed:
                self._cond.wait(timeout)

    def _watch_wake(self) -> None:
        # Bumping the token also stops a watch that read it but is not
        # waiting yet (a close racing its poll) from waiting at all.
        with self._cond:
            self._token += 1
            self._cond.notify_all()
