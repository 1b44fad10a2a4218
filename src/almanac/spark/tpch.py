"""TPC-H data for the demo, the tests and the benchmark: Parquet files from
``tpchgen-cli`` (the ``dev`` extra) and a few of the benchmark's queries,
with ``{p}`` standing for the table prefix (``almanac.tpch.`` in Spark,
empty for duckdb over the generated files)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from almanac.errors import CatalogError

__all__ = ["QUERIES", "TABLES", "generate"]

TABLES = {
    "region": ["r_regionkey"],
    "nation": ["n_nationkey"],
    "part": ["p_partkey"],
    "supplier": ["s_suppkey"],
    "partsupp": ["ps_partkey", "ps_suppkey"],
    "customer": ["c_custkey"],
    "orders": ["o_orderkey"],
    "lineitem": ["l_orderkey", "l_linenumber"],
}


def generate(scale: float, out: Path, tables: Sequence[str] = ()) -> Path:
    """Parquet files ``<out>/<table>.parquet`` at scale factor ``scale`` (all
    tables unless ``tables`` names some)."""
    tool = Path(sys.executable).parent / "tpchgen-cli"
    if not tool.exists():
        raise CatalogError(f"tpchgen-cli is not installed next to {sys.executable}")
    out.mkdir(parents=True, exist_ok=True)
    command = [str(tool), "parquet", "-s", str(scale), f"--output-dir={out}"]
    if tables:
        command.append(f"--tables={','.join(tables)}")
    subprocess.run(command, check=True, capture_output=True)
    return out


QUERIES = {
    "Q1": """
        SELECT l_returnflag, l_linestatus,
               sum(l_quantity) AS sum_qty,
               sum(l_extendedprice) AS sum_base_price,
               sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
               sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
               avg(l_quantity) AS avg_qty,
               avg(l_extendedprice) AS avg_price,
               avg(l_discount) AS avg_disc,
               count(*) AS count_order
        FROM {p}lineitem
        WHERE l_shipdate <= date '1998-12-01' - interval '90' day
        GROUP BY l_returnflag, l_linestatus
        ORDER BY l_returnflag, l_linestatus
    """,
    "Q3": """
        SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue,
               o_orderdate, o_shippriority
        FROM {p}customer, {p}orders, {p}lineitem
        WHERE c_mktsegment = 'BUILDING' AND c_custkey = o_custkey
          AND l_orderkey = o_orderkey
          AND o_orderdate < date '1995-03-15' AND l_shipdate > date '1995-03-15'
        GROUP BY l_orderkey, o_orderdate, o_shippriority
        ORDER BY revenue DESC, o_orderdate
        LIMIT 10
    """,
    "Q5": """
        SELECT n_name, sum(l_extendedprice * (1 - l_discount)) AS revenue
        FROM {p}customer, {p}orders, {p}lineitem, {p}supplier, {p}nation, {p}region
        WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey
          AND l_suppkey = s_suppkey AND c_nationkey = s_nationkey
          AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey
          AND r_name = 'ASIA'
          AND o_orderdate >= date '1994-01-01'
          AND o_orderdate < date '1994-01-01' + interval '1' year
        GROUP BY n_name
        ORDER BY revenue DESC
    """,
    "Q10": """
        SELECT c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) AS revenue,
               c_acctbal, n_name, c_address, c_phone, c_comment
        FROM {p}customer, {p}orders, {p}lineitem, {p}nation
        WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey
          AND o_orderdate >= date '1993-10-01'
          AND o_orderdate < date '1993-10-01' + interval '3' month
          AND l_returnflag = 'R' AND c_nationkey = n_nationkey
        GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
        ORDER BY revenue DESC
        LIMIT 20
    """,
    "Q18": """
        SELECT c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity)
        FROM {p}customer, {p}orders, {p}lineitem
        WHERE o_orderkey IN (
                SELECT l_orderkey FROM {p}lineitem
                GROUP BY l_orderkey HAVING sum(l_quantity) > 300)
          AND c_custkey = o_custkey AND o_orderkey = l_orderkey
        GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
        ORDER BY o_totalprice DESC, o_orderdate
        LIMIT 100
    """,
    "Q19": """
        SELECT sum(l_extendedprice * (1 - l_discount)) AS revenue
        FROM {p}lineitem, {p}part
        WHERE (p_partkey = l_partkey AND p_brand = 'Brand#12'
               AND p_container IN ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
               AND l_quantity >= 1 AND l_quantity <= 1 + 10 AND p_size BETWEEN 1 AND 5
               AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON')
           OR (p_partkey = l_partkey AND p_brand = 'Brand#23'
               AND p_container IN ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
               AND l_quantity >= 10 AND l_quantity <= 10 + 10 AND p_size BETWEEN 1 AND 10
               AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON')
           OR (p_partkey = l_partkey AND p_brand = 'Brand#34'
               AND p_container IN ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
               AND l_quantity >= 20 AND l_quantity <= 20 + 10 AND p_size BETWEEN 1 AND 15
               AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON')
    """,
}
