"""``make demo`` says where it writes and leaves nothing behind that it did
not say it kept: a directory given is kept (and named with its size), a
temporary one is removed at the end."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

from almanac.dev import demo


def test_a_demo_without_a_directory_removes_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where mkdtemp makes it
    assert demo.main(["--ddl-only"]) == 0
    out = capsys.readouterr().out
    made = re.search(r"This demo writes everything it makes in (\S+)", out)
    assert made is not None, out
    root = Path(made.group(1))
    assert root.parent == tmp_path
    assert re.search(rf"Removed {re.escape(str(root))} \(\d+ MB\)", out), out
    assert list(tmp_path.iterdir()) == [], "nothing is left"


def test_a_demo_keeps_the_directory_it_was_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "demo-data" / "demo"
    assert demo.main([str(root), "--ddl-only"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"This demo writes everything it makes in {root}\n")
    assert re.search(rf"Kept {re.escape(str(root))} \(\d+ MB\)", out), out
    assert (root / "catalog.db").exists()


def test_makefile_demos_write_under_demo_data_which_clean_removes() -> None:
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    assert "$(PY) -m almanac.dev.demo demo-data/demo" in makefile
    assert "$(PY) -m almanac.dev.demo_cluster demo-data/cluster" in makefile
    clean = makefile[makefile.index("\nclean:") :]
    assert "demo-data" in clean.splitlines()[2]
