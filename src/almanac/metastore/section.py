"""Writer sections: one cooperating writer at a time per store.

A catalog node that holds its store's writer section while it catches up
with the log, validates and appends cannot lose the compare-and-swap race to
another node that also takes the section, so no writer retries (or starves)
behind a faster sibling.

A section is re-entrant per thread. In one process it is a thread lock; with
a lock file it is also an exclusive ``flock`` on that file, held by the
outermost holder only, so that the processes sharing a SQLite file exclude
each other too. The operating system drops a dead process's lock with its
file descriptor, so a killed writer never blocks the others. The file stays
open between holds (taking the section is then one ``flock`` call, not an
open and a close); a forked child opens its own.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import threading
import time
import weakref
from collections.abc import Iterator

from almanac.errors import MetastoreError, WaitTimeoutError

__all__ = ["WriterSection", "shared_file_section"]

_FILE_POLL_MIN_S = 0.0005
_FILE_POLL_MAX_S = 0.004


class WriterSection:
    """Re-entrant exclusion of the writers of one store."""

    def __init__(self, what: str, lock_file: str | None = None) -> None:
        self._what = what
        self._lock_file = lock_file
        self._lock = threading.RLock()
        self._depth = 0  # guarded by holding ``_lock``
        self._fd: int | None = None  # the open lock file, once opened
        self._closer: weakref.finalize[[int], WriterSection] | None = None

    @contextlib.contextmanager
    def hold(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the section; ``WaitTimeoutError`` if it is not free in time."""
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        if not self._lock.acquire(timeout=-1 if timeout is None else max(timeout, 0.0)):
            raise self._timeout(timeout)
        try:
            fd = None
            if self._depth == 0 and self._lock_file is not None:
                fd = self._lock_os_file(self._lock_file, deadline, timeout)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if fd is not None:
                    fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            self._lock.release()

    def _open(self, path: str) -> int:
        if self._fd is None:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise MetastoreError(
                    f"Cannot open the writer lock file {path}: {exc}", path=path
                ) from exc
            self._fd = fd
            self._closer = weakref.finalize(self, os.close, fd)
        return self._fd

    def _lock_os_file(self, path: str, deadline: float | None, timeout: float | None) -> int:
        fd = self._open(path)
        pause = _FILE_POLL_MIN_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                pass
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                raise self._timeout(timeout)
            nap = pause * (0.5 + random.random())
            if deadline is not None:
                nap = min(nap, deadline - now)
            time.sleep(nap)
            pause = min(pause * 2, _FILE_POLL_MAX_S)

    def _forget_holder(self) -> None:
        """In a forked child: the parent's holder is not a thread here, and
        the parent's descriptor shares its lock, so the child opens its own
        (closing the inherited one leaves the parent's lock as it is)."""
        self._lock = threading.RLock()
        self._depth = 0
        if self._closer is not None:
            self._closer()
        self._fd = self._closer = None

    def _timeout(self, timeout: float | None) -> WaitTimeoutError:
        return WaitTimeoutError(
            f"The writer section of {self._what} was not free within {timeout} s: "
            "another writer holds it",
            awaited="writer section",
            timeout=timeout,
        )


_FILE_SECTIONS: weakref.WeakValueDictionary[str, WriterSection] = weakref.WeakValueDictionary()
_FILE_SECTIONS_LOCK = threading.Lock()


def shared_file_section(what: str, lock_file: str) -> WriterSection:
    """The one section of this process for ``lock_file``: every store object
    on the same file shares it, so that a thread re-entering through another
    object does not wait for itself."""
    key = os.path.realpath(lock_file)
    with _FILE_SECTIONS_LOCK:
        section = _FILE_SECTIONS.get(key)
        if section is None:
            section = WriterSection(what, key)
            _FILE_SECTIONS[key] = section
        return section


def _after_fork_in_child() -> None:
    global _FILE_SECTIONS_LOCK
    _FILE_SECTIONS_LOCK = threading.Lock()
    for section in list(_FILE_SECTIONS.values()):
        section._forget_holder()


os.register_at_fork(after_in_child=_after_fork_in_child)
