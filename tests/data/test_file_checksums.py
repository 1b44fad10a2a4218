"""Data files carry their size and CRC-32 from the write to every read:
random damage to a Parquet file reads as exactly the right rows or as a
``CorruptDataError`` naming the file and the table, never as fewer or other
rows, nor as a raw ``OSError``/``ArrowInvalid``. Files whose name records
no checksum (written by Spark or an Iceberg client) have their size checked,
and whatever damage their Parquet reader notices is typed the same way."""

from __future__ import annotations

import dataclasses
import os
import random
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from almanac import Catalog, CorruptDataError, CreateZone, Table, ValidationError
from almanac.data import (
    CommitShape,
    DataFile,
    TableData,
    conform,
    new_write_id,
    read_table,
    write_files,
)
from almanac.data.files import checksum_in_name
from tests.data.support import append, commit_plain_file, create, rows, table_data

DAMAGES = 150


def _expected(cat: Catalog) -> pa.Table:
    return read_table(cat, "T").sort_by("ID")


def _only_file(cat: Catalog) -> DataFile:
    current = table_data(cat).current(create_id(cat))
    assert current is not None and len(current.files) == 1
    return current.files[0]


def create_id(cat: Catalog) -> int:
    table = cat.catalog().table("T")
    assert table is not None
    return table.id


def _damage_loop(cat: Catalog, path: Path) -> tuple[int, int]:
    """Flip one random byte at DAMAGES seeded positions, reading after each:
    (reads refused, reads right); a wrong read fails the test."""
    good = path.read_bytes()
    expected = _expected(cat)
    rng = random.Random(7)
    refused = right = 0
    try:
        for position in rng.sample(range(len(good)), min(DAMAGES, len(good))):
            damaged = bytearray(good)
            damaged[position] ^= rng.randrange(1, 256)
            path.write_bytes(bytes(damaged))
            try:
                got = read_table(cat, "T")
            except CorruptDataError as exc:
                assert path.name in str(exc) and "table 'T'" in str(exc), exc
                refused += 1
                continue
            assert got.sort_by("ID").equals(expected), f"wrong rows after damage at {position}"
            right += 1
    finally:
        path.write_bytes(good)
    assert _expected(cat).equals(expected)
    return refused, right


def _one_tablet(cat: Catalog) -> Table:
    cat.execute([CreateZone(name="ONE", partitions=1)])
    return create(cat, zone="ONE")


def _many_rows(cat: Catalog) -> None:
    _one_tablet(cat)
    ids = list(range(2000))
    append(cat, ids)


def test_written_files_record_their_checksum_in_name_and_manifest(cat: Catalog) -> None:
    _many_rows(cat)
    file = _only_file(cat)
    assert file.checksum is not None and checksum_in_name(file.path) == file.checksum
    assert os.path.getsize(file.path) == file.size


def test_every_random_damage_to_a_checksummed_file_is_refused(cat: Catalog) -> None:
    _many_rows(cat)
    refused, right = _damage_loop(cat, Path(_only_file(cat).path))
    assert (refused, right) == (DAMAGES, 0)


def test_a_truncated_or_extended_file_is_refused(cat: Catalog) -> None:
    _many_rows(cat)
    path = Path(_only_file(cat).path)
    good = path.read_bytes()
    for damaged in (good[:-1], good + b"\0", good[: len(good) // 2]):
        path.write_bytes(damaged)
        with pytest.raises(CorruptDataError, match=r"holds \d+ bytes, its commit recorded"):
            read_table(cat, "T")
    path.write_bytes(good)
    assert len(read_table(cat, "T")) == 2000


def _commit_unchecksummed(cat: Catalog) -> DataFile:
    append(cat, list(range(2000)))
    written = _only_file(cat)
    return commit_plain_file(cat, "T", pq.read_table(written.path), written)


def test_damage_to_a_file_without_checksum_is_typed_or_unnoticed(cat: Catalog) -> None:
    """Without a checksum a flip inside a value may go unnoticed (that is
    what the checksum is for); every damage the reader does notice, and every
    change of size or row count, is a CorruptDataError naming file and table."""
    _one_tablet(cat)
    file = _commit_unchecksummed(cat)
    assert _only_file(cat).checksum is None
    path = Path(file.path)
    good = path.read_bytes()
    rng = random.Random(11)
    for position in rng.sample(range(len(good)), DAMAGES):
        damaged = bytearray(good)
        damaged[position] ^= rng.randrange(1, 256)
        path.write_bytes(bytes(damaged))
        try:
            got = read_table(cat, "T")
        except CorruptDataError as exc:
            assert path.name in str(exc) and "table 'T'" in str(exc), exc
            continue
        assert got.num_rows == 2000
    path.write_bytes(good[:-3])
    with pytest.raises(CorruptDataError, match=re.escape(path.name)):
        read_table(cat, "T")
    path.write_bytes(good)
    assert len(read_table(cat, "T")) == 2000


def test_a_commit_refuses_a_file_whose_size_or_checksum_is_not_its_own(cat: Catalog) -> None:
    table = _one_tablet(cat)
    data = TableData.for_catalog(cat)
    write_id = new_write_id()
    write_dir = data.warehouse.write_dir(table.id, write_id)
    data.staging.stage(write_id, write_dir, ttl_s=60.0)
    (file,) = write_files(data.warehouse, table, 1, conform(rows([1, 2]), table), write_dir)
    shape = CommitShape.of(cat.catalog(), table)
    for wrong in (
        dataclasses.replace(file, size=file.size + 1),
        dataclasses.replace(file, checksum=None),
        dataclasses.replace(file, checksum=(file.checksum or 0) ^ 1),
    ):
        with pytest.raises(ValidationError, match=re.escape(file.path)):
            data.commit(shape, write_id, [wrong], operation="append")
    data.commit(shape, write_id, [file], operation="append")
    assert len(read_table(cat, "T")) == 2


@pytest.mark.parametrize("replacement", ["fifo", "directory"])
def test_a_data_file_replaced_by_a_fifo_or_directory_is_refused_without_blocking(
    cat: Catalog, replacement: str
) -> None:
    """Opening a FIFO waits for a writer that never comes: the read must
    refuse it (and a directory) before opening, naming file and table."""
    _many_rows(cat)
    path = Path(_only_file(cat).path)
    good = path.read_bytes()
    path.unlink()
    if replacement == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    try:
        with pytest.raises(CorruptDataError, match=r"is not a regular file") as caught:
            read_table(cat, "T")
        assert path.name in str(caught.value) and "table 'T'" in str(caught.value)
    finally:
        if replacement == "fifo":
            path.unlink()
        else:
            path.rmdir()
        path.write_bytes(good)
    assert len(read_table(cat, "T")) == 2000
