"""``make demo-cluster`` without Spark, small: it runs, the nodes agree, and
nothing it started outlives it."""

from __future__ import annotations

from pathlib import Path

import pytest

from almanac.dev import demo_cluster


def test_the_cluster_demo_runs_and_every_node_agrees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert demo_cluster.main([str(tmp_path), "--tables", "3", "--no-spark"]) == 0
    out = capsys.readouterr().out
    assert "All 7 nodes agree" in out
    assert "SIGKILLed the etcd leader" in out
    for i in (1, 2, 3):
        log = (tmp_path / f"node{i}.log").read_text()
        assert f"node node{i} stopped" in log  # stopped cleanly by the demo
