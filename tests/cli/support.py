"""Running the ``almanac`` command the way a user does: ``python -m almanac``
in its own process, with a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.waiting import PATIENCE

"""A failure guard for waits on the command's process, never a duration."""


def environment(store: str | None = None) -> dict[str, str]:
    """This interpreter's path, and ``$ALMANAC_STORE`` only if given."""
    env = {k: v for k, v in os.environ.items() if k != "ALMANAC_STORE"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    env["COLUMNS"] = "200"  # click wraps help text to the terminal it thinks it has
    if store is not None:
        env["ALMANAC_STORE"] = store
    return env


def almanac(
    *args: str, cwd: Path, store: str | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``almanac ARGS`` to the end, stdout and stderr piped."""
    return subprocess.run(
        [sys.executable, "-m", "almanac", *args],
        cwd=cwd,
        env=environment(store),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        check=False,
    )


def start(*args: str, cwd: Path, store: str | None = None) -> subprocess.Popen[str]:
    """Start ``almanac ARGS`` in the background, stdout piped line by line."""
    return subprocess.Popen(
        [sys.executable, "-m", "almanac", *args],
        cwd=cwd,
        env=environment(store),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
