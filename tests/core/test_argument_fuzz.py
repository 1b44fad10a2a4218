"""The argument-type fuzzer (see ``argument_fuzz``) over the public API."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import almanac

from .argument_fuzz import (
    Fuzzer,
    catalog_methods,
    constructors,
    functions,
    label,
    uncovered_exports,
    unswept_modules,
)


def test_every_export_is_called_or_explained() -> None:
    assert uncovered_exports() == []
    names = {c.__name__ for c in constructors()}
    assert {"CreateTable", "DropTable", "CreateZone", "ColumnDef", "RetentionPolicy"} <= names
    assert {"Warehouse", "TableData", "CommitShape", "Predicate"} <= names
    assert {"catalog", "catalog_at", "execute", "history", "sql"} <= set(catalog_methods())


def test_every_public_function_of_the_swept_modules_is_called() -> None:
    """A function added to the ``__all__`` of a swept module is called
    without anyone listing it; a new module must be swept or explained."""
    called = {label(fn) for fn in functions()}
    assert {
        "decode",
        "decode_catalog",
        "decode_update",
        "write_files",
        "iceberg_bucket_values",
        "system_table",
        "system_rows",
        "load_table",
        "TableData.for_catalog",
        "Warehouse.open",
        "CatalogDiff.from_json",
    } <= called
    assert unswept_modules() == [], "sweep these modules or explain them in MODULES_NOT_SWEPT"


def test_fuzzer_enumerates_new_commands_automatically() -> None:
    every_command = {
        name
        for name in almanac.__all__
        if isinstance(getattr(almanac, name), type)
        and issubclass(getattr(almanac, name), almanac.Command)
        and name != "Command"
    }
    assert every_command <= {c.__name__ for c in constructors()}


def test_argument_fuzz_smoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    report = Fuzzer(seed=12345, workdir=tmp_path).run(3_000)
    assert report.calls == 3_000
    assert report.succeeded and report.refused and report.executed


@pytest.mark.slow
def test_argument_fuzz(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """100,000 calls (``ALMANAC_FUZZ_CALLS``, ``ALMANAC_FUZZ_SEED`` to vary)."""
    monkeypatch.chdir(tmp_path)
    calls = int(os.environ.get("ALMANAC_FUZZ_CALLS", "100000"))
    seed = int(os.environ.get("ALMANAC_FUZZ_SEED", "20261122"))
    started = time.monotonic()
    report = Fuzzer(seed=seed, workdir=tmp_path).run(calls)
    elapsed = time.monotonic() - started
    assert report.calls == calls
    assert report.succeeded > calls // 5 and report.refused > calls // 5
    print(f"{calls} calls, {report.executed} commands executed, {elapsed:.1f} s")
