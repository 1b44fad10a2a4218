"""A pyiceberg writer for the kill -9 campaign: appends batches of ten rows
with ids from ``first`` on to one table of ``almanac serve`` for ever, and
after each append the server acknowledged appends its first id to the ack
file (flushed and synced), so the test knows every acknowledged append.
A refused or failed commit is not acknowledged and is tried with the next ids.

``python -m tests.iceberg_rest.campaign_writer URL TOKEN NAMESPACE TABLE ACKS FIRST``
"""

from __future__ import annotations

import os
import sys
import warnings

from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException, RESTError

from tests.iceberg_rest.tables import batch

BATCH = 10


def main(url: str, token: str, namespace: str, name: str, acks: str, first: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        client = RestCatalog("campaign", uri=url, token=token)
    start = first
    with open(acks, "a", encoding="utf-8") as out:
        while True:
            rows = [(i, f"r{i}", i % 1000) for i in range(start, start + BATCH)]
            try:
                client.load_table((namespace, name)).append(batch(rows))
            except (CommitFailedException, RESTError, OSError):  # at grace 0 the janitor
                # may collect files the client has not committed yet
                start += BATCH
                continue
            out.write(f"{start}\n")
            out.flush()
            os.fsync(out.fileno())
            start += BATCH


if __name__ == "__main__":
    url, token, namespace, name, acks, first = sys.argv[1:]
    main(url, token, namespace, name, acks, int(first))
