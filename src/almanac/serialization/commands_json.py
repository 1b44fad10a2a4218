"""Commands as JSON objects tagged by ``kind`` (the class name).

The codec is derived from the command dataclasses' own annotations, so a new
command or field needs no change here; the dataclass stays the one place that
says what a command holds and checks it. Enums travel by member name
(``"INT64"``, ``"SORTED"``); a constant default is ``{"value": V}`` with
``"as"`` naming its type where JSON has none (``decimal``, ``bytes`` in
base64, ``date``, ``time``, ``datetime``, ``uuid``, non-finite ``float``); a
function default is ``{"function": "RAND_UUID"}``. Fields left out take the
dataclass's default. ``CreateIndex.kind`` travels as ``index_kind``, since
``kind`` is the tag.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as dt
import decimal
import enum
import math
import re
import types
import typing
import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from almanac import _check as check
from almanac import commands as _commands
from almanac.commands.base import Command
from almanac.errors import ValidationError
from almanac.model.descriptors import ConstantDefault, FunctionDefault

__all__ = [
    "COMMANDS",
    "CONSTANT_TAGS",
    "command_fields",
    "command_from_json",
    "command_to_json",
    "value_to_json",
    "commands_from_json",
]

JsonValue = Any
T = TypeVar("T")

COMMANDS: Mapping[str, type[Command]] = types.MappingProxyType(
    {
        name: cls
        for name in _commands.__all__
        if isinstance(cls := getattr(_commands, name), type)
        and issubclass(cls, Command)
        and cls is not Command
    }
)
"""Every command class by ``kind``."""

CONSTANT_TAGS = ("decimal", "bytes", "date", "time", "datetime", "uuid", "float")
"""The ``as`` of a constant default whose type JSON cannot tell."""


_RENAMED = {"kind": "index_kind"}
"""Fields whose JSON name differs from the attribute (``kind`` is the tag)."""

_FIELDS: dict[type, tuple[tuple[str, str, Any, bool], ...]] = {}


def command_fields(cls: type) -> tuple[tuple[str, str, Any, bool], ...]:
    """``(attribute, JSON name, annotation, required)`` of each init field of
    a dataclass."""
    fields = _FIELDS.get(cls)
    if fields is None:
        hints = typing.get_type_hints(cls)
        fields = _FIELDS[cls] = tuple(
            (
                f.name,
                _RENAMED.get(f.name, f.name),
                hints[f.name],
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            )
            for f in dataclasses.fields(cls)
            if f.init
        )
    return fields


# --------------------------------------------------------------------------- encoding


def command_to_json(command: Command) -> dict[str, JsonValue]:
    """``command`` as a JSON object, every field included."""
    check.instance(command, Command, "Parameter 'command' of command_to_json")
    return {"kind": type(command).__name__, **_encode_fields(command)}


def _encode_fields(obj: Any) -> dict[str, JsonValue]:
    return {key: value_to_json(getattr(obj, name)) for name, key, _, _ in command_fields(type(obj))}


def value_to_json(value: object) -> JsonValue:
    """A field value as JSON: enums by name, tuples as arrays, defaults tagged,
    dataclasses (descriptors too) as objects of their fields."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"value": repr(value), "as": "float"}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, tuple | list):
        return [value_to_json(v) for v in value]
    if isinstance(value, ConstantDefault):
        return _encode_constant(value.value)
    if isinstance(value, FunctionDefault):
        return {"function": value.name}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _encode_fields(value)
    raise ValidationError(f"No JSON form for {check.describe(value)}", rule="commands json")


def _encode_constant(value: object) -> dict[str, JsonValue]:
    if isinstance(value, float) and not math.isfinite(value):
        return {"value": repr(value), "as": "float"}
    if value is None or isinstance(value, bool | int | float | str):
        return {"value": value}
    if isinstance(value, decimal.Decimal):
        return {"value": str(value), "as": "decimal"}
    if isinstance(value, bytes):
        return {"value": base64.b64encode(value).decode("ascii"), "as": "bytes"}
    if isinstance(value, dt.datetime):
        return {"value": value.isoformat(), "as": "datetime"}
    if isinstance(value, dt.date):
        return {"value": value.isoformat(), "as": "date"}
    if isinstance(value, dt.time):
        return {"value": value.isoformat(), "as": "time"}
    if isinstance(value, uuid.UUID):
        return {"value": str(value), "as": "uuid"}
    raise ValidationError(
        f"No JSON form for the constant default {check.describe(value)}", rule="commands json"
    )


# --------------------------------------------------------------------------- decoding


def commands_from_json(items: object, what: str = "commands") -> tuple[Command, ...]:
    """A JSON array of commands; errors name the item's position."""
    if not isinstance(items, list):
        raise check.fail(f"'{what}'", "an array of command objects", items)
    return tuple(command_from_json(item, f"{what}[{i}]") for i, item in enumerate(items))


def command_from_json(data: object, what: str = "command") -> Command:
    """The command a JSON object stands for; ``ValidationError`` naming the
    kind and field when it stands for none."""
    if not isinstance(data, Mapping):
        raise check.fail(f"'{what}'", "a JSON object with a 'kind'", data)
    kind = data.get("kind")
    cls = COMMANDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValidationError(
            f"'{what}': unknown command kind {check.describe(kind)}; expected one of "
            f"{', '.join(sorted(COMMANDS))}",
            kind=kind if isinstance(kind, str) else repr(kind),
            rule="commands json",
        )
    fields = {k: v for k, v in data.items() if k != "kind"}
    command = _decode_dataclass(cls, fields, f"{what} ({kind})")
    assert isinstance(command, Command)
    return command


def _decode_dataclass(cls: type, data: object, what: str) -> object:
    if not isinstance(data, Mapping):
        raise check.fail(f"'{what}'", f"a JSON object for a {cls.__name__}", data)
    known = {key: (name, hint, required) for name, key, hint, required in command_fields(cls)}
    unknown = sorted(str(k) for k in data if k not in known)
    if unknown:
        raise ValidationError(
            f"'{what}': {cls.__name__} has no field {unknown[0]!r}; its fields are "
            f"{', '.join(known)}",
            field=unknown[0],
            rule="commands json",
        )
    missing = [key for key, (_, _, required) in known.items() if required and key not in data]
    if missing:
        raise ValidationError(
            f"'{what}': {cls.__name__} needs field {missing[0]!r}",
            field=missing[0],
            rule="commands json",
        )
    kwargs = {
        known[key][0]: _decode(value, known[key][1], f"{what}.{key}") for key, value in data.items()
    }
    try:
        return cls(**kwargs)
    except ValidationError as exc:  # the class's own check: say where in the JSON
        if not exc.message.startswith(f"'{what}"):
            exc.message = f"'{what}': {exc.message}"
            exc.args = (exc.message,)
            exc.context.setdefault("at", what)
        raise


def _decode(value: object, hint: Any, what: str) -> object:
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        if value is None:
            return None
        arms = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(arms) == 1:
            return _decode(value, arms[0], what)
        if set(arms) <= {ConstantDefault, FunctionDefault}:
            return _decode_default(value, what)
        if isinstance(value, str) and str in arms:
            return value  # a name (EvolvePartitionSpec.drop takes a name or a field)
        shapes = [a for a in arms if isinstance(a, type) and dataclasses.is_dataclass(a)]
        if isinstance(value, Mapping) and len(shapes) == 1:
            return _decode_dataclass(shapes[0], value, what)
        return value  # the dataclass's own check names what it expected
    if origin is tuple:
        if not isinstance(value, list):
            return value  # the dataclass's own check names what it expected
        return tuple(
            _decode(v, typing.get_args(hint)[0], f"{what}[{i}]") for i, v in enumerate(value)
        )
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _decode_enum(value, hint, what)
    if hint in (ConstantDefault, FunctionDefault):
        return _decode_default(value, what)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _decode_dataclass(hint, value, what)
    return value


def _decode_enum(value: object, kind: type[enum.Enum], what: str) -> enum.Enum:
    if isinstance(value, str) and value in kind.__members__:
        return kind[value]
    raise ValidationError(
        f"'{what}' must be one of {', '.join(kind.__members__)}, got {check.describe(value)}",
        expected=tuple(kind.__members__),
        rule="commands json",
    )


def _decode_default(value: object, what: str) -> ConstantDefault | FunctionDefault:
    if isinstance(value, Mapping) and set(value) == {"function"}:
        return FunctionDefault(value["function"])
    if isinstance(value, Mapping) and "value" in value and set(value) <= {"value", "as"}:
        tag = value.get("as")
        if tag is None:
            return ConstantDefault(value["value"])
        parse = _CONSTANT_PARSERS.get(tag) if isinstance(tag, str) else None
        if parse is None:
            raise ValidationError(
                f"'{what}.as' must be one of {', '.join(CONSTANT_TAGS)}, got {check.describe(tag)}",
                rule="commands json",
            )
        raw = value["value"]
        if not isinstance(raw, str):
            raise check.fail(f"'{what}.value'", f"a string holding a {tag}", raw)
        try:
            return ConstantDefault(parse(raw))
        except (ValueError, ArithmeticError, binascii.Error) as exc:
            raise ValidationError(
                f"'{what}.value' is not a valid {tag}: {check.describe(raw)}",
                rule="commands json",
            ) from exc
    raise check.fail(
        f"'{what}'", 'a default: {"value": V[, "as": TYPE]} or {"function": NAME}', value
    )


def _float(text: str) -> float:
    number = float(text)
    if math.isfinite(number):
        raise ValueError("a finite float needs no 'as'")
    return number


_OFFSET = re.compile(r"([+-])(\d\d):(\d\d)(?::(\d\d)(?:\.(\d{6}))?)?$")


def _aware(parse: Callable[[str], T]) -> Callable[[str], T]:
    """``fromisoformat`` that keeps a UTC offset's seconds and microseconds
    (Python 3.11 drops microseconds of an offset)."""

    def parsed(text: str) -> T:
        match = _OFFSET.search(text)
        if match is None:
            return parse(text)
        sign, hours, minutes, seconds, micros = match.groups()
        offset = dt.timedelta(
            hours=int(hours),
            minutes=int(minutes),
            seconds=int(seconds or 0),
            microseconds=int(micros or 0),
        )
        value = parse(text[: match.start()])
        if not isinstance(value, dt.datetime | dt.time) or value.tzinfo is not None:
            raise ValueError("not an ISO date-time with one UTC offset")
        zone = dt.timezone(-offset if sign == "-" else offset)
        return value.replace(tzinfo=zone)  # type: ignore[return-value]

    return parsed


_CONSTANT_PARSERS: dict[str, Callable[[str], object]] = {
    "decimal": decimal.Decimal,
    "bytes": lambda s: base64.b64decode(s.encode("ascii"), validate=True),
    "date": dt.date.fromisoformat,
    "time": _aware(dt.time.fromisoformat),
    "datetime": _aware(dt.datetime.fromisoformat),
    "uuid": uuid.UUID,
    "float": _float,
}
