"""Tablet servers: processes that host tablets (the buckets of a table's
partition spec) as the placement assigns them, serve their rows over Arrow
Flight, and run their leader's maintenance. ``almanac tserver`` runs one."""

from almanac.tserver.server import TabletServer, TabletServerSettings
from almanac.tserver.ticket import TabletTicket

__all__ = ["TabletServer", "TabletServerSettings", "TabletTicket"]
