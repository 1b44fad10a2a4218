"""Reaching a catalog from outside a node: targets, opening one
(``connect``), the HTTP client (``RemoteCatalog``) and the rows of the
system tables.

It builds on ``almanac.node`` and ``almanac.model``; the public
``almanac``, ``almanac.iceberg`` and ``almanac.system_tables`` stand on it.
"""
