"""Checkpointing a node's log: on request, and as its retention policy allows.

A checkpoint stores the whole catalog at one version and deletes the older
log entries, never past a version a reader pins; the node's applied
versions are trimmed to match. A node checks its ``RetentionPolicy`` every
``check_every`` of its own commits.
"""

from __future__ import annotations

import contextlib

from almanac.errors import CatalogError
from almanac.model.clock import LOGICAL_BITS, HybridClock, physical_ms
from almanac.node.catalog_types import RetentionPolicy
from almanac.node.log import UpdateLog
from almanac.node.log_truncation import VersionPins, finish_truncation, truncate
from almanac.node.versions import AppliedVersions

__all__ = ["Checkpointer"]


class Checkpointer:
    """The checkpoints of one node's log, and its retention policy."""

    def __init__(
        self,
        log: UpdateLog,
        pins: VersionPins,
        versions: AppliedVersions,
        clock: HybridClock,
        policy: RetentionPolicy | None,
    ) -> None:
        self._log = log
        self._pins = pins
        self._versions = versions
        self._clock = clock
        self.policy = policy
        self._commits = 0

    def checkpoint(self, target: int) -> int:
        """``Catalog.checkpoint_log`` at ``target``, which must be available."""
        versions = self._versions
        versions.catalog(target)
        oldest_pin, pins_revision = self._pins.oldest_pinned()
        if oldest_pin is not None:
            target = min(target, oldest_pin)
        if target <= versions.earliest_version:
            finish_truncation(self._log)
            return versions.earliest_version
        requests = versions.carried_requests(target)
        if truncate(self._log, versions.catalog(target), pins_revision, requests):
            versions.on_truncate(target)
            token = versions.earliest_token
            with contextlib.suppress(CatalogError):
                self._log.store.compact(min(token, self._log.store.revision))
        return max(versions.earliest_version, self._log.earliest_version())

    def count_commit(self) -> bool:
        """Count one commit of this node; True on every ``check_every``-th,
        when the node applies its policy."""
        policy = self.policy
        if policy is None:
            return False
        self._commits += 1
        return self._commits % policy.check_every == 0

    def apply(self) -> int:
        """``Catalog.apply_retention``: checkpoint as far as the policy allows."""
        policy = self.policy
        versions = self._versions
        if policy is None:
            return versions.earliest_version
        latest = versions.latest_version
        target = latest
        if policy.keep_versions is not None:
            target = min(target, latest - policy.keep_versions + 1)
        if policy.keep_seconds is not None:
            horizon_ms = physical_ms(self._clock.now()) - int(policy.keep_seconds * 1000)
            last_ts = ((horizon_ms + 1) << LOGICAL_BITS) - 1  # the horizon's whole millisecond
            target = min(target, versions.active_at(last_ts))
        if target > versions.earliest_version:
            return self.checkpoint(target)
        return versions.earliest_version
