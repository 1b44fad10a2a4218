"""Opening a catalog from a target: ``open_catalog`` opens the store the
target names and starts a node on it; ``almanac.connect`` also attaches the
node's data plane where it has a warehouse, or reaches a server over HTTP
for an ``http://`` target. The catalog never imports the data plane; this is
the one place that puts the two together."""

from __future__ import annotations

import os
import threading
from typing import Final, overload

from almanac import _check as check
from almanac.access.remote import RemoteCatalog
from almanac.access.tokens import check_token
from almanac.commands.tables import check_reserve
from almanac.errors import CatalogError, NotFoundError, ValidationError
from almanac.metastore import MemoryMetastore, Metastore, open_metastore
from almanac.metastore.sqlite import DURABILITY_LEVELS
from almanac.model.request_ids import DEFAULT_REQUEST_WINDOW_S
from almanac.model.schema_sync import (
    ETCD_DEFAULTS,
    MEMORY_DEFAULTS,
    SQLITE_DEFAULTS,
    SchemaSync,
    check_sync_settings,
)
from almanac.model.targets import Target, parse_target
from almanac.node.catalog import Catalog, RetentionPolicy
from almanac.node.log import KEY_VERSION, UpdateLog
from almanac.node.nodes import check_node_name
from almanac.placement.settings import PlacementSettings

__all__ = ["connect", "open_catalog"]


class _Local:
    """The default of ``connect``'s ``token``: not given, a local catalog."""

    def __repr__(self) -> str:
        return "<local>"


_LOCAL: Final = _Local()


@overload
def connect(
    target: str | Target,
    *,
    token: str | None,
) -> RemoteCatalog: ...


@overload
def connect(
    target: str | os.PathLike[str] | Target,
    *,
    delay_ms: int | None = None,
    max_clock_skew_ms: int | None = None,
    retention: RetentionPolicy | None = None,
    warehouse: str | None = None,
    janitor_interval_s: float | None = None,
    durability: str = "full",
    node_name: str | None = None,
    request_window_s: float = DEFAULT_REQUEST_WINDOW_S,
    placement: PlacementSettings | None = None,
    soft_delete_reserve_s: float = 0.0,
    create: bool = True,
) -> Catalog: ...


def connect(
    target: str | os.PathLike[str] | Target,
    *,
    token: str | _Local | None = _LOCAL,
    delay_ms: int | None = None,
    max_clock_skew_ms: int | None = None,
    retention: RetentionPolicy | None = None,
    warehouse: str | None = None,
    janitor_interval_s: float | None = None,
    durability: str = "full",
    node_name: str | None = None,
    request_window_s: float = DEFAULT_REQUEST_WINDOW_S,
    placement: PlacementSettings | None = None,
    soft_delete_reserve_s: float = 0.0,
    create: bool = True,
) -> Catalog | RemoteCatalog:
    """Open a catalog node (see ``open_catalog``) with its
    data plane, or reach a catalog server.

    ``http://host:port`` (or ``https://``) is a server started by ``almanac
    serve``: with ``token=`` (the bearer token, or ``None`` for a server
    without auth) this returns a ``RemoteCatalog``. The keyword is required
    for a server and refused otherwise, so that the type checker knows which
    of the two it gets; the other options belong to local nodes.

    ``memory://`` is a fresh catalog in this process; a directory path (created
    on first use) or ``sqlite:///path/file.db`` is a durable catalog that the
    processes of one machine share; ``etcd://host:port,.../namespace`` is a
    catalog on an etcd cluster, shared by nodes on many machines. Table data
    goes to ``warehouse``, by default ``<directory>/warehouse`` (an etcd
    target has no default: pass one); with ``janitor_interval_s`` this node
    also cleans it periodically (see ``almanac janitor``). ``durability`` is
    ``"full"`` (every version fsynced) or ``"normal"`` (see
    ``almanac.metastore.sqlite``). With ``placement`` this node also takes
    part in tablet placement (see ``almanac.placement``). ``soft_delete_reserve_s``:
    the reserve of a DROP TABLE this node commits without one (see ``open_catalog``).
    ``create`` (the default) makes a catalog where the target holds none;
    ``create=False`` refuses such a target instead (see ``open_catalog``).
    """
    parsed = parse_target(target)
    if parsed.kind == "http" or not isinstance(token, _Local):
        local = {
            "delay_ms": delay_ms,
            "max_clock_skew_ms": max_clock_skew_ms,
            "retention": retention,
            "warehouse": warehouse,
            "janitor_interval_s": janitor_interval_s,
            "node_name": node_name,
            "durability": None if durability == "full" else durability,
            "request_window_s": None
            if request_window_s == DEFAULT_REQUEST_WINDOW_S
            else request_window_s,
            "placement": placement,
            "soft_delete_reserve_s": None if soft_delete_reserve_s == 0 else soft_delete_reserve_s,
            "create": None if create is True else create,
        }
        given = [name for name, value in local.items() if value is not None]
        return _connect_remote(parsed, token, given)
    check.optional_str(warehouse, "Parameter 'warehouse' of connect", nonblank=True)
    check.optional_instance(placement, PlacementSettings, "Parameter 'placement' of connect")
    check.optional_float(
        janitor_interval_s,
        "Parameter 'janitor_interval_s' of connect",
        positive=True,
        hi=threading.TIMEOUT_MAX,
    )
    location = warehouse if warehouse is not None else parsed.default_warehouse
    if janitor_interval_s is not None and location is None:
        raise ValidationError("A janitor needs a warehouse; this catalog has none")
    cat = open_catalog(
        parsed,
        delay_ms=delay_ms,
        max_clock_skew_ms=max_clock_skew_ms,
        retention=retention,
        durability=durability,
        node_name=node_name,
        request_window_s=request_window_s,
        soft_delete_reserve_s=soft_delete_reserve_s,
        create=create,
    )
    try:
        if placement is not None:
            from almanac.placement.manager import attach_placement

            attach_placement(cat, placement)
        if location is None:
            return cat
        try:
            from almanac.data.plane import attach_data_plane
        except ImportError as exc:
            if warehouse is None:
                return cat  # no data-plane packages here: a catalog without table data
            raise CatalogError(
                f"Table data needs pyarrow and pyiceberg (install almanac[spark]): {exc}"
            ) from exc
        attach_data_plane(cat, location, janitor_interval_s=janitor_interval_s)
    except BaseException:
        cat.close()
        raise
    return cat


def _connect_remote(target: Target, token: object, local_options: list[str]) -> RemoteCatalog:
    if target.kind != "http":
        raise ValidationError(
            f"Parameter 'token' of connect is for a catalog server (http:// or https://), "
            f"not for '{target}'",
            parameter="token",
            target=str(target),
        )
    if isinstance(token, _Local):
        raise ValidationError(
            f"Catalog target '{target}' is a server: pass token= to connect (the bearer "
            "token, or None for a server without auth)",
            parameter="token",
            target=str(target),
        )
    if local_options:
        raise ValidationError(
            f"Parameter '{local_options[0]}' of connect belongs to a local catalog node; "
            f"'{target}' is a server",
            parameter=local_options[0],
            target=str(target),
        )
    checked = None if token is None else check_token(token, "Parameter 'token' of connect")
    return RemoteCatalog(target.url, token=checked)


def _no_catalog(target: Target, reason: str) -> NotFoundError:
    return NotFoundError(
        f"No catalog at {target} ({reason}): create one with `almanac --store {target} init`",
        kind="catalog",
        name=str(target),
        target=str(target),
    )


def _require_store_file(target: Target) -> None:
    """Refuse, before anything is created, a target whose metastore file is
    not there: opening it would make an empty catalog at a typo."""
    if target.kind == "memory":
        raise _no_catalog(target, "a memory:// catalog exists only once a process makes it")
    path = target.store_path
    if path is not None and not path.exists():
        raise _no_catalog(target, f"no metastore file '{path}'")


def _open_store(target: Target, durability: str) -> tuple[Metastore, SchemaSync]:
    if target.kind == "memory":
        return MemoryMetastore(), MEMORY_DEFAULTS
    if target.kind == "etcd":
        return open_metastore(target.store_uri), ETCD_DEFAULTS
    root = target.root
    assert root is not None
    if target.kind == "directory":
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CatalogError(f"Cannot create catalog directory '{root}': {exc}") from exc
    return open_metastore(target.store_uri, durability=durability), SQLITE_DEFAULTS


def open_catalog(
    target: str | os.PathLike[str] | Target,
    *,
    delay_ms: int | None = None,
    max_clock_skew_ms: int | None = None,
    retention: RetentionPolicy | None = None,
    durability: str = "full",
    node_name: str | None = None,
    request_window_s: float = DEFAULT_REQUEST_WINDOW_S,
    soft_delete_reserve_s: float = 0.0,
    create: bool = True,
) -> Catalog:
    """Open a catalog node, without its data plane (``almanac.connect``
    opens both).

    ``memory://`` is a fresh catalog in this process; a directory path (created
    on first use) or ``sqlite:///path/file.db`` is a durable catalog that the
    processes of one machine share; ``etcd://host:port,.../namespace`` is a
    catalog on an etcd cluster. ``delay_ms`` and ``max_clock_skew_ms``
    default to 0/0 in memory, to ``SQLITE_DEFAULTS`` on SQLite and to
    ``ETCD_DEFAULTS`` (500/500) on etcd.

    ``durability`` is how hard a SQLite commit is made to stick: ``"full"``
    (the default) fsyncs every version, so it survives a power cut;
    ``"normal"`` is faster and survives the death of a process, but a machine
    crash may lose the last versions (see ``almanac.metastore.sqlite``).

    ``node_name`` names the node among the live nodes of the catalog
    (default ``<hostname>-<pid>``; see ``almanac.node.nodes``); a name that a
    live node holds is refused with ``AlreadyExistsError``.

    ``request_window_s`` is how long a request id (``execute(...,
    request_id=...)``) stays known after its version became active, even
    once a checkpoint truncated that version (default 24 hours).

    ``soft_delete_reserve_s`` is the reserve of a DROP TABLE this node
    commits without one (default 0: dropped at once); a positive one
    soft-deletes the table for that long (see ``DropTable``). Each drop
    stores the reserve it got, so nodes with other defaults still agree on
    every table's state.

    ``create`` makes a catalog where the target holds none (version 1, with
    schema PUBLIC). ``create=False`` is how every read and every operation on
    an existing catalog opens one: a target without a catalog (no metastore
    file, no catalog keys in the etcd namespace, ``memory://``) is a
    ``NotFoundError`` naming it and ``almanac init``, and nothing is made.
    """
    parsed = parse_target(target)
    if parsed.kind == "http":
        raise ValidationError(
            f"Catalog target '{parsed}' is a server: open_catalog opens a local node "
            "(almanac.connect reaches a server)",
            target=str(parsed),
            rule="remote-target",
        )
    check_sync_settings(delay_ms, max_clock_skew_ms, "connect")
    check.optional_instance(retention, RetentionPolicy, "Parameter 'retention' of connect")
    if node_name is not None:
        check_node_name(node_name, "Parameter 'node_name' of connect")
    check.number(request_window_s, "Parameter 'request_window_s' of connect", lo=0, hi=2**40)
    check_reserve(soft_delete_reserve_s, "Parameter 'soft_delete_reserve_s' of connect")
    if not isinstance(durability, str) or durability not in DURABILITY_LEVELS:
        raise ValidationError(
            f"Parameter 'durability' of connect must be one of "
            f"{', '.join(map(repr, DURABILITY_LEVELS))}, got {check.describe(durability)}",
            parameter="durability",
            allowed=tuple(DURABILITY_LEVELS),
            value=repr(durability),
        )
    check.boolean(create, "Parameter 'create' of connect")
    if not create:
        _require_store_file(parsed)
    store, defaults = _open_store(parsed, durability)
    try:
        if not create and store.get(KEY_VERSION) is None:
            where = "that etcd namespace" if parsed.kind == "etcd" else "its metastore"
            raise _no_catalog(parsed, f"no catalog keys in {where}")
        sync = SchemaSync(
            delay_ms=defaults.delay_ms if delay_ms is None else delay_ms,
            max_clock_skew_ms=defaults.max_clock_skew_ms
            if max_clock_skew_ms is None
            else max_clock_skew_ms,
        )
    except CatalogError:
        store.close()
        raise
    return Catalog(
        UpdateLog(store),
        sync=sync,
        retention=retention,
        root=parsed.root,
        target=str(parsed),
        node_name=node_name,
        request_window_s=request_window_s,
        soft_delete_reserve_s=soft_delete_reserve_s,
    )
