"""The commands JSON codec: every command class survives to_json → JSON text
→ from_json, and any JSON that is not a command is a ValidationError."""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import types
import typing
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import almanac
from almanac import CatalogError, Command, ValidationError
from almanac.model.descriptors import ConstantDefault, FunctionDefault
from almanac.serialization.commands_json import (
    COMMANDS,
    command_fields,
    command_from_json,
    command_to_json,
    commands_from_json,
)

from . import column_values, int64s, nan_values


def _strategy(hint: Any) -> st.SearchStrategy[Any]:
    """Values of a field annotation, drawn wide (names, types, defaults)."""
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return st.one_of([_strategy(a) for a in typing.get_args(hint)])
    if origin is tuple:
        return st.lists(_strategy(typing.get_args(hint)[0]), max_size=3).map(tuple)
    if hint is type(None):
        return st.none()
    if hint is str:
        return st.text(max_size=8)
    if hint is bool:
        return st.booleans()
    if hint is int:
        return int64s
    if hint is float:
        return st.floats(allow_nan=False) | st.integers(-5, 5).map(float)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return st.sampled_from(list(hint))
    if hint is ConstantDefault:
        return st.builds(ConstantDefault, column_values | nan_values)
    if hint is FunctionDefault:
        return st.builds(FunctionDefault, st.text(max_size=8))
    assert isinstance(hint, type) and dataclasses.is_dataclass(hint), hint
    # Deferred: a nested column's fields are columns again.
    return st.deferred(lambda: _instances(hint))


def _instances(cls: type) -> st.SearchStrategy[Any]:
    fields = {name: _strategy(hint) for name, _, hint, _ in command_fields(cls)}

    def build(kwargs: dict[str, Any]) -> Any:
        try:
            return cls(**kwargs)
        except ValidationError:
            return None  # a rule of the class's own; not what this test is about

    return st.fixed_dictionaries(fields).map(build).filter(lambda x: x is not None)


def test_every_exported_command_has_a_kind() -> None:
    exported = {
        name
        for name in almanac.__all__
        if isinstance(getattr(almanac, name), type)
        and issubclass(getattr(almanac, name), Command)
        and name != "Command"
    }
    assert exported == set(COMMANDS)


def _same(a: object, b: object) -> bool:
    """Equal, NaN counting as equal to NaN (a NaN's payload does not travel)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if hasattr(a, "is_nan") and hasattr(b, "is_nan") and a.is_nan():  # Decimal
        return bool(b.is_nan()) and str(a) == str(b)
    if dataclasses.is_dataclass(a) and type(a) is type(b):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("kind", sorted(COMMANDS))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_round_trip(kind: str, data: st.DataObject) -> None:
    command = data.draw(_instances(COMMANDS[kind]))
    encoded = command_to_json(command)
    assert encoded["kind"] == kind
    text = json.dumps(encoded, allow_nan=False)  # strict JSON: no NaN literals
    back = command_from_json(json.loads(text))
    assert _same(command, back), (command, back)
    assert command_to_json(back) == encoded


def test_left_out_fields_take_the_dataclass_defaults() -> None:
    command = command_from_json(
        {
            "kind": "CreateTable",
            "name": "T",
            "columns": [
                {"name": "ID", "type": "INT64", "nullable": False},
                {"name": "U", "type": "UUID", "default": {"function": "RAND_UUID"}},
                {"name": "D", "type": "DECIMAL", "default": {"value": "1.50", "as": "decimal"}},
            ],
            "primary_key": ["ID"],
        }
    )
    assert command == almanac.CreateTable(
        name="T",
        columns=(
            almanac.ColumnDef(name="ID", type=almanac.ColumnType.INT64, nullable=False),
            almanac.ColumnDef(
                name="U", type=almanac.ColumnType.UUID, default=FunctionDefault("RAND_UUID")
            ),
            almanac.ColumnDef(
                name="D",
                type=almanac.ColumnType.DECIMAL,
                default=ConstantDefault(__import__("decimal").Decimal("1.50")),
            ),
        ),
        primary_key=("ID",),
    )


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"name": "S"}, ["unknown command kind", "CreateSchema"]),
        ({"kind": "Nope"}, ["unknown command kind", "'Nope'"]),
        ({"kind": "CreateSchema"}, ["CreateSchema needs field 'name'"]),
        ({"kind": "CreateSchema", "name": "S", "colour": 1}, ["no field 'colour'"]),
        ({"kind": "CreateSchema", "name": 5}, ["'name'", "str"]),
        ({"kind": "DropTable", "name": "T", "if_exists": "yes"}, ["if_exists"]),
        (
            {"kind": "CreateIndex", "name": "I", "table": "T", "columns": ["A"], "kind_": 1},
            ["no field 'kind_'"],
        ),
        (
            {"kind": "CreateIndex", "name": "I", "table": "T", "columns": "A"},
            ["columns"],
        ),
        (
            {
                "kind": "AddColumns",
                "table": "T",
                "columns": [{"name": "C", "type": "INT65"}],
            },
            ["columns[0].type", "INT64"],
        ),
        (
            {
                "kind": "AddColumns",
                "table": "T",
                "columns": [{"name": "C", "type": "DATE", "default": {"value": "x", "as": "date"}}],
            },
            ["not a valid date"],
        ),
        (
            {
                "kind": "AddColumns",
                "table": "T",
                "columns": [{"name": "C", "type": "DATE", "default": {"value": 1, "as": "week"}}],
            },
            ["default.as' must be one of"],
        ),
        (
            {
                "kind": "AddColumns",
                "table": "T",
                "columns": [{"name": "C", "type": "DATE", "default": 3}],
            },
            ["a default"],
        ),
        ([1], ["a JSON object"]),
    ],
)
def test_bad_json_is_a_validation_error_naming_the_field(data: object, words: list[str]) -> None:
    with pytest.raises(ValidationError) as info:
        command_from_json(data, "commands[0]")
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    assert "commands[0]" in str(info.value)


def test_a_list_of_commands_names_the_position() -> None:
    with pytest.raises(ValidationError, match=r"commands\[1\]"):
        commands_from_json([{"kind": "CreateSchema", "name": "A"}, {"kind": "X"}])
    with pytest.raises(ValidationError, match="an array"):
        commands_from_json({"kind": "CreateSchema"})


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
_field_names = st.sampled_from(
    sorted({key for cls in COMMANDS.values() for _, key, _, _ in command_fields(cls)})
)


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(sorted(COMMANDS)),
    fields=st.dictionaries(_field_names, _json, max_size=5),
)
def test_any_json_is_a_command_or_a_catalog_error(kind: str, fields: dict[str, Any]) -> None:
    try:
        command = command_from_json({"kind": kind, **fields})
    except CatalogError:
        return
    assert type(command).__name__ == kind


def test_a_field_taking_a_name_or_a_shape_round_trips_both() -> None:
    """``EvolvePartitionSpec.drop`` holds names and partition fields side by
    side: each comes back as what it was, not as a column default."""
    from almanac.commands.partitions import EvolvePartitionSpec, PartitionFieldDef

    command = EvolvePartitionSpec(
        name="T",
        add=(PartitionFieldDef("ID", "bucket[4]"),),
        drop=("", "ts_day", PartitionFieldDef("S", "truncate[2]", name="s2")),
    )
    assert command_from_json(command_to_json(command)) == command
