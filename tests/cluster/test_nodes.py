"""Node names and node keys: listed while live, unique, gone on close."""

from __future__ import annotations

import os
import re
import socket
import time

import pytest

import almanac
from almanac import AlreadyExistsError, Catalog, CorruptLogError, ValidationError
from almanac.metastore import MemoryMetastore
from almanac.node.log import UpdateLog
from almanac.node.nodes import NodeRegistration, list_nodes, node_key
from tests.durable.support import table
from tests.waiting import PATIENCE


def _until(predicate: object, what: str) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + PATIENCE
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not within {PATIENCE} s"
        time.sleep(0.05)


def test_live_nodes_are_listed_with_their_applied_version_and_leave_on_close(
    target: str,
) -> None:
    with almanac.connect(target, delay_ms=0, max_clock_skew_ms=0, node_name="alpha") as a:
        assert a.node_name == "alpha"
        b = almanac.connect(target, delay_ms=0, max_clock_skew_ms=0)
        try:
            assert re.fullmatch(rf"[A-Za-z0-9_.\-]+-{os.getpid()}(-\d+)?", b.node_name)
            listed = {n.name: n for n in a.nodes()}
            assert set(listed) == {"alpha", b.node_name}
            assert (listed["alpha"].host, listed["alpha"].pid) == (
                socket.gethostname(),
                os.getpid(),
            )
            version = a.execute([table("T")]).version

            def b_published() -> bool:
                return {n.name: n.applied for n in a.nodes()}[b.node_name] == version

            _until(b_published, "node b publishes the version it applied")
        finally:
            b.close()
        assert [n.name for n in a.nodes()] == ["alpha"], "a closed node's key goes at once"


def test_a_second_live_node_of_the_same_name_is_refused(target: str) -> None:
    with almanac.connect(target, delay_ms=0, max_clock_skew_ms=0, node_name="n1") as first:
        before = first.nodes()
        with pytest.raises(AlreadyExistsError, match="Node name 'n1' is taken by a live node") as e:
            almanac.connect(target, delay_ms=0, node_name="n1")
        assert f"pid {os.getpid()}" in str(e.value)
        assert e.value.context["name"] == "n1"
        assert first.nodes() == before, "the refused node left nothing behind"
        assert first.execute([table("T")]).version == 2
    with almanac.connect(target, delay_ms=0, node_name="n1") as again:
        assert again.node_name == "n1", "the name is free once its node closed"


@pytest.mark.parametrize("name", ["", " n1", "n 1", "a/b", "-a", ".a", "x" * 129, "é", 5, b"n1"])
def test_a_bad_node_name_is_a_validation_error(name: object) -> None:
    with pytest.raises(ValidationError, match="node_name"):
        almanac.connect("memory://", node_name=name)  # type: ignore[call-overload]


def test_a_node_whose_lease_expired_registers_again() -> None:
    """As after the process was stopped for longer than the lease's time to live."""
    store = MemoryMetastore()
    node = NodeRegistration(store, "n", applied=1, ttl_s=0.6)
    try:
        kv = store.get(node_key("n"))
        assert kv is not None and kv.lease
        store.revoke_lease(kv.lease)
        assert store.get(node_key("n")) is None
        _until(lambda: store.get(node_key("n")) is not None, "the node takes its key again")
        node.saw(7)
        _until(lambda: [n.applied for n in list_nodes(store)] == [7], "the new key is kept up")
    finally:
        node.close()
    assert store.get(node_key("n")) is None
    store.close()


def test_a_node_that_lost_its_name_leaves_the_new_holders_key_alone() -> None:
    """Paused past its lease while another node took the name: it must not
    write over that node's key, and takes the name back once it is free."""
    store = MemoryMetastore()
    paused = NodeRegistration(store, "n", applied=1, ttl_s=0.6)
    try:
        kv = store.get(node_key("n"))
        assert kv is not None
        store.revoke_lease(kv.lease)
        other = NodeRegistration(store, "n", applied=1, ttl_s=60)
        held = store.get(node_key("n"))
        assert held is not None and held.lease != kv.lease
        # The paused node's thread publishes each applied version right after
        # noting it, so once it noted 3 its writes for 2 are done.
        for version in (2, 3, 4):
            paused.saw(version)
            _until(lambda v=version: paused.info.applied == v, "the paused node notes it")
        now = store.get(node_key("n"))
        assert now is not None and (now.lease, now.value) == (held.lease, held.value)
        other.close()
        _until(lambda: [n.applied for n in list_nodes(store)] == [4], "the name is taken back")
    finally:
        paused.close()
    assert store.get(node_key("n")) is None
    store.close()


@pytest.mark.parametrize(
    "value",
    [
        b"not json",
        b"[]",
        b'{"name": "x"}',
        b'{"name":"other","host":"h","pid":1,"started":"s","applied":0}',
        b'{"name":"x","host":"h","pid":-1,"started":"s","applied":0}',
    ],
)
def test_a_damaged_node_record_is_corruption_naming_its_key(value: bytes) -> None:
    store = MemoryMetastore()
    try:
        with Catalog(UpdateLog(store, owns_store=False)) as cat:
            store.put(node_key("x"), value)
            with pytest.raises(CorruptLogError, match=r"'catalog\.node\.x'"):
                cat.nodes()
    finally:
        store.close()
