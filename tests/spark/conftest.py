"""One local Spark session for the whole run: starting one costs 5-12 s.

It carries Apache Iceberg's Spark runtime and SQL extensions (Spark loads
jars only at start), so ``almanac.spark.session`` reuses it and adds its
catalogs to it."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

import almanac
import almanac.spark
from almanac.node.catalog import Catalog


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from almanac.spark.local import local_session
    from almanac.spark.runtime import runtime_conf

    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = local_session(
        "almanac-tests",
        scratch=tmp_path_factory.mktemp("spark-local"),
        config={
            **runtime_conf(),
            "spark.sql.shuffle.partitions": "4",
            "spark.sql.warehouse.dir": str(warehouse),
            "spark.sql.session.timeZone": "UTC",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    # PySpark's SIGINT handler cancels the jobs of a context that no longer
    # exists once stopped; a later interrupt would end in its AttributeError.
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def target(tmp_path: Path) -> str:
    """A fresh durable catalog directory (Spark's workers are other processes)."""
    return str(tmp_path / "catalog")


@pytest.fixture
def cat(target: str) -> Iterator[Catalog]:
    with almanac.connect(target) as node:
        yield node


# -- a module's own Almanac catalog in the run's session ------------------------------------
# A module sets ``CAT``, the Spark catalog name its tables live under (the
# run's one session holds every module's catalog, and a name is taken once).


@pytest.fixture(scope="module")
def catalog_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp(request.module.CAT) / "catalog")


@pytest.fixture(scope="module")
def rt(request: pytest.FixtureRequest, spark: Any, catalog_dir: str) -> Any:
    """The run's session with the module's catalog added as ``CAT``."""
    session = almanac.spark.session(catalog_dir, catalog=request.module.CAT)
    assert session is spark
    return session


@pytest.fixture(scope="module")
def node(rt: Any, catalog_dir: str) -> Iterator[Catalog]:
    """A second node of the served catalog: what Almanac itself sees."""
    with almanac.connect(catalog_dir) as cat:
        yield cat
