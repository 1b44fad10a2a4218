"""``version_view`` of a version a checkpoint removed while it was read."""

from __future__ import annotations

import almanac
from almanac.model.summary import SUMMARY_ENTRIES
from almanac.server.views import version_view


def test_a_checkpointed_version_is_summarised_by_its_entries_within_the_bound() -> None:
    with almanac.connect("memory://") as cat:
        cat.sql(";".join(f"CREATE SCHEMA S{i}" for i in range(SUMMARY_ENTRIES + 5)))
        [info] = cat.history(cat.latest_version)
        cat.sql("CREATE SCHEMA LATER")
        assert cat.checkpoint_log() > info.version
        view = version_view(cat, info)
    named = ", ".join(f"created schema S{i}" for i in range(SUMMARY_ENTRIES))
    assert view["summary"] == f"{named}, and 5 more"
    assert view["version"] == info.version
