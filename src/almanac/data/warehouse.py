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

Deleting goes through one guard (``remove_file``/``remove_dir``): a path is
deleted only if it is spelled below ``<root>/<table_id>/`` of the table it
belongs to and still lies there once resolved (``file:`` URIs, ``//``,
``..`` and symlinks), and only in a warehouse whose marker file
(``.almanac-warehouse``) names this catalog. Anything else is kept and
reported: a registered table's files outside the warehouse, another
catalog's files, a user's files under a mistyped ``--warehouse``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
import re
import uuid
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from almanac import _check as check
from almanac.errors import CatalogError, WarehouseOwnerError

__all__ = ["MARKER", "METADATA_DIR", "STAGED_MARKER", "Warehouse", "new_write_id"]

_log = logging.getLogger("almanac.data")

MARKER = ".almanac-warehouse"
"""File at the warehouse root holding the id of the catalog that owns it:
what proves a directory is this catalog's warehouse before anything in it
is deleted."""

STAGED_MARKER = "_STAGED"
"""File that ``Staging.stage`` puts in a write directory: the write once held
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
        self.owner: str | None = None
        """The catalog id the marker proved (``claim``); None: nothing is deleted."""
        self._catalog_id: str | None = None
        self._signs: Callable[[], bool] | None = None

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

    def make_metadata_dir(self, table_id: int) -> str:
        """Create ``<table_id>/metadata/`` (if missing) and return it: Iceberg
        engines (DuckDB) open their manifests there as plain files, with no
        ``mkdir``, before their first commit, so a created table must have it."""
        path = self.metadata_dir(table_id)
        try:
            self.fs.create_dir(path, recursive=True)
        except (OSError, pa.ArrowException) as exc:
            raise CatalogError(
                f"Cannot create the metadata directory '{path}' of table {table_id}: {exc}",
                table_id=table_id,
            ) from exc
        return path

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

    # -- ownership ---------------------------------------------------------------

    @property
    def marker(self) -> str:
        return f"{self.root.rstrip('/')}/{MARKER}"

    def _read_marker(self) -> str | None:
        try:
            with self.fs.open_input_stream(self.marker) as stream:
                return bytes(stream.read(256)).decode("utf-8", "replace").strip()
        except (OSError, pa.ArrowException):
            return None

    def claim(self, catalog_id: str, signs: Callable[[], bool]) -> bool:
        """Prove this is catalog ``catalog_id``'s warehouse: its marker names
        it, or there is no marker and the directory is empty (a new warehouse)
        or ``signs()`` finds this catalog's tables in it (a warehouse made
        before markers), in which case the marker is written. Never adopts a
        directory without a sign of the catalog; returns whether it is owned."""
        self._catalog_id, self._signs = catalog_id, signs
        found = self._read_marker()
        if found is None and (self._empty() or signs()):
            try:
                with self.fs.open_output_stream(self.marker) as out:
                    out.write(f"{catalog_id}\n".encode())
            except (OSError, pa.ArrowException) as exc:
                _log.warning("Cannot write the warehouse marker '%s': %s", self.marker, exc)
            found = self._read_marker()
        self.owner = catalog_id if found == catalog_id else None
        return self.owner is not None

    def _empty(self) -> bool:
        selector = pafs.FileSelector(self.root, allow_not_found=True)
        try:
            return all(i.base_name == MARKER for i in self.fs.get_file_info(selector))
        except (OSError, pa.ArrowException):
            return False

    def check_owner(self) -> None:
        """``WarehouseOwnerError`` unless the marker proves this catalog owns
        the warehouse: every deleter asks first, so a mistyped ``--warehouse``
        or another catalog's directory loses nothing."""
        if self.owner is not None:
            return
        if (
            self._catalog_id is not None
            and self._signs is not None
            and self.claim(self._catalog_id, self._signs)
        ):
            return
        found = self._read_marker()
        if self._catalog_id is None:
            why = "no catalog has claimed it in this process"
        elif found is None:
            why = (
                f"it has no marker '{MARKER}' and holds none of this catalog's tables (if it "
                f"is this catalog's, write the catalog id {self._catalog_id} into "
                f"'{self.marker}')"
            )
        else:
            why = f"its marker '{self.marker}' names catalog {found}, not {self._catalog_id}"
        raise WarehouseOwnerError(
            f"'{self.root}' is not proven to be this catalog's warehouse: {why}; nothing "
            "in it is deleted",
            warehouse=self.root,
            marker=found,
            catalog_id=self._catalog_id,
        )

    # -- the deletion guard ------------------------------------------------------

    def normal(self, path: str) -> str | None:
        """``path`` as this warehouse's filesystem names it: a ``file:`` URI
        (or the warehouse's own scheme) stripped, ``//``, ``.`` and ``..``
        collapsed; None for a path of another filesystem."""
        if not isinstance(path, str) or not path or "\x00" in path:
            return None
        scheme, sep, rest = path.partition("://")
        if sep and "/" not in scheme:
            own = self.uri.partition("://")[0] if "://" in self.uri else "file"
            if scheme.lower() != own.lower():
                return None
            if own.lower() == "file":
                host, _, tail = rest.partition("/")
                if host not in ("", "localhost"):
                    return None
                rest = "/" + tail
            path = rest
        elif path.lower().startswith("file:"):
            path = path[len("file:") :]
        if isinstance(self.fs, pafs.LocalFileSystem) and not path.startswith("/"):
            return None
        collapsed = posixpath.normpath(path)
        return "/" + collapsed.lstrip("/") if collapsed.startswith("//") else collapsed

    def _real(self, path: str) -> str:
        return os.path.realpath(path) if isinstance(self.fs, pafs.LocalFileSystem) else path

    def inside(self, path: str, table_id: int | None, *, itself: bool = False) -> str | None:
        """The normal spelling of ``path`` if it lies below the table's
        directory (below the root for ``table_id=None``), as spelled and as
        resolved; ``itself`` admits the directory itself. None otherwise."""
        normal = self.normal(path)
        if normal is None:
            return None
        base = self.root if table_id is None else self.table_dir(table_id)
        real_base = self._real(base)

        def below(p: str, b: str) -> bool:
            return p.startswith(b.rstrip("/") + "/") or (itself and p == b)

        if below(normal, base) and below(self._real(normal), real_base):
            return normal
        return None

    def within(self, path: str) -> bool:
        """Whether ``path`` names the warehouse or anything in it, as spelled
        or once resolved: what a registered table's files must never do."""
        normal = self.normal(path)
        if normal is None:
            return False
        root, real_root = self.root.rstrip("/"), self._real(self.root).rstrip("/")
        return any(
            p == b or p.startswith(b + "/") or b == ""
            for p, b in ((normal, root), (self._real(normal), real_root))
        )

    def _guard(self, path: str, table_id: int | None, itself: bool) -> str | None:
        self.check_owner()
        normal = self.inside(path, table_id, itself=itself)
        if normal is None or normal.rsplit("/", 1)[-1] == MARKER:
            where = "the warehouse" if table_id is None else f"the directory of table {table_id}"
            _log.warning("Kept '%s': it is not inside %s of '%s'", path, where, self.root)
            return None
        return normal

    def remove_dir(self, path: str, table_id: int | None, *, itself: bool = False) -> bool:
        """Delete a directory below table ``table_id``'s directory (the table
        directory itself with ``itself``) and everything below it; a missing
        one is fine. False (nothing deleted) for one outside it.
        ``table_id=None`` is for the old layout's directories (``upgrade``)."""
        normal = self._guard(path, table_id, itself)
        if normal is None:
            return False
        return self._remove(self.fs.delete_dir, normal)

    def remove_file(
        self, path: str, table_id: int | None, *, older_than_ns: int | None = None
    ) -> bool:
        """Delete one file below table ``table_id``'s directory; a missing one
        is fine. False (nothing deleted) for one outside it (see the module).

        With ``older_than_ns``, only while the file is still older than that:
        a client may still be writing a file the janitor listed as old, and
        commit it once done. On a local filesystem the file is first renamed
        aside and its age read under the new name, so a commit either finds
        it gone or sees the age the decision saw; a young one is put back."""
        normal = self._guard(path, table_id, False)
        if normal is None:
            return False
        if older_than_ns is None:
            return self._remove(self.fs.delete_file, normal)
        if not isinstance(self.fs, pafs.LocalFileSystem):
            info = self.fs.get_file_info(normal)
            if info.mtime_ns is not None and info.mtime_ns >= older_than_ns:
                return False
            return self._remove(self.fs.delete_file, normal)
        aside = f"{posixpath.dirname(normal)}/.{uuid.uuid4().hex}.collected"
        try:
            if os.stat(normal, follow_symlinks=False).st_mtime_ns >= older_than_ns:
                return False
            os.rename(normal, aside)
        except FileNotFoundError:
            return True
        except OSError as exc:
            _log.warning("Could not delete '%s': %s", path, exc)
            return False
        if os.stat(aside, follow_symlinks=False).st_mtime_ns >= older_than_ns:
            os.rename(aside, normal)  # written meanwhile: a client's, in flight
            return False
        return self._remove(os.unlink, aside)

    def remove_empty_dirs(self, path: str, table_id: int) -> bool:
        """Remove the directory tree at ``path`` below table ``table_id``'s
        directory if it holds no file: each directory goes only while empty
        (``rmdir``), so a file written into it meanwhile stays. True when it
        is gone; False on a filesystem without real directories."""
        normal = self._guard(path, table_id, False)
        if normal is None or not isinstance(self.fs, pafs.LocalFileSystem):
            return False
        for directory, _, _ in os.walk(normal, topdown=False):
            with contextlib.suppress(OSError):
                os.rmdir(directory)
        return not os.path.lexists(normal)

    @staticmethod
    def _remove(delete: Callable[[str], None], path: str) -> bool:
        """A missing path is gone already; a failure (a directory that filled
        meanwhile, permissions) is logged and reported as kept, so one path
        never stops a janitor run."""
        try:
            delete(path)
        except FileNotFoundError:
            pass
        except (OSError, pa.ArrowException) as exc:
            _log.warning("Could not delete '%s': %s", path, exc)
            return False
        return True
