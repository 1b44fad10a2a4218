"""The one renewal cadence and the one renewing thread (``almanac.node.leases``)."""

from __future__ import annotations

import threading

from almanac.errors import LeaseNotFoundError, MetastoreUnavailableError
from almanac.metastore import MemoryMetastore
from almanac.node.leases import LeaseKeeper, Renewal, renew_interval
from tests.waiting import wait_for


def test_a_lease_is_renewed_every_third_of_its_time_to_live() -> None:
    assert renew_interval(30.0) == 10.0
    renewal = Renewal(30.0, now=100.0)
    assert renewal.at == 110.0
    assert not renewal.due(109.9)
    assert renewal.due(110.0)
    renewal.done(112.0)
    assert renewal.at == 122.0 and not renewal.due(121.0)


def test_the_keeper_keeps_a_real_lease_alive_past_its_time_to_live() -> None:
    store = MemoryMetastore()
    lease = store.grant_lease(0.3)
    store.put("held", b"x", lease)
    renewed = threading.Semaphore(0)

    def renew() -> None:
        store.keep_alive(lease)
        renewed.release()

    with LeaseKeeper(0.3, "test-keeper", renew):
        for _ in range(10):  # ten renewals: a full 1 s, more than three times the TTL
            assert renewed.acquire(timeout=60)
        assert store.get("held") is not None
    # Stopped: no renewal runs after stop() returned.
    assert not renewed.acquire(timeout=0.5)


def test_every_renewal_runs_even_when_one_fails() -> None:
    calls: list[str] = []
    seen = threading.Event()

    def broken() -> None:
        calls.append("broken")
        raise MetastoreUnavailableError("store away")

    def good() -> None:
        calls.append("good")
        if calls.count("good") >= 2:
            seen.set()

    with LeaseKeeper(0.03, "test-keeper", broken) as keeper:
        keeper.add(good)
        assert seen.wait(60)
    assert calls.count("broken") >= 2


def test_on_error_stops_the_keeper_and_sees_the_error() -> None:
    errors: list[Exception] = []

    def lost() -> None:
        raise LeaseNotFoundError(7)

    def on_error(exc: Exception) -> bool:
        errors.append(exc)
        return False

    keeper = LeaseKeeper(0.03, "test-keeper", lost, on_error=on_error)
    keeper.start()
    wait_for(lambda: not keeper._thread.is_alive(), "the keeper to stop on a lost lease")
    assert len(errors) == 1 and isinstance(errors[0], LeaseNotFoundError)
    keeper.stop()  # stopping a finished keeper is fine


def test_a_renewal_may_stop_its_own_keeper_without_deadlock() -> None:
    holder: list[LeaseKeeper] = []
    count = 0

    def renew() -> None:
        nonlocal count
        count += 1
        holder[0].stop()

    keeper = LeaseKeeper(0.03, "test-keeper", renew)
    holder.append(keeper)
    keeper.start()
    wait_for(lambda: not keeper._thread.is_alive(), "the keeper to stop itself")
    assert count == 1


def test_the_keeper_thread_is_a_named_daemon() -> None:
    keeper = LeaseKeeper(1.0, "almanac-test-lease", lambda: None)
    with keeper:
        assert keeper._thread.daemon and keeper._thread.name == "almanac-test-lease"
