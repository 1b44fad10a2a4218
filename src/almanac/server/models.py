"""Pydantic models of the HTTP API, for request validation and ``/openapi.json``.

The command models and the catalog object models are generated from the
dataclasses' annotations, the same ones ``commands_json`` reads, so the
schema cannot drift from the values the catalog checks. A request is first
validated against these models (a 400 naming the field), then decoded by
``commands_json`` into the real command, whose own checks have the last word.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from almanac.model.descriptors import ConstantDefault, FunctionDefault, Index, Schema, Table, Zone
from almanac.serialization.commands_json import (
    COMMANDS,
    CONSTANT_TAGS,
    command_fields,
    value_to_json,
)

__all__ = [
    "CatalogSummary",
    "DataCommitModel",
    "CommandModel",
    "CommandsRequest",
    "ExecuteResponse",
    "HistoryResponse",
    "IndexModel",
    "SchemaModel",
    "SqlRequest",
    "SqlResponse",
    "TableModel",
    "TableResponse",
    "VersionModel",
    "ZoneModel",
]

_STRICT = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

Scalar = str | int | float | bool | None


class ConstantDefaultModel(BaseModel):
    """A constant default; ``as`` names its type where JSON has none."""

    model_config = _STRICT
    value: Scalar
    as_: Literal[CONSTANT_TAGS] | None = Field(default=None, alias="as")  # type: ignore[valid-type]


class FunctionDefaultModel(BaseModel):
    """A default computed per row, such as ``RAND_UUID``."""

    model_config = _STRICT
    function: str


_MODELS: dict[type, type[BaseModel]] = {}


def _json_type(hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return Union[tuple(_json_type(a) for a in typing.get_args(hint))]  # noqa: UP007
    if origin is tuple:
        return list[_json_type(typing.get_args(hint)[0])]  # type: ignore[misc]
    if hint is ConstantDefault:
        return ConstantDefaultModel
    if hint is FunctionDefault:
        return FunctionDefaultModel
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return Literal[tuple(hint.__members__)]
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if hint in _BUILDING:
            return hint.__name__  # a nested column's own fields: a forward reference
        return model_of(hint)
    return hint


_BUILDING: set[type] = set()
"""Dataclasses whose model is being made, so a recursive one refers to itself."""


def model_of(cls: type, *, kind: str | None = None) -> type[BaseModel]:
    """The model of a dataclass's JSON form; with ``kind``, tagged by it."""
    model = _MODELS.get(cls)
    if model is not None:
        return model
    defaults = {f.name: f for f in dataclasses.fields(cls)}
    fields: dict[str, Any] = {}
    if kind is not None:
        fields["kind"] = (Literal[kind], ...)
    _BUILDING.add(cls)
    for name, key, hint, required in command_fields(cls):
        attribute = f"{key}_" if hasattr(BaseModel, key) else key
        if required:
            default: Any = ...
        else:
            f = defaults[name]
            factory = f.default_factory
            value = f.default if factory is dataclasses.MISSING else factory()
            default = value_to_json(value)
        fields[attribute] = (_json_type(hint), Field(default=default, alias=key))
    _BUILDING.discard(cls)
    model = create_model(cls.__name__, __config__=_STRICT, __doc__=cls.__doc__, **fields)
    model.model_rebuild(_types_namespace={cls.__name__: model})
    _MODELS[cls] = model
    return model


CommandModel: Any = Annotated[
    Union[tuple(model_of(cls, kind=name) for name, cls in sorted(COMMANDS.items()))],  # noqa: UP007
    Field(discriminator="kind"),
]
"""One command, tagged by ``kind``."""

SchemaModel = model_of(Schema)
TableModel = model_of(Table)
IndexModel = model_of(Index)
ZoneModel = model_of(Zone)


def dump(model: BaseModel) -> dict[str, Any]:
    """A validated request model back as the JSON it came as (fields left out stay out)."""
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


# --------------------------------------------------------------------------- requests


class SqlRequest(BaseModel):
    model_config = _STRICT
    sql: str = Field(description="a DDL script, or one read statement")
    default_schema: str = "PUBLIC"
    request_id: str | None = Field(
        default=None, description="retries with the same id apply the script once"
    )


class CommandsRequest(BaseModel):
    model_config = _STRICT
    commands: list[CommandModel] = Field(
        description="applied in order as one version, or not at all"
    )
    request_id: str | None = Field(
        default=None, description="retries with the same id apply the commands once"
    )


# --------------------------------------------------------------------------- responses


class SqlResponse(BaseModel):
    version: int
    columns: list[str]
    rows: list[list[Scalar]]


class ExecuteResponse(BaseModel):
    version: int
    applied: list[bool]
    created: bool


class TableSummary(BaseModel):
    id: int
    schema_: str = Field(alias="schema")
    name: str
    zone: str | None
    table_version: int
    columns: int


class IndexSummary(BaseModel):
    id: int
    schema_: str = Field(alias="schema")
    name: str
    table: str
    index_kind: str
    unique: bool
    primary_key: bool
    columns: list[str]
    status: str


class CatalogSummary(BaseModel):
    version: int
    activation_time: int = Field(description="hybrid timestamp: milliseconds << 16 | logical")
    activated_at: str = Field(description="ISO-8601 UTC")
    default_zone: str | None
    schemas: list[SchemaModel]  # type: ignore[valid-type]
    tables: list[TableSummary]
    indexes: list[IndexSummary]
    zones: list[ZoneModel]  # type: ignore[valid-type]


class TableResponse(BaseModel):
    version: int
    schema_: str = Field(alias="schema")
    zone: str | None
    table: TableModel  # type: ignore[valid-type]
    indexes: list[IndexModel]  # type: ignore[valid-type]


class DataCommitModel(BaseModel):
    """What a ``DATA_COMMIT`` event says of the data commit."""

    snapshot_id: int
    metadata: str
    operation: str
    rows_added: int
    rows_removed: int
    files_added: int
    files_removed: int


class EventModel(BaseModel):
    type: str
    object_id: int
    data_commit: DataCommitModel | None = None


class VersionModel(BaseModel):
    """One version: what ``/v1/history`` lists and ``/v1/events`` streams."""

    version: int
    commit_time: int
    activation_time: int
    activated_at: str
    node: str
    request_id: str | None
    summary: str
    events: list[EventModel]


class HistoryResponse(BaseModel):
    earliest: int
    latest: int
    versions: list[VersionModel]


class ObjectRefModel(BaseModel):
    kind: str
    id: int
    name: str


class FieldChangeModel(BaseModel):
    field: str
    before: Scalar | list[Scalar]
    after: Scalar | list[Scalar]


class ObjectChangeModel(ObjectRefModel):
    fields: list[FieldChangeModel]


class DefinedObjectModel(ObjectRefModel):
    definition: str = Field(description="What the object is, in one line.")


class DiffResponse(BaseModel):
    before: int
    after: int
    added: list[DefinedObjectModel]
    removed: list[DefinedObjectModel]
    changed: list[ObjectChangeModel]
