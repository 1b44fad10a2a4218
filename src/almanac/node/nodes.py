"""Catalog nodes: who follows the log right now.

Each live node keeps ``catalog.node.{name}`` under a lease of its own: a
small JSON record (name, host, pid, start time, latest applied version).
The key names the node for operators and tests, and it makes names unique
among live nodes: a node takes its key only if it is absent. It goes away
at once when the node closes (the lease is revoked) and within the lease's
time to live when the node dies. The applied version is republished from a
background thread, batched, so that a node applying many versions writes
its key a few times a second at most.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import socket
import threading
import time
from dataclasses import dataclass

from almanac import _check as check
from almanac.errors import (
    AlreadyExistsError,
    CatalogError,
    CorruptLogError,
    LeaseNotFoundError,
    ValidationError,
)
from almanac.metastore import Compare, Metastore, Put
from almanac.node.leases import Renewal

__all__ = [
    "NODE_PREFIX",
    "NODE_TTL_S",
    "NodeInfo",
    "NodeRegistration",
    "check_node_name",
    "default_node_name",
    "list_nodes",
    "node_key",
]

NODE_PREFIX = "catalog.node."
NODE_TTL_S = 10.0
"""How long the key of a node that died without closing outlives it."""
PUBLISH_INTERVAL_S = 0.2
"""The shortest gap between two updates of a node's applied version."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}")
_NAME_RULE = "1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit"
_log = logging.getLogger("almanac.nodes")
_defaults_taken = 0
_defaults_lock = threading.Lock()


def node_key(name: str) -> str:
    return NODE_PREFIX + name


def check_node_name(value: object, what: str) -> str:
    """A node name, or a ``ValidationError`` saying the rule."""
    name = check.string(value, what, nonblank=True)
    if not _NAME.fullmatch(name):
        raise ValidationError(
            f"{what} must be {_NAME_RULE}, got {name!r}",
            what=what,
            rule="node name",
            value=name,
        )
    return name


def default_node_name() -> str:
    """``<hostname>-<pid>``, with ``-2``, ``-3``… for further nodes of this
    process (several nodes of one process on one store need distinct names)."""
    global _defaults_taken
    host = re.sub(r"[^A-Za-z0-9_.\-]", "-", socket.gethostname()).strip(".-_") or "node"
    with _defaults_lock:
        _defaults_taken += 1
        n = _defaults_taken
    base = f"{host[:100]}-{os.getpid()}"
    return base if n == 1 else f"{base}-{n}"


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """What a live node publishes about itself. ``applied`` trails the
    node's real latest version by at most ``PUBLISH_INTERVAL_S`` and a write."""

    name: str
    host: str
    pid: int
    started: str
    """When the node opened, ISO 8601 in UTC."""
    applied: int

    def encode(self) -> bytes:
        record = {
            "name": self.name,
            "host": self.host,
            "pid": self.pid,
            "started": self.started,
            "applied": self.applied,
        }
        return json.dumps(record, separators=(",", ":")).encode()

    @staticmethod
    def decode(key: str, value: bytes) -> NodeInfo:
        """The record stored under ``key``; ``CorruptLogError`` naming the key
        when it is not one."""
        try:
            record = json.loads(value)
            info = NodeInfo(
                name=record["name"],
                host=record["host"],
                pid=record["pid"],
                started=record["started"],
                applied=record["applied"],
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptLogError(
                f"Metastore key '{key}' does not hold a node record: {exc}", key=key
            ) from None
        fields_ok = (
            isinstance(info.name, str)
            and node_key(info.name) == key
            and isinstance(info.host, str)
            and isinstance(info.started, str)
            and all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 0
                for n in (info.pid, info.applied)
            )
        )
        if not fields_ok:
            raise CorruptLogError(
                f"Metastore key '{key}' holds a malformed node record: {value[:200]!r}", key=key
            )
        return info


def list_nodes(store: Metastore) -> list[NodeInfo]:
    """The live nodes of the catalog in ``store``, by name."""
    return [NodeInfo.decode(kv.key, kv.value) for kv in store.range(NODE_PREFIX).kvs]


class NodeRegistration:
    """Holds one node's key: taken on creation, kept alive and brought up to
    date by a background thread, removed by ``close``."""

    def __init__(
        self,
        store: Metastore,
        name: str,
        *,
        applied: int,
        ttl_s: float = NODE_TTL_S,
        fallback: bool = False,
    ) -> None:
        """``fallback``: the name is a default, so when a live node holds it
        the next default name is tried instead of refusing."""
        self._store = store
        self._ttl_s = ttl_s
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._applied = applied
        self._owned = True  # False while another node holds the name we lost
        started = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
        info = NodeInfo(name, socket.gethostname(), os.getpid(), started, applied)
        self._lease = store.grant_lease(ttl_s)
        try:
            for _ in range(100):
                if self._take(info):
                    break
                if not fallback:
                    raise self._taken(name)
                info = NodeInfo(default_node_name(), info.host, info.pid, started, applied)
            else:
                raise self._taken(name)
        except BaseException:
            self._revoke()
            raise
        self.info = info
        self._thread = threading.Thread(
            target=self._run, name=f"almanac-node-{info.name}", daemon=True
        )
        self._thread.start()

    @property
    def name(self) -> str:
        return self.info.name

    def _take(self, info: NodeInfo) -> bool:
        key = node_key(info.name)
        put = Put(key, info.encode(), lease=self._lease)
        return self._store.txn([Compare.absent(key)], [put]).succeeded

    def _taken(self, name: str) -> AlreadyExistsError:
        holder = self._store.get(node_key(name))
        who = ""
        if holder is not None:
            try:
                other = NodeInfo.decode(holder.key, holder.value)
                who = f" (host {other.host}, pid {other.pid}, started {other.started})"
            except CorruptLogError:
                pass
        return AlreadyExistsError(
            f"Node name '{name}' is taken by a live node{who}: choose another name, or, if "
            f"that node died, wait for its lease to expire (at most {self._ttl_s:g} s)",
            kind="node",
            name=name,
            rule="node names are unique among live nodes",
        )

    def saw(self, version: int) -> None:
        """Note that the node applied ``version``; published soon, batched."""
        if version > self._applied:
            self._applied = version
            self._wake.set()

    def _run(self) -> None:
        published = self.info.applied
        renewal = Renewal(self._ttl_s)
        while not self._stop.is_set():
            self._wake.wait(max(renewal.at - time.monotonic(), 0.0))
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                if renewal.due():
                    self._renew()
                    renewal.done()
                applied = self._applied
                if applied != published:
                    self.info = NodeInfo(
                        self.info.name, self.info.host, self.info.pid, self.info.started, applied
                    )
                    if self._owned:
                        self._store.put(node_key(self.info.name), self.info.encode(), self._lease)
                    published = applied
            except CatalogError as exc:
                if self._stop.is_set():
                    return
                _log.warning("Node '%s' could not update its node key: %s", self.info.name, exc)
            self._stop.wait(PUBLISH_INTERVAL_S)  # versions applied meanwhile go in one write

    def _renew(self) -> None:
        """Keep the lease alive; if it expired (the process was stopped for
        longer than its time to live), take a new one and the key again, or,
        while another node holds the name, leave its key alone."""
        try:
            self._store.keep_alive(self._lease)
            if self._owned:
                return
        except LeaseNotFoundError:
            self._lease = self._store.grant_lease(self._ttl_s)
        owned = self._take(self.info)
        if owned:
            _log.warning("Node '%s' lost its lease and registered again", self.info.name)
        elif self._owned:
            # Its holder's key is not ours to write: wait until it is free.
            _log.error(
                "Node '%s' lost its lease and another live node took its name", self.info.name
            )
        self._owned = owned

    def _revoke(self) -> None:
        try:
            self._store.revoke_lease(self._lease)
        except CatalogError as exc:
            _log.warning("Could not revoke the lease of a node key: %s", exc)

    def close(self) -> None:
        """Stop publishing and remove the key at once."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._wake.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        self._revoke()
