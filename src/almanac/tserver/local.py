"""A tablet server's local copy of its tablets.

``<data-dir>/tablets/<table_id>/<tablet_id>/`` holds ``tablet.json`` (what
the server serves: partition, table version, data snapshot) and ``files/``,
a cache of the tablet's Parquet files. Warehouse files never change once
written (every write has its own directory), so a cached copy named after
the warehouse path is that file for good: reads use it when present and
the warehouse otherwise, and syncing is copying what is missing. A local
warehouse is hard-linked, not copied, where the filesystem allows.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs

from almanac.data.files import DataFile
from almanac.data.warehouse import Warehouse
from almanac.errors import CatalogError

__all__ = ["LocalTablet", "LocalTablets"]

_META = "tablet.json"
_FILES = "files"
_COPY_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class LocalTablet:
    """What ``tablet.json`` records of one tablet served here."""

    table_id: int
    tablet_id: int
    partition: int
    table_version: int
    snapshot_id: int | None


class LocalTablets:
    """The tablets under one data directory."""

    def __init__(self, data_dir: str | os.PathLike[str], warehouse: Warehouse) -> None:
        self.root = Path(data_dir).absolute() / "tablets"
        self.warehouse = warehouse
        self.cache = Warehouse(str(self.root), pafs.LocalFileSystem(), str(self.root))
        """The local files as a warehouse, so ``read_file`` reads them as it reads the real one."""
        self._damaged: set[tuple[int, int]] = set()
        self._lock = threading.Lock()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CatalogError(f"Cannot create tablet directory '{self.root}': {exc}") from exc

    def dir(self, table_id: int, tablet_id: int) -> Path:
        return self.root / str(table_id) / str(tablet_id)

    def cached_path(self, table_id: int, tablet_id: int, file: DataFile) -> Path:
        digest = hashlib.sha256(file.path.encode()).hexdigest()[:24]
        return self.dir(table_id, tablet_id) / _FILES / f"{digest}.parquet"

    def present(self) -> Iterator[tuple[int, int]]:
        """Every (table_id, tablet_id) with a directory here, set up or not."""
        for table in sorted(self.root.iterdir()) if self.root.exists() else ():
            if not table.name.isdigit():
                continue
            for tablet in sorted(table.iterdir()):
                if tablet.name.isdigit():
                    yield int(table.name), int(tablet.name)

    def read(self, table_id: int, tablet_id: int) -> LocalTablet | None:
        """The tablet's metadata, None when it is missing or damaged (then
        the tablet is set up again)."""
        path = self.dir(table_id, tablet_id) / _META
        try:
            record = json.loads(path.read_bytes())
            tablet = LocalTablet(**record)
        except (OSError, ValueError, TypeError):
            return None
        if (tablet.table_id, tablet.tablet_id) != (table_id, tablet_id):
            return None
        return tablet

    def sync(self, tablet: LocalTablet, files: tuple[DataFile, ...]) -> int:
        """Cache ``files`` (the tablet's files in its current data snapshot),
        drop cached files that left it, then record ``tablet``; returns how
        many files were copied."""
        base = self.dir(tablet.table_id, tablet.tablet_id)
        cache = base / _FILES
        cache.mkdir(parents=True, exist_ok=True)
        wanted = {self.cached_path(tablet.table_id, tablet.tablet_id, f): f for f in files}
        copied = 0
        for local, file in wanted.items():
            if not local.exists():
                self._fetch(file, local)
                copied += 1
        for stale in cache.iterdir():
            if stale not in wanted:
                # A read still open on it keeps its data (POSIX); a read that
                # has not opened it yet falls back to the warehouse.
                with contextlib.suppress(FileNotFoundError):
                    stale.unlink()
        _write_atomic(base / _META, json.dumps(_record(tablet), sort_keys=True).encode())
        return copied

    def _fetch(self, file: DataFile, local: Path) -> None:
        part = local.with_suffix(".part")
        fs = self.warehouse.fs
        if isinstance(fs, pafs.LocalFileSystem):
            with contextlib.suppress(OSError):
                os.link(file.path, local)
                return
        try:
            with fs.open_input_stream(file.path) as source, part.open("wb") as sink:
                while chunk := source.read(_COPY_CHUNK):
                    sink.write(chunk)
            os.replace(part, local)
        except FileNotFoundError as exc:
            part.unlink(missing_ok=True)
            raise CatalogError(
                f"Data file '{file.path}' is missing from the warehouse", path=file.path
            ) from exc

    def damaged(self, table_id: int, tablet_id: int, path: Path) -> None:
        """A read found ``path`` unreadable: drop it, and have the next sync
        fetch it again."""
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        with self._lock:
            self._damaged.add((table_id, tablet_id))

    def take_damaged(self, table_id: int, tablet_id: int) -> bool:
        """Whether a read found a file of the tablet damaged since last asked."""
        with self._lock:
            if (table_id, tablet_id) in self._damaged:
                self._damaged.discard((table_id, tablet_id))
                return True
            return False

    def remove(self, table_id: int, tablet_id: int) -> None:
        """Delete the tablet's directory (and the table's, once empty)."""
        base = self.dir(table_id, tablet_id)
        shutil.rmtree(base, ignore_errors=True)
        with contextlib.suppress(OSError):
            base.parent.rmdir()


def _record(tablet: LocalTablet) -> dict[str, object]:
    return {
        "table_id": tablet.table_id,
        "tablet_id": tablet.tablet_id,
        "partition": tablet.partition,
        "table_version": tablet.table_version,
        "snapshot_id": tablet.snapshot_id,
    }


def _write_atomic(path: Path, data: bytes) -> None:
    part = path.with_suffix(".part")
    part.write_bytes(data)
    os.replace(part, path)
