"""Idempotent requests on a SQLite catalog shared by real processes: a retry
after a crash between commit and reply, and processes racing with one id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import almanac
from almanac import ExecuteResult
from almanac.metastore import Put, SqliteMetastore, open_metastore
from almanac.model.entries import VersionedUpdate
from almanac.model.request_ids import request_digest
from almanac.node.log import KEY_CHECKPOINT_VERSION, KEY_VERSION, update_key
from almanac.serialization import REGISTRY
from almanac.serialization.io import Writer
from almanac.serialization.registry import PROTOCOL_VERSION
from tests.durable.support import child, race_children, replay_store
from tests.durable.worker_request import request_commands, result_json
from tests.waiting import PATIENCE

"""A failure guard for waits on other processes, never a duration."""


def _versions_of(cat: almanac.Catalog, request_id: str) -> list[int]:
    return [info.version for info in cat.history() if info.request_id == request_id]


def test_a_retry_after_a_crash_between_commit_and_reply_gets_the_original_result(
    tmp_path: Path,
) -> None:
    target = str(tmp_path / "data")
    with almanac.connect(target) as cat:
        before = cat.latest_version
    proc = child("tests.durable.worker_request", target, "crash-1", "T", "crash")
    out, _ = proc.communicate(timeout=PATIENCE)
    assert proc.returncode == -9, "the worker was to die by SIGKILL after its commit"
    assert out.strip().splitlines() == ["ready"], "it must die before replying"
    with almanac.connect(target, delay_ms=0, max_clock_skew_ms=0) as cat:
        assert cat.latest_version == before + 1, "the version was committed before the crash"
        retry = cat.execute(request_commands("T"), request_id="crash-1")
        assert retry == ExecuteResult(before + 1, (True, True, False), created=True)
        assert cat.latest_version == before + 1
        assert _versions_of(cat, "crash-1") == [before + 1]
        info = cat.history(before + 1)[0]
        assert info.node and info.node != cat.node_name, "the dead process committed it"
        assert info.update.request_digest == request_digest(request_commands("T"))
    # And a second process retrying gets the same answer, from the log alone.
    again = child("tests.durable.worker_request", target, "crash-1", "T", "plain")
    out, _ = again.communicate(timeout=PATIENCE)
    assert again.returncode == 0
    assert json.loads(out.strip().splitlines()[-1]) == result_json(retry)


def test_processes_racing_with_one_request_id_make_one_version(tmp_path: Path) -> None:
    target = str(tmp_path / "data")
    with almanac.connect(target) as cat:
        before = cat.latest_version
    command = ("tests.durable.worker_request", target, "race-1", "T", "race")
    answers = race_children([command] * 3, timeout=PATIENCE)
    expected = {"version": before + 1, "applied": [True, True, False], "created": True}
    assert answers == [expected] * 3
    with open_metastore(f"sqlite:///{tmp_path / 'data' / 'catalog.db'}") as store:
        final = replay_store(store)
        assert final.version == before + 1
        assert [t.name for t in final.tables()] == ["T"]


def _v1_bytes(update: VersionedUpdate) -> bytes:
    """The update as a release before nodes and request ids wrote it."""
    v1 = REGISTRY.serializers(VersionedUpdate)[0]
    assert (v1.version, v1.release) == (1, "0.1.0") and v1.write is not None
    w = Writer()
    w.u16(PROTOCOL_VERSION)
    w.u16(REGISTRY.type_id(VersionedUpdate))
    w.uvarint(1)
    v1.write(w, update)
    return bytes(w)


def test_a_log_of_v1_updates_reads_as_no_node_and_no_request(tmp_path: Path) -> None:
    with almanac.connect("memory://") as mem:
        mem.execute([almanac.CreateSchema("S")], request_id="lost-in-v1")
        updates = [info.update for info in mem.history()]
    target = tmp_path / "old"
    target.mkdir()
    with SqliteMetastore(target / "catalog.db") as store:
        store.txn(
            [],
            [
                *(Put(update_key(u.version), _v1_bytes(u)) for u in updates),
                Put(KEY_VERSION, str(updates[-1].version).encode()),
                Put(KEY_CHECKPOINT_VERSION, b"0"),
            ],
        )
    with almanac.connect(str(target), delay_ms=0, node_name="new-node") as cat:
        assert [(i.node, i.request_id) for i in cat.history()] == [("", None), ("", None)]
        assert cat.history()[1].update.applied == ()
        # The id was not stored by the old format: a retry runs anew.
        with pytest.raises(almanac.AlreadyExistsError):
            cat.execute([almanac.CreateSchema("S")], request_id="lost-in-v1")
        result = cat.execute([almanac.CreateSchema("T")], request_id="now-kept")
    with almanac.connect(str(target), delay_ms=0) as cat:
        info = cat.history(result.version)[0]
        assert (info.node, info.request_id) == ("new-node", "now-kept")
        assert cat.execute([almanac.CreateSchema("T")], request_id="now-kept") == result
