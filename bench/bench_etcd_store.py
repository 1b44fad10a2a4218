"""Compare-and-swap throughput on one etcd member: the raw ``aetcd`` client
(the physical floor) against ``EtcdMetastore.txn``, in the same run.

Run: ``.venv/bin/python bench/bench_etcd_store.py [ops]``. Both loops do the
same work: read the counter, then a transaction "if mod_revision is what I
read, put the next value".
"""

from __future__ import annotations

import asyncio
import sys

import aetcd

from almanac.dev.etcd_local import LocalEtcd
from almanac.metastore import Compare, Put
from almanac.metastore.etcd import EtcdMetastore
from timing import median_seconds


async def _raw(endpoint: str, ops: int) -> None:
    host, port = endpoint.rsplit(":", 1)
    async with aetcd.Client(host=host, port=int(port)) as client:
        for _ in range(ops):
            got = await client.get(b"raw")
            value = int(got.value) if got else 0
            mod = got.mod_revision if got else 0
            await client.transaction(
                compare=[client.transactions.mod(b"raw") == mod],
                success=[client.transactions.put(b"raw", str(value + 1).encode())],
                failure=[],
            )


def _ours(store: EtcdMetastore, ops: int) -> None:
    for _ in range(ops):
        kv = store.get("ours")
        value = int(kv.value) if kv else 0
        guard = Compare.mod_revision("ours", "==", kv.mod_revision if kv else 0)
        assert store.txn([guard], [Put("ours", str(value + 1).encode())]).succeeded


def main() -> None:
    ops = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    with LocalEtcd(1) as cluster, EtcdMetastore(cluster.endpoints) as store:
        raw = median_seconds(lambda: asyncio.run(_raw(cluster.endpoints[0], ops)), 3)
        ours = median_seconds(lambda: _ours(store, ops), 3)
    print(f"raw aetcd CAS:           {ops / raw:8.0f} /s")
    print(f"EtcdMetastore.txn CAS:   {ops / ours:8.0f} /s   ({raw / ours:.2f} x the floor)")


if __name__ == "__main__":
    main()
