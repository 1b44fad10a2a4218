"""Tagged encoding of the Python values a column can hold (constant defaults).

Each value is one tag byte, then its body. Tags are part of the wire
contract: never renumber one, only add new ones.

=====  ==========  ===========================================================
 tag   type        body
=====  ==========  ===========================================================
   0   None        —
   1   False       —
   2   True        —
   3   int         uvarint length, then minimal big-endian two's complement
                   (any size: Python ints are unbounded, column types are not)
   4   float       8-byte IEEE 754, bit-exact (NaN payload, -0.0, ±inf)
   5   Decimal     kind|sign byte; finite: svarint exponent + ASCII digits;
                   NaN/sNaN: ASCII payload digits; ±Infinity: nothing more
   6   str         uvarint length, UTF-8
   7   bytes       uvarint length, raw
   8   date        uvarint proleptic ordinal
   9   time        uvarint microsecond of day, then the offset (see below)
  10   datetime    uvarint ordinal, uvarint microsecond of day, then the offset
  11   UUID        16 raw bytes
=====  ==========  ===========================================================

An offset is a boolean presence flag, then an svarint of microseconds east
of UTC. Only fixed offsets (``datetime.timezone``) are accepted: a named zone
with DST rules has no stable meaning across machines. A timezone's display
name and a value's ``fold`` are not written: neither takes part in equality
for naive or fixed-offset values, and leaving them out keeps one encoding
per value. Equal wall time *and* offset make equal bytes; the same instant
written with two offsets stays two values, because the offset is part of
what the user wrote.

Every body is canonical (minimal integer length, no leading zero digits,
flag bytes 0/1 only), so a decoded value re-encodes to the same bytes.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Callable
from typing import Any

from almanac.errors import SerializationError
from almanac.serialization.io import Reader, Writer

__all__ = ["read_value", "write_value"]

_NONE, _FALSE, _TRUE, _INT, _FLOAT, _DECIMAL, _STR, _BYTES = range(8)
_DATE, _TIME, _DATETIME, _UUID = range(8, 12)

_DEC_FINITE, _DEC_INFINITY, _DEC_NAN, _DEC_SNAN = range(4)
_DEC_KINDS = {"F": _DEC_INFINITY, "n": _DEC_NAN, "N": _DEC_SNAN}
_DEC_PREFIX = {_DEC_INFINITY: "Infinity", _DEC_NAN: "NaN", _DEC_SNAN: "sNaN"}
# Exact construction: no rounding, and an out-of-range exponent always raises
# instead of quietly becoming NaN under a caller's non-trapping context.
_DEC_CONTEXT = decimal.Context(
    prec=decimal.MAX_PREC,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    traps=[decimal.InvalidOperation, decimal.Overflow, decimal.Underflow],
)

_US_PER_DAY = 86_400_000_000
_MAX_ORDINAL = dt.date.max.toordinal()
_ZERO = dt.timedelta(0)
_MICROSECOND = dt.timedelta(microseconds=1)


# -- writers ----------------------------------------------------------------------


def _write_none(w: Writer, value: None) -> None:
    w.append(_NONE)


def _write_bool(w: Writer, value: bool) -> None:
    w.append(_TRUE if value else _FALSE)


def _write_int(w: Writer, value: int) -> None:
    value = int(value)
    size = ((value if value >= 0 else ~value).bit_length() + 8) // 8
    w.append(_INT)
    w.uvarint(size)
    w += value.to_bytes(size, "big", signed=True)


def _write_float(w: Writer, value: float) -> None:
    w.append(_FLOAT)
    w.float64(value)


def _write_decimal(w: Writer, value: decimal.Decimal) -> None:
    sign, digits, exponent = value.as_tuple()
    w.append(_DECIMAL)
    if isinstance(exponent, int):
        w.append(_DEC_FINITE << 1 | sign)
        w.svarint(exponent)
        w.blob(bytes(d + 48 for d in digits))
        return
    kind = _DEC_KINDS[exponent]
    w.append(kind << 1 | sign)
    if kind != _DEC_INFINITY:
        w.blob(bytes(d + 48 for d in digits))


def _write_str(w: Writer, value: str) -> None:
    w.append(_STR)
    w.string(value)


def _write_bytes(w: Writer, value: bytes) -> None:
    w.append(_BYTES)
    w.blob(bytes(value))


def _write_offset(w: Writer, value: dt.time | dt.datetime) -> None:
    tz = value.tzinfo
    if tz is None:
        w.append(0)
        return
    if type(tz) is not dt.timezone:
        raise SerializationError(
            f"Time zone {tz!r} is not a fixed UTC offset (datetime.timezone); "
            "only fixed offsets can be serialized"
        )
    w.append(1)
    w.svarint(tz.utcoffset(None) // _MICROSECOND)


def _time_micros(value: dt.time | dt.datetime) -> int:
    return ((value.hour * 3600 + value.minute * 60 + value.second) * 1_000_000) + value.microsecond


def _write_date(w: Writer, value: dt.date) -> None:
    w.append(_DATE)
    w.uvarint(value.toordinal())


def _write_time(w: Writer, value: dt.time) -> None:
    w.append(_TIME)
    w.uvarint(_time_micros(value))
    _write_offset(w, value)


def _write_datetime(w: Writer, value: dt.datetime) -> None:
    w.append(_DATETIME)
    w.uvarint(value.toordinal())
    w.uvarint(_time_micros(value))
    _write_offset(w, value)


def _write_uuid(w: Writer, value: uuid.UUID) -> None:
    w.append(_UUID)
    w += value.bytes


_WRITERS: dict[type, Callable[[Writer, Any], None]] = {
    type(None): _write_none,
    bool: _write_bool,
    int: _write_int,
    float: _write_float,
    decimal.Decimal: _write_decimal,
    str: _write_str,
    bytes: _write_bytes,
    dt.date: _write_date,
    dt.time: _write_time,
    dt.datetime: _write_datetime,
    uuid.UUID: _write_uuid,
}
# Subclasses (an IntEnum, a datetime subclass) are written as their base
# type; most specific first, since bool < int and datetime < date.
_BASES: tuple[type, ...] = (
    bool,
    int,
    float,
    decimal.Decimal,
    str,
    bytes,
    dt.datetime,
    dt.date,
    dt.time,
    uuid.UUID,
)


def write_value(w: Writer, value: object) -> None:
    """Write ``value`` with its tag; a type no column can hold is refused."""
    write = _WRITERS.get(type(value))
    if write is None:
        base = next((b for b in _BASES if isinstance(value, b)), None)
        if base is None:
            raise SerializationError(
                f"Cannot serialize a constant of type {type(value).__name__}: "
                "not a value any column type can hold"
            )
        write = _WRITERS[base]
    write(w, value)


# -- readers ----------------------------------------------------------------------


def _read_int(r: Reader) -> int:
    start = r.pos
    raw = r.blob()
    value = int.from_bytes(raw, "big", signed=True)
    if len(raw) != ((value if value >= 0 else ~value).bit_length() + 8) // 8:
        r.fail("Integer constant is not minimally encoded", start)
    return value


def _read_digits(r: Reader, what: str, *, zero: bool) -> str:
    """ASCII digits without a leading zero; a lone "0" only where ``zero`` allows it."""
    start = r.pos
    raw = r.blob()
    if raw and not (raw.isdigit() and (raw[0] != 48 or (zero and len(raw) == 1))):
        r.fail(f"Invalid {what} digits (0-9 without a leading zero)", start)
    return raw.decode("ascii")


def _read_decimal(r: Reader) -> decimal.Decimal:
    start = r.pos
    head = r.u8()
    kind, sign = head >> 1, "-" if head & 1 else ""
    if kind == _DEC_FINITE:
        exponent = r.svarint()
        digits = _read_digits(r, "decimal", zero=True)
        if not digits:
            r.fail("Decimal has no digits", start)
        text = f"{sign}{digits}E{exponent}"
    elif kind == _DEC_INFINITY:
        text = f"{sign}Infinity"
    elif kind in (_DEC_NAN, _DEC_SNAN):
        text = f"{sign}{_DEC_PREFIX[kind]}{_read_digits(r, 'NaN payload', zero=False)}"
    else:
        r.fail(f"Unknown decimal kind {kind}", start)
    try:
        return decimal.Decimal(text, context=_DEC_CONTEXT)
    except decimal.DecimalException:
        r.fail("Decimal is outside the range this Python can represent", start)


def _read_offset(r: Reader) -> dt.timezone | None:
    if not r.boolean():
        return None
    start = r.pos
    micros = r.svarint()
    if not -_US_PER_DAY < micros < _US_PER_DAY:
        r.fail(f"UTC offset of {micros} µs is not within ±24 hours", start)
    delta = dt.timedelta(microseconds=micros)
    return dt.UTC if delta == _ZERO else dt.timezone(delta)


def _read_time_fields(r: Reader) -> tuple[int, int, int, int]:
    start = r.pos
    micros = r.uvarint()
    if micros >= _US_PER_DAY:
        r.fail(f"Time of day {micros} µs is not below 24 hours", start)
    seconds, microsecond = divmod(micros, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return hour, minute, second, microsecond


def _read_date(r: Reader) -> dt.date:
    start = r.pos
    ordinal = r.uvarint()
    if not 1 <= ordinal <= _MAX_ORDINAL:
        r.fail(f"Date ordinal {ordinal} is not in 1..{_MAX_ORDINAL}", start)
    return dt.date.fromordinal(ordinal)


def _read_time(r: Reader) -> dt.time:
    hour, minute, second, microsecond = _read_time_fields(r)
    return dt.time(hour, minute, second, microsecond, _read_offset(r))


def _read_datetime(r: Reader) -> dt.datetime:
    day = _read_date(r)
    hour, minute, second, microsecond = _read_time_fields(r)
    tz = _read_offset(r)
    return dt.datetime(day.year, day.month, day.day, hour, minute, second, microsecond, tz)


_READERS: tuple[Callable[[Reader], object], ...] = (
    lambda r: None,
    lambda r: False,
    lambda r: True,
    _read_int,
    Reader.float64,
    _read_decimal,
    Reader.string,
    Reader.blob,
    _read_date,
    _read_time,
    _read_datetime,
    lambda r: uuid.UUID(bytes=r.fixed(16, "a UUID")),
)


def read_value(r: Reader) -> object:
    start = r.pos
    tag = r.u8()
    if tag >= len(_READERS):
        r.fail(f"Unknown constant value tag {tag}", start)
    return _READERS[tag](r)
