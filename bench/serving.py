"""An ``almanac serve`` process for the benches that go through HTTP."""

from __future__ import annotations

import subprocess
import sys

__all__ = ["start_server"]

SERVER = "import sys; from almanac.server import serve; serve(sys.argv[1], port=0)"


def start_server(target: str) -> tuple[subprocess.Popen[str], str]:
    """A server on a free loopback port, and its URL once it listens."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, target],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("Listening on "):
            return proc, line.split()[-1]
    raise RuntimeError(f"the server exited with {proc.wait()} before listening")
