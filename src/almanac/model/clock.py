"""Hybrid logical clock: wall-clock milliseconds with a logical counter.

A timestamp is ``physical_ms << 16 | logical``. ``now()`` never returns the
same value twice and never goes backwards, even when the wall clock does;
``update()`` folds in a timestamp seen from another node so causally later
events always get later timestamps.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable

from almanac import _check

__all__ = ["HybridClock", "from_datetime", "physical_ms", "to_datetime"]

LOGICAL_BITS = 16
_LOGICAL_MASK = (1 << LOGICAL_BITS) - 1


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


def physical_ms(ts: int) -> int:
    return ts >> LOGICAL_BITS


def from_datetime(moment: dt.datetime) -> int:
    """The largest timestamp within the given instant's millisecond. A naive
    datetime is refused (``ValidationError``): its instant depends on the
    machine's time zone."""
    return _check.timestamp(moment, "The datetime")


def to_datetime(ts: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(physical_ms(ts) / 1000, tz=dt.UTC)


class HybridClock:
    def __init__(self, wall_ms: Callable[[], int] = _wall_ms) -> None:
        self._wall_ms = wall_ms
        self._lock = threading.Lock()
        self._last = 0

    def now(self) -> int:
        with self._lock:
            wall = self._wall_ms() << LOGICAL_BITS
            self._last = wall if wall > self._last else self._last + 1
            return self._last

    def update(self, seen: int) -> int:
        """Advance past a timestamp observed elsewhere; returns the new ``now``."""
        with self._lock:
            wall = self._wall_ms() << LOGICAL_BITS
            self._last = max(wall, seen + 1, self._last + 1)
            return self._last

    def wait_until(self, ts: int, timeout: float | None = None) -> bool:
        """Return True once this clock has passed ``ts``, sleeping out the
        wall-clock part; False if ``timeout`` seconds ran out first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            current = self.now()
            if current > ts:
                return True
            pause = (physical_ms(ts) - physical_ms(current) + 1) / 1000
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                pause = min(pause, left)
            time.sleep(pause)
