"""The update log: versions appended to a metastore and followed by every node.

Keys:

* ``catalog.version`` - the latest version, as canonical decimal text;
* ``catalog.update.{N}`` - the serialized ``VersionedUpdate`` of version N, or,
  for N equal to the checkpoint version, the whole serialized catalog of N
  (with the request ids of the versions it replaced that are still inside
  the request window, see ``almanac.model.request_ids``), each in a checksummed frame
  that also names N (see ``almanac.node.log_format``);
* ``catalog.snapshot.version`` - the checkpoint version, the earliest still
  available (the key keeps its original name so existing stores still open);
* ``catalog.truncating`` - while a truncation is unfinished: the lowest
  version whose key may still lie below the checkpoint version;
* ``catalog.id`` - the catalog's UUID, on stores that keep an identity record
  beside them (SQLite; see ``almanac.node.identity``);
* ``catalog.pin.{lease}.{n}`` and ``catalog.pins`` - the versions readers
  hold against truncation (see ``almanac.node.log_truncation``).

Appending version N is one transaction: "if ``catalog.version`` is N-1, put
``catalog.update.{N}`` and set ``catalog.version`` to N", plus whatever extra
operations the caller rides along (placement, data commits).

Truncation (``almanac.node.log_truncation``) makes version S the checkpoint and
deletes the keys below it, in batches when there are many; a truncation cut
short leaves keys below the checkpoint version, from ``catalog.truncating``
on, that are never read and that the next checkpoint deletes.

Integrity. Every entry is checked on every read (start, catch-up, follow):
its frame checksum, that it holds exactly its key's version, and that it is
of the kind its position needs (a checkpoint at the checkpoint version, an
update after it). The keys must form one contiguous run from the checkpoint
version to ``catalog.version``, with nothing beyond it, and nothing before
it except the keys of an unfinished truncation (at or after
``catalog.truncating``, which itself lies before the checkpoint version). Any
mismatch raises ``CorruptLogError`` naming the key and the version, and
the node refuses to start (or its follower stops) rather than serve a
different catalog.

Entries of releases before the checksum (bare serialized objects) are still
read, with the checks above except the checksum; new entries are always
framed, and a checkpoint replaces a legacy history by one framed entry. A
bit flip never turns a frame into something read as legacy: see
``almanac.node.log_format``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Protocol

from almanac.errors import (
    CatalogError,
    CatalogIdentityError,
    CompactedError,
    CorruptLogError,
    MetastoreError,
    MetastoreUnavailableError,
)
from almanac.metastore import Compare, KeyValue, Metastore, Op, Put, SqliteMetastore, Watch
from almanac.model.catalog_version import CatalogVersion
from almanac.model.entries import VersionedUpdate
from almanac.model.request_ids import Checkpoint, RequestRecord
from almanac.node.identity import (
    IdentityRecord,
    identity_path_for,
    new_catalog_id,
    parse_catalog_id,
)
from almanac.node.log_format import (
    encode_number,
    frame_update,
    parse_number,
    read_checkpoint,
    read_entry,
    stored_number,
)

__all__ = [
    "CATALOG_PREFIX",
    "KEY_ID",
    "KEY_CHECKPOINT_VERSION",
    "KEY_TRUNCATING",
    "KEY_VERSION",
    "UPDATE_PREFIX",
    "LogFollower",
    "UpdateLog",
    "leftovers_from",
    "update_key",
]

KEY_VERSION = "catalog.version"
KEY_CHECKPOINT_VERSION = "catalog.snapshot.version"
KEY_TRUNCATING = "catalog.truncating"
UPDATE_PREFIX = "catalog.update."
KEY_ID = "catalog.id"
CATALOG_PREFIX = "catalog."
"""Every key of the log and of the node's bookkeeping starts with it."""

_CATCH_UP_BY_KEY = 32
"""A node at most this many versions behind catches up key by key."""

_log = logging.getLogger("almanac.log")


def update_key(version: int) -> str:
    return f"{UPDATE_PREFIX}{version}"


def _version_of(key: str) -> int:
    """N for a canonical ``catalog.update.{N}`` with N >= 1, else -1."""
    suffix = key[len(UPDATE_PREFIX) :]
    if suffix.isdigit() and suffix.isascii() and not suffix.startswith("0"):
        return int(suffix)
    return -1


class LogFollower(Protocol):
    """What a node does with what the log delivers, always in version order."""

    def on_update(self, update: VersionedUpdate, token: int) -> None: ...

    def on_checkpoint(
        self, version: CatalogVersion, token: int, requests: tuple[RequestRecord, ...] = ()
    ) -> None: ...

    def on_truncate(self, earliest: int) -> None: ...

    @property
    def latest_version(self) -> int: ...


class UpdateLog:
    """The catalog's update log on a metastore; one per node."""

    def __init__(
        self,
        store: Metastore,
        *,
        owns_store: bool = True,
        identity: IdentityRecord | bool = True,
    ) -> None:
        """``identity``: the record checked against the store on start (see
        ``almanac.node.identity``); ``True`` keeps one beside a SQLite store's file
        and none for other stores, ``False`` keeps none."""
        self.store = store
        if identity is True:
            self.identity: IdentityRecord | None = (
                IdentityRecord(identity_path_for(store.path))
                if isinstance(store, SqliteMetastore)
                else None
            )
        else:
            self.identity = identity or None
        self._follower: LogFollower | None = None
        self._owns_store = owns_store
        self._watch: Watch | None = None
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        self.failure: BaseException | None = None

    # -- reading and following -------------------------------------------

    def start(self, follower: LogFollower) -> None:
        """Deliver the stored log (checkpoint first, then updates in order) and
        then follow new changes on a background thread.

        A stored entry that cannot be decoded raises ``CorruptLogError`` naming
        its key and version, before anything is delivered past it; a store
        that does not match its identity record raises ``CatalogIdentityError``
        before anything is delivered at all.
        """
        self._follower = follower
        revision = self._catch_up(follower, applied=-1)
        self._watch = self.store.watch(CATALOG_PREFIX, revision + 1)
        self._thread = threading.Thread(
            target=self._follow, args=(follower,), name="almanac-log-follower", daemon=True
        )
        self._thread.start()

    def catch_up(self, follower: LogFollower) -> int:
        """Deliver, on the calling thread, every stored version the follower
        has not applied yet; returns the latest stored version.

        The follower thread delivers the same versions sooner or later; the
        follower ignores the ones it already has. A writer calls this so that
        it never waits for that thread (which may be busy, or be itself).
        """
        latest = self.latest_version()
        applied = follower.latest_version
        if latest <= applied:
            return latest
        if latest - applied > _CATCH_UP_BY_KEY:
            self._catch_up(follower, applied)  # far behind: one range read
            return latest
        for version in range(applied + 1, latest + 1):
            key = update_key(version)
            kv = self.store.get(key)
            if kv is None:
                break  # truncated meanwhile: read the checkpoint and what follows
            try:
                update = _read_update({key: kv}, version, self.earliest_version())
            except CorruptLogError:
                if version != self.earliest_version():
                    raise
                break  # a checkpoint replaced this entry meanwhile
            follower.on_update(update, kv.mod_revision)
        else:
            return latest
        self._catch_up(follower, follower.latest_version)
        return latest

    def _catch_up(self, follower: LogFollower, applied: int) -> int:
        """Deliver every stored version after ``applied``; returns the revision read."""
        identity = self.identity if applied < 0 else None
        # The record first: a node writes the store before the record, so a
        # record read before the store never runs ahead of it.
        held = identity.read() if identity is not None else None
        result = self.store.range(CATALOG_PREFIX)
        by_key = {kv.key: kv for kv in result.kvs}
        latest, earliest = _check_layout(by_key)
        known = self._check_identity(identity, held, by_key, latest) if identity else None
        start = applied + 1
        if earliest > 0 and applied < earliest:
            checkpoint = _read_checkpoint(by_key, earliest)
            follower.on_checkpoint(
                checkpoint.catalog, by_key[update_key(earliest)].mod_revision, checkpoint.requests
            )
            start = earliest + 1
        elif earliest > 0:
            follower.on_truncate(earliest)
        for version in range(max(start, 1), latest + 1):
            update = _read_update(by_key, version, earliest)
            follower.on_update(update, by_key[update_key(version)].mod_revision)
        if identity is not None and known is not None and not self.store.read_only:
            self._adopt_identity(identity, *known, latest)
        return result.revision

    def _check_identity(
        self,
        record: IdentityRecord,
        held: tuple[str, int] | None,
        by_key: dict[str, KeyValue],
        latest: int,
    ) -> tuple[str | None, int]:
        """Refuse a store that is not (all of) the catalog its record says it held;
        returns the store's catalog id (None: none yet) and the recorded version
        (-1: no record), for ``_adopt_identity`` once the log has been read."""
        store_id = None
        id_kv = by_key.get(KEY_ID)
        if id_kv is not None:
            store_id = parse_catalog_id(id_kv.value)
            if store_id is None:
                raise CorruptLogError(
                    f"Metastore key '{KEY_ID}' holds {id_kv.value[:40]!r}, not a catalog id",
                    key=KEY_ID,
                )
        store = getattr(self.store, "path", "the metastore")
        context = {
            "path": str(record.path),
            "store": store,
            "store_catalog_id": store_id,
            "store_version": latest,
        }
        if held is not None:
            held_id, held_version = held
            context.update(catalog_id=held_id, last_seen_version=held_version)
            remedy = f"restore the store, or delete '{record.path}' to accept the store as it is"
            if store_id is None:
                raise CatalogIdentityError(
                    f"The store '{store}' holds no catalog id (latest version {latest}), but "
                    f"its identity record '{record.path}' says it held catalog {held_id} up "
                    f"to version {held_version}: the store was emptied or replaced; {remedy}",
                    **context,
                )
            if store_id != held_id:
                raise CatalogIdentityError(
                    f"The store '{store}' holds catalog {store_id}, but its identity record "
                    f"'{record.path}' says it held catalog {held_id}: the file was replaced "
                    f"by another catalog's; {remedy}",
                    **context,
                )
            if latest < held_version:
                raise CatalogIdentityError(
                    f"The store '{store}' of catalog {held_id} ends at version {latest}, but "
                    f"its identity record '{record.path}' says version {held_version} was "
                    f"seen: {held_version - latest} committed version(s) are gone (a lost WAL, "
                    f"or an older copy of the file); {remedy}",
                    **context,
                )
        return store_id, -1 if held is None else held[1]

    def _adopt_identity(
        self, record: IdentityRecord, store_id: str | None, recorded: int, latest: int
    ) -> None:
        """Give a new (or older-release) store its id, and bring the record up to date."""
        if store_id is None:
            fresh = new_catalog_id()
            put = self.store.txn([Compare.absent(KEY_ID)], [Put(KEY_ID, fresh.encode("ascii"))])
            if put.succeeded:
                store_id = fresh
            else:
                raced = self.store.get(KEY_ID)
                store_id = None if raced is None else parse_catalog_id(raced.value)
                if store_id is None:
                    raise CorruptLogError(f"Metastore key '{KEY_ID}' is unreadable", key=KEY_ID)
        record.adopt(store_id, latest, recorded)

    def _follow(self, follower: LogFollower) -> None:
        applied = -1
        while not self._closed.is_set():
            watch = self._watch
            if watch is None:
                return
            try:
                event = watch.next(timeout=0.2)
                if self.identity is not None:
                    self.identity.seen(follower.latest_version)
                if event is None:
                    continue
                key = event.kv.key
                if key.startswith(UPDATE_PREFIX) and event.kv.value:
                    version = _version_of(key)
                    if version <= follower.latest_version:
                        # Applied already (our own commit). A rewrite must be a
                        # checkpoint: anything else is a log no node can read.
                        if event.kv.version > 1:
                            read_entry(key, version, event.kv.value)
                        continue
                    value = read_entry(key, version, event.kv.value)
                    if isinstance(value, VersionedUpdate):
                        follower.on_update(value, event.revision)
                        applied = value.version
                elif key == KEY_CHECKPOINT_VERSION and event.kv.value:
                    follower.on_truncate(stored_number(event.kv))
            except CompactedError:
                # History we had not read yet was compacted: re-read the state.
                watch.close()
                if not self._resume_after_compaction(follower, applied):
                    return
            except (CatalogError, MetastoreError) as exc:
                if self._closed.is_set():
                    return
                self._fail(exc)
                return

    def _resume_after_compaction(self, follower: LogFollower, applied: int) -> bool:
        """Re-read the log and watch again from where that leaves off; retried
        while the metastore is unreachable. False once the follower stopped."""
        while not self._closed.is_set():
            try:
                revision = self._catch_up(follower, applied)
                self._watch = self.store.watch(CATALOG_PREFIX, revision + 1)
                return True
            except MetastoreUnavailableError as exc:
                _log.warning("Update log follower waits for the metastore: %s", exc)
                self._closed.wait(0.2)
            except CompactedError:
                # Compacted again between the re-read and the new watch (a
                # checkpoint racing a slow follower): re-read once more.
                applied = max(applied, follower.latest_version)
            except CatalogError as exc:
                self._fail(exc)
                return False
        return False

    def _fail(self, exc: BaseException) -> None:
        _log.error("Update log follower stopped: %s", exc)
        self.failure = exc

    # -- writing -----------------------------------------------------------

    def append(
        self,
        update: VersionedUpdate,
        *,
        extra_compares: Sequence[Compare] = (),
        extra_ops: Sequence[Op] = (),
    ) -> int | None:
        """Compare-and-swap version N after N-1; the committing revision, or
        ``None`` when another writer appended N first (or an extra compare failed)."""
        n = update.version
        compares = [
            Compare.absent(KEY_VERSION)
            if n == 1
            else Compare.value(KEY_VERSION, "==", encode_number(n - 1)),
            *extra_compares,
        ]
        ops: list[Op] = [
            Put(update_key(n), frame_update(update)),
            Put(KEY_VERSION, encode_number(n)),
        ]
        if n == 1:
            ops.append(Put(KEY_CHECKPOINT_VERSION, encode_number(0)))
        ops.extend(extra_ops)
        result = self.store.txn(compares, ops)
        return result.revision if result.succeeded else None

    def latest_version(self) -> int:
        return stored_number(self.store.get(KEY_VERSION))

    def earliest_version(self) -> int:
        return stored_number(self.store.get(KEY_CHECKPOINT_VERSION))

    # -- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        if self._watch is not None:
            self._watch.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        if self.identity is not None and self._follower is not None and self.failure is None:
            self.identity.seen(self._follower.latest_version)
            self.identity.flush_quietly()
        if self._owns_store:
            self.store.close()


def _check_layout(by_key: dict[str, KeyValue]) -> tuple[int, int]:
    """(latest, checkpoint version), once the log keys form one contiguous run."""
    version_kv = by_key.get(KEY_VERSION)
    latest = stored_number(version_kv)
    earliest = stored_number(by_key.get(KEY_CHECKPOINT_VERSION))
    marker = by_key.get(KEY_TRUNCATING)
    leftover_from = earliest if marker is None else leftovers_from(marker, earliest)
    present: list[int] = []
    for key in by_key:
        if key.startswith(UPDATE_PREFIX):
            version = _version_of(key)
            if version < 1:
                raise CorruptLogError(
                    f"Metastore key '{key}' is not the key of any log version", key=key
                )
            present.append(version)
    if version_kv is None and (present or earliest):
        raise CorruptLogError(
            f"The update log holds entries but no '{KEY_VERSION}' key: the latest version "
            "is unknown",
            key=KEY_VERSION,
        )
    if earliest > latest:
        raise CorruptLogError(
            f"The checkpoint version {earliest} ('{KEY_CHECKPOINT_VERSION}') is after the "
            f"latest version {latest} ('{KEY_VERSION}')",
            key=KEY_CHECKPOINT_VERSION,
            version=earliest,
        )
    first = max(earliest, 1)
    leftovers = 0
    for version in sorted(present):
        if leftover_from <= version < first:
            leftovers += 1  # an unfinished truncation's: never read
            continue
        if version > latest:
            raise CorruptLogError(
                f"Update log entry '{update_key(version)}' of version {version} lies beyond "
                f"the latest version {latest} that '{KEY_VERSION}' records",
                key=update_key(version),
                version=version,
            )
        if version < first:
            raise CorruptLogError(
                f"Update log entry '{update_key(version)}' of version {version} lies before "
                f"the checkpoint version {earliest} that '{KEY_CHECKPOINT_VERSION}' records",
                key=update_key(version),
                version=version,
            )
    if len(present) - leftovers != latest - first + 1 and latest > 0:
        have = set(present)
        missing = next(v for v in range(first, latest + 1) if v not in have)
        raise CorruptLogError(
            f"Update log entry '{update_key(missing)}' of version {missing} is missing",
            key=update_key(missing),
            version=missing,
        )
    return latest, earliest


def leftovers_from(marker: KeyValue, earliest: int) -> int:
    """The first version an unfinished truncation may have left, checked."""
    low = parse_number(marker)
    if not 1 <= low < earliest:
        raise CorruptLogError(
            f"Metastore key '{KEY_TRUNCATING}' says a truncation left versions from {low} "
            f"on, which is not before the checkpoint version {earliest}",
            key=KEY_TRUNCATING,
            version=low,
        )
    return low


def _stored(by_key: dict[str, KeyValue], version: int) -> bytes:
    key = update_key(version)
    kv = by_key.get(key)
    if kv is None:
        raise CorruptLogError(
            f"Update log entry '{key}' of version {version} is missing", key=key, version=version
        )
    return kv.value


def _entry(by_key: dict[str, KeyValue], version: int) -> VersionedUpdate | CatalogVersion:
    return read_entry(update_key(version), version, _stored(by_key, version))


def _read_checkpoint(by_key: dict[str, KeyValue], version: int) -> Checkpoint:
    key = update_key(version)
    value = read_checkpoint(key, version, _stored(by_key, version))
    if not isinstance(value, Checkpoint):
        raise CorruptLogError(
            f"The checkpoint version {version} in '{KEY_CHECKPOINT_VERSION}' points at "
            f"'{key}', which holds an update of version {version}, not a checkpoint",
            key=key,
            version=version,
        )
    return value


def _read_update(by_key: dict[str, KeyValue], version: int, earliest: int) -> VersionedUpdate:
    value = _entry(by_key, version)
    if not isinstance(value, VersionedUpdate):
        key = update_key(version)
        raise CorruptLogError(
            f"Update log entry '{key}' of version {version} holds a checkpoint, but the "
            f"checkpoint version in '{KEY_CHECKPOINT_VERSION}' is {earliest}",
            key=key,
            version=version,
        )
    return value
