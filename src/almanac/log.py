"""The update log: versions appended to a metastore and followed by every node.

Keys:

* ``catalog.version`` - the latest version, as canonical decimal text;
* ``catalog.update.{N}`` - the serialized ``VersionedUpdate`` of version N, or,
  for N equal to the checkpoint version, the whole serialized catalog of N
  (with the request ids of the versions it replaced that are still inside
  the request window, see ``almanac.requests``), each in a checksummed frame
  that also names N (see ``almanac.log_format``);
* ``catalog.snapshot.version`` - the checkpoint version, the earliest still
  available (the key keeps its original name so existing stores still open);
* ``catalog.truncating`` - while a truncation is unfinished: the lowest
  version whose key may still lie below the checkpoint version;
* ``catalog.id`` - the catalog's UUID, on stores that keep an identity record
  beside them (SQLite; see ``almanac.identity``);
* ``catalog.pin.{lease}.{n}`` - a version some reader holds, attached to the
  reader's lease so that a dead process stops pinning once the lease expires;
* ``catalog.pins`` - bumped whenever a pin is added, so that a checkpoint can
  tell in its compare-and-swap that no new pin raced it.

Appending version N is one transaction: "if ``catalog.version`` is N-1, put
``catalog.update.{N}`` and set ``catalog.version`` to N", plus whatever extra
operations the caller rides along (placement, data commits).

Truncation. A checkpoint at S is one transaction, guarded by the pins and
by the previous checkpoint version: it writes the whole catalog of S under
``catalog.update.{S}`` and moves ``catalog.snapshot.version`` to S. From that
revision on nothing below S is readable or pinnable, so deleting the older
keys can take as many transactions as the metastore's cap on transaction
size (``Metastore.max_txn_ops``, 128 on etcd) needs. The first transaction
deletes what fits beside its own writes; if more remains, it records the
first version left in ``catalog.truncating``, later transactions delete the
rest in batches, and the last one removes the marker, unless another
checkpoint rewrote it meanwhile (that one then owns the cleanup). A crash
between batches leaves keys below the checkpoint and the marker: they are
never read, the node opens as usual, and the next ``checkpoint_log`` deletes
them. One range delete would need keys that sort numerically, which the
existing ``catalog.update.{N}`` keys of stored catalogs do not.

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
``almanac.log_format``.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from almanac.catalog_version import CatalogVersion
from almanac.entries import VersionedUpdate
from almanac.errors import (
    CatalogError,
    CatalogIdentityError,
    CompactedError,
    CorruptLogError,
    LeaseNotFoundError,
    MetastoreError,
    MetastoreUnavailableError,
    VersionNotFoundError,
    WaitTimeoutError,
)
from almanac.identity import IdentityRecord, identity_path_for, new_catalog_id, parse_catalog_id
from almanac.leases import LeaseKeeper
from almanac.log_format import (
    frame_checkpoint,
    frame_update,
    parse_number,
    read_checkpoint,
    read_entry,
)
from almanac.metastore import Compare, Delete, KeyValue, Metastore, Op, Put, SqliteMetastore, Watch
from almanac.requests import Checkpoint, RequestRecord

__all__ = [
    "KEY_ID",
    "KEY_PINS",
    "KEY_CHECKPOINT_VERSION",
    "KEY_TRUNCATING",
    "KEY_VERSION",
    "PIN_PREFIX",
    "UPDATE_PREFIX",
    "LogFollower",
    "UpdateLog",
    "VersionPin",
    "update_key",
]

KEY_VERSION = "catalog.version"
KEY_CHECKPOINT_VERSION = "catalog.snapshot.version"
KEY_TRUNCATING = "catalog.truncating"
UPDATE_PREFIX = "catalog.update."
PIN_PREFIX = "catalog.pin."
KEY_PINS = "catalog.pins"
KEY_ID = "catalog.id"
_PREFIX = "catalog."

PIN_LEASE_TTL_S = 10.0
_CATCH_UP_BY_KEY = 32
"""A node at most this many versions behind catches up key by key."""

_log = logging.getLogger("almanac.log")


def update_key(version: int) -> str:
    return f"{UPDATE_PREFIX}{version}"


def _int(kv: KeyValue | None) -> int:
    return 0 if kv is None else parse_number(kv)


def _version_of(key: str) -> int:
    """N for a canonical ``catalog.update.{N}`` with N >= 1, else -1."""
    suffix = key[len(UPDATE_PREFIX) :]
    if suffix.isdigit() and suffix.isascii() and not suffix.startswith("0"):
        return int(suffix)
    return -1


def _encode_int(value: int) -> bytes:
    return str(value).encode("ascii")


class LogFollower(Protocol):
    """What a node does with what the log delivers, always in version order."""

    def on_update(self, update: VersionedUpdate, token: int) -> None: ...

    def on_checkpoint(
        self, version: CatalogVersion, token: int, requests: tuple[RequestRecord, ...] = ()
    ) -> None: ...

    def on_truncate(self, earliest: int) -> None: ...

    @property
    def latest_version(self) -> int: ...


@dataclass(frozen=True, slots=True)
class VersionPin:
    """A version held by a reader; checkpoints never truncate past it."""

    version: int
    key: str


class UpdateLog:
    """The catalog's update log on a metastore; one per node."""

    def __init__(
        self,
        store: Metastore,
        *,
        owns_store: bool = True,
        pin_ttl_s: float = PIN_LEASE_TTL_S,
        identity: IdentityRecord | bool = True,
    ) -> None:
        """``identity``: the record checked against the store on start (see
        ``almanac.identity``); ``True`` keeps one beside a SQLite store's file
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
        self.pin_ttl_s = pin_ttl_s
        self._owns_store = owns_store
        self._watch: Watch | None = None
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        self._lease = 0
        self._lease_lock = threading.Lock()
        self._keepalive: LeaseKeeper | None = None
        self._pin_seq = itertools.count()
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
        self._watch = self.store.watch(_PREFIX, revision + 1)
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
        result = self.store.range(_PREFIX)
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
                    follower.on_truncate(_int(event.kv))
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
                self._watch = self.store.watch(_PREFIX, revision + 1)
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
            else Compare.value(KEY_VERSION, "==", _encode_int(n - 1)),
            *extra_compares,
        ]
        ops: list[Op] = [
            Put(update_key(n), frame_update(update)),
            Put(KEY_VERSION, _encode_int(n)),
        ]
        if n == 1:
            ops.append(Put(KEY_CHECKPOINT_VERSION, _encode_int(0)))
        ops.extend(extra_ops)
        result = self.store.txn(compares, ops)
        return result.revision if result.succeeded else None

    def latest_version(self) -> int:
        return _int(self.store.get(KEY_VERSION))

    def earliest_version(self) -> int:
        return _int(self.store.get(KEY_CHECKPOINT_VERSION))

    # -- pins and checkpoints-----------------------------------------------

    def _pin_lease(self) -> int:
        with self._lease_lock:
            if self._lease == 0:
                self._lease = lease = self.store.grant_lease(self.pin_ttl_s)

                keeper = LeaseKeeper(
                    self.pin_ttl_s,
                    "almanac-pin-lease",
                    on_error=lambda exc: self._renewal_failed(lease, exc),
                )

                def renew() -> None:
                    if self._lease != lease or self._closed.is_set():
                        keeper.stop()  # a newer lease has its own keeper
                    else:
                        self.store.keep_alive(lease)

                keeper.add(renew)
                self._keepalive = keeper.start()
            return self._lease

    def _drop_lease(self, lease: int) -> None:
        """Forget a lease that expired (the process was paused past its TTL,
        or cut off): its pins are gone, the next pin takes a new lease."""
        with self._lease_lock:
            if self._lease == lease:
                self._lease = 0

    def _renewal_failed(self, lease: int, exc: CatalogError) -> bool:
        if isinstance(exc, MetastoreUnavailableError):
            # A cluster between leaders, or briefly out of reach: the
            # lease outlives a few missed renewals, so keep trying.
            _log.warning("Could not renew the lease of this node's version pins: %s", exc)
            return True
        if not self._closed.is_set():
            _log.error("Lost the lease that holds this node's version pins: %s", exc)
        self._drop_lease(lease)
        return False

    def pin(self, version: int, timeout: float | None = None) -> VersionPin:
        """Hold ``version`` against truncation, in every process sharing the
        store; ``WaitTimeoutError`` if checkpoints kept racing it for
        ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            lease = self._pin_lease()
            key = f"{PIN_PREFIX}{lease}.{next(self._pin_seq)}"
            snap_kv = self.store.get(KEY_CHECKPOINT_VERSION)
            earliest = _int(snap_kv)
            if version < earliest:
                raise VersionNotFoundError(
                    f"Catalog version {version} is no longer available; the earliest "
                    f"available version is {earliest}",
                    version=version,
                    earliest=earliest,
                )
            guard = (
                Compare.absent(KEY_CHECKPOINT_VERSION)
                if snap_kv is None
                else Compare.mod_revision(KEY_CHECKPOINT_VERSION, "==", snap_kv.mod_revision)
            )
            ops: list[Op] = [
                Put(key, _encode_int(version), lease=lease),
                Put(KEY_PINS, key.encode()),
            ]
            try:
                if self.store.txn([guard], ops).succeeded:
                    return VersionPin(version, key)
            except LeaseNotFoundError:
                self._drop_lease(lease)
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeoutError(
                    f"Pinning catalog version {version} did not succeed within {timeout} s: "
                    "checkpoints kept moving the earliest version",
                    awaited="version pin",
                    timeout=timeout,
                    version=version,
                )

    def unpin(self, pin: VersionPin) -> None:
        if not self._closed.is_set():
            self.store.delete(pin.key)

    def oldest_pinned(self) -> tuple[int | None, int]:
        """The oldest pinned version (None if none) and the pins key's mod revision."""
        result = self.store.range(PIN_PREFIX)
        pins_kv = self.store.get(KEY_PINS, revision=result.revision)
        versions = [_int(kv) for kv in result.kvs]
        return (min(versions) if versions else None), (pins_kv.mod_revision if pins_kv else 0)

    def truncate(
        self,
        version: CatalogVersion,
        pins_revision: int,
        requests: tuple[RequestRecord, ...] = (),
    ) -> bool:
        """Make version ``version.version`` the checkpoint (the whole catalog,
        and the ``requests`` it carries past the versions it replaces) and
        delete the older entries; False, changing nothing, if another
        checkpoint or a pin (taken or released since the pins key had
        ``pins_revision``) raced it. The caller has checked the pins in the
        same read that gave ``pins_revision``.

        The deletions past the first transaction follow in batches; if one
        fails, the checkpoint stands and the next call of
        :meth:`finish_truncation` (every checkpoint makes one) deletes the rest.
        """
        s = version.version
        snap_kv = self.store.get(KEY_CHECKPOINT_VERSION)
        earliest = _int(snap_kv)
        if s <= earliest:
            return False
        marker = self.store.get(KEY_TRUNCATING)
        low = max(earliest, 1) if marker is None else _truncating(marker, earliest)
        victims = [update_key(v) for v in range(low, s)]
        cap = self.store.max_txn_ops
        room = len(victims) if cap is None else max(cap - 3, 0)
        first, rest = victims[:room], victims[room:]
        compares = [
            Compare.mod_revision(KEY_PINS, "==", pins_revision),
            Compare.value(KEY_CHECKPOINT_VERSION, "==", _encode_int(earliest))
            if snap_kv is not None
            else Compare.absent(KEY_CHECKPOINT_VERSION),
            Compare.exists(update_key(s)),
            Compare.absent(KEY_TRUNCATING)
            if marker is None
            else Compare.mod_revision(KEY_TRUNCATING, "==", marker.mod_revision),
        ]
        ops: list[Op] = [Put(update_key(s), frame_checkpoint(version, requests))]
        ops.extend(Delete(key) for key in first)
        if rest:
            ops.append(Put(KEY_TRUNCATING, _encode_int(low)))
        elif marker is not None:
            ops.append(Delete(KEY_TRUNCATING))
        ops.append(Put(KEY_CHECKPOINT_VERSION, _encode_int(s)))
        result = self.store.txn(compares, ops)
        if not result.succeeded:
            return False
        if rest:
            self._delete_leftovers(rest, result.revision)
        return True

    def finish_truncation(self) -> None:
        """Delete what an interrupted truncation left below the checkpoint."""
        marker = self.store.get(KEY_TRUNCATING)
        if marker is None:
            return
        earliest = self.earliest_version()
        low = _truncating(marker, earliest)
        self._delete_leftovers([update_key(v) for v in range(low, earliest)], marker.mod_revision)

    def _delete_leftovers(self, keys: Sequence[str], marker_revision: int) -> None:
        """Delete ``keys`` (all below the checkpoint version) in batches that
        fit the store's cap; the last batch also removes ``catalog.truncating``
        if it still has ``marker_revision``. A failure is logged, not raised:
        the checkpoint stands, and the marker says what is left."""
        cap = self.store.max_txn_ops
        size = max(len(keys) if cap is None else cap - 1, 1)
        try:
            for start in range(0, max(len(keys), 1), size):
                batch = [Delete(key) for key in keys[start : start + size]]
                if start + size < len(keys):
                    self.store.txn((), batch)
                    continue
                unchanged = Compare.mod_revision(KEY_TRUNCATING, "==", marker_revision)
                self.store.txn([unchanged], [*batch, Delete(KEY_TRUNCATING)], batch)
        except (CatalogError, MetastoreError) as exc:
            _log.warning(
                "Deleting the log entries below the checkpoint stopped (%s); "
                "the next checkpoint deletes the rest",
                exc,
            )

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
        if self._keepalive is not None:
            self._keepalive.stop()
        with self._lease_lock:
            if self._lease:
                with contextlib.suppress(MetastoreError):
                    self.store.revoke_lease(self._lease)
        if self._owns_store:
            self.store.close()


def _check_layout(by_key: dict[str, KeyValue]) -> tuple[int, int]:
    """(latest, checkpoint version), once the log keys form one contiguous run."""
    version_kv = by_key.get(KEY_VERSION)
    latest = _int(version_kv)
    earliest = _int(by_key.get(KEY_CHECKPOINT_VERSION))
    marker = by_key.get(KEY_TRUNCATING)
    leftover_from = earliest if marker is None else _truncating(marker, earliest)
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


def _truncating(marker: KeyValue, earliest: int) -> int:
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
