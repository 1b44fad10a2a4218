"""``make demo``'s Spark part end to end, at TPC-H SF 0.01, in a driver of
its own (the demo starts and stops its session): plain ``spark.sql`` on
``almanac.spark.session`` loads every table by CTAS, backfills a new column,
MERGEs and time-travels, and Almanac's own reader finds the result."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import almanac
from almanac.data import read_table
from almanac.spark.tpch import TABLES
from tests.waiting import PATIENCE

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_runs_on_plain_spark_sql(tmp_path: Path) -> None:
    root = tmp_path / "demo-data" / "demo"
    done = subprocess.run(
        [sys.executable, "-m", "almanac.dev.demo", str(root), "--sf", "0.01"],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=PATIENCE * 10,  # a JVM of its own beside the run's, on a loaded machine
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, done.stderr[-4000:]
    assert out.startswith(f"This demo writes everything it makes in {root}\n")
    loads = [re.search(rf"  v(\d+): almanac\.tpch\.{t} [\d,]+ rows\n", out) for t in TABLES]
    assert all(loads), out
    versions = [int(m.group(1)) for m in loads if m]
    assert versions == list(range(versions[0], versions[0] + len(TABLES)))  # one each
    assert "Report (TPC-H Q5" in out
    assert "UPDATE backfilled c_tier: snapshot " in out
    assert "MERGE: every 1000th customer richer and gold, one new: snapshot " in out
    before_merge = re.search(
        r"Time travel, VERSION AS OF \d+ \(before the MERGE\):\n(.*?)\n[A-Z]", out, re.S
    )
    assert before_merge is not None, out
    counts = re.findall(r"^  (?:gold|silver|standard) +(\d+) ", before_merge.group(1), re.M)
    assert sum(map(int, counts)) == 1500
    # The load's snapshot: its rows, with the schema it had (no c_tier yet).
    assert re.search(
        r"Time travel, TIMESTAMP AS OF '[^']+' \(the load, snapshot \d+\): 1,500 rows of "
        r"c_custkey, .*, c_comment\n",
        out,
    ), out
    # Every table as of the catalog version before the MERGE, by a pinned catalog.
    pinned = re.search(
        r"Every table as of catalog version (\d+) \(before the MERGE\).*?:\n(.*?)\n\n", out, re.S
    )
    assert pinned is not None, out
    counts = re.findall(r"^  (?:gold|silver|standard) +(\d+) ", pinned.group(2), re.M)
    assert sum(map(int, counts)) == 1500
    # The history in words, oldest first, data commits included.
    history = out[out.index("History (SHOW HISTORY), oldest first:") :]
    assert re.search(r"  v\d+ at \S+: added column c_tier .* to tpch\.customer\n", history)
    assert re.search(r"  v\d+ at \S+: overwrite tpch\.customer: 1,500 rows", history), history
    assert re.search(rf"Kept {re.escape(str(root))} \(\d+ MB\)", out), out

    with almanac.connect(str(root)) as cat:
        customers = read_table(cat, "customer", "tpch").to_pylist()
    assert len(customers) == 1501  # the load's 1,500 and the MERGE's new one
    assert all(c["c_tier"] in ("gold", "silver", "standard") for c in customers)
    new = max(customers, key=lambda c: c["c_custkey"])
    assert (new["c_name"], new["c_tier"]) == ("Customer#new", "gold")
