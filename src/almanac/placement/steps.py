"""One placement step for one route, as a pure function of what a pass
read: the live servers, their reports, the load on each server, and the
clock. The manager writes whatever route this returns (if it changed);
keeping the decisions here keeps them testable without a store.

Order within a step: fail over (dead replicas out, a surviving replica as
leader first), promote reported tablets to RUNNING and track the table
version they serve, replace tablets not reported within the assignment
timeout, then assign PREPARING tablets; replaced tablets no live server
reports any more leave the route.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from almanac.model.descriptors import Zone
from almanac.placement.model import ServerInfo, TableRoute, Tablet, TabletReport, TabletState
from almanac.placement.policy import Predicate, eligible

__all__ = ["PassView", "step_route"]


@dataclass(slots=True)
class PassView:
    """What one pass knows; ``load`` (hosted tablets per server) is kept up
    to date by the pass as it moves tablets, so that one pass spreads them."""

    servers: Mapping[str, ServerInfo]
    reports: Mapping[str, Mapping[tuple[int, int], TabletReport]]
    load: dict[str, int]
    now: float
    assignment_timeout_s: float
    max_tablets_per_server: int
    leaders: dict[str, int] = field(default_factory=dict)
    held: frozenset[tuple[int, int]] = frozenset()
    """(table, tablet) pairs some live server reports."""
    problems: list[str] = field(default_factory=list)
    reasons: dict[int, dict[int, str]] = field(default_factory=dict)
    """Table id -> tablet id -> why this pass could not place that tablet."""

    def unplaced(self, table_id: int, tablet_id: int, reason: str) -> None:
        self.reasons.setdefault(table_id, {})[tablet_id] = reason


@dataclass(slots=True)
class _Placer:
    view: PassView
    zone: Zone
    matches: Predicate
    storage_profile: str
    table_id: int

    def pick(self, count: int, avoid: frozenset[str], prefer_not: frozenset[str]) -> list[str]:
        """``count`` least-loaded eligible servers (fewer if there are not
        enough), never one of ``avoid``, one of ``prefer_not`` last."""
        view = self.view
        names = [
            name
            for name, info in view.servers.items()
            if name not in avoid
            and view.load.get(name, 0) < view.max_tablets_per_server
            and eligible(info, self.matches, self.storage_profile)
        ]
        names.sort(key=lambda n: (n in prefer_not, view.load.get(n, 0), n))
        return names[:count]

    def host(self, servers: list[str]) -> None:
        for name in servers:
            self.view.load[name] = self.view.load.get(name, 0) + 1

    def unhost(self, servers: list[str]) -> None:
        for name in servers:
            self.view.load[name] = self.view.load.get(name, 0) - 1

    def lead(self, candidates: list[str]) -> str:
        """The candidate leading fewest tablets, so leaders spread too."""
        leaders = self.view.leaders
        name = min(candidates, key=lambda n: (leaders.get(n, 0), candidates.index(n)))
        leaders[name] = leaders.get(name, 0) + 1
        return name

    def reported(self, server: str, tablet: Tablet) -> TabletReport | None:
        return self.view.reports.get(server, {}).get((self.table_id, tablet.id))

    def short(self, tablet: Tablet, found: int) -> None:
        reason = self.why()
        self.view.unplaced(self.table_id, tablet.id, reason)
        self.view.problems.append(
            f"Tablet {tablet.id} (partition {tablet.partition}) of table {self.table_id} needs "
            f"{self.zone.replicas} tablet servers; {found} available: {reason}"
        )

    def why(self) -> str:
        """What keeps a tablet from ``zone.replicas`` servers, as a person
        would look for it: no servers, servers the zone does not take, or
        servers without room."""
        view, zone, need = self.view, self.zone, self.zone.replicas
        live = len(view.servers)
        if not live:
            return "no live tablet server"
        wants = f"zone '{zone.name}' needs {_count(need, 'replica')}"
        matching = [
            name
            for name, info in view.servers.items()
            if eligible(info, self.matches, self.storage_profile)
        ]
        if len(matching) < need:
            if len(matching) == live:
                return f"{wants}, {_count(live, 'tablet server')} live"
            return (
                f"{wants}, {len(matching)} of {_count(live, 'live tablet server')} match its "
                f"node filter {zone.node_filter!r} and storage profile '{self.storage_profile}'"
            )
        limit = view.max_tablets_per_server
        full = sum(1 for name in matching if view.load.get(name, 0) >= limit)
        if full == len(matching):
            return (
                f"no tablet server has room: {_count(full, 'server')} at "
                f"max_tablets_per_server={limit}"
            )
        return (
            f"{wants}, {_count(len(matching) - full, 'server')} with room "
            f"({full} at max_tablets_per_server={limit})"
        )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _fail_over(p: _Placer, t: Tablet) -> Tablet:
    alive = [r for r in t.replicas if r in p.view.servers]
    if len(alive) == len(t.replicas):
        return t
    dead = [r for r in t.replicas if r not in p.view.servers]
    extra = p.pick(max(p.zone.replicas - len(alive), 0), frozenset(t.replicas), frozenset())
    if not alive and not extra:
        p.short(t, 0)
        return t  # nowhere to go: keep the record until a server comes
    p.unhost(dead)
    p.host(extra)
    replicas = tuple(sorted(alive + extra))
    if t.leader in alive:
        return dataclasses.replace(t, replicas=replicas)
    if alive:
        # A surviving replica leads first: one that serves it, if any does.
        serving = [
            r for r in alive if (rep := p.reported(r, t)) and rep.state is TabletState.RUNNING
        ]
        leader = p.lead(serving or alive)
        if serving:
            return dataclasses.replace(t, replicas=replicas, leader=leader)
    else:
        leader = p.lead(extra)
    return dataclasses.replace(
        t, replicas=replicas, leader=leader, state=TabletState.CREATING, assigned_at=p.view.now
    )


def _follow_reports(p: _Placer, t: Tablet) -> Tablet:
    if t.leader is None or t.state not in (TabletState.CREATING, TabletState.RUNNING):
        return t
    rep = p.reported(t.leader, t)
    if rep is None or rep.state is not TabletState.RUNNING:
        return t
    if t.state is TabletState.RUNNING and t.table_version == rep.table_version:
        return t
    return dataclasses.replace(t, state=TabletState.RUNNING, table_version=rep.table_version)


def _assign(p: _Placer, t: Tablet, avoid_first: frozenset[str]) -> Tablet:
    chosen = p.pick(p.zone.replicas, frozenset(), avoid_first)
    if len(chosen) < p.zone.replicas:
        p.short(t, len(chosen))
        return t
    p.host(chosen)
    return dataclasses.replace(
        t,
        state=TabletState.CREATING,
        replicas=tuple(sorted(chosen)),
        leader=p.lead(chosen),
        assigned_at=p.view.now,
    )


def step_route(
    route: TableRoute, zone: Zone, matches: Predicate, storage_profile: str, view: PassView
) -> TableRoute:
    """The route after one placement step (``route`` itself if nothing moves)."""
    if route.state in (TabletState.DELETED, TabletState.SOFT_DELETED):
        return route
    p = _Placer(view, zone, matches, storage_profile, route.table_id)
    tablets: list[Tablet] = []
    next_id = route.next_tablet_id
    for t in route.tablets:
        t = _fail_over(p, t)
        t = _follow_reports(p, t)
        avoid = frozenset[str]()
        if t.state is TabletState.CREATING and view.now - t.assigned_at > view.assignment_timeout_s:
            p.unhost(list(t.replicas))
            avoid = frozenset(t.replicas)
            tablets.append(dataclasses.replace(t, state=TabletState.REPLACED))
            t = Tablet(next_id, t.partition, TabletState.PREPARING)
            next_id += 1
        if t.state is TabletState.PREPARING:
            t = _assign(p, t, avoid)
        tablets.append(t)
    # A replaced tablet stays in the route while a live server still holds
    # it (its index no longer does, so the server drops it), then goes.
    tablets = [
        t
        for t in tablets
        if t.state is not TabletState.REPLACED or (route.table_id, t.id) in view.held
    ]
    serving = all(
        t.state is TabletState.RUNNING for t in tablets if t.state is not TabletState.REPLACED
    )
    state = TabletState.RUNNING if serving else TabletState.PREPARING
    new = dataclasses.replace(route, tablets=tuple(tablets), next_tablet_id=next_id, state=state)
    if new == route:
        return route
    return dataclasses.replace(new, version=route.version + 1)
