"""A driver of its own for ``test_runtime``: ``python runtime_child.py
MODE TARGET SCRATCH``. Mode ``fresh`` starts a session with
``almanac.spark.session``, writes a table through plain ``spark.sql`` and
stops the session; mode ``plain`` starts a session without Iceberg's runtime
first (a JVM keeps the settings of its first session, so this needs a
process of its own). Prints one JSON line of what it saw."""

from __future__ import annotations

import json
import socket
import sys
import urllib.parse


def _accepts(uri: str) -> bool:
    parsed = urllib.parse.urlsplit(uri)
    assert parsed.hostname is not None and parsed.port is not None
    try:
        with socket.create_connection((parsed.hostname, parsed.port), timeout=30):
            return True
    except OSError:
        return False


def main(mode: str, target: str, scratch: str) -> None:
    import almanac.spark
    from almanac.spark.local import local_session

    seen: dict[str, object] = {}
    if mode == "plain":
        plain = local_session("almanac-plain", config={"spark.local.dir": scratch})
        try:
            almanac.spark.session(target)
        except almanac.spark.SparkRuntimeError as exc:
            seen["refused"] = str(exc)
        plain.stop()
        print(json.dumps(seen), flush=True)
        return
    spark = almanac.spark.session(
        target,
        conf={"spark.local.dir": scratch, "spark.sql.shuffle.partitions": "2"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql("CREATE NAMESPACE almanac.s")
    spark.sql("CREATE TABLE almanac.s.t USING iceberg AS SELECT id FROM range(3)")
    seen["rows"] = sorted(r.id for r in spark.sql("SELECT id FROM almanac.s.t").collect())
    uri = spark.conf.get("spark.sql.catalog.almanac.uri")
    seen["serving"] = _accepts(uri)
    spark.stop()
    seen["after_stop"] = _accepts(uri)
    print(json.dumps(seen), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
