"""Where table data lives: a directory tree on any pyarrow filesystem.

Layout below the warehouse root (names percent-encoded)::

    <schema>/<table>/<write_id>/tablet=<t>/part-<uuid>.parquet   data files
    <schema>/<table>/<write_id>/_STAGED                            staged-write marker
    <schema>/<table>/_manifests/<table_id>-<snapshot_id>-<uuid>.json

Every write owns one directory, so aborting or collecting a write is one
recursive delete that never touches another write's files.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from typing import Any
from urllib.parse import quote

import pyarrow.fs as pafs

from almanac.errors import CatalogError

__all__ = ["STAGED_MARKER", "Warehouse", "new_write_id"]

STAGED_MARKER = "_STAGED"
"""File that ``TableData.stage`` puts in a write directory: the write once held
a lease, so once the lease is gone the directory is garbage at once."""


def new_write_id() -> str:
    """A fresh write id (uuid4 hex); it names the write's staging directory."""
    return uuid.uuid4().hex


def _segment(name: str) -> str:
    return quote(name, safe="") or "%00"


class Warehouse:
    """A warehouse root on a filesystem; pickles as its URI so that Spark
    executors and commit workers reopen the same place."""

    def __init__(self, uri: str, fs: pafs.FileSystem, root: str) -> None:
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

    def table_dir(self, schema: str, table: str) -> str:
        """``<root>/<schema>/<table>``: the writes and manifests of one table name."""
        return f"{self.root}/{_segment(schema)}/{_segment(table)}"

    def write_dir(self, schema: str, table: str, write_id: str) -> str:
        """``<root>/<schema>/<table>/<write_id>``: every file of one write lives below it."""
        if not write_id or "/" in write_id or write_id.startswith(("_", ".")):
            raise CatalogError(f"Invalid write id {write_id!r}", write_id=write_id)
        return f"{self.table_dir(schema, table)}/{write_id}"

    def remove_dir(self, path: str) -> None:
        """Delete a directory and everything below it; a missing one is fine."""
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_dir(path)

    def remove_file(self, path: str) -> None:
        """Delete one file; a missing one is fine."""
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(path)
