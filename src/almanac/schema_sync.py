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

from almanac.clock import LOGICAL_BITS
from almanac.errors import CatalogError

__all__ = ["ETCD_DEFAULTS", "MEMORY_DEFAULTS", "SQLITE_DEFAULTS", "SchemaSync"]


@dataclass(frozen=True, slots=True)
class SchemaSync:
    delay_ms: int
    max_clock_skew_ms: int

    def __post_init__(self) -> None:
        for name in ("delay_ms", "max_clock_skew_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise CatalogError(
                    f"{name} must be a non-negative integer number of milliseconds, got {value!r}",
                    setting=name,
                )

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
