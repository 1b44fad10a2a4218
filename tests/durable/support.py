"""Shared helpers for the durable-catalog tests."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import almanac
from almanac import ColumnDef, ColumnType
from almanac.metastore import Metastore
from almanac.model.catalog_version import CatalogVersion
from almanac.model.entries import VersionedUpdate, apply_update
from almanac.node.log import KEY_CHECKPOINT_VERSION, KEY_VERSION, UPDATE_PREFIX, update_key
from almanac.node.log_format import read_entry
from almanac.serialization import encode_catalog


def table(name: str, schema: str = "PUBLIC") -> almanac.CreateTable:
    return almanac.CreateTable(
        name=name,
        schema=schema,
        columns=(
            ColumnDef(name="ID", type=ColumnType.INT64, nullable=False),
            ColumnDef(name="V", type=ColumnType.STRING, length=10),
        ),
        primary_key=("ID",),
    )


def digest(version: CatalogVersion) -> str:
    return hashlib.sha256(encode_catalog(version)).hexdigest()


def replay_store(store: Metastore) -> CatalogVersion:
    """Rebuild the latest catalog from the raw keys, independently of any node."""
    kvs = {kv.key: kv for kv in store.range("catalog.").kvs}
    latest = int(kvs[KEY_VERSION].value)
    earliest = int(kvs[KEY_CHECKPOINT_VERSION].value)
    updates = [k for k in kvs if k.startswith(UPDATE_PREFIX)]
    assert len(updates) == latest - max(earliest, 1) + 1, "log keys are not contiguous"
    if earliest > 0:
        base = read_entry(update_key(earliest), earliest, kvs[update_key(earliest)].value)
        assert isinstance(base, CatalogVersion)
        start = earliest + 1
    else:
        base = CatalogVersion.empty()
        start = 1
    for version in range(start, latest + 1):
        update = read_entry(update_key(version), version, kvs[update_key(version)].value)
        assert isinstance(update, VersionedUpdate)
        base = apply_update(base, update)
    return base


ROOT = Path(__file__).resolve().parents[2]


def child(module: str, *args: str) -> subprocess.Popen[str]:
    """A Python process running ``module`` from this checkout, talking on pipes."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def race_ddl_workers(
    target: str, prefixes: list[str], count: int, *extra: str, timeout: float
) -> list[dict[str, object]]:
    """Start one ``worker_ddl`` per prefix, let them all go at once, and
    return their reports; each commits ``count`` tables."""
    total = 1 + len(prefixes) * count
    return race_children(
        [("tests.durable.worker_ddl", target, p, str(count), str(total), *extra) for p in prefixes],
        timeout=timeout,
    )


def race_children(commands: list[tuple[str, ...]], *, timeout: float) -> list[dict[str, object]]:
    """Start one ``child(*command)`` per command; once every one printed
    ``ready``, let them all go at once and return the JSON each printed last."""
    procs = [child(*command) for command in commands]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        reports = []
        for p in procs:
            out, _ = p.communicate(timeout=timeout)
            assert p.returncode == 0, "a worker failed (see its stderr above)"
            reports.append(json.loads(out.strip().splitlines()[-1]))
        return reports
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
