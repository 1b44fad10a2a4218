"""Idempotent requests: a caller names a change with a request id, so that
retrying it (after a timeout, a lost reply, a crash of the process that
sent it) returns the original result instead of applying it twice.

The id travels inside the ``VersionedUpdate`` it produced, with a digest of
its commands and their applied flags, so every node learns it from the log
itself. A node keeps the ids of its available versions in an index, and a
checkpoint carries the ids of the versions it replaces that are younger than
the request window, so a retry is still recognised after truncation.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from immutables import Map

from almanac import _check as check
from almanac.errors import ValidationError
from almanac.model.catalog_version import CatalogVersion
from almanac.model.clock import LOGICAL_BITS
from almanac.model.entries import VersionedUpdate

__all__ = [
    "DEFAULT_REQUEST_WINDOW_S",
    "MAX_REQUEST_ID_LENGTH",
    "Checkpoint",
    "RequestIndex",
    "RequestRecord",
    "carried",
    "check_request_id",
    "forget",
    "horizon",
    "record_of",
    "remember",
    "request_digest",
]

MAX_REQUEST_ID_LENGTH = 128
DEFAULT_REQUEST_WINDOW_S = 24 * 3600.0
"""How long a request id stays known after its version became active, even
once a checkpoint truncated that version away (24 hours)."""

RequestIndex = Map[str, "RequestRecord"]


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """What a retry of ``request_id`` gets back: the version it made, its
    applied flags, and the digest that tells a retry from a different request
    reusing the id. ``activation_time`` dates it for the request window."""

    request_id: str
    version: int
    activation_time: int
    digest: bytes
    applied: tuple[bool, ...]


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A log checkpoint: the whole catalog of its version, and the requests
    of the versions it replaces that are still inside the request window
    (sorted by id)."""

    catalog: CatalogVersion
    requests: tuple[RequestRecord, ...] = ()


def check_request_id(value: object, what: str) -> str | None:
    """None, or 1 to 128 printable ASCII characters (space to tilde): ids
    travel in HTTP headers, logs and error messages as they are."""
    if value is None:
        return None
    expected = f"None or a str of 1 to {MAX_REQUEST_ID_LENGTH} printable ASCII characters"
    if not isinstance(value, str):
        raise check.fail(what, expected, value)
    bad = next((i for i, c in enumerate(value) if not " " <= c <= "~"), None)
    if not 1 <= len(value) <= MAX_REQUEST_ID_LENGTH or bad is not None:
        problem = (
            f"it has {len(value)} characters"
            if bad is None
            else f"character U+{ord(value[bad]):04X} at position {bad + 1} is not printable ASCII"
        )
        raise ValidationError(
            f"{what} must be {expected}: {problem}",
            what=what,
            rule="request-id",
            request_id=check.describe(value),
        )
    return str(value)


def request_digest(commands: Sequence[object]) -> bytes:
    """SHA-256 of a canonical text of the commands: equal batches give equal
    digests in every process (no hash order, no addresses)."""
    parts: list[str] = []
    for command in commands:
        _canonical(command, parts)
        parts.append("\n")
    return hashlib.sha256("".join(parts).encode("utf-8", "backslashreplace")).digest()


def _canonical(value: object, out: list[str]) -> None:
    # A str or int subclass (a name type, say) means what its value means.
    if isinstance(value, enum.Enum):
        out.append(f"{type(value).__qualname__}.{value.name}")
    elif isinstance(value, str):
        out.append(str.__repr__(value))
    elif isinstance(value, bool) or value is None:
        out.append(repr(value))
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, tuple | list):
        out.append("(")
        for item in value:
            _canonical(item, out)
            out.append(",")
        out.append(")")
    elif isinstance(value, float):
        out.append(float(value).hex())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        out.append(type(value).__qualname__)
        out.append("(")
        for name in _field_names(type(value)):
            out.append(name)
            out.append("=")
            _canonical(getattr(value, name), out)
            out.append(",")
        out.append(")")
    else:
        out.append(f"{type(value).__qualname__}:{value!r}")


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def record_of(update: VersionedUpdate, activation_time: int) -> RequestRecord | None:
    if update.request_id is None:
        return None
    return RequestRecord(
        update.request_id, update.version, activation_time, update.request_digest, update.applied
    )


def remember(index: RequestIndex, records: Iterable[RequestRecord]) -> RequestIndex:
    m = index.mutate()
    for record in records:
        m[record.request_id] = record
    return m.finish()


def horizon(now: int, window_s: float) -> int:
    """The hybrid timestamp before which a request's window has passed."""
    return max(now - (int(window_s * 1000) << LOGICAL_BITS), 0)


def forget(index: RequestIndex, earliest: int, oldest: int) -> RequestIndex:
    """Drop the requests of versions before ``earliest`` (truncated) that
    became active before ``oldest`` (their window passed)."""
    stale = [k for k, r in index.items() if r.version < earliest and r.activation_time < oldest]
    if not stale:
        return index
    m = index.mutate()
    for key in stale:
        del m[key]
    return m.finish()


def carried(index: RequestIndex, version: int, oldest: int) -> tuple[RequestRecord, ...]:
    """The requests a checkpoint at ``version`` carries: those of versions up
    to it that became active at ``oldest`` or later, sorted by id."""
    return tuple(
        sorted(
            (r for r in index.values() if r.version <= version and r.activation_time >= oldest),
            key=lambda r: r.request_id,
        )
    )
