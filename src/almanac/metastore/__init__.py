"""The metastore layer: revisioned key-value storage under the update log.

Open one with :func:`open_metastore` from a URI, so that a store can be named
across processes (Spark's commit workers receive a URI, not an object):

* ``memory://`` - a fresh in-process store (tests);
* ``sqlite:///abs/path.db`` - a SQLite file shared by the processes of one
  machine;
* ``etcd://h1:p1,h2:p2/ns?timeout=S`` - an etcd cluster, keys under ``ns/``
  (see :mod:`almanac.metastore.etcd`);
* a catalog directory - its ``catalog.db``.

``durability`` ("full", the default, or "normal") picks a SQLite file's
``PRAGMA synchronous`` (see :mod:`almanac.metastore.sqlite`).

The URI is read by :func:`almanac.model.targets.parse_target`, the same reader
``almanac.connect`` uses.
"""

from __future__ import annotations

from almanac.errors import CompactedError, MetastoreError, ValidationError
from almanac.metastore.base import (
    Compare,
    CompareOp,
    CompareTarget,
    Delete,
    DeleteRange,
    DeleteResponse,
    Get,
    GetResponse,
    InvalidArgumentError,
    KeyValue,
    LeaseNotFoundError,
    Metastore,
    Op,
    Put,
    PutResponse,
    Range,
    RangeResult,
    Response,
    TxnResult,
    Watch,
    WatchEvent,
    WatchEventKind,
)
from almanac.metastore.memory import MemoryMetastore
from almanac.metastore.sqlite import SqliteMetastore

__all__ = [
    "CompactedError",
    "Compare",
    "CompareOp",
    "CompareTarget",
    "Delete",
    "DeleteRange",
    "DeleteResponse",
    "WatchEventKind",
    "Get",
    "GetResponse",
    "InvalidArgumentError",
    "KeyValue",
    "LeaseNotFoundError",
    "MemoryMetastore",
    "Metastore",
    "MetastoreError",
    "Op",
    "Put",
    "PutResponse",
    "Range",
    "RangeResult",
    "Response",
    "SqliteMetastore",
    "TxnResult",
    "Watch",
    "WatchEvent",
    "open_metastore",
]


def open_metastore(uri: str, *, durability: str = "full") -> Metastore:
    """Open the metastore behind a catalog target or a store URI (both are read
    by :func:`almanac.model.targets.parse_target`): ``memory://``, ``sqlite:///abs/
    path.db``, ``etcd://host:port,.../namespace``, or a catalog directory (its
    ``catalog.db``, which is not created here). The caller owns (and closes)
    the store."""
    from almanac.model.targets import parse_target

    try:
        target = parse_target(uri)
    except ValidationError as exc:
        raise InvalidArgumentError(f"Invalid metastore URI: {exc}", uri=repr(uri)) from None
    if target.kind == "http":
        raise InvalidArgumentError(
            f"Invalid metastore URI {uri!r}: it names a catalog server, not a store",
            uri=repr(uri),
        )
    if target.kind == "etcd":
        from almanac.metastore.etcd import DEFAULT_TIMEOUT_S, EtcdMetastore

        timeout = DEFAULT_TIMEOUT_S if target.timeout_s is None else target.timeout_s
        return EtcdMetastore(target.endpoints, namespace=target.namespace, timeout_s=timeout)
    store = target.store_path
    return MemoryMetastore() if store is None else SqliteMetastore(store, durability=durability)
