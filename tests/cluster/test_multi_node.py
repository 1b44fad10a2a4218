"""Several nodes, each its own process, on one catalog: concurrent DDL,
identical catalogs at every version, events everywhere, pins across nodes."""

from __future__ import annotations

import time
from collections import Counter

import almanac
from almanac import EventType
from almanac.dev.etcd_local import LocalEtcd
from tests.cluster.conftest import NodeProcess
from tests.durable.support import digest, race_ddl_workers, table
from tests.waiting import PATIENCE


def _serial_options(target: str) -> tuple[str, ...]:
    """On SQLite writers never race: one attempt per commit proves it."""
    return ("0", "1") if "://" not in target else ("0",)


def test_concurrent_ddl_applies_each_command_once_and_every_node_agrees(
    target: str, spawn: list[NodeProcess]
) -> None:
    shared = [f"SHARED{i}" for i in range(12)]
    with almanac.connect(target, delay_ms=0, max_clock_skew_ms=0, node_name="observer") as observer:
        seen: list[tuple[int, int]] = []
        observer.listen(EventType.TABLE_CREATE, lambda e: seen.append((e.version, e.object_id)))
        spawn.extend(NodeProcess(target, f"n{i}", *_serial_options(target)) for i in range(3))
        plans = []
        for i, node in enumerate(spawn):
            # Every node tries every shared name, each node in another order,
            # between names of its own.
            order = shared[i * 4 :] + shared[: i * 4]
            own = [f"N{i}_{j}" for j in range(12)]
            plans.append([n for pair in zip(order, own, strict=True) for n in pair])
            node.send("tables", names=plans[-1])
        results = [node.answer() for node in spawn]

        versions: list[int] = []
        created: Counter[str] = Counter()
        for plan, result in zip(plans, results, strict=True):
            assert isinstance(result, list)
            assert [r["name"] for r in result] == plan
            for r in result:
                if "version" in r:
                    versions.append(r["version"])
                    created[r["name"]] += 1
                else:
                    assert r["error"] == "AlreadyExistsError", r
                    assert r["name"].startswith("SHARED")
                    assert f"'PUBLIC.{r['name']}' already exists" in r["message"]
        assert all(created[name] == 1 for name in shared), created
        assert all(created[f"N{i}_{j}"] == 1 for i in range(3) for j in range(12))
        total = 1 + len(versions)
        assert sorted(versions) == list(range(2, total + 1)), "one version per applied command"

        assert observer.catalog_ready(total, timeout=PATIENCE)
        expected = {
            str(v): digest(observer.catalog(v)) for v in range(observer.earliest_version, total + 1)
        }
        assert len(expected) == total + 1  # versions 0 (empty) to total
        creates = [[EventType.TABLE_CREATE.name, v, i] for v, i in seen]
        assert [c[1] for c in creates] == list(range(2, total + 1))
        for node in spawn:
            assert node.ask("wait", version=total) is True
            assert node.ask("digests") == expected, f"node {node.name} differs"
            events = node.ask("events")
            assert isinstance(events, list)
            # Each node fired the creates of the other nodes' versions too.
            assert [e for e in events if e[0] == EventType.TABLE_CREATE.name] == creates
        for node in spawn:
            assert node.stop() == 0
        assert [n.name for n in observer.nodes()] == ["observer"]


def test_events_fire_on_a_node_that_did_not_execute_the_ddl(target: str) -> None:
    with (
        almanac.connect(target, delay_ms=0, max_clock_skew_ms=0) as a,
        almanac.connect(target, delay_ms=0, max_clock_skew_ms=0) as b,
    ):
        heard: list[tuple[str, int, int]] = []
        b.listen(
            EventType.TABLE_CREATE, lambda e: heard.append((e.type.name, e.version, e.object_id))
        )
        b.listen(
            EventType.TABLE_DROP, lambda e: heard.append((e.type.name, e.version, e.object_id))
        )
        created = a.execute([table("T")]).version
        t = a.catalog().table("T")
        assert t is not None
        dropped = a.execute([almanac.DropTable("T")]).version
        assert b.catalog_ready(dropped, timeout=PATIENCE)
        assert heard == [("TABLE_CREATE", created, t.id), ("TABLE_DROP", dropped, t.id)]


def test_a_pin_of_a_node_blocks_truncation_until_the_node_is_killed(
    target: str, spawn: list[NodeProcess]
) -> None:
    with almanac.connect(target, delay_ms=0, max_clock_skew_ms=0, node_name="b") as b:
        for i in range(3):
            b.execute([table(f"T{i}")])
        a = NodeProcess(target, "a")
        spawn.append(a)
        assert a.ask("pin", version=3) == 3
        for i in range(3, 6):
            b.execute([table(f"T{i}")])
        assert b.checkpoint_log() == 3, "the pin of node a holds version 3"
        assert a.ask("wait", version=7) is True
        digests = a.ask("digests")
        assert isinstance(digests, dict) and digests["3"] == digest(b.catalog(3))
        assert b.earliest_version == 3
        assert [n.name for n in b.nodes()] == ["a", "b"]

        a.kill()  # SIGKILL: no unpin, no revoke; the leases expire
        deadline = time.monotonic() + PATIENCE
        while b.checkpoint_log() != 7 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert b.earliest_version == 7
        while len(b.nodes()) > 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [n.name for n in b.nodes()] == ["b"]


def test_three_nodes_commit_a_hundred_versions_each_on_etcd(etcd_cluster: LocalEtcd) -> None:
    """The etcd counterpart of the four SQLite processes in
    tests/durable/test_concurrency.py: etcd does not serialise writers, so
    lost races are retried; none may surface as a ConflictError (a worker
    fails on any error) and every node applies every version."""
    target = f"{etcd_cluster.uri}/race{time.monotonic_ns()}"
    with almanac.connect(target, delay_ms=0, max_clock_skew_ms=0):
        pass
    count, workers = 100, 3
    total = 1 + workers * count
    reports = race_ddl_workers(target, [f"W{w}_" for w in range(workers)], count, timeout=600)
    for report in reports:
        assert report["applied"] == list(range(2, total + 1))
    assert len({report["digest"] for report in reports}) == 1
    with almanac.connect(target, delay_ms=0, max_clock_skew_ms=0) as cat:
        assert cat.latest_version == total
        assert len(cat.catalog().tables()) == workers * count
        assert digest(cat.catalog()) == reports[0]["digest"]
