"""A listener on data commits runs on the node's dispatcher, after the
fact: one that is stuck must not hold up the writers whose data it hears
about. A version of data commits alone is ready once applied; its
listeners still hear every version in order, so a later DDL version is
ready only once they returned."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from almanac import Catalog, CreateZone, Event, EventType, WaitTimeoutError
from almanac.data import commits, read_table
from tests.data.support import append, connect, create, ids_of
from tests.waiting import PATIENCE


class Stuck:
    """A listener that records what it hears and, on a data commit, stays
    until released (a slow observer), saying when it got there."""

    def __init__(self) -> None:
        self.heard: list[tuple[EventType, int]] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, event: Event) -> None:
        self.heard.append((event.type, event.version))
        if event.type is EventType.DATA_COMMIT:
            self.entered.set()
            self.release.wait(PATIENCE)


def _ready_now(cat: Catalog, version: int) -> bool:
    """Whether ``catalog_ready(version)`` finds it ready at once."""
    try:
        return cat.catalog_ready(version, timeout=0)
    except WaitTimeoutError:
        return False


def test_a_stuck_data_commit_listener_does_not_hold_up_the_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its commits land (a version each), and the calls that made them return,
    # rather than wait for the listener and then report a timeout for data
    # that was committed (a caller retrying that would append twice). A
    # shorter bound on the data commit's wait, so a regression fails soon.
    monkeypatch.setattr(commits, "COMMIT_SECTION_TIMEOUT_S", 5.0)
    stuck = Stuck()

    with connect(str(tmp_path / "data")) as cat:
        create(cat)
        before = cat.latest_version
        cat.listen(EventType.DATA_COMMIT, stuck)
        outcome: list[object] = []

        def write() -> None:
            try:
                outcome.append(append(cat, [1]).snapshot_id)
            except Exception as exc:
                outcome.append(exc)

        writer = threading.Thread(target=write)
        writer.start()
        try:
            writer.join(PATIENCE)
            assert outcome and isinstance(outcome[0], int), outcome
            assert cat.latest_version == before + 1
            assert ids_of(read_table(cat, "T")) == [1]
            assert _ready_now(cat, before + 1)
            assert stuck.entered.wait(PATIENCE)  # it hears the version all the same
        finally:
            stuck.release.set()
            writer.join(PATIENCE)
        assert stuck.heard == [(EventType.DATA_COMMIT, before + 1)]


def test_a_ddl_version_after_a_data_version_waits_for_its_listener(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listeners hear versions in order, so a DDL version committed while a
    data version's listener is stuck is not ready, and its execute does not
    return, until that listener returned; then its own listener runs."""
    monkeypatch.setattr(commits, "COMMIT_SECTION_TIMEOUT_S", 5.0)
    stuck = Stuck()
    with connect(str(tmp_path / "data")) as cat:
        create(cat)
        cat.listen(EventType.DATA_COMMIT, stuck)
        cat.listen(EventType.ZONE_CREATE, stuck)
        data_version = append(cat, [1]).catalog_version
        outcome: list[object] = []

        def ddl() -> None:
            try:
                outcome.append(cat.execute([CreateZone(name="Z")]).version)
            except Exception as exc:
                outcome.append(exc)

        writer = threading.Thread(target=ddl)
        try:
            assert stuck.entered.wait(PATIENCE)
            writer.start()
            ddl_version = data_version + 1
            assert cat.catalog_ready(ddl_version, timeout=PATIENCE, applied_only=True)
            assert _ready_now(cat, data_version)
            assert not _ready_now(cat, ddl_version)
            assert outcome == []
            assert stuck.heard == [(EventType.DATA_COMMIT, data_version)]
        finally:
            stuck.release.set()
            writer.join(PATIENCE)
        assert outcome == [ddl_version]
        assert _ready_now(cat, ddl_version)
        assert stuck.heard == [
            (EventType.DATA_COMMIT, data_version),
            (EventType.ZONE_CREATE, ddl_version),
        ]


def test_catalog_ready_of_a_data_version_returns_while_its_listener_is_stuck(
    tmp_path: Path,
) -> None:
    """On a node that follows another's commits too: the data version is
    ready once applied there, its listener still stuck on it."""
    stuck = Stuck()
    target = str(tmp_path / "data")
    with connect(target) as writer, connect(target) as follower:
        create(writer)
        follower.listen(EventType.DATA_COMMIT, stuck)
        try:
            version = append(writer, [1]).catalog_version
            assert stuck.entered.wait(PATIENCE)  # applied there, its listener running
            assert _ready_now(follower, version)
            assert ids_of(read_table(follower, "T")) == [1]
        finally:
            stuck.release.set()
        assert stuck.heard == [(EventType.DATA_COMMIT, version)]


def test_a_data_version_after_a_stuck_ddl_listener_is_not_ready_but_its_writer_returns(
    tmp_path: Path,
) -> None:
    """Ready never runs ahead of DDL: a data version committed while an
    earlier DDL version's listener is stuck is applied but not ready (a
    caller waiting on it could otherwise see the DDL's effects before its
    listeners did), and becomes ready once that listener returned. Its
    writer returns all the same, once the version is applied: a stuck
    listener must not turn committed data into a timeout."""
    entered = threading.Event()
    release = threading.Event()

    def stuck_on_ddl(event: Event) -> None:
        entered.set()
        release.wait(PATIENCE)

    with connect(str(tmp_path / "data")) as cat:
        create(cat)
        cat.listen(EventType.ZONE_CREATE, stuck_on_ddl)
        outcome: list[object] = []

        def run(step: object) -> None:
            try:
                outcome.append(step() if callable(step) else step)
            except Exception as exc:
                outcome.append(exc)

        ddl = threading.Thread(
            target=run, args=(lambda: cat.execute([CreateZone(name="Z")]).version,)
        )
        data = threading.Thread(target=run, args=(lambda: append(cat, [1]).catalog_version,))
        try:
            ddl.start()
            assert entered.wait(PATIENCE)
            ddl_version = cat.latest_version
            data.start()
            data_version = ddl_version + 1
            assert cat.catalog_ready(data_version, timeout=PATIENCE, applied_only=True)
            data.join(PATIENCE)
            assert outcome == [data_version]  # the writer returned; the DDL did not
            assert not _ready_now(cat, ddl_version)
            assert not _ready_now(cat, data_version)
        finally:
            release.set()
            ddl.join(PATIENCE)
            data.join(PATIENCE)
        assert sorted(outcome) == [ddl_version, data_version]  # type: ignore[type-var]
        assert _ready_now(cat, data_version)
