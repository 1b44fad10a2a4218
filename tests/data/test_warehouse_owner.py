"""Nothing is deleted in a directory that is not proven to be this catalog's
warehouse (its marker names the catalog), nor outside a table's own
directory, however a path is spelled."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import almanac
from almanac import Catalog, WarehouseOwnerError
from almanac.cli import main
from almanac.data import TableData, read_table, run_janitor
from almanac.data.warehouse import MARKER
from tests.data.support import append, create, ids_of, own_files

_OLD = time.time() - 30 * 24 * 3600


def _user_files(directory: Path) -> list[Path]:
    """Plain files shaped like a warehouse's (``<digits>/<subdir>/``), old."""
    files = [directory / "1" / "sub" / "notes.txt", directory / "2" / "metadata" / "m.avro"]
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("the user's\n", encoding="utf-8")
        os.utime(path, (_OLD, _OLD))
    return files


def test_janitor_refuses_a_directory_that_is_not_the_warehouse(
    cat: Catalog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create(cat)
    append(cat, [1])
    wrong = tmp_path / "photos"
    files = _user_files(wrong)
    code = main(["janitor", cat.target, "--warehouse", str(wrong), "--grace", "0"])
    err = capsys.readouterr().err
    assert code == 1
    assert f"'{wrong}' is not proven to be this catalog's warehouse" in err
    assert "Traceback" not in err
    assert all(p.exists() for p in files)
    assert not (wrong / MARKER).exists(), "a directory without a sign of the catalog is not adopted"


def test_janitor_on_the_filesystem_root_or_a_uri_is_a_clean_answer(
    cat: Catalog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create(cat)
    append(cat, [1])
    assert main(["janitor", cat.target, "--warehouse", "/"]) == 1
    err = capsys.readouterr().err
    assert "'/' is not proven to be this catalog's warehouse" in err and "Traceback" not in err
    assert not Path("/", MARKER).exists()
    parent = Path(TableData.for_catalog(cat).warehouse.root).parent.parent
    assert main(["janitor", cat.target, "--warehouse", str(parent), "--grace", "0"]) == 1
    assert "is not proven" in capsys.readouterr().err, "a parent of the warehouse is not it"
    assert not (parent / MARKER).exists()
    warehouse = TableData.for_catalog(cat).warehouse.root
    assert main(["janitor", cat.target, "--warehouse", f"file://{warehouse}"]) == 0
    assert "files removed: 0" in capsys.readouterr().out
    assert main(["janitor", cat.target, "--warehouse", "file://relative/dir"]) == 1
    err = capsys.readouterr().err
    assert "Cannot open warehouse 'file://relative/dir'" in err and "Traceback" not in err
    assert ids_of(read_table(cat, "T")) == [1]


def test_a_warehouse_of_another_catalog_is_refused(tmp_path: Path) -> None:
    with almanac.connect(str(tmp_path / "a")) as a:
        create(a)
        first = append(a, [1])
        shared = TableData.for_catalog(a).warehouse.root
        with almanac.connect(str(tmp_path / "b"), warehouse=shared) as b:
            with pytest.raises(WarehouseOwnerError, match="names catalog") as caught:
                run_janitor(b, grace_s=0)
            assert caught.value.context["warehouse"] == shared
        assert all(Path(p).exists() for p in own_files(first))
        run_janitor(a, grace_s=0)
        assert ids_of(read_table(a, "T")) == [1]


def test_a_warehouse_from_before_markers_is_adopted_by_its_catalog(tmp_path: Path) -> None:
    with almanac.connect(str(tmp_path / "data")) as cat:
        create(cat)
        append(cat, [1])
        warehouse = TableData.for_catalog(cat).warehouse
        marker = Path(warehouse.marker)
        owner = marker.read_text(encoding="utf-8").strip()
    marker.unlink()  # as a release before markers left it
    with almanac.connect(str(tmp_path / "data")) as cat:
        assert marker.read_text(encoding="utf-8").strip() == owner
        append(cat, [2])
        run_janitor(cat, grace_s=0)
        assert ids_of(read_table(cat, "T")) == [1, 2]


def test_a_symlink_out_of_a_table_directory_is_never_followed(cat: Catalog, tmp_path: Path) -> None:
    table = create(cat)
    append(cat, [1])
    warehouse = TableData.for_catalog(cat).warehouse
    precious = _user_files(tmp_path / "precious")
    os.symlink(tmp_path / "precious", f"{warehouse.table_dir(table.id)}/deadbeef")
    os.symlink(precious[0], f"{warehouse.metadata_dir(table.id)}/link.avro")
    run_janitor(cat, grace_s=0)
    assert all(p.exists() for p in precious)
    for path in (str(precious[0]), f"file://{precious[0]}", f"//{precious[0]}"):
        assert not warehouse.remove_file(path, table.id)
    escape = f"{warehouse.table_dir(table.id)}/../../{precious[0].relative_to('/')}"
    assert not warehouse.remove_file(escape, table.id)
    assert not warehouse.remove_file(warehouse.marker, None)
    assert all(p.exists() for p in precious) and Path(warehouse.marker).exists()
    assert ids_of(read_table(cat, "T")) == [1]
