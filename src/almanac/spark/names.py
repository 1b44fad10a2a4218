"""Where a Spark job finds the catalog, and the point a read is at.

Spark's planning and commit steps run in fresh Python processes that receive
strings and pickles, never the driver's objects, so everything here starts
from a catalog *target* (what ``almanac.connect`` accepts) and rebuilds the
rest: the metastore file behind it, the warehouse, the table.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import almanac
from almanac.catalog import Catalog
from almanac.errors import ValidationError
from almanac.read_point import ReadPoint
from almanac.read_point import read_point as parse_read_point
from almanac.targets import Target, parse_target

__all__ = [
    "catalog_session",
    "close_sessions",
    "durable_target",
    "read_point",
    "store_uri",
]


def durable_target(target: object) -> Target:
    """The parsed catalog target of a Spark job; only durable targets work,
    because Spark's workers are other processes."""
    if target is None or target == "":
        raise ValidationError(
            "A Spark job needs the catalog target (option 'catalog')", rule="durable-target"
        )
    parsed = parse_target(target)
    if not parsed.durable:
        raise ValidationError(
            f"Catalog target '{parsed}' lives in one process; Spark needs a durable target "
            "(a directory, sqlite:///path/file.db or etcd://host:port/namespace)",
            target=str(parsed),
            rule="durable-target",
        )
    return parsed


def store_uri(target: str) -> str:
    """The metastore URI behind a durable catalog target."""
    return durable_target(target).store_uri


@dataclass
class _Open:
    catalog: Catalog
    users: int = 0


_OPEN_LIMIT = 8
_open: OrderedDict[tuple[str, str | None], _Open] = OrderedDict()
_open_lock = threading.Lock()


def close_sessions() -> None:
    """Close the catalog nodes kept open between steps (also done at exit);
    a process that stops its metastore first closes them before."""
    with _open_lock:
        entries = list(_open.values())
        _open.clear()
    for entry in entries:
        entry.catalog.close()


atexit.register(close_sessions)


@contextlib.contextmanager
def catalog_session(target: str, warehouse: str | None = None) -> Iterator[Catalog]:
    """A catalog node for one planning or commit step of this process.

    Nodes are kept open between steps (up to a few targets), following their
    log, so a driver step costs a catch-up, not a node's start (log replay
    and a follower thread). The catalog must exist: ``connect`` would create
    an empty one at a mistyped path, and the job would then fail on a
    missing table instead."""
    parsed = durable_target(target)
    key = (str(parsed), warehouse)
    stale: list[Catalog] = []
    with _open_lock:
        entry = _open.get(key)
        if entry is not None and entry.catalog.closed:
            del _open[key]
            entry = None
    if entry is None:
        fresh = almanac.connect(parsed, warehouse=warehouse, create=False)
        with _open_lock:
            entry = _open.get(key)
            if entry is None:
                entry = _open[key] = _Open(fresh)
            else:
                stale.append(fresh)
    with _open_lock:
        entry.users += 1
        _open.move_to_end(key)
        while len(_open) > _OPEN_LIMIT:
            oldest_key, oldest = next(iter(_open.items()))
            if oldest.users:
                break
            del _open[oldest_key]
            stale.append(oldest.catalog)
    for cat in stale:
        cat.close()
    try:
        entry.catalog.catch_up()
        yield entry.catalog
    finally:
        with _open_lock:
            entry.users -= 1


def read_point(options: Mapping[str, str]) -> ReadPoint:
    """Options ``version`` (a catalog version) or ``timestamp`` (a hybrid
    timestamp as an integer, or an ISO-8601 datetime with a UTC offset or
    ``Z``), by the rules every read point follows."""
    return parse_read_point(options.get("version"), options.get("timestamp"), what="Option")
