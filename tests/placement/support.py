"""Fake tablet servers that speak the real protocol: a registration and a
report under the server's own metastore lease, and a report that lists what
its server index asks for, as RUNNING at the route's table version."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from almanac.metastore import Metastore
from almanac.placement import (
    ServerInfo,
    ServerReport,
    TabletReport,
    TabletState,
    read_route,
    read_server_index,
    report_key,
    server_key,
)


@dataclass
class FakeServer:
    store: Metastore
    name: str
    attributes: dict[str, str] = field(default_factory=dict)
    profiles: tuple[str, ...] = ()
    ttl_s: float = 30.0
    lease: int = 0
    sequence: int = 0

    def register(self) -> FakeServer:
        self.lease = self.store.grant_lease(self.ttl_s)
        info = ServerInfo(
            self.name,
            "127.0.0.1",
            0,
            tuple(sorted(self.attributes.items())),
            self.profiles,
            time.time(),
            self.lease,
        )
        self.store.put(server_key(self.name), info.encode(), self.lease)
        self.report([])
        return self

    def report(self, tablets: list[TabletReport]) -> None:
        self.sequence += 1
        report = ServerReport(self.name, tuple(tablets), self.sequence, time.time())
        self.store.put(report_key(self.name), report.encode(), self.lease)

    def serve_index(self) -> list[TabletReport]:
        """Report every tablet of its index RUNNING at the route's version."""
        index = read_server_index(self.store, self.name)
        tablets = []
        versions: dict[int, int] = {}
        for table_id, tablet_id in () if index is None else index.tablets:
            if table_id not in versions:
                route = read_route(self.store, table_id)
                versions[table_id] = 0 if route is None else route.table_version
            version = versions[table_id]
            tablets.append(TabletReport(table_id, tablet_id, TabletState.RUNNING, version))
        self.report(tablets)
        return tablets

    def die(self) -> None:
        """As a kill -9 looks once the lease ran out: its keys are gone."""
        self.store.revoke_lease(self.lease)


def servers(store: Metastore, *names: str, **attrs: str) -> list[FakeServer]:
    return [FakeServer(store, n, dict(attrs)).register() for n in names]
