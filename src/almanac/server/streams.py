"""``/v1/events``: every version as a Server-Sent Event, resumable by version.

One watcher thread per application waits on the catalog for new versions
(``catalog_ready``, which also sees versions other processes committed, as
the node's log follower applies them) and wakes the open streams through
their event loop; no stream holds a thread while it waits. Each stream
reads the versions after its last one from the node's history, so a
resumed stream misses nothing and repeats nothing: ``id:`` is the version,
and a client that reconnects with ``Last-Event-ID: N`` gets N+1 onwards.
A stream writes at the pace its client reads (the server's send waits for
the socket), ``: keep-alive`` comments keep idle proxies from closing it,
and a client that goes away ends its stream at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
from starlette.requests import Request

from almanac.access.sse import format_sse
from almanac.errors import CatalogError, VersionNotFoundError, WaitTimeoutError
from almanac.node.catalog import Catalog
from almanac.server.errors import error_body
from almanac.server.views import version_view

__all__ = ["BATCH", "EventStreams"]

BATCH = 200
"""The most versions a stream takes from the history at once."""
_WATCH_TICK_S = 0.25
"""How often the watcher looks at its stop flag while no version comes."""
_log = logging.getLogger("almanac.server.events")


@dataclass(eq=False)
class _Subscriber:
    loop: asyncio.AbstractEventLoop
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def notify(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop already closed
            self.loop.call_soon_threadsafe(self.wake.set)


class EventStreams:
    """The open event streams of one application and the thread that wakes them."""

    def __init__(self, cat: Catalog) -> None:
        self._cat = cat
        self._lock = threading.Lock()
        self._subscribers: set[_Subscriber] = set()
        self._watcher: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def closed(self) -> bool:
        return self._stop.is_set() or self._cat.closed

    @property
    def open_streams(self) -> int:
        return len(self._subscribers)

    def close_all(self) -> None:
        """End every stream (the server is shutting down)."""
        self._stop.set()
        self._wake_all()

    def _subscribe(self) -> _Subscriber:
        sub = _Subscriber(asyncio.get_running_loop())
        with self._lock:
            self._subscribers.add(sub)
            if self._watcher is None:
                self._watcher = threading.Thread(
                    target=self._watch, name="almanac-sse-watcher", daemon=True
                )
                self._watcher.start()
        return sub

    def _unsubscribe(self, sub: _Subscriber) -> None:
        with self._lock:
            self._subscribers.discard(sub)

    def _wake_all(self) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for sub in subscribers:
            sub.notify()

    def _watch(self) -> None:
        cat = self._cat
        seen = cat.latest_version
        while not self._stop.is_set():
            try:
                cat.catalog_ready(seen + 1, timeout=_WATCH_TICK_S, applied_only=True)
            except WaitTimeoutError:
                continue
            except CatalogError:  # the node closed or stopped following its log
                break
            seen = cat.latest_version
            self._wake_all()
        self._wake_all()

    async def stream(self, request: Request, after: int, keepalive_s: float) -> AsyncIterator[str]:
        """The SSE text of every version after ``after``, as they come."""
        sub = self._subscribe()
        disconnected = asyncio.ensure_future(_disconnect(request))
        waiting: list[asyncio.Task[bool]] = []
        try:
            yield "retry: 1000\n\n"
            last = after
            while not self.closed and not disconnected.done():
                sub.wake.clear()
                batch, gone = await anyio.to_thread.run_sync(_next_batch, self._cat, last)
                if gone is not None:
                    yield gone
                    return
                for version, text in batch:
                    yield format_sse(text, id=str(version))
                    last = version
                if batch:
                    continue
                woken = asyncio.ensure_future(sub.wake.wait())
                waiting.append(woken)
                done, _ = await asyncio.wait(
                    (woken, disconnected), timeout=keepalive_s, return_when=asyncio.FIRST_COMPLETED
                )
                woken.cancel()
                waiting.remove(woken)
                if not done:
                    yield ": keep-alive\n\n"
        finally:
            disconnected.cancel()
            for task in waiting:
                task.cancel()
            self._unsubscribe(sub)


async def _disconnect(request: Request) -> None:
    """Returns once the client went away."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


def _next_batch(cat: Catalog, last: int) -> tuple[list[tuple[int, str]], str | None]:
    """The versions after ``last`` (at most ``BATCH``) as JSON, or the error
    event when some of them are no longer available."""
    earliest = cat.earliest_version
    infos = cat.history(last + 1)[:BATCH] if last >= earliest else []
    if last < earliest or (infos and infos[0].version != last + 1):
        error = VersionNotFoundError(
            f"The event stream cannot resume after version {last}: versions up to "
            f"{cat.earliest_version} were truncated from the log; start again from the "
            f"catalog at version {cat.earliest_version} or later",
            version=last + 1,
            earliest=cat.earliest_version,
        )
        body: dict[str, Any] = {**error_body(type(error).__name__, error.message, error.context)}
        body["status"] = 410
        return [], format_sse(json.dumps(body), event="error")
    return [(info.version, json.dumps(version_view(cat, info))) for info in infos], None
