"""The data pointer (``data.table.<id>``) and the snapshot records
(``data.snapshot.*``) are checksummed: a flipped bit in either, in a real
SQLite metastore, is a ``CorruptDataError`` naming the key, never another
set of rows; values written before the frame still read and take commits."""

from __future__ import annotations

import random
import re

import pytest

from almanac import Catalog, CorruptDataError
from almanac.data import expire_data, read_table
from almanac.data.snapshots import (
    _body,
    decode_pointer,
    decode_record,
    snapshot_key,
    table_key,
)
from tests.data.support import append, create, ids_of, table_data


def _flips(value: bytes, positions: list[int]) -> list[bytes]:
    out = []
    for position in positions:
        byte, bit = divmod(position, 8)
        damaged = bytearray(value)
        damaged[byte] ^= 1 << bit
        out.append(bytes(damaged))
    return out


def _table_with_history(cat: Catalog) -> int:
    table = create(cat)
    append(cat, list(range(100)))
    append(cat, list(range(100, 500)))
    return table.id


def _refused(cat: Catalog, key: str) -> None:
    with pytest.raises(CorruptDataError, match=re.escape(f"'{key}'")):
        read_table(cat, "T")


def test_every_bit_flip_in_the_pointer_is_refused(cat: Catalog) -> None:
    """The pointer is the parent every commit builds on: a damaged one stops
    the next commit. Reads take the snapshot their catalog version holds, so
    it never turns a read into another set of rows."""
    table_id = _table_with_history(cat)
    data = table_data(cat)
    store = data.store
    key = table_key(table_id)
    kv = store.get(key)
    assert kv is not None
    for i, damaged in enumerate(_flips(kv.value, list(range(len(kv.value) * 8)))):
        store.put(key, damaged)
        with pytest.raises(CorruptDataError, match=re.escape(f"'{key}'")):
            data.current_record(table_id)
        if i % 64 == 0:
            with pytest.raises(CorruptDataError, match=re.escape(f"'{key}'")):
                append(cat, [1000])
            assert len(read_table(cat, "T")) == 500
    store.put(key, kv.value)
    assert len(read_table(cat, "T")) == 500


def test_bit_flips_in_a_snapshot_record_are_refused(cat: Catalog) -> None:
    table_id = _table_with_history(cat)
    store = table_data(cat).store
    key = snapshot_key(table_id, 2)
    kv = store.get(key)
    assert kv is not None
    positions = random.Random(19).sample(range(len(kv.value) * 8), 300)
    for damaged in _flips(kv.value, positions):
        store.put(key, damaged)
        _refused(cat, key)
    store.put(key, kv.value)
    assert len(read_table(cat, "T")) == 500


def test_a_record_or_pointer_moved_to_another_key_is_refused(cat: Catalog) -> None:
    first = _table_with_history(cat)
    second = create(cat, "U").id
    append(cat, [1], name="U")
    store = table_data(cat).store
    older = store.get(snapshot_key(first, 1))
    assert older is not None
    store.put(snapshot_key(first, 2), older.value)
    _refused(cat, snapshot_key(first, 2))
    other = store.get(table_key(second))
    assert other is not None
    with pytest.raises(CorruptDataError, match=re.escape(f"'{table_key(first)}'")):
        decode_pointer(table_key(first), other.value)


def test_values_written_before_the_frame_still_read_and_take_commits(cat: Catalog) -> None:
    table_id = _table_with_history(cat)
    data = table_data(cat)
    store = data.store
    for snapshot_id in (1, 2):
        record = data.record(table_id, snapshot_id)
        assert record is not None
        store.put(snapshot_key(table_id, snapshot_id), _body(record))
    store.put(table_key(table_id), b"2")
    assert ids_of(read_table(cat, "T")) == list(range(500))
    assert ids_of(read_table(cat, "T", version=cat.latest_version)) == list(range(500))
    append(cat, [500])
    pointer = store.get(table_key(table_id))
    assert pointer is not None and pointer.value != b"3"
    assert decode_pointer(pointer.key, pointer.value) == 3
    assert ids_of(read_table(cat, "T")) == list(range(501))
    # An expiry rewrites the (legacy) current record under a compare on it.
    store.put(table_key(table_id), b"3")
    record = data.record(table_id, 3)
    assert record is not None
    store.put(snapshot_key(table_id, 3), _body(record))
    expire_data(cat, "T", older_than=cat.clock.now())
    assert [r.snapshot_id for r in data.records(table_id)] == [3]
    assert ids_of(read_table(cat, "T")) == list(range(501))


@pytest.mark.parametrize("value", [b"", b"02", b"-1", b"1 ", b"x", b"\xa1\x4d\xc3"])
def test_a_pointer_that_is_neither_frame_nor_decimal_is_refused(value: bytes) -> None:
    with pytest.raises(CorruptDataError, match=r"'data\.table\.7'"):
        decode_pointer("data.table.7", value)


@pytest.mark.parametrize("value", [b"", b"[]", b"null", b"\x00\x01", b'{"table": 1}'])
def test_a_record_that_is_neither_frame_nor_json_is_refused(value: bytes) -> None:
    with pytest.raises(CorruptDataError, match=r"'data\.snapshot\.7\.000000000001'"):
        decode_record("data.snapshot.7.000000000001", value)
