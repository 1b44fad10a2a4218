"""``cat.sql`` on a ``memory://`` catalog, fed 100,000 fuzzed scripts (see
:mod:`tests.sql.sqlfuzz`): every failure is an ``InputError`` that changed
nothing, every success is one version that survives a serialization round
trip. ``ALMANAC_SQL_FUZZ_INPUTS`` and ``ALMANAC_SQL_FUZZ_SEED`` change the run."""

from __future__ import annotations

import os

import pytest

from tests.sql.sqlfuzz import CORPUS, Fuzzer, fresh_catalog

INPUTS = int(os.environ.get("ALMANAC_SQL_FUZZ_INPUTS", "100000"))
SEED = int(os.environ.get("ALMANAC_SQL_FUZZ_SEED", "20261122"))


@pytest.mark.slow
def test_fuzzed_sql_fails_only_with_input_errors_and_changes_nothing() -> None:
    report = Fuzzer(SEED).run(INPUTS)
    shown = "\n".join(f"{f.text[:300]!a}\n  {f.problem}" for f in report.findings[:10])
    assert not report.findings, f"{report.summary()}\n{shown}"
    # The mix reaches every outcome, not only syntax errors.
    assert report.committed > INPUTS // 50
    assert {"SqlParseError", "ValidationError", "NotFoundError"} <= set(report.refused)


def test_a_short_fuzz_run() -> None:
    report = Fuzzer(1).run(300)
    assert not report.findings, report.findings[:3]
    assert report.inputs == 300


def test_the_corpus_is_valid_against_the_setup() -> None:
    for sql in CORPUS:
        with fresh_catalog() as cat:
            before = cat.latest_version
            assert cat.sql(sql).version == before + 1, sql
