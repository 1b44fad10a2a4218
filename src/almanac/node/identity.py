"""A catalog directory remembers which catalog it held and how far it got.

A SQLite store that lost its tables or its WAL after a crash (or was
replaced by an older copy, or by another catalog's file) opens as a valid
store; without more, the node would start a fresh catalog at version 1, or
serve an old version as the latest. So the identity of a catalog lives in
two places:

* in the store, under the key ``catalog.id``: a UUID made when the catalog
  was initialised;
* outside the SQLite file, in a small JSON file beside it (``catalog.id``
  in a catalog directory, next to ``catalog.db``; ``file.db.id`` next to any
  other ``file.db``) holding the same UUID and the last version a node on
  this machine saw.

On open, if the record exists but the store has no id (empty, lost), has
another id, or a latest version below the recorded one, the node refuses
with :class:`~almanac.errors.CatalogIdentityError` naming both paths and
the numbers (a record that cannot be written for a full or read-only disk
is a plain ``StorageError`` saying so: nothing is damaged). A brand-new
directory initialises both; a store written by an older release (no id
yet) is adopted. The record is replaced atomically
(write, fsync, rename, fsync of the directory) and only ever moves forward;
nodes refresh it from their log follower at most once per
``flush_interval_s`` (0.2 s) while versions advance, and on close, never
once per read or commit. A version recorded there was committed before any
node saw it, so a store that is merely behind on a node's crash never trips
the check; one that lost committed versions does, unless they were committed
within the last flush interval before the crash. With ``durability="normal"``
a power cut can lose commits the record already holds: the next open then
refuses, saying how many versions are gone.

To accept a loss deliberately (restore from an old backup), delete the
record: the next open adopts the store as it is.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
import uuid
import zlib
from pathlib import Path
from typing import Any

from almanac.errors import CatalogIdentityError, StorageError
from almanac.metastore import disk

__all__ = ["IdentityRecord", "identity_path_for", "new_catalog_id", "parse_catalog_id"]

RECORD_FORMAT = 1
FLUSH_INTERVAL_S = 0.2

_log = logging.getLogger("almanac.identity")


def identity_path_for(db_path: str | os.PathLike[str]) -> Path:
    """``dir/catalog.db`` (a catalog directory's store) -> ``dir/catalog.id``;
    any other file ``dir/file.db`` -> ``dir/file.db.id``."""
    path = Path(db_path)
    if path.name == "catalog.db":
        return path.with_name("catalog.id")
    return path.with_name(path.name + ".id")


def new_catalog_id() -> str:
    return str(uuid.uuid4())


def parse_catalog_id(raw: bytes) -> str | None:
    """The catalog id stored in the metastore, or None when it is not a canonical UUID."""
    try:
        text = raw.decode("ascii")
        return text if str(uuid.UUID(text)) == text else None
    except (UnicodeDecodeError, ValueError):
        return None


def _checksum(catalog_id: str, last_seen: int) -> str:
    return f"{zlib.crc32(f'{RECORD_FORMAT}:{catalog_id}:{last_seen}'.encode()):08x}"


class IdentityRecord:
    """The identity file of one store; safe to share between threads."""

    def __init__(self, path: Path, *, flush_interval_s: float = FLUSH_INTERVAL_S) -> None:
        self.path = path
        self.flush_interval_s = flush_interval_s
        self._lock = threading.Lock()
        self._catalog_id: str | None = None
        self._recorded = -1
        self._seen = -1
        self._last_flush = 0.0

    def read(self) -> tuple[str, int] | None:
        """(catalog id, last seen version), or None when there is no record."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CatalogIdentityError(
                f"Cannot read the catalog identity record '{self.path}': {exc}", path=str(self.path)
            ) from exc
        text = raw.decode("utf-8", errors="replace")
        try:
            # Bytes, so a record that is not UTF-8 is damage, not a crash;
            # nesting too deep for the decoder is damage too.
            data: Any = json.loads(raw)
            catalog_id = data["catalog_id"]
            last_seen = data["last_seen_version"]
            ok = (
                isinstance(catalog_id, str)
                and type(last_seen) is int
                and last_seen >= 0
                and data.get("checksum") == _checksum(catalog_id, last_seen)
            )
        except (ValueError, KeyError, TypeError, RecursionError):
            ok = False
        if not ok:
            raise CatalogIdentityError(
                f"The catalog identity record '{self.path}' is damaged ({text[:80]!r}); "
                "if the store beside it is the right one, delete the record to adopt the store",
                path=str(self.path),
            )
        return catalog_id, last_seen

    def adopt(self, catalog_id: str, version: int, recorded: int) -> None:
        """Remember the id, and write the record now if it is missing or behind."""
        with self._lock:
            self._catalog_id = catalog_id
            self._recorded = recorded
            self._seen = max(self._seen, version)
        if version > recorded or recorded < 0:
            self.flush(force=True)

    def seen(self, version: int) -> None:
        """A node applied ``version``; the record follows at most once per interval."""
        with self._lock:
            if version > self._seen:
                self._seen = version
            due = (
                self._catalog_id is not None
                and self._seen > self._recorded
                and time.monotonic() - self._last_flush >= self.flush_interval_s
            )
        if due:
            self.flush_quietly()

    def flush_quietly(self) -> None:
        """``flush``, logging instead of raising: a record that lags is only a weaker check."""
        try:
            self.flush()
        except StorageError as exc:
            _log.warning("%s", exc)

    def flush(self, *, force: bool = False) -> None:
        with self._lock:
            catalog_id, seen = self._catalog_id, self._seen
            if catalog_id is None or (seen <= self._recorded and not force):
                return
            try:
                current = self.read()
            except CatalogIdentityError:
                current = None
            if current is not None and current[0] == catalog_id:
                seen = max(seen, current[1])
            elif current is not None:
                return  # another catalog's record appeared: never overwrite it
            self._write(catalog_id, seen)
            self._recorded = seen
            self._last_flush = time.monotonic()

    def _write(self, catalog_id: str, last_seen: int) -> None:
        data = {
            "format": RECORD_FORMAT,
            "catalog_id": catalog_id,
            "last_seen_version": last_seen,
            "checksum": _checksum(catalog_id, last_seen),
        }
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, (json.dumps(data, indent=1) + "\n").encode())
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            known = disk.os_error(self.path, exc)
            if known is not None:  # a full or read-only disk damages nothing
                raise known from exc
            raise CatalogIdentityError(
                f"Cannot write the catalog identity record '{self.path}': {exc}",
                path=str(self.path),
            ) from exc
