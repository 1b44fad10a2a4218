"""The values a catalog node takes and returns: what ``execute`` did, one
entry of ``history``, when to checkpoint the log, and what a commit hook
adds to a version's transaction. Kept apart from ``almanac.node.catalog`` so the
layers that only pass these values around need not import the node."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from almanac import _check as check
from almanac.errors import ValidationError
from almanac.metastore import Compare, Op
from almanac.model.catalog_version import CatalogVersion
from almanac.model.entries import DATA_OPERATIONS, TableDataCommitted, VersionedUpdate

__all__ = ["CommitHook", "ExecuteResult", "HookWork", "RetentionPolicy", "VersionInfo"]

_log = logging.getLogger("almanac.catalog")


@dataclass(frozen=True, slots=True)
class ExecuteResult:
    """``version`` is the new version, or the current one when nothing changed.
    ``applied[i]`` tells whether command ``i`` produced changes (False: no-op)."""

    version: int
    applied: tuple[bool, ...]
    created: bool

    @property
    def skipped(self) -> tuple[int, ...]:
        return tuple(i for i, ok in enumerate(self.applied) if not ok)


@dataclass(frozen=True, slots=True)
class VersionInfo:
    version: int
    commit_time: int
    activation_time: int
    update: VersionedUpdate

    @property
    def node(self) -> str:
        """The node that committed the version ("" for versions stored
        before nodes were recorded)."""
        return self.update.node

    @property
    def request_id(self) -> str | None:
        """The request id the version was committed under, if any."""
        return self.update.request_id


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """When to checkpoint the log automatically: keep the last ``keep_versions``
    versions and/or the versions active within the last ``keep_seconds``. A
    version is dropped only when every rule given allows it and no reader
    pins it. Checked every ``check_every`` commits of this node."""

    keep_versions: int | None = None
    keep_seconds: float | None = None
    check_every: int = 100

    def __post_init__(self) -> None:
        check.check_fields(self)
        if self.keep_versions is None and self.keep_seconds is None:
            raise ValidationError("A retention policy needs keep_versions or keep_seconds")
        check.optional_int(self.keep_versions, "Parameter 'keep_versions' of RetentionPolicy", lo=1)
        # Seconds become milliseconds of the hybrid clock: keep them in its range.
        check.optional_float(
            self.keep_seconds, "Parameter 'keep_seconds' of RetentionPolicy", lo=0, hi=2**40
        )
        check.integer(self.check_every, "Parameter 'check_every' of RetentionPolicy", lo=1)


@dataclass(frozen=True, slots=True)
class HookWork:
    """What a commit hook, or an ``execute(attach=...)`` callback, adds to
    one attempt's transaction; ``finish(ok)`` runs after the attempt, ``ok``
    telling whether the version committed (so the caller can keep or remove
    what it prepared: a metadata file, a lease). ``entries`` are the data
    commits the writes publish, entries of the same version (an attach
    callback's only)."""

    compares: Sequence[Compare] = ()
    ops: Sequence[Op] = ()
    finish: Callable[[bool], None] | None = None
    entries: Sequence[TableDataCommitted] = ()

    def __post_init__(self) -> None:
        check_data_entries(self.entries, "The entries of a HookWork")

    def finished(self, ok: bool) -> None:
        if self.finish is not None:
            try:
                self.finish(ok)
            except Exception:
                _log.exception("A commit hook's finish callback failed")


MAX_METADATA_LOCATION = 4096
"""The longest ``metadata.json`` location a data commit names: the entry is
kept by every node for every version in its log, and replayed on every open."""


def check_data_entries(entries: object, what: str) -> None:
    """The data commits of one version, checked as user input (``execute``'s
    attach is public): well typed, in range, a known operation, and at most
    one per table, since a version pins one data snapshot per table. A bad
    one would otherwise fail in the serializer, or be committed and pin a
    snapshot that no reader can find."""
    seen: set[int] = set()
    for entry in check.sequence_of(
        entries, what, lambda v, w: check.instance(v, TableDataCommitted, w)
    ):
        check.check_fields(entry)
        where = f"of TableDataCommitted of table id {entry.table_id}"
        check.integer(entry.snapshot_id, f"Field 'snapshot_id' {where}", lo=1)
        check.string(entry.metadata, f"Field 'metadata' {where}", nonblank=True)
        if len(entry.metadata) > MAX_METADATA_LOCATION:
            raise ValidationError(
                f"Field 'metadata' {where} must be a location of at most "
                f"{MAX_METADATA_LOCATION} characters, got {len(entry.metadata):,}",
                table_id=entry.table_id,
                rule="metadata-location-length",
            )
        for name in ("rows_added", "rows_removed", "files_added", "files_removed"):
            check.integer(getattr(entry, name), f"Field '{name}' {where}", lo=0)
        if entry.operation not in DATA_OPERATIONS:
            raise check.fail(
                f"Field 'operation' {where}",
                f"one of {', '.join(DATA_OPERATIONS)}",
                entry.operation,
            )
        if entry.table_id in seen:
            raise ValidationError(
                f"TableDataCommitted of table id {entry.table_id} appears twice in one version; "
                "a version commits one data snapshot per table",
                table_id=entry.table_id,
                rule="one-data-commit-per-table",
            )
        seen.add(entry.table_id)


CommitHook = Callable[[CatalogVersion, CatalogVersion, VersionedUpdate], "HookWork | None"]
"""``hook(base, new, update)``: see ``Catalog.add_commit_hook``."""
