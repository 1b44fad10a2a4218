"""A tablet server's identity on disk, as Kudu keeps it: a random instance
id written into the data directory on first start. The name says which
server a process means to be; the instance id says which copy of that
server's data it runs on. A process restarted on the same directory is the
same server, so it may take its own registration over while the dead
process's lease still lives; another directory under the same name is
another server and must wait for the name to be free.

While a server runs, it holds an exclusive ``flock`` on the directory's
lock file: two live processes never share an instance id. The kernel drops
the lock with the process, kill -9 included, so a restart is never locked
out by a crash.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import zlib
from pathlib import Path

from almanac.errors import AlreadyExistsError, CatalogError, CorruptDataError

__all__ = ["INSTANCE_FILE", "LOCK_FILE", "DataDirLock", "decode_instance", "encode_instance"]

INSTANCE_FILE = "instance.json"
LOCK_FILE = "instance.lock"
_ID = re.compile(r"[0-9a-f]{32}")


def encode_instance(instance_id: str) -> bytes:
    """The instance file's bytes: the id and a CRC-32 of it, so that a bit
    flip inside the id is found rather than read as another server."""
    record = {"checksum": f"{zlib.crc32(instance_id.encode()):08x}", "instance_id": instance_id}
    return json.dumps(record, sort_keys=True, separators=(",", ":")).encode() + b"\n"


def _stored_id(data: bytes) -> str | None:
    try:
        record = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    instance_id = record.get("instance_id") if isinstance(record, dict) else None
    if not isinstance(instance_id, str) or _ID.fullmatch(instance_id) is None:
        return None
    return instance_id if encode_instance(instance_id) == data else None


def decode_instance(data: bytes, path: str) -> str:
    """The instance id stored in ``data`` (the file at ``path``);
    ``CorruptDataError`` naming the file when it is damaged."""
    instance_id = _stored_id(data)
    if instance_id is None:
        raise CorruptDataError(
            f"Instance file '{path}' of a tablet server data directory is damaged "
            f"({bytes(data)[:100]!r}): restore it, or move the directory away to start a new "
            "server with new data",
            path=path,
            rule="a data directory keeps the instance id it was given",
        )
    return instance_id


class DataDirLock:
    """A data directory held by this process, with its instance id (made on
    first use). Released by ``close`` or by the process's end."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.path = Path(data_dir).absolute()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            where = str(self.path)
            raise CatalogError(
                f"Cannot open tablet server data directory '{where}': {exc}", path=where
            ) from exc
        try:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise AlreadyExistsError(
                    f"Tablet server data directory '{self.path}' is in use by another live "
                    "process: give each server its own data directory",
                    kind="tablet server data directory",
                    path=str(self.path),
                    rule="one live tablet server per data directory",
                ) from None
            self.instance_id = self._instance_id()
        except BaseException:
            os.close(self._fd)
            raise

    def _instance_id(self) -> str:
        path = self.path / INSTANCE_FILE
        try:
            return decode_instance(path.read_bytes(), str(path))
        except FileNotFoundError:
            pass
        except OSError as exc:
            where = str(path)
            raise CatalogError(f"Cannot read instance file '{where}': {exc}", path=where) from exc
        instance_id = secrets.token_hex(16)
        part = path.with_name(INSTANCE_FILE + ".part")
        try:
            with part.open("wb") as out:
                out.write(encode_instance(instance_id))
                out.flush()
                os.fsync(out.fileno())
            os.replace(part, path)
            directory = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except OSError as exc:
            with contextlib.suppress(OSError):
                part.unlink()
            raise CatalogError(
                f"Cannot write instance file '{path}': {exc}", path=str(path)
            ) from exc
        return instance_id

    def close(self) -> None:
        """Let the directory go (once)."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)
