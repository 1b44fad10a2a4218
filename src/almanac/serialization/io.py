"""Byte-level primitives of the wire format: a growing writer and an offset reader.

Encodings (all multi-byte fixed-width values are big-endian):

* ``uvarint`` — unsigned LEB128, at most 10 bytes, value < 2**64, and
  canonical (no redundant trailing ``0x80``/``0x00`` groups), so that one value
  has exactly one encoding and decoded bytes re-encode identically.
* ``svarint`` — a signed 64-bit integer, zigzag-mapped onto ``uvarint``; used
  for every integer field of a descriptor, so that small negatives stay small.
* ``boolean`` — one byte, 0 or 1; anything else is corruption.
* ``float64`` — 8-byte IEEE 754, bit-exact (NaN payloads and signed zero kept).
* ``string`` / ``blob`` — a ``uvarint`` length, then strict UTF-8 / raw bytes.
* optional values — a ``boolean`` presence flag, then the value.
* sequences — a ``uvarint`` count, then the items.

The reader checks every length and count against the bytes that remain
before it slices or allocates, so a corrupt length prefix fails at once
instead of exhausting memory. It reads from ``bytes`` with an integer offset:
indexing ``bytes`` yields an ``int`` directly, and slicing a short string out
of ``bytes`` measured faster than going through ``memoryview``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NoReturn

from almanac.errors import SerializationError

__all__ = ["INT64_MAX", "INT64_MIN", "UINT64_MAX", "Reader", "Writer"]


UINT64_MAX = 2**64 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
_MAX_VARINT_BYTES = 10

_F64 = struct.Struct(">d")
_pack_f64 = _F64.pack
_unpack_f64 = _F64.unpack_from


class Writer(bytearray):
    """An append-only buffer; being a ``bytearray`` saves an attribute lookup per call."""

    __slots__ = ()

    def u8(self, value: int) -> None:
        self.append(value)

    def u16(self, value: int) -> None:
        if not 0 <= value <= 0xFFFF:
            raise SerializationError(f"Value {value} does not fit in 2 bytes")
        self.append(value >> 8)
        self.append(value & 0xFF)

    def uvarint(self, value: int) -> None:
        if 0 <= value < 0x80:
            self.append(value)
            return
        if not 0 <= value <= UINT64_MAX:
            raise SerializationError(f"Value {value} is outside the unsigned 64-bit range")
        while value >= 0x80:
            self.append((value & 0x7F) | 0x80)
            value >>= 7
        self.append(value)

    def svarint(self, value: int) -> None:
        if 0 <= value < 0x40:
            self.append(value << 1)
            return
        if not INT64_MIN <= value <= INT64_MAX:
            raise SerializationError(f"Integer {value} is outside the signed 64-bit range")
        zigzag = value << 1 if value >= 0 else (~value << 1) | 1
        if zigzag < 0x80:
            self.append(zigzag)
        elif zigzag < 0x4000:
            self.append((zigzag & 0x7F) | 0x80)
            self.append(zigzag >> 7)
        else:
            self.uvarint(zigzag)

    def opt_svarint(self, value: int | None) -> None:
        if value is None:
            self.append(0)
        else:
            self.append(1)
            self.svarint(value)

    def boolean(self, value: bool) -> None:
        self.append(1 if value else 0)

    def float64(self, value: float) -> None:
        try:
            self += _pack_f64(value)
        except (OverflowError, struct.error) as exc:
            raise SerializationError(f"Value {value!r} is not a 64-bit float: {exc}") from None

    def string(self, value: str) -> None:
        try:
            raw = value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise SerializationError(f"String {value!r} is not valid Unicode: {exc}") from None
        if len(raw) < 0x80:
            self.append(len(raw))
        else:
            self.uvarint(len(raw))
        self += raw

    def blob(self, value: bytes) -> None:
        self.uvarint(len(value))
        self += value

    def strings(self, values: Sequence[str]) -> None:
        self.uvarint(len(values))
        for value in values:
            self.string(value)

    def svarints(self, values: Sequence[int]) -> None:
        self.uvarint(len(values))
        for value in values:
            self.svarint(value)


class Reader:
    """Reads primitives from ``data`` starting at ``pos``; every failure is a
    ``SerializationError`` that names the problem and its byte offset."""

    __slots__ = ("data", "end", "pos")

    def __init__(self, data: bytes | bytearray | memoryview, pos: int = 0) -> None:
        self.data = data if type(data) is bytes else bytes(data)
        self.end = len(self.data)
        self.pos = pos

    # -- errors --------------------------------------------------------------

    def fail(self, problem: str, offset: int | None = None) -> NoReturn:
        at = self.pos if offset is None else offset
        raise SerializationError(f"{problem} at byte {at}", offset=at)

    def _truncated(self, what: str, need: int, offset: int) -> NoReturn:
        left = self.end - offset
        self.fail(f"Truncated input: {what} needs {need} bytes but {left} remain", offset)

    def expect_end(self) -> None:
        if self.pos != self.end:
            self.fail(f"{self.end - self.pos} trailing bytes after the object")

    # -- fixed width ---------------------------------------------------------

    def u8(self) -> int:
        pos = self.pos
        if pos >= self.end:
            self._truncated("a byte", 1, pos)
        self.pos = pos + 1
        return self.data[pos]

    def u16(self) -> int:
        pos = self.pos
        if pos + 2 > self.end:
            self._truncated("a 2-byte integer", 2, pos)
        self.pos = pos + 2
        data = self.data
        return (data[pos] << 8) | data[pos + 1]

    def fixed(self, size: int, what: str) -> bytes:
        pos = self.pos
        if size > self.end - pos:
            self._truncated(what, size, pos)
        self.pos = pos + size
        return self.data[pos : pos + size]

    def boolean(self) -> bool:
        pos = self.pos
        if pos >= self.end:
            self._truncated("a boolean", 1, pos)
        value = self.data[pos]
        if value > 1:
            self.fail(f"Invalid boolean byte {value:#04x}", pos)
        self.pos = pos + 1
        return value == 1

    def float64(self) -> float:
        pos = self.pos
        if pos + 8 > self.end:
            self._truncated("a 64-bit float", 8, pos)
        self.pos = pos + 8
        value: float = _unpack_f64(self.data, pos)[0]
        return value

    # -- varints -------------------------------------------------------------
    # One- and two-byte varints (values below 16,384: ids, lengths, counts) are
    # decoded inline; a method call costs more than the arithmetic.

    def uvarint(self) -> int:
        pos = self.pos
        if pos + 1 < self.end:
            data = self.data
            byte = data[pos]
            if byte < 0x80:
                self.pos = pos + 1
                return byte
            second = data[pos + 1]
            if 0 < second < 0x80:
                self.pos = pos + 2
                return (byte & 0x7F) | (second << 7)
        return self._uvarint_slow()

    def _uvarint_slow(self) -> int:
        data, end, start = self.data, self.end, self.pos
        pos, shift, result = start, 0, 0
        while True:
            if pos >= end:
                self.fail("Truncated input: varint is not terminated", start)
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
            if shift >= 7 * _MAX_VARINT_BYTES:
                self.fail(f"Varint longer than {_MAX_VARINT_BYTES} bytes", start)
        if byte == 0 and pos - start > 1:
            self.fail("Non-canonical varint (redundant trailing zero group)", start)
        if result > UINT64_MAX:
            self.fail("Varint exceeds the unsigned 64-bit range", start)
        self.pos = pos
        return result

    def svarint(self) -> int:
        pos = self.pos
        if pos + 1 < self.end:
            data = self.data
            byte = data[pos]
            if byte < 0x80:
                self.pos = pos + 1
                return (byte >> 1) ^ -(byte & 1)
            second = data[pos + 1]
            if 0 < second < 0x80:
                self.pos = pos + 2
                raw = (byte & 0x7F) | (second << 7)
                return (raw >> 1) ^ -(raw & 1)
        raw = self._uvarint_slow()
        return (raw >> 1) ^ -(raw & 1)

    def opt_svarint(self) -> int | None:
        pos = self.pos
        if pos < self.end and self.data[pos] == 0:
            self.pos = pos + 1
            return None
        return self.svarint() if self.boolean() else None

    def count(self, what: str, min_item_size: int = 1) -> int:
        """A sequence length, refused when the remaining bytes cannot hold that many items."""
        start = self.pos
        n = self.uvarint()
        if n * min_item_size > self.end - self.pos:
            self.fail(
                f"{what} count {n} exceeds what the remaining {self.end - self.pos} bytes can hold",
                start,
            )
        return n

    # -- variable width ------------------------------------------------------

    def string(self) -> str:
        start = pos = self.pos
        data = self.data
        if pos < self.end and data[pos] < 0x80:
            n = data[pos]
            pos += 1
        else:
            n = self.uvarint()
            pos = self.pos
        if n > self.end - pos:
            self._truncated("a string", n, pos)
        self.pos = pos + n
        try:
            return data[pos : pos + n].decode("utf-8")
        except UnicodeDecodeError as exc:
            self.fail(f"String is not valid UTF-8 ({exc.reason})", start)

    def blob(self) -> bytes:
        n = self.uvarint()
        return self.fixed(n, "a byte string")

    def strings(self) -> tuple[str, ...]:
        n = self.count("string")
        read = self.string
        return tuple([read() for _ in range(n)])

    def svarints(self) -> tuple[int, ...]:
        n = self.count("integer")
        read = self.svarint
        return tuple([read() for _ in range(n)])
