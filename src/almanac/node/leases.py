"""Keeping metastore leases alive: the one cadence, and the one thread that
renews for a job.

A lease is renewed every third of its time to live, so two renewals in a
row may be missed (a loaded machine, an etcd leader election) before the
lease and everything attached to it expire. What losing a lease means
differs by owner, and stays with it: a node or a tablet server registers
again, the placement leader resigns, a write's commit is refused. Owners
whose loop does other work between renewals (a node's key, a tablet
server's report, the placement pass) ask a ``Renewal`` when the next one is
due; a job with nothing else to do hands its renewals to a ``LeaseKeeper``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from almanac.errors import CatalogError

__all__ = ["RENEWALS_PER_TTL", "LeaseKeeper", "Renewal", "renew_interval"]

RENEWALS_PER_TTL = 3
"""Renewals per time to live: the lease outlives two missed ones."""


def renew_interval(ttl_s: float) -> float:
    """Seconds between renewals of a lease granted for ``ttl_s``."""
    return ttl_s / RENEWALS_PER_TTL


class Renewal:
    """When a lease renewed from its owner's own loop is next due."""

    __slots__ = ("_at", "_every")

    def __init__(self, ttl_s: float, now: float | None = None) -> None:
        self._every = renew_interval(ttl_s)
        self._at = (time.monotonic() if now is None else now) + self._every

    @property
    def at(self) -> float:
        """The monotonic time of the next renewal: how long a loop may sleep."""
        return self._at

    def due(self, now: float | None = None) -> bool:
        return (time.monotonic() if now is None else now) >= self._at

    def done(self, now: float | None = None) -> None:
        """The lease was just renewed (or taken): the next one is an interval on."""
        self._at = (time.monotonic() if now is None else now) + self._every


class LeaseKeeper:
    """Calls every renewal it holds, every third of ``ttl_s``, on a daemon
    thread, until stopped.

    A renewal that fails with a ``CatalogError`` goes to ``on_error``, which
    says whether to go on (the default: yes, the next try may reach the
    store); the owner learns of a lost lease when its commit is refused.
    """

    def __init__(
        self,
        ttl_s: float,
        name: str,
        *renewals: Callable[[], object],
        on_error: Callable[[CatalogError], bool] | None = None,
    ) -> None:
        self._interval = renew_interval(ttl_s)
        self._renewals = list(renewals)
        self._on_error = on_error
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def add(self, renewal: Callable[[], object]) -> None:
        """Renew one more lease the same job depends on."""
        with self._lock:
            self._renewals.append(renewal)

    def start(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop renewing; waits for a renewal in progress, unless called from one."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def __enter__(self) -> LeaseKeeper:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            with self._lock:
                renewals = list(self._renewals)
            for renew in renewals:
                try:
                    renew()
                except CatalogError as exc:
                    if self._on_error is not None and not self._on_error(exc):
                        return
