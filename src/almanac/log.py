"""The update log: where versions are appended and from which nodes apply them.

A log delivers every ``VersionedUpdate`` to its subscriber exactly in version
order, whoever appended it, together with a causality token (the metastore
revision that committed it). ``append`` is a compare-and-swap on the latest
version: it fails when another writer appended that version first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from almanac.entries import VersionedUpdate
from almanac.errors import CatalogError

__all__ = ["MemoryUpdateLog", "UpdateHandler", "UpdateLog"]

UpdateHandler = Callable[[VersionedUpdate, int], None]


class UpdateLog(Protocol):
    def start(self, handler: UpdateHandler) -> None:
        """Replay every stored update to ``handler``, then follow new ones."""

    def append(self, update: VersionedUpdate) -> int | None:
        """Append if ``update.version`` is the next one; the causality token on
        success, ``None`` when another writer got that version first."""

    def close(self) -> None: ...


class MemoryUpdateLog:
    """A log in this process's memory, for ``memory://`` catalogs and tests.

    Subscribers are called synchronously under the log's lock, so updates
    reach them in order even when several threads append.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._updates: list[VersionedUpdate] = []
        self._handlers: list[UpdateHandler] = []
        self._closed = False

    @property
    def updates(self) -> list[VersionedUpdate]:
        with self._lock:
            return list(self._updates)

    def start(self, handler: UpdateHandler) -> None:
        with self._lock:
            for update in self._updates:
                handler(update, update.version)
            self._handlers.append(handler)

    def append(self, update: VersionedUpdate) -> int | None:
        with self._lock:
            if self._closed:
                raise CatalogError("The update log is closed")
            if update.version != len(self._updates) + 1:
                return None
            self._updates.append(update)
            for handler in self._handlers:
                handler(update, update.version)
            return update.version

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._handlers.clear()
