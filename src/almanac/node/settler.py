"""Settling asynchronous executes: after its commit, an ``execute_async``
waits until its version is ready on this node and visible everywhere
(schema sync). One thread does those waits in version order: readiness and
visibility both come in version order, so while it waits for one version
the waits of later ones run out too, and the worker that committed is free
for the next commit however many executes are in flight.

Executes that a listener submitted never come here: their waits differ, and
the listener may be waiting for them.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Generic, TypeVar

from almanac.errors import CatalogError, WaitTimeoutError

__all__ = ["ExecuteFuture", "Settler"]

R = TypeVar("R")
D = TypeVar("D")


class ExecuteFuture(Future[R]):
    """A future whose waits raise ``WaitTimeoutError`` (still a TimeoutError)."""

    def result(self, timeout: float | None = None) -> R:
        try:
            return super().result(timeout)
        except TimeoutError as exc:
            if isinstance(exc, CatalogError) or self.done():
                raise
            raise _timed_out(timeout) from None

    def exception(self, timeout: float | None = None) -> BaseException | None:
        try:
            return super().exception(timeout)
        except TimeoutError as exc:
            if isinstance(exc, CatalogError) or self.done():
                raise
            raise _timed_out(timeout) from None


def _timed_out(timeout: float | None) -> WaitTimeoutError:
    return WaitTimeoutError(
        f"The asynchronous execute did not finish within {timeout} s; it goes on running",
        awaited="execute_async result",
        timeout=timeout,
    )


class Settler(Generic[D, R]):
    """Runs ``settle(done)`` for each committed execute, lowest version first,
    and completes its future with the outcome."""

    def __init__(self, settle: Callable[[D], R]) -> None:
        self._settle = settle
        self._cond = threading.Condition()
        self._queue: list[tuple[int, int, D, Future[R]]] = []
        self._thread: threading.Thread | None = None
        self._closed = False

    def hand(self, version: int, done: D, future: Future[R]) -> None:
        with self._cond:
            heapq.heappush(self._queue, (version, id(future), done, future))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="almanac-settle", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    if self._closed:
                        return
                    self._cond.wait()
                _, _, done, future = heapq.heappop(self._queue)
            try:
                future.set_result(self._settle(done))
            except BaseException as exc:
                future.set_exception(exc)

    def close(self) -> None:
        """Finish what is queued (it fails fast once the node is closed), then stop."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
