"""One local Spark session for the whole run: starting one costs 5-12 s."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

import almanac
from almanac.catalog import Catalog


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("almanac-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    import almanac.spark

    almanac.spark.register(session)
    yield session
    session.stop()


@pytest.fixture
def target(tmp_path: Path) -> str:
    """A fresh durable catalog directory (Spark's workers are other processes)."""
    return str(tmp_path / "catalog")


@pytest.fixture
def cat(target: str) -> Iterator[Catalog]:
    with almanac.connect(target) as node:
        yield node
