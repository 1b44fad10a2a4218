"""SQL front end: ``parsing`` turns a script into catalog commands or one
read statement (``dialect`` the grammar, ``literals`` what types and
literals mean, ``translate`` trees into values), ``reads`` answers read
statements and ``system_rows`` the system tables, ``answer`` picks between
them, ``results`` is what ``Catalog.sql`` returns.

Empty on purpose: ``import almanac`` needs ``SqlResult`` but not sqlglot,
which loads only once a script is parsed.
"""
