"""Child process: checkpoint a catalog on a store capped at 16 operations per
transaction, and stop (to be killed) once ``batches`` delete batches ran."""

from __future__ import annotations

import sys

from almanac.metastore import Compare, Delete, Op, SqliteMetastore, TxnResult
from almanac.model.schema_sync import SchemaSync
from almanac.node.catalog import Catalog
from almanac.node.log import UpdateLog


class StoppingStore(SqliteMetastore):
    max_txn_ops = 16
    stop_after = 0
    batches = 0

    def _txn(
        self, compares: tuple[Compare, ...], success: tuple[Op, ...], failure: tuple[Op, ...]
    ) -> TxnResult:
        if success and all(isinstance(op, Delete) for op in success):
            if self.batches == self.stop_after:
                print(f"batches {self.batches}", flush=True)
                sys.stdin.readline()  # killed here, between two batches
            self.batches += 1
        return super()._txn(compares, success, failure)


def main() -> None:
    target, at, batches = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    store = StoppingStore(f"{target}/catalog.db", durability="normal")
    store.stop_after = batches
    with Catalog(UpdateLog(store), sync=SchemaSync(delay_ms=0, max_clock_skew_ms=0)) as cat:
        cat.checkpoint_log(at)
    print("finished", flush=True)


if __name__ == "__main__":
    main()
