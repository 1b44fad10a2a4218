"""Spark jobs name the catalog by target; an etcd target works like a file."""

from __future__ import annotations

import pytest

import almanac
from almanac.spark.names import catalog_session, close_sessions


def test_a_spark_job_opens_an_etcd_catalog_but_never_creates_one(etcd_target: str) -> None:
    missing = r"No catalog at .*no catalog keys in that etcd namespace"
    with pytest.raises(almanac.NotFoundError, match=missing), catalog_session(etcd_target):
        pass
    with almanac.connect(etcd_target) as cat:
        version = cat.execute([almanac.CreateSchema("S")]).version
        try:
            with catalog_session(etcd_target) as session:
                session.catalog_ready(version, timeout=60)
                assert session.catalog().schema("S") is not None
        finally:
            close_sessions()
