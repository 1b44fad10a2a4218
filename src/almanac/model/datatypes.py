"""Column types: which parameters each type takes and which changes are safe.

The rules live here, apart from the commands, because SQL parsing, command
validation and (later) the data plane all need the same answers.
"""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import math
import sys
import uuid

__all__ = [
    "MAX_DECIMAL_PRECISION",
    "MAX_LENGTH",
    "MAX_TIME_PRECISION",
    "NANO_TIMESTAMPS",
    "ColumnType",
    "TypeParams",
    "can_widen",
    "default_params",
    "python_value_fits",
    "shown",
    "validate_params",
]

MAX_LENGTH = 2**31 - 1
MAX_DECIMAL_PRECISION = 32767
MAX_DECIMAL_SCALE = 32767
MAX_TIME_PRECISION = 9

DEFAULT_LENGTH = 65536
DEFAULT_DECIMAL_PRECISION = 32767
DEFAULT_DECIMAL_SCALE = 0
DEFAULT_TIME_PRECISION = 0
DEFAULT_TIMESTAMP_PRECISION = 6


class ColumnType(enum.Enum):
    """Column types of the catalog; the value is the stable wire id."""

    BOOLEAN = 1
    INT8 = 2
    INT16 = 3
    INT32 = 4
    INT64 = 5
    FLOAT = 6
    DOUBLE = 7
    DECIMAL = 8
    STRING = 9
    BYTES = 10
    DATE = 11
    TIME = 12
    TIMESTAMP = 13
    TIMESTAMP_WITH_LOCAL_TIME_ZONE = 14
    UUID = 15
    FIXED = 16
    TIMESTAMP_NS = 17
    TIMESTAMPTZ_NS = 18
    STRUCT = 19
    LIST = 20
    MAP = 21
    ICEBERG_UUID = 22
    """Iceberg's own ``uuid``: 16 bytes in the files (``UUID`` is kept as its
    canonical text, an Iceberg ``string``, which Spark reads natively)."""

    @property
    def sql_name(self) -> str:
        if self in _SQL_NAMES:
            return _SQL_NAMES[self]
        return self.name.replace("_", " ")

    @property
    def takes_length(self) -> bool:
        """STRING and BYTES take a maximum length, FIXED its exact one."""
        return self in (ColumnType.STRING, ColumnType.BYTES, ColumnType.FIXED)

    @property
    def nested(self) -> bool:
        """STRUCT, LIST and MAP hold fields (``Column.fields``) rather than values."""
        return self in (ColumnType.STRUCT, ColumnType.LIST, ColumnType.MAP)

    @property
    def takes_precision(self) -> bool:
        return self in _PRECISION_TYPES

    @property
    def takes_scale(self) -> bool:
        return self is ColumnType.DECIMAL


_SQL_NAMES = {
    ColumnType.TIMESTAMP_NS: "TIMESTAMP_NS",
    ColumnType.TIMESTAMPTZ_NS: "TIMESTAMPTZ_NS",
    ColumnType.LIST: "ARRAY",
    ColumnType.ICEBERG_UUID: "ICEBERG_UUID",
}
"""Names that are not the member's name with spaces for underscores."""

_PRECISION_TYPES = frozenset(
    {
        ColumnType.DECIMAL,
        ColumnType.TIME,
        ColumnType.TIMESTAMP,
        ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE,
    }
)
_TEMPORAL = frozenset(_PRECISION_TYPES - {ColumnType.DECIMAL})

_FLOAT32_OVERFLOW = 2.0**128 - 2.0**103
"""The smallest magnitude that rounds to an infinite 32-bit float."""

_INT_RANGES = {
    ColumnType.INT8: (-(2**7), 2**7 - 1),
    ColumnType.INT16: (-(2**15), 2**15 - 1),
    ColumnType.INT32: (-(2**31), 2**31 - 1),
    ColumnType.INT64: (-(2**63), 2**63 - 1),
}

_WIDENINGS = {
    ColumnType.INT8: frozenset({ColumnType.INT16, ColumnType.INT32, ColumnType.INT64}),
    ColumnType.INT16: frozenset({ColumnType.INT32, ColumnType.INT64}),
    ColumnType.INT32: frozenset({ColumnType.INT64}),
    ColumnType.FLOAT: frozenset({ColumnType.DOUBLE}),
}

NANO_TIMESTAMPS = frozenset({ColumnType.TIMESTAMP_NS, ColumnType.TIMESTAMPTZ_NS})


TypeParams = tuple[int | None, int | None, int | None]
"""(precision, scale, length); ``None`` where the type takes no such parameter."""


def default_params(ctype: ColumnType) -> TypeParams:
    """Parameters a type gets when the user names none."""
    if ctype is ColumnType.DECIMAL:
        return DEFAULT_DECIMAL_PRECISION, DEFAULT_DECIMAL_SCALE, None
    if ctype is ColumnType.TIME:
        return DEFAULT_TIME_PRECISION, None, None
    if ctype in _TEMPORAL:
        return DEFAULT_TIMESTAMP_PRECISION, None, None
    if ctype.takes_length and ctype is not ColumnType.FIXED:
        return None, None, DEFAULT_LENGTH
    return None, None, None


def shown(value: object) -> str:
    """``repr(value)`` for error messages; an integer too long to print (Python
    refuses to print more than 4300 digits) or to read is shown by its size."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        sign = "-" if value < 0 else ""
        return f"{sign}an integer of {value.bit_length()} bits"
    return repr(value)


def validate_params(
    column: str,
    ctype: ColumnType,
    precision: int | None,
    scale: int | None,
    length: int | None,
) -> str | None:
    """Return why the parameters are wrong for the type, or ``None`` if they fit."""
    where = f"column '{column}' of type {ctype.sql_name}"
    if precision is not None and not ctype.takes_precision:
        return f"Type {ctype.sql_name} of column '{column}' does not take a precision"
    if scale is not None and not ctype.takes_scale:
        return f"Type {ctype.sql_name} of column '{column}' does not take a scale"
    if length is not None and not ctype.takes_length:
        return f"Type {ctype.sql_name} of column '{column}' does not take a length"
    for what, value in (("Precision", precision), ("Scale", scale), ("Length", length)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            return f"{what} of {where} must be an integer, got {shown(value)}"
    if length is not None and not 1 <= length <= MAX_LENGTH:
        return f"Length of {where} must be in [1, {MAX_LENGTH}], got {shown(length)}"
    if ctype is ColumnType.DECIMAL:
        if precision is not None and not 1 <= precision <= MAX_DECIMAL_PRECISION:
            return (
                f"Precision of {where} must be in [1, {MAX_DECIMAL_PRECISION}], "
                f"got {shown(precision)}"
            )
        if scale is not None and not 0 <= scale <= MAX_DECIMAL_SCALE:
            return f"Scale of {where} must be in [0, {MAX_DECIMAL_SCALE}], got {shown(scale)}"
    elif ctype in _TEMPORAL and precision is not None and not 0 <= precision <= MAX_TIME_PRECISION:
        return f"Precision of {where} must be in [0, {MAX_TIME_PRECISION}], got {shown(precision)}"
    return None


def can_widen(source: ColumnType, target: ColumnType) -> bool:
    """True when every value of ``source`` converts to ``target`` without loss."""
    return target in _WIDENINGS.get(source, frozenset())


def python_value_fits(
    ctype: ColumnType,
    value: object,
    precision: int | None,
    scale: int | None,
    length: int | None,
) -> bool:
    """True when a constant default ``value`` is a valid value of the column type."""
    if value is None:
        return True
    if ctype is ColumnType.BOOLEAN:
        return isinstance(value, bool)
    if ctype in _INT_RANGES:
        lo, hi = _INT_RANGES[ctype]
        return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi
    if ctype in (ColumnType.FLOAT, ColumnType.DOUBLE):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        # A finite value must stay finite in the type: 1e300 is no FLOAT.
        if isinstance(value, float) and not math.isfinite(value):
            return True
        if ctype is ColumnType.FLOAT:
            return abs(value) < _FLOAT32_OVERFLOW
        return abs(value) <= sys.float_info.max
    if ctype is ColumnType.DECIMAL:
        if isinstance(value, bool) or not isinstance(value, int | decimal.Decimal):
            return False
        d = decimal.Decimal(value)
        if not d.is_finite():
            return False
        exponent = d.as_tuple().exponent
        if not isinstance(exponent, int):
            return False
        digits = len(d.as_tuple().digits)
        frac = max(0, -exponent)
        whole = max(digits - frac, 0) if exponent <= 0 else digits + exponent
        p = precision if precision is not None else DEFAULT_DECIMAL_PRECISION
        s = scale if scale is not None else DEFAULT_DECIMAL_SCALE
        return frac <= s and whole <= p - s
    if ctype is ColumnType.STRING:
        n = length if length is not None else DEFAULT_LENGTH
        return isinstance(value, str) and len(value) <= n
    if ctype is ColumnType.BYTES:
        n = length if length is not None else DEFAULT_LENGTH
        return isinstance(value, bytes) and len(value) <= n
    if ctype is ColumnType.FIXED:
        return isinstance(value, bytes) and len(value) == length
    if ctype is ColumnType.DATE:
        return isinstance(value, dt.date) and not isinstance(value, dt.datetime)
    if ctype is ColumnType.TIME:
        return isinstance(value, dt.time)
    if ctype in (ColumnType.TIMESTAMP, ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE, *NANO_TIMESTAMPS):
        return isinstance(value, dt.datetime)
    if ctype in (ColumnType.UUID, ColumnType.ICEBERG_UUID):
        return isinstance(value, uuid.UUID)
    return False  # a nested column has no constant default but NULL


NO_COERCION = object()
"""Returned by ``coerce_constant`` when a value has no lossless reading as the type."""


def coerce_constant(ctype: ColumnType, value: object) -> object:
    """Read a literal written without knowing the column's type (``SET DEFAULT
    1.5`` or ``'2020-01-01'``) as a value of ``ctype``, or ``NO_COERCION``."""
    try:
        if isinstance(value, bool):
            return NO_COERCION
        if ctype in (ColumnType.FLOAT, ColumnType.DOUBLE) and isinstance(
            value, int | decimal.Decimal
        ):
            number = float(value)
            return number if math.isfinite(number) else NO_COERCION
        if ctype is ColumnType.DECIMAL and isinstance(value, int):
            return decimal.Decimal(value)
        if ctype is ColumnType.DECIMAL and isinstance(value, float):
            return decimal.Decimal(repr(value))
        if isinstance(value, str):
            if ctype is ColumnType.DATE:
                return dt.date.fromisoformat(value)
            if ctype is ColumnType.TIME:
                return dt.time.fromisoformat(value)
            if ctype in (
                ColumnType.TIMESTAMP,
                ColumnType.TIMESTAMP_WITH_LOCAL_TIME_ZONE,
                *NANO_TIMESTAMPS,
            ):
                return dt.datetime.fromisoformat(value)
            if ctype in (ColumnType.UUID, ColumnType.ICEBERG_UUID):
                return uuid.UUID(value)
    except (ValueError, ArithmeticError):
        return NO_COERCION
    return NO_COERCION
