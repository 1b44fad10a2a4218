"""Tablet servers: processes that host tablets (the buckets of a table's
partition spec) as the placement assigns them, serve their rows over Arrow
Flight, and run their leader's maintenance. ``almanac tserver`` runs one
(``server``); ``client.read_table`` reads through them.

Empty on purpose: a Flight client imports ``almanac.tserver.client`` without
the server's process, maintenance and placement machinery.
"""
