"""A damaged SQLite file (its header, its schema page, the pages after it)
is a ``CatalogError`` naming the file when the catalog opens or reads, never
a ``UnicodeDecodeError`` or another bare exception.

The damage is made as a disk makes it: bytes of the closed file flipped in
place, under SQLite, never through it.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

import almanac
from almanac import CatalogError, StorageError
from tests.durable.support import table

PAGE = 4096


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pages") / "catalog"
    with almanac.connect(str(path)) as cat:
        cat.execute([table("T"), table("U")])
        cat.sql("CREATE INDEX I ON T (V)")
    return path


def _copy(pristine: Path, target: Path) -> Path:
    shutil.copytree(pristine, target)
    return target / "catalog.db"


def _open_and_read(path: Path) -> None:
    with almanac.connect(str(path)) as cat:
        cat.catalog()
        cat.sql("SHOW TABLES")


def test_a_schema_text_that_is_not_utf8_is_a_storage_error_naming_the_file(
    pristine: Path, tmp_path: Path
) -> None:
    """SQLite quotes the damaged schema text in its error message; bytes
    that are not UTF-8 there made Python's sqlite3 raise UnicodeDecodeError."""
    db = _copy(pristine, tmp_path / "d")
    data = bytearray(db.read_bytes())
    at = data.find(b"kv_by_lease ON kv")
    assert 0 < at < PAGE, "the index's schema text is on page 1"
    at += len(b"kv_by_lease ")
    data[at : at + 2] = b"\xff\xfe"  # "ON" -> two bytes that are no UTF-8
    db.write_bytes(bytes(data))
    with pytest.raises(StorageError) as info:
        _open_and_read(tmp_path / "d")
    assert str(db) in str(info.value)
    assert "UnicodeDecodeError" not in str(info.value)


def test_flipped_bytes_in_the_first_pages_open_or_raise_a_catalog_error(
    pristine: Path, tmp_path: Path
) -> None:
    rng = random.Random(20261127)
    size = (pristine / "catalog.db").stat().st_size
    outcomes = {"opened": 0, "refused": 0}
    for trial in range(80):
        target = tmp_path / f"t{trial}"
        db = _copy(pristine, target)
        data = bytearray(db.read_bytes())
        for _ in range(rng.randint(1, 6)):
            # the schema page (page 1, after the 100-byte file header) most
            # often, then the header and the next pages
            where = rng.random()
            if where < 0.6:
                at = rng.randrange(100, PAGE)
            elif where < 0.7:
                at = rng.randrange(0, 100)
            else:
                at = rng.randrange(PAGE, min(size, 4 * PAGE))
            data[at] ^= rng.choice([0x80, 0xFF, 1 << rng.randrange(8)])
        db.write_bytes(bytes(data))
        try:
            _open_and_read(target)
        except CatalogError:
            outcomes["refused"] += 1
        except Exception as exc:
            raise AssertionError(f"trial {trial}: {type(exc).__name__}: {exc}") from exc
        else:
            outcomes["opened"] += 1
        shutil.rmtree(target)
    assert outcomes["refused"] > 10, outcomes
