"""Committing a batch of commands as the next catalog version.

The commit loop of ``Catalog.execute``: in the store's writer section it
catches up with the log, binds and previews the batch on the latest
version, lets the attached and the node's hooks ride their compares and
writes in the version's transaction, appends, and applies the version to
the node's ``AppliedVersions``; a lost race is judged again and retried.
What it returns says what ``execute`` waits for afterwards (``Committed``);
the waits themselves are the node's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from almanac import _check as check
from almanac.commands.base import Command, CommitContext
from almanac.commands.preview import preview
from almanac.errors import (
    CatalogError,
    ConflictError,
    NotFoundError,
    ValidationError,
    WaitTimeoutError,
)
from almanac.metastore import Compare, Delete, DeleteRange, Get, Op, Put, Range
from almanac.model.catalog_version import DEFAULT_SCHEMA, CatalogVersion
from almanac.model.clock import HybridClock
from almanac.model.descriptors import Schema
from almanac.model.entries import (
    ObjectIdsReserved,
    SchemaCreated,
    TableDataCommitted,
    VersionedUpdate,
    activation_time,
    apply_entries,
    apply_update,
    data_only,
)
from almanac.model.request_ids import RequestRecord, request_digest
from almanac.model.schema_sync import SchemaSync
from almanac.node.catalog_types import CommitHook, DataCommitCheck, ExecuteResult, HookWork
from almanac.node.log import CATALOG_PREFIX, UpdateLog
from almanac.node.versions import AppliedVersions

__all__ = ["Attachment", "Committed", "Committer", "commit_initial", "seconds_left"]

_BACKOFF_FIRST_S = 0.001
_BACKOFF_MAX_S = 0.05

Attachment = Callable[
    [CatalogVersion, CatalogVersion],
    HookWork
    | tuple[Sequence[Compare], Sequence[Op]]
    | tuple[Sequence[Compare], Sequence[Op], Sequence[TableDataCommitted]],
]
"""``attach(base, new)`` returns extra compares and writes for a version's
transaction, the data commits they publish (entries of the same version) and
a ``finish(ok)`` to run after the attempt: a ``HookWork`` (or a bare tuple)."""


@dataclass(frozen=True, slots=True)
class Committed:
    """A version ``execute`` committed, and what it waits for before returning."""

    result: ExecuteResult
    visible: int
    """The hybrid time after which every node's clock has passed activation."""
    deadline: float | None
    timeout: float | None
    counts: bool = True
    """Whether it counts as this node's commit for retention (not a replay)."""
    data_only: bool = False
    """Made of data commits alone: its writer waits until it is applied,
    never for any listener (see ``Catalog.execute``)."""


class Committer:
    """The commit loop of one node. Its settings are read on every commit,
    so a change (``Catalog.max_attempts = 3``) holds for the next one."""

    def __init__(
        self,
        log: UpdateLog,
        versions: AppliedVersions,
        clock: HybridClock,
        *,
        sync: SchemaSync,
        node_name: str,
        check_open: Callable[[], None],
        max_attempts: int | None,
        commit_timeout_s: float,
        soft_delete_reserve_s: float,
    ) -> None:
        self._log = log
        self._versions = versions
        self._clock = clock
        self._check_open = check_open
        self.node_name = node_name
        self.sync = sync
        self.max_attempts = max_attempts
        self.commit_timeout_s = commit_timeout_s
        self.soft_delete_reserve_s = soft_delete_reserve_s
        self.hooks: list[CommitHook] = []
        """Appended to under the node's condition; read as a copy per attempt."""
        self.data_commit_check: DataCommitCheck | None = None
        """Checks the data commits an attach returns (the data plane's)."""

    def commit(
        self,
        batch: Sequence[Command],
        attach: Attachment | None,
        timeout: float | None,
        request_id: str | None = None,
    ) -> ExecuteResult | Committed:
        """The commit of ``execute``; the waits after it are the node's."""
        digest = b"" if request_id is None else request_digest(batch)
        started = time.monotonic()
        commit_deadline = started + (self.commit_timeout_s if timeout is None else timeout)
        wait_deadline = None if timeout is None else started + timeout
        versions = self._versions
        seen = versions.latest_version
        store = self._log.store
        attempts = 0
        backoff = _BACKOFF_FIRST_S
        while True:
            attempts += 1
            self._check_open()
            with contextlib.ExitStack() as section:
                try:
                    section.enter_context(store.exclusive(seconds_left(commit_deadline)))
                except WaitTimeoutError as exc:
                    limit = self.commit_timeout_s if timeout is None else timeout
                    raise WaitTimeoutError(
                        f"The commit did not get the store's writer section within {limit} s: "
                        f"{exc.message}",
                        awaited="writer section",
                        timeout=limit,
                    ) from None
                # A store that serialises its writers is read inside the
                # section, so the commit cannot lose. An optimistic store is
                # not read first on the first attempt: the compare-and-swap
                # checks the base anyway, and the follower keeps it fresh.
                read_first = store.serializes_writers or attempts > 1
                if read_first:
                    self._log.catch_up(versions)
                base = versions.catalog()
                bound = self._bind(batch)
                if request_id is not None:
                    # After every catch-up, and before every append: a version
                    # this id made (here or anywhere) is in the index by now,
                    # since the index is never older than ``base``.
                    known = versions.request(request_id)
                    if known is not None:
                        return self._replayed(known, digest, attempts, wait_deadline, timeout)
                try:
                    planned = preview(base, bound)
                except CatalogError as exc:
                    if not read_first:
                        self._log.catch_up(versions)
                        if versions.latest_version != base.version:
                            continue  # judged on a stale catalog: judge again
                    raise self._explain_race(exc, bound, seen, base) from None
                commit_time = self._clock.now()
                # A version of data commits alone changes no schema a reader
                # could be planning with, so it does not wait out the
                # schema-sync delay (see ``data_only``).
                update = VersionedUpdate(
                    version=base.version + 1,
                    commit_time=commit_time,
                    delay_ms=0 if data_only(planned.entries) else self.sync.delay_ms,
                    entries=planned.entries,
                    node=self.node_name,
                    request_id=request_id,
                    request_digest=digest,
                    applied=planned.applied,
                )
                made = planned.catalog.evolve(activation_time=activation_time(base, update))
                works: list[HookWork] = []
                if attach is not None and (planned.entries or not batch):
                    works.append(_attachment(attach(base, made)))
                token = None
                try:
                    extra = tuple(e for work in works for e in work.entries)
                    for entry in extra:
                        target = made.tables_by_id.get(entry.table_id)
                        if target is None or target.soft_deleted:
                            raise NotFoundError(
                                f"Table id {entry.table_id} does not exist at catalog version "
                                f"{made.version}: it was dropped before its data commit "
                                "published; nothing was committed",
                                kind="table",
                                name=str(entry.table_id),
                            )
                    if extra:
                        made = apply_entries(made, extra)
                        update = dataclasses.replace(update, entries=(*update.entries, *extra))
                    if not update.entries:
                        if not read_first:
                            self._log.catch_up(versions)
                            if versions.latest_version != base.version:
                                continue  # "nothing to do" holds only on the latest
                        return ExecuteResult(base.version, planned.applied, created=False)
                    new = apply_update(base, update, made)
                    works += self._hook_work(base, new, update)
                    if extra:
                        # After the hooks: they write in the same transaction
                        # (an ALTER's moves the table's record), so the check
                        # judges what the whole of it leaves.
                        works.append(self._checked(extra, works))
                    compares = [c for work in works for c in work.compares]
                    ops = [op for work in works for op in work.ops]
                    token = self._log.append(update, extra_compares=compares, extra_ops=ops)
                finally:
                    for work in works:
                        work.finished(token is not None)
                if token is not None:
                    versions.apply(update, token, base, new)
                    break
                self._log.catch_up(versions)  # the winner's version, before anything else
            if attach is not None and self._log.latest_version() < update.version:
                raise ConflictError(
                    "The commit was refused: a condition attached to it no longer holds",
                    attempts=attempts,
                )
            now = time.monotonic()
            if (self.max_attempts is not None and attempts >= self.max_attempts) or (
                now >= commit_deadline
            ):
                raise ConflictError(
                    f"Gave up committing after {attempts} attempts in {now - started:.1f} s: "
                    "another writer committed a new version before each attempt",
                    attempts=attempts,
                )
            if read_first and not store.serializes_writers:
                # Optimistic store: back off with full jitter so that the
                # racing writers spread out, never past the deadline (a first
                # attempt on an unread base retries at once).
                time.sleep(min(random.uniform(0, backoff), max(commit_deadline - now, 0)))
                backoff = min(backoff * 2, _BACKOFF_MAX_S)
        # From the base it was committed on, not by looking the version up: a
        # checkpoint on another thread (a listener's, say) may already have
        # trimmed it away, and the commit still succeeded.
        activation = activation_time(base, update)
        data = data_only(update.entries)
        visible = activation if data else self.sync.visible_everywhere_at(activation)
        result = ExecuteResult(update.version, planned.applied, created=True)
        return Committed(result, visible, wait_deadline, timeout, data_only=data)

    def _checked(self, entries: Sequence[TableDataCommitted], works: list[HookWork]) -> HookWork:
        """The compares of the data plane's check of the attached ``entries``
        (``Catalog.set_data_commit_check``) against the whole transaction
        (``works``, in order), which refuses a data commit it does not
        publish. Without a data plane no data commit can be made, so an
        entry is refused."""
        check_entries = self.data_commit_check
        if check_entries is None:
            first = entries[0]
            raise ValidationError(
                f"TableDataCommitted of table id {first.table_id} names data snapshot "
                f"{first.snapshot_id}, but this catalog node has no data plane (no warehouse) "
                "to check that its transaction publishes it; nothing was committed",
                table_id=first.table_id,
                snapshot_id=first.snapshot_id,
                rule="data-commit-published",
            )
        whole = HookWork(
            compares=[c for work in works for c in work.compares],
            ops=[op for work in works for op in work.ops],
            entries=entries,
        )
        return HookWork(compares=check_entries(whole))

    def _bind(self, batch: Sequence[Command]) -> list[Command]:
        """The batch with what this node decides filled in: its time now and
        its defaults (see ``Command.bind``), taken afresh on every attempt."""
        context = CommitContext(self._clock.now(), self.soft_delete_reserve_s)
        return [command.bind(context) for command in batch]

    def _replayed(
        self,
        known: RequestRecord,
        digest: bytes,
        attempts: int,
        deadline: float | None,
        timeout: float | None,
    ) -> Committed:
        """The original result of a request already committed; it waits for
        what the original waited for, in case it is that recent."""
        if known.digest != digest:
            raise ConflictError(
                f"Request id {known.request_id!r} was already used for other commands "
                f"(catalog version {known.version}); a request id names one request",
                attempts=attempts,
                request_id=known.request_id,
                version=known.version,
            )
        visible = self.sync.visible_everywhere_at(known.activation_time)
        result = ExecuteResult(known.version, known.applied, created=True)
        return Committed(result, visible, deadline, timeout, counts=False)

    def _explain_race(
        self, exc: CatalogError, batch: Sequence[Command], seen: int, base: CatalogVersion
    ) -> CatalogError:
        """When the batch was valid at the version this node had when
        ``execute`` was called and only the versions committed since make it
        fail, say so in the error: what the other writer changed."""
        if base.version <= seen:
            return exc
        try:
            preview(self._versions.catalog(seen), batch)
        except CatalogError:
            return exc  # it fails on its own, race or not
        describe = self._versions.describe
        changes = "; ".join(describe(v) for v in range(seen + 1, base.version + 1))
        exc.message = (
            f"{exc.message} (another writer committed first: {changes})" if changes else exc.message
        )
        exc.args = (exc.message,)
        exc.context["concurrent_versions"] = tuple(range(seen + 1, base.version + 1))
        return exc

    def _hook_work(
        self, base: CatalogVersion, new: CatalogVersion, update: VersionedUpdate
    ) -> list[HookWork]:
        works: list[HookWork] = []
        try:
            for hook in list(self.hooks):
                work = hook(base, new, update)
                if work is not None:
                    check.instance(work, HookWork, "The result of a commit hook")
                    works.append(work)
                    for op in work.ops:
                        _op(op, "An op of the result of a commit hook")
        except BaseException:
            for work in works:
                work.finished(False)
            raise
        return works


def commit_initial(
    log: UpdateLog, versions: AppliedVersions, clock: HybridClock, node: str, timeout: float
) -> None:
    """Version 1 of a new catalog (its first object ids and the default
    schema), unless another node committed it first."""
    with log.store.exclusive(timeout):
        log.catch_up(versions)
        if versions.latest_version > 0:
            return
        update = VersionedUpdate(
            version=1,
            commit_time=clock.now(),
            delay_ms=0,
            entries=(ObjectIdsReserved(1), SchemaCreated(Schema(id=0, name=DEFAULT_SCHEMA))),
            node=node,
        )
        token = log.append(update)
        if token is not None:
            versions.on_update(update, token)
            return
    log.catch_up(versions)  # an optimistic store: another node won the race


def seconds_left(deadline: float | None) -> float | None:
    """Seconds until ``deadline`` (never negative), None for no deadline."""
    return None if deadline is None else max(deadline - time.monotonic(), 0.0)


def _attachment(result: object) -> HookWork:
    """What an ``attach`` callback returned, checked: a ``HookWork``, or
    ``(compares, ops)`` / ``(compares, ops, entries)``. A ``HookWork`` that
    fails the check is told its attempt failed, as after any other failure,
    so it removes what it prepared."""
    try:
        return _checked_attachment(result)
    except BaseException:
        if isinstance(result, HookWork):
            result.finished(False)
        raise


def _checked_attachment(result: object) -> HookWork:
    what = "The result of the 'attach' callback of Catalog.execute"
    if isinstance(result, HookWork):
        parts: tuple[object, ...] = (result.compares, result.ops, result.entries)
    elif isinstance(result, tuple | list) and len(result) in (2, 3):
        parts = (*result, ()) if len(result) == 2 else tuple(result)
    else:
        raise check.fail(what, "a HookWork, (compares, ops) or (compares, ops, entries)", result)
    compares = check.sequence_of(
        parts[0],
        f"The compares of {check.lower_first(what)}",
        lambda v, w: check.instance(v, Compare, w),
    )
    ops = check.sequence_of(parts[1], f"The ops of {check.lower_first(what)}", _op)
    entries = check.sequence_of(
        parts[2],
        f"The entries of {check.lower_first(what)}",
        lambda v, w: check.instance(v, TableDataCommitted, w),
    )
    finish = result.finish if isinstance(result, HookWork) else None
    return HookWork(compares, ops, finish, entries)


def _op(value: object, what: str) -> Op:
    """A metastore op that writes none of the catalog's own keys: a deleted
    log entry would commit its version and leave a catalog that no longer
    opens (reads of them are harmless)."""
    if not isinstance(value, Put | Delete | DeleteRange | Get | Range):
        raise check.fail(what, "a metastore Op (Put, Delete, DeleteRange, Get or Range)", value)
    if isinstance(value, Put | Delete):
        key = value.key
        writes_catalog = key.startswith(CATALOG_PREFIX)
    elif isinstance(value, DeleteRange):
        key = f"{value.prefix}*"
        writes_catalog = value.prefix.startswith(CATALOG_PREFIX) or CATALOG_PREFIX.startswith(
            value.prefix
        )
    else:
        return value
    if writes_catalog:
        raise ValidationError(
            f"{what} writes '{key}', under '{CATALOG_PREFIX}': the catalog's own keys (its "
            "log) are written only by its commits; nothing was committed",
            key=key,
            rule="attach-catalog-keys",
        )
    return value
