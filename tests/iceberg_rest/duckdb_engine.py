"""DuckDB with its iceberg extension as an Iceberg REST client, offline.

The extensions come from their PyPI wheels (``duckdb-extension-httpfs``,
``-avro``, ``-iceberg``), each holding one ``<name>.duckdb_extension`` built
for one DuckDB version; they are loaded by path with autoinstall and
autoload off, so nothing is ever fetched from the network."""

from __future__ import annotations

import importlib.resources
from pathlib import Path
from typing import Any

import duckdb

__all__ = ["EXTENSIONS", "attach", "extension_path"]

EXTENSIONS = ("httpfs", "avro", "iceberg")
"""In load order: the iceberg extension needs the other two loaded first."""


def extension_path(name: str) -> Path:
    """The ``.duckdb_extension`` file of wheel ``duckdb-extension-<name>``
    for the installed DuckDB (a wheel of another version is an error)."""
    version = duckdb.__version__
    root = importlib.resources.files(f"duckdb_extension_{name}")
    path = Path(str(root)) / "extensions" / f"v{version}" / f"{name}.duckdb_extension"
    if not path.is_file():
        raise FileNotFoundError(
            f"DuckDB {version}'s {name} extension is not installed: pip install "
            f"'duckdb-extension-{name}=={version}'"
        )
    return path


def attach(url: str, token: str, alias: str = "c", warehouse: str = "") -> Any:
    """A new in-memory DuckDB with the Iceberg REST catalog at ``url`` (the
    server's ``/iceberg`` prefix included) attached as ``alias``; a
    ``warehouse`` of ``@v<V>`` attaches the catalog pinned at version V."""
    con = duckdb.connect()
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    for name in EXTENSIONS:
        con.execute(f"LOAD '{extension_path(name)}'")
    con.execute("CREATE SECRET (TYPE iceberg, TOKEN ?)", [token])
    con.execute(f"ATTACH '{warehouse}' AS {alias} (TYPE iceberg, ENDPOINT '{url}')")
    return con
