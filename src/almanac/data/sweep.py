"""How the janitor and commits that add files agree on what may be collected.

An engine (pyiceberg, Spark, DuckDB) writes its files first and commits
them after, with no staging lease; a janitor that took its view of the
referenced files before such a commit lands would delete that commit's
files. So, before it lists the warehouse, the janitor publishes its cutoff
in the metastore key ``data.janitor.sweep`` (the newest cutoff any janitor
used, so it only moves forward) and deletes no file modified at or after
its own cutoff. A commit that adds files reads the key, refuses any new
file in the warehouse older than the cutoff (a janitor may have collected
it), and compares the key's revision in its transaction: a sweep that
starts between the check and the commit makes the commit fail and check
again. Either the janitor sees the commit or the commit sees the janitor.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from almanac.data.warehouse import Warehouse
from almanac.errors import CorruptDataError, ValidationError
from almanac.metastore import Compare, Metastore, Put

__all__ = ["SWEEP_KEY", "Sweep", "begin_sweep", "read_sweep"]

SWEEP_KEY = "data.janitor.sweep"


@dataclass(frozen=True, slots=True)
class Sweep:
    """The newest janitor cutoff (ns since the epoch; 0 before any sweep)
    and the revision of the key that holds it (0 when absent)."""

    cutoff_ns: int
    revision: int

    def compare(self) -> Compare:
        """Holds while no sweep started after this one was read."""
        if self.revision == 0:
            return Compare.absent(SWEEP_KEY)
        return Compare.mod_revision(SWEEP_KEY, "==", self.revision)

    def check_fresh(self, warehouse: Warehouse, paths: Iterable[str], what: str) -> None:
        """Refuse a commit of ``what`` whose new files in the warehouse were
        last modified before the cutoff, or are gone: the janitor may have
        collected them, and a snapshot naming them could never be read."""
        inside = sorted({n for n in map(lambda p: warehouse.inside(p, None), paths) if n})
        if not inside:
            return
        try:
            infos = warehouse.fs.get_file_info(inside)
        except (OSError, pa.ArrowException) as exc:
            raise ValidationError(
                f"{what}: its new files cannot be checked ({exc})", rule="file-age"
            ) from None
        for info in infos:
            if info.type != pafs.FileType.File:
                raise ValidationError(
                    f"{what}: its new file '{info.path}' is missing from the warehouse",
                    path=info.path,
                    rule="file-age",
                )
            if info.mtime_ns is None or info.mtime_ns < self.cutoff_ns:
                raise ValidationError(
                    f"{what}: its new file '{info.path}' was written before the janitor's "
                    f"cutoff ({self.cutoff_ns / 1e9:.3f} s since the epoch), so it may have "
                    "been collected; write the files again and commit them within the "
                    "janitor's grace",
                    path=info.path,
                    cutoff_ns=self.cutoff_ns,
                    rule="file-age",
                )


def read_sweep(store: Metastore) -> Sweep:
    kv = store.get(SWEEP_KEY)
    if kv is None:
        return Sweep(0, 0)
    if not kv.value.isdigit():
        raise CorruptDataError(
            f"Metastore key '{SWEEP_KEY}' holds {kv.value[:32]!r}, not a cutoff; the next "
            "janitor run rewrites it",
            key=SWEEP_KEY,
        )
    return Sweep(int(kv.value), kv.mod_revision)


def begin_sweep(store: Metastore, grace_s: float) -> int:
    """Publish a sweep with cutoff ``now - grace_s`` (the key keeps the
    newest cutoff ever published) and return that cutoff in ns: the janitor
    deletes only files modified before it. Always writes, so every commit
    that read the key before retries after it."""
    cutoff = max(0, time.time_ns() - int(min(grace_s, 1e12) * 1e9))
    while True:
        kv = store.get(SWEEP_KEY)
        if kv is None:
            compare = Compare.absent(SWEEP_KEY)
            newest = cutoff
        else:
            compare = Compare.mod_revision(SWEEP_KEY, "==", kv.mod_revision)
            newest = max(cutoff, int(kv.value)) if kv.value.isdigit() else cutoff
        if store.txn([compare], [Put(SWEEP_KEY, str(newest).encode())]).succeeded:
            return cutoff
