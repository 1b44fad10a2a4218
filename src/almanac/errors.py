"""The error hierarchy: every failure a user can cause is a ``CatalogError``.

::

    CatalogError                      root; carries structured ``context``
    ├── ValidationError               a command breaks a catalog rule
    ├── NotFoundError                 a named object does not exist
    ├── AlreadyExistsError            a name is already taken
    ├── SqlParseError                 DDL text is not valid (line, column, text)
    ├── VersionNotFoundError          a version was never made or was truncated
    ├── ConflictError                 a commit lost every race it was allowed
    ├── SerializationError            bytes are truncated, corrupt or unknown
    ├── CorruptLogError               the update log holds an entry that cannot apply
    └── MetastoreError                the metastore refused or failed an operation
        └── CompactedError            a revision's history was compacted away

Callers catch ``CatalogError`` for "the user asked for something wrong" and let
anything else propagate as a bug.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AlreadyExistsError",
    "CatalogError",
    "CompactedError",
    "ConflictError",
    "CorruptLogError",
    "MetastoreError",
    "NotFoundError",
    "SerializationError",
    "SqlParseError",
    "ValidationError",
    "VersionNotFoundError",
]


class CatalogError(Exception):
    """Root of every error a user of Almanac can cause.

    ``context`` holds the structured facts behind the message (object kind,
    name, rule, version, ...) so that front ends can render or map them
    without parsing text.
    """

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        self.context: dict[str, Any] = context

    def __str__(self) -> str:
        return self.message


class ValidationError(CatalogError):
    """A command breaks a rule of the catalog; nothing was changed."""


class NotFoundError(CatalogError):
    """A named object (schema, table, column, index, zone) does not exist."""


class AlreadyExistsError(CatalogError):
    """The name is already taken in its namespace."""


class SqlParseError(CatalogError):
    """DDL text could not be parsed; ``line``/``column`` are 1-based."""

    def __init__(self, message: str, *, line: int, column: int, text: str) -> None:
        super().__init__(
            f"{message} at line {line}, column {column}: {text!r}",
            line=line,
            column=column,
            text=text,
        )
        self.line = line
        self.column = column
        self.text = text


class VersionNotFoundError(CatalogError):
    """The requested catalog version is unknown or no longer available."""

    def __init__(self, message: str, *, version: int, earliest: int | None = None) -> None:
        super().__init__(message, version=version, earliest=earliest)
        self.version = version
        self.earliest = earliest


class ConflictError(CatalogError):
    """A commit kept losing the compare-and-swap race to other writers."""

    def __init__(self, message: str, *, attempts: int) -> None:
        super().__init__(message, attempts=attempts)
        self.attempts = attempts


class SerializationError(CatalogError):
    """Bytes could not be decoded: truncated, corrupted or of an unknown type."""


class CorruptLogError(CatalogError):
    """The update log holds an entry that cannot be read or applied; a node
    refuses to start on it rather than serve a wrong catalog."""


class MetastoreError(CatalogError):
    """The metastore refused or failed an operation."""


class CompactedError(MetastoreError):
    """The history before ``compact_revision`` is gone; a watch or a past read
    asked for a revision older than that."""

    def __init__(self, message: str, *, revision: int, compact_revision: int) -> None:
        super().__init__(message, revision=revision, compact_revision=compact_revision)
        self.revision = revision
        self.compact_revision = compact_revision
