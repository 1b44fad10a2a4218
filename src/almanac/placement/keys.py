"""Metastore keys of placement, in GreptimeDB's layout: a route per table,
an index per server, tombstones of dropped routes, the leader's reasons for
tablets it cannot place, and the servers' registrations and reports under
their own leases."""

from __future__ import annotations

__all__ = [
    "LEADER_KEY",
    "REASON_PREFIX",
    "REPORT_PREFIX",
    "ROUTE_PREFIX",
    "SERVER_INDEX_PREFIX",
    "SERVER_PREFIX",
    "TOMBSTONE_PREFIX",
    "reason_key",
    "report_key",
    "route_key",
    "server_index_key",
    "server_key",
    "tombstone_key",
]

ROUTE_PREFIX = "__table_route/"
SERVER_INDEX_PREFIX = "__server_tablets/"
TOMBSTONE_PREFIX = "__tombstone/" + ROUTE_PREFIX
SERVER_PREFIX = "__tserver/"
REPORT_PREFIX = "__tserver_report/"
REASON_PREFIX = "__placement_reason/"
"""Per table, why the leader cannot place some of its tablets; no key while
it can place them all."""
LEADER_KEY = "__placement/leader"
"""The placement leader's node name, under that node's lease."""


def route_key(table_id: int) -> str:
    return f"{ROUTE_PREFIX}{table_id}"


def server_index_key(server: str) -> str:
    return SERVER_INDEX_PREFIX + server


def tombstone_key(table_id: int) -> str:
    return f"{TOMBSTONE_PREFIX}{table_id}"


def reason_key(table_id: int) -> str:
    return f"{REASON_PREFIX}{table_id}"


def server_key(name: str) -> str:
    return SERVER_PREFIX + name


def report_key(name: str) -> str:
    return REPORT_PREFIX + name
