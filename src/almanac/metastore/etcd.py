"""etcd metastore: the catalog on a real etcd v3 cluster, over ``aetcd``'s gRPC stubs.

Threads. The gRPC client is asyncio; its event loop runs in one background
thread owned by the store, and every public call hands a coroutine to it
and waits. ``close()`` ends the watches, the channels and the thread.

Revisions. etcd numbers the state of an empty cluster 1, so an etcd revision
R is reported here as R - 1: revision 0 means "nothing written", as on every
other backend, and a write still bumps it by exactly one. Revisions are
cluster-global: with a namespace, writes under other namespaces of the same
cluster bump them too (tests compare revisions relative to a start).

Namespace. ``namespace="ns"`` stores every key under ``ns/``; ranges and
watches see (and return) keys without it, so several catalogs share one
cluster. Lease ids, revisions and compaction are shared by the whole cluster.

Leases. etcd counts TTLs in whole seconds and enforces a minimum (1.5 x the
election timeout, rounded up); a requested TTL is rounded up and
:meth:`keep_alive` reports the TTL etcd actually granted.

Failures. Every call is bounded by ``timeout_s``: attempts fail over across
the endpoints (a member killed, a leader election) until the bound, then
raise :class:`MetastoreUnavailableError` naming the endpoints. A write whose
reply was lost is sent again; when that second attempt finds its compares
failing, the store checks whether the first attempt applied (every put of
the branch holds our value at one revision newer than anything seen before
sending: one revision is one transaction) and reports that outcome, with
the responses rebuilt from the state just before it. A write still unsettled
at the bound raises with ``outcome="unknown"`` in the error's context. (A
write without compares that lost its reply and is sent again may apply
twice: a put writes the same value at a second revision.)
Watches reconnect by themselves and resume from the revision after the last
event delivered, so a restart or a leader change neither loses nor repeats
an event; when that revision was compacted meanwhile they raise
:class:`CompactedError`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import math
import queue
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from aetcd import rpc

from almanac.errors import (
    CompactedError,
    InvalidArgumentError,
    LeaseNotFoundError,
    MetastoreError,
    MetastoreUnavailableError,
)
from almanac.metastore.base import (
    Compare,
    CompareTarget,
    Delete,
    DeleteRange,
    DeleteResponse,
    Get,
    GetResponse,
    KeyValue,
    Metastore,
    Op,
    Put,
    PutResponse,
    RangeResult,
    Response,
    TxnResult,
    Watch,
    WatchEvent,
    WatchEventKind,
    WatchRegistry,
    apply_txn,
    compacted_error,
    prefix_end,
)
from almanac.metastore.types import check_timeout
from almanac.model.targets import MAX_TIMEOUT_S, reserved_segment

__all__ = ["DEFAULT_TIMEOUT_S", "EtcdMetastore", "check_endpoint", "check_namespace"]

DEFAULT_TIMEOUT_S = 5.0

_T = TypeVar("_T")

# \Z, not $: $ also matches before a final line break
_ENDPOINT = re.compile(r"^(?P<host>[A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\]):(?P<port>[0-9]{1,5})\Z")
_NAMESPACE = re.compile(r"^[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*\Z")

_CHANNEL_OPTIONS = (
    # A member that comes back must be reachable again within a call's bound,
    # not after gRPC's default reconnect backoff of up to two minutes.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.max_receive_message_length", 512 * 1024 * 1024),
    ("grpc.max_send_message_length", 512 * 1024 * 1024),
)

_COMPARE_RESULT = {
    "==": rpc.Compare.CompareResult.EQUAL,
    "!=": rpc.Compare.CompareResult.NOT_EQUAL,
    "<": rpc.Compare.CompareResult.LESS,
    ">": rpc.Compare.CompareResult.GREATER,
}

# Errors that prove a request was not applied: it never reached a member
# that could propose it. Anything else on a write leaves its outcome open.
_NOT_SENT = (
    "failed to connect",
    "connection refused",
    "connections to all backends failing",
    "etcdserver: no leader",
    "etcdserver: not capable",
    "etcdserver: too many requests",
)
# A member that lost its leader refuses at once ("no leader": not applied)
# instead of holding the request until it times out, so the call moves on
# to a member that can serve it; a watch there is cancelled and resumes
# elsewhere.
_LEADER = (("hasleader", "true"),)
_TRANSIENT_CODES = (
    rpc.StatusCode.UNAVAILABLE,
    rpc.StatusCode.DEADLINE_EXCEEDED,
    rpc.StatusCode.CANCELLED,
    rpc.StatusCode.UNKNOWN,
    rpc.StatusCode.RESOURCE_EXHAUSTED,
    rpc.StatusCode.INTERNAL,
)


def check_endpoint(endpoint: object) -> str:
    """``host:port`` with a port in 1..65535; InvalidArgumentError otherwise."""
    if not isinstance(endpoint, str) or (match := _ENDPOINT.match(endpoint)) is None:
        raise InvalidArgumentError(
            f"etcd endpoint {endpoint!r} must be 'host:port'", endpoint=repr(endpoint)
        )
    if not 1 <= int(match["port"]) <= 65535:
        raise InvalidArgumentError(
            f"etcd endpoint {endpoint!r} has port {match['port']}, outside 1..65535",
            endpoint=endpoint,
        )
    return endpoint


def check_namespace(namespace: object) -> str:
    """Segments of letters, digits, ``_.-`` joined by ``/`` (or empty for none)."""
    if not isinstance(namespace, str) or (namespace and not _NAMESPACE.match(namespace)):
        raise InvalidArgumentError(
            f"etcd namespace {namespace!r} must be segments of letters, digits, '_', '.' "
            "or '-' separated by single '/'",
            namespace=repr(namespace),
        )
    if (problem := reserved_segment(namespace)) is not None:
        raise InvalidArgumentError(f"etcd namespace {namespace!r}: {problem}", namespace=namespace)
    return namespace


@dataclass(slots=True)
class _State:
    """The keys a txn's ops touch, as of one revision: a :class:`TxnView`."""

    kvs: dict[str, KeyValue]

    def get(self, key: str) -> KeyValue | None:
        return self.kvs.get(key)

    def range(self, prefix: str, limit: int | None) -> tuple[tuple[KeyValue, ...], bool]:
        found = sorted((kv for kv in self.kvs.values() if kv.key.startswith(prefix)), key=_key)
        if limit is not None and len(found) > limit:
            return tuple(found[:limit]), True
        return tuple(found), False

    def lease_alive(self, lease_id: int) -> bool:
        return True

    def lease_keys(self, lease_id: int) -> Sequence[KeyValue]:
        return ()

    def expired_leases(self) -> Sequence[int]:
        return ()

    def drop_lease(self, lease_id: int) -> None:
        pass

    def record(self, event: WatchEvent) -> None:
        if event.type is WatchEventKind.PUT:
            self.kvs[event.kv.key] = event.kv
        else:
            self.kvs.pop(event.kv.key, None)


def _key(kv: KeyValue) -> bytes:
    return kv.key.encode("utf-8")


class EtcdMetastore(Metastore):
    """A metastore on an etcd v3 cluster reached at ``endpoints`` (``host:port``)."""

    max_txn_ops = 128

    def __init__(
        self,
        endpoints: Sequence[str],
        *,
        namespace: str = "",
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        if isinstance(endpoints, str) or not isinstance(endpoints, Sequence) or not endpoints:
            raise InvalidArgumentError(
                f"etcd endpoints must be a non-empty list of 'host:port', got {endpoints!r}",
                endpoints=repr(endpoints),
            )
        self.endpoints = tuple(check_endpoint(e) for e in endpoints)
        self.namespace = check_namespace(namespace)
        bound = check_timeout(timeout_s)
        if bound is None or not 0 < bound <= MAX_TIMEOUT_S:
            raise InvalidArgumentError(
                f"timeout_s must be a positive number of seconds up to {MAX_TIMEOUT_S:g}, "
                f"got {timeout_s!r}",
                timeout_s=repr(timeout_s),
            )
        self.timeout_s = bound
        self._prefix = f"{namespace}/" if namespace else ""
        self._raw_prefix = self._prefix.encode("utf-8")
        self._closed = False
        self._current = 0
        self._seen = 0  # newest etcd revision any reply showed
        self._known_compact = 0  # a lower bound of etcd's compact revision
        self._watches = WatchRegistry()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="almanac-etcd-client", daemon=True
        )
        self._thread.start()
        self._channels: list[rpc.Channel] = self._submit(self._open_channels())

    async def _open_channels(self) -> list[rpc.Channel]:
        return [rpc.insecure_channel(e, options=_CHANNEL_OPTIONS) for e in self.endpoints]

    # -- plumbing

    def _submit(self, coroutine: Awaitable[_T]) -> _T:
        async def run() -> _T:
            return await coroutine

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result()

    def _run(self, what: str, attempt: Callable[[int], Awaitable[_T]], *, write: bool) -> _T:
        if self._closed:
            raise MetastoreError("the metastore is closed", endpoints=self.endpoints)
        return self._submit(self._retrying(what, attempt, write=write))

    async def _retrying(
        self, what: str, attempt: Callable[[int], Awaitable[_T]], *, write: bool
    ) -> _T:
        """Run ``attempt(endpoint index)`` until it answers or the bound passes."""
        deadline = self._loop.time() + self.timeout_s
        unknown = False
        delay = 0.02
        last = "no attempt"
        while True:
            index = self._current
            try:
                # The bound holds even when one attempt hangs.
                remaining = max(deadline - self._loop.time(), 0.001)
                return await asyncio.wait_for(attempt(index), remaining)
            except TimeoutError:
                last = f"no reply within {self.timeout_s:g} s"
                unknown = unknown or write
            except rpc.AioRpcError as exc:
                if exc.code() not in _TRANSIENT_CODES:
                    raise _mapped(exc, self) from None
                last = exc.details() or str(exc.code())
                sent = not any(s in (exc.details() or "").lower() for s in _NOT_SENT)
                unknown = unknown or (write and sent)
            except _NoReply as exc:
                last = str(exc)
            if self._closed:
                raise MetastoreError("the metastore is closed", endpoints=self.endpoints)
            # Try the next member: the one that failed may be down or cut off.
            if self._current == index:
                self._current = (index + 1) % len(self.endpoints)
            remaining = deadline - self._loop.time()
            if remaining <= 0:
                context: dict[str, Any] = {"endpoints": self.endpoints, "operation": what}
                if unknown:
                    context["outcome"] = "unknown"
                raise MetastoreUnavailableError(
                    f"etcd at {', '.join(self.endpoints)} did not answer {what} within "
                    f"{self.timeout_s:g} s"
                    + (" (the write may or may not have been applied)" if unknown else "")
                    + f": {last}",
                    **context,
                )
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, 0.25)

    def _attempt_timeout(self) -> float:
        # Shorter than the bound, so that a request stuck on a dying leader
        # leaves time to ask another member.
        return max(1.0, self.timeout_s / 3)

    def _stub_kv(self, index: int) -> rpc.KVStub:
        return rpc.KVStub(self._channels[index])

    def _saw(self, header: Any) -> int:
        revision = int(header.revision)
        self._seen = max(self._seen, revision)
        return revision

    # -- keys

    def _raw(self, key: str) -> bytes:
        return self._raw_prefix + key.encode("utf-8")

    def _range_of(self, prefix: str) -> tuple[bytes, bytes]:
        start = self._raw(prefix)
        end = prefix_end(start)
        return (b"\0", b"\0") if not start else (start, b"\0" if end is None else end)

    def _kv(self, kv: Any) -> KeyValue:
        return KeyValue(
            kv.key[len(self._raw_prefix) :].decode("utf-8"),
            bytes(kv.value),
            max(kv.create_revision - 1, 0),
            max(kv.mod_revision - 1, 0),
            int(kv.version),
            int(kv.lease),
        )

    def _range_request(
        self, prefix: str, revision: int | None, limit: int | None, *, exact: bool = False
    ) -> rpc.RangeRequest:
        if exact:
            request = rpc.RangeRequest(key=self._raw(prefix))
        else:
            start, end = self._range_of(prefix)
            request = rpc.RangeRequest(key=start, range_end=end)
        if limit is not None:
            request.limit = limit
        if revision is not None:
            request.revision = revision + 1
        return request

    # -- reads

    def _current_revision(self) -> int:
        async def attempt(index: int) -> int:
            request = rpc.RangeRequest(key=self._raw_prefix or b"\0", count_only=True, limit=1)
            response = await self._stub_kv(index).Range(
                request, timeout=self._attempt_timeout(), metadata=_LEADER
            )
            return self._saw(response.header) - 1

        return self._run("a revision read", attempt, write=False)

    def _current_compact_revision(self) -> int:
        """etcd has no call for it: find the oldest readable revision by
        bisection over reads at past revisions (reads below it fail)."""
        current = self._current_revision() + 1
        low, high = max(self._known_compact, 1), current
        while low < high:
            middle = (low + high) // 2
            if self._readable(middle):
                high = middle
            else:
                low = middle + 1
        self._known_compact = max(self._known_compact, low)
        return low - 1

    def _readable(self, etcd_revision: int) -> bool:
        async def attempt(index: int) -> bool:
            request = rpc.RangeRequest(key=b"\0", count_only=True, revision=etcd_revision)
            try:
                await self._stub_kv(index).Range(
                    request, timeout=self._attempt_timeout(), metadata=_LEADER
                )
            except rpc.AioRpcError as exc:
                if exc.code() == rpc.StatusCode.OUT_OF_RANGE and "compacted" in exc.details():
                    return False
                raise
            return True

        return self._run("a compaction probe", attempt, write=False)

    def _compacted(self, revision: int) -> CompactedError:
        return compacted_error(revision, self._current_compact_revision())

    def _read_range(self, prefix: str, revision: int | None, limit: int | None) -> RangeResult:
        async def attempt(index: int) -> RangeResult:
            request = self._range_request(prefix, revision, limit)
            response = await self._stub_kv(index).Range(
                request, timeout=self._attempt_timeout(), metadata=_LEADER
            )
            current = self._saw(response.header) - 1
            kvs = tuple(self._kv(kv) for kv in response.kvs)
            return RangeResult(kvs, current if revision is None else revision, response.more)

        try:
            return self._run("a range read", attempt, write=False)
        except _Compacted:
            assert revision is not None
            raise self._compacted(revision) from None
        except _Future:
            current = self._current_revision()
            raise MetastoreError(
                f"revision {revision} is in the future (current revision is {current})",
                revision=revision,
                current=current,
            ) from None

    # -- transactions

    def _request_op(self, op: Op) -> rpc.RequestOp:
        if isinstance(op, Put):
            return rpc.RequestOp(
                request_put=rpc.PutRequest(
                    key=self._raw(op.key), value=op.value, lease=op.lease, prev_kv=True
                )
            )
        if isinstance(op, Delete):
            return rpc.RequestOp(
                request_delete_range=rpc.DeleteRangeRequest(key=self._raw(op.key), prev_kv=True)
            )
        if isinstance(op, DeleteRange):
            start, end = self._range_of(op.prefix)
            return rpc.RequestOp(
                request_delete_range=rpc.DeleteRangeRequest(key=start, range_end=end, prev_kv=True)
            )
        if isinstance(op, Get):
            return rpc.RequestOp(request_range=self._range_request(op.key, None, None, exact=True))
        return rpc.RequestOp(request_range=self._range_request(op.prefix, None, op.limit))

    def _compare(self, compare: Compare) -> rpc.Compare:
        message = rpc.Compare(key=self._raw(compare.key), result=_COMPARE_RESULT[compare.op])
        operand = compare.operand
        if compare.target is CompareTarget.VALUE:
            assert isinstance(operand, bytes)
            message.target = rpc.Compare.CompareTarget.VALUE
            message.value = operand
        elif compare.target is CompareTarget.VERSION:
            assert isinstance(operand, int)
            message.target = rpc.Compare.CompareTarget.VERSION
            message.version = operand
        else:
            assert isinstance(operand, int)
            # Our revision r is etcd's r + 1; 0 (absent) stays 0 on both sides.
            etcd = operand + 1 if operand > 0 else 0
            if compare.target is CompareTarget.MOD_REVISION:
                message.target = rpc.Compare.CompareTarget.MOD
                message.mod_revision = etcd
            else:
                message.target = rpc.Compare.CompareTarget.CREATE
                message.create_revision = etcd
        return message

    def _responses(
        self, ops: Sequence[Op], raw: Sequence[Any], revision: int
    ) -> tuple[Response, ...]:
        out: list[Response] = []
        for op, response in zip(ops, raw, strict=True):
            if isinstance(op, Put):
                put = response.response_put
                out.append(PutResponse(self._kv(put.prev_kv) if put.HasField("prev_kv") else None))
            elif isinstance(op, Delete | DeleteRange):
                deleted = response.response_delete_range
                prevs = tuple(sorted((self._kv(kv) for kv in deleted.prev_kvs), key=_key))
                out.append(DeleteResponse(int(deleted.deleted), prevs))
            elif isinstance(op, Get):
                kvs = response.response_range.kvs
                out.append(GetResponse(self._kv(kvs[0]) if kvs else None))
            else:
                ranged = response.response_range
                kvs_ = tuple(self._kv(kv) for kv in ranged.kvs)
                out.append(RangeResult(kvs_, revision, bool(ranged.more)))
        return tuple(out)

    def _txn(
        self, compares: tuple[Compare, ...], success: tuple[Op, ...], failure: tuple[Op, ...]
    ) -> TxnResult:
        writes = any(isinstance(op, Put | Delete | DeleteRange) for op in success + failure)
        request = rpc.TxnRequest(
            compare=[self._compare(c) for c in compares],
            success=[self._request_op(op) for op in success],
            failure=[self._request_op(op) for op in failure],
        )
        probe = rpc.TxnRequest(compare=request.compare, success=request.success)
        seen_before = self._seen
        sent_once = False

        async def send(message: rpc.TxnRequest, index: int) -> Any:
            nonlocal sent_once
            try:
                response = await self._stub_kv(index).Txn(
                    message, timeout=self._attempt_timeout(), metadata=_LEADER
                )
            except rpc.AioRpcError as exc:
                if exc.code() in _TRANSIENT_CODES and writes:
                    sent = not any(s in (exc.details() or "").lower() for s in _NOT_SENT)
                    sent_once = sent_once or sent
                raise
            except asyncio.CancelledError:
                sent_once = sent_once or writes  # cut off by the bound mid-flight
                raise
            self._saw(response.header)
            return response

        def result(response: Any, ops: tuple[Op, ...]) -> TxnResult:
            revision = int(response.header.revision) - 1
            return TxnResult(
                bool(response.succeeded),
                revision,
                self._responses(ops, response.responses, revision),
            )

        async def settle(index: int) -> TxnResult | None:
            """After a lost reply: that attempt's result if it applied (or if
            it had not, and the success branch runs now); ``None`` once it
            is proved not to have applied. A failure branch is never run
            before that proof: it may write."""
            nonlocal sent_once
            with contextlib.suppress(_Unsettled):
                applied = await self._applied_earlier(index, success, seen_before)
                if applied is not None:
                    return applied
            tried = await send(probe, index)
            if tried.succeeded:
                return result(tried, success)
            # The lost attempt may have applied just before the probe.
            applied = await self._applied_earlier(index, success, seen_before)
            if applied is not None:
                return applied
            sent_once = False
            return None

        async def attempt(index: int) -> TxnResult:
            if sent_once:
                settled = await settle(index)
                if settled is not None:
                    return settled
            response = await send(request, index)
            return result(response, success if response.succeeded else failure)

        try:
            return self._run("a transaction", attempt, write=writes)
        except _LeaseMissing:
            raise LeaseNotFoundError(self._dead_lease(compares, success, failure)) from None
        except _Unsettled as exc:
            raise MetastoreUnavailableError(
                f"etcd at {', '.join(self.endpoints)} lost the reply to a transaction and its "
                f"compares fail now; whether it applied is unknown ({exc}): re-read first",
                endpoints=self.endpoints,
                operation="a transaction",
                outcome="unknown",
            ) from None

    async def _applied_earlier(
        self, index: int, success: tuple[Op, ...], seen_before: int
    ) -> TxnResult | None:
        """Whether an earlier attempt whose reply was lost applied ``success``:
        its result if so, ``None`` if not. Raises :class:`_Unsettled` when the
        store holds no proof either way (no puts, or history compacted).

        One revision is one transaction: the attempt applied iff at some
        revision R newer than anything seen before sending, every put of the
        branch wrote our value. A key still holding our value names R."""
        puts: list[Put] = [op for op in success if isinstance(op, Put)]
        if not puts:
            raise _Unsettled("a branch without puts leaves no proof of having applied")
        kv_stub = self._stub_kv(index)
        timeout = self._attempt_timeout()
        try:
            found = await kv_stub.Txn(
                rpc.TxnRequest(
                    success=[
                        rpc.RequestOp(request_range=rpc.RangeRequest(key=self._raw(op.key)))
                        for op in puts
                    ]
                ),
                timeout=timeout,
                metadata=_LEADER,
            )
            candidates = sorted(
                {
                    int(kvs[0].mod_revision)
                    for op, response in zip(puts, found.responses, strict=True)
                    if (kvs := response.response_range.kvs)
                    and kvs[0].value == op.value
                    and kvs[0].lease == op.lease
                    and kvs[0].mod_revision > seen_before
                },
                reverse=True,
            )
            for etcd_revision in candidates:
                if await self._wrote_all_at(kv_stub, puts, etcd_revision):
                    return await self._replayed(kv_stub, success, etcd_revision)
        except rpc.AioRpcError as exc:
            if exc.code() == rpc.StatusCode.OUT_OF_RANGE:
                raise _Unsettled(exc.details()) from None
            raise
        return None

    async def _wrote_all_at(self, kv_stub: rpc.KVStub, puts: list[Put], etcd_revision: int) -> bool:
        for op in puts:
            response = await kv_stub.Range(
                rpc.RangeRequest(key=self._raw(op.key), revision=etcd_revision),
                timeout=self._attempt_timeout(),
                metadata=_LEADER,
            )
            kv = response.kvs[0] if response.kvs else None
            if kv is None or (kv.mod_revision, kv.value, kv.lease) != (
                etcd_revision,
                op.value,
                op.lease,
            ):
                return False
        return True

    async def _replayed(
        self, kv_stub: rpc.KVStub, success: tuple[Op, ...], etcd_revision: int
    ) -> TxnResult:
        """The result of ``success`` applied at ``etcd_revision``, rebuilt by
        running it on the state just before (the same engine as the other
        backends)."""
        before = etcd_revision - 1
        state: dict[str, KeyValue] = {}
        for step in success:
            if isinstance(step, Put | Delete | Get):
                request = rpc.RangeRequest(key=self._raw(step.key), revision=before)
            else:
                start, end = self._range_of(step.prefix)
                request = rpc.RangeRequest(key=start, range_end=end, revision=before)
            response = await kv_stub.Range(
                request, timeout=self._attempt_timeout(), metadata=_LEADER
            )
            state.update((kv.key, kv) for kv in map(self._kv, response.kvs))
        return apply_txn(_State(state), before - 1, (), success, ())

    def _dead_lease(
        self, compares: tuple[Compare, ...], success: tuple[Op, ...], failure: tuple[Op, ...]
    ) -> int:
        leases = sorted({op.lease for op in success + failure if isinstance(op, Put) and op.lease})
        for lease in leases:
            if self._lease_ttl(lease) is None:
                return lease
        return leases[0] if leases else 0

    # -- watches

    def _watch(self, prefix: str, from_revision: int | None) -> Watch:
        if self._closed:
            raise MetastoreError("the metastore is closed", endpoints=self.endpoints)
        if from_revision is None:
            start = self._current_revision() + 1
        else:
            start = from_revision
            try:
                # A read at the start revision fails exactly when a watch
                # from it would; the watch itself reports that only later.
                self._read_range("", start, 1)
            except CompactedError:
                raise
            except MetastoreUnavailableError:
                raise
            except MetastoreError:
                pass  # a revision in the future: the watch waits for it
        watch = _EtcdWatch(self, prefix, start)
        self._watches.add(watch)
        watch.start()
        return watch

    # -- leases

    def _lease_stub(self, index: int) -> rpc.LeaseStub:
        return rpc.LeaseStub(self._channels[index])

    def _grant_lease(self, ttl: float) -> int:
        async def attempt(index: int) -> int:
            response = await self._lease_stub(index).LeaseGrant(
                rpc.LeaseGrantRequest(TTL=max(1, math.ceil(ttl))),
                timeout=self._attempt_timeout(),
                metadata=_LEADER,
            )
            if response.error:
                raise MetastoreError(f"etcd refused a lease: {response.error}")
            return int(response.ID)

        # A lost reply leaves at most an unused lease behind, which expires.
        return self._run("a lease grant", attempt, write=False)

    def _keep_alive(self, lease_id: int) -> float:
        async def attempt(index: int) -> float:
            async def requests() -> AsyncIterator[rpc.LeaseKeepAliveRequest]:
                yield rpc.LeaseKeepAliveRequest(ID=lease_id)

            call = self._lease_stub(index).LeaseKeepAlive(
                requests(), timeout=self._attempt_timeout(), metadata=_LEADER
            )
            try:
                async for response in call:
                    if response.TTL <= 0:
                        raise LeaseNotFoundError(lease_id)
                    return float(response.TTL)
            finally:
                call.cancel()
            raise _NoReply("the keep-alive stream ended without a reply")

        return self._run("a lease keep-alive", attempt, write=False)

    def _revoke_lease(self, lease_id: int) -> int:
        async def attempt(index: int) -> int:
            response = await self._lease_stub(index).LeaseRevoke(
                rpc.LeaseRevokeRequest(ID=lease_id),
                timeout=self._attempt_timeout(),
                metadata=_LEADER,
            )
            return self._saw(response.header) - 1

        try:
            return self._run("a lease revoke", attempt, write=True)
        except _LeaseMissing:
            raise LeaseNotFoundError(lease_id) from None

    def _lease_ttl(self, lease_id: int) -> float | None:
        async def attempt(index: int) -> float | None:
            response = await self._lease_stub(index).LeaseTimeToLive(
                rpc.LeaseTimeToLiveRequest(ID=lease_id),
                timeout=self._attempt_timeout(),
                metadata=_LEADER,
            )
            return None if response.TTL < 0 else float(response.TTL)

        return self._run("a lease lookup", attempt, write=False)

    # -- compaction

    def _compact(self, revision: int) -> None:
        async def attempt(index: int) -> None:
            await self._stub_kv(index).Compact(
                # Physical: the call returns once etcd has dropped the history,
                # so what stays watchable no longer changes after it.
                rpc.CompactionRequest(revision=revision + 1, physical=True),
                timeout=self._attempt_timeout(),
                metadata=_LEADER,
            )

        try:
            self._run("a compaction", attempt, write=False)
        except _Compacted:
            compact = self._current_compact_revision()
            if revision != compact:
                raise compacted_error(revision, compact) from None
        except _Future:
            raise MetastoreError(
                f"cannot compact to revision {revision}: current revision is "
                f"{self._current_revision()}",
                revision=revision,
            ) from None
        else:
            self._known_compact = max(self._known_compact, revision + 1)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._watches.close_all()

        async def shutdown() -> None:
            for channel in self._channels:
                await channel.close()
            # gRPC leaves a task behind per cancelled stream; end them here so
            # that stopping the loop destroys no pending task.
            leftover = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in leftover:
                task.cancel()
            await asyncio.gather(*leftover, return_exceptions=True)

        # Closing must not fail on a dead cluster.
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(self.timeout_s)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if threading.current_thread() is not self._thread:
            self._thread.join(self.timeout_s)
            if not self._thread.is_alive():
                self._loop.close()

    # -- for watches

    def _watch_stub(self, index: int) -> rpc.WatchStub:
        return rpc.WatchStub(self._channels[index])


class _NoReply(Exception):
    """A stream ended before its reply: worth another attempt."""


class _Unsettled(Exception):
    """Whether a write whose reply was lost applied cannot be told."""


class _Compacted(MetastoreError):
    """etcd said a revision was compacted (the caller adds the numbers)."""


class _Future(MetastoreError):
    """etcd said a revision is in the future."""


class _LeaseMissing(MetastoreError):
    """etcd said a lease does not exist (the caller names it)."""


def _mapped(exc: rpc.AioRpcError, store: EtcdMetastore) -> MetastoreError:
    details = exc.details() or ""
    if "compacted" in details:
        return _Compacted(details)
    if "future revision" in details:
        return _Future(details)
    if "lease not found" in details:
        return _LeaseMissing(details)
    if exc.code() == rpc.StatusCode.INVALID_ARGUMENT:
        return InvalidArgumentError(f"etcd refused the request: {details}")
    return MetastoreError(
        f"etcd at {', '.join(store.endpoints)} failed a request: {details}",
        endpoints=store.endpoints,
        code=str(exc.code()),
    )


_CLOSED = object()


class _EtcdWatch(Watch):
    """One etcd watch stream, re-created on another member after a failure
    and resumed from the revision after the last event delivered."""

    def __init__(self, store: EtcdMetastore, prefix: str, start: int) -> None:
        self._store = store
        self._prefix = prefix
        self._next = start + 1  # etcd numbering
        self._queue: queue.Queue[object] = queue.Queue()
        self._closed = False
        self._task: concurrent.futures.Future[None] | None = None

    @property
    def closed(self) -> bool:
        return self._closed

    def start(self) -> None:
        self._task = asyncio.run_coroutine_threadsafe(self._run(), self._store._loop)

    def next(self, timeout: float | None = None) -> WatchEvent | None:
        wait = check_timeout(timeout)
        if self._closed:
            return None
        try:
            item = self._queue.get(timeout=wait)
        except queue.Empty:
            return None
        if item is _CLOSED:
            self._queue.put(_CLOSED)
            return None
        if isinstance(item, BaseException):
            self._queue.put(item)
            raise item
        assert isinstance(item, WatchEvent)
        return item

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(_CLOSED)
        task = self._task
        if task is not None:
            task.cancel()

    async def _run(self) -> None:
        store = self._store
        delay = 0.02
        while not self._closed and not store._closed:
            index = store._current
            start, end = store._range_of(self._prefix)
            create = rpc.WatchRequest(
                create_request=rpc.WatchCreateRequest(
                    key=start,
                    range_end=end,
                    start_revision=self._next,
                    prev_kv=True,
                    progress_notify=True,
                )
            )
            stop = asyncio.Event()

            async def requests(
                create: rpc.WatchRequest = create, stop: asyncio.Event = stop
            ) -> AsyncIterator[rpc.WatchRequest]:
                yield create
                await stop.wait()

            call = store._watch_stub(index).Watch(requests(), metadata=_LEADER)
            try:
                async for response in call:
                    delay = 0.02
                    if response.compact_revision:
                        self._fail(
                            compacted_error(self._next - 1, int(response.compact_revision) - 1)
                        )
                        return
                    if response.canceled and "no leader" in response.cancel_reason:
                        break  # the member lost its leader: resume elsewhere
                    if response.canceled:
                        self._fail(
                            MetastoreError(
                                f"etcd cancelled a watch on {self._prefix!r}: "
                                f"{response.cancel_reason}",
                                prefix=self._prefix,
                            )
                        )
                        return
                    for event in response.events:
                        self._queue.put(self._event(event))
                    if response.events:
                        self._next = int(response.events[-1].kv.mod_revision) + 1
                    elif not response.created:
                        # A progress notification: every change up to its
                        # revision was sent, so resume after it.
                        self._next = max(self._next, int(response.header.revision) + 1)
            except rpc.AioRpcError:
                pass
            finally:
                stop.set()
                call.cancel()
            if store._current == index:
                store._current = (index + 1) % len(store.endpoints)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.25)

    def _event(self, event: Any) -> WatchEvent:
        store = self._store
        prev = store._kv(event.prev_kv) if event.HasField("prev_kv") else None
        if event.type == rpc.Event.EventType.DELETE:
            key = event.kv.key[len(store._raw_prefix) :].decode("utf-8")
            tombstone = KeyValue(key, b"", 0, int(event.kv.mod_revision) - 1, 0, 0)
            return WatchEvent(WatchEventKind.DELETE, tombstone, prev)
        return WatchEvent(WatchEventKind.PUT, store._kv(event.kv), prev)

    def _fail(self, error: BaseException) -> None:
        self._queue.put(error)
