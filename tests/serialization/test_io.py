"""The byte primitives: exact encodings, canonical forms and bounded reads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from almanac.errors import SerializationError
from almanac.serialization.io import INT64_MAX, INT64_MIN, UINT64_MAX, Reader, Writer


def _written(fn_name: str, *args: object) -> bytes:
    w = Writer()
    getattr(w, fn_name)(*args)
    return bytes(w)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (1, "01"),
        (127, "7f"),
        (128, "8001"),
        (300, "ac02"),
        (16383, "ff7f"),
        (16384, "808001"),
        (UINT64_MAX, "ffffffffffffffffff01"),
    ],
)
def test_uvarint_encoding(value: int, encoded: str) -> None:
    assert _written("uvarint", value).hex() == encoded
    r = Reader(bytes.fromhex(encoded))
    assert r.uvarint() == value
    r.expect_end()


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, "00"), (-1, "01"), (1, "02"), (-64, "7f"), (64, "8001"), (INT64_MIN, "ff" * 9 + "01")],
)
def test_svarint_zigzag(value: int, encoded: str) -> None:
    assert _written("svarint", value).hex() == encoded
    assert Reader(bytes.fromhex(encoded)).svarint() == value


@given(st.integers(INT64_MIN, INT64_MAX))
def test_svarint_round_trip(value: int) -> None:
    r = Reader(_written("svarint", value))
    assert r.svarint() == value
    r.expect_end()


@given(st.integers(0, UINT64_MAX))
def test_uvarint_round_trip(value: int) -> None:
    r = Reader(_written("uvarint", value))
    assert r.uvarint() == value
    r.expect_end()


@pytest.mark.parametrize(
    ("hex_bytes", "problem"),
    [
        ("8000", "Non-canonical varint"),
        ("ff00", "Non-canonical varint"),
        ("808000", "Non-canonical varint"),
        ("80", "not terminated"),
        ("ffff", "not terminated"),
        ("ff" * 10 + "01", "longer than 10 bytes"),
        ("ffffffffffffffffff02", "exceeds the unsigned 64-bit range"),
    ],
)
def test_bad_varints(hex_bytes: str, problem: str) -> None:
    for method in (Reader.uvarint, Reader.svarint):
        with pytest.raises(SerializationError, match=problem) as info:
            method(Reader(bytes.fromhex(hex_bytes)))
        assert info.value.context["offset"] == 0


def test_out_of_range_integers_are_refused_when_writing() -> None:
    with pytest.raises(SerializationError, match="signed 64-bit"):
        Writer().svarint(INT64_MAX + 1)
    with pytest.raises(SerializationError, match="unsigned 64-bit"):
        Writer().uvarint(-1)
    with pytest.raises(SerializationError, match="2 bytes"):
        Writer().u16(0x10000)


def test_strings_and_blobs() -> None:
    w = Writer()
    w.string("é")
    w.blob(b"\x00\x01")
    w.strings(("a", ""))
    assert bytes(w).hex() == "02c3a9" + "020001" + "02" + "0161" + "00"
    r = Reader(bytes(w))
    assert (r.string(), r.blob(), r.strings()) == ("é", b"\x00\x01", ("a", ""))
    r.expect_end()


@pytest.mark.parametrize("raw", ["02c328", "03eda080", "02c0af", "01ff"])
def test_invalid_utf8_is_a_serialization_error(raw: str) -> None:
    with pytest.raises(SerializationError, match="not valid UTF-8"):
        Reader(bytes.fromhex(raw)).string()


def test_unencodable_string_is_a_serialization_error() -> None:
    with pytest.raises(SerializationError, match="not valid Unicode"):
        Writer().string("\ud800")


def test_lengths_are_bounded_by_the_remaining_input() -> None:
    huge = bytes(_written("uvarint", 2**62))
    with pytest.raises(SerializationError, match="Truncated input"):
        Reader(huge + b"abc").string()
    with pytest.raises(SerializationError, match="Truncated input"):
        Reader(huge + b"abc").blob()
    with pytest.raises(SerializationError, match="count"):
        Reader(huge + b"abc").strings()
    with pytest.raises(SerializationError, match="count"):
        Reader(_written("uvarint", 2) + b"\x00").count("item")


def test_booleans_are_zero_or_one() -> None:
    r = Reader(b"\x00\x01\x02")
    assert r.boolean() is False
    assert r.boolean() is True
    with pytest.raises(SerializationError, match="Invalid boolean byte 0x02 at byte 2"):
        r.boolean()


def test_truncated_fixed_width_values() -> None:
    with pytest.raises(SerializationError, match="64-bit float"):
        Reader(b"\x00" * 7).float64()
    with pytest.raises(SerializationError, match="2-byte integer"):
        Reader(b"\x00").u16()
    with pytest.raises(SerializationError, match="a byte"):
        Reader(b"").u8()


def test_float64_is_big_endian_ieee() -> None:
    assert _written("float64", 1.0).hex() == "3ff0000000000000"
    assert Reader(bytes.fromhex("3ff0000000000000")).float64() == 1.0


def test_trailing_bytes() -> None:
    r = Reader(b"\x01\x02\x03")
    r.u8()
    with pytest.raises(SerializationError, match="2 trailing bytes after the object at byte 1"):
        r.expect_end()
