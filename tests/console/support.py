"""A real ``almanac.server.serve`` process and a real headless Chromium.

The server runs ``tests/server/serve_worker.py`` on a free loopback port;
the browser is Debian's ``chromium`` driven by its ``chromedriver``. A
missing browser fails the tests with a message: ``make setup`` installs it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WORKER = Path(__file__).resolve().parents[1] / "server" / "serve_worker.py"
START_DEADLINE_S = 120.0
WAIT_S = 60.0
"""How long a browser condition may take on a loaded CI machine."""
BROWSER_TZ = "Asia/Kolkata"
"""The browser's time zone (UTC+05:30, no daylight saving)."""
SHOTS_ENV = "ALMANAC_CONSOLE_SHOTS"
"""Set to a directory to also copy the screenshots there (to look at them)."""

_LISTENING = re.compile(r"Listening on (http://127\.0\.0\.1:\d+)")


@contextmanager
def running_server(target: Path, tokens_file: Path | None = None) -> Iterator[str]:
    """``serve`` over ``target``; yields its base URL once it accepts."""
    command = [sys.executable, str(WORKER), str(target)]
    if tokens_file is not None:
        command += ["--tokens-file", str(tokens_file)]
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines: list[str] = []
    found: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            match = _LISTENING.search(line)
            if match and not found:
                found.append(match.group(1))
                ready.set()
        ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not ready.wait(START_DEADLINE_S) or not found:
            raise AssertionError("the server did not start:\n" + "".join(lines))
        yield found[0]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=10)


@contextmanager
def chromium() -> Iterator[webdriver.Chrome]:
    """A headless Chromium with a fresh profile, talking to nothing but loopback."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        pytest.fail(
            f"Browser tests need Debian's chromium and chromium-driver; missing {missing}. "
            "Run `make setup` (it installs them) or `apt-get install chromium chromium-driver`."
        )
    profile = tempfile.mkdtemp(prefix="almanac-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,900",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    # A zone far from UTC, so a page's local times differ from its UTC ones.
    service = Service(CHROMEDRIVER, env={**os.environ, "TZ": BROWSER_TZ})
    driver = webdriver.Chrome(options=options, service=service)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(driver: webdriver.Chrome, folder: Path, name: str, width: int = 1280) -> Path:
    """Save the whole page, ``width`` pixels wide, as ``name.png`` in
    ``folder`` (and in ``$ALMANAC_CONSOLE_SHOTS``)."""
    height = driver.execute_script(
        "return document.documentElement.scrollHeight + window.outerHeight - window.innerHeight"
    )
    driver.set_window_size(width, max(600, min(int(height) + 8, 4000)))
    path = folder / f"{name}.png"
    assert driver.save_screenshot(str(path)), f"no screenshot of {name}"
    extra = os.environ.get(SHOTS_ENV)
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(extra) / path.name)
    driver.set_window_size(1280, 900)
    return path
