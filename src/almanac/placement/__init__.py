"""Tablet placement: which tablet servers host each table's tablets.

Placement is runtime state kept in the metastore beside the catalog
(``keys``), as frozen values with a canonical codec (``model``), read
through ``state``. The placement manager, elected among catalog nodes,
is the only writer of routes, server indexes and the reasons of tablets it
cannot place; tablet servers write only their registrations and reports,
under their own leases.
"""

from almanac.placement.keys import (
    LEADER_KEY,
    REASON_PREFIX,
    REPORT_PREFIX,
    ROUTE_PREFIX,
    SERVER_INDEX_PREFIX,
    SERVER_PREFIX,
    TOMBSTONE_PREFIX,
    reason_key,
    report_key,
    route_key,
    server_index_key,
    server_key,
    tombstone_key,
)
from almanac.placement.model import (
    PlacementReasons,
    ServerIndex,
    ServerInfo,
    ServerReport,
    TableRoute,
    Tablet,
    TabletReport,
    TabletState,
)
from almanac.placement.state import (
    read_reason,
    read_reasons,
    read_reports,
    read_route,
    read_routes,
    read_server_index,
    read_server_indexes,
    read_servers,
)

__all__ = [
    "LEADER_KEY",
    "REASON_PREFIX",
    "REPORT_PREFIX",
    "ROUTE_PREFIX",
    "SERVER_INDEX_PREFIX",
    "SERVER_PREFIX",
    "TOMBSTONE_PREFIX",
    "PlacementReasons",
    "ServerIndex",
    "ServerInfo",
    "ServerReport",
    "TableRoute",
    "Tablet",
    "TabletReport",
    "TabletState",
    "read_reason",
    "read_reasons",
    "read_reports",
    "read_route",
    "read_routes",
    "read_server_index",
    "read_server_indexes",
    "read_servers",
    "reason_key",
    "report_key",
    "route_key",
    "server_index_key",
    "server_key",
    "tombstone_key",
]
