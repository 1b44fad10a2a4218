"""Which catalog version a read sees: a version number, an instant, or the
latest. Every front end (SQL ``AS OF``, the HTTP API's query parameters,
``system_table``, Spark's read options) parses what its user wrote into one
``ReadPoint`` and asks it for the version, so the rules are the same
everywhere: versions start at 1, an instant needs a UTC offset, and naming
both is an error.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Protocol

from almanac import _check as check
from almanac.errors import ValidationError, VersionNotFoundError
from almanac.model.catalog_version import CatalogVersion

__all__ = ["ReadPoint", "VersionSource", "existing_version", "parse_instant", "read_point"]


class VersionSource(Protocol):
    """Where a read point finds its version (``Catalog`` is one)."""

    @property
    def earliest_version(self) -> int: ...

    def catalog(self, version: int | None = None) -> CatalogVersion: ...

    def catalog_at(self, timestamp: int | dt.datetime) -> CatalogVersion: ...


@dataclass(frozen=True, slots=True)
class ReadPoint:
    """A catalog version (``version``), the version active at an instant
    (``timestamp``: a hybrid timestamp or an aware datetime), or, with
    neither, the latest."""

    version: int | None = None
    timestamp: int | dt.datetime | None = None

    def __post_init__(self) -> None:
        if self.version is not None and self.timestamp is not None:
            raise ValidationError(
                "A read names a version or a timestamp, not both", rule="read-point"
            )

    @property
    def latest(self) -> bool:
        return self.version is None and self.timestamp is None

    def resolve(self, source: VersionSource) -> CatalogVersion:
        """The catalog version this point names; ``VersionNotFoundError`` for
        version 0, a version never made or checkpointed away, or an instant
        before the first version."""
        if self.timestamp is not None:
            version = source.catalog_at(self.timestamp)
            if version.version == 0:
                raise VersionNotFoundError(
                    f"No catalog version was active at {_shown(self.timestamp)}: the catalog "
                    "did not exist yet",
                    version=0,
                    earliest=source.earliest_version,
                )
            return version
        if self.version is not None:
            return source.catalog(existing_version(self.version))
        return source.catalog()


def existing_version(version: int) -> int:
    """Version 0 is the empty catalog before the first version: no catalog
    existed then, so a read names version 1 or later."""
    if version == 0:
        raise VersionNotFoundError(
            "Catalog version 0 does not exist: versions start at 1", version=0
        )
    return version


def parse_instant(text: str, what: str, **context: Any) -> dt.datetime:
    """An ISO-8601 instant with a UTC offset (``Z`` or ``+01:00``) inside the
    hybrid clock's range; a time without a zone would name different instants
    on different machines, so it is refused. ``what`` names the input in
    errors ("Timestamp", "Query parameter 'timestamp'")."""
    shown = repr(text[:60])
    try:
        moment = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValidationError(
            f"{what} must be an ISO-8601 instant such as '2026-11-23T01:02:03Z', got {shown}",
            rule="read-point",
            **context,
        ) from None
    if moment.utcoffset() is None:
        raise ValidationError(
            f"{what} {shown} has no UTC offset: end it with Z or +HH:MM (without one its "
            "instant would depend on the machine's time zone)",
            rule="read-point",
            **context,
        )
    try:
        check.timestamp(moment, what)
    except ValidationError:
        raise ValidationError(
            f"{what} {shown} is outside the hybrid clock's range (1970 to 6429)",
            rule="read-point",
            **context,
        ) from None
    return moment


def read_point(version: object = None, timestamp: object = None, *, what: str) -> ReadPoint:
    """The read point of a front end's two inputs, as its user wrote them
    (``what`` names them in errors, e.g. "Option" or "Query parameter"):
    ``version`` a non-negative int or its decimal text; ``timestamp`` a hybrid
    timestamp (an int or its decimal text), an aware datetime, or ISO-8601
    text with a UTC offset."""
    if version is not None and timestamp is not None:
        raise ValidationError(
            f"Give {what} 'version' or {what} 'timestamp', not both", rule="read-point"
        )
    if version is not None:
        if isinstance(version, str):
            text = version.strip()
            if not text.isdigit():
                raise ValidationError(
                    f"{what} 'version' must be a catalog version number, got {version[:60]!r}",
                    rule="read-point",
                )
            version = int(text)
        return ReadPoint(version=check.integer(version, f"{what} 'version'", lo=0))
    if timestamp is None:
        return ReadPoint()
    name = f"{what} 'timestamp'"
    if isinstance(timestamp, str):
        text = timestamp.strip()
        if text.isdigit():
            return ReadPoint(timestamp=check.timestamp(int(text), name))
        return ReadPoint(timestamp=parse_instant(timestamp, name))
    if isinstance(timestamp, dt.datetime):
        check.timestamp(timestamp, name)
        return ReadPoint(timestamp=timestamp)
    return ReadPoint(timestamp=check.timestamp(timestamp, name))


def _shown(timestamp: int | dt.datetime) -> str:
    if isinstance(timestamp, dt.datetime):
        return timestamp.isoformat()
    return f"hybrid time {timestamp}"
