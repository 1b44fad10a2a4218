"""A full disk and a read-only file system under a SQLite catalog, made real
with small tmpfs mounts (which needs root: skipped where ``mount`` is
refused). A full disk is a ``StorageError`` that says so, never reported as
damage; a catalog on a read-only file system opens for reading and refuses
every change with ``ReadOnlyCatalogError``."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.exceptions import ForbiddenError

import almanac
from almanac import ReadOnlyCatalogError, StorageError
from almanac.data import read_table, write_table
from almanac.metastore import SqliteMetastore
from almanac.metastore.types import Put
from tests.durable.support import ROOT, table
from tests.iceberg_rest.test_rest import _serve


def _mount(directory: Path, options: str) -> None:
    directory.mkdir(exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[Path]:
    """A directory on its own small tmpfs, unmounted afterwards."""
    directory = tmp_path / "disk"
    _mount(directory, "size=4m")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=False)


def _fill(directory: Path) -> Path:
    """Take every free byte of the file system; returns the file to delete."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 512)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def _full_disk(error: StorageError) -> None:
    assert type(error) is StorageError, repr(error)
    assert error.context["rule"] == "disk-full"
    assert "is full" in str(error) and "free space" in str(error)


def test_a_commit_on_a_full_disk_is_a_storage_error_and_changes_nothing(mounted: Path) -> None:
    target = str(mounted / "catalog")
    with almanac.connect(target, delay_ms=0) as cat:
        cat.execute([table("A")])
        version = cat.latest_version
        filler = _fill(mounted)
        with pytest.raises(StorageError) as info:
            for i in range(200):  # the WAL may still have room for a few
                cat.execute([table(f"B{i}")])
        _full_disk(info.value)
        failed_at = cat.latest_version
        assert cat.catalog().table(f"B{failed_at - version}") is None
        filler.unlink()
        cat.execute([table("C")])
    with almanac.connect(target, delay_ms=0) as again:
        assert again.latest_version == failed_at + 1
        assert again.catalog().table("C") is not None


def test_opening_a_catalog_on_a_full_disk_is_a_storage_error(mounted: Path) -> None:
    target = str(mounted / "catalog")
    with almanac.connect(target, delay_ms=0) as cat:
        cat.execute([table("A")])
        version = cat.latest_version
    filler = _fill(mounted)
    with pytest.raises(StorageError) as info:
        almanac.connect(target, delay_ms=0)
    _full_disk(info.value)
    filler.unlink()
    with almanac.connect(target, delay_ms=0) as again:
        assert again.latest_version == version


def test_an_identity_record_that_cannot_be_written_is_no_damage(mounted: Path) -> None:
    """The record is rewritten on open when it is missing or behind: on a
    full disk that used to raise ``CatalogIdentityError`` (corruption)."""
    target = mounted / "catalog"
    with almanac.connect(str(target), delay_ms=0) as first:
        first.execute([table("A")])
        (target / "catalog.id").unlink()  # accepted loss: the next open writes a new one
        filler = _fill(mounted)
        with pytest.raises(StorageError) as info:
            almanac.connect(str(target), delay_ms=0)
        _full_disk(info.value)
        assert "catalog.id" in str(info.value)
        filler.unlink()
        with almanac.connect(str(target), delay_ms=0) as second:
            assert second.latest_version == first.latest_version
    assert (target / "catalog.id").exists()


_WRITER = """
import sys
import pyarrow as pa
import almanac
from almanac.data import write_table
from tests.durable.support import table

with almanac.connect(sys.argv[1], delay_ms=0) as cat:
    cat.execute([table("A")])
    write_table(cat, "A", pa.table({"ID": pa.array([1, 2, 3], pa.int64())}))
"""


def test_a_catalog_on_a_read_only_file_system_opens_for_reading(mounted: Path) -> None:
    target = mounted / "catalog"
    # Written by another process: this one would keep the writer lock file
    # open, and a file system with a file open for writing stays writable.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    subprocess.run([sys.executable, "-c", _WRITER, str(target)], env=env, cwd=ROOT, check=True)
    done = subprocess.run(
        ["mount", "-o", "remount,ro", str(mounted)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert not os.access(target, os.W_OK)  # even for root
    stored = {p: p.read_bytes() for p in target.rglob("*") if p.is_file()}

    with almanac.connect(str(target), delay_ms=0) as reader:
        version = reader.latest_version
        assert reader.catalog().table("A") is not None
        assert [row[1] for row in reader.sql("SHOW TABLES").rows] == ["A"]
        assert sorted(read_table(reader, "A").column("ID").to_pylist()) == [1, 2, 3]
        with pytest.raises(ReadOnlyCatalogError, match="is read-only") as info:
            reader.execute([table("B")])
        assert str(target / "catalog.db") in str(info.value)
        with pytest.raises(ReadOnlyCatalogError):
            write_table(reader, "A", pa.table({"ID": pa.array([4], pa.int64())}))
        assert reader.latest_version == version
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == stored


_CREATOR = """
import sys
import almanac

with almanac.connect(f"sqlite:///{sys.argv[1]}/catalog.db", warehouse=sys.argv[1] + "/wh") as cat:
    cat.sql("CREATE SCHEMA NS; CREATE TABLE NS.T (ID INT64 PRIMARY KEY, V INT32)")
"""


def test_a_change_to_a_read_only_catalog_over_http_is_a_403(mounted: Path) -> None:
    """Refused before anything is written, so a definite 403 through ``/v1``
    and Iceberg REST alike: a 500 made pyiceberg raise
    ``CommitStateUnknownException`` for a commit that could not have landed."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    subprocess.run([sys.executable, "-c", _CREATOR, str(mounted)], env=env, cwd=ROOT, check=True)
    done = subprocess.run(
        ["mount", "-o", "remount,ro", str(mounted)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    with _serve(mounted) as served:
        table = served.client().load_table("NS.T")
        with pytest.raises(ForbiddenError, match="is read-only"):
            table.transaction().set_properties(owner="ana").commit_transaction()
        with served.http() as http:
            reply = http.post(
                served.uri.removesuffix("/iceberg") + "/v1/sql",
                json={"sql": "CREATE TABLE NS.U (ID INT64 PRIMARY KEY)"},
            )
        assert reply.status_code == 403, reply.text
        assert reply.json()["error"] == "ReadOnlyCatalogError"
        assert served.client().load_table("NS.T").properties.get("owner") is None


def test_a_warehouse_that_takes_no_metadata_file_is_a_storage_error(tmp_path: Path) -> None:
    """The catalog writable, its warehouse on a read-only file system: an
    Iceberg REST commit that must write a ``metadata.json`` is refused with
    the file named, not a bare ``OSError`` (a 500 saying only that the
    server failed), and nothing changes."""
    served_dir = tmp_path / "served"
    served_dir.mkdir()
    _mount(served_dir / "wh", "size=4m")
    try:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
        subprocess.run(
            [sys.executable, "-c", _CREATOR, str(served_dir)], env=env, cwd=ROOT, check=True
        )
        with _serve(served_dir) as served:
            table = served.client().load_table("NS.T")
            rows = pa.schema(
                [pa.field("ID", pa.int64(), nullable=False), pa.field("V", pa.int32())]
            )
            table.append(pa.Table.from_pylist([{"ID": 1, "V": 1}], rows))
            done = subprocess.run(
                ["mount", "-o", "remount,ro", str(served_dir / "wh")],
                capture_output=True,
                text=True,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            with served.http() as http:
                reply = http.post(
                    "/v1/namespaces/NS/tables/T",
                    json={
                        "requirements": [],
                        "updates": [{"action": "set-properties", "updates": {"a": "b"}}],
                    },
                )
            message = reply.json()["error"]["message"]
            assert message.startswith("Cannot write Iceberg metadata file '"), reply.text
            assert "Read-only file system" in message
            assert "a" not in served.client().load_table("NS.T").properties
    finally:
        subprocess.run(["umount", "-l", str(served_dir / "wh")], check=False)


def test_a_store_opened_read_only_reads_and_refuses_every_write(tmp_path: Path) -> None:
    """The same code path without a mount: the store is told it is read-only
    (as it finds out for itself from a read-only file system or file)."""
    path = tmp_path / "store.db"
    with SqliteMetastore(path) as store:
        store.put("k", b"v")
        revision = store.revision
    before = path.read_bytes()
    with SqliteMetastore(path, read_only=True) as store:
        assert store.read_only
        got = store.get("k")
        assert got is not None and got.value == b"v"
        assert store.revision == revision
        writes: list[Callable[[], object]] = [
            lambda: store.put("k", b"w"),
            lambda: store.delete("k"),
            lambda: store.txn([], [Put("x", b"y")]),
            lambda: store.grant_lease(5),
            lambda: store.compact(revision),
        ]
        for write in writes:
            with pytest.raises(ReadOnlyCatalogError, match="read-only"):
                write()
        with pytest.raises(ReadOnlyCatalogError, match="read-only"), store.exclusive(1.0):
            pass
        assert store.get("k") == got
    assert path.read_bytes() == before


def test_a_path_with_a_leading_double_slash_opens_read_only(tmp_path: Path) -> None:
    """``sqlite:////dir/file.db`` names ``//dir/file.db``, the same file as
    ``/dir/file.db``: read-only it once became an SQLite URI whose authority
    was the first directory (``MetastoreError: invalid uri authority``)."""
    path = tmp_path / "store.db"
    with SqliteMetastore(path) as store:
        store.put("k", b"v")
    with SqliteMetastore(f"/{path}", read_only=True) as store:
        got = store.get("k")
        assert got is not None and got.value == b"v"
