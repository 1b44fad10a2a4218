"""``almanac watch``: print each catalog version, with its events, as it
arrives, from any available version on, until Ctrl-C (exit status 0).

A script that saw version N resumes with ``--from N+1`` and misses nothing:
the versions come from the catalog's own history, in order, whatever was
committed while nobody watched. ``--json`` prints one document a line
(``VersionRecord``, as the README shows it): the fields of an event of the
HTTP API's stream, with the activation time as ISO-8601 text.

On a catalog server (an ``http(s)://`` store) the versions come from its
history, asked for every quarter second: the same lines, the same order.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Protocol, TypedDict, cast

import click

from almanac.cli.app import int64_at_least, open_node, open_remote, resolve_target, store_option
from almanac.cli.output import Output

if TYPE_CHECKING:
    from almanac.access.remote import RemoteCatalog, RemoteVersionInfo
    from almanac.model.catalog_version import CatalogVersion
    from almanac.node.catalog import Catalog, VersionInfo

__all__ = [
    "DataCommitRecord",
    "EventRecord",
    "VersionRecord",
    "remote_version_record",
    "version_record",
    "watch",
]

_TICK_S = 0.25
"""How long a wait for the next version lasts before the stop flag is read."""


class DataCommitRecord(TypedDict):
    """What a ``DATA_COMMIT`` event says of the commit (``events.event_json``)."""

    snapshot_id: int
    metadata: str
    operation: str
    rows_added: int
    rows_removed: int
    files_added: int
    files_removed: int


class EventRecord(TypedDict):
    type: str
    object_id: int
    data_commit: DataCommitRecord | None


class VersionRecord(TypedDict):
    """One version, as ``watch --json`` prints it: the fields of an event
    of the HTTP API's stream."""

    version: int
    activation_time: str
    node: str
    request_id: str | None
    events: list[EventRecord]
    summary: str


def version_record(cat: Catalog, info: VersionInfo) -> VersionRecord:
    """One version as JSON: its number, activation time (ISO-8601, UTC),
    node, request id, events and the one-line summary."""
    from almanac.errors import VersionNotFoundError
    from almanac.model.events import event_json
    from almanac.sql.reads import iso_utc

    try:
        summary = cat.describe(info.version).partition(": ")[2]
    except VersionNotFoundError:  # checkpointed away while we printed
        summary = ""
    return {
        "version": info.version,
        "activation_time": iso_utc(info.activation_time),
        "node": info.node,
        "request_id": info.request_id,
        "events": [
            cast("EventRecord", event_json(entry))
            for entry in info.update.entries
            if entry.event_type is not None
        ],
        "summary": summary,
    }


def remote_version_record(info: RemoteVersionInfo) -> VersionRecord:
    """``version_record`` of a version a catalog server listed: the server
    already wrote its summary and events."""
    from almanac.sql.reads import iso_utc

    return {
        "version": info.version,
        "activation_time": iso_utc(info.activation_time),
        "node": info.node,
        "request_id": info.request_id,
        "events": _remote_events(info),
        "summary": info.summary,
    }


def _remote_events(info: RemoteVersionInfo) -> list[EventRecord]:
    """The events of a listed version, each data commit with its own event."""
    from almanac.model.events import EventType, event_json

    commits = iter(info.data_commits)
    records: list[EventRecord] = []
    for kind, object_id in info.events:
        commit = next(commits, None) if kind is EventType.DATA_COMMIT else None
        if commit is not None:
            records.append(cast("EventRecord", event_json(commit)))
        else:
            records.append({"type": kind.value, "object_id": object_id, "data_commit": None})
    return records


class _Watched(Protocol):
    """What ``watch`` reads of a catalog, local or remote, besides its versions."""

    @property
    def latest_version(self) -> int: ...

    @property
    def earliest_version(self) -> int: ...

    def catalog(self, version: int | None = None) -> CatalogVersion: ...


def _named(cat: _Watched, version: int, object_id: int) -> str:
    """``PUBLIC.T (#7)``: the object as the version left it, or as the one
    before had it (a drop); ``#7`` once neither is available."""
    from almanac.errors import VersionNotFoundError
    from almanac.model.summary import object_name

    for number in (version, version - 1):
        with contextlib.suppress(VersionNotFoundError):
            name = object_name(cat.catalog(number), object_id)
            if name is not None:
                return f"{name} (#{object_id})"
    return f"#{object_id}"


def _show(cat: _Watched, record: VersionRecord, out: Output) -> None:
    if out.as_json:
        out.record(record)
        return
    node = record["node"] or "-"
    out.line(
        f"version {record['version']}  {record['activation_time']}  {node}  {record['summary']}"
    )
    for event in record["events"]:
        text = f"  event {event['type']} {_named(cat, record['version'], event['object_id'])}"
        data = event.get("data_commit")
        if data is not None:
            text += (
                f" snapshot {data['snapshot_id']}: {data['operation']}, "
                f"+{data['rows_added']:,} -{data['rows_removed']:,} rows, "
                f"+{data['files_added']:,} -{data['files_removed']:,} files"
            )
        out.line(text)


@click.command()
@click.option(
    "--from",
    "start",
    type=int64_at_least(1),
    metavar="VERSION",
    help="Print the versions from VERSION on (default: only new ones).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document a line.")
@store_option
def watch(start: int | None, as_json: bool, store: str | None) -> int:
    """Print catalog versions and their events as they arrive; Ctrl-C stops."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    # Handlers of our own: a child started with SIGINT ignored still stops on it.
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        out = Output.for_stdout(as_json)
        if resolve_target(store).kind == "http":
            with open_remote(store) as remote:
                _follow_remote(remote, start, stop, out)
        else:
            with open_node(store) as cat:
                _follow_local(cat, start, stop, out)
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
    return 0


def _follow_local(cat: Catalog, start: int | None, stop: threading.Event, out: Output) -> None:
    from almanac.errors import WaitTimeoutError

    def wait(seen: int) -> None:
        with contextlib.suppress(WaitTimeoutError):
            cat.catalog_ready(seen + 1, timeout=_TICK_S, applied_only=True)

    def records(since: int) -> list[VersionRecord]:
        return [version_record(cat, info) for info in cat.history(since)]

    _follow(cat, records, wait, start, stop, out)


def _follow_remote(
    remote: RemoteCatalog, start: int | None, stop: threading.Event, out: Output
) -> None:
    def records(since: int) -> list[VersionRecord]:
        return [remote_version_record(info) for info in remote.history(since)]

    _follow(remote, records, lambda seen: stop.wait(_TICK_S), start, stop, out)


def _follow(
    cat: _Watched,
    records: Callable[[int], list[VersionRecord]],
    wait: Callable[[int], object],
    start: int | None,
    stop: threading.Event,
    out: Output,
) -> None:
    """Print the versions after the last one seen, then wait for more
    (``wait(seen)``), until ``stop``."""
    if start is not None and start <= cat.latest_version:
        cat.catalog(start)  # still available? (else VersionNotFoundError names the earliest)
    seen = cat.latest_version if start is None else start - 1
    while not stop.is_set():
        earliest = cat.earliest_version
        if earliest > seen + 1:
            click.echo(
                f"warning: versions {seen + 1} to {earliest - 1} were checkpointed "
                "away before they could be printed",
                err=True,
            )
            seen = earliest - 1
        for record in records(seen + 1):
            _show(cat, record, out)
            seen = record["version"]
        wait(seen)
