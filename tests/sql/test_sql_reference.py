"""docs/sql.md says every example in it runs, in order, on one fresh
catalog: this runs them, each ```sql block as one script."""

from __future__ import annotations

import re
from pathlib import Path

import almanac

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "sql.md"


def examples() -> list[str]:
    return re.findall(r"```sql\n(.*?)```", REFERENCE.read_text(), flags=re.DOTALL)


def test_every_example_of_the_sql_reference_runs_in_order() -> None:
    scripts = examples()
    assert len(scripts) >= 8, "the reference keeps its examples in ```sql blocks"
    with almanac.connect("memory://") as cat:
        for script in scripts:
            result = cat.sql(script)
            if result.is_query:
                assert result.columns, script
        described = cat.sql("DESCRIBE TABLE sales.orders").rows
        assert [row[0] for row in described] == [
            "ID",
            "CUSTOMER",
            "AMOUNT",
            "PLACED",
            "TAGS",
            "REF",
            "STATUS",
        ]
        indexes = {row[2] for row in cat.sql("SHOW INDEXES ON sales.orders").rows}
        assert indexes == {"ORDERS_PK", "ORDERS_BY_CUSTOMER", "ORDERS_BY_REF"}
        assert cat.catalog().table("HOT", "SALES") is not None
        assert cat.catalog().table("SCRATCH", "SALES") is None


def test_every_type_of_the_reference_is_accepted() -> None:
    text = REFERENCE.read_text()
    section = text[text.index("## Types") : text.index("## Schemas")]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    names = [n for row in rows for n in re.findall(r"`([^`]+)`", row.split("|")[1])]
    spelled = {
        "DECIMAL(p, s)": "DECIMAL(10, 2)",
        "FIXED(L)": "FIXED(16)",
        "VARCHAR(n)": "VARCHAR(8)",
        "STRUCT<a: T [NOT NULL] [COMMENT '…'], …>": "STRUCT<a: INT NOT NULL, b: STRING>",
        "ARRAY<T [NOT NULL]>": "ARRAY<INT NOT NULL>",
        "T[]": "INT[]",
        "MAP<K, V [NOT NULL]>": "MAP<STRING, INT NOT NULL>",
    }
    columns = ", ".join(f"c{i} {spelled.get(n, n)}" for i, n in enumerate(names))
    with almanac.connect("memory://") as cat:
        cat.sql(f"CREATE TABLE every_type ({columns})")
        table = cat.catalog().table("EVERY_TYPE")
        assert table is not None and len(table.columns) == len(names)
