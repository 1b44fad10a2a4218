"""Bad input raises ``SerializationError`` naming the problem and its byte offset."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import replace
from typing import Any, cast

import pytest

from almanac.errors import SerializationError
from almanac.model import entries as e
from almanac.model.descriptors import ConstantDefault, Schema
from almanac.model.request_ids import Checkpoint
from almanac.serialization import REGISTRY, decode, decode_catalog, decode_update, encode
from almanac.serialization.io import Writer

from . import EXAMPLES, PRICE, SCHEMA, TABLE


def _raises(data: bytes, pattern: str, offset: int) -> SerializationError:
    with pytest.raises(SerializationError, match=pattern) as info:
        decode(data)
    assert info.value.context["offset"] == offset
    assert str(info.value).endswith(f"at byte {offset}")
    return info.value


def _header(type_id: int, version: int = 1, protocol: int = 1) -> Writer:
    w = Writer()
    w.u16(protocol)
    w.u16(type_id)
    w.uvarint(version)
    return w


def _constant(body: bytes) -> bytes:
    """A ConstantDefault v1 whose value bytes are ``body`` (tag first)."""
    return bytes(_header(REGISTRY.type_id(ConstantDefault))) + body


def test_trailing_garbage() -> None:
    raw = encode(SCHEMA)
    _raises(raw + b"\x00junk", "5 trailing bytes after the object", len(raw))


def test_unknown_type_id() -> None:
    _raises(bytes(_header(0x7F00)) + b"\x00", r"Unknown object type id 32512", 2)


def test_type_id_zero_is_unknown() -> None:
    _raises(b"\x00\x01\x00\x00\x01", r"Unknown object type id 0", 2)


def test_unknown_serializer_version() -> None:
    data = bytes(_header(1, version=9)) + encode(SCHEMA)[5:]
    err = _raises(data, r"Unknown serializer version 9 of Schema \(type id 1\)", 4)
    assert "reads versions 1..1" in str(err)


def test_serializer_version_zero_is_unknown() -> None:
    _raises(bytes(_header(1, version=0)) + encode(SCHEMA)[5:], "Unknown serializer version 0", 4)


def test_protocol_version_mismatch() -> None:
    data = b"\x00\x02" + encode(SCHEMA)[2:]
    _raises(data, r"Unsupported protocol version 2 \(this build reads 1\)", 0)


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x01", b"\x00\x01\x00", b"\x00\x01\x00\x01"])
def test_truncated_header(data: bytes) -> None:
    with pytest.raises(SerializationError, match="Truncated input"):
        decode(data)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_truncation_of_an_example_fails_cleanly(name: str) -> None:
    raw = encode(EXAMPLES[name])
    for end in range(len(raw)):
        with pytest.raises(SerializationError, match=r"at byte \d+$"):
            decode(raw[:end])


def test_typed_decoders_refuse_other_types() -> None:
    with pytest.raises(
        SerializationError, match=r"Found Schema \(type id 1\) where CatalogVersion was expected"
    ):
        decode_catalog(encode(SCHEMA))
    with pytest.raises(SerializationError, match="where VersionedUpdate was expected"):
        decode_update(encode(e.TableDropped(3)))


def test_nested_slot_refuses_a_wrong_type() -> None:
    raw = bytearray(encode(e.ColumnAltered(5, PRICE)))
    column_at = 6  # header (5) + table id svarint (1)
    assert raw[column_at : column_at + 2] == b"\x00\x02"
    raw[column_at + 1] = 1  # Schema's type id where a Column must be
    _raises(bytes(raw), r"Found Schema \(type id 1\) where Column was expected", column_at)


def test_entry_slot_refuses_a_descriptor() -> None:
    w = _header(REGISTRY.type_id(e.VersionedUpdate))
    for field in (1, 2, 3):
        w.svarint(field)
    w.uvarint(1)
    REGISTRY.write_nested(w, SCHEMA)
    _raises(bytes(w), "where .*SchemaCreated.* was expected", 9)


def test_unknown_enum_value() -> None:
    raw = bytearray(encode(PRICE))
    type_at = 5 + 1 + 1 + len("PRICE")
    raw[type_at] = 99
    _raises(bytes(raw), "Unknown ColumnType value 99", type_at)


def test_duplicate_map_keys_are_refused() -> None:
    w = _header(REGISTRY.type_id(type(EXAMPLES["CatalogVersion"])))
    for field in (1, 2, 3):
        w.svarint(field)
    w.u8(0)  # no default zone
    w.uvarint(0)  # schemas_by_id
    w.uvarint(2)  # schema_names with the same key twice
    at = len(w)
    for _ in range(2):
        w.string("PUBLIC")
        w.svarint(1)
    second = at + 8
    _raises(bytes(w), "Keys of schema_names are not in strictly increasing order", second)


@pytest.mark.parametrize(
    ("body", "pattern"),
    [
        ("c8", "Unknown constant value tag 200"),
        ("03020001", "Integer constant is not minimally encoded"),
        ("0300", "Integer constant is not minimally encoded"),
        ("0500" + "808080808080808040" + "0131", "Decimal is outside the range"),
        ("0500" + "00" + "023031", "Invalid decimal digits"),
        ("0500" + "00" + "00", "Decimal has no digits"),
        ("0500" + "00" + "0178", "Invalid decimal digits"),
        ("0504" + "0130", "Invalid NaN payload digits"),
        ("0508", "Unknown decimal kind 4"),
        ("0800", "Date ordinal 0 is not in"),
        ("09" + "80c0ddeec102" + "00", "Time of day 86400000000"),
        ("09" + "00" + "01" + "8080bbdd8305", "not within ±24 hours"),
        ("0b" + "00" * 15, "Truncated input: a UUID needs 16 bytes"),
    ],
)
def test_invalid_constant_values(body: str, pattern: str) -> None:
    with pytest.raises(SerializationError, match=pattern):
        decode(_constant(bytes.fromhex(body)))


# -- encoding errors ------------------------------------------------------------------


class _Berlin(dt.tzinfo):
    def utcoffset(self, when: dt.datetime | None) -> dt.timedelta:
        return dt.timedelta(hours=1)

    def dst(self, when: dt.datetime | None) -> dt.timedelta:
        return dt.timedelta(0)

    def tzname(self, when: dt.datetime | None) -> str:
        return "CET"


def _unchecked_constant(value: object) -> ConstantDefault:
    """A constant that construction would refuse: the serializer still defends itself."""
    obj = object.__new__(ConstantDefault)
    object.__setattr__(obj, "value", value)
    return obj


@pytest.mark.parametrize(
    ("obj", "pattern"),
    [
        (object(), "No serializer is registered for object"),
        (_unchecked_constant([1, 2]), "Cannot serialize a constant of type list"),
        (_unchecked_constant(dt.time(1, tzinfo=_Berlin())), "not a fixed UTC offset"),
        (_unchecked_constant("\udcff"), "not valid Unicode"),
        (replace(SCHEMA, id=2**63), "outside the signed 64-bit range"),
        (replace(TABLE, columns=cast(Any, (PRICE, Schema(1, "X")))), None),
    ],
)
def test_unencodable_objects(obj: object, pattern: str | None) -> None:
    if pattern is None:
        # A Schema where a Column belongs writes, but can never be read back.
        with pytest.raises(SerializationError, match=re.escape("where Column was expected")):
            decode(encode(obj))
        return
    with pytest.raises(SerializationError, match=pattern):
        encode(obj)


def test_a_checkpoint_with_a_repeated_request_id_is_refused() -> None:
    checkpoint = cast(Checkpoint, EXAMPLES["Checkpoint"])
    record = checkpoint.requests[0]
    data = encode(replace(checkpoint, requests=(record, record)))
    second = data.rindex(b"\x03a-1")  # the repeated id's length byte, then the id
    _raises(data, "Request ids of a checkpoint are not in strictly increasing order", second)


def test_an_update_with_a_bad_applied_flag_is_refused() -> None:
    data = bytearray(encode(EXAMPLES["VersionedUpdate"]))
    data[-1] = 2  # the last applied flag
    _raises(bytes(data), "Invalid boolean byte 0x02", len(data) - 1)
