"""The request bodies of the Iceberg REST spec that pyiceberg has no model
for (it sends them as plain JSON); every other body and every response is
pyiceberg's own model."""

from __future__ import annotations

from pydantic import Field
from pyiceberg.table import CommitTableRequest, TableIdentifier
from pyiceberg.typedef import IcebergBaseModel

__all__ = [
    "CommitTransactionRequest",
    "CreateNamespaceRequest",
    "RenameTableRequest",
    "UpdateNamespacePropertiesRequest",
]


class CreateNamespaceRequest(IcebergBaseModel):
    namespace: list[str] = Field()
    properties: dict[str, str] = Field(default_factory=dict)


class UpdateNamespacePropertiesRequest(IcebergBaseModel):
    removals: list[str] = Field(default_factory=list)
    updates: dict[str, str] = Field(default_factory=dict)


class RenameTableRequest(IcebergBaseModel):
    source: TableIdentifier = Field()
    destination: TableIdentifier = Field()


class CommitTransactionRequest(IcebergBaseModel):
    table_changes: list[CommitTableRequest] = Field(alias="table-changes")
