"""Commands: frozen values that validate against a catalog version and yield entries.

``if_exists``/``if_not_exists`` guard the object a command names; a command on
columns of a table spells out which each flag guards: ``if_table_exists``,
``if_column_exists``, ``if_column_not_exists``."""

from almanac.commands.base import ColumnDef, Command, CommitContext
from almanac.commands.columns import (
    AddColumns,
    AlterColumn,
    AlterField,
    DropColumns,
    EvolveColumn,
    RenameColumn,
)
from almanac.commands.indexes import (
    CreateIndex,
    DropIndex,
    MakeIndexAvailable,
    RemoveIndex,
    RenameIndex,
    StartBuildingIndex,
)
from almanac.commands.partitions import (
    EvolvePartitionSpec,
    PartitionFieldDef,
    SetPartitionSpec,
    SetSortOrder,
    SortFieldDef,
)
from almanac.commands.preview import Preview, preview
from almanac.commands.schemas import CreateSchema, DropSchema
from almanac.commands.tables import (
    CreateTable,
    DropTable,
    PurgeTable,
    RecoverTable,
    RenameTable,
    SetPrimaryKey,
    SetTableProperties,
)
from almanac.commands.zones import AlterZone, CreateZone, DropZone, RenameZone, SetDefaultZone

__all__ = [
    "AddColumns",
    "AlterColumn",
    "AlterField",
    "EvolveColumn",
    "EvolvePartitionSpec",
    "PartitionFieldDef",
    "SetPartitionSpec",
    "SetSortOrder",
    "SortFieldDef",
    "AlterZone",
    "ColumnDef",
    "Command",
    "CommitContext",
    "CreateIndex",
    "CreateSchema",
    "CreateTable",
    "CreateZone",
    "DropColumns",
    "DropIndex",
    "DropSchema",
    "DropTable",
    "DropZone",
    "MakeIndexAvailable",
    "Preview",
    "PurgeTable",
    "RecoverTable",
    "RemoveIndex",
    "RenameColumn",
    "RenameIndex",
    "RenameTable",
    "RenameZone",
    "SetDefaultZone",
    "SetPrimaryKey",
    "SetTableProperties",
    "StartBuildingIndex",
    "preview",
]
