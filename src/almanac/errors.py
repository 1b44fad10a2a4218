"""The error hierarchy: every failure a caller can cause is a ``CatalogError``.

Grouped by what the caller can do about it::

    CatalogError                      root; carries structured ``context``
    ├── InputError                    the request is wrong: fix it; nothing changed
    │   ├── ValidationError           a command or argument breaks a rule
    │   │   ├── DataError             rows do not fit the table (names the column)
    │   │   └── AmbiguousNameError    a name matches case-only twins of an old catalog
    │   ├── NotFoundError             a named object does not exist
    │   ├── AlreadyExistsError        a name is already taken
    │   ├── SqlParseError             DDL text is not valid (line, column, text)
    │   ├── VersionNotFoundError      a version was never made or was truncated
    │   ├── AccessDeniedError         a server refused the caller's bearer token
    │   └── SnapshotExpiredError      the data snapshot a read needs was expired
    ├── RetryableError                the state moved under the request: try again
    │   ├── ConflictError             a commit lost every race it was allowed
    │   ├── TableBeingCreatedError    another CREATE ... AS SELECT holds the name
    │   ├── WaitTimeoutError          a wait ran out of time (also a TimeoutError)
    │   └── WriteStateError           a staged write can no longer commit: redo it
    └── StorageError                  stored state is damaged or unreachable: call an operator
        ├── ReadOnlyCatalogError      the catalog was opened read-only: it cannot change
        ├── CorruptLogError           the update log holds an entry that cannot apply
        │   └── CatalogIdentityError  the store is not (or no longer all of) the catalog its
        │                             directory held: emptied, replaced, versions lost
        ├── SerializationError        bytes are truncated, corrupt or unknown
        │   └── CorruptDataError      a stored record (a route, a data pointer) or a data
        │                             file is damaged
        ├── WarehouseFormatError      table data in an older format: run the named upgrade
        └── MetastoreError            the metastore refused or failed an operation
            ├── InvalidArgumentError  a metastore call got a malformed argument
            ├── LeaseNotFoundError    a lease expired or was never granted
            ├── CompactedError        a revision's history was compacted away
            └── MetastoreUnavailableError  no quorum answered within the bound (also a
                                      RetryableError: nothing was applied, try again)

Callers catch ``CatalogError`` for "something about this request or this
catalog is wrong" and let anything else propagate as a bug.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AccessDeniedError",
    "AlreadyExistsError",
    "AmbiguousNameError",
    "CatalogError",
    "CatalogIdentityError",
    "CompactedError",
    "ConflictError",
    "CorruptDataError",
    "CorruptLogError",
    "DataError",
    "InputError",
    "InvalidArgumentError",
    "LeaseNotFoundError",
    "MetastoreError",
    "MetastoreUnavailableError",
    "NotFoundError",
    "ReadOnlyCatalogError",
    "RetryableError",
    "SerializationError",
    "SnapshotExpiredError",
    "SqlParseError",
    "StorageError",
    "WarehouseFormatError",
    "WarehouseOwnerError",
    "TableBeingCreatedError",
    "ValidationError",
    "VersionNotFoundError",
    "WaitTimeoutError",
    "WriteStateError",
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


class InputError(CatalogError):
    """The request is wrong; fixing it is the caller's part. Nothing changed."""


class RetryableError(CatalogError):
    """The catalog moved under the request; the same request may succeed later."""


class StorageError(CatalogError):
    """What is stored is damaged, or the store failed; an operator must look."""


class WarehouseFormatError(StorageError):
    """The warehouse holds table data in a format this release no longer
    reads; the message names the command that converts it."""


class WarehouseOwnerError(InputError):
    """The directory is not proven to be this catalog's warehouse (its marker
    is missing or names another catalog), so nothing in it is deleted."""


class ValidationError(InputError):
    """A command breaks a rule of the catalog; nothing was changed."""


class AmbiguousNameError(ValidationError):
    """A spelling matches, without regard to case, several objects that a
    catalog made before names became case-insensitive still holds (case-only
    twins); the message names them all. Each is still found by its exact
    spelling."""


class NotFoundError(InputError):
    """A named object (schema, table, column, index, zone) does not exist."""


class AlreadyExistsError(InputError):
    """The name is already taken in its namespace."""


class SqlParseError(InputError):
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


class VersionNotFoundError(InputError):
    """The requested catalog version is unknown or no longer available."""

    def __init__(self, message: str, *, version: int, earliest: int | None = None) -> None:
        super().__init__(message, version=version, earliest=earliest)
        self.version = version
        self.earliest = earliest


class AccessDeniedError(InputError):
    """A server refused the request's credentials: no bearer token, a token
    it does not know, or a role too weak. The message names the server."""


class ConflictError(RetryableError):
    """A commit kept losing the compare-and-swap race to other writers, or
    its request id was already used for other commands."""

    def __init__(self, message: str, *, attempts: int, **context: Any) -> None:
        super().__init__(message, attempts=attempts, **context)
        self.attempts = attempts


class WaitTimeoutError(RetryableError, TimeoutError):
    """A wait did not end within its timeout: the message names what was
    awaited and the timeout (``awaited`` and ``timeout`` in ``context``).
    Nothing was undone by giving up; waiting again may succeed. It is also a
    builtin ``TimeoutError``, so ``except TimeoutError`` catches it."""

    def __init__(
        self, message: str, *, awaited: str, timeout: float | None, **context: Any
    ) -> None:
        super().__init__(message, awaited=awaited, timeout=timeout, **context)
        self.awaited = awaited
        self.timeout = timeout


class SerializationError(StorageError):
    """Bytes could not be decoded: truncated, corrupted or of an unknown type."""


class CorruptDataError(SerializationError):
    """A runtime record kept beside the log (a tablet route, a server's
    index or report, a data pointer or snapshot record) is not what its key
    must hold, or a data file is not what its commit recorded; ``key``, or
    ``path`` and ``table``, in ``context`` name it."""


class CorruptLogError(StorageError):
    """The update log holds an entry that cannot be read or applied; a node
    refuses to start on it rather than serve a wrong catalog."""


class CatalogIdentityError(CorruptLogError):
    """The store does not match the identity record kept beside it: it is
    empty, belongs to another catalog, or lacks versions this directory has
    seen (a lost WAL, a restored old copy). ``context`` names the paths,
    the catalog ids and the versions."""


class MetastoreError(StorageError):
    """The metastore refused or failed an operation."""


class CompactedError(MetastoreError):
    """The history before ``compact_revision`` is gone; a watch or a past read
    asked for a revision older than that."""

    def __init__(self, message: str, *, revision: int, compact_revision: int) -> None:
        super().__init__(message, revision=revision, compact_revision=compact_revision)
        self.revision = revision
        self.compact_revision = compact_revision


class InvalidArgumentError(MetastoreError):
    """The caller passed a malformed argument; nothing was read or written."""


class MetastoreUnavailableError(MetastoreError, RetryableError):
    """The metastore did not answer within the configured bound (no quorum,
    unreachable endpoints). An operation that raised it either applied
    nothing, or, for a write whose reply was lost, is reported as such in
    ``context["outcome"]`` ("unknown"), so callers re-read before retrying."""


class LeaseNotFoundError(MetastoreError):
    """The lease was never granted, was revoked, or has expired."""

    def __init__(self, lease_id: int) -> None:
        super().__init__(f"lease {lease_id} does not exist or has expired", lease_id=lease_id)
        self.lease_id = lease_id


class DataError(ValidationError):
    """Rows do not fit the table: a type that cannot be stored without loss, a
    NULL in a NOT NULL column, a missing or unknown column. The message names
    the column and the table; nothing was written."""


class SnapshotExpiredError(InputError):
    """The data snapshot a read at a version or timestamp needs was removed by
    ``expire_data``; the read would otherwise silently return other data."""


class WriteStateError(RetryableError):
    """A write cannot be committed in its state: it was aborted, its staging
    lease expired (the janitor may have removed its files), or its write id
    was committed to another table. Redo the write."""


class TableBeingCreatedError(RetryableError):
    """Another CREATE/REPLACE ... AS SELECT of the same name is in progress."""


class ReadOnlyCatalogError(StorageError):
    """The catalog's store is on a read-only file system, or its file or
    directory is not writable: it was opened read-only, so reads work and
    every change is refused (nothing was written)."""
