"""A Spark CREATE TABLE ... AS SELECT against a catalog on etcd: the commit
runs in Spark's own Python workers, which reach the catalog by its URI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import almanac
import almanac.spark
from almanac.data import read_table
from almanac.etcd_local import LocalEtcd


def test_ctas_commits_into_an_etcd_catalog(spark: Any, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    with LocalEtcd(1, fsync=False) as cluster:
        uri = f"{cluster.uri}/spark"
        with almanac.connect(uri, delay_ms=0, max_clock_skew_ms=0, warehouse=warehouse) as cat:
            result = almanac.spark.sql(
                spark,
                uri,
                "CREATE TABLE PUBLIC.ORDERS (PRIMARY KEY (id)) AS "
                "SELECT * FROM VALUES (1, 'a'), (2, 'b'), (3, 'c') AS v(id, customer)",
                warehouse=warehouse,
            )
            assert (result.rows, result.created) == (3, True)
            cat.catalog_ready(result.version)
            assert sorted(read_table(cat, "ORDERS").column("ID").to_pylist()) == [1, 2, 3]
