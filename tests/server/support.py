"""``almanac.server.serve`` in a real process on a free loopback port.

The process runs ``serve_worker`` (``serve`` behind a small argument
parser); the harness waits for its ``Listening on URL`` line, keeps its log
(stderr) in a file for the tests to read, and stops it with SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx

from tests.waiting import PATIENCE, wait_for

ROOT = Path(__file__).resolve().parents[2]


def worker(*args: str, env: dict[str, str] | None = None, log: Path) -> subprocess.Popen[str]:
    """A ``serve_worker`` process; its stderr goes to ``log``."""
    environment = dict(env if env is not None else os.environ)
    environment["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    with log.open("a") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.server.serve_worker", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=environment,
            cwd=ROOT,
        )


class Server:
    """A running server: ``url``, ``client(token)``, ``log_text()``, ``stop()``."""

    def __init__(self, *args: str, log: Path, env: dict[str, str] | None = None) -> None:
        self.log = log
        self.proc = worker(*args, env=env, log=log)
        self._lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        wait_for(
            lambda: (
                any(line.startswith("Listening on ") for line in self._lines)
                or self.proc.poll() is not None
            ),
            "the server's 'Listening on' line",
        )
        listening = [line for line in self._lines if line.startswith("Listening on ")]
        if not listening:
            raise AssertionError(f"server exited with {self.proc.wait()}: {self.log_text()}")
        self.url = listening[0].removeprefix("Listening on ").strip()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.append(line.rstrip("\n"))

    def client(self, token: str | None = None, **kwargs: object) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=PATIENCE, **kwargs)  # type: ignore[arg-type]

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> int:
        """SIGTERM, and the exit status once the process ended."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=PATIENCE)
        finally:
            if self.proc.stdout is not None:
                self.proc.stdout.close()


def reached(stream: EventReader, count: int, end: int) -> bool:
    """``count`` events in, or the stream reached version ``end``."""
    return len(stream.events) >= count or (bool(stream.events) and stream.events[-1][0] >= end)


class EventReader:
    """Reads one SSE stream on a thread: ``events`` as (id, data) pairs,
    ``errors`` as parsed ``event: error`` data, ``comments`` counted."""

    def __init__(self, server: Server, token: str | None = None, **headers_and_params: Any) -> None:
        self.events: list[tuple[int, dict[str, Any]]] = []
        self.errors: list[dict[str, Any]] = []
        self.comments = 0
        self.ended = False
        self._client = server.client(token)
        # Frequent keep-alives let close() end the reading thread promptly.
        params = {"keepalive": 0.2, **headers_and_params.pop("params", {})}
        self._cm = self._client.stream("GET", "/v1/events", params=params, **headers_and_params)
        self.response = self._cm.__enter__()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        fields: dict[str, str] = {}
        try:
            for line in self.response.iter_lines():
                if line.startswith(":"):
                    self.comments += 1
                elif line == "":
                    if "data" in fields:
                        data = json.loads(fields["data"])
                        if fields.get("event") == "error":
                            self.errors.append(data)
                        else:
                            self.events.append((int(fields["id"]), data))
                    fields = {}
                else:
                    name, _, value = line.partition(":")
                    fields[name] = value.removeprefix(" ")
        except (httpx.HTTPError, ValueError):  # closed by close()
            pass
        self.ended = True

    def close(self) -> None:
        self._cm.__exit__(None, None, None)
        self._client.close()
        self._thread.join(PATIENCE)
