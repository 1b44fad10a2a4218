"""Kill -9 campaign: pyiceberg writers in their own processes append to
tables of ``almanac serve`` and are killed mid-append, round after round,
while a janitor at grace 0 sweeps the warehouse without pause. Afterwards
every table is readable and writable and holds every acknowledged append."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

from almanac import Catalog
from almanac.data import read_table, run_janitor
from tests.iceberg_rest.campaign_writer import BATCH
from tests.iceberg_rest.conftest import ADMIN_TOKEN, PREFIX, own_server, rest_catalog
from tests.iceberg_rest.tables import SCHEMA, batch
from tests.server.support import ROOT, Server
from tests.waiting import wait_for

ROUNDS = 30
TABLES = ("A", "B")
_SPAN = 1_000_000
"""Ids one writer may use: round r of table t starts at (r * len(TABLES) + t) * _SPAN."""


@pytest.fixture
def place(tmp_path: Path) -> Iterator[tuple[Server, Catalog]]:
    with own_server(tmp_path) as placed:
        yield placed


class Janitor:
    """Runs the janitor at grace 0 on a thread until stopped: again as soon
    as any writer acknowledged another append, so each sweep overlaps the
    appends in flight (the next one may be refused: files older than a
    sweep), and yet a writer is never starved by sweeps back to back."""

    def __init__(self, cat: Catalog, progress: Callable[[], int]) -> None:
        self.cat = cat
        self.progress = progress
        self.runs = 0
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            seen = self.progress()
            try:
                run_janitor(self.cat, grace_s=0)
            except Exception as exc:  # reported by the test, after the tables
                self.errors.append(exc)
            self.runs += 1
            while self.progress() == seen and not self._stop.wait(0.01):
                pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _writer(server: Server, name: str, acks: Path, first: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    with acks.with_suffix(".log").open("ab") as log:
        return _spawn(server, name, acks, first, env, log)


def _spawn(
    server: Server, name: str, acks: Path, first: int, env: dict[str, str], log: IO[bytes]
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.iceberg_rest.campaign_writer",
            server.url + PREFIX,
            ADMIN_TOKEN,
            "CAMPAIGN",
            name,
            str(acks),
            str(first),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=log,
        env=env,
        cwd=ROOT,
    )


def _acked(acks: Path) -> list[int]:
    if not acks.exists():
        return []
    lines = acks.read_text(encoding="utf-8").splitlines()
    return [int(line) for line in lines if line.strip()]


def _acked_or_ended(acks: Path, wanted: int, proc: subprocess.Popen[bytes]) -> Callable[[], bool]:
    return lambda: len(_acked(acks)) >= wanted or proc.poll() is not None


@pytest.mark.slow
def test_writers_killed_mid_commit_beside_a_janitor_at_grace_zero_lose_nothing(
    place: tuple[Server, Catalog], tmp_path: Path
) -> None:
    server, cat = place
    client = rest_catalog(server)
    client.create_namespace("CAMPAIGN")
    for name in TABLES:
        client.create_table(("CAMPAIGN", name), SCHEMA)
    janitor = Janitor(
        cat, lambda: sum(len(_acked(p)) for p in tmp_path.glob("acks-*") if not p.suffix)
    )
    acknowledged: dict[str, set[int]] = {name: set() for name in TABLES}
    started: list[subprocess.Popen[bytes]] = []
    try:
        for round_ in range(ROUNDS):
            writers = []
            for t, name in enumerate(TABLES):
                acks = tmp_path / f"acks-{round_}-{name}"
                first = (round_ * len(TABLES) + t) * _SPAN
                writers.append((name, acks, _writer(server, name, acks, first)))
                started.append(writers[-1][2])
            for name, acks, proc in writers:
                # Killed once it acknowledged 1 to 3 appends: by then it is
                # inside its next one, writing files or committing.
                wanted = 1 + round_ % 3
                wait_for(
                    _acked_or_ended(acks, wanted, proc),
                    f"{wanted} acknowledged appends of round {round_}",
                )
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                assert proc.returncode == -signal.SIGKILL, acks.with_suffix(".log").read_text()
                for start in _acked(acks):
                    acknowledged[name].update(range(start, start + BATCH))
    finally:
        for proc in started:  # a failed wait leaves no writer behind
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        janitor.stop()
    assert janitor.runs > 0
    run_janitor(cat, grace_s=0)
    cat.catch_up()
    for name in TABLES:
        table = client.load_table(("CAMPAIGN", name))
        ids = table.scan().to_arrow().column("ID").to_pylist()
        assert len(ids) == len(set(ids)), f"table {name} holds an append twice"
        assert acknowledged[name] <= set(ids), f"table {name} lost acknowledged rows"
        assert acknowledged[name], f"no append of table {name} was acknowledged"
        table.append(batch([(-1, "after", -1)]))
        after = read_table(cat, name, "CAMPAIGN").column("ID").to_pylist()
        assert sorted(after) == sorted([*ids, -1])
    assert not janitor.errors, janitor.errors
