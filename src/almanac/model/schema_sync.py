"""Schema sync: when a committed version counts as active, and how long a
node waits so that a finished DDL is visible on every node.

A version commits at hybrid time C (the committing node's clock) and becomes
active at C + delay. Nodes' clocks differ by at most ``max_clock_skew_ms``:

* the committer returns from ``execute`` only once its clock has passed
  activation + skew, so every other node's clock has passed activation too,
  and a read "now" anywhere resolves to the new version or a later one;
* a node asked for the catalog as of time T must first have applied every
  version that could be active at T: any version committed after the node's
  clock reads T + skew - delay activates after T, so it waits for its clock to
  reach that point and then catches up with the log's latest version.
"""

from __future__ import annotations

from dataclasses import dataclass

from almanac import _check as check
from almanac.model.clock import LOGICAL_BITS

__all__ = [
    "ETCD_DEFAULTS",
    "MAX_CLOCK_SKEW_MS",
    "MAX_DELAY_MS",
    "MEMORY_DEFAULTS",
    "SQLITE_DEFAULTS",
    "SchemaSync",
    "check_sync_settings",
]

MAX_DELAY_MS = 60_000
"""The longest activation delay: a DDL returns only once its version is
active everywhere, so this bounds how long every ``execute`` waits."""
MAX_CLOCK_SKEW_MS = 60_000
"""The largest clock skew a catalog allows for; NTP keeps clocks within
milliseconds, and a DDL's wait grows by the skew."""


def check_sync_settings(delay_ms: object, max_clock_skew_ms: object, what: str) -> None:
    """Refuse a schema-sync setting (``None``: the default) out of its range,
    before a catalog is opened: the first DDL would otherwise commit and then
    wait for ever (or overflow the clock)."""
    check.optional_int(delay_ms, f"Parameter 'delay_ms' of {what}", lo=0, hi=MAX_DELAY_MS)
    check.optional_int(
        max_clock_skew_ms, f"Parameter 'max_clock_skew_ms' of {what}", lo=0, hi=MAX_CLOCK_SKEW_MS
    )


@dataclass(frozen=True, slots=True)
class SchemaSync:
    """``delay_ms`` in [0, ``MAX_DELAY_MS``] and ``max_clock_skew_ms`` in
    [0, ``MAX_CLOCK_SKEW_MS``]."""

    delay_ms: int
    max_clock_skew_ms: int

    def __post_init__(self) -> None:
        check_sync_settings(self.delay_ms, self.max_clock_skew_ms, "SchemaSync")

    def visible_everywhere_at(self, activation_time: int) -> int:
        """The hybrid time after which every node's clock has passed activation."""
        return activation_time + (self.max_clock_skew_ms << LOGICAL_BITS)

    def complete_after(self, timestamp: int) -> int:
        """Once the local clock has passed this, no version committed later
        can be active at ``timestamp``."""
        return timestamp + ((self.max_clock_skew_ms - self.delay_ms) << LOGICAL_BITS)


MEMORY_DEFAULTS = SchemaSync(delay_ms=0, max_clock_skew_ms=0)
"""One process, one clock: nothing to wait for."""

SQLITE_DEFAULTS = SchemaSync(delay_ms=10, max_clock_skew_ms=2)
"""Processes of one machine share its clock; a small delay gives followers
(which poll the file every few milliseconds) time to apply a version before
it becomes active."""

ETCD_DEFAULTS = SchemaSync(delay_ms=500, max_clock_skew_ms=500)
"""Nodes on different machines: Apache Ignite's defaults for a distributed
catalog (clocks kept within 500 ms by NTP; a version activates 500 ms after
its commit, time enough for every node's watch to deliver it)."""
