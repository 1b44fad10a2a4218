"""Reaching a catalog from outside a node: opening one (``connect``:
the node with its data plane and placement), the HTTP client
(``RemoteCatalog``) and its event stream, and the bearer tokens a server
asks of a caller.

It stands on the node and the planes (``connect`` is the one place that puts
them together); the public ``almanac``, ``almanac.iceberg`` and
``almanac.system_tables`` and the servers stand on it.
"""
