"""The metastore layer: revisioned key-value storage under the update log.

Open one with :func:`open_metastore` from a URI, so that a store can be named
across processes (Spark's commit workers receive a URI, not an object):

* ``memory://`` - a fresh in-process store (tests);
* ``sqlite:///abs/path.db`` or a plain path ending in ``.db`` - a SQLite
  file shared by the processes of one machine; ``durability`` ("full", the
  default, or "normal") picks its ``PRAGMA synchronous`` (see
  :mod:`almanac.metastore.sqlite`).
"""

from __future__ import annotations

from urllib.parse import unquote

from almanac.errors import CompactedError, MetastoreError
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

_SQLITE_SCHEME = "sqlite://"


def open_metastore(uri: str, *, durability: str = "full") -> Metastore:
    """Open the metastore a URI names; the caller owns (and closes) it.
    ``durability`` applies to SQLite files; the memory store ignores it."""
    if not isinstance(uri, str):
        raise InvalidArgumentError(f"metastore URI must be a str, not {type(uri).__name__}")
    if uri == "memory://":
        return MemoryMetastore()
    if uri.startswith(_SQLITE_SCHEME):
        path = unquote(uri[len(_SQLITE_SCHEME) :])
        if not path.startswith("/"):
            raise InvalidArgumentError(
                f"sqlite metastore URI needs an absolute path (sqlite:///abs/path.db): {uri!r}",
                uri=uri,
            )
        return SqliteMetastore(path, durability=durability)
    if "://" not in uri and uri.endswith(".db"):
        return SqliteMetastore(uri, durability=durability)
    raise InvalidArgumentError(
        f"unsupported metastore URI {uri!r}: use memory://, sqlite:///abs/path.db"
        " or a path ending in .db",
        uri=uri,
    )
