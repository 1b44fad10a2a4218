"""A seeded fuzzer for ``Catalog.sql``: grammar-generated DDL, mutations of
valid DDL, and both together, run against ``memory://`` catalogs.

Every input must either commit exactly one version (or none, for a no-op)
that survives a serialization round trip, or raise an ``InputError`` and
leave the catalog exactly as it was. Anything else is recorded as a
``Finding``. ``tests/sql/test_fuzz_catalog.py`` runs it in the suite; a long
hunt runs by hand::

    .venv/bin/python -m tests.sql.sqlfuzz --inputs 2000000 --seed 7
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import almanac
from almanac import Catalog, CatalogVersion, SqlResult
from almanac.errors import CatalogError, InputError, SqlParseError
from almanac.serialization import decode_catalog, decode_update, encode_catalog, encode_update
from almanac.sql.dialect import AlmanacParser, AlmanacTokenizer

SETUP = """
CREATE SCHEMA s;
CREATE SCHEMA s2;
CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(10) DEFAULT 'x', c DECIMAL(10, 2));
CREATE TABLE s.u (id UUID DEFAULT RAND_UUID(), k BIGINT NOT NULL, d DATE,
  PRIMARY KEY USING SORTED (id DESC, k)) COLOCATE BY (k);
CREATE INDEX i ON t (a);
CREATE ZONE z WITH (PARTITIONS=2, REPLICAS=3, STORAGE_PROFILES='a,b');
CREATE TABLE w (id INT PRIMARY KEY, e DOUBLE) ZONE z STORAGE PROFILE 'a'
"""
"""The catalog every fuzz epoch starts from."""

UNEXPECTED = "Invalid statement ("
"""How ``parse_script`` reports a sqlglot failure it has no specific message for."""

CORPUS = [
    "CREATE SCHEMA IF NOT EXISTS s3",
    "DROP SCHEMA IF EXISTS s CASCADE",
    "DROP SCHEMA s2 RESTRICT",
    "CREATE TABLE IF NOT EXISTS s.v (id UUID DEFAULT RAND_UUID(), a INT NOT NULL DEFAULT -1, "
    "b DECIMAL(10, 2) DEFAULT 1.50, c VARCHAR(8) DEFAULT 'x', d BYTES DEFAULT X'00ff', "
    "e TIMESTAMP(3) WITH LOCAL TIME ZONE, f DATE DEFAULT DATE '2020-01-01', "
    "PRIMARY KEY USING SORTED (id DESC NULLS LAST, a)) COLOCATE BY (a) ZONE z STORAGE PROFILE 'b'",
    "CREATE TABLE x (id INT PRIMARY KEY, v DOUBLE PRECISION NULL)",
    "CREATE TABLE y (id BIGINT, k VARCHAR, PRIMARY KEY (id, k))",
    "CREATE TABLE q (id INT PRIMARY KEY, t TIME(3) DEFAULT TIME '10:00:00', "
    "ts TIMESTAMP DEFAULT TIMESTAMP '2020-01-01 00:00:00', u UUID, bo BOOLEAN DEFAULT TRUE, "
    "r REAL DEFAULT 1e3, n NUMERIC(5, 1) DEFAULT (-2.5), s SMALLINT DEFAULT (7), ti TINYINT)",
    "DROP TABLE IF EXISTS s.u",
    "DROP TABLE t, w",
    "ALTER TABLE IF EXISTS t ADD COLUMN IF NOT EXISTS (g INT, h BOOLEAN DEFAULT TRUE)",
    "ALTER TABLE t ADD COLUMN g VARCHAR(5) NOT NULL DEFAULT 'abc'",
    "ALTER TABLE t ADD g INT",
    "ALTER TABLE t DROP COLUMN IF EXISTS (b, c)",
    "ALTER TABLE t DROP COLUMN c",
    "ALTER TABLE t ALTER COLUMN a SET DATA TYPE BIGINT",
    "ALTER TABLE t ALTER COLUMN b TYPE VARCHAR(20)",
    "ALTER TABLE t ALTER COLUMN c SET DATA TYPE DECIMAL(12, 2)",
    "ALTER TABLE t ALTER COLUMN a SET DEFAULT 42",
    "ALTER TABLE t ALTER COLUMN b SET DEFAULT 'y'",
    "ALTER TABLE t ALTER COLUMN b DROP DEFAULT",
    "ALTER TABLE s.u ALTER COLUMN d SET DEFAULT DATE '2021-02-03'",
    "ALTER TABLE t ALTER COLUMN a SET DEFAULT (-(7))",
    "ALTER TABLE t RENAME TO t2",
    "ALTER TABLE t SET (STALE_ROWS_FRACTION=0.5, MIN_STALE_ROWS=10)",
    "CREATE UNIQUE INDEX IF NOT EXISTS j ON s.u USING HASH (k)",
    "CREATE INDEX j ON t USING SORTED (a DESC, b NULLS FIRST)",
    "DROP INDEX IF EXISTS i",
    "ALTER INDEX i RENAME TO i2",
    "ALTER INDEX IF EXISTS i RENAME TO i3",
    "CREATE ZONE IF NOT EXISTS z2 WITH (PARTITIONS=1, REPLICAS=3, STORAGE_PROFILES='a,b', "
    "DATA_NODES_FILTER='$..*', CONSISTENCY_MODE='HA')",
    "CREATE ZONE z3 WITH (DATA_NODES_AUTO_ADJUST_SCALE_UP=5, DATA_NODES_AUTO_ADJUST_SCALE_DOWN=0)",
    "ALTER ZONE z SET (REPLICAS=2, QUORUM_SIZE=2)",
    "ALTER ZONE z SET DATA_NODES_FILTER='$[?(@.region == \"eu\")]'",
    "ALTER ZONE z RENAME TO y",
    "ALTER ZONE z SET DEFAULT",
    'ALTER ZONE "Default" SET (REPLICAS=5, QUORUM_SIZE=3)',
    "DROP TABLE w; DROP ZONE IF EXISTS z",
    "DROP TABLE IF EXISTS t, s.u WITH (RESERVE = '90s')",
    "DROP TABLE t WITH (RESERVE='2d'); RECOVER TABLE t AS t3",
    "DROP TABLE w WITH (RESERVE = '15m'); PURGE TABLE IF EXISTS w",
]
"""Valid statements (against ``SETUP``) to mutate."""

FOREIGN = [
    "CREATE TABLE t2 AS SELECT * FROM t",
    "CREATE TABLE t2 LIKE t",
    "CREATE OR REPLACE TABLE t2 (id INT PRIMARY KEY)",
    "CREATE TEMPORARY TABLE t2 (id INT PRIMARY KEY)",
    "CREATE TABLE t2 (id INT PRIMARY KEY) ENGINE=InnoDB DEFAULT CHARSET=utf8",
    "CREATE TABLE t2 (id INT PRIMARY KEY) PARTITION BY HASH (id) PARTITIONS 4",
    "CREATE TABLE t2 (id INT PRIMARY KEY) WITH (fillfactor=70) TABLESPACE ts",
    "CREATE TABLE t2 (id INT PRIMARY KEY, v INT CHECK (v > 0) REFERENCES t (id))",
    "CREATE TABLE t2 (id INT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v INT AS (id + 1))",
    "CREATE TABLE t2 (id INT AUTO_INCREMENT PRIMARY KEY COMMENT 'c', v TEXT COLLATE utf8)",
    "CREATE TABLE t2 (id INT PRIMARY KEY, CONSTRAINT c UNIQUE (id), FOREIGN KEY (id) REFERENCES t)",
    "CREATE TABLE t2 (id INT PRIMARY KEY, v INT ON UPDATE CURRENT_TIMESTAMP)",
    "CREATE TABLE t2 (id INT PRIMARY KEY, v ARRAY<INT>, m MAP<INT, INT>, s STRUCT<a INT>)",
    "CREATE TABLE t2 (id INT PRIMARY KEY) CLUSTER BY (id) COMMENT='x'",
    "CREATE VIEW v AS SELECT 1",
    "CREATE FUNCTION f() RETURNS INT AS 'select 1'",
    "CREATE SEQUENCE q START WITH 1 INCREMENT BY 1",
    "CREATE DATABASE d",
    "ALTER TABLE t ADD CONSTRAINT c PRIMARY KEY (id)",
    "ALTER TABLE t RENAME COLUMN a TO z",
    "ALTER TABLE t ALTER COLUMN a SET DATA TYPE INT USING a::INT",
    "ALTER TABLE t ALTER COLUMN a COMMENT 'x'",
    "ALTER TABLE t SWAP WITH w",
    "ALTER TABLE t CLUSTER BY (a)",
    "ALTER TABLE t DROP PRIMARY KEY",
    "ALTER TABLE t DROP PARTITION (a = 1)",
    "ALTER TABLE t SET TBLPROPERTIES ('a'='b')",
    "ALTER TABLE t SET LOCATION 's3://x'",
    "ALTER VIEW v AS SELECT 2",
    "DROP VIEW IF EXISTS v",
    "DROP FUNCTION f",
    "TRUNCATE TABLE t",
    "COMMENT ON TABLE t IS 'x'",
    "SELECT 1 FROM t WHERE a = 1",
    "INSERT INTO t VALUES (1, 2, 'x', 1.5)",
    "UPDATE t SET a = 1",
    "DELETE FROM t",
    "MERGE INTO t USING w ON t.id = w.id WHEN MATCHED THEN DELETE",
    "USE s",
    "SET x = 1",
    "SHOW TABLES",
    "GRANT SELECT ON t TO u",
    "WITH q AS (SELECT 1) SELECT * FROM q",
    "VALUES (1), (2)",
    "DESCRIBE t",
    "EXPLAIN SELECT 1",
    "PRAGMA x",
    "CACHE TABLE t",
    "ANALYZE t",
    "COPY INTO t FROM 's3://x'",
    "BEGIN; COMMIT; ROLLBACK",
]
"""Statements of other dialects sqlglot knows, to mutate: they lead the parser
into its other grammars."""

# -- the grammar -----------------------------------------------------------------

WEIRD_NAMES = [
    "..",
    ".",
    "_manifests",
    "a b",
    'q"uote',
    "it's",
    "\u00e9t\u00e9",
    "\u200b",
    "\U0001f600",
    "x" * 300,
    "",
    " ",
    "\x00",
    "a\nb",
    "a\tb",
    "\x7f",
    "\x85",
    "\ud800",
    "\udfff\ud800",
    "\ufeff",
    "\u2028",
    "PUBLIC",
    "Default",
    "SYSTEM",
    "T_PK",
]
INTEGERS = [
    0,
    1,
    2,
    3,
    -1,
    7,
    9,
    10,
    38,
    127,
    128,
    -129,
    32767,
    65000,
    65001,
    2**31 - 1,
    2**31,
    -(2**31) - 1,
    2**32,
    2**63 - 1,
    2**63,
    -(2**63),
    -(2**63) - 1,
    2**64,
    10**30,
]
TYPES = [
    "BOOLEAN",
    "TINYINT",
    "INT8",
    "SMALLINT",
    "INT16",
    "INT",
    "INTEGER",
    "INT32",
    "BIGINT",
    "INT64",
    "REAL",
    "FLOAT",
    "DOUBLE",
    "DOUBLE PRECISION",
    "DECIMAL",
    "NUMERIC",
    "VARCHAR",
    "STRING",
    "CHAR",
    "VARBINARY",
    "BYTES",
    "BINARY VARYING",
    "DATE",
    "TIME",
    "TIMESTAMP",
    "TIMESTAMP WITH LOCAL TIME ZONE",
    "UUID",
    "JSON",
    "INT4",
    "ARRAY<INT>",
    "STRUCT<a INT>",
    '"INT"',
    '"a""b"',
    '"a\'b"',
    "foo.bar",
    "INTERVAL",
]
STRINGS = [
    "",
    "x",
    "abc",
    "it''s",
    "2020-01-01",
    "2020-13-45",
    "10:00:00",
    "2020-01-01 00:00:00+02:00",
    "00000000-0000-0000-0000-000000000001",
    "\u00e9",
    "\x00",
    "\ud800",
    "a,b",
    "$..*",
    "STRONG",
    "HA",
    "x" * 70000,
]


class Grammar:
    """Random DDL statements over a small pool of names, so that statements
    meet each other's objects, with odd names, types and literals mixed in."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick(self, options: list[str]) -> str:
        return self.rng.choice(options)

    def maybe(self, text: str, p: float = 0.3) -> str:
        return text if self.rng.random() < p else ""

    def name(self, pool: list[str]) -> str:
        r = self.rng.random()
        if r < 0.85:
            return self.pick(pool)
        if r < 0.9:
            return self.pick(pool).lower()
        weird = self.pick(WEIRD_NAMES)
        return '"' + weird.replace('"', '""') + '"'

    def schema(self) -> str:
        return self.name(["PUBLIC", "S", "S2"])

    def relation(self, pool: list[str]) -> str:
        name = self.name(pool)
        return f"{self.schema()}.{name}" if self.rng.random() < 0.2 else name

    def table(self) -> str:
        return self.relation(["T", "S.U", "W", "X", "T2", "V"])

    def column(self) -> str:
        return self.name(["ID", "A", "B", "C", "K", "D", "E", "G", "H"])

    def index(self) -> str:
        return self.relation(["I", "J", "I2", "T_PK"])

    def zone(self) -> str:
        return self.name(["Z", "Z2", "Y", '"Default"'])

    def integer(self) -> str:
        r = self.rng.random()
        if r < 0.6:
            return str(self.rng.randint(-3, 40))
        if r < 0.97:
            return str(self.rng.choice(INTEGERS))
        return "9" * self.rng.choice([20, 999, 1000, 1001, 4301, 5000])

    def number(self) -> str:
        r = self.rng.random()
        if r < 0.5:
            return self.integer()
        if r < 0.8:
            return f"{self.rng.randint(-999, 999)}.{self.rng.randint(0, 9999)}"
        return self.pick(
            ["1e3", "1.5e0", "1e308", "1e309", "-1e309", "1e-400", "0.0", "-0.0", ".5"]
        )

    def string(self) -> str:
        text = self.pick(STRINGS)
        return "'" + text.replace("'", "''") + "'" if "''" not in text else f"'{text}'"

    def literal(self) -> str:
        r = self.rng.random()
        if r < 0.35:
            value = self.number()
        elif r < 0.55:
            value = self.string()
        elif r < 0.62:
            value = self.pick(["TRUE", "FALSE", "NULL"])
        elif r < 0.68:
            value = self.pick(["X'00ff'", "X''", "X'abc'", "x'ZZ'"])
        elif r < 0.8:
            kind = self.pick(["DATE", "TIME", "TIMESTAMP", "UUID"])
            value = f"{kind} {self.string()}"
        elif r < 0.86:
            value = f"CAST({self.literal()} AS {self.type()})"
        elif r < 0.9:
            value = self.pick(["RAND_UUID", "RAND_UUID()", "CURRENT_TIMESTAMP", "foo()", "a"])
        else:
            value = self.literal()
        if self.rng.random() < 0.15:
            value = f"-{value}" if self.rng.random() < 0.5 else f"-({value})"
        if self.rng.random() < 0.15:
            depth = self.rng.choice([1, 1, 2, 3, 50])
            value = "(" * depth + value + ")" * depth
        return value

    def type(self) -> str:
        name = self.pick(TYPES)
        r = self.rng.random()
        if r < 0.3:
            return f"{name}({self.integer()})"
        if r < 0.4:
            return f"{name}({self.integer()}, {self.integer()})"
        return name

    def column_def(self) -> str:
        parts = [self.column(), self.type()]
        for _ in range(self.rng.randint(0, 2)):
            parts.append(
                self.pick(
                    ["NOT NULL", "NULL", f"DEFAULT {self.literal()}", "PRIMARY KEY", "UNIQUE"]
                )
            )
        return " ".join(parts)

    def key_columns(self, sorted_: bool = True) -> str:
        columns = []
        for _ in range(self.rng.randint(1, 3)):
            col = self.column()
            if sorted_ and self.rng.random() < 0.3:
                col += " " + self.pick(["ASC", "DESC"])
            if sorted_ and self.rng.random() < 0.2:
                col += " " + self.pick(["NULLS FIRST", "NULLS LAST"])
            columns.append(col)
        return ", ".join(columns)

    def zone_options(self) -> str:
        options = []
        for _ in range(self.rng.randint(1, 3)):
            key = self.pick(
                [
                    "PARTITIONS",
                    "REPLICAS",
                    "QUORUM_SIZE",
                    "DATA_NODES_AUTO_ADJUST_SCALE_UP",
                    "DATA_NODES_AUTO_ADJUST_SCALE_DOWN",
                    "STORAGE_PROFILES",
                    "DATA_NODES_FILTER",
                    "CONSISTENCY_MODE",
                    "BOGUS",
                ]
            )
            value = self.integer() if self.rng.random() < 0.6 else self.literal()
            if key == "CONSISTENCY_MODE" and self.rng.random() < 0.6:
                value = self.pick(["'STRONG'", "'HA'", "HIGH_AVAILABILITY", "'x'"])
            options.append(f"{key}={value}")
        return ", ".join(options)

    def statement(self) -> str:
        kind = self.rng.choice(self.KINDS)
        return kind(self)

    def create_schema(self) -> str:
        return f"CREATE SCHEMA {self.maybe('IF NOT EXISTS ')}{self.schema()}"

    def drop_schema(self) -> str:
        tail = self.maybe(self.pick([" CASCADE", " RESTRICT"]), 0.4)
        return f"DROP SCHEMA {self.maybe('IF EXISTS ')}{self.schema()}{tail}"

    def create_table(self) -> str:
        elements = [self.column_def() for _ in range(self.rng.randint(1, 4))]
        if self.rng.random() < 0.5:
            kind = self.maybe(f"USING {self.pick(['HASH', 'SORTED', 'BTREE'])} ", 0.4)
            elements.append(f"PRIMARY KEY {kind}({self.key_columns()})")
        tail = ""
        if self.rng.random() < 0.2:
            tail += f" COLOCATE BY ({self.key_columns(sorted_=False)})"
        if self.rng.random() < 0.2:
            tail += f" ZONE {self.zone()}"
        if self.rng.random() < 0.15:
            tail += f" STORAGE PROFILE {self.string()}"
        exists = self.maybe("IF NOT EXISTS ", 0.2)
        return f"CREATE TABLE {exists}{self.table()} ({', '.join(elements)}){tail}"

    def drop_table(self) -> str:
        names = ", ".join(self.table() for _ in range(self.rng.randint(1, 2)))
        reserve = self.maybe(f" WITH (RESERVE = '{self.rng.choice(['0s', '1h', '2d'])}')", 0.2)
        return f"DROP TABLE {self.maybe('IF EXISTS ')}{names}{reserve}"

    def alter_table(self) -> str:
        actions = [self.alter_action() for _ in range(self.rng.choice([1, 1, 1, 2, 3]))]
        return f"ALTER TABLE {self.maybe('IF EXISTS ', 0.2)}{self.table()} {', '.join(actions)}"

    def alter_action(self) -> str:
        r = self.rng.random()
        if r < 0.25:
            exists = self.maybe("IF NOT EXISTS ", 0.2)
            if self.rng.random() < 0.3:
                defs = ", ".join(self.column_def() for _ in range(self.rng.randint(1, 3)))
                return f"ADD COLUMN {exists}({defs})"
            return f"ADD {self.maybe('COLUMN ', 0.7)}{exists}{self.column_def()}"
        if r < 0.4:
            return (
                f"DROP {self.maybe('COLUMN ', 0.7)}{self.maybe('IF EXISTS ', 0.2)}{self.column()}"
            )
        if r < 0.8:
            change = self.pick(
                [
                    f"SET DATA TYPE {self.type()}",
                    f"TYPE {self.type()}",
                    "SET NOT NULL",
                    "DROP NOT NULL",
                    f"SET DEFAULT {self.literal()}",
                    "DROP DEFAULT",
                ]
            )
            return f"ALTER {self.maybe('COLUMN ', 0.7)}{self.column()} {change}"
        if r < 0.9:
            return f"RENAME TO {self.table()}"
        props = []
        for _ in range(self.rng.randint(1, 2)):
            key = self.pick(["STALE_ROWS_FRACTION", "MIN_STALE_ROWS", "BOGUS"])
            props.append(f"{key}={self.number() if self.rng.random() < 0.9 else self.literal()}")
        return f"SET ({', '.join(props)})"

    def create_index(self) -> str:
        using = self.maybe(f"USING {self.pick(['HASH', 'SORTED', 'BTREE'])} ", 0.5)
        unique = self.maybe("UNIQUE ", 0.2)
        exists = self.maybe("IF NOT EXISTS ", 0.2)
        index = self.name(["I", "J", "I2", "T_PK"])
        return (
            f"CREATE {unique}INDEX {exists}{index} ON {self.table()} {using}({self.key_columns()})"
        )

    def drop_index(self) -> str:
        return f"DROP INDEX {self.maybe('IF EXISTS ')}{self.index()}"

    def alter_index(self) -> str:
        new = self.name(["I", "J", "I3"])
        return f"ALTER INDEX {self.maybe('IF EXISTS ')}{self.index()} RENAME TO {new}"

    def create_zone(self) -> str:
        options = self.maybe(f" WITH ({self.zone_options()})", 0.7)
        return f"CREATE ZONE {self.maybe('IF NOT EXISTS ')}{self.zone()}{options}"

    def alter_zone(self) -> str:
        action = self.pick(
            [f"SET ({self.zone_options()})", "SET DEFAULT", f"RENAME TO {self.zone()}"]
        )
        return f"ALTER ZONE {self.maybe('IF EXISTS ')}{self.zone()} {action}"

    def drop_zone(self) -> str:
        return f"DROP ZONE {self.maybe('IF EXISTS ')}{self.zone()}"

    def read(self) -> str:
        text = self.pick(
            [
                "SHOW SCHEMAS",
                "SHOW ZONES",
                f"SHOW TABLES{self.maybe(f' IN {self.schema()}')}",
                f"SHOW INDEXES{self.maybe(f' ON {self.table()}')}",
                f"DESCRIBE {self.maybe('TABLE ', 0.5)}{self.table()}",
                f"SHOW HISTORY{self.maybe(f' LIMIT {self.integer()}')}",
                f"SHOW DIFF {self.integer()} {self.integer()}",
                f"SHOW TABLETS{self.maybe(f' ON {self.table()}')}",
                "SHOW SERVERS",
                "SELECT * FROM "
                + self.pick(["SYSTEM.TABLES", "system.columns", "SYSTEM.HISTORY", self.table()]),
            ]
        )
        if self.rng.random() < 0.3:
            text += f" AS OF VERSION {self.integer()}"
        elif self.rng.random() < 0.15:
            moment = self.pick(["2026-11-23T01:02:03Z", "1999-01-01T00:00:00+05:00"])
            quoted = self.pick([f"'{moment}'", self.string()])
            text += f" AS OF TIMESTAMP {quoted}"
        return text

    KINDS: ClassVar[list[Callable[[Grammar], str]]] = [
        create_schema,
        drop_schema,
        create_table,
        create_table,
        create_table,
        drop_table,
        alter_table,
        alter_table,
        alter_table,
        alter_table,
        create_index,
        drop_index,
        alter_index,
        create_zone,
        create_zone,
        alter_zone,
        drop_zone,
        read,
    ]


# -- mutations -------------------------------------------------------------------

_TOKEN = re.compile(r"\s+|\w+|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|.", re.DOTALL)
ODD_CHARS: list[str] = [
    *"'\"`();,.=-+*/\\[]{}<>:$?@#!%^&|~",
    *"\x00\x01\x08\t\n\r\x0b\x0c\x1b\x1f\x7f\x80\x85\x9f\xa0",
    *"\u00e9\u0663\u00b2\uff11\u200b\u200d\u2028\u2029\ufeff\ufffd\uffff",
    "\U0001f600",
    "\ud800",
    "\udc00",
    "\U000e0001",
]
ODD_WORDS: list[str] = [
    *["SELECT", "FROM", "AS", "CAST", "CHECK", "UNIQUE", "PRIMARY KEY", "NULLS FIRST", "ON"],
    *["'", '"', "''", '""', "X'", "--", "/*", "*/", "E'", "$$", "N'", "U&'", "'\\'"],
    *["9223372036854775808", "-9223372036854775809", "18446744073709551616", "1e999"],
    *["9" * 1001, "9" * 5000, "(" * 200, ")" * 200, "(" * 3000, "- " * 100],
    *["DEFAULT", "NULL", "NOT NULL", "IF EXISTS", "CASCADE", "TYPE", "WITH", "SET"],
]

SQLGLOT_WORDS: list[str] = sorted(
    {str(k) for k in AlmanacTokenizer.KEYWORDS}
    | {str(k) for k in AlmanacParser.PROPERTY_PARSERS}
    | {str(k) for k in AlmanacParser.CONSTRAINT_PARSERS}
    | {str(k) for k in AlmanacParser.ALTER_PARSERS}
    | {str(k) for k in AlmanacParser.ALTER_ALTER_PARSERS}
    | {f"{k}(" for k in AlmanacParser.FUNCTION_PARSERS}
    | {f"{k}(1)" for k in list(AlmanacParser.FUNCTIONS)[::10]}
)
"""Words sqlglot's grammar reacts to: its keywords, the clauses and
constraints it parses for other dialects, and function calls."""


class Mutator:
    """Random edits of a valid script: byte flips, token deletions and
    duplications, stray quotes, huge numbers, control characters, unicode,
    splices and truncation."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def mutate(self, text: str, donors: list[str]) -> str:
        for _ in range(self.rng.choice([1, 1, 1, 2, 2, 3, 5])):
            text = self.rng.choice(self.EDITS)(self, text, donors)
        return text

    def _at(self, text: str) -> int:
        return self.rng.randint(0, len(text))

    def flip(self, text: str, donors: list[str]) -> str:
        if not text:
            return text
        at = self.rng.randrange(len(text))
        r = self.rng.random()
        if r < 0.5:
            char = chr(ord(text[at]) ^ (1 << self.rng.randrange(7)))
        elif r < 0.8:
            char = self.rng.choice(ODD_CHARS)
        else:
            char = chr(self.rng.randrange(0x110000))
        return text[:at] + char + text[at + 1 :]

    def insert_char(self, text: str, donors: list[str]) -> str:
        at = self._at(text)
        return text[:at] + self.rng.choice(ODD_CHARS) + text[at:]

    def insert_word(self, text: str, donors: list[str]) -> str:
        at = self._at(text)
        words = ODD_WORDS if self.rng.random() < 0.5 else SQLGLOT_WORDS
        return f"{text[:at]} {self.rng.choice(words)} {text[at:]}"

    def tokens(self, text: str) -> list[str]:
        return _TOKEN.findall(text)

    def delete_token(self, text: str, donors: list[str]) -> str:
        tokens = self.tokens(text)
        if tokens:
            del tokens[self.rng.randrange(len(tokens))]
        return "".join(tokens)

    def duplicate_token(self, text: str, donors: list[str]) -> str:
        tokens = self.tokens(text)
        if tokens:
            at = self.rng.randrange(len(tokens))
            tokens.insert(at, tokens[at])
        return "".join(tokens)

    def swap_tokens(self, text: str, donors: list[str]) -> str:
        tokens = self.tokens(text)
        if len(tokens) > 1:
            a, b = self.rng.randrange(len(tokens)), self.rng.randrange(len(tokens))
            tokens[a], tokens[b] = tokens[b], tokens[a]
        return "".join(tokens)

    def donor_token(self, text: str, donors: list[str]) -> str:
        """Replaces a token with one from another statement."""
        tokens = self.tokens(text)
        donor = self.tokens(self.rng.choice(donors))
        if tokens and donor:
            tokens[self.rng.randrange(len(tokens))] = self.rng.choice(donor)
        return "".join(tokens)

    def huge_number(self, text: str, donors: list[str]) -> str:
        numbers = list(re.finditer(r"\d+", text))
        huge = self.rng.choice(
            ["9223372036854775808", "18446744073709551616", "2147483648", "9" * 1001, "9" * 5000]
        )
        if not numbers:
            return self.insert_word(text, donors)
        match = self.rng.choice(numbers)
        return text[: match.start()] + huge + text[match.end() :]

    def quote(self, text: str, donors: list[str]) -> str:
        """Quotes a word, or breaks a quoted one."""
        words = list(re.finditer(r"\w+", text))
        if not words or self.rng.random() < 0.3:
            at = self._at(text)
            return text[:at] + self.rng.choice(["'", '"', "''", '""', "`"]) + text[at:]
        match = self.rng.choice(words)
        q = self.rng.choice(["'", '"', '"', "`"])
        inner = match.group()
        if self.rng.random() < 0.3:
            inner = inner[: len(inner) // 2] + q + q + inner[len(inner) // 2 :]
        return text[: match.start()] + q + inner + q + text[match.end() :]

    def splice(self, text: str, donors: list[str]) -> str:
        other = self.rng.choice(donors)
        return text[: self._at(text)] + other[self.rng.randint(0, len(other)) :]

    def join(self, text: str, donors: list[str]) -> str:
        return f"{text};{self.rng.choice(['', ' ', chr(10)])}{self.rng.choice(donors)}"

    def truncate(self, text: str, donors: list[str]) -> str:
        return text[: self._at(text)]

    def nest(self, text: str, donors: list[str]) -> str:
        """Wraps a literal or a parenthesised part in many parentheses."""
        match = self.rng.choice(list(re.finditer(r"\d+|'[^']*'|\(", text)) or [None])
        if match is None:
            return text
        depth = self.rng.choice([2, 10, 100, 1000])
        if match.group() == "(":
            return text[: match.start()] + "(" * depth + text[match.start() :] + ")" * depth
        return (
            text[: match.start()] + "(" * depth + match.group() + ")" * depth + text[match.end() :]
        )

    EDITS: ClassVar[list[Callable[[Mutator, str, list[str]], str]]] = [
        flip,
        flip,
        insert_char,
        insert_word,
        delete_token,
        delete_token,
        duplicate_token,
        swap_tokens,
        donor_token,
        donor_token,
        huge_number,
        quote,
        splice,
        join,
        truncate,
        nest,
    ]


# -- running ---------------------------------------------------------------------


@dataclass
class Finding:
    text: str
    problem: str


@dataclass
class Report:
    inputs: int = 0
    committed: int = 0
    noops: int = 0
    reads: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        kinds = ", ".join(f"{k} {n}" for k, n in self.refused.most_common())
        return (
            f"{self.inputs} inputs in {self.seconds:.1f}s: {self.committed} committed, "
            f"{self.noops} no-ops, {self.reads} reads, refused: {kinds}; "
            f"{len(self.findings)} findings"
        )


def fresh_catalog() -> Catalog:
    catalog = almanac.connect("memory://")
    catalog.sql(SETUP)
    return catalog


class Fuzzer:
    """Feeds inputs to ``cat.sql`` and checks the outcome of each. A catalog is
    reused until it has drifted ``epoch`` versions from its setup."""

    def __init__(self, seed: int, *, epoch: int = 25, max_findings: int = 50) -> None:
        self.rng = random.Random(seed)
        self.grammar = Grammar(self.rng)
        self.mutator = Mutator(self.rng)
        self.epoch = epoch
        self.max_findings = max_findings
        self.good = list(CORPUS)
        """Valid statements seen so far (the corpus, then generated ones that committed)."""

    def next_input(self) -> str:
        r = self.rng.random()
        if r < 0.05:
            return self.mutator.mutate(self.rng.choice(FOREIGN), self.good)
        if r < 0.45:
            return self.mutator.mutate(self.rng.choice(self.good), self.good)
        if r < 0.85:
            return self.grammar.statement()
        return self.mutator.mutate(self.grammar.statement(), self.good)

    def run(self, inputs: int, report: Report | None = None) -> Report:
        report = report or Report()
        started = time.perf_counter()
        cat = fresh_catalog()
        base = cat.latest_version
        try:
            for _ in range(inputs):
                if cat.latest_version - base >= self.epoch:
                    problem = self.check_catalog(cat)
                    if problem is not None and len(report.findings) < self.max_findings:
                        report.findings.append(Finding("(the catalog after an epoch)", problem))
                    cat.close()
                    cat = fresh_catalog()
                    base = cat.latest_version
                text = self.next_input()
                problem = self.check(cat, text, report)
                report.inputs += 1
                if problem is not None and len(report.findings) < self.max_findings:
                    report.findings.append(Finding(text, problem))
        finally:
            cat.close()
        report.seconds += time.perf_counter() - started
        return report

    @staticmethod
    def check_catalog(cat: Catalog) -> str | None:
        """The whole catalog survives a serialization round trip."""
        version = cat.catalog()
        try:
            if decode_catalog(encode_catalog(version)) != version:
                return f"catalog version {version.version} changes in a serialization round trip"
        except CatalogError as exc:
            return f"catalog version {version.version} does not round-trip: {exc}"
        return None

    @staticmethod
    def check_read(cat: Catalog, before: CatalogVersion, result: SqlResult) -> str | None:
        """A read changes nothing and answers rows of JSON scalars, as wide as
        its columns, from a version the node holds."""
        if cat.catalog() is not before:
            return "a read changed the catalog"
        if not cat.earliest_version <= result.version <= before.version:
            return f"a read answered from version {result.version}, not one the node holds"
        for row in result.rows:
            if len(row) != len(result.columns):
                return f"a row of {len(row)} cells under {len(result.columns)} columns"
            if not all(c is None or type(c) in (str, int, float, bool) for c in row):
                return f"a row with a cell that is not a JSON scalar: {row!r}"
        return None

    def check(self, cat: Catalog, text: str, report: Report) -> str | None:
        """The problem with what ``cat.sql(text)`` did, or ``None``."""
        before = cat.catalog()
        try:
            result = cat.sql(text)
            version = result.version
        except CatalogError as exc:
            report.refused[type(exc).__name__] += 1
            if cat.catalog() is not before or cat.latest_version != before.version:
                return f"{type(exc).__name__} after a change: {exc}"
            if not isinstance(exc, InputError):
                return f"{type(exc).__name__} is not an InputError: {exc}"
            if isinstance(exc, SqlParseError) and not (
                1 <= exc.line <= text.count("\n") + 1 and exc.column >= 1
            ):
                return f"SqlParseError outside the text: {exc}"
            if isinstance(exc, SqlParseError) and exc.message.startswith(UNEXPECTED):
                return f"sqlglot failed in a way the dialect does not handle: {exc}"
            return None
        except RecursionError:
            return "RecursionError"
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-6)}"
        if result.is_query:
            report.reads += 1
            return self.check_read(cat, before, result)
        if version == before.version:
            report.noops += 1
            return None if cat.catalog() is before else "a no-op changed the catalog"
        report.committed += 1
        if version != before.version + 1 or cat.latest_version != version:
            return f"one script made versions {before.version} → {version}"
        if len(self.good) < 2000 and len(text) <= 2000:
            self.good.append(text)
        (info,) = cat.history(since=version)
        try:
            if decode_update(encode_update(info.update)) != info.update:
                return "the committed version does not survive a serialization round trip"
        except CatalogError as exc:
            return f"the committed version does not round-trip: {exc}"
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-findings", type=int, default=200)
    parser.add_argument("--epoch", type=int, default=25, help="versions before a fresh catalog")
    args = parser.parse_args(argv)
    fuzzer = Fuzzer(args.seed, epoch=args.epoch, max_findings=args.max_findings)
    report = fuzzer.run(args.inputs)
    print(report.summary())
    seen: set[str] = set()
    for finding in report.findings:
        # One finding per problem and place (the last lines of its traceback).
        key = "\n".join(finding.problem.strip().split("\n")[-3:])
        if key in seen:
            continue
        seen.add(key)
        print(f"--- {ascii(finding.text)[:500]}\n{finding.problem}")
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
