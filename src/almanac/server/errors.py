"""How a failure becomes an HTTP response: ``{"error", "message", "details"}``.

The status follows what the caller can do about it: fix the request (400,
404, 409), stop asking for a version that was truncated (410), or retry
later (503, with ``Retry-After``). ``details`` is the error's structured
context made JSON-safe, so clients branch on fields rather than on text.
"""

from __future__ import annotations

import datetime as dt
import enum
import math
from collections.abc import Mapping
from typing import Any

from almanac.errors import (
    AlreadyExistsError,
    CatalogError,
    ConflictError,
    InputError,
    MetastoreUnavailableError,
    NotFoundError,
    ReadOnlyCatalogError,
    RetryableError,
    SnapshotExpiredError,
    StorageError,
    TableBeingCreatedError,
    VersionNotFoundError,
    WaitTimeoutError,
    WriteStateError,
)

__all__ = ["RETRY_AFTER_S", "error_body", "json_safe", "status_of"]

RETRY_AFTER_S = 1
"""What a 503 tells the client to wait before trying again."""

_STATUS: tuple[tuple[type[CatalogError], int], ...] = (
    (MetastoreUnavailableError, 503),
    (VersionNotFoundError, 404),  # 410 when truncated: see status_of
    (SnapshotExpiredError, 410),
    (NotFoundError, 404),
    (AlreadyExistsError, 409),
    (ConflictError, 409),
    (TableBeingCreatedError, 409),
    (WriteStateError, 409),
    (WaitTimeoutError, 503),
    (InputError, 400),
    (RetryableError, 503),
    (ReadOnlyCatalogError, 403),  # nothing changed, and retrying will not help
    (StorageError, 500),
)
"""First match wins; a plain ``CatalogError`` (a closed node, a node that
stopped following its log) is 503: this server cannot answer now."""


def status_of(exc: CatalogError) -> int:
    if isinstance(exc, VersionNotFoundError):
        earliest = exc.earliest
        return 410 if earliest is not None and 0 <= exc.version < earliest else 404
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            return status
    return 503


def json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON: containers kept, enums by value, other objects as text."""
    if depth > 20:
        return str(value)
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**64 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, enum.Enum):
        return json_safe(value.value, depth + 1)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [json_safe(v, depth + 1) for v in items]
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def error_body(
    error: str, message: str, details: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    return {"error": error, "message": message, "details": json_safe(dict(details or {}))}
