"""Idempotent requests on etcd, a store that cannot serialise its writers:
nodes racing with one request id lose compare-and-swaps, catch up and find
the winner's version under that id."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

import almanac
from almanac import ExecuteResult
from almanac.dev.etcd_local import LocalEtcd
from tests.durable.support import table
from tests.waiting import PATIENCE


@pytest.fixture(scope="module")
def etcd() -> Iterator[LocalEtcd]:
    with LocalEtcd(1, fsync=False) as cluster:
        yield cluster


def _connect(target: str) -> almanac.Catalog:
    return almanac.connect(target, delay_ms=0, max_clock_skew_ms=0)


def _batch() -> list[almanac.Command]:
    return [almanac.CreateSchema("S"), table("T", "S")]


def test_nodes_racing_with_one_id_on_etcd_make_one_version(etcd: LocalEtcd) -> None:
    target = f"{etcd.uri}/req-{uuid.uuid4().hex[:12]}"
    with _connect(target) as a, _connect(target) as b, _connect(target) as c:
        nodes = [a, b, c]
        start = threading.Barrier(6)

        def run(i: int) -> ExecuteResult:
            start.wait(timeout=PATIENCE)
            return nodes[i % 3].execute(_batch(), request_id="etcd-race")

        with ThreadPoolExecutor(6) as pool:
            results = list(pool.map(run, range(6)))
        assert results == [ExecuteResult(2, (True, True), created=True)] * 6
        for cat in nodes:
            assert cat.catalog_ready(2, timeout=PATIENCE)
            assert cat.latest_version == 2
        committed = a.history(2)[0]
        assert committed.request_id == "etcd-race"
        assert committed.node in {cat.node_name for cat in nodes}
        # Checkpointed away, the id still answers, on a node that starts now.
        a.execute([almanac.CreateSchema("OTHER")])
        assert a.checkpoint_log() == 3
        with _connect(target) as fresh:
            assert fresh.earliest_version == 3
            assert fresh.execute(_batch(), request_id="etcd-race") == results[0]
            assert fresh.latest_version == 3
