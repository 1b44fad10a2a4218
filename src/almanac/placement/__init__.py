"""Tablet placement: which tablet servers host each table's tablets.

Placement is runtime state kept in the metastore beside the catalog
(``keys``), as frozen values with a canonical codec (``model``), read
through ``state``. The placement manager, elected among catalog nodes,
is the only writer of routes and server indexes; tablet servers write
only their registrations and reports, under their own leases.
"""

from almanac.placement.keys import (
    LEADER_KEY,
    REPORT_PREFIX,
    ROUTE_PREFIX,
    SERVER_INDEX_PREFIX,
    SERVER_PREFIX,
    TOMBSTONE_PREFIX,
    report_key,
    route_key,
    server_index_key,
    server_key,
    tombstone_key,
)
from almanac.placement.model import (
    ServerIndex,
    ServerInfo,
    ServerReport,
    TableRoute,
    Tablet,
    TabletReport,
    TabletState,
)
from almanac.placement.state import (
    read_reports,
    read_route,
    read_routes,
    read_server_index,
    read_server_indexes,
    read_servers,
)

__all__ = [
    "LEADER_KEY",
    "REPORT_PREFIX",
    "ROUTE_PREFIX",
    "SERVER_INDEX_PREFIX",
    "SERVER_PREFIX",
    "TOMBSTONE_PREFIX",
    "ServerIndex",
    "ServerInfo",
    "ServerReport",
    "TableRoute",
    "Tablet",
    "TabletReport",
    "TabletState",
    "read_reports",
    "read_route",
    "read_routes",
    "read_server_index",
    "read_server_indexes",
    "read_servers",
    "report_key",
    "route_key",
    "server_index_key",
    "server_key",
    "tombstone_key",
]
