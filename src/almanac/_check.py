"""Argument checks shared by every public entry point.

Each check takes the value and ``what`` (how the message names it, e.g.
``"Parameter 'name' of DropTable"``) and returns the value, or raises a
``ValidationError`` saying what was expected and what was given. Frozen values
(commands, column definitions, policies) call :func:`check_fields` from
``__post_init__``: it reads the dataclass annotations, so a new field or a new
command is checked without writing anything.

The rules:

* ``bool`` is not an ``int`` (``True`` is never a version or a count);
* every ``int`` fits the signed 64-bit range the serializer writes;
* every ``float`` is finite (an ``int`` is accepted where a ``float`` is);
* strings are valid Unicode (they are stored as UTF-8) without NUL characters;
* a ``tuple[X, ...]`` accepts any sequence of ``X`` except a string, and is
  stored as a tuple;
* an aware ``datetime`` is an instant; a naive one is refused (its meaning
  depends on the machine's time zone), as is one outside the hybrid clock's
  range (from the Unix epoch to the year 6429, 64 bits with 16 logical).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import math
import threading
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from almanac.errors import ValidationError

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "boolean",
    "callable_",
    "check_fields",
    "describe",
    "enum_member",
    "fail",
    "instance",
    "integer",
    "is_unicode",
    "number",
    "optional_float",
    "optional_instance",
    "optional_int",
    "optional_str",
    "sequence_of",
    "string",
    "timeout",
    "timestamp",
]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
_LOGICAL_BITS = 16  # almanac.model.clock.LOGICAL_BITS (the clock imports this module)
_LOGICAL_MASK = (1 << _LOGICAL_BITS) - 1

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MILLISECOND = dt.timedelta(milliseconds=1)
_LAST = _EPOCH + dt.timedelta(milliseconds=INT64_MAX >> _LOGICAL_BITS)

T = TypeVar("T")
E = TypeVar("E", bound=enum.Enum)
Check = Callable[[object, str], object]


def describe(value: object) -> str:
    """``type repr``, the repr cut to a readable length."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        # repr of an int beyond sys.get_int_max_str_digits() raises
        sign = "-" if value < 0 else ""
        return f"{type(value).__name__} {sign}<an integer of {value.bit_length()} bits>"
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not hide the real problem
        text = "<unprintable>"
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def fail(what: str, expected: str, value: object, **context: Any) -> ValidationError:
    """The error for ``value`` that is not ``expected``."""
    return ValidationError(
        f"{what} must be {expected}, got {describe(value)}",
        what=what,
        expected=expected,
        got=type(value).__name__,
        rule="argument",
        **context,
    )


# --------------------------------------------------------------------------- scalars


def string(value: object, what: str, *, nonblank: bool = False, nul_ok: bool = False) -> str:
    if not isinstance(value, str):
        raise fail(what, "a str", value)
    if not nul_ok and "\x00" in value:
        raise fail(what, "a str without NUL characters", value)
    if not is_unicode(value):
        raise fail(what, "valid Unicode text", value)
    if nonblank and not value.strip():
        raise fail(what, "a non-blank str", value)
    return value


def is_unicode(text: str) -> bool:
    """Whether the text can be stored as UTF-8 (no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def optional_str(value: object, what: str, *, nonblank: bool = False) -> str | None:
    return None if value is None else string(value, what, nonblank=nonblank)


def integer(value: object, what: str, *, lo: int = INT64_MIN, hi: int = INT64_MAX) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(what, "an int", value)
    if not lo <= value <= hi:
        if lo == INT64_MIN and hi == INT64_MAX:
            expected = "an int in the signed 64-bit range"
        elif hi == INT64_MAX:
            expected = f"an int of at least {lo}" + (
                "" if lo <= 0 else " (and in the signed 64-bit range)"
            )
        else:
            expected = f"an int in [{lo}, {hi}]"
        raise fail(what, expected, value)
    return int(value)


def optional_int(
    value: object, what: str, *, lo: int = INT64_MIN, hi: int = INT64_MAX
) -> int | None:
    return None if value is None else integer(value, what, lo=lo, hi=hi)


def number(
    value: object,
    what: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    positive: bool = False,
) -> float:
    """A finite ``int`` or ``float`` (never a bool), within the bounds given."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(what, "a number", value)
    try:
        result = float(value)
    except OverflowError:
        raise fail(what, "a finite number", value) from None
    if not math.isfinite(result):
        raise fail(what, "a finite number", value)
    if positive and result <= 0:
        raise fail(what, "a positive number", value)
    if lo is not None and result < lo:
        raise fail(what, f"a number of at least {lo}", value)
    if hi is not None and result > hi:
        raise fail(what, f"a number of at most {hi}", value)
    return result


def optional_float(
    value: object,
    what: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    positive: bool = False,
) -> float | None:
    return None if value is None else number(value, what, lo=lo, hi=hi, positive=positive)


def timeout(value: object, what: str) -> float | None:
    """Seconds to wait: ``None`` (no limit) or a finite number >= 0. More than
    the platform can wait (``threading.TIMEOUT_MAX``, about 292 years) means no
    limit."""
    if value is None:
        return None
    seconds = number(value, what, lo=0)
    return None if seconds > threading.TIMEOUT_MAX else seconds


def boolean(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise fail(what, "a bool", value)
    return value


def enum_member(value: object, kind: type[E], what: str) -> E:
    if not isinstance(value, kind):
        names = ", ".join(m.name for m in kind)
        raise fail(what, f"a {kind.__name__} ({names})", value)
    return value


def instance(value: object, kind: type[T], what: str, expected: str | None = None) -> T:
    if not isinstance(value, kind):
        raise fail(what, expected or f"a {kind.__name__}", value)
    return value


def optional_instance(
    value: object, kind: type[T], what: str, expected: str | None = None
) -> T | None:
    return None if value is None else instance(value, kind, what, expected)


def callable_(value: object, what: str) -> Callable[..., Any]:
    if not callable(value):
        raise fail(what, "callable", value)
    return value


def sequence_of(value: object, what: str, item: Callable[[object, str], T]) -> tuple[T, ...]:
    """A list, tuple or other sequence (never a str or bytes), each item checked."""
    if isinstance(value, str | bytes | bytearray | memoryview) or not isinstance(value, Sequence):
        raise fail(what, "a list or tuple", value)
    return tuple(item(v, f"Item {i} of {lower_first(what)}") for i, v in enumerate(value))


def timestamp(value: object, what: str) -> int:
    """A hybrid timestamp from an ``int`` or an aware ``datetime``."""
    if isinstance(value, dt.datetime):
        try:
            offset = None if value.tzinfo is None else value.utcoffset()
        except Exception as exc:  # a tzinfo is user code: any failure is a bad argument
            raise fail(
                what, f"a datetime whose tzinfo gives its offset (it raised {exc!r:.80})", value
            ) from exc
        if offset is None:
            raise fail(
                what,
                "a hybrid timestamp (int) or an aware datetime (naive datetimes are refused: "
                "give tzinfo, e.g. datetime.UTC)",
                value,
            )
        try:
            ms = (value - _EPOCH) // _MILLISECOND  # exact: no float rounding
        except (OverflowError, ValueError):
            ms = -1
        ts = (ms << _LOGICAL_BITS) | _LOGICAL_MASK
        if ms < 0 or ts > INT64_MAX:
            raise fail(
                what, f"a datetime from {_EPOCH} to {_LAST} (the hybrid clock's range)", value
            )
        return ts
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(what, "a hybrid timestamp (int) or an aware datetime", value)
    return integer(value, what)


def lower_first(what: str) -> str:
    """``what`` with its first letter lowered, to stand inside a sentence."""
    return what[:1].lower() + what[1:]


# --------------------------------------------------------------------------- dataclass fields


def _checker_for(annotation: Any) -> Check:
    """The check a field annotation stands for."""
    if annotation is Any or annotation is object:
        return lambda v, what: v
    if annotation is type(None):
        return _none
    if annotation is str:
        return string
    if annotation is bool:
        return boolean
    if annotation is int:
        return integer
    if annotation is float:
        return number
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return _union([_checker_for(a) for a in typing.get_args(annotation)], annotation)
    if origin is tuple:
        args = typing.get_args(annotation)
        if len(args) == 2 and args[1] is Ellipsis:
            item = _checker_for(args[0])
            return lambda v, what: sequence_of(v, what, item)
        raise TypeError(f"no argument check for {annotation!r}")
    if isinstance(annotation, type):
        if issubclass(annotation, enum.Enum):
            kind = annotation
            return lambda v, what: enum_member(v, kind, what)
        cls = annotation
        return lambda v, what: instance(v, cls, what)
    raise TypeError(f"no argument check for {annotation!r}")


def _none(value: object, what: str) -> None:
    if value is not None:
        raise fail(what, "None", value)


def _union(checks: list[Check], annotation: Any) -> Check:
    expected = " or ".join(_name(a) for a in typing.get_args(annotation))

    def check(value: object, what: str) -> object:
        if value is None and _none in checks:
            return None
        problems: list[ValidationError] = []
        for one in checks:
            if one is _none:
                continue
            try:
                return one(value, what)
            except ValidationError as exc:
                problems.append(exc)
        if len(problems) == 1:
            raise problems[0]
        raise fail(what, expected, value)

    return check


def _name(annotation: Any) -> str:
    if annotation is type(None):
        return "None"
    if isinstance(annotation, type):
        return f"a {annotation.__name__}"
    return str(annotation)


_PLANS: dict[type, tuple[tuple[str, Check], ...]] = {}


def _plan(cls: type) -> tuple[tuple[str, Check], ...]:
    plan = _PLANS.get(cls)
    if plan is None:
        hints = typing.get_type_hints(cls)
        plan = tuple(
            (f.name, _checker_for(hints[f.name])) for f in dataclasses.fields(cls) if f.init
        )
        _PLANS[cls] = plan
    return plan


def check_fields(obj: object) -> None:
    """Check every field of a frozen dataclass against its annotation; store
    sequences given for ``tuple`` fields as tuples."""
    cls = type(obj)
    label = getattr(obj, "name", None)
    owner = cls.__name__
    if isinstance(label, str) and "\x00" not in label and is_unicode(label) and len(label) <= 60:
        owner = f"{owner} {label!r}"
    for name, check in _plan(cls):
        value = getattr(obj, name)
        checked = check(value, f"Parameter '{name}' of {owner}")
        if checked is not value and isinstance(checked, tuple):
            object.__setattr__(obj, name, checked)
