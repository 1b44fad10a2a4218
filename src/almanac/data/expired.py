"""Snapshots an Iceberg client expired (a ``remove-snapshots`` commit, such
as pyiceberg's ``expire_snapshots``).

They leave the table's metadata at once, but the data snapshots they were
stay readable by Almanac's time travel while a kept catalog version reads
them: the commit only marks their records, under ``data.expired.<table>``
(the Almanac snapshot ids, as JSON). The janitor drops a record, marked or
not, once no available catalog version reads it (``unread``; every data
commit is a catalog version, so the log's retention decides), with the files
only it needed; ``collect`` then drops what is left of the marks (and a
marked record the janitor's expiry raced), in one transaction that compares
them unchanged. A record is read by a version ``v`` when it is the newest
with a catalog version at most ``v``, and by a timestamp ``t`` at or after
the earliest available version's activation when it is the newest committed
at or before ``t``: so only a prefix of the chain is ever unread, and
dropping records from it never changes what a read returns.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from almanac.data.commits import TableData
from almanac.data.snapshots import Record, record_unchanged, snapshot_key, write_key
from almanac.errors import CorruptDataError, VersionNotFoundError
from almanac.metastore import Compare, Delete, Metastore, Op, Put
from almanac.node.catalog import Catalog

__all__ = ["EXPIRED_PREFIX", "Marks", "collect", "expired_key", "mark", "unread"]

EXPIRED_PREFIX = "data.expired."


def expired_key(table_id: int) -> str:
    return f"{EXPIRED_PREFIX}{table_id}"


@dataclass(frozen=True, slots=True)
class Marks:
    """The marked records of one table as read at ``revision`` (0: none)."""

    key: str
    ids: frozenset[int]
    revision: int

    @staticmethod
    def read(store: Metastore, table_id: int) -> Marks:
        key = expired_key(table_id)
        kv = store.get(key)
        if kv is None:
            return Marks(key, frozenset(), 0)
        try:
            ids = json.loads(kv.value)
            if not isinstance(ids, list) or not all(type(i) is int for i in ids):
                raise ValueError("not a list of snapshot ids")
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptDataError(
                f"Expired snapshots '{key}' do not parse: {exc}", key=key
            ) from exc
        return Marks(key, frozenset(ids), kv.mod_revision)

    def unchanged(self) -> Compare:
        if self.revision == 0:
            return Compare.absent(self.key)
        return Compare.mod_revision(self.key, "==", self.revision)

    def replace(self, ids: Iterable[int]) -> Op:
        kept = sorted(set(ids))
        return Put(self.key, json.dumps(kept).encode()) if kept else Delete(self.key)


def mark(
    data: TableData, table_id: int, write_ids: Iterable[str], current: int | None
) -> tuple[list[Compare], list[Op]]:
    """The compares and writes that mark the records of the writes that made
    the expired Iceberg snapshots (each snapshot Almanac publishes names its
    write); never the ``current`` record. Snapshots no record holds (one a
    commit added before its last, say) need no mark: no read reaches them."""
    ids: set[int] = set()
    for write_id in write_ids:
        kv = data.store.get(write_key(write_id))
        owner, _, snapshot = (
            (b"" if kv is None else kv.value).decode("ascii", "replace").partition(".")
        )
        if owner == str(table_id) and snapshot.isdigit() and int(snapshot) != current:
            ids.add(int(snapshot))
    marks = Marks.read(data.store, table_id)
    if ids <= marks.ids:
        return [], []
    return [marks.unchanged()], [marks.replace(marks.ids | ids)]


def unread(cat: Catalog, records: list[Record]) -> list[Record]:
    """The prefix of ``records`` (oldest first) that no available catalog
    version reads, by version or by timestamp (see the module docstring)."""
    earliest = cat.earliest_version
    try:
        activated = cat.catalog(earliest).activation_time
    except VersionNotFoundError:  # a checkpoint moved it meanwhile: next run
        return []
    first_read = 0
    for i, record in enumerate(records):
        if record.catalog_version <= earliest and record.commit_time <= activated:
            first_read = i
    return records[:first_read]


def collect(cat: Catalog, data: TableData, table_id: int) -> list[Record]:
    """Drop the table's marked records that no available catalog version
    reads, with their write keys, and forget marks whose record is gone;
    returns the dropped records (none when the table changed meanwhile)."""
    marks = Marks.read(data.store, table_id)
    if not marks.ids:
        return []
    records = data.records(table_id)
    doomed = [r for r in unread(cat, records) if r.snapshot_id in marks.ids]
    left = marks.ids & ({r.snapshot_id for r in records} - {r.snapshot_id for r in doomed})
    if not doomed and left == marks.ids:
        return []
    compares = [marks.unchanged(), *(record_unchanged(data.store, r) for r in doomed)]
    ops: list[Op] = [marks.replace(left)]
    for record in doomed:
        ops += [
            Delete(snapshot_key(table_id, record.snapshot_id)),
            Delete(write_key(record.write_id)),
        ]
    if not data.store.txn(compares, ops).succeeded:
        return []
    return doomed
