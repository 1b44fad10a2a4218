"""Idempotent requests: ``execute(..., request_id=...)`` applies a request
once, whoever retries it, and returns the original result to every retry."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import almanac
from almanac import (
    AlreadyExistsError,
    Catalog,
    ConflictError,
    CreateSchema,
    ExecuteResult,
    ValidationError,
)
from almanac.metastore import MemoryMetastore, Metastore
from almanac.model.request_ids import request_digest
from almanac.model.schema_sync import SchemaSync
from almanac.node.log import UpdateLog
from tests.durable.support import table
from tests.waiting import PATIENCE

NO_WAIT = SchemaSync(delay_ms=0, max_clock_skew_ms=0)


def node(store: Metastore, window_s: float = 24 * 3600.0, name: str | None = None) -> Catalog:
    return Catalog(
        UpdateLog(store, owns_store=False), sync=NO_WAIT, request_window_s=window_s, node_name=name
    )


@pytest.fixture(params=[True, False], ids=["serialized", "optimistic"])
def store(request: pytest.FixtureRequest) -> Iterator[MemoryMetastore]:
    """A store that serialises its writers (read before every attempt), and
    one that does not (a first attempt on the unread latest version)."""
    yield MemoryMetastore(serialize_writers=request.param)


def batch(name: str) -> list[almanac.Command]:
    """Not idempotent by itself: applied twice, the first command fails."""
    return [CreateSchema(name), table("T", name), CreateSchema(name, if_not_exists=True)]


def with_id(cat: Catalog, request_id: str) -> list[int]:
    return [i.version for i in cat.history() if i.request_id == request_id]


def test_a_retry_returns_the_original_result_and_applies_nothing(store: Metastore) -> None:
    with node(store, name="n1") as cat:
        first = cat.execute(batch("S"), request_id="req-1")
        assert first == ExecuteResult(2, (True, True, False), created=True)
        cat.execute([CreateSchema("OTHER")])
        assert cat.execute(batch("S"), request_id="req-1") == first
        assert cat.latest_version == 3
        info = cat.history(2)[0]
        assert (info.node, info.request_id) == ("n1", "req-1")
        assert cat.history(3)[0].request_id is None
        assert cat.history(1)[0].node == "n1", "the first version is stamped too"


def test_every_entry_point_takes_a_request_id(store: Metastore) -> None:
    with node(store) as cat:
        v = cat.sql("CREATE TABLE A (ID INT64 PRIMARY KEY)", request_id="sql-1").version
        assert cat.sql("CREATE TABLE A (ID INT64 PRIMARY KEY)", request_id="sql-1").version == v
        future = cat.execute_async(batch("S"), request_id="async-1")
        result = future.result(timeout=PATIENCE)
        assert cat.execute_async(batch("S"), request_id="async-1").result(PATIENCE) == result
        assert cat.execute(batch("S"), request_id="async-1") == result
        assert cat.latest_version == v + 1


def test_another_node_knows_the_request(store: Metastore) -> None:
    with node(store) as a, node(store) as b:
        first = a.execute(batch("S"), request_id="r")
        # b may not have followed a's version yet: the retry still finds it.
        assert b.execute(batch("S"), request_id="r") == first
        assert a.latest_version == b.latest_version == first.version


def test_the_same_id_for_other_commands_is_a_conflict_naming_it(store: Metastore) -> None:
    with node(store) as cat:
        cat.execute(batch("S"), request_id="r-7")
        before = cat.catalog()
        with pytest.raises(ConflictError, match="'r-7'") as caught:
            cat.execute(batch("OTHER"), request_id="r-7")
        assert caught.value.context["request_id"] == "r-7"
        assert caught.value.context["version"] == 2
        with pytest.raises(ConflictError, match="'r-7'"):
            cat.execute([*batch("S"), CreateSchema("X")], request_id="r-7")
        assert cat.catalog() is before


def test_a_batch_that_changes_nothing_stores_no_request(store: Metastore) -> None:
    """Nothing is committed, so nothing remembers the id: a retry evaluates
    the batch again, against the catalog as it is then."""
    with node(store) as cat:
        noop = [CreateSchema("PUBLIC", if_not_exists=True)]
        assert cat.execute(noop, request_id="n") == ExecuteResult(1, (False,), created=False)
        assert with_id(cat, "n") == []
        cat.execute([CreateSchema("S")])
        assert cat.execute(noop, request_id="n") == ExecuteResult(2, (False,), created=False)


@pytest.mark.parametrize(
    "bad",
    ["", "x" * 129, "a\x00b", "caf\u00e9", "tab\there", "\x7f", "\udcff", 7, b"id", ["id"]],
    ids=repr,
)
def test_bad_request_ids_are_refused_naming_the_rule(bad: object) -> None:
    with node(MemoryMetastore()) as cat:
        calls: list[Callable[[], object]] = [
            lambda: cat.execute(batch("S"), request_id=bad),  # type: ignore[arg-type]
            lambda: cat.execute_async(batch("S"), request_id=bad),  # type: ignore[arg-type]
            lambda: cat.sql("CREATE SCHEMA S", request_id=bad),  # type: ignore[arg-type]
        ]
        for call in calls:
            with pytest.raises(ValidationError, match=r"request_id.*printable ASCII"):
                call()
        assert cat.latest_version == 1


def test_the_longest_and_oddest_legal_ids_work() -> None:
    with node(MemoryMetastore()) as cat:
        for request_id in ("x" * 128, " ", "~!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}"):
            first = cat.execute([CreateSchema(f"S{cat.latest_version}")], request_id=request_id)
            again = cat.execute([CreateSchema(f"S{first.version - 1}")], request_id=request_id)
            assert again == first
            assert with_id(cat, request_id) == [first.version]


def test_threads_racing_with_one_id_make_one_version(store: Metastore) -> None:
    with node(store) as a, node(store) as b:
        start = threading.Barrier(8)

        def run(i: int) -> ExecuteResult:
            start.wait(timeout=PATIENCE)
            return (a if i % 2 else b).execute(batch("S"), request_id="race")

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(run, range(8)))
        assert results == [ExecuteResult(2, (True, True, False), created=True)] * 8
        assert a.latest_version == 2
        assert with_id(a, "race") == [2]


def test_a_request_outlives_the_checkpoint_of_its_version_inside_the_window(
    store: Metastore,
) -> None:
    with node(store) as cat:
        first = cat.execute(batch("S"), request_id="old")
        cat.execute([CreateSchema("A")])
        assert cat.checkpoint_log() == 3
        assert cat.execute(batch("S"), request_id="old") == first
        with node(store) as fresh:  # starts from the checkpoint, which carries the id
            assert fresh.earliest_version == 3
            assert fresh.execute(batch("S"), request_id="old") == first
            with pytest.raises(ConflictError, match="'old'"):
                fresh.execute(batch("A"), request_id="old")
        # A checkpoint at the request's own version replaces its entry too.
        second = cat.execute(batch("B"), request_id="new")
        assert cat.checkpoint_log() == second.version
        with node(store) as fresh:
            assert fresh.execute(batch("B"), request_id="new") == second
            assert fresh.execute(batch("S"), request_id="old") == first
        assert cat.latest_version == second.version


def test_past_the_window_a_truncated_request_is_forgotten(store: Metastore) -> None:
    with node(store, window_s=0) as cat:
        first = cat.execute(batch("S"), request_id="gone")
        cat.execute([CreateSchema("A")])
        # Still in the available log: known whatever the window.
        assert cat.execute(batch("S"), request_id="gone") == first
        cat.checkpoint_log()
        with pytest.raises(AlreadyExistsError):  # executed anew
            cat.execute(batch("S"), request_id="gone")
        with node(store) as fresh:  # the checkpoint carried nothing either
            with pytest.raises(AlreadyExistsError):
                fresh.execute(batch("S"), request_id="gone")
            assert fresh.execute(batch("S2"), request_id="gone").version == 4


def test_the_request_window_is_checked() -> None:
    for bad in (-1, float("nan"), "1", None):
        with pytest.raises(ValidationError, match="request_window_s"):
            almanac.connect("memory://", request_window_s=bad)  # type: ignore[arg-type]


# -- the property ---------------------------------------------------------------------

_steps = st.lists(
    st.one_of(
        st.tuples(st.just("retry"), st.integers(0, 2), st.integers(0, 3)),
        st.tuples(st.just("checkpoint"), st.integers(0, 2), st.just(0)),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=_steps, serialized=st.booleans())
def test_any_interleaving_of_retries_applies_each_request_once(
    steps: list[tuple[str, int, int]], serialized: bool
) -> None:
    """Four requests, retried in any order from three nodes (which follow
    the log on their own threads, so a retry may run on a stale node), with
    checkpoints between them: each request makes exactly one version, and
    every retry of it gets the result its first execution got."""
    store = MemoryMetastore(serialize_writers=serialized)
    nodes = [node(store, name=f"n{i}") for i in range(3)]
    try:
        first: dict[int, ExecuteResult] = {}
        for kind, who, which in steps:
            cat = nodes[who]
            if kind == "checkpoint":
                cat.checkpoint_log()
                continue
            result = cat.execute(batch(f"S{which}"), request_id=f"req-{which}")
            assert result == first.setdefault(which, result)
        versions = sorted(r.version for r in first.values())
        assert versions == list(range(2, 2 + len(first)))
        for cat in nodes:
            assert cat.catalog_ready(len(first) + 1, timeout=PATIENCE)
            assert cat.latest_version == len(first) + 1
            assert sorted(s.name for s in cat.catalog().schemas()) == sorted(
                ["PUBLIC", *(f"S{i}" for i in first)]
            )
        with node(store) as fresh:  # replayed from the store: same answers
            for which, result in first.items():
                assert fresh.execute(batch(f"S{which}"), request_id=f"req-{which}") == result
            assert fresh.latest_version == len(first) + 1
    finally:
        for cat in nodes:
            cat.close()


def test_the_digest_is_the_same_for_equal_commands_however_they_were_built() -> None:
    class Name(str):
        pass

    listed = almanac.CreateIndex(name="I", table="T", columns=["A", "B"])  # type: ignore[arg-type]
    assert request_digest([listed]) == request_digest(
        [almanac.CreateIndex(name=Name("I"), table="T", columns=("A", "B"))]
    )
    assert request_digest([listed]) != request_digest(
        [almanac.CreateIndex(name="I", table="T", columns=("B", "A"))]
    )
    assert request_digest([CreateSchema("S"), CreateSchema("T")]) != request_digest(
        [CreateSchema("T"), CreateSchema("S")]
    )
