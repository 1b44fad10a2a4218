"""Placement's timings and limits, apart from the manager so that
``almanac.connect`` names them without loading placement."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from almanac import _check as check

__all__ = ["PlacementSettings"]


@dataclass(frozen=True, slots=True)
class PlacementSettings:
    """Timings and limits of placement (seconds unless named otherwise).

    ``max_tablets_per_server`` counts tablet replicas: 1000, Kudu's guidance
    for replicas per server, so that one server holds 40 tables of the
    default zone (25 partitions x 1 replica). A tablet costs its server a
    cache directory and an entry in its report (about 70 bytes) and index
    (about 11): at 1000 the report is near 70 KB, far below etcd's 1.5 MiB
    request limit."""

    interval_s: float = 1.0
    assignment_timeout_s: float = 30.0
    leader_ttl_s: float = 10.0
    max_tablets_per_server: int = 1000
    create_wait_s: float = 30.0
    clean_after_s: float = 60.0

    def __post_init__(self) -> None:
        for name in ("interval_s", "assignment_timeout_s", "leader_ttl_s", "clean_after_s"):
            check.number(
                getattr(self, name),
                f"PlacementSettings.{name}",
                positive=True,
                hi=threading.TIMEOUT_MAX,
            )
        check.number(
            self.create_wait_s, "PlacementSettings.create_wait_s", lo=0, hi=threading.TIMEOUT_MAX
        )
        check.integer(self.max_tablets_per_server, "PlacementSettings.max_tablets_per_server", lo=1)
