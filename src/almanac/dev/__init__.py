"""Demos and a local etcd, for trying Almanac and for its tests.

Nothing in the catalog imports this floor: it sits on top of the
others (``python -m almanac.dev.demo``).
"""
