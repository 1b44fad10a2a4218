"""Staging leases: a write registers ``data.staging.<write_id>`` under a lease
before its files exist, and a change that writes Iceberg metadata but no data
takes a hold. While either lives the janitor collects nothing of the table;
once the lease is gone the write can never commit (its files may be gone),
and an aborted write is marked so that a late commit fails. The commit
protocol (``commits``) requires the staging key in its transaction and reads
the marks; this module only grants, renews and gives them up."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from almanac.data.ownership import claim_warehouse
from almanac.data.snapshots import staging_key, write_key
from almanac.data.warehouse import STAGED_MARKER, Warehouse, new_write_id
from almanac.errors import CatalogError, MetastoreError, WarehouseOwnerError, WriteStateError
from almanac.metastore import Compare, Delete, Metastore, Op, Put

__all__ = ["ABORTED", "HOLD_TTL_S", "Hold", "Staging"]

HOLD_TTL_S = 60.0
"""Lease of a hold: how long a metadata-only change (an ALTER's schema, an
expiry) may take between writing its metadata.json and publishing it."""
ABORTED = b"aborted"
ABORTED_TTL_S = 7 * 24 * 3600.0
"""How long an aborted write's marker outlives it, refusing late commits."""


@dataclass(frozen=True, slots=True)
class Hold:
    """A staging key under a lease for a change that writes Iceberg metadata
    but no data: while it lives the janitor collects nothing of the table,
    and the change's transaction requires it (and deletes it)."""

    key: str
    lease: int
    revision: int

    def compare(self) -> Compare:
        return Compare.mod_revision(self.key, "==", self.revision)

    def delete(self) -> Delete:
        return Delete(self.key)


class Staging:
    """The staging leases of one catalog's writes (``TableData.staging``):
    its metastore holds the keys, its warehouse the write directories."""

    def __init__(self, store: Metastore, warehouse: Warehouse) -> None:
        self.store = store
        self.warehouse = warehouse

    def hold(self, table_id: int, *, ttl_s: float = HOLD_TTL_S) -> Hold:
        """Take a hold on the table's metadata (see ``Hold``); ``release`` its
        lease once its transaction ran, whatever the outcome."""
        write_id = new_write_id()
        key = staging_key(write_id)
        lease = self.store.grant_lease(ttl_s)
        try:
            self.store.put(key, self.warehouse.write_dir(table_id, write_id).encode(), lease=lease)
            stored = self.store.get(key)
        except BaseException:
            self._revoke(lease)
            raise
        if stored is None:
            raise WriteStateError(f"The hold on table {table_id} expired as it was taken")
        return Hold(key, lease, stored.mod_revision)

    def stage(self, write_id: str, write_dir: str, *, ttl_s: float) -> int:
        """Register a write before its files exist: ``data.staging.<write_id>``
        under a new lease (returned; renew it with ``keep_alive`` for long
        writes) and a marker file in ``write_dir``. Until the lease expires the
        janitor leaves the directory alone; after, the write cannot commit."""
        lease = self.store.grant_lease(ttl_s)
        result = self.store.txn(
            [Compare.absent(write_key(write_id))],
            [Put(staging_key(write_id), write_dir.encode(), lease=lease)],
        )
        if not result.succeeded:
            self._revoke(lease)
            raise WriteStateError(
                f"Write {write_id} was already committed or aborted; use a new write id",
                write_id=write_id,
            )
        try:
            self.warehouse.fs.create_dir(write_dir, recursive=True)
            with self.warehouse.fs.open_output_stream(f"{write_dir}/{STAGED_MARKER}") as out:
                out.write(write_id.encode())
        except OSError as exc:
            self._revoke(lease)
            raise CatalogError(f"Cannot create write directory '{write_dir}': {exc}") from exc
        return lease

    def keep_alive(self, lease_id: int) -> None:
        """Renew a staging lease returned by ``stage``."""
        try:
            self.store.keep_alive(lease_id)
        except MetastoreError as exc:
            raise WriteStateError(
                f"Staging lease {lease_id} expired; its write can no longer commit",
                lease=lease_id,
            ) from exc

    def release(self, lease_id: int) -> None:
        """Revoke a staging lease once its write committed or aborted (it would
        expire anyway); a lease already gone is fine."""
        self._revoke(lease_id)

    def _revoke(self, lease: int) -> None:
        with contextlib.suppress(MetastoreError):
            self.store.revoke_lease(lease)

    def abort(self, write_id: str, write_dir: str) -> None:
        """Give up a write: mark it aborted (a late commit then fails), delete its
        directory and its staging lease. Idempotent; a committed write is left
        untouched."""
        wkey = write_key(write_id)
        while True:
            kv = self.store.get(wkey)
            if kv is not None and kv.value != ABORTED:
                return
            if kv is not None:
                break
            staging = self.store.get(staging_key(write_id))
            marker = self.store.grant_lease(ABORTED_TTL_S)
            ops: list[Op] = [Put(wkey, ABORTED, lease=marker)]
            if staging is not None:
                ops.append(Delete(staging.key))
            if self.store.txn([Compare.absent(wkey)], ops).succeeded:
                if staging is not None and staging.lease:
                    self._revoke(staging.lease)
                break
            self._revoke(marker)
        table_id = self.warehouse.table_of(write_dir)
        if table_id is not None:  # the janitor collects what cannot go now
            with contextlib.suppress(WarehouseOwnerError):
                if self.warehouse.owner is None:  # a Spark worker's own TableData
                    claim_warehouse(self.store, self.warehouse)
                self.warehouse.remove_dir(write_dir, table_id)

    def is_committed(self, write_id: str) -> bool:
        """True once a commit of ``write_id`` succeeded (until its snapshot expires)."""
        kv = self.store.get(write_key(write_id))
        return kv is not None and kv.value != ABORTED
