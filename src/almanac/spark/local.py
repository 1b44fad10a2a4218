"""The one way Almanac starts a local Spark session (demos, benchmarks,
tests): bound to loopback, with its scratch space where the caller says.

Left alone, Spark resolves the machine's host name and binds its driver
(block manager, RPC) to that address, reachable from the network, and
warns when it is a loopback one; it also puts shuffle and block files in
``/tmp``. A local session needs neither.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["LOOPBACK", "local_session"]

LOOPBACK = "127.0.0.1"


def local_session(
    app: str,
    *,
    cores: int = 2,
    scratch: Path | None = None,
    config: dict[str, str] | None = None,
) -> Any:
    """A ``local[cores]`` SparkSession named ``app`` whose driver binds and
    advertises loopback only (``SPARK_LOCAL_IP`` too, for what Spark starts
    before it reads its configuration), with the UI off and Python workers on
    this interpreter. ``scratch`` holds Spark's local files (shuffle, blocks,
    the JVM's temporary files) instead of ``/tmp``; ``config`` adds settings."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = LOOPBACK
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app)
        .config("spark.driver.host", LOOPBACK)
        .config("spark.driver.bindAddress", LOOPBACK)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if scratch is not None:
        scratch.mkdir(parents=True, exist_ok=True)
        builder = builder.config("spark.local.dir", str(scratch)).config(
            "spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={scratch}"
        )
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
