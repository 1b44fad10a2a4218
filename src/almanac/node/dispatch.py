"""Delivering a node's events: one thread fires each applied version's
events in version order, and decides when a version is *ready*.

The rule, here only (``ready_locked``): a version of data commits alone
(``entries.data_only``: what ``write_table``, an overwrite, a compaction,
a REST commit or ``expire_data`` make) is ready once it is applied and
every earlier DDL version is ready; any other version once it is applied
and the listeners of it and of every earlier version returned.
``Catalog.catalog_ready`` and ``execute`` wait for that, except that the
writer of a data version waits only until it is applied. A data version
changes no schema anyone plans with, and its listeners only observe: a
writer held by one (in its commit section, for as long as its timeout)
would tie data throughput to the slowest listener. Its listeners still run
in version order, so a later DDL version is not ready before they
returned.

Listeners never run on the thread that follows the log nor inside a
commit, so a listener may run DDL of its own. The dispatcher shares its
node's condition variable: applying a version and queueing its events
happen under one lock, so readiness never runs ahead of application.
"""

from __future__ import annotations

import logging
import threading
from collections import deque

from almanac.model.events import Event, EventType, Listener, ListenerFailure

__all__ = ["Dispatcher", "Listeners"]

# The logger keeps its documented name: a listener's failure is an event's.
_log = logging.getLogger("almanac.events")


class Listeners:
    """Per-type subscriptions; safe to (un)subscribe while events are delivered."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_type: dict[EventType, tuple[Listener, ...]] = {}
        self.failures: list[ListenerFailure] = []

    def add(self, event_type: EventType, listener: Listener) -> None:
        with self._lock:
            self._by_type[event_type] = (*self._by_type.get(event_type, ()), listener)

    def remove(self, event_type: EventType, listener: Listener) -> None:
        with self._lock:
            current = self._by_type.get(event_type, ())
            self._by_type[event_type] = tuple(x for x in current if x != listener)

    def wants(self, events: list[Event]) -> bool:
        """Whether any current listener subscribes to one of ``events``."""
        by_type = self._by_type
        return any(by_type.get(event.type) for event in events)

    def fire(self, events: list[Event]) -> None:
        for event in events:
            for listener in self._by_type.get(event.type, ()):
                try:
                    listener(event)
                except BaseException as exc:
                    # BaseException too: a listener's SystemExit or
                    # KeyboardInterrupt must not end the dispatcher thread,
                    # or no later version of this node would become ready.
                    _log.exception(
                        "Listener %r failed on %s of version %d",
                        listener,
                        event.type.value,
                        event.version,
                    )
                    with self._lock:
                        self.failures.append(ListenerFailure(event, listener, exc))


class Dispatcher:
    """The event queue and dispatcher thread of one node."""

    def __init__(self, cond: threading.Condition) -> None:
        self._cond = cond
        self._listeners = Listeners()
        self.heard = 0
        """The newest version whose listeners (and all earlier ones') are done."""
        # Versions whose events wait for the thread, in order; those of them
        # made of data commits alone; and the others, in order.
        self._pending: deque[tuple[int, list[Event]]] = deque()
        self._pending_data: set[int] = set()
        self._pending_ddl: deque[int] = deque()
        self._thread: threading.Thread | None = None
        self._closed = False
        # Set on a worker thread running an execute_async a listener submitted.
        self._for_listener = threading.local()

    def listen(self, event_type: EventType, listener: Listener) -> None:
        self._listeners.add(event_type, listener)

    def unlisten(self, event_type: EventType, listener: Listener) -> None:
        self._listeners.remove(event_type, listener)

    @property
    def failures(self) -> list[ListenerFailure]:
        return list(self._listeners.failures)

    def ready_locked(self, version: int) -> bool:
        """Whether ``version`` is ready here (the caller holds the condition):
        heard by the listeners of it and of every earlier version, or made of
        data commits alone, applied, and no earlier DDL version still unheard
        (so a ready version means every DDL up to it is ready too)."""
        if version <= self.heard:
            return True
        if version not in self._pending_data:
            return False
        return not self._pending_ddl or self._pending_ddl[0] > version

    def deliver_locked(self, version: int, events: list[Event], *, data_only: bool) -> None:
        """Queue an applied version's events (the caller holds the condition),
        or mark it heard at once when nobody listens and nothing is queued
        before it. ``data_only``: the version is made of data commits alone."""
        if not self._pending and not self._listeners.wants(events):
            self.heard = max(self.heard, version)
            return
        self._pending.append((version, events))
        if data_only:
            self._pending_data.add(version)
        else:
            self._pending_ddl.append(version)
        if self._thread is None and not self._closed:
            self._thread = threading.Thread(target=self._run, name="almanac-listeners", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                version, events = self._pending[0]
            self._listeners.fire(events)
            with self._cond:
                self._pending.popleft()
                self._pending_data.discard(version)
                if self._pending_ddl and self._pending_ddl[0] == version:
                    self._pending_ddl.popleft()
                self.heard = max(self.heard, version)
                self._cond.notify_all()

    def inside_listener(self) -> bool:
        """On the dispatcher thread, or running an execute_async a listener submitted."""
        return threading.current_thread() is self._thread or bool(
            getattr(self._for_listener, "active", False)
        )

    def mark_for_listener(self, active: bool) -> None:
        """Mark this worker thread as running an execute_async a listener
        submitted (its waits are a listener's), or unmark it."""
        self._for_listener.active = active

    def close_locked(self) -> None:
        """Stop taking versions (the caller holds the condition and notifies)."""
        self._closed = True

    def join(self) -> None:
        """Wait a while for the thread; a listener still running finishes on its own."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
