"""``almanac node``: a real process that follows the log, logs, and stops
cleanly on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import almanac
from almanac.cli import main
from almanac.metastore import Metastore
from tests.durable.support import ROOT, table
from tests.waiting import PATIENCE


def _until(predicate: object, what: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + PATIENCE
    while not predicate():
        assert proc.poll() is None, f"the node exited ({proc.returncode}):\n{log.read_text()}"
        assert time.monotonic() < deadline, f"{what}: not within {PATIENCE} s:\n{log.read_text()}"
        time.sleep(0.05)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_node_follows_logs_checkpoints_and_stops_cleanly(
    target: str, tmp_path: Path, stop: signal.Signals
) -> None:
    log = tmp_path / "node.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), ALMANAC_STORE=target)
    args = ["--name", "n1", "--delay-ms", "0", "--max-clock-skew-ms", "0"]
    args += ["--keep-versions", "2", "--checkpoint-every", "0.2"]
    with (
        almanac.connect(target, delay_ms=0, max_clock_skew_ms=0, node_name="client") as cat,
        log.open("wb") as err,
    ):
        proc = subprocess.Popen(
            [sys.executable, "-m", "almanac.cli", "node", *args], env=env, stderr=err
        )
        try:

            def listed() -> list[str]:
                return [n.name for n in cat.nodes()]

            _until(lambda: "n1" in listed(), "the node key", proc, log)
            # Its listeners are in place once it says it follows the log.
            _until(lambda: "node n1 following" in log.read_text(), "the start", proc, log)
            for i in range(4):
                cat.execute([table(f"T{i}")])
            latest = cat.latest_version
            text = log.read_text
            _until(lambda: f"applied version {latest}:" in text(), "the last version", proc, log)
            _until(lambda: "earliest version now 4" in text(), "a checkpoint", proc, log)
            assert re.search(r"applied version 3: .*created table PUBLIC\.T1", text())
            assert "event TABLE_CREATE: version 3" in text(), "events of another process's DDL"
            assert "[n1] almanac.node" in text(), "every line names the node"

            def published() -> bool:
                return {n.name: n.applied for n in cat.nodes()}.get("n1") == latest

            _until(published, "the applied version in the node key", proc, log)
            proc.send_signal(stop)
            assert proc.wait(timeout=PATIENCE) == 0, log.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert listed() == ["client"], "the node key is gone at once"
        assert f"{stop.name} received: stopping" in log.read_text()
        assert "node n1 stopped" in log.read_text()
        assert cat.execute([table("AFTER")]).version == latest + 1


def test_a_node_without_a_catalog_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.delenv("ALMANAC_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["node", "--name", "n1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: No catalog at {tmp_path / 'almanac-data'} (no metastore file")
    assert f"create one with `almanac --store {tmp_path / 'almanac-data'} init`" in err
    assert "--store or $ALMANAC_STORE" in err
    assert not (tmp_path / "almanac-data").exists()


def test_a_taken_name_fails_the_node_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = str(tmp_path / "data")
    with almanac.connect(target, node_name="n1"):
        assert main(["node", "--store", target, "--name", "n1"]) == 1
    assert "Node name 'n1' is taken by a live node" in capsys.readouterr().err


def test_a_read_of_an_empty_etcd_namespace_creates_nothing(
    etcd_target: str, store: Metastore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--store", etcd_target, "history"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: No catalog at {almanac.parse_target(etcd_target)} (no catalog")
    assert "init`" in err
    assert store.range("").kvs == (), "the namespace is still empty"
    assert main(["--store", etcd_target, "init"]) == 0
    assert main(["--store", etcd_target, "history"]) == 0
    assert "\nVERSION " in capsys.readouterr().out
