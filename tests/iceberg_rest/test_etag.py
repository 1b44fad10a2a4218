"""A table load answers the ``metadata.json`` an engine's commit wrote, byte
for byte, with an ``ETag``; ``If-None-Match`` holding it is a 304 until the
table changes (the REST spec's conditional load)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog, TableResponse

from .conftest import READ_TOKEN
from .tables import SCHEMA, batch

Client = Callable[[str | None], httpx.Client]
NS = "ETAG"
PATH = f"/v1/namespaces/{NS}/tables/T"


@pytest.fixture(scope="module")
def namespace(admin: RestCatalog) -> None:
    admin.create_namespace(NS)


@pytest.mark.usefixtures("namespace")
def test_a_load_answers_the_stored_metadata_and_a_304_while_it_is_current(
    admin: RestCatalog, http: Client
) -> None:
    table = admin.create_table((NS, "T"), SCHEMA)
    client = http(READ_TOKEN)
    before = client.get(PATH)
    assert before.status_code == 200 and before.headers["ETag"], before.text
    table.append(batch([(1, "a", 1)]))

    loaded = client.get(PATH)
    assert loaded.status_code == 200, loaded.text
    etag = loaded.headers["ETag"]
    assert etag.startswith('"') and etag.endswith('"') and etag != before.headers["ETag"]
    location = json.loads(loaded.content)["metadata-location"]
    stored = Path(location).read_bytes()
    assert stored in loaded.content  # the file as written, not re-serialized
    parsed = TableResponse.model_validate_json(loaded.content)
    assert parsed.metadata.current_snapshot() is not None
    assert client.get(PATH).headers["ETag"] == etag  # the same answer, the same tag

    for held in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        unchanged = client.get(PATH, headers={"If-None-Match": held})
        assert unchanged.status_code == 304, (held, unchanged.text)
        assert unchanged.content == b"" and unchanged.headers["ETag"] == etag
    other = client.get(PATH, headers={"If-None-Match": '"other"'})
    assert other.status_code == 200 and other.headers["ETag"] == etag

    table.append(batch([(2, "b", 2)]))
    changed = client.get(PATH, headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["ETag"] != etag
    refs = client.get(PATH, params={"snapshots": "refs"})
    assert refs.status_code == 200
    assert len(json.loads(refs.content)["metadata"]["snapshots"]) < len(
        json.loads(changed.content)["metadata"]["snapshots"]
    ), "the test needs two snapshots where refs shows one"
    assert refs.headers["ETag"] != changed.headers["ETag"]
    retagged = changed.headers["ETag"]
    with admin.load_table((NS, "T")).transaction() as change:
        change.set_properties(owner="ana")
    after = client.get(PATH, headers={"If-None-Match": retagged})
    assert after.status_code == 200 and after.headers["ETag"] != retagged
    assert json.loads(after.content)["metadata"]["properties"]["owner"] == "ana"


@pytest.mark.usefixtures("namespace")
def test_a_load_whose_file_is_gone_since_it_was_parsed_answers_as_before(
    admin: RestCatalog, http: Client
) -> None:
    """The bytes are read at the first load; a file gone by then (deleted
    by hand) leaves the load to the parsed copy the server holds, as before."""
    admin.create_table((NS, "GONE"), SCHEMA)
    table = admin.load_table((NS, "GONE"))
    table.append(batch([(1, "a", 1)]))  # the commit's answer parses the new file
    location = table.metadata_location
    Path(location).unlink()
    loaded = http(READ_TOKEN).get(f"/v1/namespaces/{NS}/tables/GONE")
    assert loaded.status_code == 200, loaded.text
    assert json.loads(loaded.content)["metadata-location"] == location
