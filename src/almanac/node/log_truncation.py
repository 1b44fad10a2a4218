"""Truncating the update log, and the pins that hold versions against it.

Keys (beside the log's own, see ``almanac.node.log``):

* ``catalog.pin.{lease}.{n}`` - a version some reader holds, attached to the
  reader's lease so that a dead process stops pinning once the lease expires;
* ``catalog.pins`` - bumped whenever a pin is added, so that a checkpoint can
  tell in its compare-and-swap that no new pin raced it.

A checkpoint at S is one transaction, guarded by the pins and by the
previous checkpoint version: it writes the whole catalog of S under
``catalog.update.{S}`` and moves ``catalog.snapshot.version`` to S. From that
revision on nothing below S is readable or pinnable, so deleting the older
keys can take as many transactions as the metastore's cap on transaction
size (``Metastore.max_txn_ops``, 128 on etcd) needs. The first transaction
deletes what fits beside its own writes; if more remains, it records the
first version left in ``catalog.truncating``, later transactions delete the
rest in batches, and the last one removes the marker, unless another
checkpoint rewrote it meanwhile (that one then owns the cleanup). A crash
between batches leaves keys below the checkpoint and the marker: they are
never read (the log skips them, see ``almanac.node.log``), the node opens as
usual, and the next ``checkpoint_log`` deletes them. One range delete would
need keys that sort numerically, which the existing ``catalog.update.{N}``
keys of stored catalogs do not.

When to checkpoint, and to which version, is the node's business: see
``almanac.node.retention``.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from almanac.errors import (
    CatalogError,
    LeaseNotFoundError,
    MetastoreError,
    MetastoreUnavailableError,
    VersionNotFoundError,
    WaitTimeoutError,
)
from almanac.metastore import Compare, Delete, Metastore, Op, Put
from almanac.model.catalog_version import CatalogVersion
from almanac.model.request_ids import RequestRecord
from almanac.node.leases import LeaseKeeper
from almanac.node.log import (
    KEY_CHECKPOINT_VERSION,
    KEY_TRUNCATING,
    UpdateLog,
    leftovers_from,
    update_key,
)
from almanac.node.log_format import encode_number, frame_checkpoint, stored_number

__all__ = [
    "KEY_PINS",
    "PIN_LEASE_TTL_S",
    "PIN_PREFIX",
    "VersionPin",
    "VersionPins",
    "finish_truncation",
    "truncate",
]

PIN_PREFIX = "catalog.pin."
KEY_PINS = "catalog.pins"
PIN_LEASE_TTL_S = 10.0

_log = logging.getLogger("almanac.log")  # its messages keep the name they always had


@dataclass(frozen=True, slots=True)
class VersionPin:
    """A version held by a reader; checkpoints never truncate past it."""

    version: int
    key: str


class VersionPins:
    """The versions one node's readers hold, on one lease of the node."""

    def __init__(self, store: Metastore, *, ttl_s: float = PIN_LEASE_TTL_S) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self._closed = threading.Event()
        self._lease = 0
        self._lease_lock = threading.Lock()
        self._keepalive: LeaseKeeper | None = None
        self._seq = itertools.count()

    def _pin_lease(self) -> int:
        with self._lease_lock:
            if self._lease == 0:
                self._lease = lease = self.store.grant_lease(self.ttl_s)

                keeper = LeaseKeeper(
                    self.ttl_s,
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
            key = f"{PIN_PREFIX}{lease}.{next(self._seq)}"
            snap_kv = self.store.get(KEY_CHECKPOINT_VERSION)
            earliest = stored_number(snap_kv)
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
                Put(key, encode_number(version), lease=lease),
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
        """The oldest pinned version, in every process sharing the store (None
        if none), and the pins key's mod revision."""
        result = self.store.range(PIN_PREFIX)
        pins_kv = self.store.get(KEY_PINS, revision=result.revision)
        versions = [stored_number(kv) for kv in result.kvs]
        return (min(versions) if versions else None), (pins_kv.mod_revision if pins_kv else 0)

    def close(self) -> None:
        """Stop renewing, and revoke the lease: this node's pins go with it.
        Called before the store closes."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self._keepalive is not None:
            self._keepalive.stop()
        with self._lease_lock:
            if self._lease:
                with contextlib.suppress(MetastoreError):
                    self.store.revoke_lease(self._lease)


def truncate(
    log: UpdateLog,
    version: CatalogVersion,
    pins_revision: int,
    requests: tuple[RequestRecord, ...] = (),
) -> bool:
    """Make version ``version.version`` the checkpoint of ``log`` (the whole
    catalog, and the ``requests`` it carries past the versions it replaces)
    and delete the older entries; False, changing nothing, if another
    checkpoint or a pin (taken or released since the pins key had
    ``pins_revision``) raced it. The caller has checked the pins in the
    same read that gave ``pins_revision``.

    The deletions past the first transaction follow in batches; if one
    fails, the checkpoint stands and the next call of
    :func:`finish_truncation` (every checkpoint makes one) deletes the rest.
    """
    store = log.store
    s = version.version
    snap_kv = store.get(KEY_CHECKPOINT_VERSION)
    earliest = stored_number(snap_kv)
    if s <= earliest:
        return False
    marker = store.get(KEY_TRUNCATING)
    low = max(earliest, 1) if marker is None else leftovers_from(marker, earliest)
    victims = [update_key(v) for v in range(low, s)]
    cap = store.max_txn_ops
    room = len(victims) if cap is None else max(cap - 3, 0)
    first, rest = victims[:room], victims[room:]
    compares = [
        Compare.mod_revision(KEY_PINS, "==", pins_revision),
        Compare.value(KEY_CHECKPOINT_VERSION, "==", encode_number(earliest))
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
        ops.append(Put(KEY_TRUNCATING, encode_number(low)))
    elif marker is not None:
        ops.append(Delete(KEY_TRUNCATING))
    ops.append(Put(KEY_CHECKPOINT_VERSION, encode_number(s)))
    result = store.txn(compares, ops)
    if not result.succeeded:
        return False
    if rest:
        _delete_leftovers(store, rest, result.revision)
    return True


def finish_truncation(log: UpdateLog) -> None:
    """Delete what an interrupted truncation left below the checkpoint."""
    marker = log.store.get(KEY_TRUNCATING)
    if marker is None:
        return
    earliest = log.earliest_version()
    low = leftovers_from(marker, earliest)
    _delete_leftovers(log.store, [update_key(v) for v in range(low, earliest)], marker.mod_revision)


def _delete_leftovers(store: Metastore, keys: Sequence[str], marker_revision: int) -> None:
    """Delete ``keys`` (all below the checkpoint version) in batches that
    fit the store's cap; the last batch also removes ``catalog.truncating``
    if it still has ``marker_revision``. A failure is logged, not raised:
    the checkpoint stands, and the marker says what is left."""
    cap = store.max_txn_ops
    size = max(len(keys) if cap is None else cap - 1, 1)
    try:
        for start in range(0, max(len(keys), 1), size):
            batch = [Delete(key) for key in keys[start : start + size]]
            if start + size < len(keys):
                store.txn((), batch)
                continue
            unchanged = Compare.mod_revision(KEY_TRUNCATING, "==", marker_revision)
            store.txn([unchanged], [*batch, Delete(KEY_TRUNCATING)], batch)
    except (CatalogError, MetastoreError) as exc:
        _log.warning(
            "Deleting the log entries below the checkpoint stopped (%s); "
            "the next checkpoint deletes the rest",
            exc,
        )
