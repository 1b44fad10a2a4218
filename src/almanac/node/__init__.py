"""One catalog node: its update log on the metastore, the committer, the
versions it has applied, retention, leases, the event dispatcher and
the files beside a store.

It builds on ``almanac.model`` and the metastore; the ways of reaching a
catalog from outside a node live a floor above, in ``almanac.access``.
"""
