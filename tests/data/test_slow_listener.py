"""A listener on data commits runs on the node's dispatcher, after the
fact: one that is stuck must not hold up the writers whose data it hears
about. Their commits land (a version each), and the calls that made them
return, rather than wait for the listener and then report a timeout for data
that was committed (a caller retrying that would append twice)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from almanac import Event, EventType
from almanac.data import commits, read_table
from tests.data.support import append, connect, create, ids_of
from tests.waiting import PATIENCE


@pytest.mark.xfail(
    strict=True,
    reason="Catalog._settle waits for every version's listeners, data-only ones too; "
    "a data-only version should wait until applied here only",
)
def test_a_stuck_data_commit_listener_does_not_hold_up_the_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A shorter bound on the data commit's wait, so the stuck case ends soon.
    monkeypatch.setattr(commits, "COMMIT_SECTION_TIMEOUT_S", 5.0)
    release = threading.Event()
    heard: list[int] = []

    def stuck(event: Event) -> None:
        heard.append(event.version)
        release.wait(PATIENCE)

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
        finally:
            release.set()
            writer.join(PATIENCE)
        assert cat.latest_version == before + 1
        assert ids_of(read_table(cat, "T")) == [1]
        assert heard == [before + 1]
