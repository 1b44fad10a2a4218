"""Catalog events: what listeners learn after a version is registered.

This module holds the values (an event, its type, a listener's failure) and
the JSON an event travels as; the registry that calls listeners, on its
thread, is the node's dispatcher (``almanac.node.dispatch``).

Events fire in entry order once the new version is readable, so a
listener may call ``catalog(event.version)``. A version with DDL is
*ready* only after its listeners and those of every earlier version
returned; a version of data commits alone (``DATA_COMMIT`` events only) is
ready once applied and every earlier DDL version is ready, its own
listeners still called in version order: a data commit changes no schema
anyone plans with, and a listener observes, so it must not hold a writer
up (see ``almanac.node.dispatch``). A failing listener is logged and recorded,
never allowed to block the version or the listeners after it.

Listeners run on one dispatcher thread per catalog node, version after
version in order, never on the thread that follows the log nor inside a
commit: a listener may call any public method, DDL included, without
holding up the versions it waits for. A version committed from inside a
listener is delivered to its own listeners after the running listener
returns, so within a listener "ready" can only mean "applied" for the
version being delivered and later ones (see ``Catalog.catalog_ready``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from almanac.model.entries import UpdateEntry

__all__ = ["Event", "EventType", "Listener", "ListenerFailure", "event_json"]


DATA_COMMIT_FIELDS = (
    "snapshot_id",
    "metadata",
    "operation",
    "rows_added",
    "rows_removed",
    "files_added",
    "files_removed",
)
"""What a ``DATA_COMMIT`` event's JSON says of its commit (``event_json``)."""


class EventType(enum.Enum):
    TABLE_CREATE = "TABLE_CREATE"
    TABLE_DROP = "TABLE_DROP"
    TABLE_ALTER = "TABLE_ALTER"
    TABLE_SOFT_DROP = "TABLE_SOFT_DROP"
    TABLE_RECOVER = "TABLE_RECOVER"
    INDEX_CREATE = "INDEX_CREATE"
    INDEX_BUILDING = "INDEX_BUILDING"
    INDEX_AVAILABLE = "INDEX_AVAILABLE"
    INDEX_STOPPING = "INDEX_STOPPING"
    INDEX_REMOVED = "INDEX_REMOVED"
    ZONE_CREATE = "ZONE_CREATE"
    ZONE_ALTER = "ZONE_ALTER"
    ZONE_DROP = "ZONE_DROP"
    SET_DEFAULT_ZONE = "SET_DEFAULT_ZONE"
    DATA_COMMIT = "DATA_COMMIT"


@dataclass(frozen=True, slots=True)
class Event:
    """One change of one object in one version.

    ``causality_token`` orders events across the whole system: it is the
    metastore revision that committed the version.
    """

    type: EventType
    version: int
    causality_token: int
    object_id: int
    entry: UpdateEntry


Listener = Callable[[Event], None]


def event_json(entry: UpdateEntry) -> dict[str, Any]:
    """The event of ``entry`` as the HTTP API's history and event stream and
    ``almanac watch --json`` send it: its type and object id, and
    ``data_commit``, a data commit's snapshot, metadata, operation and counts
    (``None`` for every other event), so a listener elsewhere learns what
    changed without reading the table."""
    event_type = entry.event_type
    assert event_type is not None, "only entries with an event type are events"
    data = None
    # Only a data commit's entry (``TableDataCommitted``) has this type.
    if event_type is EventType.DATA_COMMIT:
        data = {name: getattr(entry, name) for name in DATA_COMMIT_FIELDS}
    return {"type": event_type.value, "object_id": entry.object_id(), "data_commit": data}


@dataclass(frozen=True, slots=True)
class ListenerFailure:
    event: Event
    listener: Listener
    error: BaseException
