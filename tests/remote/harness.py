"""Real server processes for the remote client's tests: ``almanac.server.serve``
in a subprocess (the server tests' worker), or the killing server of
``killing_server.py``, on a free loopback port that survives a restart."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

HERE = Path(__file__).parent
SERVE_WORKER = HERE.parent / "server" / "serve_worker.py"
KILLING_SERVER = HERE / "killing_server.py"
DEADLINE_S = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """One server process at a time on ``port``; ``start`` again after a stop
    or a kill serves the same store on the same port."""

    def __init__(self, target: str, port: int, log: Path) -> None:
        self.target = target
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *, kill_on_table: str | None = None, tokens_file: Path | None = None) -> None:
        """Start and wait until ``/health`` answers. ``kill_on_table``: the
        server SIGKILLs itself right after committing a version that creates
        that table, before it replies."""
        assert self.proc is None or self.proc.poll() is not None
        if kill_on_table is not None:
            argv = [str(KILLING_SERVER), self.target, str(self.port), kill_on_table]
        else:
            argv = [str(SERVE_WORKER), self.target, "--port", str(self.port)]
            if tokens_file is not None:
                argv += ["--tokens-file", str(tokens_file)]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, *argv], stdout=out, stderr=subprocess.STDOUT, cwd=HERE
            )
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited with {self.proc.returncode}: {self.tail()}")
            try:
                if httpx.get(self.url + "/health", timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"server did not answer within {DEADLINE_S} s: {self.tail()}")

    def wait_exit(self) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=DEADLINE_S)

    def stop(self) -> None:
        """SIGTERM (serve closes its catalog), or SIGKILL if it hangs."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]
