"""Where table data lives: a directory tree on any pyarrow filesystem.

Layout below the warehouse root, built from ids only (a quoted name such
as ``..`` or ``metadata`` is a legal table name and must never become a
path)::

    <table_id>/                                   the Iceberg table location
    <table_id>/metadata/                          metadata.json, manifest lists, manifests
    <table_id>/<write_id>/tablet=<t>/part-<uuid>.crc32-<crc>.parquet
                                                  data files (crc: see ``files``)
    <table_id>/<write_id>/_STAGED                 staged-write marker

Every write owns one directory, so aborting or collecting a write is one
recursive delete that never touches another write's files.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from typing import Any

import pyarrow.fs as pafs

from almanac import _check as check
from almanac.errors import CatalogError

__all__ = ["METADATA_DIR", "STAGED_MARKER", "Warehouse", "new_write_id"]

STAGED_MARKER = "_STAGED"
"""File that ``TableData.stage`` puts in a write directory: the write once held
a lease, so once the lease is gone the directory is garbage at once."""


def new_write_id() -> str:
    """A fresh write id (uuid4 hex); it names the write's staging directory."""
    return uuid.uuid4().hex


_WRITE_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]{0,63}")
METADATA_DIR = "metadata"


class Warehouse:
    """A warehouse root on a filesystem; pickles as its URI so that Spark
    executors and commit workers reopen the same place."""

    def __init__(self, uri: str, fs: pafs.FileSystem, root: str) -> None:
        check.string(uri, "Parameter 'uri' of Warehouse", nonblank=True)
        check.instance(fs, pafs.FileSystem, "Parameter 'fs' of Warehouse", "a pyarrow FileSystem")
        check.string(root, "Parameter 'root' of Warehouse")
        self.uri = uri
        self.fs = fs
        self.root = root.rstrip("/") or "/"

    @staticmethod
    def open(uri: str) -> Warehouse:
        """A local path (made absolute and created) or any URI that
        ``pyarrow.fs.FileSystem.from_uri`` understands (``file://``, ``s3://``...)."""
        if not isinstance(uri, str) or not uri:
            raise CatalogError(f"Warehouse location must be a non-empty string, not {uri!r}")
        try:
            if "://" not in uri:
                path = os.path.abspath(uri)
                os.makedirs(path, exist_ok=True)
                return Warehouse(path, pafs.LocalFileSystem(), path)
            fs, root = pafs.FileSystem.from_uri(uri)
            with contextlib.suppress(OSError, NotImplementedError):
                fs.create_dir(root, recursive=True)
            return Warehouse(uri, fs, root)
        except (OSError, ValueError) as exc:
            raise CatalogError(f"Cannot open warehouse '{uri}': {exc}", warehouse=uri) from exc

    def __reduce__(self) -> tuple[Any, ...]:
        return (Warehouse.open, (self.uri,))

    def __repr__(self) -> str:
        return f"Warehouse({self.uri!r})"

    def table_dir(self, table_id: int) -> str:
        """``<root>/<table_id>``: the Iceberg table location of one table."""
        if isinstance(table_id, bool) or not isinstance(table_id, int) or table_id < 0:
            raise CatalogError(f"Invalid table id {table_id!r}", table_id=table_id)
        return f"{self.root}/{table_id}"

    def metadata_dir(self, table_id: int) -> str:
        return f"{self.table_dir(table_id)}/{METADATA_DIR}"

    def write_dir(self, table_id: int, write_id: str) -> str:
        """``<root>/<table_id>/<write_id>``: every file of one write lives below it."""
        if (
            not isinstance(write_id, str)
            or not _WRITE_ID.fullmatch(write_id)
            or write_id == METADATA_DIR
        ):
            raise CatalogError(
                f"Invalid write id {write_id!r}: letters, digits and '-', at most 64",
                write_id=write_id,
            )
        return f"{self.table_dir(table_id)}/{write_id}"

    def table_of(self, path: str) -> int | None:
        """The table id of a path below the root, None for anything else."""
        prefix = f"{self.root.rstrip('/')}/"
        if not path.startswith(prefix):
            return None
        head = path[len(prefix) :].split("/", 1)[0]
        return int(head) if head.isdigit() and head == str(int(head)) else None

    def remove_dir(self, path: str) -> None:
        """Delete a directory and everything below it; a missing one is fine."""
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_dir(path)

    def remove_file(self, path: str) -> None:
        """Delete one file; a missing one is fine."""
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(path)
