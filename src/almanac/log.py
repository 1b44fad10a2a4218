"""The update log: versions appended to a metastore and followed by every node.

Keys:

* ``catalog.version`` - the latest version, as decimal text;
* ``catalog.update.{N}`` - the serialized ``VersionedUpdate`` of version N, or,
  for N equal to the checkpoint version, the whole serialized catalog of N;
* ``catalog.snapshot.version`` - the checkpoint version, the earliest still
  available (the key keeps its original name so existing stores still open);
* ``catalog.pin.{lease}.{n}`` - a version some reader holds, attached to the
  reader's lease so that a dead process stops pinning once the lease expires;
* ``catalog.pins`` - bumped whenever a pin is added, so that a checkpoint can
  tell in its compare-and-swap that no new pin raced it.

Appending version N is one transaction: "if ``catalog.version`` is N-1, put
``catalog.update.{N}`` and set ``catalog.version`` to N", plus whatever extra
operations the caller rides along (placement, data commits).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from almanac.catalog_version import CatalogVersion
from almanac.entries import VersionedUpdate
from almanac.errors import (
    CatalogError,
    CompactedError,
    CorruptLogError,
    MetastoreError,
    SerializationError,
    VersionNotFoundError,
    WaitTimeoutError,
)
from almanac.metastore import Compare, Delete, KeyValue, Metastore, Op, Put, Watch
from almanac.serialization import decode, encode_catalog, encode_update

__all__ = [
    "KEY_PINS",
    "KEY_CHECKPOINT_VERSION",
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
UPDATE_PREFIX = "catalog.update."
PIN_PREFIX = "catalog.pin."
KEY_PINS = "catalog.pins"
_PREFIX = "catalog."

PIN_LEASE_TTL_S = 10.0
_CATCH_UP_BY_KEY = 32
"""A node at most this many versions behind catches up key by key."""

_log = logging.getLogger("almanac.log")
_T = TypeVar("_T")


def update_key(version: int) -> str:
    return f"{UPDATE_PREFIX}{version}"


def _int(kv: KeyValue | None) -> int:
    if kv is None:
        return 0
    try:
        return int(kv.value.decode("ascii"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptLogError(
            f"Metastore key '{kv.key}' holds {kv.value[:32]!r}, not a version number",
            key=kv.key,
        ) from exc


def _version_of(key: str) -> int:
    suffix = key[len(UPDATE_PREFIX) :]
    return int(suffix) if suffix.isdigit() else -1


def _encode_int(value: int) -> bytes:
    return str(value).encode("ascii")


class LogFollower(Protocol):
    """What a node does with what the log delivers, always in version order."""

    def on_update(self, update: VersionedUpdate, token: int) -> None: ...

    def on_checkpoint(self, snapshot: CatalogVersion, token: int) -> None: ...

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
        self, store: Metastore, *, owns_store: bool = True, pin_ttl_s: float = PIN_LEASE_TTL_S
    ) -> None:
        self.store = store
        self.pin_ttl_s = pin_ttl_s
        self._owns_store = owns_store
        self._watch: Watch | None = None
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        self._lease = 0
        self._lease_lock = threading.Lock()
        self._keepalive: threading.Thread | None = None
        self._pin_seq = itertools.count()
        self.failure: BaseException | None = None

    # -- reading and following -------------------------------------------

    def start(self, follower: LogFollower) -> None:
        """Deliver the stored log (checkpoint first, then updates in order) and
        then follow new changes on a background thread.

        A stored entry that cannot be decoded raises ``CorruptLogError`` naming
        its key and version, before anything is delivered past it.
        """
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
                update = self._decode({key: kv}, version, VersionedUpdate)
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
        result = self.store.range(_PREFIX)
        by_key = {kv.key: kv for kv in result.kvs}
        latest = _int(by_key.get(KEY_VERSION))
        earliest = _int(by_key.get(KEY_CHECKPOINT_VERSION))
        start = applied + 1
        if earliest > 0 and applied < earliest:
            snapshot = self._decode(by_key, earliest, CatalogVersion)
            follower.on_checkpoint(snapshot, by_key[update_key(earliest)].mod_revision)
            start = earliest + 1
        elif earliest > 0:
            follower.on_truncate(earliest)
        for version in range(max(start, 1), latest + 1):
            update = self._decode(by_key, version, VersionedUpdate)
            follower.on_update(update, by_key[update_key(version)].mod_revision)
        return result.revision

    @staticmethod
    def _decode(by_key: dict[str, KeyValue], version: int, kind: type[_T]) -> _T:
        key = update_key(version)
        kv = by_key.get(key)
        if kv is None:
            raise CorruptLogError(
                f"Update log entry '{key}' of version {version} is missing",
                key=key,
                version=version,
            )
        try:
            value = decode(kv.value)
        except SerializationError as exc:
            raise CorruptLogError(
                f"Update log entry '{key}' of version {version} is corrupted: {exc}",
                key=key,
                version=version,
            ) from exc
        if not isinstance(value, kind) or getattr(value, "version", None) != version:
            raise CorruptLogError(
                f"Update log entry '{key}' does not hold version {version} "
                f"(found {type(value).__name__} of version {getattr(value, 'version', '?')})",
                key=key,
                version=version,
            )
        return value

    def _follow(self, follower: LogFollower) -> None:
        applied = -1
        while not self._closed.is_set():
            watch = self._watch
            if watch is None:
                return
            try:
                event = watch.next(timeout=0.2)
                if event is None:
                    continue
                key = event.kv.key
                if key.startswith(UPDATE_PREFIX) and event.kv.value:
                    if _version_of(key) <= follower.latest_version:
                        continue  # applied already (our own commit, or a checkpoint rewrite)
                    value = decode(event.kv.value)
                    if isinstance(value, VersionedUpdate):
                        follower.on_update(value, event.revision)
                        applied = value.version
                elif key == KEY_CHECKPOINT_VERSION and event.kv.value:
                    follower.on_truncate(_int(event.kv))
            except CompactedError:
                # History we had not read yet was compacted: re-read the state.
                watch.close()
                try:
                    revision = self._catch_up(follower, applied)
                    self._watch = self.store.watch(_PREFIX, revision + 1)
                except CatalogError as exc:
                    self._fail(exc)
                    return
            except (CatalogError, MetastoreError) as exc:
                if self._closed.is_set():
                    return
                self._fail(exc)
                return

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
            Put(update_key(n), encode_update(update)),
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
                self._lease = self.store.grant_lease(self.pin_ttl_s)
                self._keepalive = threading.Thread(
                    target=self._keep_alive, name="almanac-pin-lease", daemon=True
                )
                self._keepalive.start()
            return self._lease

    def _keep_alive(self) -> None:
        while not self._closed.wait(self.pin_ttl_s / 3):
            try:
                self.store.keep_alive(self._lease)
            except MetastoreError as exc:
                if not self._closed.is_set():
                    _log.error("Lost the lease that holds this node's version pins: %s", exc)
                return

    def pin(self, version: int, timeout: float | None = None) -> VersionPin:
        """Hold ``version`` against truncation, in every process sharing the
        store; ``WaitTimeoutError`` if checkpoints kept racing it for
        ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        lease = self._pin_lease()
        key = f"{PIN_PREFIX}{lease}.{next(self._pin_seq)}"
        while True:
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
            if self.store.txn([guard], ops).succeeded:
                return VersionPin(version, key)
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

    def truncate(self, snapshot: CatalogVersion) -> bool:
        """Replace version ``snapshot.version`` by the whole catalog and delete
        older updates, in one transaction that fails if a pin or another
        checkpoint raced it. The caller has checked the pins."""
        s = snapshot.version
        _, pins_revision = self.oldest_pinned()
        snap_kv = self.store.get(KEY_CHECKPOINT_VERSION)
        earliest = _int(snap_kv)
        if s <= earliest:
            return False
        compares = [
            Compare.mod_revision(KEY_PINS, "==", pins_revision),
            Compare.value(KEY_CHECKPOINT_VERSION, "==", _encode_int(earliest))
            if snap_kv is not None
            else Compare.absent(KEY_CHECKPOINT_VERSION),
            Compare.exists(update_key(s)),
        ]
        ops: list[Op] = [Put(update_key(s), encode_catalog(snapshot))]
        ops.extend(Delete(update_key(v)) for v in range(max(earliest, 1), s))
        ops.append(Put(KEY_CHECKPOINT_VERSION, _encode_int(s)))
        return self.store.txn(compares, ops).succeeded

    # -- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        if self._watch is not None:
            self._watch.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        with self._lease_lock:
            if self._lease:
                with contextlib.suppress(MetastoreError):
                    self.store.revoke_lease(self._lease)
        if self._owns_store:
            self.store.close()
