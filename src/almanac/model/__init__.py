"""The catalog as values: frozen versions, descriptors, entries, types,
names, diffs, events, read points and request ids, and the pure rules
over them; and the targets that name where a catalog lives.

Nothing here does I/O or starts a thread, and nothing here imports the
node, the access paths or the planes above, so every other floor can
build on it.
"""
